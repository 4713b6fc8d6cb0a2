// SPDX-License-Identifier: MIT
/*
 * The whole SFrame table as ustack_sframe__find_row() answers it, for
 * callers that copy a module's unwind table somewhere else (an eBPF map).
 *
 * Which function the lookup picks for a pc: in a section flagged sorted,
 * the last one starting at or before the pc (binary search), and only if
 * the pc lies inside it, so function i answers over
 * [start_i, min(end_i, start_i+1)); otherwise the first one, in index
 * order, that contains the pc, which is the function's whole range when
 * the functions follow each other in address order without overlapping.
 * Inside a function, the FRE covering the pc (nothing before the first
 * FRE), per repetition block for PCMASK.
 */
#include <errno.h>
#include <string.h>

#include "sframe/sframe.h"

struct rows_out {
	ustack_sframe_row_fn fn;
	void *ctx;
};

/* base + off, or @b when that reaches past it (no overflow: base < b). */
static inline uint64_t clip_at(uint64_t base, uint64_t off, uint64_t b)
{
	return off < b - base ? base + off : b;
}

static int pass(const struct rows_out *o, const struct ustack_row *rel, uint64_t base,
		uint32_t s, uint32_t e, uint64_t a, uint64_t b)
{
	struct ustack_row row = *rel;
	uint64_t lo = clip_at(base, s, b), hi = clip_at(base, e, b);

	if (lo < a)
		lo = a;
	if (lo >= hi)
		return 0;
	row.start = lo;
	row.end = hi;
	return o->fn(o->ctx, &row);
}

/* The FREs of @fde laid at @base (the function or one repetition block),
 * clipped to [a, b); base < b. */
static int fre_block(const struct ustack_sframe *sf, const struct ustack_sframe_fde *fde,
		     uint64_t base, uint64_t a, uint64_t b, const struct rows_out *o)
{
	uint32_t limit = fde->pc_type == USTACK_SFRAME_PC_MASK ? fde->rep_size : fde->size;
	struct ustack_sframe_fre fre, prev;
	uint64_t pos = fde->fres;
	int err;

	for (uint32_t j = 0; j < fde->nr_fres; j++) {
		if (ustack_sframe__fre_next(sf, fde, &pos, &fre))
			return -EBADMSG; /* validated: cannot happen */
		if (j) {
			err = pass(o, &prev.row, base, prev.start_off, fre.start_off, a, b);
			if (err)
				return err;
		}
		if (clip_at(base, fre.start_off, b) >= b)
			return 0; /* the rest lies beyond b */
		prev = fre;
	}
	return fde->nr_fres ? pass(o, &prev.row, base, prev.start_off, limit, a, b) : 0;
}

/* What the lookup answers over [a, b), where it picks @fde. */
static int fde_rows(const struct ustack_sframe *sf, const struct ustack_sframe_fde *fde,
		    uint64_t a, uint64_t b, const struct rows_out *o)
{
	uint64_t base;
	int err;

	if (!fde->nr_fres) {
		struct ustack_row row;

		/* v3: a function without rows is an outermost frame */
		if (sf->version < 3)
			return 0;
		memset(&row, 0, sizeof(row));
		row.start = a;
		row.end = b;
		row.ra_rule = USTACK_RULE_UNDEFINED;
		row.flags = USTACK_ROW_OUTERMOST | (fde->signal ? USTACK_ROW_SIGNAL : 0);
		return o->fn(o->ctx, &row);
	}
	if (fde->pc_type != USTACK_SFRAME_PC_MASK)
		return fre_block(sf, fde, fde->start, a, b, o);
	/* one block after the other (rep_size > 0 was checked) */
	base = fde->start + (a - fde->start) / fde->rep_size * fde->rep_size;
	for (;;) {
		err = fre_block(sf, fde, base, a, b, o);
		if (err || b - base <= fde->rep_size)
			return err;
		base += fde->rep_size;
	}
}

int ustack_sframe__rows(const struct ustack_sframe *sf, ustack_sframe_row_fn fn, void *ctx,
			struct ustack_sframe_error *err)
{
	const struct rows_out o = { fn, ctx };
	struct ustack_sframe_fde cur, next;
	int sorted = sf->flags & USTACK_SFRAME_F_FDE_SORTED;
	uint32_t n = sf->nr_fdes;
	int ret;

	ret = ustack_sframe__validate(sf, err);
	if (ret || !n)
		return ret;
	if (!sorted) {
		/* the lookup takes the first function containing the pc:
		 * the same as the sorted walk below only when they follow
		 * each other without overlap */
		uint64_t prev_end = 0;
		int have = 0;

		for (uint32_t i = 0; i < n; i++) {
			ret = ustack_sframe__fde(sf, i, &cur);
			if (ret)
				return ret;
			if (!cur.size)
				continue;
			if (have && cur.start < prev_end) {
				if (err) {
					err->err = -ENOTSUP;
					err->fde = i;
					err->fre = -1;
					err->offset = cur.offset;
					err->reason = "functions out of address order (section not sorted)";
				}
				return -ENOTSUP;
			}
			prev_end = cur.start + cur.size;
			have = 1;
		}
	}
	ret = ustack_sframe__fde(sf, 0, &next);
	for (uint32_t i = 0; !ret && i < n; i++) {
		uint64_t b;

		cur = next;
		b = cur.start + cur.size;
		if (i + 1 < n) {
			ret = ustack_sframe__fde(sf, i + 1, &next);
			if (ret)
				return ret;
			/* from its start on, the search picks the next one */
			if (sorted && next.start < b)
				b = next.start;
		}
		if (cur.start < b)
			ret = fde_rows(sf, &cur, cur.start, b, &o);
	}
	return ret;
}
