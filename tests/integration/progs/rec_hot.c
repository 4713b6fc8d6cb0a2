// SPDX-License-Identifier: MIT
/*
 * For the hot-stack case of record_bpf_more.sh: two call paths that differ
 * only in a caller's return address, with the stack after the first step
 * of a walk the same in both:
 *     main -> rec_hot_top1 -> rec_hot_mid -> rec_hot_leaf1
 *     main -> rec_hot_top2 -> rec_hot_mid -> rec_hot_leaf2
 * main calls top1 and top2 alternately from one call site (same sp), they
 * have the same frame, and rec_hot_mid calls its leaf through one call site
 * too: a sample in either leaf has the same pc, sp and fp after the leaf's
 * step. The bpf backend's hot stack (the frames above that step, kept per
 * task) must tell the two apart by the stack word it re-reads (mid's
 * return address); a leaf1 sample under top2, or leaf2 under top1, is a
 * wrong stack. Runs SECONDS (argv[1]) of its own CPU time, so that a
 * cpu-clock recording gets as many samples on a loaded machine as on an
 * idle one (it only takes longer); prints "rec_hot: N rounds".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rec_common.h"

#define REC_HOT_ITERS 150000L

typedef void (*rec_hot_fn)(long);

REC_FN void rec_hot_leaf1(long n)
{
	long x = rec_sink;

	for (long i = 0; i < n; i++)
		x = x * 2862933555777941757L + 3037000493L;
	rec_sink = x;
}

REC_FN void rec_hot_leaf2(long n)
{
	long x = rec_sink;

	for (long i = 0; i < n; i++)
		x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15L + i;
	rec_sink = x;
}

REC_FN void rec_hot_mid(rec_hot_fn leaf, long n)
{
	leaf(n);
	rec_sink++;
}

REC_FN void rec_hot_top1(long n)
{
	rec_hot_mid(rec_hot_leaf1, n);
	rec_sink++;
}

REC_FN void rec_hot_top2(long n)
{
	rec_hot_mid(rec_hot_leaf2, n);
	rec_sink++;
}

static double rec_hot_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static rec_hot_fn volatile rec_hot_tops[2] = { rec_hot_top1, rec_hot_top2 };

int main(int argc, char **argv)
{
	double end = rec_hot_now() + (argc > 1 ? atof(argv[1]) : 2.0);
	long rounds = 0;

	while (rec_hot_now() < end) {
		for (int i = 0; i < 16; i++)
			rec_hot_tops[(i ^ (i >> 2)) & 1](REC_HOT_ITERS);
		rounds++;
	}
	printf("rec_hot: %ld rounds\n", rounds);
	return 0;
}
