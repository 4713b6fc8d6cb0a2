// SPDX-License-Identifier: MIT
/*
 * Known call tree for tests/integration/report_pprof.sh, built -O2 -g:
 *   cpu:     main -> run_a -> run_b -> (inl_mid -> inl_leaf, always_inline) burning CPU
 *   futex:   main -> run_a -> run_b -> wake (FUTEX_WAKE syscalls: tracepoint events)
 *   threads: main starts 3 named threads ("pp-worker-N") that block in
 *            pthread_cond_wait; prints "ready" once all three are inside it
 *            (each counted itself under the mutex, which it lets go of
 *            only in pthread_cond_wait) and sleeps in pause (snapshot
 *            target; the test still waits for every thread's futex wait)
 * noinline keeps run_a/run_b/wake real frames; the always_inline pair puts
 * the CPU samples inside inlined code (several lines of one location).
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

volatile unsigned long sink;
static int fw;

static inline __attribute__((always_inline)) unsigned long inl_leaf(unsigned long i)
{
	return i * 2654435761u ^ (i >> 3);
}

static inline __attribute__((always_inline)) void inl_mid(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += inl_leaf(i);
}

__attribute__((noinline)) void wake(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		syscall(SYS_futex, &fw, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
}

__attribute__((noinline)) void run_b(int futex, unsigned long n)
{
	if (futex)
		wake(n);
	else
		inl_mid(n);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void run_a(int futex, unsigned long n)
{
	run_b(futex, n);
	__asm__ volatile("" ::: "memory");
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int waiting;

static void *worker(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "pp-worker-%d", (int)(long)arg);
	pthread_setname_np(pthread_self(), name);
	pthread_mutex_lock(&mu);
	waiting++;
	for (;;)
		pthread_cond_wait(&cv, &mu);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "cpu";

	if (!strcmp(mode, "threads")) {
		pthread_t t[3];
		int n = 0;

		for (long i = 0; i < 3; i++)
			pthread_create(&t[i], NULL, worker, (void *)i);
		while (n < 3) {
			usleep(1000);
			pthread_mutex_lock(&mu);
			n = waiting;
			pthread_mutex_unlock(&mu);
		}
		printf("ready\n");
		fflush(stdout);
		pause();
		return 0;
	}
	run_a(!strcmp(mode, "futex"), argc > 2 ? strtoul(argv[2], NULL, 0) : 400000000UL);
	return (int)(sink & 0);
}
