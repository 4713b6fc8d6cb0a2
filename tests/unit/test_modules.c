// SPDX-License-Identifier: MIT
/* src/unwind/unwind_modules.c: file tables, caching, compiled CFI. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/ustack.h>
#include "elf/elf_file.h"
#include "unwind/modules.h"
#include "unwind/modules_internal.h"
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
	ustack_modtab__put(a);
	ustack_modtab__put(b);
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
	ustack_modtab__put(b);
	b = ustack_modcache__get(mc, libc);
	CHECK(b);
	ustack_modtab__put(a);
	ustack_modtab__put(b);
	ustack_modtab__put(c);
	ustack_modcache__free(mc);
	ustack_modcache__free(NULL);
}

/*
 * Eviction never frees a table someone holds: with room for two tables,
 * a third evicts the least recently used one, whose holder can still use
 * it (under ASan a use after free would abort here); its weak ref no
 * longer resolves, and a new get opens the file again (a new table).
 */
static void test_evicted_table_stays_valid(void)
{
	static const char *files[] = { "/lib/x86_64-linux-gnu/libc.so.6", "/bin/sh", "/bin/true" };
	struct ustack_modcache *mc = ustack_modcache__new(2, USTACK_MODCACHE_COMPILE_CFI);
	struct ustack_modtab *held, *m, *again;
	struct ustack_modref ref;
	struct ustack_elf_section text;
	struct ustack_row row;
	unsigned int method = 0;
	uint64_t opened, evicted;

	CHECK(mc);
	held = ustack_modcache__get(mc, files[0]);
	CHECK(held);
	ref = ustack_modtab__ref(held);
	m = ustack_modcache__lookup(mc, ref);
	CHECK(m == held);
	ustack_modtab__put(m);
	for (int i = 1; i < 3; i++) {
		m = ustack_modcache__get(mc, files[i]);
		CHECK(m);
		ustack_modtab__put(m);
	}
	ustack_modcache__stats(mc, &opened, &evicted);
	CHECK_EQ(opened, 3);
	CHECK_EQ(evicted, 1);
	/* evicted from the cache, alive for its holder */
	CHECK(!ustack_modcache__lookup(mc, ref));
	CHECK_EQ(ustack_elf__section(ustack_modtab__elf(held), ".text", &text), 0);
	CHECK_EQ(ustack_modtab__find_row(held, text.addr + text.size / 2, &row, &method), 0);
	CHECK_EQ(method, USTACK_METHOD_CFI);
	again = ustack_modcache__get(mc, files[0]);
	CHECK(again && again != held);
	ustack_modcache__stats(mc, &opened, &evicted);
	CHECK_EQ(opened, 4);
	CHECK_EQ(evicted, 2);
	/* the cache goes first, the holders after: nothing leaks (LSan) */
	ustack_modcache__free(mc);
	CHECK_EQ(ustack_modtab__find_row(again, text.addr + text.size / 2, &row, &method), 0);
	ustack_modtab__put(again);
	ustack_modtab__put(held);
	/* the empty weak ref resolves to nothing */
	mc = ustack_modcache__new(1, 0);
	CHECK(!ustack_modcache__lookup(mc, ustack_modtab__ref(NULL)));
	ustack_modcache__free(mc);
}

static int quiet(enum ustack_print_level l, const char *f, va_list ap) { return 0; }

/* ld.so's entry point (_start, no CFI on Debian) and the code after it up
 * to the next address a table covers (_dl_start_user) are the outermost
 * frame: a return address into it (_dl_start returning to entry + 8) ends
 * the stack. The rows export gives the same gap as one span. */
static void test_entry_point_outermost(void)
{
	static const char *ldso = "/lib64/ld-linux-x86-64.so.2";
	struct ustack_modcache *mc = ustack_modcache__new(4, 0);
	struct ustack_row_span *spans = NULL;
	struct ustack_modtab *m;
	struct ustack_row row;
	unsigned int method = 0;
	uint64_t entry, gap_end = 0;
	size_t nr = 0, hits = 0;

	CHECK(mc);
	m = ustack_modcache__get(mc, ldso);
	CHECK(m != NULL);
	if (!m) {
		ustack_modcache__free(mc);
		return;
	}
	entry = ustack_elf__entry(ustack_modtab__elf(m));
	CHECK(entry != 0);
	CHECK_EQ(ustack_modtab__find_row(m, entry, &row, &method), 0);
	if (row.start != entry || row.end != entry + 1) {
		printf("SKIP test_entry_point_outermost: a table covers %s's entry 0x%llx\n", ldso,
		       (unsigned long long)entry);
		goto out;
	}
	CHECK_EQ(row.ra_rule, USTACK_RULE_UNDEFINED);
	CHECK(row.cfa_off > 0);
	CHECK_EQ(ustack_modtab__rows(m, &spans, &nr), 0);
	for (size_t i = 0; i < nr; i++)
		if (spans[i].row.start <= entry && entry < spans[i].row.end) {
			hits++;
			CHECK_EQ_U64(spans[i].row.start, entry);
			CHECK_EQ(spans[i].row.ra_rule, USTACK_RULE_UNDEFINED);
			gap_end = spans[i].row.end;
			/* the gap ends where a table row begins, or at the cap */
			CHECK(gap_end == entry + USTACK_ENTRY_GAP_MAX ||
			      (i + 1 < nr && spans[i + 1].row.start == gap_end));
		}
	CHECK_EQ(hits, 1);
	/* _start is `mov %rsp,%rdi; call _dl_start` (3 + 5 bytes): the return
	 * address entry + 8 is looked up at entry + 7 */
	CHECK(gap_end > entry + 8);
	CHECK_EQ(ustack_modtab__find_row(m, entry + 7, &row, &method), 0);
	CHECK_EQ(row.ra_rule, USTACK_RULE_UNDEFINED);
	CHECK_EQ_U64(row.start, entry);
	/* every byte of the gap answers so, the first byte after it does not */
	for (uint64_t p = entry; p < gap_end; p++) {
		if (ustack_modtab__find_row(m, p, &row, &method) != 0 ||
		    row.ra_rule != USTACK_RULE_UNDEFINED || row.start != entry) {
			CHECK(!"a pc in the entry gap is not the outermost frame");
			break;
		}
	}
	if (gap_end < entry + USTACK_ENTRY_GAP_MAX &&
	    ustack_modtab__find_row(m, gap_end, &row, &method) == 0)
		CHECK(row.start >= gap_end || row.ra_rule != USTACK_RULE_UNDEFINED);
out:
	free(spans);
	ustack_modtab__put(m);
	ustack_modcache__free(mc);
}

int main(void)
{
	ustack_set_print(quiet);
	RUN(test_compiled_cfi_matches_direct);
	RUN(test_cache_identity);
	RUN(test_evicted_table_stays_valid);
	RUN(test_entry_point_outermost);
	TEST_EXIT();
}
