// SPDX-License-Identifier: MIT
/*
 * The symbolizer's image lookup order (issue 28): given build-ID caches,
 * ustack's cache, perf's cache, symfs / recorded path, debug directory, and
 * the build-ID and content checks at each. The files are copies of this test
 * binary (its own functions are the oracle for names), some patched: its
 * build-ID note changed (another build), or one byte of .comment changed
 * (same build ID, other content). Cache entries are named with sha256sum's
 * hash, not ustack's.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ustack/symbolize.h>

#include "elf/elf_file.h"
#include "symbolize/symbolize_internal.h"
#include "self_elf.h"
#include "test.h"

__attribute__((noinline, used)) int lookup_probe_fn(int x)
{
	volatile int v = x;

	for (int i = 0; i < 4; i++)
		v = v * 13 + i;
	return v;
}

static char tmp[64];
static char self_hex[2 * USTACK_BUILD_ID_MAX + 1];
static uint8_t self_sha[32];
static uint64_t self_size, probe_off;

static void sh(const char *fmt, const char *a, const char *b)
{
	char cmd[12000];

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	CHECK_EQ(system(cmd), 0);
}

/* sha256sum's hash of @path, as bytes and hex */
static void sha256sum(const char *path, uint8_t out[32], char hex[65])
{
	char cmd[4200];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
	p = popen(cmd, "r");
	CHECK(p);
	CHECK(fscanf(p, "%64s", hex) == 1);
	pclose(p);
	CHECK_EQ(strlen(hex), 64);
	for (int i = 0; i < 32; i++) {
		unsigned int b;

		CHECK(sscanf(hex + 2 * i, "%2x", &b) == 1);
		out[i] = (uint8_t)b;
	}
}

static void setup(void)
{
	struct stat st;
	char hex[65];

	self_elf_load(4);
	probe_off = self_offset_of(lookup_probe_fn);
	ustack_hex(self_bid, (size_t)self_bid_len, self_hex);
	CHECK(!stat(self_path, &st));
	self_size = (uint64_t)st.st_size;
	sha256sum(self_path, self_sha, hex);
	strcpy(tmp, "/tmp/ustack-lookup-XXXXXX");
	CHECK(mkdtemp(tmp));
	/* nothing of this host's caches */
	setenv("USTACK_CACHE_DIR", "", 1);
	unsetenv("PERF_BUILDID_DIR");
	setenv("HOME", tmp, 1);
	unsetenv("DEBUGINFOD_URLS");
}

static void cleanup(void)
{
	if (tmp[0])
		sh("rm -rf '%s'%s", tmp, "");
	tmp[0] = 0;
}

/* a copy of this binary at @path, the byte at file offset @patch_off
 * changed (-1: none) */
static void put_copy(const char *path, long patch_off)
{
	char cmd[9000];
	FILE *f;
	int c;

	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\" && cp '%s' '%s'", path, self_path,
		 path);
	CHECK_EQ(system(cmd), 0);
	if (patch_off < 0)
		return;
	f = fopen(path, "r+b");
	CHECK(f);
	CHECK(!fseek(f, patch_off, SEEK_SET));
	c = fgetc(f);
	CHECK(c != EOF);
	CHECK(!fseek(f, patch_off, SEEK_SET));
	fputc(c ^ 0x5a, f);
	CHECK(!fclose(f));
}

/* file offsets: of the build ID's first byte in its note, of .comment */
static long bid_offset(void)
{
	struct ustack_elf *elf = ustack_elf__open(self_path);
	struct ustack_elf_section sec;
	size_t size;
	const uint8_t *d = ustack_elf__data(elf, &size);
	long off = -1;

	CHECK(elf);
	CHECK(!ustack_elf__section(elf, ".note.gnu.build-id", &sec));
	for (uint64_t i = 0; i + (uint64_t)self_bid_len <= sec.size; i++)
		if (!memcmp(d + sec.offset + i, self_bid, (size_t)self_bid_len)) {
			off = (long)(sec.offset + i);
			break;
		}
	ustack_elf__close(elf);
	CHECK(off > 0);
	return off;
}

static long comment_offset(void)
{
	struct ustack_elf *elf = ustack_elf__open(self_path);
	struct ustack_elf_section sec;
	long off;

	CHECK(elf);
	if (ustack_elf__section(elf, ".comment", &sec) || sec.size < 4) {
		ustack_elf__close(elf);
		SKIP("test binary has no .comment section to patch");
	}
	off = (long)sec.offset + 1;
	ustack_elf__close(elf);
	return off;
}

/* <root>/.build-id/xx/rest/NAME holding a copy of this binary */
static void put_cache_entry(const char *root, const char *entry, char *out, size_t size)
{
	char name[200];

	snprintf(name, sizeof(name), "%s", entry);
	snprintf(out, size, "%s/.build-id/%.2s/%s/%s", root, self_hex, self_hex + 2, name);
	put_copy(out, -1);
}

static struct ustack_file_map fmap(uint64_t id, const char *path)
{
	struct ustack_file_map fm;

	memset(&fm, 0, sizeof(fm));
	fm.file_id = id;
	fm.kind = USTACK_VMA_FILE;
	fm.path = path;
	fm.build_id_size = (uint32_t)self_bid_len;
	memcpy(fm.build_id, self_bid, (size_t)self_bid_len);
	return fm;
}

static struct ustack_symbolizer *new_sym(const char *const *dirs, const char *symfs,
					 uint32_t flags)
{
	struct ustack_symbolizer_opts o = {
		.sz = sizeof(o),
		.flags = flags | USTACK_SYMBOLIZER_NO_DEBUG_DIR | USTACK_SYMBOLIZER_NO_LINES,
		.buildid_dirs = dirs,
		.symfs = symfs,
	};
	struct ustack_symbolizer *s = ustack_symbolizer__new(&o);

	CHECK(s);
	return s;
}

/* status of id 1 (recorded at @path) and, when OK, its name at the probe */
static int resolve_one(struct ustack_symbolizer *s, const char *path, int with_content,
		       const uint8_t *sha)
{
	struct ustack_file_map fm = fmap(1, path);
	struct ustack_sym sy;

	CHECK_EQ(ustack_symbolizer__add_file(s, &fm), 0);
	if (with_content)
		CHECK_EQ(ustack_symbolizer__set_file_content(s, 1, sha ? sha : self_sha, self_size), 0);
	CHECK_EQ(ustack_symbolizer__symbolize(s, 1, probe_off + 2, USTACK_SYM_EXACT_PC, &sy), 0);
	if (sy.status == USTACK_SYM_OK) {
		CHECK_STR(sy.name, "lookup_probe_fn");
		CHECK_EQ(sy.sym_offset, 2);
	} else {
		CHECK(sy.name == NULL);
	}
	return (int)sy.status;
}

/* The recorded path holds another build (its build-ID note changed): refused,
 * unless a given cache holds the recorded content as elf-<sha256>. */
static void test_lookup_other_build_at_path(void)
{
	char path[4200], entry[4400], dir[4200], hex[65];
	const char *dirs[] = { dir, NULL };
	const char *rp = NULL;
	unsigned int src = 0, idx = 9;
	struct ustack_symbolizer *s;

	setup();
	snprintf(path, sizeof(path), "%s/usr/bin/prog", tmp);
	put_copy(path, bid_offset());
	snprintf(dir, sizeof(dir), "%s/given", tmp);

	s = new_sym(NULL, NULL, 0);
	CHECK_EQ(resolve_one(s, path, 1, NULL), USTACK_SYM_MISMATCH);
	CHECK_EQ(ustack_symbolizer__file_refusal(s, 1, 0, &rp, &src), 1 /* build ID */);
	CHECK_STR(rp, path);
	CHECK_EQ(src, USTACK_IMAGE_SRC_PATH);
	CHECK_EQ(ustack_symbolizer__file_image_source(s, 1, &rp, NULL), USTACK_IMAGE_SRC_NONE);
	CHECK(rp == NULL);
	ustack_symbolizer__free(s);

	sha256sum(self_path, self_sha, hex);
	snprintf(entry, sizeof(entry), "elf-%s", hex);
	put_cache_entry(dir, entry, entry, sizeof(entry));
	s = new_sym(dirs, NULL, 0);
	CHECK_EQ(resolve_one(s, path, 1, NULL), USTACK_SYM_OK);
	CHECK_EQ(ustack_symbolizer__file_image_source(s, 1, &rp, &idx), USTACK_IMAGE_SRC_GIVEN_DIR);
	CHECK_STR(rp, entry);
	CHECK_EQ(idx, 0);
	CHECK_EQ(ustack_symbolizer__file_refusal(s, 1, 0, &rp, &src), 0);
	ustack_symbolizer__free(s);

	/* the entry is named by content: another recorded content finds
	 * nothing there, and the path is still another build */
	self_sha[5] ^= 1;
	s = new_sym(dirs, NULL, 0);
	CHECK_EQ(resolve_one(s, path, 1, self_sha), USTACK_SYM_MISMATCH);
	ustack_symbolizer__free(s);
	cleanup();
}

/* Same build ID, one byte of other content: refused when the content is
 * known, used (as before content was recorded) when it is not. */
static void test_lookup_content_differs(void)
{
	char path[4200];
	const char *rp = NULL;
	unsigned int src = 0;
	struct ustack_symbolizer *s;

	setup();
	snprintf(path, sizeof(path), "%s/lib/libx.so", tmp);
	put_copy(path, comment_offset());

	s = new_sym(NULL, NULL, 0);
	CHECK_EQ(resolve_one(s, path, 1, NULL), USTACK_SYM_MISMATCH);
	CHECK_EQ(ustack_symbolizer__file_refusal(s, 1, 0, &rp, &src), 2 /* content */);
	CHECK_STR(rp, path);
	ustack_symbolizer__free(s);

	s = new_sym(NULL, NULL, 0);
	CHECK_EQ(resolve_one(s, path, 0, NULL), USTACK_SYM_OK);
	CHECK_EQ(ustack_symbolizer__file_image_source(s, 1, &rp, NULL), USTACK_IMAGE_SRC_PATH);
	CHECK_STR(rp, path);
	ustack_symbolizer__free(s);

	/* the unpatched file at the path: its hash is the recorded one */
	put_copy(path, -1);
	s = new_sym(NULL, NULL, 0);
	CHECK_EQ(resolve_one(s, path, 1, NULL), USTACK_SYM_OK);
	ustack_symbolizer__free(s);
	cleanup();
}

/* perf's layout: .build-id/xx/rest is a symlink to ../../<path>/<build id>,
 * a directory holding elf. Found through $PERF_BUILDID_DIR; hashed when the
 * content is known. */
static void test_lookup_perf_cache(void)
{
	char root[4200], real[4400], link[4400], target[4400];
	const char *rp = NULL;
	struct ustack_symbolizer *s;

	setup();
	snprintf(root, sizeof(root), "%s/perfdebug", tmp);
	snprintf(real, sizeof(real), "%s/usr/bin/prog/%s/elf", root, self_hex);
	put_copy(real, -1);
	snprintf(link, sizeof(link), "%s/.build-id/%.2s", root, self_hex);
	sh("mkdir -p '%s'%s", link, "");
	snprintf(link, sizeof(link), "%s/.build-id/%.2s/%s", root, self_hex, self_hex + 2);
	snprintf(target, sizeof(target), "../../usr/bin/prog/%s", self_hex);
	CHECK_EQ(symlink(target, link), 0);
	setenv("PERF_BUILDID_DIR", root, 1);

	s = new_sym(NULL, NULL, 0);
	CHECK_EQ(resolve_one(s, "/nonexistent/usr/bin/prog", 0, NULL), USTACK_SYM_OK);
	CHECK_EQ(ustack_symbolizer__file_image_source(s, 1, &rp, NULL), USTACK_IMAGE_SRC_PERF_CACHE);
	CHECK(rp && strstr(rp, root) == rp);
	ustack_symbolizer__free(s);

	s = new_sym(NULL, NULL, 0);
	CHECK_EQ(resolve_one(s, "/nonexistent/usr/bin/prog", 1, NULL), USTACK_SYM_OK);
	ustack_symbolizer__free(s);

	/* perf names nothing by content: another recorded hash is refused */
	self_sha[0] ^= 1;
	s = new_sym(NULL, NULL, 0);
	CHECK_EQ(resolve_one(s, "/nonexistent/usr/bin/prog", 1, self_sha), USTACK_SYM_MISMATCH);
	CHECK_EQ(ustack_symbolizer__file_refusal(s, 1, 0, &rp, &(unsigned int){ 0 }), 2);
	ustack_symbolizer__free(s);
	self_sha[0] ^= 1;

	/* not looked at with NO_BUILDID_CACHE */
	s = new_sym(NULL, NULL, USTACK_SYMBOLIZER_NO_BUILDID_CACHE);
	CHECK_EQ(resolve_one(s, "/nonexistent/usr/bin/prog", 0, NULL), USTACK_SYM_NO_FILE);
	ustack_symbolizer__free(s);
	cleanup();
}

static int source_of(const char *const *dirs, const char *symfs, uint32_t flags, const char *path,
		     int with_content)
{
	struct ustack_symbolizer *s = new_sym(dirs, symfs, flags);
	int src;

	CHECK_EQ(resolve_one(s, path, with_content, NULL), USTACK_SYM_OK);
	src = ustack_symbolizer__file_image_source(s, 1, NULL, NULL);
	ustack_symbolizer__free(s);
	return src;
}

/* The order: given dir, ustack cache, perf cache, symfs, path. Each place
 * holds the right file; taking them away one by one shows the next. */
static void test_lookup_order(void)
{
	char path[4200], given[4200], ucache[4200], pcache[4200], symfs[4200], e[4600], hex[65];
	const char *dirs[] = { given, NULL };
	unsigned int idx = 5;
	struct ustack_symbolizer *s;
	const char *rp;

	setup();
	sha256sum(self_path, self_sha, hex);
	snprintf(path, sizeof(path), "%s/bin/prog", tmp);
	put_copy(path, -1);
	snprintf(given, sizeof(given), "%s/given", tmp);
	snprintf(ucache, sizeof(ucache), "%s/ucache", tmp);
	snprintf(pcache, sizeof(pcache), "%s/pcache", tmp);
	snprintf(symfs, sizeof(symfs), "%s/symfs", tmp);
	snprintf(e, sizeof(e), "elf-%s", hex);
	put_cache_entry(given, e, e, sizeof(e));
	put_cache_entry(given, "elf", e, sizeof(e));
	snprintf(e, sizeof(e), "elf-%s", hex);
	put_cache_entry(ucache, e, e, sizeof(e));
	put_cache_entry(ucache, "elf", e, sizeof(e));
	put_cache_entry(pcache, "elf", e, sizeof(e));
	CHECK((size_t)snprintf(e, sizeof(e), "%.2000s%.2000s", symfs, path) < sizeof(e));
	put_copy(e, -1);
	setenv("USTACK_CACHE_DIR", ucache, 1);
	setenv("PERF_BUILDID_DIR", pcache, 1);

	for (int wc = 0; wc < 2; wc++) {
		CHECK_EQ(source_of(dirs, symfs, 0, path, wc), USTACK_IMAGE_SRC_GIVEN_DIR);
		CHECK_EQ(source_of(dirs, NULL, USTACK_SYMBOLIZER_NO_BUILDID_CACHE, path, wc),
			 USTACK_IMAGE_SRC_GIVEN_DIR);
		CHECK_EQ(source_of(NULL, symfs, 0, path, wc), USTACK_IMAGE_SRC_USTACK_CACHE);
	}
	/* ustack's cache without elf-<sha>: with content known it has nothing
	 * (only its content-named entry counts), perf's is next */
	snprintf(e, sizeof(e), "%s/.build-id/%.2s/%s/elf-%s", ucache, self_hex, self_hex + 2, hex);
	CHECK_EQ(unlink(e), 0);
	CHECK_EQ(source_of(NULL, symfs, 0, path, 1), USTACK_IMAGE_SRC_PERF_CACHE);
	CHECK_EQ(source_of(NULL, symfs, 0, path, 0), USTACK_IMAGE_SRC_USTACK_CACHE);
	setenv("USTACK_CACHE_DIR", "", 1);
	CHECK_EQ(source_of(NULL, symfs, 0, path, 0), USTACK_IMAGE_SRC_PERF_CACHE);
	CHECK_EQ(source_of(NULL, symfs, USTACK_SYMBOLIZER_NO_BUILDID_CACHE, path, 1),
		 USTACK_IMAGE_SRC_SYMFS);
	CHECK_EQ(source_of(NULL, NULL, USTACK_SYMBOLIZER_NO_BUILDID_CACHE, path, 1),
		 USTACK_IMAGE_SRC_PATH);

	/* dir_index: the second of two given dirs */
	{
		char empty[4300];
		const char *two[] = { empty, given, NULL };

		snprintf(empty, sizeof(empty), "%s/empty", tmp);
		CHECK_EQ(mkdir(empty, 0700), 0);
		s = new_sym(two, NULL, 0);
		CHECK_EQ(resolve_one(s, path, 1, NULL), USTACK_SYM_OK);
		CHECK_EQ(ustack_symbolizer__file_image_source(s, 1, &rp, &idx),
			 USTACK_IMAGE_SRC_GIVEN_DIR);
		CHECK_EQ(idx, 1);
		ustack_symbolizer__free(s);
	}
	cleanup();
}

/* The debug file captured beside the image: debug-<image sha256> (content
 * known) or debug (not known), reported as its own source. */
static void test_lookup_cached_debug(void)
{
	char given[4200], e[4600], dbg[4600], hex[65];
	const char *dirs[] = { given, NULL };
	const char *from = NULL;
	struct ustack_symbolizer *s;

	setup();
	sha256sum(self_path, self_sha, hex);
	snprintf(given, sizeof(given), "%s/given", tmp);
	snprintf(e, sizeof(e), "elf-%s", hex);
	put_cache_entry(given, e, e, sizeof(e));
	snprintf(dbg, sizeof(dbg), "debug-%s", hex);
	put_cache_entry(given, dbg, dbg, sizeof(dbg));

	s = new_sym(dirs, NULL, 0);
	CHECK_EQ(resolve_one(s, "/nonexistent/prog", 1, NULL), USTACK_SYM_OK);
	CHECK_EQ(ustack_symbolizer__file_source(s, 1), USTACK_DEBUG_SRC_BUILDID_CACHE);
	CHECK_EQ(ustack_symbolizer__file_status(s, 1, &from), USTACK_SYM_OK);
	CHECK_STR(from, dbg);
	CHECK_STR(ustack_debug_source_name(USTACK_DEBUG_SRC_BUILDID_CACHE), "build-ID cache");
	ustack_symbolizer__free(s);

	/* content not known: the perf names, elf and debug */
	put_cache_entry(given, "elf", e, sizeof(e));
	s = new_sym(dirs, NULL, 0);
	CHECK_EQ(resolve_one(s, "/nonexistent/prog", 0, NULL), USTACK_SYM_OK);
	CHECK_EQ(ustack_symbolizer__file_source(s, 1), USTACK_DEBUG_SRC_SELF);
	ustack_symbolizer__free(s);
	put_cache_entry(given, "debug", dbg, sizeof(dbg));
	s = new_sym(dirs, NULL, 0);
	CHECK_EQ(resolve_one(s, "/nonexistent/prog", 0, NULL), USTACK_SYM_OK);
	CHECK_EQ(ustack_symbolizer__file_source(s, 1), USTACK_DEBUG_SRC_BUILDID_CACHE);
	CHECK_EQ(ustack_symbolizer__file_status(s, 1, &from), USTACK_SYM_OK);
	CHECK_STR(from, dbg);
	ustack_symbolizer__free(s);
	cleanup();
}

/* ustack's cache is trusted by name only where nobody else can write: a
 * group-writable one is not used (and a given one is refused outright). */
static void test_lookup_unsafe_cache(void)
{
	char ucache[4200], e[4600], hex[65];
	const char *dirs[] = { ucache, NULL };
	struct ustack_symbolizer_opts o = { .sz = sizeof(o), .buildid_dirs = dirs };

	setup();
	sha256sum(self_path, self_sha, hex);
	snprintf(ucache, sizeof(ucache), "%s/ucache", tmp);
	snprintf(e, sizeof(e), "elf-%s", hex);
	put_cache_entry(ucache, e, e, sizeof(e));
	CHECK_EQ(chmod(ucache, 0700), 0);
	setenv("USTACK_CACHE_DIR", ucache, 1);
	CHECK_EQ(source_of(NULL, NULL, 0, self_path, 1), USTACK_IMAGE_SRC_USTACK_CACHE);
	CHECK_EQ(chmod(ucache, 0770), 0);
	CHECK_EQ(source_of(NULL, NULL, 0, self_path, 1), USTACK_IMAGE_SRC_PATH);
	errno = 0;
	CHECK(ustack_symbolizer__new(&o) == NULL);
	CHECK_EQ(errno, EPERM);
	cleanup();
}

/* set_file_content() and the options' own errors */
static void test_lookup_api_edges(void)
{
	struct ustack_symbolizer_opts o = { .sz = sizeof(o), .symfs = "/nonexistent/symfs" };
	const char *bad[] = { "/nonexistent/cache", NULL };
	struct ustack_file_map fm;
	struct ustack_symbolizer *s;
	uint8_t other[32] = { 1 };

	setup();
	errno = 0;
	CHECK(ustack_symbolizer__new(&o) == NULL);
	CHECK_EQ(errno, ENOENT);
	o.symfs = NULL;
	o.buildid_dirs = bad;
	errno = 0;
	CHECK(ustack_symbolizer__new(&o) == NULL);
	CHECK_EQ(errno, ENOENT);

	s = new_sym(NULL, NULL, 0);
	fm = fmap(3, self_path);
	CHECK_EQ(ustack_symbolizer__set_file_content(s, 3, self_sha, self_size), -ENOENT);
	CHECK_EQ(ustack_symbolizer__add_file(s, &fm), 0);
	CHECK_EQ(ustack_symbolizer__set_file_content(s, 3, NULL, self_size), -EINVAL);
	CHECK_EQ(ustack_symbolizer__set_file_content(s, 3, self_sha, self_size), 0);
	CHECK_EQ(ustack_symbolizer__set_file_content(s, 3, self_sha, self_size), 0);
	CHECK_EQ(ustack_symbolizer__set_file_content(s, 3, other, self_size), -EEXIST);
	CHECK_EQ(ustack_symbolizer__file_status(s, 3, NULL), USTACK_SYM_OK);
	fm = fmap(4, self_path);
	CHECK_EQ(ustack_symbolizer__add_file(s, &fm), 0);
	CHECK_EQ(ustack_symbolizer__file_status(s, 4, NULL), USTACK_SYM_OK);
	CHECK_EQ(ustack_symbolizer__set_file_content(s, 4, self_sha, self_size), -EBUSY);
	CHECK_STR(ustack_image_source_name(USTACK_IMAGE_SRC_PERF_CACHE), "perf cache");
	CHECK_STR(ustack_image_source_name(99), "unknown");
	ustack_symbolizer__free(s);
	cleanup();
}

int main(void)
{
	RUN(test_lookup_other_build_at_path);
	cleanup();
	RUN(test_lookup_content_differs);
	cleanup();
	RUN(test_lookup_perf_cache);
	cleanup();
	RUN(test_lookup_order);
	cleanup();
	RUN(test_lookup_cached_debug);
	cleanup();
	RUN(test_lookup_unsafe_cache);
	cleanup();
	RUN(test_lookup_api_edges);
	cleanup();
	TEST_EXIT();
}
