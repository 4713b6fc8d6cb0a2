// SPDX-License-Identifier: MIT
/*
 * The cold part of _PyEval_EvalFrameDefault (pyframes.h). GCC splits a
 * function it has a profile for into the function and "NAME.cold", a
 * local symbol that stripped builds do not keep, each with an FDE of its
 * own. Debian's python3.14 (GCC 16) runs most opcodes from the cold part:
 * a native frame there runs Python frames as much as one in the symbol's
 * range. The only trace of it in a stripped file is the hot part's jumps
 * into it: one function whose inside (not only its start: a tail call
 * jumps there) many of the hot part's rel32 jumps reach.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf_file.h"
#include "python/pyframes.h"

#define COLD_MIN_HITS 4           /* jumps into one function to call it the cold part */
#define COLD_MAX_SIZE (16u << 20) /* no function is larger */
#define FUNC_MAX (1u << 20)       /* bytes of the hot part scanned */

/* The index of the last start <= @a in @starts (sorted), -1 if none */
static long start_of(const uint64_t *starts, size_t n, uint64_t a)
{
	size_t l = 0, r = n;

	while (l < r) {
		size_t m = l + (r - l) / 2;

		if (starts[m] <= a)
			l = m + 1;
		else
			r = m;
	}
	return (long)l - 1;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

int ustack_py_eval_cold(const uint8_t *code, size_t len, uint64_t lo, const uint64_t *starts,
			size_t nstarts, uint64_t *cold_lo, uint64_t *cold_hi)
{
	long *hit, best = -1;
	size_t nhit = 0, bestn = 0;
	int inside = 0;

	*cold_lo = *cold_hi = 0;
	for (size_t i = 1; i < nstarts; i++)
		if (starts[i] <= starts[i - 1])
			return -EBADMSG; /* not the sorted table a search needs */
	if (!len || len > FUNC_MAX || !nstarts)
		return -ENOENT;
	hit = malloc(len * sizeof(*hit));
	if (!hit)
		return -ENOMEM;
	for (size_t i = 0; i + 5 <= len; i++) {
		size_t ilen = code[i] == 0xe9 ? 5 :
			      code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80 && i + 6 <= len ? 6 : 0;
		int32_t rel;
		uint64_t t;
		long k;

		if (!ilen)
			continue;
		memcpy(&rel, code + i + ilen - 4, 4);
		t = lo + i + ilen + (int64_t)rel;
		if (t >= lo && t < lo + len)
			continue;
		k = start_of(starts, nstarts, t);
		/* a target past the last start has no known end: not kept */
		if (k >= 0 && (size_t)k + 1 < nstarts && t != starts[k])
			hit[nhit++] = k;
	}
	qsort(hit, nhit, sizeof(*hit), cmp_long);
	for (size_t i = 0, j; i < nhit; i = j) {
		for (j = i; j < nhit && hit[j] == hit[i]; j++)
			;
		if (j - i > bestn) {
			bestn = j - i;
			best = hit[i];
		}
	}
	free(hit);
	if (best < 0 || bestn < COLD_MIN_HITS)
		return -ENOENT;
	/* the function of the hot part itself is no cold part of it */
	inside = starts[best] <= lo && starts[best + 1] > lo;
	if (inside || starts[best + 1] - starts[best] > COLD_MAX_SIZE)
		return -ENOENT;
	*cold_lo = starts[best];
	*cold_hi = starts[best + 1];
	return 0;
}

/* pyproc.h */
int ustack_py_fde_starts(struct ustack_elf *elf, uint64_t **out, size_t *n)
{
	struct ustack_elf_section h;
	uint32_t cnt;

	if (ustack_elf__section(elf, ".eh_frame_hdr", &h) || !h.data || h.size < 12)
		return -ENOENT;
	/* version 1, eh_frame_ptr 4 bytes, count udata4, table datarel sdata4 */
	if (h.data[0] != 1 || ((h.data[1] & 0x0f) != 0x03 && (h.data[1] & 0x0f) != 0x0b) ||
	    h.data[2] != 0x03 || h.data[3] != 0x3b)
		return -ENOENT;
	memcpy(&cnt, h.data + 8, 4);
	if (!cnt || cnt > (h.size - 12) / 8)
		return -EBADMSG;
	*out = malloc(cnt * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (uint32_t i = 0; i < cnt; i++) {
		int32_t v;

		memcpy(&v, h.data + 12 + 8 * (size_t)i, 4);
		(*out)[i] = h.addr + (int64_t)v;
	}
	*n = cnt;
	return 0;
}
