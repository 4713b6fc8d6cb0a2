// SPDX-License-Identifier: MIT
/*
 * A CPU-bound program for the cpu-clock cases of record_bpf_more.sh: for
 * SECONDS seconds (argv[1]) of the main thread's CPU time (a cpu-clock
 * recording gets as many samples of it on a loaded machine as on an idle
 * one, it only takes longer) it repeats three chains, each ending in a leaf
 * that computes without calling anything:
 *     main -> rec_cpu_run -> rec_cpu_a -> rec_cpu_a_leaf
 *     main -> rec_cpu_run -> rec_cpu_b -> rec_cpu_b_mid -> rec_cpu_b_leaf
 *     main -> rec_cpu_run -> rec_cpu_lib_outer -> rec_cpu_lib_leaf  (librec_cpu.so)
 * so that a clock sample whose leaf is one of these functions has one of
 * these chains (or a prefix of one: a sample in a caller's own code).
 * With argv[2] = "churn", a thread named rec-cpu-churn meanwhile maps and
 * unmaps anonymous memory in a loop (rec_cpu_churn), which moves the mm's
 * mmap sequence count all the time: the bpf backend's per-task VMA cache
 * is invalidated at every change, and the walks it sends to task context
 * meet the mmap lock taken at times (mprotect of a populated area). The leaves get roughly a third of the
 * time each; the time is read (clock_gettime) between rounds only.
 * Prints "rec_cpu: N rounds" at the end.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "rec_common.h"

#define REC_CPU_ITERS 200000L

void rec_cpu_lib_outer(long n);

static volatile int rec_cpu_done;

REC_FN void rec_cpu_a_leaf(long n)
{
	long x = rec_sink;

	for (long i = 0; i < n; i++)
		x = x * 2862933555777941757L + 3037000493L;
	rec_sink = x;
}

REC_FN void rec_cpu_a(long n)
{
	rec_cpu_a_leaf(n);
	rec_sink++;
}

REC_FN void rec_cpu_b_leaf(long n)
{
	long x = rec_sink;

	for (long i = 0; i < n; i++)
		x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15L + i;
	rec_sink = x;
}

REC_FN void rec_cpu_b_mid(long n)
{
	rec_cpu_b_leaf(n);
	rec_sink++;
}

REC_FN void rec_cpu_b(long n)
{
	rec_cpu_b_mid(n);
	rec_sink++;
}

static double rec_cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

REC_FN long rec_cpu_run(double seconds)
{
	double end = rec_cpu_now() + seconds;
	long rounds = 0;

	while (rec_cpu_now() < end) {
		rec_cpu_a(REC_CPU_ITERS);
		rec_cpu_b(REC_CPU_ITERS);
		rec_cpu_lib_outer(REC_CPU_ITERS);
		rounds++;
	}
	return rounds;
}

/* map, touch and unmap one anonymous page at a time until the end; and
 * between two, flip the protection of a 4 MiB populated area, which holds
 * the mmap lock for writing a while (the page table is walked under it):
 * a walk in task context then finds the lock taken now and then */
REC_FN void *rec_cpu_churn(void *arg)
{
	size_t big = 4 << 20;
	char *q = mmap(NULL, big, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	long *maps = arg;
	int k = 0;

	pthread_setname_np(pthread_self(), "rec-cpu-churn");
	while (!rec_cpu_done) {
		if (q != MAP_FAILED)
			mprotect(q, big, (k++ & 1) ? PROT_READ : PROT_READ | PROT_WRITE);
		char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			break;
		p[0] = 1;
		munmap(p, 4096);
		(*maps)++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	int churn = argc > 2 && !strcmp(argv[2], "churn");
	pthread_t t;
	long rounds, maps = 0;

	if (churn && pthread_create(&t, NULL, rec_cpu_churn, &maps)) {
		perror("pthread_create");
		return 1;
	}
	rounds = rec_cpu_run(seconds);
	rec_cpu_done = 1;
	if (churn)
		pthread_join(t, NULL);
	printf("rec_cpu: %ld rounds", rounds);
	if (churn)
		printf(", %ld mmap/munmap pairs", maps);
	printf("\n");
	return 0;
}
