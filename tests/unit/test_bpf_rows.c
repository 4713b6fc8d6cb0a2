// SPDX-License-Identifier: MIT
/*
 * src/bpf/rows_layout.h: the layout of a file's rows in its inner map
 * (chunks under one or two directory levels) and the branch-free search the
 * BPF program runs over it, checked against a plain bisection over the rows
 * for every shape: one chunk, a directory, two levels (> 262,144 rows), and
 * partial last chunks and groups.
 */
#include <stdlib.h>
#include <string.h>

#include "bpf/rows_layout.h"
#include "test.h"

/* The oracle: the last row whose start is <= rel. */
static int oracle(const struct ub_row *r, uint32_t n, uint32_t rel, struct ub_row *out)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r[mid].start <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return UB_FIND_NONE;
	if (r[lo - 1].method == UB_ROW_GAP)
		return UB_FIND_NONE;
	if (r[lo - 1].method == UB_ROW_BAD)
		return UB_FIND_BAD;
	*out = r[lo - 1];
	return UB_FIND_ROW;
}

/* @n rows, starts increasing by 1..7, rules numbered by index; every 97th
 * a gap, every 1009th corrupt. */
static struct ub_row *make_rows(uint32_t n, uint32_t first)
{
	struct ub_row *r = calloc(n ? n : 1, sizeof(*r));
	uint32_t at = first;

	for (uint32_t i = 0; i < n; i++) {
		r[i].start = at;
		r[i].cfa_off = (int32_t)i;
		r[i].method = i % 97 == 5 ? UB_ROW_GAP : i % 1009 == 7 ? UB_ROW_BAD : 1 + i % 3;
		at += 1 + (i * 2654435761u >> 29);
	}
	return r;
}

static unsigned checked;

static void check_shape(uint32_t n, uint32_t want_levels)
{
	uint32_t levels, groups, chunks, elems = ub_rows_shape(n, &levels, &groups, &chunks);
	struct ub_row *rows = make_rows(n, 0);
	void *buf = calloc(elems, UB_CHUNK_BYTES);
	struct ub_rows_mem mem = { buf, elems };
	uint32_t last = rows[n - 1].start, bad = 0;

	CHECK_EQ(levels, want_levels);
	CHECK_EQ(chunks, (n + UB_CHUNK_ROWS - 1) / UB_CHUNK_ROWS);
	ub_rows_layout(rows, n, buf);
	/* every row start, the byte before it, and past the end */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t rels[3] = { rows[i].start, rows[i].start ? rows[i].start - 1 : 0,
				     rows[i].start + 1 };

		for (int k = 0; k < 3; k++) {
			struct ub_row a = { 0 }, b = { 0 };
			int ra = ub_rows_find(&mem, n, levels, rels[k], &a);
			int rb = oracle(rows, n, rels[k], &b);

			if (ra != rb || (ra == UB_FIND_ROW && memcmp(&a, &b, sizeof(a)))) {
				if (!bad++)
					fprintf(stderr, "n=%u rel=%u: %d/%d vs %d/%d\n", n, rels[k], ra,
						a.cfa_off, rb, b.cfa_off);
			}
			checked++;
		}
	}
	CHECK_EQ(bad, 0);
	{
		struct ub_row a;

		CHECK_EQ(ub_rows_find(&mem, n, levels, last + 100000, &a),
			 oracle(rows, n, last + 100000, &a));
		CHECK_EQ(ub_rows_find(&mem, n, levels, UINT32_MAX, &a),
			 oracle(rows, n, UINT32_MAX, &a));
		/* the shape must match the table's: never a guess */
		CHECK_EQ(ub_rows_find(&mem, n, levels ^ 1, 0, &a), UB_FIND_BAD);
		/* an element missing (a map shorter than its shape): bad, not wrong */
		mem.n = elems - 1;
		if (levels)
			CHECK_EQ(ub_rows_find(&mem, n, levels, last, &a), UB_FIND_BAD);
	}
	free(buf);
	free(rows);
}

/* Rows that do not start at 0 (a table's first row is base; defensive). */
static void test_before_first(void)
{
	struct ub_row *rows = make_rows(3000, 50), a;
	uint32_t levels, groups, chunks, elems = ub_rows_shape(3000, &levels, &groups, &chunks);
	void *buf = calloc(elems, UB_CHUNK_BYTES);
	struct ub_rows_mem mem = { buf, elems };

	ub_rows_layout(rows, 3000, buf);
	CHECK_EQ(ub_rows_find(&mem, 3000, levels, 49, &a), UB_FIND_NONE);
	CHECK_EQ(ub_rows_find(&mem, 3000, levels, 50, &a), UB_FIND_ROW);
	CHECK_EQ(a.cfa_off, 0);
	CHECK_EQ(ub_rows_find(&mem, 0, 0, 50, &a), UB_FIND_BAD);
	free(buf);
	free(rows);
}

static void test_shapes(void)
{
	check_shape(1, 0);
	check_shape(255, 0);
	check_shape(256, 0);
	check_shape(257, 1);
	check_shape(5000, 1);
	check_shape(UB_CHUNK_ROWS * UB_DIR_ENTRIES, 1);     /* 262,144: one full directory */
	check_shape(UB_CHUNK_ROWS * UB_DIR_ENTRIES + 1, 2); /* one row more: two levels */
	check_shape(700000, 2);                             /* three groups, the last partial */
	printf("  %u lookups checked against bisection\n", checked);
}

int main(void)
{
	RUN(test_shapes);
	RUN(test_before_first);
	return tests_failed_total_ ? 1 : 0;
}
