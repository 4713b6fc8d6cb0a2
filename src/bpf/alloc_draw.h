/* SPDX-License-Identifier: MIT */
/*
 * The byte sampling of record --alloc: the countdown that decides which
 * allocations are kept. Compiled into the BPF program (alloc.bpf.h) and,
 * unchanged, into its unit test (tests/unit/test_alloc_draw.c), so that
 * the mean and variance the test measures are those of the kernel's code.
 *
 * No floating point in BPF: -ln(u) of a uniform u is built from the 32-bit
 * random r as u = m * 2^(k-32) with k the index of r's top bit and m in
 * [1, 2): -ln(u) = (32 - k) ln 2 - ln(m). ln(m) is interpolated linearly
 * between 2^10 + 1 points of a table (the 10 bits below the top one pick
 * the interval, the next 16 the place in it): the chord lies below ln by
 * at most (2^-10)^2 / 8 = 1.2e-7, so the draw is continuous to that
 * precision. A constant per interval instead made a step function of the
 * law, whose keep probability 1 - exp(-s/M) was off by up to 0.1% at
 * sizes that fall on a step. The unit test computes the draw's mean and
 * variance exactly over all 2^32 values of r: 1 within 1e-6.
 *
 * The includer defines UB_ALLOC_RANDOM() (a uniform 32-bit random number)
 * and, outside BPF, ub_u64/ub_u32 (bpf/record_abi.h).
 */
#ifndef USTACK_BPF_ALLOC_DRAW_H
#define USTACK_BPF_ALLOC_DRAW_H

#define UB_ALLOC_LN_BITS 10
#define UB_ALLOC_LN_N (1u << UB_ALLOC_LN_BITS)
#define UB_LN2_Q32 2977044472ull /* round(ln 2 * 2^32) */
/* means from here on are multiplied after a shift: no 64-bit overflow */
#define UB_ALLOC_MEAN_BIG (1ull << 42)

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Index of the top set bit of @r (r != 0). */
static __always_inline ub_u32 ub_alloc_top_bit(ub_u32 r)
{
	ub_u32 k = 0;

	if (r >> 16) {
		k += 16;
		r >>= 16;
	}
	if (r >> 8) {
		k += 8;
		r >>= 8;
	}
	if (r >> 4) {
		k += 4;
		r >>= 4;
	}
	if (r >> 2) {
		k += 2;
		r >>= 2;
	}
	if (r >> 1)
		k += 1;
	return k;
}

/* -ln(r / 2^32) in Q32 (r = 0 is taken as 1: probability 2^-32). @lnm:
 * the table, 2^32 ln(1 + j/N) for j = 0..N. */
static __always_inline ub_u64 ub_alloc_neg_ln_q32(ub_u32 r, const volatile ub_u64 *lnm)
{
	ub_u32 k, norm, j, f;
	ub_u64 lo, hi;

	if (!r)
		r = 1;
	k = ub_alloc_top_bit(r);
	norm = r << (31 - k); /* the top bit at bit 31 */
	j = (norm >> (31 - UB_ALLOC_LN_BITS)) & (UB_ALLOC_LN_N - 1);
	/* the next 16 bits, and half of what is below them: 17-bit fraction */
	f = (((norm >> (15 - UB_ALLOC_LN_BITS)) & 0xffff) << 1) | 1;
	lo = lnm[j & (UB_ALLOC_LN_N - 1)];
	hi = lnm[(j & (UB_ALLOC_LN_N - 1)) + 1];
	return (ub_u64)(32 - k) * UB_LN2_Q32 - (lo + (((hi - lo) * f) >> 17));
}

/* A countdown in bytes: the exponential Y of mean @mean (> 1) rounded up.
 * Up, not to nearest: an allocation of s bytes (an integer) is kept when
 * ceil(Y) <= s, that is when Y <= s, with the continuous law's probability
 * 1 - exp(-s/mean) (to nearest, Y < s + 1/2: 1% too often at a mean of 2).
 * -ln(u) goes from Q32 to Q16 rounded to nearest (2^-17 at most). */
static __always_inline ub_u64 ub_alloc_draw(ub_u32 r, ub_u64 mean, const volatile ub_u64 *lnm)
{
	ub_u64 d16 = (ub_alloc_neg_ln_q32(r, lnm) + (1u << 15)) >> 16; /* < 2^21 */

	if (mean >= UB_ALLOC_MEAN_BIG)
		return (mean >> 16) * d16;
	return (mean * d16 + 0xffff) >> 16;
}

#ifdef UB_ALLOC_RANDOM
/* Whether the allocation of @size bytes is kept. @left: bytes still to
 * allocate before the next kept one, 0 before the first draw. An
 * allocation is kept when it reaches the countdown, which is then drawn
 * anew: by the exponential's lack of memory the countdown an allocation
 * meets is always exponential of mean @mean, so an allocation of s bytes is
 * kept with probability 1 - exp(-s / mean) (event_alloc.c weighs it by the
 * inverse). @mean <= 1: every allocation kept. */
static __always_inline int ub_alloc_take(ub_u64 *left, ub_u64 size, ub_u64 mean,
					 const volatile ub_u64 *lnm)
{
	if (mean <= 1)
		return 1;
	if (!*left)
		*left = ub_alloc_draw(UB_ALLOC_RANDOM(), mean, lnm);
	if (size < *left) {
		*left -= size;
		return 0;
	}
	*left = ub_alloc_draw(UB_ALLOC_RANDOM(), mean, lnm);
	return 1;
}
#endif

#ifndef __bpf__
/* ln(m) for m in [1, 2], without libm (the static library's users link no
 * -lm): 2 atanh(z), z = (m - 1) / (m + 1) <= 1/3; 30 terms leave less
 * than 9^-30 of the result. */
static inline double ub_alloc_ln12(double m)
{
	double z = (m - 1) / (m + 1), z2 = z * z, term = z, sum = 0;

	for (int i = 0; i < 30; i++) {
		sum += term / (2 * i + 1);
		term *= z2;
	}
	return 2 * sum;
}

/* The table of ub_alloc_neg_ln_q32() (UB_ALLOC_LN_N + 1 entries),
 * computed by user space into the program's rodata. */
static inline void ub_alloc_lnm_fill(volatile ub_u64 *lnm)
{
	for (ub_u32 j = 0; j <= UB_ALLOC_LN_N; j++)
		lnm[j] = (ub_u64)(ub_alloc_ln12(1 + (double)j / UB_ALLOC_LN_N) * 4294967296.0 + 0.5);
}
#endif

#endif
