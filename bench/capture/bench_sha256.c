// SPDX-License-Identifier: MIT
/*
 * SHA-256 as a recording's capture runs it (src/bidcache/sha256.c): ns per
 * byte of plain C and of the CPU's SHA extensions, in alternating rounds
 * over one buffer (page-cache reads are left out: the file is in memory),
 * median, min and max of the rounds. The thread's CPU time, not wall time:
 * on a loaded machine the wall time counts other jobs' slices too. bench/capture/run.sh runs it.
 *   bench_sha256 [MiB] [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bidcache/bidcache.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64, n = mib << 20;
	int rounds = argc > 2 ? atoi(argv[2]) : 7, hw = ustack_sha256_use_hw(1);
	double t[2][64];
	uint8_t h[2][USTACK_SHA256_SIZE];
	unsigned char *buf = malloc(n);

	if (!buf || rounds < 1 || rounds > 64 || !n)
		return 2;
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)(i * 2654435761u >> 13);
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k <= hw; k++) {
			double t0;

			ustack_sha256_use_hw(k);
			t0 = now_ns();
			ustack_sha256(buf, n, h[k]);
			t[k][r] = (now_ns() - t0) / (double)n;
		}
	if (hw && memcmp(h[0], h[1], sizeof(h[0]))) {
		fprintf(stderr, "bench_sha256: the two implementations differ\n");
		return 1;
	}
	printf("%-9s %10s %8s %8s  (%zu MiB, %d rounds)\n", "sha256", "ns/byte", "min", "max", mib,
	       rounds);
	for (int k = 0; k <= hw; k++) {
		qsort(t[k], (size_t)rounds, sizeof(double), cmp);
		printf("%-9s %10.3f %8.3f %8.3f\n", k ? "sha-ni" : "plain-c", t[k][rounds / 2], t[k][0],
		       t[k][rounds - 1]);
	}
	if (!hw)
		printf("sha-ni    (this CPU has no SHA extensions)\n");
	free(buf);
	return 0;
}
