// SPDX-License-Identifier: MIT
/*
 * Benchmark driver for in-process backtraces; built three times by run.sh
 * from the same sources (this file + the generated bench_gen.c):
 *
 *   -DBENCH_SELF  -fomit-frame-pointer -Wa,--gsframe: ustack_backtrace()
 *                 and glibc backtrace() (no libunwind linked: it would
 *                 interpose libgcc's _Unwind_* under glibc)
 *   -DBENCH_UNW   same build flags, linked -lunwind: unw_backtrace()
 *   -DBENCH_FP    -fno-omit-frame-pointer: a plain frame-pointer walk
 *
 * Each capture stores exactly DEPTH entries (size = DEPTH) taken at the
 * bottom of a chain of DEPTH + 2 generated functions, so every method walks
 * the same frames, all in our own (SFrame-covered) code.
 *
 *   hot:      one fixed call path; the leaf captures N times in a loop
 *   distinct: a new pseudo-random path per capture (512 functions with 4
 *             call sites each: ~2000 distinct return addresses), so caches
 *             keyed by pc keep missing; each capture is timed on its own
 *             and the same timing of a no-op capture (clock overhead) is
 *             subtracted
 *
 * Before timing, every method's result is checked against a second one
 * taken at the same call instruction (glibc's backtrace() in the SELF and
 * FP builds, ustack in SELF) so the numbers are for correct work.
 *
 * Output, one line per measurement:
 *   RESULT <method> <hot|distinct> <depth> <ns per call> <frames per call>
 */
#include <execinfo.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef BENCH_SELF
#include <ustack/ustack.h>
#endif
#ifdef BENCH_UNW
#include <libunwind.h>
#endif

#include "bench_bt.h"

#define MAXD 256

typedef int (*cap_fn)(void **buf, int size);

/* leaf state, read by bench_leaf(); the pair loop reaches its arrays
 * through volatile pointers of unknown extent so that it cannot be unrolled
 * into two call instructions (both methods must see one return address) */
static cap_fn leaf_fns[2];
static void *leaf_bufs[2][MAXD];
static int leaf_n[2];
static cap_fn *volatile leaf_fns_p = leaf_fns;
static void *(*volatile leaf_bufs_p)[MAXD] = leaf_bufs;
static int *volatile leaf_n_p = leaf_n;
static volatile int leaf_nfns;
static volatile long leaf_iters; /* > 0: hot loop of that many captures */
static volatile int leaf_size;
static uint64_t leaf_ns;         /* time of the hot loop, or sum of timed captures */
static volatile int leaf_timed;  /* distinct runs: time each single capture */

/* BENCH_CLOCK=cpu: the thread's CPU time (a shared, loaded machine
 * preempts us; wall time would count other jobs' time slices). Distinct
 * runs are then timed as whole loops (a thread-CPU clock read is a system
 * call, too slow to time single captures) minus the whole no-op loop. */
static int cpu_clock;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static int noop_capture(void **buf, int size)
{
	(void)buf;
	__asm__ volatile("" ::: "memory");
	return size;
}

#ifdef BENCH_FP
/* The frame-pointer walk a profiler would do: [fp] = caller's fp,
 * [fp + 8] = return address; stop when the chain stops moving up. */
static NOIPA int fp_backtrace(void **buf, int size)
{
	const uintptr_t *fp = __builtin_frame_address(0);
	int n = 0;

	while (n < size) {
		const uintptr_t *next = (const uintptr_t *)fp[0];

		if (!fp[1])
			break;
		buf[n++] = (void *)fp[1];
		if (next <= fp || ((uintptr_t)next & 7) ||
		    (uintptr_t)next - (uintptr_t)fp > (1u << 20))
			break;
		fp = next;
	}
	return n;
}
#endif

NOIPA int bench_leaf(uint32_t s)
{
	long iters = leaf_iters;
	int size = leaf_size, nf = leaf_nfns;

	if (iters > 0) {
		cap_fn cap = leaf_fns[0];
		uint64_t t0 = now_ns();

		for (long i = 0; i < iters; i++)
			leaf_n[0] = cap(leaf_bufs[0], size);
		leaf_ns = now_ns() - t0;
	} else {
		/* one call instruction for both: same return addresses */
		cap_fn *fns = leaf_fns_p;
		void *(*bufs)[MAXD] = leaf_bufs_p;
		int *ns = leaf_n_p;

		if (leaf_timed) {
			uint64_t t0 = now_ns();

			ns[0] = fns[0](bufs[0], size);
			leaf_ns += now_ns() - t0;
		} else {
			for (int i = 0; i < nf; i++)
				ns[i] = fns[i](bufs[i], size);
		}
		__asm__ volatile("" ::: "memory");
	}
	return (int)(s & 1);
}

static uint32_t path_seed(uint32_t p, int depth)
{
	uint32_t x = p * 2654435761u ^ (uint32_t)depth * 0x85ebca6bu;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return x | 1;
}

static int run_path(uint32_t seed, int depth)
{
	return bench_gen_tab[seed % BENCH_NGEN](seed, depth + 2);
}

static double hot(cap_fn cap, int depth, long iters, int *frames)
{
	leaf_fns[0] = cap;
	leaf_nfns = 1;
	leaf_size = depth;
	leaf_iters = iters;
	run_path(0x12345u, depth);
	leaf_iters = 0;
	*frames = leaf_n[0];
	return (double)leaf_ns / iters;
}

/* Sum of the times of single captures, one per path. */
static uint64_t distinct_total(cap_fn cap, int depth, long paths, int *frames)
{
	int r = 0;

	leaf_fns[0] = cap;
	leaf_nfns = 1;
	leaf_size = depth;
	leaf_iters = 0;
	leaf_ns = 0;
	leaf_timed = !cpu_clock;
	if (cpu_clock) {
		uint64_t t0 = now_ns();

		for (long p = 0; p < paths; p++)
			r += run_path(path_seed((uint32_t)p, depth), depth);
		leaf_ns = now_ns() - t0;
	} else {
		for (long p = 0; p < paths; p++)
			r += run_path(path_seed((uint32_t)p, depth), depth);
	}
	leaf_timed = 0;
	*frames = leaf_n[0];
	__asm__ volatile("" : : "r"(r));
	return leaf_ns;
}

/* Same call instruction, two methods: must agree on all @depth entries. */
static int verify(const char *a_name, cap_fn a, const char *b_name, cap_fn b, int depth)
{
	for (uint32_t p = 0; p < 50; p++) {
		leaf_fns[0] = a;
		leaf_fns[1] = b;
		leaf_nfns = 2;
		leaf_size = depth;
		leaf_iters = 0;
		run_path(path_seed(p, depth), depth);
		leaf_nfns = 1;
		if (leaf_n[0] != depth || leaf_n[1] != depth ||
		    memcmp(leaf_bufs[0], leaf_bufs[1], depth * sizeof(void *))) {
			int i = 0;

			while (i < depth && leaf_bufs[0][i] == leaf_bufs[1][i])
				i++;
			fprintf(stderr, "VERIFY-FAIL %s vs %s depth %d path %u: %d vs %d entries, "
				"first difference at %d\n", a_name, b_name, depth, p, leaf_n[0],
				leaf_n[1], i);
			return -1;
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* How many of the @paths stacks of the distinct run really differ. */
static long count_distinct(cap_fn cap, int depth, long paths)
{
	uint64_t *h = calloc(paths, sizeof(*h));
	long uniq = 0;

	if (!h)
		return -1;
	leaf_fns[0] = cap;
	leaf_nfns = 1;
	leaf_size = depth;
	leaf_iters = 0;
	for (long p = 0; p < paths; p++) {
		run_path(path_seed((uint32_t)p, depth), depth);
		for (int i = 0; i < leaf_n[0]; i++)
			h[p] = (h[p] ^ (uintptr_t)leaf_bufs[0][i]) * 0x100000001b3ull;
	}
	qsort(h, paths, sizeof(*h), cmp_u64);
	for (long p = 0; p < paths; p++)
		uniq += !p || h[p] != h[p - 1];
	free(h);
	return uniq;
}

struct method {
	const char *name;
	cap_fn cap;
};

static int unw_bt(void **buf, int size)
{
#ifdef BENCH_UNW
	return unw_backtrace(buf, size);
#else
	(void)buf;
	(void)size;
	return 0;
#endif
}

int main(int argc, char **argv)
{
	static const int depths[] = { 8, 32, 128 };
	long frames_per_run = argc > 1 ? atol(argv[1]) : 1000000;
	struct method methods[3];
	int nm = 0, bad = 0;
	cap_fn ref = NULL;
	const char *ref_name = NULL;

	(void)unw_bt;
	cpu_clock = getenv("BENCH_CLOCK") && !strcmp(getenv("BENCH_CLOCK"), "cpu");
#ifdef BENCH_SELF
	methods[nm++] = (struct method){ "ustack", ustack_backtrace };
	methods[nm++] = (struct method){ "glibc", backtrace };
	ref = backtrace;
	ref_name = "glibc";
#endif
#ifdef BENCH_UNW
	methods[nm++] = (struct method){ "libunwind", unw_bt };
#endif
#ifdef BENCH_FP
	methods[nm++] = (struct method){ "fp", fp_backtrace };
	ref = backtrace;
	ref_name = "glibc";
#endif
	for (unsigned int di = 0; di < sizeof(depths) / sizeof(depths[0]); di++) {
		int depth = depths[di], frames;
		long iters = frames_per_run / depth, paths = iters / 4;

		for (int m = 0; m < nm; m++) {
			/* warm up: first-call set-up (libgcc_s load, table look-ups) */
			hot(methods[m].cap, depth, 10, &frames);
			if (ref && methods[m].cap != ref &&
			    verify(methods[m].name, methods[m].cap, ref_name, ref, depth))
				bad = 1;
		}
		for (int m = 0; m < nm; m++) {
			double ns = hot(methods[m].cap, depth, iters, &frames);

			printf("RESULT %s hot %d %.1f %d\n", methods[m].name, depth, ns, frames);
		}
		printf("DISTINCT %s %d %ld of %ld\n", methods[0].name, depth,
		       count_distinct(methods[0].cap, depth, paths), paths);
		/* distinct: the no-op run right before each method's run is its
		 * baseline (same paths, same binary, same timer calls) */
		for (int m = 0; m < nm; m++) {
			uint64_t base = distinct_total(noop_capture, depth, paths, &frames);
			uint64_t t = distinct_total(methods[m].cap, depth, paths, &frames);
			double ns = t > base ? (double)(t - base) / paths : 0;

			printf("RESULT %s distinct %d %.1f %d\n", methods[m].name, depth, ns, frames);
			printf("BASELINE %s distinct %d %.1f\n", methods[m].name, depth,
			       (double)base / paths);
		}
	}
	return bad;
}
