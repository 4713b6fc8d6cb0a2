// SPDX-License-Identifier: MIT
/*
 * Threads that move between CPUs all the time: rec_migrate MS runs rounds
 * of 4 new threads for MS milliseconds in all; each thread sets its CPU
 * affinity to the first, then the second allowed CPU, and back, for 40 ms
 * of wall time. A sample taken in the kernel during such a call (or
 * during a new thread's start) is walked on the way back to user space,
 * on the CPU the thread was moved to: what record_cookies checks (every
 * entry's cookie its own). Exits 2 with one CPU allowed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NTHREADS 4
#define THREAD_MS 40.0

static int cpus[2];

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__attribute__((noinline)) static void mig_move(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

static void *mig_thread(void *arg)
{
	long k = (long)arg;
	double end = now_ms() + THREAD_MS;

	for (unsigned long n = 0; now_ms() < end; n++)
		mig_move(cpus[(n + k) & 1]);
	return NULL;
}

int main(int argc, char **argv)
{
	double end = now_ms() + (argc > 1 ? atof(argv[1]) : 1000);
	pthread_t t[NTHREADS];
	cpu_set_t s;
	int j = 0;

	sched_getaffinity(0, sizeof(s), &s);
	for (int i = 0; i < CPU_SETSIZE && j < 2; i++)
		if (CPU_ISSET(i, &s))
			cpus[j++] = i;
	if (j < 2) {
		fprintf(stderr, "rec_migrate: one CPU allowed\n");
		return 2;
	}
	while (now_ms() < end) {
		for (long i = 0; i < NTHREADS; i++)
			if (pthread_create(&t[i], NULL, mig_thread, (void *)i))
				return 1;
		for (int i = 0; i < NTHREADS; i++)
			pthread_join(t[i], NULL);
	}
	return 0;
}
