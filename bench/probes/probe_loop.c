// SPDX-License-Identifier: MIT
/*
 * The probed-function workload of bench/probes/run.sh: main -> loop_a ->
 * loop_b -> loop_c -> bench_probed, N times, built without frame pointers.
 * Prints "RATE calls_per_second", "NS total_ns" (CLOCK_MONOTONIC around
 * the loop alone) and "CALLS N". With BENCH_STOP=1 it stops itself (SIGSTOP) after
 * printing, so that a tool reading its maps at exit (bpftrace symbolizing
 * ustack) finds the process.
 * usage: probe_loop N
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile long bench_sink;

__attribute__((noinline)) long bench_probed(long v)
{
	bench_sink += v;
	return bench_sink;
}

#define CALLER(name, callee)                                                  \
	__attribute__((noinline)) long name(long v)                           \
	{                                                                     \
		long r = callee(v + 1);                                       \
		__asm__ volatile("" ::: "memory"); /* no tail call */         \
		return r;                                                     \
	}
CALLER(loop_c, bench_probed)
CALLER(loop_b, loop_c)
CALLER(loop_a, loop_b)

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	double ns;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		loop_a(i);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	printf("RATE %.0f\nNS %.0f\nCALLS %ld\n", n / ns * 1e9, ns, n);
	fflush(stdout);
	if (getenv("BENCH_STOP"))
		raise(SIGSTOP);
	return 0;
}
