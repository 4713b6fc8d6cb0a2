// SPDX-License-Identifier: MIT
/*
 * The shared library of rec_cpu.c (librec_cpu.so, record_bpf_more.sh):
 * rec_cpu_lib_outer -> rec_cpu_lib_leaf, the leaf a fixed amount of
 * arithmetic with no calls, so that clock samples land in the library.
 */
#include "rec_common.h"

REC_FN void rec_cpu_lib_leaf(long n)
{
	long x = rec_sink;

	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005L + 1442695040888963407L;
	rec_sink = x;
}

REC_FN void rec_cpu_lib_outer(long n)
{
	rec_cpu_lib_leaf(n);
	rec_sink++;
}
