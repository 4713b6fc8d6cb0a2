// SPDX-License-Identifier: MIT
/*
 * The cost of one kept allocation under record --alloc (bench/probes/
 * alloc_cost.sh): N times malloc(64) and free, timed; prints "NS total"
 * and "CALLS N". Recorded at --alloc-mean 1 every allocation is kept: the
 * time per iteration is one kept allocation and its free (two hits).
 * usage: alloc_hit N
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		void *p = malloc(64);

		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("NS %lld\nCALLS %ld\n",
	       (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec), n);
	return 0;
}
