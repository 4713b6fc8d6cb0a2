// SPDX-License-Identifier: MIT
/*
 * For the hot-loop case of record_bpf_more.sh: a loop that calls getppid()
 * N times (argv[1]) from one call site, 12 frames deep:
 *     main -> rec_loop_12 -> ... -> rec_loop_1 -> rec_loop_calls -> getppid
 * The loop's counter lives in a callee-saved register across the call
 * (rbx at -O2 with GCC 12), so each system call enters the kernel with
 * the same pc, sp and fp after the leaf's step but another rbx. The bpf
 * backend's hot stack (the frames above that step, kept per task) used to
 * key on rbx too and never matched here; rbx matters to a walk only
 * through an rbx-based CFA, which none of these frames has. Prints
 * "rec_hot_loop: N calls".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "rec_common.h"

REC_FN void rec_loop_calls(long n)
{
	for (long i = 0; i < n; i++)
		rec_sink += getppid();
}

#define REC_LOOP(k, next)                 \
	REC_FN void rec_loop_##k(long n)  \
	{                                 \
		next(n);                  \
		rec_sink++;               \
	}
REC_LOOP(1, rec_loop_calls)
REC_LOOP(2, rec_loop_1)
REC_LOOP(3, rec_loop_2)
REC_LOOP(4, rec_loop_3)
REC_LOOP(5, rec_loop_4)
REC_LOOP(6, rec_loop_5)
REC_LOOP(7, rec_loop_6)
REC_LOOP(8, rec_loop_7)
REC_LOOP(9, rec_loop_8)
REC_LOOP(10, rec_loop_9)
REC_LOOP(11, rec_loop_10)
REC_LOOP(12, rec_loop_11)

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;

	rec_warm();
	rec_loop_12(n);
	printf("rec_hot_loop: %ld calls\n", n);
	return 0;
}
