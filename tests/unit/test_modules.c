// SPDX-License-Identifier: MIT
/* src/unwind/unwind_modules.c: file tables, caching, compiled CFI. */
#include <errno.h>
#include <string.h>

#include <ustack/ustack.h>
#include "elf/elf_file.h"
#include "unwind/modules.h"
#include "unwind/unwind.h"
#include "test.h"

static const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";

static int same_row(const struct ustack_row *a, const struct ustack_row *b)
{
	return a->cfa_reg == b->cfa_reg && a->cfa_off == b->cfa_off && a->ra_rule == b->ra_rule &&
	       (a->ra_rule != USTACK_RULE_OFFSET || a->ra_off == b->ra_off) &&
	       a->fp_rule == b->fp_rule && (a->fp_rule != USTACK_RULE_OFFSET || a->fp_off == b->fp_off) &&
	       a->flags == b->flags;
}

/* The compiled table answers exactly as the interpreter, all over .text. */
static void test_compiled_cfi_matches_direct(void)
{
	struct ustack_modcache *direct = ustack_modcache__new(4, 0);
	struct ustack_modcache *compiled = ustack_modcache__new(4, USTACK_MODCACHE_COMPILE_CFI);
	struct ustack_modtab *a, *b;
	struct ustack_elf_section text;
	unsigned int checked = 0, found = 0;

	CHECK(direct && compiled);
	a = ustack_modcache__get(direct, libc);
	b = ustack_modcache__get(compiled, libc);
	CHECK(a && b);
	CHECK_EQ(ustack_elf__section(ustack_modtab__elf(a), ".text", &text), 0);
	for (uint64_t pc = text.addr; pc < text.addr + text.size; pc += 7) {
		struct ustack_row ra, rb;
		unsigned int ma = 0, mb = 0;
		int ea = ustack_modtab__find_row(a, pc, &ra, &ma);
		int eb = ustack_modtab__find_row(b, pc, &rb, &mb);

		checked++;
		CHECK_EQ(ea, eb);
		if (ea)
			continue;
		found++;
		CHECK_EQ(ma, USTACK_METHOD_CFI);
		CHECK_EQ(mb, USTACK_METHOD_CFI);
		if (!same_row(&ra, &rb)) {
			printf("# pc 0x%llx differs\n", (unsigned long long)pc);
			CHECK(0);
		}
	}
	printf("# %u pcs, %u with rows\n", checked, found);
	/* libc's .text is almost entirely covered by CFI */
	CHECK(found > checked * 9 / 10);
	ustack_modcache__free(direct);
	ustack_modcache__free(compiled);
}

/* The same file is opened once; a bad path is an error, not a crash. */
static void test_cache_identity(void)
{
	struct ustack_modcache *mc = ustack_modcache__new(2, 0);
	struct ustack_modtab *a, *b, *c;

	CHECK(mc);
	a = ustack_modcache__get(mc, libc);
	b = ustack_modcache__get(mc, "/proc/self/root/lib/x86_64-linux-gnu/libc.so.6");
	CHECK(a && a == b);
	errno = 0;
	CHECK(!ustack_modcache__get(mc, "/nonexistent") && errno == ENOENT);
	/* a non-ELF file: NULL, remembered */
	CHECK(!ustack_modcache__get(mc, "/etc/hostname"));
	CHECK(!ustack_modcache__get(mc, "/etc/hostname"));
	/* eviction beyond capacity keeps working */
	c = ustack_modcache__get(mc, "/bin/sh");
	CHECK(c);
	CHECK(ustack_modcache__get(mc, libc));
	ustack_modcache__free(mc);
	ustack_modcache__free(NULL);
}

static int quiet(enum ustack_print_level l, const char *f, va_list ap) { return 0; }

int main(void)
{
	ustack_set_print(quiet);
	RUN(test_compiled_cfi_matches_direct);
	RUN(test_cache_identity);
	TEST_EXIT();
}
