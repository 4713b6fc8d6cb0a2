// SPDX-License-Identifier: MIT
/*
 * The compiled CFI table: every FDE interpreted once into rows, stored as
 * two parallel sorted arrays (row starts, 16-byte row bodies) so that a
 * lookup is one binary search over 8-byte keys. Gaps between FDEs are
 * explicit "hole" rows and the last entry is always a hole, so a row's end
 * is the next entry's start and no end needs storing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* "FILE: " before a message when the file is known */
#define FILE_OF(cfi) ((cfi)->file ? (cfi)->file : ""), ((cfi)->file ? ": " : "")

#include "cfi/cfi.h"
#include "common/log.h"

#define ROW_HOLE 0x80 /* private flag: no FDE covers [start, next start) */

/* 16 bytes: ra_off (-8 on x86-64) and bx_off fit 16 bits, and the CFA
 * register and the rbx rule share a byte */
struct tbl_body {
	int32_t cfa_off, fp_off;
	int16_t ra_off, bx_off;
	uint8_t regs; /* cfa_reg | bx_rule << 4 */
	uint8_t ra_rule, fp_rule, flags;
};

static void body_to_row(const struct tbl_body *b, struct ustack_row *row)
{
	row->cfa_off = b->cfa_off;
	row->ra_off = b->ra_off;
	row->fp_off = b->fp_off;
	row->cfa_reg = b->regs & 15;
	row->bx_rule = b->regs >> 4;
	row->bx_off = b->bx_off;
	row->ra_rule = b->ra_rule;
	row->fp_rule = b->fp_rule;
	row->flags = b->flags;
}

struct ustack_cfi_table {
	uint64_t *starts;
	struct tbl_body *body;
	size_t n, cap;          /* entries, holes included */
	size_t nr_rows, nr_fdes, nr_bad;
	uint64_t last_end;
	int has_last;
};

struct fde_ref {
	uint64_t pc_begin, off;
};

static int push(struct ustack_cfi_table *t, uint64_t start, const struct tbl_body *b)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		uint64_t *s;
		struct tbl_body *bb;

		if (cap > SIZE_MAX / sizeof(*t->body))
			return -ENOMEM;
		s = realloc(t->starts, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		t->starts = s;
		bb = realloc(t->body, cap * sizeof(*bb));
		if (!bb)
			return -ENOMEM;
		t->body = bb;
		t->cap = cap;
	}
	t->starts[t->n] = start;
	t->body[t->n] = *b;
	t->n++;
	return 0;
}

static int add_row(struct ustack_cfi_table *t, const struct ustack_row *row)
{
	static const struct tbl_body hole = { .flags = ROW_HOLE };
	struct tbl_body b;
	uint64_t start = row->start;
	int err;

	/* Overlapping FDEs: the one sorted first keeps the overlap. */
	if (t->has_last && start < t->last_end)
		start = t->last_end;
	if (start >= row->end)
		return 0;
	if (t->has_last && start > t->last_end) {
		err = push(t, t->last_end, &hole);
		if (err)
			return err;
	}
	memset(&b, 0, sizeof(b));
	b.cfa_off = row->cfa_off;
	b.fp_off = row->fp_off;
	b.ra_rule = row->ra_rule;
	b.fp_rule = row->fp_rule;
	b.flags = row->flags;
	if (row->ra_off >= INT16_MIN && row->ra_off <= INT16_MAX)
		b.ra_off = (int16_t)row->ra_off;
	else if (row->ra_rule == USTACK_RULE_OFFSET)
		b.flags |= USTACK_ROW_NEEDS_FALLBACK;
	b.regs = row->cfa_reg & 15;
	if (row->bx_rule == USTACK_BX_SAME ||
	    (row->bx_rule == USTACK_BX_OFFSET && row->bx_off >= INT16_MIN && row->bx_off <= INT16_MAX)) {
		b.regs |= (uint8_t)(row->bx_rule << 4);
		b.bx_off = row->bx_rule == USTACK_BX_OFFSET ? (int16_t)row->bx_off : 0;
	}
	err = push(t, start, &b);
	if (err)
		return err;
	t->nr_rows++;
	t->last_end = row->end;
	t->has_last = 1;
	return 0;
}

static int add_row_cb(void *ctx, const struct ustack_row *row)
{
	return add_row(ctx, row);
}

static int emit_row(void *ctx, const struct ustack_row *row, const struct ustack_cfi_plt *plt)
{
	struct ustack_cfi_table *t = ctx;

	if (!plt)
		return add_row(t, row);
	/* A PLT expression row becomes one row per half slot, so that the
	 * table gives exactly what ustack_cfi__find_row() resolves per pc.
	 * Its span is bounded by USTACK_CFI_PLT_MAX_SPAN (else the row was
	 * already marked NEEDS_FALLBACK and plt is NULL). */
	return ustack_cfi__plt_split(row, plt, add_row_cb, t);
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_ref *x = a, *y = b;

	if (x->pc_begin != y->pc_begin)
		return x->pc_begin < y->pc_begin ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static const char *err_name(int err)
{
	return err == -EBADMSG ? "corrupt" : err == -ENOMEM ? "out of memory" : "error";
}

struct ustack_cfi_table *ustack_cfi_table__build(const struct ustack_cfi *cfi)
{
	static const struct tbl_body hole = { .flags = ROW_HOLE };
	const char *sec = ustack_cfi__section_name(cfi);
	struct ustack_cfi_table *t;
	struct fde_ref *refs = NULL;
	size_t nrefs = 0, cap = 0;
	uint64_t off = 0, next;
	int err = 0;

	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;

	/* 1. every FDE's start, in section order */
	for (;;) {
		struct ustack_cfi_fde fde;
		int r = ustack_cfi__parse_entry(cfi, off, &fde, &next);

		if (r == -ENOENT)
			break;
		if (r < 0) {
			t->nr_bad++;
			if (next == ~(uint64_t)0) {
				pr_warn("%s%s%s: entry at offset 0x%" PRIx64 ": bad length, "
					"ignoring the rest of the section\n", FILE_OF(cfi), sec, off);
				break;
			}
			pr_warn("%s%s%s: FDE at offset 0x%" PRIx64 ": corrupt header, skipped\n",
				FILE_OF(cfi), sec, off);
		} else if (r == 1 && fde.pc_end > fde.pc_begin) {
			if (nrefs == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				struct fde_ref *nr = realloc(refs, ncap * sizeof(*nr));

				if (!nr) {
					err = -ENOMEM;
					goto fail;
				}
				refs = nr;
				cap = ncap;
			}
			refs[nrefs].pc_begin = fde.pc_begin;
			refs[nrefs].off = off;
			nrefs++;
		}
		off = next;
	}

	/* 2. compile in address order, so rows come out sorted */
	if (nrefs)
		qsort(refs, nrefs, sizeof(*refs), cmp_fde);
	for (size_t i = 0; i < nrefs; i++) {
		struct ustack_cfi_fde fde;
		size_t n0 = t->n, rows0 = t->nr_rows;
		uint64_t last0 = t->last_end;
		int has0 = t->has_last;
		int r = ustack_cfi__parse_entry(cfi, refs[i].off, &fde, &next);

		if (r == 1)
			r = ustack_cfi__exec(cfi, &fde, 0, NULL, emit_row, t);
		if (r == -ENOMEM) {
			err = r;
			goto fail;
		}
		if (r < 0) {
			/* drop whatever the FDE emitted before the damage */
			t->n = n0;
			t->nr_rows = rows0;
			t->last_end = last0;
			t->has_last = has0;
			t->nr_bad++;
			pr_warn("%s%s%s: FDE at offset 0x%" PRIx64 ": %s instructions, skipped\n",
				FILE_OF(cfi), sec, refs[i].off, err_name(r));
			continue;
		}
		t->nr_fdes++;
	}
	if (t->has_last) {
		err = push(t, t->last_end, &hole);
		if (err)
			goto fail;
	}
	if (t->n && t->n < t->cap) { /* give back the doubling slack */
		uint64_t *s = realloc(t->starts, t->n * sizeof(*s));
		struct tbl_body *bb;

		if (s)
			t->starts = s;
		bb = realloc(t->body, t->n * sizeof(*bb));
		if (bb)
			t->body = bb;
		if (s && bb)
			t->cap = t->n;
	}
	free(refs);
	return t;
fail:
	free(refs);
	ustack_cfi_table__free(t);
	errno = -err;
	return NULL;
}

int ustack_cfi_table__find_row(const struct ustack_cfi_table *t, uint64_t pc,
			       struct ustack_row *row)
{
	size_t lo = 0, hi, i;
	const struct tbl_body *b;

	if (!t || t->n < 2)
		return -ENOENT;
	hi = t->n;
	while (lo < hi) { /* first start > pc */
		size_t mid = lo + (hi - lo) / 2;

		if (t->starts[mid] <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ENOENT;
	i = lo - 1;
	b = &t->body[i];
	if ((b->flags & ROW_HOLE) || i + 1 >= t->n)
		return -ENOENT;
	row->start = t->starts[i];
	row->end = t->starts[i + 1];
	body_to_row(b, row);
	return 0;
}

int ustack_cfi_table__rows(const struct ustack_cfi_table *t, ustack_cfi_span_fn fn, void *ctx)
{
	/* the last entry is always a hole: every row's end is the next start */
	for (size_t i = 0; t && i + 1 < t->n; i++) {
		const struct tbl_body *b = &t->body[i];
		struct ustack_row row;
		int err;

		if (b->flags & ROW_HOLE)
			continue;
		row.start = t->starts[i];
		row.end = t->starts[i + 1];
		body_to_row(b, &row);
		err = fn(ctx, &row, 0);
		if (err)
			return err;
	}
	return 0;
}

size_t ustack_cfi_table__nr_rows(const struct ustack_cfi_table *t)
{
	return t ? t->nr_rows : 0;
}

size_t ustack_cfi_table__nr_fdes(const struct ustack_cfi_table *t)
{
	return t ? t->nr_fdes : 0;
}

size_t ustack_cfi_table__nr_bad_fdes(const struct ustack_cfi_table *t)
{
	return t ? t->nr_bad : 0;
}

size_t ustack_cfi_table__mem_size(const struct ustack_cfi_table *t)
{
	return t ? sizeof(*t) + t->cap * (sizeof(*t->starts) + sizeof(*t->body)) : 0;
}

void ustack_cfi_table__free(struct ustack_cfi_table *t)
{
	if (!t)
		return;
	free(t->starts);
	free(t->body);
	free(t);
}
