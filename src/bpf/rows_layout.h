/* SPDX-License-Identifier: MIT */
/*
 * How a file's rows sit in its inner array map, and the search over them:
 * one header for the BPF program (the search) and user space (the layout,
 * and the same search in test_bpf_rows).
 *
 * Every element of the inner map is one chunk of UB_CHUNK_BYTES. A chunk
 * of rows holds UB_CHUNK_ROWS rows (struct ub_row, sorted by start); a
 * directory chunk holds the start of the first row of up to UB_DIR_ENTRIES
 * chunks below it (u32, ascending). With R rows in C = ceil(R / 256)
 * chunks:
 *
 *   levels 0 (C == 1):      element 0: the rows
 *   levels 1 (C <= 1024):   element 0: directory of the C chunks;
 *                           elements 1..C: the rows
 *   levels 2 (C > 1024):    element 0: directory of the G = ceil(C / 1024)
 *                           groups (first start of each group's first chunk);
 *                           elements 1..G: one directory per group;
 *                           elements 1+G..G+C: the rows
 *
 * A search is one map lookup per level plus one, each followed by a binary
 * search inside the element in plain memory (the BPF program's cost was its
 * lookups: ~24 helper calls a frame for a bisection over one-row elements).
 * The BPF program defines UB_ELEM (a map lookup) before including this;
 * user space gets ub_rows_mem, a table in memory.
 */
#ifndef USTACK_BPF_ROWS_LAYOUT_H
#define USTACK_BPF_ROWS_LAYOUT_H

#include "record_abi.h"

#define UB_CHUNK_BYTES 4096
#define UB_CHUNK_ROWS (UB_CHUNK_BYTES / 16)  /* 256 */
#define UB_DIR_ENTRIES (UB_CHUNK_BYTES / 4)  /* 1024 */

_Static_assert(sizeof(struct ub_row) * UB_CHUNK_ROWS == UB_CHUNK_BYTES, "ub_row is 16 bytes");

enum { UB_FIND_ROW, UB_FIND_NONE, UB_FIND_BAD };

/* one element of a table: rows or a directory */
struct ub_chunk {
	ub_u8 bytes[UB_CHUNK_BYTES];
};

#ifndef __bpf__
#include <stddef.h>
#include <string.h>

/* A table in user memory, for the search below (tests): @n elements. */
struct ub_rows_mem {
	const void *p;
	ub_u32 n;
};

static inline const void *ub_rows_mem_elem(void *ctx, ub_u32 i)
{
	const struct ub_rows_mem *m = ctx;

	return i < m->n ? (const unsigned char *)m->p + (size_t)i * UB_CHUNK_BYTES : NULL;
}
#define UB_ELEM(ctx, i) ub_rows_mem_elem((ctx), (i))
#endif

#ifdef __bpf__
#define UB_INLINE static __always_inline
#else
#define UB_INLINE static inline
#endif

/* Shape of a table of @nr rows: its levels, groups and chunks; returns the
 * number of elements. */
UB_INLINE ub_u32 ub_rows_shape(ub_u32 nr, ub_u32 *levels, ub_u32 *groups, ub_u32 *chunks)
{
	ub_u32 c = (nr + UB_CHUNK_ROWS - 1) / UB_CHUNK_ROWS;

	*chunks = c;
	*groups = 0;
	if (c <= 1) {
		*levels = 0;
		return 1;
	}
	if (c <= UB_DIR_ENTRIES) {
		*levels = 1;
		return 1 + c;
	}
	*levels = 2;
	*groups = (c + UB_DIR_ENTRIES - 1) / UB_DIR_ENTRIES;
	return 1 + *groups + c;
}

/* 1 when @a <= @b (both below 2^32), without a branch: the searches below
 * are branch-free so that the verifier walks them as one path. */
UB_INLINE ub_u32 ub_le(ub_u64 a, ub_u64 b)
{
	ub_u64 d = b - a;

#ifdef __bpf__
	asm volatile("" : "+r"(d)); /* or clang makes it a branch again */
#endif
	return (ub_u32)(1 - (d >> 63));
}
#define UB_LE(a, b) ub_le((a), (b))

/* The last of the first @n entries of directory @d that is <= @rel, or
 * -1 (none: @rel is below the first). Binary lifting over fixed steps. */
UB_INLINE int ub_dir_last_le(const ub_u32 *d, ub_u32 n, ub_u32 rel)
{
	ub_u32 base = 0, p;

	if (!n || d[0] > rel)
		return -1;
	for (ub_u32 step = UB_DIR_ENTRIES / 2; step; step >>= 1) {
		p = base + step;
		base += step * (UB_LE(p + 1, n) & UB_LE(d[p & (UB_DIR_ENTRIES - 1)], rel));
	}
	return (int)base;
}

UB_INLINE int ub_chunk_last_le(const struct ub_row *r, ub_u32 n, ub_u32 rel)
{
	ub_u32 base = 0, p;

	if (!n || r[0].start > rel)
		return -1;
	for (ub_u32 step = UB_CHUNK_ROWS / 2; step; step >>= 1) {
		p = base + step;
		base += step * (UB_LE(p + 1, n) &
					UB_LE(r[p & (UB_CHUNK_ROWS - 1)].start, rel));
	}
	return (int)base;
}

/*
 * The row covering @rel (file offset - base) in a table of @nr rows and
 * @levels; elements are fetched with UB_ELEM(ctx, index) (a map lookup in
 * BPF, NULL when missing). UB_FIND_ROW (*out set), UB_FIND_NONE (a gap,
 * or before the first row) or UB_FIND_BAD (a corrupt row, or an element
 * missing: never a wrong row).
 */
UB_INLINE int ub_rows_find(void *ctx, ub_u32 nr, ub_u32 levels, ub_u32 rel, struct ub_row *out)
{
	ub_u32 lv, groups, chunks, chunk = 0, first = 0, g, n;
	const struct ub_row *rows;
	const ub_u32 *d;
	int k;

	ub_rows_shape(nr, &lv, &groups, &chunks);
	if (lv != levels || !nr)
		return UB_FIND_BAD;
	if (levels == 2) {
		d = UB_ELEM(ctx, 0);
		if (!d)
			return UB_FIND_BAD;
		k = ub_dir_last_le(d, groups, rel);
		if (k < 0)
			return UB_FIND_NONE;
		g = (ub_u32)k;
		d = UB_ELEM(ctx, 1 + g);
		if (!d)
			return UB_FIND_BAD;
		n = chunks - g * UB_DIR_ENTRIES;
		k = ub_dir_last_le(d, n < UB_DIR_ENTRIES ? n : UB_DIR_ENTRIES, rel);
		if (k < 0)
			return UB_FIND_BAD; /* the group's own first start was <= rel */
		chunk = g * UB_DIR_ENTRIES + (ub_u32)k;
		first = 1 + groups;
	} else if (levels == 1) {
		d = UB_ELEM(ctx, 0);
		if (!d)
			return UB_FIND_BAD;
		k = ub_dir_last_le(d, chunks, rel);
		if (k < 0)
			return UB_FIND_NONE;
		chunk = (ub_u32)k;
		first = 1;
	}
	rows = UB_ELEM(ctx, first + chunk);
	if (!rows)
		return UB_FIND_BAD;
	n = nr - chunk * UB_CHUNK_ROWS;
	k = ub_chunk_last_le(rows, n < UB_CHUNK_ROWS ? n : UB_CHUNK_ROWS, rel);
	if (k < 0)
		return chunk ? UB_FIND_BAD : UB_FIND_NONE;
	rows = &rows[k & (UB_CHUNK_ROWS - 1)];
	if (rows->method == UB_ROW_GAP)
		return UB_FIND_NONE;
	if (rows->method == UB_ROW_BAD)
		return UB_FIND_BAD;
	*out = *rows;
	return UB_FIND_ROW;
}

#ifndef __bpf__
/* Lay @nr rows out in @buf, ub_rows_shape() elements of UB_CHUNK_BYTES
 * (zeroed by the caller). */
static inline void ub_rows_layout(const struct ub_row *rows, ub_u32 nr, void *buf)
{
	ub_u32 levels, groups, chunks, first;
	unsigned char *b = buf;
	ub_u32 *d;

	ub_rows_shape(nr, &levels, &groups, &chunks);
	first = levels == 0 ? 0 : levels == 1 ? 1 : 1 + groups;
	if (levels == 1) {
		d = (ub_u32 *)b;
		for (ub_u32 c = 0; c < chunks; c++)
			d[c] = rows[(size_t)c * UB_CHUNK_ROWS].start;
	} else if (levels == 2) {
		d = (ub_u32 *)b;
		for (ub_u32 g = 0; g < groups; g++)
			d[g] = rows[(size_t)g * UB_DIR_ENTRIES * UB_CHUNK_ROWS].start;
		for (ub_u32 c = 0; c < chunks; c++) {
			d = (ub_u32 *)(b + (size_t)(1 + c / UB_DIR_ENTRIES) * UB_CHUNK_BYTES);
			d[c % UB_DIR_ENTRIES] = rows[(size_t)c * UB_CHUNK_ROWS].start;
		}
	}
	memcpy(b + (size_t)first * UB_CHUNK_BYTES, rows, (size_t)nr * sizeof(*rows));
}
#endif

#endif
