// SPDX-License-Identifier: MIT
/*
 * A sorted FDE index for a CFI section that has no binary-search table
 * (.debug_frame, and the .eh_frame of a static executable: gcc passes
 * --eh-frame-hdr to the linker only for dynamic links). Without it every
 * lookup walks the section from its start, parsing each CIE/FDE until one
 * covers the pc: linear in the number of FDEs, per lookup.
 *
 * The index is built by one such walk and answers exactly as the walk
 * does, so that choosing it changes no answer:
 *  - the walk stops at the first entry it cannot parse and returns that
 *    error for every pc no earlier FDE covers: the index keeps the FDEs
 *    before that point and the error that ended the walk;
 *  - the walk returns the first FDE in section order that covers the pc:
 *    the index only exists when no two FDEs overlap (then at most one
 *    covers any pc, and which one comes first does not matter).
 * The FDE found is parsed again at lookup (the section bytes are not
 * copied), and its instructions interpreted as ustack_cfi__find_row() does.
 */
#include <errno.h>
#include <stdlib.h>

#include "cfi/cfi.h"
#include "common/grow.h"

struct fde_ref {
	uint64_t pc_begin, pc_end, off;
};

struct ustack_cfi_index {
	struct fde_ref *fdes; /* sorted by pc_begin, never overlapping */
	size_t n;
	int stop_err;         /* what the walk met at its end: -ENOENT, -EBADMSG */
};

static int by_pc_begin(const void *a, const void *b)
{
	const struct fde_ref *x = a, *y = b;

	return x->pc_begin < y->pc_begin ? -1 : x->pc_begin > y->pc_begin;
}

/* The walk of find_fde_walk(), keeping every FDE that covers something. */
static int collect(const struct ustack_cfi *cfi, struct ustack_cfi_index *ix)
{
	struct ustack_cfi_fde fde;
	uint64_t off = 0, next;
	size_t cap = 0;

	for (;;) {
		int err = ustack_cfi__parse_entry(cfi, off, &fde, &next);

		if (err < 0) {
			ix->stop_err = err;
			return 0;
		}
		if (err == 1 && fde.pc_begin < fde.pc_end) {
			void *p = ix->fdes;

			if (ustack_grow(&p, &cap, ix->n + 1, sizeof(*ix->fdes), 256))
				return -ENOMEM;
			ix->fdes = p;
			ix->fdes[ix->n++] = (struct fde_ref){ fde.pc_begin, fde.pc_end, off };
		}
		off = next; /* always > off: entries are at least 4 bytes */
	}
}

struct ustack_cfi_index *ustack_cfi_index__build(const struct ustack_cfi *cfi)
{
	struct ustack_cfi_index *ix = calloc(1, sizeof(*ix));
	int err;

	if (!ix)
		return NULL;
	err = collect(cfi, ix);
	if (!err && ix->n > 1) {
		qsort(ix->fdes, ix->n, sizeof(*ix->fdes), by_pc_begin);
		for (size_t i = 1; i < ix->n && !err; i++)
			if (ix->fdes[i - 1].pc_end > ix->fdes[i].pc_begin)
				err = -ENOTUNIQ;
	}
	if (err) {
		ustack_cfi_index__free(ix);
		errno = -err;
		return NULL;
	}
	return ix;
}

void ustack_cfi_index__free(struct ustack_cfi_index *ix)
{
	if (!ix)
		return;
	free(ix->fdes);
	free(ix);
}

size_t ustack_cfi_index__nr_fdes(const struct ustack_cfi_index *ix)
{
	return ix->n;
}

int ustack_cfi_index__find_row(const struct ustack_cfi *cfi, const struct ustack_cfi_index *ix,
			       uint64_t pc, struct ustack_row *row)
{
	struct ustack_cfi_fde fde;
	size_t lo = 0, hi = ix->n;
	uint64_t next;

	/* the last FDE starting at or before pc */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->fdes[mid].pc_begin <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || pc >= ix->fdes[lo - 1].pc_end)
		return ix->stop_err;
	/* parsed at build time from the same bytes: anything else is a bug */
	if (ustack_cfi__parse_entry(cfi, ix->fdes[lo - 1].off, &fde, &next) != 1)
		return -EBADMSG;
	return ustack_cfi__exec(cfi, &fde, pc, row, NULL, NULL);
}
