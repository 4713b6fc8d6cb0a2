// SPDX-License-Identifier: MIT
/*
 * The whole CFI table as ustack_cfi__find_row() answers it, for callers
 * that copy a module's unwind table somewhere else (an eBPF map).
 *
 * The lookup answers in two steps, and so does this walk:
 *  1. which FDE: with a search table, the entry its binary search picks.
 *     The search only compares initial locations with the pc, so its
 *     answer is the same for every pc between two consecutive initial
 *     locations: one search per such interval gives the answer for all of
 *     them, even for an unsorted table or one with undecodable entries.
 *     Without a table, the first FDE in section order that covers the pc,
 *     or the error of the first damaged entry when none before it does.
 *  2. the row: the FDE's instructions run once (ustack_cfi__exec in
 *     compile mode) give every row the lookup would stop at; after damage
 *     in the instructions the lookup fails, so the rest of the FDE is bad.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/cfi.h"

struct rows_ctx {
	const struct ustack_cfi *cfi;
	ustack_cfi_span_fn fn;
	void *ctx;
	/* rows of the FDE that ran last */
	struct ustack_row *rows;
	size_t n, cap;
	uint64_t fde_off, pc_end, good_end;
	int have, bad;
	uint64_t decided; /* the walk: addresses below are answered */
};

static int collect(void *ctx, const struct ustack_row *row)
{
	struct rows_ctx *x = ctx;

	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 64;
		struct ustack_row *r;

		if (cap > SIZE_MAX / sizeof(*r))
			return -ENOMEM;
		r = realloc(x->rows, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		x->rows = r;
		x->cap = cap;
	}
	x->rows[x->n++] = *row;
	return 0;
}

static int emit_cb(void *ctx, const struct ustack_row *row, const struct ustack_cfi_plt *plt)
{
	return plt ? ustack_cfi__plt_split(row, plt, collect, ctx) : collect(ctx, row);
}

/* Run @fde once (unless it is the one that ran last). */
static int run_fde(struct rows_ctx *x, const struct ustack_cfi_fde *fde)
{
	int r;

	if (x->have && x->fde_off == fde->off)
		return 0;
	x->have = 0;
	x->n = 0;
	r = ustack_cfi__exec(x->cfi, fde, 0, NULL, emit_cb, x);
	if (r == -ENOMEM)
		return r;
	/* rows cover [pc_begin, good_end) without a gap; the lookup of a pc
	 * after them meets the damage */
	x->bad = r < 0;
	x->good_end = x->n ? x->rows[x->n - 1].end : fde->pc_begin;
	x->pc_end = fde->pc_end;
	x->fde_off = fde->off;
	x->have = 1;
	return 0;
}

static int pass(struct rows_ctx *x, const struct ustack_row *row, int bad)
{
	return x->fn(x->ctx, row, bad);
}

static int pass_bad(struct rows_ctx *x, uint64_t start, uint64_t end)
{
	struct ustack_row row;

	if (start >= end)
		return 0;
	memset(&row, 0, sizeof(row));
	row.start = start;
	row.end = end;
	return pass(x, &row, 1);
}

/* What the lookup answers over [a, b) when it picks @fde there. */
static int fde_piece(struct rows_ctx *x, const struct ustack_cfi_fde *fde, uint64_t a, uint64_t b)
{
	size_t lo = 0, hi;
	int err;

	if (b > fde->pc_end)
		b = fde->pc_end;
	if (a >= b)
		return 0;
	err = run_fde(x, fde);
	if (err)
		return err;
	/* first row ending after a */
	hi = x->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->rows[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < x->n && x->rows[i].start < b; i++) {
		struct ustack_row r = x->rows[i];

		if (r.start < a)
			r.start = a;
		if (r.end > b)
			r.end = b;
		err = pass(x, &r, 0);
		if (err)
			return err;
	}
	if (x->bad)
		return pass_bad(x, a > x->good_end ? a : x->good_end, b);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* [a, b) goes to the FDE that search table entry @idx names. */
static int hdr_piece(struct rows_ctx *x, uint64_t idx, uint64_t a, uint64_t b)
{
	struct ustack_cfi_fde fde;

	if (ustack_cfi__hdr_fde(x->cfi, idx, &fde))
		return pass_bad(x, a, b);
	return fde_piece(x, &fde, a, b);
}

/* With a search table: one search per interval between initial locations. */
static int rows_hdr(struct rows_ctx *x)
{
	const struct ustack_cfi *cfi = x->cfi;
	uint64_t n = cfi->hdr_count, m = 0, *locs;
	int sorted = 1, err = 0;

	if (n > SIZE_MAX / sizeof(*locs))
		return -ENOMEM;
	locs = malloc((n ? n : 1) * sizeof(*locs));
	if (!locs)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		if (ustack_cfi__hdr_loc(cfi, i, &locs[m])) {
			sorted = 0; /* a search that probes it fails */
			continue;
		}
		if (m && locs[m] < locs[m - 1])
			sorted = 0;
		m++;
	}
	if (sorted) {
		/* the usual case: the search gives the last entry at or
		 * before the pc, nothing before the first */
		for (uint64_t i = 0; i < m && !err; i++) {
			if (i + 1 < m && locs[i + 1] == locs[i])
				continue;
			err = hdr_piece(x, i, locs[i], i + 1 < m ? locs[i + 1] : UINT64_MAX);
		}
		free(locs);
		return err;
	}
	/* the answer can change only where the pc passes a location */
	qsort(locs, m, sizeof(*locs), cmp_u64);
	{
		uint64_t u = 0;

		for (uint64_t i = 0; i < m; i++)
			if (!u || locs[i] != locs[u - 1])
				locs[u++] = locs[i];
		m = u;
	}
	/* [0, locs[0]), [locs[k], locs[k+1]), ..., [locs[m-1], UINT64_MAX) */
	for (uint64_t k = 0; k <= m && !err; k++) {
		uint64_t a = k ? locs[k - 1] : 0, b = k < m ? locs[k] : UINT64_MAX, idx;
		int r;

		if (a >= b)
			continue;
		r = ustack_cfi__hdr_search(cfi, a, &idx);
		if (r == -ENOENT)
			continue;
		err = r ? pass_bad(x, a, b) : hdr_piece(x, idx, a, b);
	}
	free(locs);
	return err;
}

/* The walk: FDEs in section order, up to the first damaged entry. */
struct walk_fde {
	uint64_t start, end, off;
	uint32_t order;
};

static int cmp_walk(const void *a, const void *b)
{
	const struct walk_fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Min-heap of indices into v, by order (the first FDE in the section wins). */
struct heap {
	uint32_t *h;
	size_t n;
	const struct walk_fde *v;
};

static int heap_less(const struct heap *hp, size_t i, size_t j)
{
	return hp->v[hp->h[i]].order < hp->v[hp->h[j]].order;
}

static void heap_swap(struct heap *hp, size_t i, size_t j)
{
	uint32_t t = hp->h[i];

	hp->h[i] = hp->h[j];
	hp->h[j] = t;
}

static void heap_push(struct heap *hp, uint32_t idx)
{
	size_t i = hp->n++;

	hp->h[i] = idx;
	while (i && heap_less(hp, i, (i - 1) / 2)) {
		heap_swap(hp, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_pop(struct heap *hp)
{
	size_t i = 0;

	hp->h[0] = hp->h[--hp->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, s = i;

		if (l < hp->n && heap_less(hp, l, s))
			s = l;
		if (r < hp->n && heap_less(hp, r, s))
			s = r;
		if (s == i)
			break;
		heap_swap(hp, i, s);
		i = s;
	}
}

/* [a, b) goes to FDE @f (bad gaps before it when the walk broke off). */
static int walk_piece(struct rows_ctx *x, const struct walk_fde *f, uint64_t a, uint64_t b,
		      int broken)
{
	struct ustack_cfi_fde fde;
	uint64_t next;
	int err;

	/* no FDE before the damage covers [decided, a): the walk fails */
	if (broken) {
		err = pass_bad(x, x->decided, a);
		if (err)
			return err;
	}
	x->decided = b;
	if (ustack_cfi__parse_entry(x->cfi, f->off, &fde, &next) != 1)
		return -EFAULT; /* parsed fine a moment ago */
	return fde_piece(x, &fde, a, b);
}

static int rows_walk(struct rows_ctx *x)
{
	struct walk_fde *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t off = 0, next;
	int broken = 0, sorted = 1, err = 0;

	for (;;) {
		struct ustack_cfi_fde fde;
		int r = ustack_cfi__parse_entry(x->cfi, off, &fde, &next);

		if (r < 0) {
			broken = r == -EBADMSG;
			break;
		}
		if (r == 1 && fde.pc_end > fde.pc_begin) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				struct walk_fde *nv;

				if (ncap > UINT32_MAX || ncap > SIZE_MAX / sizeof(*nv)) {
					err = -ENOMEM;
					goto out;
				}
				nv = realloc(v, ncap * sizeof(*nv));
				if (!nv) {
					err = -ENOMEM;
					goto out;
				}
				v = nv;
				cap = ncap;
			}
			v[n] = (struct walk_fde){ fde.pc_begin, fde.pc_end, off, (uint32_t)n };
			if (n && v[n].start < v[n - 1].end)
				sorted = 0;
			n++;
		}
		off = next; /* always > off: entries are at least 4 bytes */
	}
	if (sorted) {
		/* the usual case: in address order, no overlap */
		for (size_t i = 0; i < n && !err; i++)
			err = walk_piece(x, &v[i], v[i].start, v[i].end, broken);
	} else {
		struct heap hp = { .v = v };
		uint64_t pos = 0;
		size_t i = 0;

		qsort(v, n, sizeof(*v), cmp_walk);
		hp.h = malloc((n ? n : 1) * sizeof(*hp.h));
		if (!hp.h) {
			err = -ENOMEM;
			goto out;
		}
		while ((i < n || hp.n) && !err) {
			uint64_t end;
			uint32_t t;

			if (!hp.n && v[i].start > pos)
				pos = v[i].start;
			while (i < n && v[i].start <= pos)
				heap_push(&hp, (uint32_t)i++);
			while (hp.n && v[hp.h[0]].end <= pos)
				heap_pop(&hp);
			if (!hp.n)
				continue;
			t = hp.h[0];
			end = v[t].end;
			if (i < n && v[i].start < end)
				end = v[i].start;
			err = walk_piece(x, &v[t], pos, end, broken);
			pos = end;
		}
		free(hp.h);
	}
	if (!err && broken)
		err = pass_bad(x, x->decided, UINT64_MAX);
out:
	free(v);
	return err;
}

int ustack_cfi__rows(const struct ustack_cfi *cfi, ustack_cfi_span_fn fn, void *ctx)
{
	struct rows_ctx x = { .cfi = cfi, .fn = fn, .ctx = ctx };
	int err;

	err = cfi->hdr_count ? rows_hdr(&x) : rows_walk(&x);
	free(x.rows);
	return err;
}
