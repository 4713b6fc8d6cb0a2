// SPDX-License-Identifier: MIT
/*
 * The build-ID cache (src/bidcache/bidcache.c) and SHA-256
 * (src/bidcache/sha256.c): SHA-256 against the NIST vectors and against the
 * sha256sum program on random buffers split into random pieces; store() and
 * find() byte for byte, first-come perf names, conflicts, TOO_BIG,
 * .content-id, DEBUG names; symlinks planted in the cache never followed;
 * trim's LRU order. Hermetic: everything under one mkdtemp() directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bidcache/bidcache.h"
#include "test.h"

static char tmpdir[] = "/tmp/ustack-bidcache-XXXXXX";

static void tohex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = 0;
}

static const char *sha_hex(const void *data, size_t len)
{
	static char out[65];
	uint8_t h[32];

	ustack_sha256(data, len, h);
	tohex(h, 32, out);
	return out;
}

static int have_sha256sum(void)
{
	return system("sha256sum --version >/dev/null 2>&1") == 0;
}

/* sha256sum's answer for @path, into @out (65 bytes) */
static int sha256sum_of(const char *path, char *out)
{
	char cmd[512];
	FILE *p;
	int ok;

	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	ok = fscanf(p, "%64s", out) == 1;
	pclose(p);
	return ok ? 0 : -1;
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0);
	CHECK_EQ(write(fd, data, len), (long long)len);
	close(fd);
}

static size_t read_file(const char *path, void *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t r;

	CHECK(fd >= 0);
	r = read(fd, buf, size);
	close(fd);
	CHECK(r >= 0);
	return (size_t)r;
}

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* a fresh cache root below tmpdir */
static const char *fresh_root(const char *name)
{
	static char root[256];

	snprintf(root, sizeof(root), "%s/%s", tmpdir, name);
	return root;
}

/* ---- SHA-256 ------------------------------------------------------------------ */

static void test_sha256_nist(void)
{
	static char million[1000000];
	struct ustack_sha256 s;
	uint8_t h[32];
	char hx[65];

	CHECK_STR(sha_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	CHECK_STR(sha_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CHECK_STR(sha_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56),
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(million, 'a', sizeof(million));
	CHECK_STR(sha_hex(million, sizeof(million)),
		  "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	/* the same million one byte at a time */
	ustack_sha256_init(&s);
	for (size_t i = 0; i < sizeof(million); i++)
		ustack_sha256_update(&s, "a", 1);
	ustack_sha256_final(&s, h);
	tohex(h, 32, hx);
	CHECK_STR(hx, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* hash @buf in random pieces */
static const char *sha_pieces(const uint8_t *buf, size_t len)
{
	static char out[65];
	struct ustack_sha256 s;
	uint8_t h[32];
	size_t off = 0;

	ustack_sha256_init(&s);
	while (off < len) {
		size_t n = (size_t)(rnd() % (rnd() & 1 ? 8 : 300)) + 1;

		if (n > len - off)
			n = len - off;
		ustack_sha256_update(&s, buf + off, n);
		off += n;
	}
	ustack_sha256_update(&s, buf, 0);
	ustack_sha256_final(&s, h);
	tohex(h, 32, out);
	return out;
}

static void test_sha256_vs_sha256sum(void)
{
	static uint8_t buf[1 << 20];
	char path[256], want[65];

	if (!have_sha256sum())
		SKIP("no sha256sum program (coreutils) to compare with");
	snprintf(path, sizeof(path), "%s/sha.bin", tmpdir);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	for (size_t len = 0; len <= 300; len++) {
		write_file(path, buf, len);
		CHECK(sha256sum_of(path, want) == 0);
		CHECK_STR(sha_hex(buf, len), want);
		CHECK_STR(sha_pieces(buf, len), want);
	}
	write_file(path, buf, sizeof(buf));
	CHECK(sha256sum_of(path, want) == 0);
	CHECK_STR(sha_hex(buf, sizeof(buf)), want);
	for (int k = 0; k < 4; k++)
		CHECK_STR(sha_pieces(buf, sizeof(buf)), want);
	unlink(path);
}

/* ---- store and find -------------------------------------------------------------- */

static const uint8_t bid1[20] = { 0xab, 0xcd, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
				  11, 12, 13, 14, 15, 16, 17, 18 };
#define BID1_DIR ".build-id/ab/cd0102030405060708090a0b0c0d0e0f101112"

static int store_path(struct ustack_bidcache *c, const char *path, const uint8_t *bid,
		      size_t bid_size, enum ustack_bidcache_kind kind, const uint8_t *image,
		      uint64_t max, struct ustack_bidcache_stored *out)
{
	int fd = open(path, O_RDONLY), err;

	CHECK(fd >= 0);
	err = ustack_bidcache__store(c, fd, bid, bid_size, kind, image, max, out);
	close(fd);
	return err;
}

static void test_store_find(void)
{
	const char *root = fresh_root("sf");
	struct ustack_bidcache *c = ustack_bidcache__open(root, USTACK_BIDCACHE_WRITE);
	struct ustack_bidcache_stored st;
	char src[256], path[512], want[512], got[8192], data[5000];
	struct stat s1, s2;

	CHECK(c);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7 + 3);
	snprintf(src, sizeof(src), "%s/src1", tmpdir);
	write_file(src, data, sizeof(data));
	CHECK_EQ(store_path(c, src, bid1, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), 0);
	CHECK_EQ(st.flags, USTACK_BIDCACHE_STORED_NEW);
	CHECK_EQ(st.size, sizeof(data));
	{
		char hx[65];

		tohex(st.sha256, 32, hx);
		CHECK_STR(hx, sha_hex(data, sizeof(data)));
	}

	/* elf-<sha256>: the bytes, and the perf name "elf" the same inode */
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_ELF, st.sha256, path,
				       sizeof(path)), 0);
	snprintf(want, sizeof(want), "%s/" BID1_DIR "/elf-%s", root, sha_hex(data, sizeof(data)));
	CHECK_STR(path, want);
	CHECK_EQ(read_file(path, got, sizeof(got)), sizeof(data));
	CHECK(!memcmp(got, data, sizeof(data)));
	CHECK(stat(path, &s1) == 0);
	CHECK_EQ(s1.st_nlink, 2);
	CHECK_EQ(s1.st_mode & 0777, 0600);
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_ELF, NULL, path, sizeof(path)),
		 0);
	snprintf(want, sizeof(want), "%s/" BID1_DIR "/elf", root);
	CHECK_STR(path, want);
	CHECK(stat(path, &s2) == 0);
	CHECK_EQ(s1.st_ino, s2.st_ino);
	/* no debug entry, no other content */
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_DEBUG, NULL, path,
				       sizeof(path)), -ENOENT);
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_ELF,
				       (const uint8_t *)"0123456789abcdef0123456789abcdef", path,
				       sizeof(path)), -ENOENT);
	/* a path buffer too small */
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_ELF, NULL, path, 10),
		 -ENAMETOOLONG);

	/* again: was there (flags 0), and the entry touched */
	{
		struct timespec old[2] = { { 1000000, 0 }, { 1000000, 0 } };
		struct stat s3;

		CHECK(utimensat(AT_FDCWD, want, old, 0) == 0);
		CHECK_EQ(store_path(c, src, bid1, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), 0);
		CHECK_EQ(st.flags, 0);
		CHECK(stat(want, &s3) == 0);
		CHECK(s3.st_mtime > 1000000);
		CHECK_EQ(s3.st_nlink, 2);
	}
	ustack_bidcache__close(c);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_sha256_nist);
	RUN(test_sha256_vs_sha256sum);
	RUN(test_store_find);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	TEST_EXIT();
}
