// SPDX-License-Identifier: MIT
/*
 * The byte sampling of record --alloc (src/bpf/alloc_draw.h), the same
 * code the BPF program runs, with the table user space computes:
 * - the draw's mean and variance over all 2^32 random values (the draw is
 *   linear in r within each class of the same top bit and next 10 bits,
 *   so a few values per class give its mean): the mean within 1e-6 of 1
 *   (exponential: mean 1, variance 1), the scaled draw's (rounded up) within 0.1% of the mean
 *   asked for of the mean of the exponential rounded up;
 * - the countdown: the share of allocations of each size kept is
 *   1 - exp(-s/M), and the weighed sum (event_alloc.c's weights) estimates
 *   the bytes, within bounds derived from the binomial and the estimator's
 *   variance (a fixed seed: the run is the same every time; the bounds say
 *   it would pass with probability > 1 - 1e-6 under any seed).
 */
#include <math.h>
#include <stdint.h>

#include "bpf/record_abi.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* splitmix64: a fixed, well-mixed stream */
static uint32_t test_random(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

#define UB_ALLOC_RANDOM() test_random()
#include "bpf/alloc_draw.h"
#include "record/event.h"
#include "test.h"

static ub_u64 lnm[UB_ALLOC_LN_N + 1];

/* Calls @fn(r, count) so that the count-weighted mean of any function of
 * r that is linear in the bits below the 10 after r's top bit (as the
 * interpolated draw is, up to one unit of Q32 rounding) is its mean over
 * all 2^32 values of r: every r where those bits are 6 or fewer, else the
 * midpoints of 64 equal slices of them. */
static void for_each_class(void (*fn)(uint32_t r, double count, void *ctx), void *ctx)
{
	fn(0, 1, ctx); /* taken as 1 */
	for (uint32_t r = 1; r < (1u << UB_ALLOC_LN_BITS); r++)
		fn(r, 1, ctx);
	for (uint32_t k = UB_ALLOC_LN_BITS; k < 32; k++) {
		uint32_t nb = k - UB_ALLOC_LN_BITS;

		for (uint32_t j = 0; j < UB_ALLOC_LN_N; j++) {
			uint32_t base = (1u << k) | (j << nb);

			if (nb <= 6) {
				for (uint32_t lo = 0; lo < (1u << nb); lo++)
					fn(base | lo, 1, ctx);
				continue;
			}
			for (uint32_t i = 0; i < 64; i++)
				fn(base | (i << (nb - 6)) | (1u << (nb - 7)), ldexp(1, (int)nb - 6), ctx);
		}
	}
}

struct moments {
	uint64_t mean; /* 0: the Q32 -ln draw, else ub_alloc_draw(mean) */
	long double s1, s2, n;
};

static void add_moment(uint32_t r, double count, void *ctx)
{
	struct moments *m = ctx;
	long double x = m->mean ? (long double)ub_alloc_draw(r, m->mean, lnm)
				: (long double)ub_alloc_neg_ln_q32(r, lnm) / 4294967296.0L;

	m->s1 += count * x;
	m->s2 += count * x * x;
	m->n += count;
}

static void test_neg_ln_moments(void)
{
	struct moments m = { 0 };
	long double mean, var;

	ub_alloc_lnm_fill(lnm);
	for_each_class(add_moment, &m);
	CHECK(m.n == 4294967296.0L);
	mean = m.s1 / m.n;
	var = m.s2 / m.n - mean * mean;
	printf("# -ln(u) draw: mean - 1 = %.3Le, variance - 1 = %.3Le\n", mean - 1, var - 1);
	CHECK(fabsl(mean - 1) < 1e-6);
	CHECK(fabsl(var - 1) < 1e-4);
}

static void test_draw_mean(void)
{
	static const uint64_t means[] = { 2, 100, 4096, 8192, 512 * 1024, 1ull << 30, 1ull << 44 };

	ub_alloc_lnm_fill(lnm);
	for (size_t i = 0; i < sizeof(means) / sizeof(means[0]); i++) {
		struct moments m = { .mean = means[i] };
		long double rel;

		/* the draw is rounded up: the mean of ceil(Y) for Y exponential
		 * of mean M is 1 / (1 - exp(-1/M)), about M + 1/2 */
		long double want = -1 / expm1l(-1.0L / (long double)means[i]);

		for_each_class(add_moment, &m);
		rel = (m.s1 / m.n - want) / (long double)means[i];
		printf("# draw of mean %llu: bias %.3Le of the mean\n", (unsigned long long)means[i], rel);
		CHECK(fabsl(rel) < 1e-3);
	}
}

/* Allocations of one size: the share kept within 6 binomial sigmas of
 * 1 - exp(-s/M) (tail 2e-9 each), the weighed bytes within 6 sigmas of
 * the sum (variance n s^2 (1-p)/p). */
static void test_countdown(void)
{
	static const uint64_t sizes[] = { 1, 32, 200, 3000, 8192, 65536 };
	const uint64_t mean = 8192, n = 400000;

	ub_alloc_lnm_fill(lnm);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t left = 0, kept = 0, s = sizes[i];
		double p = -expm1(-(double)s / mean), est = 0, sd_k, sd_b;

		for (uint64_t j = 0; j < n; j++) {
			if (ub_alloc_take(&left, s, mean, lnm)) {
				kept++;
				est += (double)rec_alloc_weight(s, mean);
			}
		}
		sd_k = sqrt(n * p * (1 - p));
		sd_b = sqrt(n * (double)s * s * (1 - p) / p);
		printf("# size %llu: kept %llu of %llu (expected %.1f, sd %.1f); bytes %.0f of %llu "
		       "(sd %.0f)\n", (unsigned long long)s, (unsigned long long)kept,
		       (unsigned long long)n, n * p, sd_k, est, (unsigned long long)(n * s), sd_b);
		CHECK(fabs((double)kept - n * p) <= 6 * sd_k + 1);
		CHECK(fabs(est - (double)(n * s)) <= 6 * sd_b + s);
	}
}

/* A mix of sizes through one countdown, as a thread allocates. */
static void test_countdown_mix(void)
{
	static const uint64_t sizes[] = { 32, 32, 32, 200, 3000, 100000, 48, 500 };
	const uint64_t mean = 4096, rounds = 100000;
	uint64_t left = 0, total = 0;
	double est = 0, var = 0;

	ub_alloc_lnm_fill(lnm);
	for (uint64_t j = 0; j < rounds; j++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			uint64_t s = sizes[i];
			double p = -expm1(-(double)s / mean);

			total += s;
			var += (double)s * s * (1 - p) / p;
			if (ub_alloc_take(&left, s, mean, lnm))
				est += (double)rec_alloc_weight(s, mean);
		}
	printf("# mix: estimated %.0f of %llu bytes (sd %.0f)\n", est, (unsigned long long)total,
	       sqrt(var));
	CHECK(fabs(est - (double)total) <= 6 * sqrt(var));
}

static void test_mean_one_keeps_all(void)
{
	uint64_t left = 0;

	ub_alloc_lnm_fill(lnm);
	for (int i = 0; i < 1000; i++)
		CHECK(ub_alloc_take(&left, (uint64_t)i, 1, lnm));
	CHECK_EQ(rec_alloc_weight(1234, 1), 1234);
}

int main(void)
{
	RUN(test_neg_ln_moments);
	RUN(test_draw_mean);
	RUN(test_countdown);
	RUN(test_countdown_mix);
	RUN(test_mean_one_keeps_all);
	TEST_EXIT();
}
