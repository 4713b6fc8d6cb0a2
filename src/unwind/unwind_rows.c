// SPDX-License-Identifier: MIT
/*
 * A module's whole unwind table as one flat sorted list of spans (for an
 * eBPF unwinder that copies it into a map and binary-searches it there),
 * answering exactly as ustack_modtab__find_row() does.
 *
 * Each source gives its own sorted spans, as its lookup answers
 * (ustack_sframe__rows, ustack_cfi_table__rows or ustack_cfi__rows), and
 * two sweeps lay them over each other in find_row's order of precedence:
 * SFrame over CFI (bad CFI spans included: find_row stops there), then
 * what is left uncovered of the PLT sections gets the PLT rule, slot by
 * slot.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/ustack.h>
#include "common/log.h"
#include "elf/elf_file.h"
#include "unwind/modules.h"
#include "unwind/modules_internal.h"
#include "unwind/unwind.h"

struct span_vec {
	struct ustack_row_span *v;
	size_t n, cap;
	uint64_t first_bad; /* start of the first bad span added */
	int has_bad;
	size_t adds;        /* spans offered, merged ones included */
};

/* Work bound: repetition (a PCMASK function, PLT expression rows) can
 * offer far more spans than are kept once merged. */
#define MAX_ADDS ((size_t)USTACK_MODTAB_MAX_SPANS * 4)

static int same_rules(const struct ustack_row *a, const struct ustack_row *b)
{
	return a->cfa_off == b->cfa_off && a->ra_off == b->ra_off && a->fp_off == b->fp_off &&
	       a->cfa_reg == b->cfa_reg && a->ra_rule == b->ra_rule &&
	       a->fp_rule == b->fp_rule && a->flags == b->flags && a->bx_rule == b->bx_rule &&
	       (a->bx_rule != USTACK_BX_OFFSET || a->bx_off == b->bx_off);
}

/* Append [row->start, row->end), merged into the last span when it goes
 * on with the same answer. */
static int vec_add(struct span_vec *s, const struct ustack_row *row, uint8_t method, uint8_t bad)
{
	struct ustack_row_span *last = s->n ? &s->v[s->n - 1] : NULL;

	if (++s->adds > MAX_ADDS)
		return -E2BIG;
	if (row->start >= row->end)
		return 0;
	if (last && row->start < last->row.end)
		return -EFAULT; /* a source out of order: a bug, never input */
	if (bad && !s->has_bad) {
		s->has_bad = 1;
		s->first_bad = row->start;
	}
	if (last && last->row.end == row->start && last->method == method && last->bad == bad &&
	    same_rules(&last->row, row)) {
		last->row.end = row->end;
		return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		struct ustack_row_span *v;

		if (s->n >= USTACK_MODTAB_MAX_SPANS)
			return -E2BIG;
		if (cap > USTACK_MODTAB_MAX_SPANS)
			cap = USTACK_MODTAB_MAX_SPANS;
		v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	last = &s->v[s->n++];
	memset(last, 0, sizeof(*last));
	last->row = *row;
	last->method = method;
	last->bad = bad;
	return 0;
}

static int sframe_cb(void *ctx, const struct ustack_row *row)
{
	return vec_add(ctx, row, USTACK_METHOD_SFRAME, 0);
}

static int cfi_cb(void *ctx, const struct ustack_row *row, int bad)
{
	struct ustack_row r = *row;

	if (bad) { /* no rule: keep the fields 0, so that bad spans merge */
		memset(&r, 0, sizeof(r));
		r.start = row->start;
		r.end = row->end;
	}
	return vec_add(ctx, &r, USTACK_METHOD_CFI, !!bad);
}

/* [a, b) of the lower layer's span @lo goes to @out (a PLT range slot by
 * slot, as ustack_plt_row() answers per pc). */
static int add_piece(struct span_vec *out, const struct ustack_row_span *lo, uint64_t a, uint64_t b)
{
	struct ustack_row r;
	int err;

	if (lo->method != USTACK_METHOD_PLT) {
		r = lo->row;
		r.start = a;
		r.end = b;
		return vec_add(out, &r, lo->method, lo->bad);
	}
	for (uint64_t p = a; p < b; p = r.end) {
		ustack_plt_row(p, &r);
		r.start = p;
		if (r.end <= p || r.end > b) /* the last slot, or the top of the space */
			r.end = b;
		err = vec_add(out, &r, USTACK_METHOD_PLT, 0);
		if (err)
			return err;
	}
	return 0;
}

/* @hi where it has spans, @lo where it has none, into @out. */
static int overlay(const struct span_vec *hi, const struct span_vec *lo, struct span_vec *out)
{
	size_t i = 0;
	int err = 0;

	for (size_t j = 0; j < lo->n && !err; j++) {
		uint64_t a = lo->v[j].row.start, e = lo->v[j].row.end;

		while (a < e && !err) {
			const struct ustack_row_span *h;
			uint64_t b = e;

			while (i < hi->n && hi->v[i].row.end <= a && !err) {
				h = &hi->v[i++];
				err = vec_add(out, &h->row, h->method, h->bad);
			}
			if (err)
				break;
			h = i < hi->n ? &hi->v[i] : NULL;
			if (h && h->row.start <= a) {
				a = h->row.end; /* hidden under h */
				continue;
			}
			if (h && h->row.start < b)
				b = h->row.start;
			err = add_piece(out, &lo->v[j], a, b);
			a = b;
		}
	}
	for (; i < hi->n && !err; i++)
		err = vec_add(out, &hi->v[i].row, hi->v[i].method, hi->v[i].bad);
	return err;
}

/* @a over @b into *a (b is emptied); either may be empty. */
static int layer(struct span_vec *a, struct span_vec *b)
{
	struct span_vec out = { 0 };
	int err = 0;

	if (!a->n && !(b->n && b->v[0].method == USTACK_METHOD_PLT)) {
		/* nothing to lay over, nothing to expand: take b as it is */
		free(a->v);
		*a = *b;
		memset(b, 0, sizeof(*b));
		return 0;
	}
	if (b->n) {
		err = overlay(a, b, &out);
		if (err) {
			free(out.v);
			return err;
		}
		free(a->v);
		*a = out;
	}
	free(b->v);
	memset(b, 0, sizeof(*b));
	return 0;
}

static int cmp_range(const void *x, const void *y)
{
	const uint64_t *a = x, *b = y;

	return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* The PLT sections, as one sorted list of disjoint ranges. */
static int plt_ranges(const struct ustack_modtab *m, struct span_vec *out)
{
	uint64_t r[3][2];
	int n = 0, err = 0;

	for (int i = 0; i < 3; i++)
		if (m->plt[i][0] < m->plt[i][1])
			r[n][0] = m->plt[i][0], r[n][1] = m->plt[i][1], n++;
	qsort(r, n, sizeof(r[0]), cmp_range);
	for (int i = 0; i < n && !err; i++) {
		struct ustack_row row = { .start = r[i][0], .end = r[i][1] };
		struct ustack_row_span *last = out->n ? &out->v[out->n - 1] : NULL;

		/* every PLT section answers the same: take the union */
		if (last && row.start <= last->row.end) {
			if (row.end > last->row.end)
				last->row.end = row.end;
			continue;
		}
		err = vec_add(out, &row, USTACK_METHOD_PLT, 0);
	}
	return err;
}

int ustack_modtab__rows(struct ustack_modtab *m, struct ustack_row_span **spans, size_t *nr)
{
	struct span_vec sf = { 0 }, cfi = { 0 }, plt = { 0 };
	const char *path;
	int err = 0;

	*spans = NULL;
	*nr = 0;
	if (!m || !m->elf)
		return -EINVAL;
	path = ustack_elf__path(m->elf);
	if (m->has_sframe) {
		struct ustack_sframe_error e;

		err = ustack_sframe__rows(&m->sf, sframe_cb, &sf, &e);
		if (err == -EBADMSG || err == -ENOTSUP) {
			/* find_row would stop trusting it at the first bad
			 * byte it met; here every byte is met: drop it now,
			 * for find_row too */
			char msg[256];

			ustack_sframe_error__format(&e, msg, sizeof(msg));
			pr_warn("%s: .sframe: %s (not used again)\n", path, msg);
			m->has_sframe = 0;
			sf.n = 0;
			err = 0;
		}
		if (err)
			goto out;
	}
	if (m->has_cfi) {
		const struct ustack_cfi_table *t = ustack_modtab__cfi_table(m);

		err = t ? ustack_cfi_table__rows(t, cfi_cb, &cfi)
			: ustack_cfi__rows(&m->cfi, cfi_cb, &cfi);
		if (err)
			goto out;
		/* find_row says it once, at the first bad pc it is asked */
		if (cfi.has_bad && !m->cfi_warned) {
			m->cfi_warned = 1;
			pr_warn("%s: %s corrupt near 0x%llx\n", path,
				ustack_cfi__section_name(&m->cfi), (unsigned long long)cfi.first_bad);
		}
	}
	err = plt_ranges(m, &plt);
	if (!err)
		err = layer(&sf, &cfi);
	if (!err)
		err = layer(&sf, &plt);
	if (!err && m->entry && m->entry != UINT64_MAX) {
		/* under everything else, as find_row answers it: the gap
		 * from the entry to the first span after it */
		struct span_vec ent = { 0 };
		struct ustack_row row;
		uint64_t end = m->entry + USTACK_ENTRY_GAP_MAX;

		for (size_t i = 0; i < sf.n; i++) {
			if (sf.v[i].row.end <= m->entry)
				continue;
			if (sf.v[i].row.start <= m->entry)
				end = m->entry; /* covered: no gap */
			else if (sf.v[i].row.start < end)
				end = sf.v[i].row.start;
			break;
		}
		ustack_entry_row(m->entry, end, &row);
		err = vec_add(&ent, &row, USTACK_METHOD_CFI, 0);
		if (!err)
			err = layer(&sf, &ent);
		free(ent.v);
	}
	if (err)
		goto out;
	if (sf.n && sf.n < sf.cap) { /* give back the doubling slack */
		struct ustack_row_span *v = realloc(sf.v, sf.n * sizeof(*v));

		if (v)
			sf.v = v;
	}
	if (!sf.n) {
		free(sf.v);
		sf.v = NULL;
	}
	*spans = sf.v;
	*nr = sf.n;
	sf.v = NULL;
out:
	free(sf.v);
	free(cfi.v);
	free(plt.v);
	return err;
}
