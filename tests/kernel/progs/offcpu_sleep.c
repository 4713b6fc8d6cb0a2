// SPDX-License-Identifier: MIT
/*
 * make check-kernel: a thread that blocks in a known function for a known
 * time. offcpu_nap() sleeps 20 ms, N times (argv[1]); the program prints
 * the total time its calls took by its own clock ("napped NS"), of which
 * the off-CPU intervals are a part: each interval lies inside one call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

__attribute__((noinline)) void offcpu_nap(void)
{
	struct timespec ts = { 0, 20000000 };

	nanosleep(&ts, NULL);
	__asm__ volatile("" ::: "memory"); /* not a tail call: offcpu_nap stays on the stack */
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	unsigned long long total = 0;

	for (int i = 0; i < n; i++) {
		unsigned long long t0 = now_ns();

		offcpu_nap();
		total += now_ns() - t0;
	}
	printf("napped %llu\n", total);
	return 0;
}
