// SPDX-License-Identifier: MIT
/*
 * Archive extraction (src/archive/archive.c) on archives made here with
 * the tar writer: a member of this test binary's own bytes named by its
 * build ID and SHA-256 (sha256 computed by ustack_sha256 and checked against
 * the bytes once more here) is extracted and found in the resulting cache;
 * the same bytes with one byte flipped, names outside the cache's forms,
 * upper-case hex, a path climbing out, and a member whose build ID is not
 * the one of its name are each refused and counted, never stored; a second
 * extraction of the same archive reuses the first (the complete marker);
 * a damaged header fails with the archive's name and the offset.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>

#include <ustack/ustack.h>
#include "archive/archive.h"
#include "archive/tar.h"
#include "elf/elf_file.h"
#include "test.h"

static uint8_t *self;
static size_t self_size;
static uint8_t bid[64];
static int bid_len;
static char tmpdir[] = "/tmp/ustack-test-archive-XXXXXX";

static void load_self(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	struct stat st;
	struct ustack_elf *e;

	CHECK(fd >= 0 && !fstat(fd, &st));
	self_size = (size_t)st.st_size;
	self = malloc(self_size);
	CHECK(self && pread(fd, self, self_size, 0) == (ssize_t)self_size);
	close(fd);
	e = ustack_elf__open_mem(self, self_size, "self");
	CHECK(e);
	bid_len = ustack_elf__build_id(e, bid, sizeof(bid));
	ustack_elf__close(e);
}

static void name_of(char *buf, size_t len, const uint8_t *sha, const char *kind)
{
	struct ustack_archive_name n = { .kind = strcmp(kind, "debug") ? USTACK_BIDCACHE_ELF :
							USTACK_BIDCACHE_DEBUG, .has_sha256 = 1 };

	n.build_id_size = (uint32_t)bid_len;
	memcpy(n.build_id, bid, (size_t)bid_len);
	memcpy(n.sha256, sha, 32);
	CHECK_EQ(ustack_archive_name__format(&n, buf, len), 0);
}

static void test_names(void)
{
	struct ustack_archive_name n;
	const char *sha = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	char name[300];

	snprintf(name, sizeof(name), ".build-id/ab/cdef/elf-%s", sha);
	CHECK_EQ(ustack_archive_name__parse(name, &n), 0);
	CHECK_EQ(n.build_id_size, 3);
	CHECK_EQ(n.build_id[2], 0xef);
	CHECK_EQ(n.sha256[31], 0xff);
	CHECK_EQ(n.kind, USTACK_BIDCACHE_ELF);
	CHECK_EQ(ustack_archive_name__parse(".build-id/ab/cdef/debug", &n), 0);
	CHECK_EQ(n.kind, USTACK_BIDCACHE_DEBUG);
	CHECK_EQ(n.has_sha256, 0);
	snprintf(name, sizeof(name), ".content-id/%.2s/%s/elf", sha, sha + 2);
	CHECK_EQ(ustack_archive_name__parse(name, &n), 0);
	CHECK_EQ(n.build_id_size, 0);
	static const char *bad[] = {
		".build-id/AB/cdef/elf", ".build-id/ab/cde/elf", ".build-id/ab//elf",
		".build-id/ab/cdef/elf/", "./.build-id/ab/cdef/elf", ".build-id/ab/cdef/../elf",
		"/.build-id/ab/cdef/elf", ".build-id/ab/cdef/elf-00", ".build-id/ab/cdef/elfx",
		".build-id/abc/def/elf", ".content-id/ab/cdef/elf", "../x", "", ".build-id/ab/cdef/sym",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(ustack_archive_name__parse(bad[i], &n), -EINVAL);
	snprintf(name, sizeof(name), ".content-id/%.2s/%s/debug", sha, sha + 2);
	CHECK_EQ(ustack_archive_name__parse(name, &n), -EINVAL);
}

static int make_archive(const char *path, int tamper)
{
	uint8_t sha[32];
	char name[300];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		return -1;
	ustack_sha256(self, self_size, sha);
	name_of(name, sizeof(name), sha, "elf");
	if (tamper)
		self[self_size / 2] ^= 1;
	ustack_tar__write_member(fd, name, -1, self, self_size);
	if (tamper) {
		self[self_size / 2] ^= 1;
		/* hostile names, each with real bytes */
		ustack_tar__write_member(fd, "../../escape", -1, self, 64);
		ustack_tar__write_member(fd, ".build-id/AB/cd/elf", -1, self, 64);
		/* a plain "elf" under another build ID: not that file */
		ustack_tar__write_member(fd, ".build-id/ab/cdef/elf", -1, self, self_size);
	}
	ustack_tar__write_end(fd);
	close(fd);
	return 0;
}

static void test_extract(void)
{
	struct ustack_archive_stats st;
	struct ustack_bidcache *c;
	char arch[256], root[256], dir[512], dir2[512], err[512], found[512];
	uint8_t sha[32];

	if (bid_len < 2)
		SKIP("this test binary has no GNU build ID");
	CHECK(mkdtemp(tmpdir));
	snprintf(arch, sizeof(arch), "%s/good.archive", tmpdir);
	snprintf(root, sizeof(root), "%s/cache", tmpdir);
	CHECK_EQ(make_archive(arch, 0), 0);
	CHECK_EQ(ustack_archive__extract(arch, root, dir, sizeof(dir), &st, err, sizeof(err)), 0);
	CHECK_EQ(st.files, 1);
	CHECK_EQ(st.bytes, self_size);
	CHECK_EQ(st.rejected, 0);
	c = ustack_bidcache__open(dir, 0);
	CHECK(c);
	ustack_sha256(self, self_size, sha);
	CHECK_EQ(ustack_bidcache__find(c, bid, (size_t)bid_len, USTACK_BIDCACHE_ELF, sha, found,
				       sizeof(found)), 0);
	ustack_bidcache__close(c);
	/* again: the marker, the same directory and counts */
	CHECK_EQ(ustack_archive__extract(arch, root, dir2, sizeof(dir2), &st, err, sizeof(err)), 0);
	CHECK_STR(dir, dir2);
	CHECK_EQ(st.files, 1);
}

static int quiet(enum ustack_print_level l, const char *fmt, va_list ap)
{
	return 0;
}

static void test_extract_rejects(void)
{
	struct ustack_archive_stats st;
	struct ustack_bidcache *c;
	char arch[256], root[256], dir[512], err[512], found[512];
	ustack_print_fn_t old;
	uint8_t sha[32];

	if (bid_len < 2)
		SKIP("this test binary has no GNU build ID");
	snprintf(arch, sizeof(arch), "%s/bad.archive", tmpdir);
	snprintf(root, sizeof(root), "%s/cache2", tmpdir);
	CHECK_EQ(make_archive(arch, 1), 0);
	old = ustack_set_print(quiet);
	CHECK_EQ(ustack_archive__extract(arch, root, dir, sizeof(dir), &st, err, sizeof(err)), 0);
	ustack_set_print(old);
	CHECK_EQ(st.files, 0);
	CHECK_EQ(st.rejected, 4);
	c = ustack_bidcache__open(dir, 0);
	CHECK(c);
	ustack_sha256(self, self_size, sha);
	CHECK_EQ(ustack_bidcache__find(c, bid, (size_t)bid_len, USTACK_BIDCACHE_ELF, sha, found,
				       sizeof(found)), -ENOENT);
	ustack_bidcache__close(c);
	snprintf(found, sizeof(found), "%s/../escape", root);
	CHECK(access(found, F_OK) != 0);

	/* a damaged header: an error with the archive's name and offset */
	{
		int fd = open(arch, O_RDWR);

		CHECK(fd >= 0);
		CHECK_EQ(pwrite(fd, "X", 1, 0), 1);
		close(fd);
	}
	snprintf(root, sizeof(root), "%s/cache3", tmpdir);
	CHECK_EQ(ustack_archive__extract(arch, root, dir, sizeof(dir), &st, err, sizeof(err)),
		 -EBADMSG);
	CHECK(strstr(err, "bad.archive: offset 0: header checksum"));
}

int main(void)
{
	char cmd[300];

	load_self();
	RUN(test_names);
	RUN(test_extract);
	RUN(test_extract_rejects);
	free(self);
	if (tmpdir[sizeof(tmpdir) - 2] != 'X') {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd))
			return 1;
	}
	TEST_EXIT();
}
