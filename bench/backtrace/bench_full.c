// SPDX-License-Identifier: MIT
/*
 * Whole-stack backtraces on distinct paths, the pattern of an allocation
 * profiler or a crash handler: every call walks from a leaf to _start
 * (size 256, never cut at the depth), through a path of DEPTH functions of
 * three frame shapes (gen_full.sh) that differs from the previous call's.
 *
 *   bench_full DEPTH ROUNDS [CALLS]
 *     rounds of CALLS (default 2000) calls, the methods alternating round by
 *     round (no-op, ustack, the peer), each round's paths new; every call's
 *     frames of ustack and the peer compared, same call instruction.
 *     Prints per method: ns per call, median [min-max] over rounds, the
 *     no-op round before it subtracted (the cost of the path itself).
 *   bench_full DEPTH 0 CALLS METHOD
 *     for callgrind: warms up, then CALLS calls of METHOD (none, ustack or
 *     the peer) inside full_measure() only.
 *
 * The peer: libunwind's unw_backtrace() when built -DFULL_UNW (linked
 * -lunwind), else glibc's backtrace(). Never both in one program:
 * libunwind.so defines backtrace() too, which then takes glibc's place.
 */
#include <execinfo.h>
#ifdef FULL_UNW
#include <libunwind.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ustack/ustack.h>

#include "bench_full.h"

#define MAXD 256
#define NM 3

typedef int (*cap_fn)(void **buf, int size);

static int noop_capture(void **buf, int size)
{
	(void)size;
	buf[0] = 0;
	return 0;
}

#ifdef FULL_UNW
static int unw_capture(void **buf, int size)
{
	return unw_backtrace(buf, size);
}
static const char *const names[NM] = { "none", "ustack", "libunwind" };
static cap_fn const caps[NM] = { noop_capture, ustack_backtrace, unw_capture };
#else
static const char *const names[NM] = { "none", "ustack", "glibc" };
static cap_fn const caps[NM] = { noop_capture, ustack_backtrace, backtrace };
#endif

/* where the leaf stores: through volatile pointers so that one call
 * instruction serves every method (the same return address in frame 0) */
static cap_fn volatile leaf_cap;
static void **volatile leaf_buf;
static int volatile leaf_n;

FULL_NOIPA int full_leaf(uint32_t s)
{
	leaf_n = leaf_cap(leaf_buf, MAXD);
	return (int)(s & 1);
}

static uint32_t seed_of(uint32_t i)
{
	uint32_t x = i * 2654435761u;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	return x ^ x >> 12;
}

static FULL_NOIPA int full_measure(int m, int depth, uint32_t first, int calls, void **out,
				   int *counts)
{
	int r = 0;

	leaf_cap = caps[m];
	for (int i = 0; i < calls; i++) {
		leaf_buf = out + (size_t)i * MAXD;
		r += full_tab[seed_of(first + i) % FULL_NFN](seed_of(first + i), depth);
		counts[i] = leaf_n;
	}
	return r;
}

/* the thread's CPU time: on a loaded machine wall time would count other
 * jobs' time slices (a round is long enough for the clock's cost not to
 * matter: one system call per 2,000 backtraces) */
static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* frames of method m equal ustack's for every call of the round */
static int compare(int m, int calls, void **const *bufs, int *const *counts, int depth)
{
	for (int i = 0; i < calls; i++) {
		void *const *a = bufs[1] + (size_t)i * MAXD, *const *b = bufs[m] + (size_t)i * MAXD;
		int na = counts[1][i], nb = counts[m][i], k = 0;

		while (k < na && k < nb && a[k] == b[k])
			k++;
		if (na != nb || k != na || na < depth + 2) {
			fprintf(stderr, "FRAMES-DIFFER ustack vs %s depth %d call %d: %d vs %d frames, "
				"first difference at %d\n", names[m], depth, i, na, nb, k);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 8, rounds = argc > 2 ? atoi(argv[2]) : 11;
	int calls = argc > 3 ? atoi(argv[3]) : 2000, bad = 0;
	void **bufs[NM];
	int *counts[NM];
	double *ns[NM];

	if (depth < 1 || depth > MAXD - 16 || calls < 1 || rounds < 0) {
		fprintf(stderr, "usage: bench_full DEPTH(1..%d) ROUNDS [CALLS [METHOD]]\n", MAXD - 16);
		return 2;
	}
	for (int m = 0; m < NM; m++) {
		bufs[m] = malloc(sizeof(void *) * MAXD * calls);
		counts[m] = calloc(calls, sizeof(int));
		ns[m] = calloc(rounds + 1, sizeof(double));
		if (!bufs[m] || !counts[m] || !ns[m])
			return 1;
		full_measure(m, depth, 0x7000000, 16, bufs[m], counts[m]); /* first-call set-up */
	}
	if (rounds == 0) {
		int m = 0;

		while (m < NM && (argc < 5 || strcmp(argv[4], names[m])))
			m++;
		if (m == NM)
			return 2;
		full_measure(m, depth, 1, calls, bufs[m], counts[m]);
		return 0;
	}
	for (int r = 0; r < rounds; r++) {
		double base = 0;

		/* the same new paths for each method of the round */
		for (int m = 0; m < NM; m++) {
			double t0 = now_ns();

			full_measure(m, depth, (uint32_t)(r + 1) * calls, calls, bufs[m], counts[m]);
			t0 = (now_ns() - t0) / calls;
			if (m == 0)
				base = t0;
			ns[m][r] = m ? t0 - base : t0;
		}
		for (int m = 2; m < NM; m++)
			if (compare(m, calls, bufs, counts, depth))
				bad = 1;
	}
	for (int m = 0; m < NM; m++) {
		qsort(ns[m], rounds, sizeof(double), cmp_d);
		printf("FULL %s %d %.1f %.1f %.1f %d\n", names[m], depth, ns[m][rounds / 2], ns[m][0],
		       ns[m][rounds - 1], counts[m][0]);
	}
	printf("FRAMES %s\n", bad ? "DIFFER" : "EQUAL");
	return bad;
}
