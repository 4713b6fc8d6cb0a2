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
#include <signal.h>
#include <sys/resource.h>
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

/* a fresh cache root below tmpdir */
static const char *fresh_root(const char *name)
{
	static char root[256];

	snprintf(root, sizeof(root), "%s/%s", tmpdir, name);
	return root;
}

/* ---- SHA-256 ------------------------------------------------------------------ */

static void sha256_nist(void)
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

static void sha256_vs_sha256sum(void)
{
	static uint8_t buf[1 << 20];
	char path[256], want[65];

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

/* plain C, whatever the CPU has */
static void test_sha256_c(void)
{
	CHECK_EQ(ustack_sha256_use_hw(0), 0);
	sha256_nist();
	if (!have_sha256sum())
		SKIP("no sha256sum program (coreutils) to compare with");
	sha256_vs_sha256sum();
}

/* the CPU's SHA extensions: the NIST vectors, and the same answers as plain
 * C (checked against sha256sum above) for every length 0..1100 at every
 * alignment of a 16-byte lane, and in random pieces (the partial-block path
 * feeds them one block at a time); the hashes that follow use them too */
static void test_sha256_hw(void)
{
	static uint8_t buf[1200];
	char c_hex[65];

	if (!ustack_sha256_use_hw(1))
		SKIP("this CPU has no SHA extensions (x86-64 SHA-NI): plain C only");
	sha256_nist();
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	for (size_t len = 0; len <= 1100; len++) {
		size_t at = len % 16;

		ustack_sha256_use_hw(0);
		strcpy(c_hex, sha_hex(buf + at, len));
		CHECK(ustack_sha256_use_hw(1));
		CHECK_STR(sha_hex(buf + at, len), c_hex);
		CHECK_STR(sha_pieces(buf + at, len), c_hex);
	}
	/* a megabyte in one call and in pieces (plain C met sha256sum on it) */
	{
		static uint8_t big[1 << 20];
		char whole[65];

		for (size_t i = 0; i < sizeof(big); i++)
			big[i] = (uint8_t)rnd();
		ustack_sha256_use_hw(0);
		strcpy(c_hex, sha_hex(big, sizeof(big)));
		CHECK(ustack_sha256_use_hw(1));
		strcpy(whole, sha_hex(big, sizeof(big)));
		CHECK_STR(whole, c_hex);
		CHECK_STR(sha_pieces(big, sizeof(big)), c_hex);
	}
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

/* names of the files in @dir, sorted, joined by ' ' */
static const char *listing(const char *dir)
{
	static char out[2048];
	char cmd[600];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' 2>/dev/null | sort | tr '\\n' ' '", dir);
	p = popen(cmd, "r");
	CHECK(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	pclose(p);
	return out;
}

static void fill_file(const char *path, size_t len, unsigned seed)
{
	char *b = malloc(len + 1);

	CHECK(b);
	for (size_t i = 0; i < len; i++)
		b[i] = (char)(i * seed + seed);
	write_file(path, b, len);
	free(b);
}

static void test_conflict(void)
{
	const char *root = fresh_root("conflict");
	struct ustack_bidcache *c = ustack_bidcache__open(root, USTACK_BIDCACHE_WRITE);
	struct ustack_bidcache_stored s1, s2;
	char a[256], b[256], pa[512], pb[512], pe[512], dir[512], want[700];
	struct stat sa, sb, se;

	CHECK(c);
	snprintf(a, sizeof(a), "%s/ca", tmpdir);
	snprintf(b, sizeof(b), "%s/cb", tmpdir);
	fill_file(a, 3000, 3);
	fill_file(b, 3001, 5);
	CHECK_EQ(store_path(c, a, bid1, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &s1), 0);
	CHECK_EQ(s1.flags, USTACK_BIDCACHE_STORED_NEW);
	CHECK_EQ(store_path(c, b, bid1, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &s2), 0);
	CHECK_EQ(s2.flags, USTACK_BIDCACHE_STORED_NEW | USTACK_BIDCACHE_STORED_CONFLICT);
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_ELF, s1.sha256, pa, sizeof(pa)), 0);
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_ELF, s2.sha256, pb, sizeof(pb)), 0);
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_ELF, NULL, pe, sizeof(pe)), 0);
	CHECK(stat(pa, &sa) == 0 && stat(pb, &sb) == 0 && stat(pe, &se) == 0);
	/* "elf" is still the first content; the second has only its own name */
	CHECK_EQ(se.st_ino, sa.st_ino);
	CHECK_EQ(sa.st_nlink, 2);
	CHECK_EQ(sb.st_nlink, 1);
	CHECK_EQ(sb.st_size, 3001);
	/* the conflict is reported again on the next store, still nothing moved */
	CHECK_EQ(store_path(c, b, bid1, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &s2), 0);
	CHECK_EQ(s2.flags, USTACK_BIDCACHE_STORED_CONFLICT);
	/* no temporary files left behind */
	snprintf(dir, sizeof(dir), "%s/" BID1_DIR, root);
	{
		char ha[65], hb[65];

		tohex(s1.sha256, 32, ha);
		tohex(s2.sha256, 32, hb);
		snprintf(want, sizeof(want), "elf elf-%s elf-%s ", strcmp(ha, hb) < 0 ? ha : hb,
			 strcmp(ha, hb) < 0 ? hb : ha);
	}
	CHECK_STR(listing(dir), want);
	ustack_bidcache__close(c);
}

static void test_too_big(void)
{
	const char *root = fresh_root("big");
	struct ustack_bidcache *c = ustack_bidcache__open(root, USTACK_BIDCACHE_WRITE);
	struct ustack_bidcache_stored st;
	char src[256], want[65], hx[65], path[512], cmdline[4096];
	size_t n;

	CHECK(c);
	snprintf(src, sizeof(src), "%s/bigsrc", tmpdir);
	fill_file(src, 700000, 11);
	CHECK_EQ(store_path(c, src, bid1, 20, USTACK_BIDCACHE_ELF, NULL, 699999, &st), 0);
	CHECK_EQ(st.flags, USTACK_BIDCACHE_STORED_TOO_BIG);
	CHECK_EQ(st.size, 700000);
	tohex(st.sha256, 32, hx);
	if (have_sha256sum()) {
		CHECK(sha256sum_of(src, want) == 0);
		CHECK_STR(hx, want);
	}
	CHECK_STR(listing(root), "");
	/* far beyond max_size: still read to the end for the hash */
	CHECK_EQ(store_path(c, src, bid1, 20, USTACK_BIDCACHE_ELF, NULL, 1000, &st), 0);
	CHECK_EQ(st.flags, USTACK_BIDCACHE_STORED_TOO_BIG);
	CHECK_EQ(st.size, 700000);
	{
		char hx2[65];

		tohex(st.sha256, 32, hx2);
		CHECK_STR(hx2, hx);
	}
	CHECK_STR(listing(root), "");
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_ELF, NULL, path, sizeof(path)),
		 -ENOENT);
	/* exactly max_size is stored */
	CHECK_EQ(store_path(c, src, bid1, 20, USTACK_BIDCACHE_ELF, NULL, 700000, &st), 0);
	CHECK_EQ(st.flags, USTACK_BIDCACHE_STORED_NEW);
	{
		char hx2[65];

		tohex(st.sha256, 32, hx2);
		CHECK_STR(hx2, hx);
	}

	/* st_size is not trusted: /proc files say 0 and have more */
	n = read_file("/proc/self/cmdline", cmdline, sizeof(cmdline));
	CHECK(n > 1);
	CHECK_EQ(store_path(c, "/proc/self/cmdline", NULL, 0, USTACK_BIDCACHE_ELF, NULL, 1, &st), 0);
	CHECK_EQ(st.flags, USTACK_BIDCACHE_STORED_TOO_BIG);
	CHECK_EQ(st.size, n);
	tohex(st.sha256, 32, hx);
	CHECK_STR(hx, sha_hex(cmdline, n));
	/* the temporary copy of the first byte is gone */
	snprintf(path, sizeof(path), "%s/.content-id", root);
	CHECK_STR(listing(path), "");
	ustack_bidcache__close(c);
}

static void test_content_id_and_debug(void)
{
	const char *root = fresh_root("cid");
	struct ustack_bidcache *c = ustack_bidcache__open(root, USTACK_BIDCACHE_WRITE);
	struct ustack_bidcache_stored st, dbg;
	char src[256], dsrc[256], path[512], want[600], hx[65], buf[8192];
	static const uint8_t image[32] = { 0x11, 0x22, 0x33 };
	struct stat s1, s2;

	CHECK(c);
	snprintf(src, sizeof(src), "%s/noid", tmpdir);
	fill_file(src, 4321, 7);
	CHECK_EQ(store_path(c, src, NULL, 0, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), 0);
	CHECK_EQ(st.flags, USTACK_BIDCACHE_STORED_NEW);
	tohex(st.sha256, 32, hx);
	CHECK_EQ(ustack_bidcache__find(c, NULL, 0, USTACK_BIDCACHE_ELF, st.sha256, path, sizeof(path)), 0);
	snprintf(want, sizeof(want), "%s/.content-id/%.2s/%s/elf", root, hx, hx + 2);
	CHECK_STR(path, want);
	CHECK_EQ(read_file(path, buf, sizeof(buf)), 4321);
	CHECK(stat(path, &s1) == 0);
	CHECK_EQ(s1.st_nlink, 1);
	CHECK_EQ(store_path(c, src, NULL, 0, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), 0);
	CHECK_EQ(st.flags, 0);
	snprintf(path, sizeof(path), "%s/.content-id", root);
	CHECK_EQ(strlen(listing(path)), 3); /* "xx ": no temporary file left */
	CHECK_EQ(ustack_bidcache__find(c, NULL, 0, USTACK_BIDCACHE_ELF, NULL, path, sizeof(path)),
		 -EINVAL);

	/* DEBUG: debug-<image sha256> and the perf name debug */
	snprintf(dsrc, sizeof(dsrc), "%s/dbg", tmpdir);
	fill_file(dsrc, 999, 13);
	CHECK_EQ(store_path(c, dsrc, bid1, 20, USTACK_BIDCACHE_DEBUG, image, 1 << 20, &dbg), 0);
	CHECK_EQ(dbg.flags, USTACK_BIDCACHE_STORED_NEW);
	tohex(dbg.sha256, 32, hx);
	CHECK_STR(hx, sha_hex(buf, read_file(dsrc, buf, sizeof(buf))));
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_DEBUG, image, path, sizeof(path)), 0);
	tohex(image, 32, hx);
	snprintf(want, sizeof(want), "%s/" BID1_DIR "/debug-%s", root, hx);
	CHECK_STR(path, want);
	CHECK_EQ(read_file(path, buf, sizeof(buf)), 999);
	CHECK(stat(path, &s1) == 0);
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_DEBUG, NULL, path, sizeof(path)), 0);
	snprintf(want, sizeof(want), "%s/" BID1_DIR "/debug", root);
	CHECK_STR(path, want);
	CHECK(stat(path, &s2) == 0);
	CHECK_EQ(s1.st_ino, s2.st_ino);
	/* the ELF names of that build ID were not made */
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_ELF, NULL, path, sizeof(path)), -ENOENT);

	/* invalid requests */
	{
		int fd = open(src, O_RDONLY);
		uint8_t big[33] = { 1 };

		CHECK(fd >= 0);
		CHECK_EQ(ustack_bidcache__store(c, fd, NULL, 0, USTACK_BIDCACHE_DEBUG, image, 1 << 20, &st), -EINVAL);
		CHECK_EQ(ustack_bidcache__store(c, fd, big, 33, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), -EINVAL);
		CHECK_EQ(ustack_bidcache__store(c, fd, bid1, 20, USTACK_BIDCACHE_DEBUG, NULL, 1 << 20, &st), -EINVAL);
		CHECK_EQ(ustack_bidcache__store(c, fd, bid1, 20, (enum ustack_bidcache_kind)7, NULL, 1 << 20, &st), -EINVAL);
		CHECK_EQ(ustack_bidcache__find(c, big, 33, USTACK_BIDCACHE_ELF, NULL, path, sizeof(path)), -EINVAL);
		/* a 32-byte build ID is fine */
		CHECK_EQ(ustack_bidcache__store(c, fd, image, 32, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), 0);
		CHECK_EQ(st.flags, USTACK_BIDCACHE_STORED_NEW);
		close(fd);
	}
	ustack_bidcache__close(c);

	/* read-only: finds, does not store */
	c = ustack_bidcache__open(root, 0);
	CHECK(c);
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_DEBUG, NULL, path, sizeof(path)), 0);
	CHECK_EQ(store_path(c, src, NULL, 0, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), -EROFS);
	CHECK_EQ(ustack_bidcache__trim(c, 0, 0), -EROFS);
	ustack_bidcache__close(c);
}

static void test_unsafe_roots(void)
{
	char path[300], link[300];

	/* a symlink to a good directory */
	snprintf(path, sizeof(path), "%s/realroot", tmpdir);
	CHECK(mkdir(path, 0700) == 0);
	snprintf(link, sizeof(link), "%s/linkroot", tmpdir);
	CHECK(symlink(path, link) == 0);
	errno = 0;
	CHECK(!ustack_bidcache__open(link, USTACK_BIDCACHE_WRITE));
	CHECK_EQ(errno, EPERM);
	CHECK_STR(listing(path), "");
	/* group- or other-writable */
	snprintf(path, sizeof(path), "%s/open777", tmpdir);
	CHECK(mkdir(path, 0700) == 0 && chmod(path, 0777) == 0);
	errno = 0;
	CHECK(!ustack_bidcache__open(path, USTACK_BIDCACHE_WRITE));
	CHECK_EQ(errno, EPERM);
	CHECK(chmod(path, 0720) == 0);
	CHECK(!ustack_bidcache__open(path, USTACK_BIDCACHE_WRITE));
	CHECK(!ustack_bidcache__open(path, 0));
	CHECK_STR(listing(path), "");
	/* not a directory */
	snprintf(path, sizeof(path), "%s/afile", tmpdir);
	write_file(path, "x", 1);
	errno = 0;
	CHECK(!ustack_bidcache__open(path, USTACK_BIDCACHE_WRITE));
	CHECK_EQ(errno, EPERM);
	/* missing, not asked to create */
	snprintf(path, sizeof(path), "%s/missing/deeper", tmpdir);
	errno = 0;
	CHECK(!ustack_bidcache__open(path, 0));
	CHECK_EQ(errno, ENOENT);
	/* asked to create: made 0700, parents too */
	{
		struct ustack_bidcache *c = ustack_bidcache__open(path, USTACK_BIDCACHE_WRITE);
		struct stat st;

		CHECK(c);
		CHECK_STR(ustack_bidcache__root(c), path);
		ustack_bidcache__close(c);
		CHECK(stat(path, &st) == 0);
		CHECK_EQ(st.st_mode & 07777, 0700);
	}
	/* owned by another user (needs root to make one) */
	if (geteuid() == 0) {
		snprintf(path, sizeof(path), "%s/otheruid", tmpdir);
		CHECK(mkdir(path, 0700) == 0 && chown(path, 12345, 12345) == 0);
		errno = 0;
		CHECK(!ustack_bidcache__open(path, USTACK_BIDCACHE_WRITE));
		CHECK_EQ(errno, EPERM);
		CHECK(!ustack_bidcache__open(path, 0));
	} else {
		printf("# test_unsafe_roots: not root, another user's root not tried\n");
	}
}

/* a symlink planted in the cache is never followed, for writing or reading */
static void test_planted_symlinks(void)
{
	const char *root = fresh_root("planted");
	struct ustack_bidcache *c = ustack_bidcache__open(root, USTACK_BIDCACHE_WRITE);
	struct ustack_bidcache_stored st;
	char out[300], p[600], src[300], hx[65], found[600];

	CHECK(c);
	snprintf(out, sizeof(out), "%s/outside", tmpdir);
	CHECK(mkdir(out, 0700) == 0);
	snprintf(src, sizeof(src), "%s/plsrc", tmpdir);
	fill_file(src, 2222, 17);

	/* <root>/.build-id/ab -> outside */
	snprintf(p, sizeof(p), "%s/.build-id", root);
	CHECK(mkdir(p, 0700) == 0);
	snprintf(p, sizeof(p), "%s/.build-id/ab", root);
	CHECK(symlink(out, p) == 0);
	CHECK(store_path(c, src, bid1, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st) < 0);
	CHECK_STR(listing(out), "");
	/* what an attacker put there is not found through it */
	snprintf(p, sizeof(p), "%s/cd0102030405060708090a0b0c0d0e0f101112", out);
	CHECK(mkdir(p, 0700) == 0);
	snprintf(p, sizeof(p), "%s/cd0102030405060708090a0b0c0d0e0f101112/elf", out);
	fill_file(p, 10, 1);
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_ELF, NULL, found, sizeof(found)), -ENOENT);
	snprintf(p, sizeof(p), "%s/.build-id/ab", root);
	CHECK(unlink(p) == 0);

	/* the top directory itself a symlink: .content-id -> outside */
	snprintf(p, sizeof(p), "%s/.content-id", root);
	CHECK(symlink(out, p) == 0);
	CHECK(store_path(c, src, NULL, 0, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st) < 0);
	CHECK_STR(listing(out), "cd0102030405060708090a0b0c0d0e0f101112 ");

	/* a symlink at elf-<sha256> and at elf: not found, not written through */
	{
		char *b = malloc(2222);

		CHECK(b);
		CHECK_EQ(read_file(src, b, 2222), 2222);
		ustack_sha256(b, 2222, st.sha256);
		free(b);
	}
	tohex(st.sha256, 32, hx);
	snprintf(p, sizeof(p), "%s/.build-id/cd", root);
	CHECK(mkdir(p, 0700) == 0);
	snprintf(p, sizeof(p), "%s/.build-id/cd/0102030405060708090a0b0c0d0e0f10111213", root);
	CHECK(mkdir(p, 0700) == 0);
	{
		static const uint8_t bid2[20] = { 0xcd, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
						  11, 12, 13, 14, 15, 16, 17, 18, 19 };
		char victim[400];

		snprintf(victim, sizeof(victim), "%s/victim", out);
		write_file(victim, "precious", 8);
		snprintf(p, sizeof(p), "%s/.build-id/cd/0102030405060708090a0b0c0d0e0f10111213/elf-%s",
			 root, hx);
		CHECK(symlink(victim, p) == 0);
		snprintf(p, sizeof(p), "%s/.build-id/cd/0102030405060708090a0b0c0d0e0f10111213/elf",
			 root);
		CHECK(symlink(victim, p) == 0);
		CHECK_EQ(ustack_bidcache__find(c, bid2, 20, USTACK_BIDCACHE_ELF, st.sha256, found, sizeof(found)), -ENOENT);
		CHECK_EQ(ustack_bidcache__find(c, bid2, 20, USTACK_BIDCACHE_ELF, NULL, found, sizeof(found)), -ENOENT);
		CHECK(store_path(c, src, bid2, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st) < 0);
		CHECK_EQ(read_file(victim, found, sizeof(found)), 8);
		CHECK(!memcmp(found, "precious", 8));
		/* only elf a symlink: the content is stored, elf is a conflict */
		snprintf(p, sizeof(p), "%s/.build-id/cd/0102030405060708090a0b0c0d0e0f10111213/elf-%s",
			 root, hx);
		CHECK(unlink(p) == 0);
		CHECK_EQ(store_path(c, src, bid2, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), 0);
		CHECK_EQ(st.flags, USTACK_BIDCACHE_STORED_NEW | USTACK_BIDCACHE_STORED_CONFLICT);
		CHECK_EQ(read_file(victim, found, sizeof(found)), 8);
		CHECK_EQ(ustack_bidcache__find(c, bid2, 20, USTACK_BIDCACHE_ELF, NULL, found, sizeof(found)), -ENOENT);
		CHECK_EQ(ustack_bidcache__find(c, bid2, 20, USTACK_BIDCACHE_ELF, st.sha256, found, sizeof(found)), 0);
	}
	ustack_bidcache__close(c);
}

/* perf's layout, as `perf buildid-cache -a` makes it (perf 6.1 here) */
static void test_foreign(void)
{
	const char *root = fresh_root("perfcache");
	static const uint8_t bid[20] = { 0xc8, 0x91, 0x56, 0xeb, 0xda, 0xbf, 0x85, 0x9f, 0x4e, 0xe7,
					 0x0c, 0xb0, 0xc3, 0x03, 0x00, 0x4d, 0xcc, 0xf1, 0xae, 0x51 };
	const char *hex = "c89156ebdabf859f4ee70cb0c303004dccf1ae51";
	struct ustack_bidcache *c;
	struct ustack_bidcache_stored st;
	char p[2048], found[600], buf[64];

	snprintf(p, sizeof(p), "mkdir -p '%s/.build-id/c8' '%s/usr/bin/prog/%s' && "
		 "ln -s ../../usr/bin/prog/%s '%s/.build-id/c8/%s' && chmod 0777 '%s'",
		 root, root, hex, hex, root, hex + 2, root);
	CHECK(system(p) == 0);
	snprintf(p, sizeof(p), "%s/usr/bin/prog/%s/elf", root, hex);
	write_file(p, "perf's copy", 11);
	c = ustack_bidcache__open(root, USTACK_BIDCACHE_FOREIGN);
	CHECK(c);
	CHECK_EQ(ustack_bidcache__find(c, bid, 20, USTACK_BIDCACHE_ELF, NULL, found, sizeof(found)), 0);
	CHECK_EQ(read_file(found, buf, sizeof(buf)), 11);
	CHECK(!memcmp(buf, "perf's copy", 11));
	/* nothing in it is content-checked */
	ustack_sha256("perf's copy", 11, st.sha256);
	CHECK_EQ(ustack_bidcache__find(c, bid, 20, USTACK_BIDCACHE_ELF, st.sha256, found, sizeof(found)), -ENOENT);
	CHECK_EQ(ustack_bidcache__find(c, bid, 20, USTACK_BIDCACHE_DEBUG, NULL, found, sizeof(found)), -ENOENT);
	CHECK_EQ(store_path(c, p, bid, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), -EROFS);
	ustack_bidcache__close(c);
	/* FOREIGN together with WRITE makes no sense */
	CHECK(!ustack_bidcache__open(root, USTACK_BIDCACHE_FOREIGN | USTACK_BIDCACHE_WRITE));
	/* the same directory as an own cache: its symlink is not followed */
	CHECK(chmod(root, 0700) == 0);
	c = ustack_bidcache__open(root, 0);
	CHECK(c);
	CHECK_EQ(ustack_bidcache__find(c, bid, 20, USTACK_BIDCACHE_ELF, NULL, found, sizeof(found)), -ENOENT);
	ustack_bidcache__close(c);
}

/* one build-ID entry of @size bytes whose files have mtime @t (0: now) */
static void trim_entry(struct ustack_bidcache *c, uint8_t first, size_t size, time_t t)
{
	uint8_t bid[20] = { first, 0x55 };
	struct ustack_bidcache_stored st;
	char src[300], path[600];

	snprintf(src, sizeof(src), "%s/trimsrc", tmpdir);
	fill_file(src, size, first);
	CHECK_EQ(store_path(c, src, bid, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), 0);
	CHECK_EQ(st.flags, USTACK_BIDCACHE_STORED_NEW);
	if (!t)
		return;
	CHECK_EQ(ustack_bidcache__find(c, bid, 20, USTACK_BIDCACHE_ELF, NULL, path, sizeof(path)), 0);
	{
		struct timespec ts[2] = { { t, 0 }, { t, 0 } };

		/* elf and elf-<sha256> are one inode */
		CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0);
	}
}

static int has_entry(struct ustack_bidcache *c, uint8_t first)
{
	uint8_t bid[20] = { first, 0x55 };
	char path[600];

	return ustack_bidcache__find(c, bid, 20, USTACK_BIDCACHE_ELF, NULL, path, sizeof(path)) == 0;
}

static void test_trim(void)
{
	const char *root = fresh_root("trim");
	struct ustack_bidcache *c = ustack_bidcache__open(root, USTACK_BIDCACHE_WRITE);
	time_t now = time(NULL);
	char p[600];

	CHECK(c);
	/* an empty cache: nothing to sort, nothing removed (UBSan once
	 * caught qsort(NULL, 0) here) */
	CHECK_EQ(ustack_bidcache__trim(c, 0, 0), 0);
	/* stored in an order unlike their ages */
	trim_entry(c, 0x20, 2000, 2000000);
	trim_entry(c, 0x30, 4000, 3000000);
	trim_entry(c, 0x10, 1000, 1000000);
	{
		/* a .content-id entry counts too: 500 bytes, the oldest */
		struct ustack_bidcache_stored st;
		char src[300], path[600];
		struct timespec ts[2] = { { 500000, 0 }, { 500000, 0 } };

		snprintf(src, sizeof(src), "%s/trimcid", tmpdir);
		fill_file(src, 500, 9);
		CHECK_EQ(store_path(c, src, NULL, 0, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), 0);
		CHECK_EQ(ustack_bidcache__find(c, NULL, 0, USTACK_BIDCACHE_ELF, st.sha256, path, sizeof(path)), 0);
		CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0);
	}
	/* within budget (7500, hard links counted once): nothing */
	CHECK_EQ(ustack_bidcache__trim(c, 7500, now + 10), 0);
	CHECK(has_entry(c, 0x10) && has_entry(c, 0x20) && has_entry(c, 0x30));
	/* 5000: the .content-id entry, then 0x10 (6000 left), then 0x20 (4000) */
	CHECK_EQ(ustack_bidcache__trim(c, 5000, now + 10), 3500);
	CHECK(!has_entry(c, 0x10) && !has_entry(c, 0x20) && has_entry(c, 0x30));
	snprintf(p, sizeof(p), "%s/.build-id/10", root);
	CHECK_STR(listing(p), "");
	snprintf(p, sizeof(p), "%s/.content-id", root);
	CHECK_EQ(strlen(listing(p)), 3); /* only the emptied <xx> directory */
	/* keep_after: an entry touched at or after it stays, whatever the budget */
	trim_entry(c, 0x40, 3000, 0);
	CHECK_EQ(ustack_bidcache__trim(c, 0, 3000000), 0);
	CHECK(has_entry(c, 0x30) && has_entry(c, 0x40));
	CHECK_EQ(ustack_bidcache__trim(c, 0, 3000001), 4000);
	CHECK(!has_entry(c, 0x30) && has_entry(c, 0x40));
	/* a stored entry used again is touched: newer than the rest */
	trim_entry(c, 0x50, 100, 1000);
	trim_entry(c, 0x60, 100, 2000);
	{
		uint8_t bid[20] = { 0x50, 0x55 };
		struct ustack_bidcache_stored st;
		char src[300];

		snprintf(src, sizeof(src), "%s/trimsrc", tmpdir);
		fill_file(src, 100, 0x50);
		CHECK_EQ(store_path(c, src, bid, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), 0);
		CHECK_EQ(st.flags, 0);
	}
	CHECK_EQ(ustack_bidcache__trim(c, 3100, now + 10), 100);
	CHECK(has_entry(c, 0x50) && !has_entry(c, 0x60) && has_entry(c, 0x40));
	ustack_bidcache__close(c);
}

/*
 * A file the cache holds already is not copied again: stored a second time
 * by a process that may write no byte to any file (RLIMIT_FSIZE 0,
 * SIGXFSZ ignored: a write gets EFBIG), it is found, its hash and size
 * right, nothing NEW; a file not in the cache fails there (-EFBIG), which
 * shows the limit bites. ELF with a build ID, .content-id, DEBUG; and an
 * ELF whose perf name was removed gets it back without a copy.
 */
static void test_restore_writes_nothing(void)
{
	const char *root = fresh_root("again");
	struct ustack_bidcache *c = ustack_bidcache__open(root, USTACK_BIDCACHE_WRITE);
	static const uint8_t image[32] = { 0x44, 0x55 };
	struct ustack_bidcache_stored first[3];
	char elf[300], cid[300], dbg[300], fresh[300], perf[700];
	pid_t kid;
	int ws;

	CHECK(c);
	snprintf(elf, sizeof(elf), "%s/again-elf", tmpdir);
	snprintf(cid, sizeof(cid), "%s/again-cid", tmpdir);
	snprintf(dbg, sizeof(dbg), "%s/again-dbg", tmpdir);
	snprintf(fresh, sizeof(fresh), "%s/again-new", tmpdir);
	fill_file(elf, 300000, 31);
	fill_file(cid, 5000, 32);
	fill_file(dbg, 70000, 33);
	fill_file(fresh, 6000, 34);
	CHECK_EQ(store_path(c, elf, bid1, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &first[0]), 0);
	CHECK_EQ(store_path(c, cid, NULL, 0, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &first[1]), 0);
	CHECK_EQ(store_path(c, dbg, bid1, 20, USTACK_BIDCACHE_DEBUG, image, 1 << 20, &first[2]), 0);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(first[i].flags, USTACK_BIDCACHE_STORED_NEW);
	snprintf(perf, sizeof(perf), "%s/" BID1_DIR "/elf", root);
	CHECK(unlink(perf) == 0);
	kid = fork();
	CHECK(kid >= 0);
	if (!kid) {
		struct rlimit rl = { 0, 0 };
		struct ustack_bidcache_stored st;
		const char *paths[3] = { elf, cid, dbg };

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(90);
		for (int i = 0; i < 3; i++) {
			int err = store_path(c, paths[i], i == 1 ? NULL : bid1, i == 1 ? 0 : 20,
					     i == 2 ? USTACK_BIDCACHE_DEBUG : USTACK_BIDCACHE_ELF,
					     i == 2 ? image : NULL, 1 << 20, &st);

			if (err)
				_exit(10 + i);
			if (st.flags || st.size != first[i].size ||
			    memcmp(st.sha256, first[i].sha256, 32))
				_exit(20 + i);
		}
		{
			uint8_t bid[20] = { 0x99 };

			if (store_path(c, fresh, bid, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st) != -EFBIG)
				_exit(30);
		}
		_exit(0);
	}
	CHECK(waitpid(kid, &ws, 0) == kid);
	CHECK(WIFEXITED(ws));
	CHECK_EQ(WEXITSTATUS(ws), 0);
	{
		/* the perf name is back (a hard link: no copy), no temporary left */
		char d[700], want[800], hx[65];
		struct stat a, b;

		tohex(first[0].sha256, 32, hx);
		snprintf(d, sizeof(d), "%s/" BID1_DIR, root);
		CHECK(stat(perf, &a) == 0);
		snprintf(want, sizeof(want), "%s/elf-%s", d, hx);
		CHECK(stat(want, &b) == 0);
		CHECK_EQ(a.st_ino, b.st_ino);
		CHECK_EQ(strstr(listing(d), ".tmp-") == NULL, 1);
	}
	ustack_bidcache__close(c);
}

/* A temporary file no store wrote to for an hour (a killed recorder's) is
 * removed by the trim, in an entry directory and in .content-id; a recent
 * one, and the entries, stay. */
static void test_trim_stale_tmp(void)
{
	const char *root = fresh_root("stale");
	struct ustack_bidcache *c = ustack_bidcache__open(root, USTACK_BIDCACHE_WRITE);
	struct timespec old[2] = { { time(NULL) - 3700, 0 }, { time(NULL) - 3700, 0 } };
	struct ustack_bidcache_stored st;
	char src[300], d[700], cd[700], p[800];

	CHECK(c);
	snprintf(src, sizeof(src), "%s/stalesrc", tmpdir);
	fill_file(src, 4000, 41);
	CHECK_EQ(store_path(c, src, bid1, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), 0);
	CHECK_EQ(store_path(c, src, NULL, 0, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st), 0);
	snprintf(d, sizeof(d), "%s/" BID1_DIR, root);
	snprintf(cd, sizeof(cd), "%s/.content-id", root);
	snprintf(p, sizeof(p), "%s/.tmp-999999-00000000000000aa", d);
	fill_file(p, 100, 1);
	CHECK(utimensat(AT_FDCWD, p, old, 0) == 0);
	snprintf(p, sizeof(p), "%s/.tmp-999999-00000000000000bb", d);
	fill_file(p, 100, 2); /* written now: a store in progress */
	snprintf(p, sizeof(p), "%s/.tmp-999999-00000000000000cc", cd);
	fill_file(p, 100, 3);
	CHECK(utimensat(AT_FDCWD, p, old, 0) == 0);
	CHECK_EQ(ustack_bidcache__trim(c, UINT64_MAX, 0), 0);
	CHECK_EQ(strstr(listing(d), ".tmp-999999-00000000000000aa") == NULL, 1);
	CHECK_EQ(strstr(listing(d), ".tmp-999999-00000000000000bb") != NULL, 1);
	CHECK_EQ(strstr(listing(cd), ".tmp-") == NULL, 1);
	CHECK_EQ(ustack_bidcache__find(c, bid1, 20, USTACK_BIDCACHE_ELF, NULL, p, sizeof(p)), 0);
	CHECK_EQ(ustack_bidcache__find(c, NULL, 0, USTACK_BIDCACHE_ELF, st.sha256, p, sizeof(p)), 0);
	ustack_bidcache__close(c);
}

static void test_budget(void)
{
	unsetenv("USTACK_BUILDID_CACHE_MAX_MB");
	CHECK_EQ_U64(ustack_bidcache_budget(), 4096ull << 20);
	setenv("USTACK_BUILDID_CACHE_MAX_MB", "7", 1);
	CHECK_EQ_U64(ustack_bidcache_budget(), 7ull << 20);
	setenv("USTACK_BUILDID_CACHE_MAX_MB", "0", 1);
	CHECK_EQ_U64(ustack_bidcache_budget(), UINT64_MAX);
	setenv("USTACK_BUILDID_CACHE_MAX_MB", "12x", 1);
	CHECK_EQ_U64(ustack_bidcache_budget(), 4096ull << 20);
	setenv("USTACK_BUILDID_CACHE_MAX_MB", "-1", 1);
	CHECK_EQ_U64(ustack_bidcache_budget(), 4096ull << 20);
	unsetenv("USTACK_BUILDID_CACHE_MAX_MB");
}

/* recorders storing one file at once: all succeed, one writes, one entry */
static void test_concurrent_store(void)
{
	const char *root = fresh_root("race");
	enum { KIDS = 4, ROUNDS = 20 };
	char src[300], dir[600];
	int go[2];
	pid_t kids[KIDS];

	snprintf(src, sizeof(src), "%s/racesrc", tmpdir);
	fill_file(src, 300000, 23);
	CHECK(pipe(go) == 0);
	for (int k = 0; k < KIDS; k++) {
		kids[k] = fork();
		CHECK(kids[k] >= 0);
		if (!kids[k]) {
			int news = 0;
			char b;

			close(go[1]);
			if (read(go[0], &b, 1) != 0)
				_exit(100);
			for (int r = 0; r < ROUNDS; r++) {
				uint8_t bid[20] = { 0x77, (uint8_t)r };
				struct ustack_bidcache *c = ustack_bidcache__open(root, USTACK_BIDCACHE_WRITE);
				struct ustack_bidcache_stored st;

				if (!c || store_path(c, src, bid, 20, USTACK_BIDCACHE_ELF, NULL, 1 << 20, &st) ||
				    st.flags & ~USTACK_BIDCACHE_STORED_NEW)
					_exit(101);
				news += st.flags == USTACK_BIDCACHE_STORED_NEW;
				ustack_bidcache__close(c);
			}
			_exit(news);
		}
	}
	close(go[0]);
	close(go[1]); /* all start together */
	{
		int total = 0;

		for (int k = 0; k < KIDS; k++) {
			int ws;

			CHECK(waitpid(kids[k], &ws, 0) == kids[k]);
			CHECK(WIFEXITED(ws));
			CHECK(WEXITSTATUS(ws) <= ROUNDS);
			total += WEXITSTATUS(ws);
		}
		/* exactly one store per build ID wrote it */
		CHECK_EQ(total, ROUNDS);
	}
	for (int r = 0; r < ROUNDS; r++) {
		char want[800], hx[65], *b = malloc(300000);
		struct stat st;

		CHECK(b);
		CHECK_EQ(read_file(src, b, 300000), 300000);
		strcpy(hx, sha_hex(b, 300000));
		free(b);
		snprintf(dir, sizeof(dir), "%s/.build-id/77/%02x000000000000000000000000000000000000", root, r);
		snprintf(want, sizeof(want), "elf elf-%s ", hx);
		CHECK_STR(listing(dir), want);
		snprintf(want, sizeof(want), "%s/elf", dir);
		CHECK(stat(want, &st) == 0);
		CHECK_EQ(st.st_nlink, 2);
		CHECK_EQ(st.st_size, 300000);
	}
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_sha256_c);
	RUN(test_sha256_hw);
	RUN(test_store_find);
	RUN(test_conflict);
	RUN(test_too_big);
	RUN(test_content_id_and_debug);
	RUN(test_unsafe_roots);
	RUN(test_planted_symlinks);
	RUN(test_foreign);
	RUN(test_trim);
	RUN(test_trim_stale_tmp);
	RUN(test_restore_writes_nothing);
	RUN(test_budget);
	RUN(test_concurrent_store);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	TEST_EXIT();
}
