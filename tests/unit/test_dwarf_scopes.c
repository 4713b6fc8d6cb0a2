// SPDX-License-Identifier: MIT
/*
 * The inline chains of ustack_dwarf__lookup() from its own pc-guided walk
 * of the DIEs, against libdw's dwarf_getscopes() + dwarf_getscopes_die()
 * (what it used before, kept behind a test switch): the same levels, names,
 * files, lines and columns at every address tried, in libc's debug file
 * (large units, DWZ-free Debian build) and in this test's own binary
 * (built -O2 -g, so with inlined functions and lexical blocks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf_file.h"
#include "symbolize/symbolize_dwarf.h"
#include "test.h"

extern int ustack_dwarf_libdw_scopes;

static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Both ways at @step-spaced addresses of .text of @path (DWARF in @dwarf).
 * Returns the addresses compared, -1 when the files cannot be read. */
static long compare_file(const char *path, const char *dwarf, uint64_t step, long *with_inlines)
{
	struct ustack_elf *e = ustack_elf__open(path);
	struct ustack_elf_section text;
	struct ustack_dwarf *mine, *libdw;
	long n = 0;

	if (!e)
		return -1;
	if (ustack_elf__section(e, ".text", &text)) {
		ustack_elf__close(e);
		return -1;
	}
	mine = ustack_dwarf__open(dwarf);
	libdw = ustack_dwarf__open(dwarf);
	if (!mine || !libdw) {
		ustack_dwarf__close(mine);
		ustack_dwarf__close(libdw);
		ustack_elf__close(e);
		return -1;
	}
	for (uint64_t a = text.addr; a < text.addr + text.size; a += step) {
		struct ustack_dwarf_level x[USTACK_DWARF_MAX_LEVELS], y[USTACK_DWARF_MAX_LEVELS];
		int nx, ny, ok;

		ustack_dwarf_libdw_scopes = 0;
		nx = ustack_dwarf__lookup(mine, a, x);
		ustack_dwarf_libdw_scopes = 1;
		ny = ustack_dwarf__lookup(libdw, a, y);
		ustack_dwarf_libdw_scopes = 0;
		ok = nx == ny;
		for (int i = 0; ok && i < nx; i++)
			ok = same_str(x[i].name, y[i].name) && same_str(x[i].linkage, y[i].linkage) &&
			     same_str(x[i].file, y[i].file) && x[i].line == y[i].line &&
			     x[i].column == y[i].column && x[i].inlined == y[i].inlined &&
			     x[i].decl_line == y[i].decl_line;
		if (!ok) {
			printf("  %s at 0x%llx: walk %d levels (%s), libdw %d (%s)\n", dwarf,
			       (unsigned long long)a, nx, nx > 0 && x[0].name ? x[0].name : "-", ny,
			       ny > 0 && y[0].name ? y[0].name : "-");
			CHECK(ok);
			break;
		}
		n++;
		*with_inlines += nx > 1;
	}
	ustack_dwarf__close(mine);
	ustack_dwarf__close(libdw);
	ustack_elf__close(e);
	return n;
}

static void test_own_binary(void)
{
	long inl = 0, n = compare_file("/proc/self/exe", "/proc/self/exe", 3, &inl);

	CHECK(n > 1000);
	printf("  own binary: %ld addresses, %ld with inlined levels\n", n, inl);
	CHECK(inl > 0);
}

static void test_libc_debug_file(void)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	struct ustack_elf *e = ustack_elf__open(libc);
	uint8_t id[64];
	char dbg[256], hex[129];
	int len;
	long inl = 0, n;

	if (!e) {
		SKIP("%s not found", libc);
		return;
	}
	len = ustack_elf__build_id(e, id, sizeof(id));
	ustack_elf__close(e);
	if (len < 2) {
		SKIP("%s has no build ID", libc);
		return;
	}
	ustack_hex(id + 1, (size_t)len - 1, hex);
	snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%02x/%s.debug", id[0], hex);
	n = compare_file(dbg, dbg, 0x3f1, &inl);
	if (n < 0) {
		SKIP("no debug file for the build ID of %s (apt-get install libc6-dbg)", libc);
		return;
	}
	printf("  libc debug file: %ld addresses, %ld with inlined levels\n", n, inl);
	CHECK(n > 1000);
	CHECK(inl > 100);
}

int main(void)
{
	RUN(test_own_binary);
	RUN(test_libc_debug_file);
	TEST_EXIT();
}
