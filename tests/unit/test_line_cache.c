// SPDX-License-Identifier: MIT
/* src/symbolize/line_cache.c: answers put are got back the same, survive a
 * save and an open, are used only for the DWARF file they were read from,
 * and a damaged cache file is refused with a warning, never half-used. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ustack/ustack.h>

#include "symbolize/line_cache.h"
#include "test.h"

static char dir[] = "/tmp/ustack-lc-XXXXXX";
static char dwarf[256];
static const uint8_t id[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6,
				7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

/* a chain of two: f inlined into g */
static const struct ustack_dwarf_level two[2] = {
	{ .name = "f", .file = "/src/f.h", .line = 12, .column = 3, .inlined = 1, .decl_line = 10 },
	{ .name = "g", .linkage = "_Z1gv", .file = "/src/g.c", .line = 40, .decl_line = 33 },
};

static void same_levels(const struct ustack_dwarf_level *a, const struct ustack_dwarf_level *b,
			int n)
{
	for (int i = 0; i < n; i++) {
		CHECK((a[i].name == NULL) == (b[i].name == NULL));
		CHECK((a[i].linkage == NULL) == (b[i].linkage == NULL));
		CHECK((a[i].file == NULL) == (b[i].file == NULL));
		if (a[i].name)
			CHECK_STR(a[i].name, b[i].name);
		if (a[i].linkage)
			CHECK_STR(a[i].linkage, b[i].linkage);
		if (a[i].file)
			CHECK_STR(a[i].file, b[i].file);
		CHECK_EQ(a[i].line, b[i].line);
		CHECK_EQ(a[i].column, b[i].column);
		CHECK_EQ(a[i].inlined, b[i].inlined);
		CHECK_EQ(a[i].decl_line, b[i].decl_line);
	}
}

static void fill(struct ustack_line_cache *c)
{
	struct ustack_dwarf_level one = { .name = "h", .file = "/src/g.c", .line = 7 };

	/* out of order, and one address with nothing (0 levels) */
	CHECK_EQ(ustack_line_cache__put(c, 0x2000, two, 2), 0);
	CHECK_EQ(ustack_line_cache__put(c, 0x1000, &one, 1), 0);
	CHECK_EQ(ustack_line_cache__put(c, 0x1800, NULL, 0), 0);
	/* a second answer for an address is ignored */
	CHECK_EQ(ustack_line_cache__put(c, 0x1000, two, 2), 0);
}

static void check_filled(struct ustack_line_cache *c)
{
	struct ustack_dwarf_level out[USTACK_DWARF_MAX_LEVELS];

	CHECK_EQ(ustack_line_cache__get(c, 0x2000, out), 2);
	same_levels(out, two, 2);
	CHECK_EQ(ustack_line_cache__get(c, 0x1000, out), 1);
	CHECK_STR(out[0].name, "h");
	CHECK(out[0].linkage == NULL);
	CHECK_EQ(out[0].line, 7);
	CHECK_EQ(ustack_line_cache__get(c, 0x1800, out), 0);
	CHECK_EQ(ustack_line_cache__get(c, 0x1001, out), -ENOENT);
	CHECK_EQ(ustack_line_cache__get(c, 0, out), -ENOENT);
}

static char *cache_file(void)
{
	static char path[512];
	char hex[41];

	for (int i = 0; i < 20; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	snprintf(path, sizeof(path), "%s/lines/%s.lines", dir, hex);
	return path;
}

static void put_get_save_open(void)
{
	struct ustack_line_cache *c = ustack_line_cache__open(id, sizeof(id), dwarf);
	struct ustack_dwarf_level out[USTACK_DWARF_MAX_LEVELS];
	struct stat st;

	CHECK(c != NULL);
	CHECK_EQ(ustack_line_cache__get(c, 0x2000, out), -ENOENT);
	fill(c);
	check_filled(c);
	CHECK_EQ(ustack_line_cache__save(c), 0);
	/* saved again with nothing new (the report saves, then frees): the
	 * same file, not rewritten (a rewrite is a new inode) */
	CHECK_EQ(stat(cache_file(), &st), 0);
	{
		struct stat st2;

		CHECK_EQ(ustack_line_cache__save(c), 0);
		CHECK_EQ(stat(cache_file(), &st2), 0);
		CHECK_EQ_U64(st2.st_ino, st.st_ino);
	}
	ustack_line_cache__free(c);

	/* read back; one more added; saved again: both kept */
	c = ustack_line_cache__open(id, sizeof(id), dwarf);
	CHECK(c != NULL);
	check_filled(c);
	CHECK_EQ(ustack_line_cache__put(c, 0x3000, two + 1, 1), 0);
	CHECK_EQ(ustack_line_cache__save(c), 0);
	ustack_line_cache__free(c);
	c = ustack_line_cache__open(id, sizeof(id), dwarf);
	check_filled(c);
	CHECK_EQ(ustack_line_cache__get(c, 0x3000, out), 1);
	CHECK_STR(out[0].name, "g");
	/* nothing new: not written */
	CHECK_EQ(unlink(cache_file()), 0);
	CHECK_EQ(ustack_line_cache__save(c), 0);
	CHECK(stat(cache_file(), &st) != 0);
	ustack_line_cache__free(c);
}

/* Another build ID, another DWARF file or another state of it: not used. */
static void identity(void)
{
	struct ustack_dwarf_level out[USTACK_DWARF_MAX_LEVELS];
	struct ustack_line_cache *c = ustack_line_cache__open(id, sizeof(id), dwarf);
	struct timespec ts[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	char other[300];
	int fd;

	fill(c);
	CHECK_EQ(ustack_line_cache__save(c), 0);
	ustack_line_cache__free(c);
	c = ustack_line_cache__open(id, sizeof(id), dwarf);
	CHECK_EQ(ustack_line_cache__get(c, 0x2000, out), 2);
	ustack_line_cache__free(c);

	/* a copy of the DWARF file under the same build ID */
	snprintf(other, sizeof(other), "%s/copy.debug", dir);
	fd = open(other, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "DWARF", 5), 5);
	close(fd);
	c = ustack_line_cache__open(id, sizeof(id), other);
	CHECK(c != NULL);
	CHECK_EQ(ustack_line_cache__get(c, 0x2000, out), -ENOENT);
	ustack_line_cache__free(c);

	/* the same file, changed (same size, other mtime) */
	CHECK_EQ(utimensat(AT_FDCWD, dwarf, ts, 0), 0);
	c = ustack_line_cache__open(id, sizeof(id), dwarf);
	CHECK_EQ(ustack_line_cache__get(c, 0x2000, out), -ENOENT);
	ustack_line_cache__free(c);

	/* no such DWARF file, no build ID: no cache */
	CHECK(ustack_line_cache__open(id, sizeof(id), "/nonexistent/x.debug") == NULL);
	CHECK(ustack_line_cache__open(id, 0, dwarf) == NULL);
}

/* "No DWARF" is kept, only for a cache without entries, and then nothing
 * is added. */
static void no_dwarf(void)
{
	struct ustack_line_cache *c;
	struct ustack_dwarf_level out[USTACK_DWARF_MAX_LEVELS];

	unlink(cache_file());
	c = ustack_line_cache__open(id, sizeof(id), dwarf);
	CHECK_EQ(ustack_line_cache__no_dwarf(c), 0);
	ustack_line_cache__set_no_dwarf(c);
	CHECK_EQ(ustack_line_cache__no_dwarf(c), 1);
	CHECK_EQ(ustack_line_cache__put(c, 0x2000, two, 2), 0);
	CHECK_EQ(ustack_line_cache__get(c, 0x2000, out), -ENOENT);
	CHECK_EQ(ustack_line_cache__save(c), 0);
	ustack_line_cache__free(c);
	c = ustack_line_cache__open(id, sizeof(id), dwarf);
	CHECK_EQ(ustack_line_cache__no_dwarf(c), 1);
	CHECK_EQ(ustack_line_cache__get(c, 0x2000, out), -ENOENT);
	ustack_line_cache__free(c);
	/* a cache with entries is never marked */
	unlink(cache_file());
	c = ustack_line_cache__open(id, sizeof(id), dwarf);
	fill(c);
	ustack_line_cache__set_no_dwarf(c);
	CHECK_EQ(ustack_line_cache__no_dwarf(c), 0);
	check_filled(c);
	ustack_line_cache__free(c);
}

/* Found corrupt: what this run read is not written, and the file written
 * from this DWARF goes. */
static void drop(void)
{
	struct ustack_line_cache *c = ustack_line_cache__open(id, sizeof(id), dwarf);
	struct stat st;

	fill(c);
	CHECK_EQ(ustack_line_cache__save(c), 0);
	ustack_line_cache__free(c);
	c = ustack_line_cache__open(id, sizeof(id), dwarf);
	CHECK_EQ(ustack_line_cache__put(c, 0x5000, two, 2), 0);
	ustack_line_cache__drop(c);
	CHECK(stat(cache_file(), &st) != 0);
	CHECK_EQ(ustack_line_cache__save(c), 0);
	CHECK(stat(cache_file(), &st) != 0);
	ustack_line_cache__free(c);
	/* written by this same cache, then found corrupt: removed too */
	unlink(cache_file());
	c = ustack_line_cache__open(id, sizeof(id), dwarf);
	fill(c);
	CHECK_EQ(ustack_line_cache__save(c), 0);
	CHECK_EQ(stat(cache_file(), &st), 0);
	ustack_line_cache__drop(c);
	CHECK(stat(cache_file(), &st) != 0);
	ustack_line_cache__free(c);
}

static size_t warnings;
static char last_warning[256];

static int capture(enum ustack_print_level level, const char *fmt, va_list ap)
{
	if (level == USTACK_WARN) {
		warnings++;
		vsnprintf(last_warning, sizeof(last_warning), fmt, ap);
	}
	return 0;
}

/* Every byte of a cache image flipped, and every truncation: refused
 * (EBADMSG) or, where the byte is not checked (padding), the same answers;
 * never a crash. */
static void damaged_images(void)
{
	struct ustack_line_cache *c = ustack_line_cache__open(id, sizeof(id), dwarf);
	struct ustack_line_cache *d;
	ustack_print_fn_t old;
	void *img;
	size_t len, refused = 0, kept = 0;
	uint8_t *b;

	fill(c);
	CHECK_EQ(ustack_line_cache__image(c, &img, &len), 0);
	d = ustack_line_cache__from_image(img, len, "test");
	CHECK(d != NULL);
	check_filled(d);
	ustack_line_cache__free(d);
	b = malloc(len);
	old = ustack_set_print(capture);
	for (size_t i = 0; i < len; i++) {
		memcpy(b, img, len);
		b[i] ^= 0x41;
		d = ustack_line_cache__from_image(b, len, "test");
		if (!d) {
			CHECK_EQ(errno, EBADMSG);
			refused++;
			continue;
		}
		/* only the header's padding and identity are not checked here */
		CHECK(i < 128);
		check_filled(d);
		ustack_line_cache__free(d);
		kept++;
	}
	/* one warning per refusal, naming the file and the offset */
	CHECK_EQ(warnings, refused);
	CHECK(strstr(last_warning, "test: corrupt line cache at offset "));
	for (size_t n = 0; n < len; n++)
		CHECK(ustack_line_cache__from_image(img, n, "test") == NULL);
	CHECK_EQ(warnings, refused + len);
	ustack_set_print(old);
	printf("#   %zu flipped bytes refused, %zu in unchecked header fields\n", refused, kept);
	CHECK(refused > len - 128);
	free(b);
	free(img);
	ustack_line_cache__free(c);
}

int main(void)
{
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	setenv("USTACK_CACHE_DIR", dir, 1);
	snprintf(dwarf, sizeof(dwarf), "%s/prog.debug", dir);
	fd = open(dwarf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "DWARF", 5), 5);
	close(fd);
	RUN(put_get_save_open);
	RUN(identity);
	RUN(drop);
	RUN(no_dwarf);
	RUN(damaged_images);
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", dir);
	}
	TEST_EXIT();
}
