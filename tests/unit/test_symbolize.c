// SPDX-License-Identifier: MIT
/*
 * Symbolizer tests over this test binary itself: the addresses of its own
 * functions (what the compiler and linker produced, read back through
 * dl_iterate_phdr) are the oracle for names and offsets.
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
#include "self_elf.h"
#include "test.h"

/* two functions with bodies large enough that +1 and +5 stay inside */
__attribute__((noinline, used)) int symtest_first(int x)
{
	volatile int v = x;

	for (int i = 0; i < 3; i++)
		v = v * 7 + i;
	return v;
}

__attribute__((noinline, used)) int symtest_second(int x)
{
	volatile int v = x;

	for (int i = 0; i < 5; i++)
		v = v * 11 + i;
	return v;
}

static void setup_self(void)
{
	self_elf_load(1);
}

static struct ustack_file_map self_map(uint64_t id, const char *path, int with_bid)
{
	struct ustack_file_map fm;

	memset(&fm, 0, sizeof(fm));
	fm.file_id = id;
	fm.kind = 1; /* USTACK_VMA_FILE */
	fm.path = path;
	if (with_bid) {
		fm.build_id_size = (uint32_t)self_bid_len;
		memcpy(fm.build_id, self_bid, (size_t)self_bid_len);
	}
	return fm;
}

static struct ustack_symbolizer *new_sym(const char *debug_dir)
{
	struct ustack_symbolizer_opts o = { .sz = sizeof(o), .debug_dir = debug_dir };

	if (!debug_dir)
		o.flags = USTACK_SYMBOLIZER_NO_DEBUG_DIR;
	return ustack_symbolizer__new(&o);
}

static void test_by_path_exact(void)
{
	struct ustack_symbolizer *s;
	struct ustack_file_map fm;
	struct ustack_sym sy;
	uint64_t off;

	setup_self();
	s = new_sym(NULL);
	CHECK(s);
	fm = self_map(7, self_path, 1);
	CHECK_EQ(ustack_symbolizer__add_file(s, &fm), 0);
	off = self_offset_of((void *)symtest_first);
	CHECK_EQ(ustack_symbolizer__symbolize(s, 7, off + 5, USTACK_SYM_EXACT_PC, &sy), 0);
	CHECK_EQ(sy.status, USTACK_SYM_OK);
	CHECK_STR(sy.name, "symtest_first");
	CHECK_EQ(sy.sym_offset, 5);
	CHECK_EQ_U64(sy.vaddr, (uintptr_t)symtest_first - self_bias + 5);
	CHECK_STR(sy.path, self_path);
	CHECK_EQ(ustack_symbolizer__file_status(s, 7, NULL), USTACK_SYM_OK);
	ustack_symbolizer__free(s);
}

/* A return address is looked up at offset - 1 (the call) but printed as
 * itself: at the first byte of symtest_second it names what precedes it. */
static void test_return_address_rule(void)
{
	struct ustack_symbolizer *s;
	struct ustack_file_map fm;
	struct ustack_sym sy, sy2;
	uint64_t off;

	setup_self();
	s = new_sym(NULL);
	CHECK(s);
	fm = self_map(9, self_path, 1);
	CHECK_EQ(ustack_symbolizer__add_file(s, &fm), 0);
	off = self_offset_of((void *)symtest_second);

	CHECK_EQ(ustack_symbolizer__symbolize(s, 9, off, USTACK_SYM_EXACT_PC, &sy), 0);
	CHECK_EQ(sy.status, USTACK_SYM_OK);
	CHECK_STR(sy.name, "symtest_second");
	CHECK_EQ(sy.sym_offset, 0);

	CHECK_EQ(ustack_symbolizer__symbolize(s, 9, off, 0, &sy), 0);
	CHECK(sy.status != USTACK_SYM_OK || strcmp(sy.name, "symtest_second"));
	CHECK_EQ_U64(sy.vaddr, (uintptr_t)symtest_second - self_bias);

	/* one byte in: offset - 1 is the function's first byte */
	CHECK_EQ(ustack_symbolizer__symbolize(s, 9, off + 1, 0, &sy), 0);
	CHECK_EQ(sy.status, USTACK_SYM_OK);
	CHECK_STR(sy.name, "symtest_second");
	CHECK_EQ(sy.sym_offset, 1);

	/* cached: the same answer, the same string */
	CHECK_EQ(ustack_symbolizer__symbolize(s, 9, off + 1, 0, &sy2), 0);
	CHECK(sy2.name == sy.name);
	ustack_symbolizer__free(s);
}

static void test_build_id_mismatch(void)
{
	struct ustack_symbolizer *s;
	struct ustack_file_map fm;
	struct ustack_sym sy;

	setup_self();
	s = new_sym(NULL);
	CHECK(s);
	fm = self_map(3, self_path, 1);
	fm.build_id[0] ^= 0xff; /* "the file was replaced since recording" */
	CHECK_EQ(ustack_symbolizer__add_file(s, &fm), 0);
	CHECK_EQ(ustack_symbolizer__symbolize(s, 3, self_offset_of((void *)symtest_first) + 4,
					      USTACK_SYM_EXACT_PC, &sy), 0);
	CHECK_EQ(sy.status, USTACK_SYM_MISMATCH);
	CHECK(sy.name == NULL);
	CHECK_STR(sy.path, self_path);
	CHECK_EQ(ustack_symbolizer__file_status(s, 3, NULL), USTACK_SYM_MISMATCH);
	ustack_symbolizer__free(s);
}

static void test_no_build_id_uses_path(void)
{
	struct ustack_symbolizer *s;
	struct ustack_file_map fm;
	struct ustack_sym sy;

	setup_self();
	s = new_sym(NULL);
	CHECK(s);
	fm = self_map(4, self_path, 0);
	CHECK_EQ(ustack_symbolizer__add_file(s, &fm), 0);
	CHECK_EQ(ustack_symbolizer__symbolize(s, 4, self_offset_of((void *)symtest_second) + 3,
					      USTACK_SYM_EXACT_PC, &sy), 0);
	CHECK_EQ(sy.status, USTACK_SYM_OK);
	CHECK_STR(sy.name, "symtest_second");
	CHECK_EQ(sy.sym_offset, 3);
	ustack_symbolizer__free(s);
}

static void build_id_path(char *out, size_t size, const char *dir, const char *suffix)
{
	char hex[2 * USTACK_BUILD_ID_MAX + 1];

	ustack_hex(self_bid, (size_t)self_bid_len, hex);
	snprintf(out, size, "%s/.build-id/%.2s/%s%s", dir, hex, hex + 2, suffix);
}

/* The recorded path no longer exists: the file is found by build ID in the
 * debug directory, as <dir>/.build-id/xx/rest.debug and as .../xx/rest. */
static void test_build_id_lookup(void)
{
	char dir[] = "/tmp/ustack-symtest-XXXXXX", sub[4200], link1[4200];
	struct ustack_symbolizer *s;
	struct ustack_file_map fm;
	struct ustack_sym sy;
	uint64_t off;

	setup_self();
	CHECK(mkdtemp(dir));
	build_id_path(link1, sizeof(link1), dir, ".debug");
	snprintf(sub, sizeof(sub), "%s/.build-id", dir);
	CHECK_EQ(mkdir(sub, 0700), 0);
	snprintf(sub, sizeof(sub), "%.*s", (int)(strrchr(link1, '/') - link1), link1);
	CHECK_EQ(mkdir(sub, 0700), 0);
	CHECK_EQ(symlink(self_path, link1), 0);

	off = self_offset_of((void *)symtest_first);
	s = new_sym(dir);
	CHECK(s);
	fm = self_map(11, "/nonexistent/moved-away-binary", 1);
	CHECK_EQ(ustack_symbolizer__add_file(s, &fm), 0);
	CHECK_EQ(ustack_symbolizer__symbolize(s, 11, off + 2, USTACK_SYM_EXACT_PC, &sy), 0);
	CHECK_EQ(sy.status, USTACK_SYM_OK);
	CHECK_STR(sy.name, "symtest_first");
	CHECK_EQ(sy.sym_offset, 2);
	CHECK_STR(sy.elf_path, link1);
	CHECK_STR(sy.path, "/nonexistent/moved-away-binary");
	ustack_symbolizer__free(s);

	/* without the debug directory the same frame has no file */
	s = new_sym(NULL);
	CHECK(s);
	CHECK_EQ(ustack_symbolizer__add_file(s, &fm), 0);
	CHECK_EQ(ustack_symbolizer__symbolize(s, 11, off + 2, USTACK_SYM_EXACT_PC, &sy), 0);
	CHECK_EQ(sy.status, USTACK_SYM_NO_FILE);
	CHECK(sy.name == NULL);
	ustack_symbolizer__free(s);

	/* a debug file with another build ID is refused like any other */
	unlink(link1);
	CHECK_EQ(symlink("/proc/self/exe", link1) == 0 || errno == EEXIST, 1);
	s = new_sym(dir);
	fm.build_id[1] ^= 1;
	CHECK_EQ(ustack_symbolizer__add_file(s, &fm), 0);
	CHECK_EQ(ustack_symbolizer__symbolize(s, 11, off + 2, USTACK_SYM_EXACT_PC, &sy), 0);
	CHECK(sy.status != USTACK_SYM_OK);
	ustack_symbolizer__free(s);

	unlink(link1);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/.build-id", dir);
	rmdir(sub);
	rmdir(dir);
}

static void test_anon_and_unknown(void)
{
	struct ustack_symbolizer *s = new_sym(NULL);
	struct ustack_file_map fm;
	struct ustack_sym sy;

	CHECK(s);
	CHECK_EQ(ustack_symbolizer__symbolize(s, 0, 0x7f0012345678ull, 0, &sy), 0);
	CHECK_EQ(sy.status, USTACK_SYM_ANON);
	CHECK_EQ_U64(sy.vaddr, 0x7f0012345678ull);
	CHECK_EQ(ustack_symbolizer__symbolize(s, 42, 0x1000, 0, &sy), 0);
	CHECK_EQ(sy.status, USTACK_SYM_UNKNOWN_ID);
	/* not cached as unknown: a file_map may come later */
	memset(&fm, 0, sizeof(fm));
	fm.file_id = 42;
	fm.path = "/nonexistent/lib.so";
	CHECK_EQ(ustack_symbolizer__add_file(s, &fm), 0);
	CHECK_EQ(ustack_symbolizer__symbolize(s, 42, 0x1000, 0, &sy), 0);
	CHECK_EQ(sy.status, USTACK_SYM_NO_FILE);
	CHECK_STR(sy.path, "/nonexistent/lib.so");
	fm.file_id = 0;
	CHECK_EQ(ustack_symbolizer__add_file(s, &fm), -EINVAL);
	CHECK_STR(ustack_sym_status_name(USTACK_SYM_MISMATCH), "build ID mismatch");
	ustack_symbolizer__free(s);
	ustack_symbolizer__free(NULL);
}

static void test_demangle(void)
{
	char *d = ustack_demangle("_ZN3foo3barEi");

	CHECK(ustack_demangle("main") == NULL);
	if (!d)
		SKIP("no C++ runtime (libstdc++.so.6) on this host");
	CHECK_STR(d, "foo::bar(int)");
	free(d);
	CHECK(ustack_demangle("_Zinvalid!!") == NULL);
}

/* ustack_symbolizer__file_source(): the test binary (built with -g, so
 * with .debug_info) is its own source; a missing file has none. */
static void test_file_source(void)
{
	struct ustack_symbolizer_opts so = { .sz = sizeof(so), .debug_dir = "/nonexistent" };
	struct ustack_symbolizer *s = ustack_symbolizer__new(&so);
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	struct ustack_file_map a = { .file_id = 1, .kind = USTACK_VMA_FILE, .path = self };
	struct ustack_file_map b = { .file_id = 2, .kind = USTACK_VMA_FILE, .path = "/nonexistent/x" };

	CHECK(s && n > 0);
	self[n] = 0;
	CHECK_EQ(ustack_symbolizer__add_file(s, &a), 0);
	CHECK_EQ(ustack_symbolizer__add_file(s, &b), 0);
	CHECK_EQ(ustack_symbolizer__file_source(s, 1), USTACK_DEBUG_SRC_SELF);
	CHECK_EQ(ustack_symbolizer__file_source(s, 2), USTACK_DEBUG_SRC_NONE);
	CHECK_EQ(ustack_symbolizer__file_source(s, 3), USTACK_DEBUG_SRC_NONE);
	CHECK_EQ(ustack_symbolizer__file_source(s, 0), USTACK_DEBUG_SRC_NONE);
	CHECK_STR(ustack_debug_source_name(USTACK_DEBUG_SRC_SELF), "self");
	CHECK_STR(ustack_debug_source_name(USTACK_DEBUG_SRC_BUILD_ID_DIR), "build-id dir");
	CHECK_STR(ustack_debug_source_name(USTACK_DEBUG_SRC_DEBUGLINK), "debuglink");
	CHECK_STR(ustack_debug_source_name(USTACK_DEBUG_SRC_MINIDEBUGINFO), "minidebuginfo");
	CHECK_STR(ustack_debug_source_name(USTACK_DEBUG_SRC_DEBUGINFOD), "debuginfod");
	CHECK_STR(ustack_debug_source_name(99), "unknown");
	ustack_symbolizer__free(s);
}

int main(void)
{
	RUN(test_by_path_exact);
	RUN(test_return_address_rule);
	RUN(test_build_id_mismatch);
	RUN(test_no_build_id_uses_path);
	RUN(test_build_id_lookup);
	RUN(test_anon_and_unknown);
	RUN(test_demangle);
	RUN(test_file_source);
	TEST_EXIT();
}
