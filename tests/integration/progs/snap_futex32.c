// SPDX-License-Identifier: MIT
/*
 * Target of the snapshot tests and bench: 32 threads blocked in futex
 * waits, each below a call chain of its own depth, so that every thread's
 * stack is different. Built with plain `gcc -O2` (no frame pointers, no
 * SFrame): the unwinder must use the DWARF CFI of the program and libc.
 *
 * Wait kinds, by thread number modulo 4: a held mutex, a condition variable
 * never signalled, a raw FUTEX_WAIT on a word that never changes, a
 * semaphore at zero. The main thread joins thread 0. Prints "ready" once
 * every thread is about to block. An argument sets another number of
 * threads (1..1000): the snapshot test uses 300, more than a snapshot
 * names at once.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NR_THREADS 32
#define MAX_THREADS 1000

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static sem_t zero;
static int futex_word;
static atomic_int started;
static atomic_int quit; /* never set: keeps the loop from being noreturn */

static void __attribute__((noinline)) block_forever(long kind)
{
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&quit)) {
		switch (kind) {
		case 0:
			pthread_mutex_lock(&held);
			pthread_mutex_unlock(&held);
			break;
		case 1:
			pthread_mutex_lock(&cv_lock);
			pthread_cond_wait(&never, &cv_lock);
			pthread_mutex_unlock(&cv_lock);
			break;
		case 2:
			syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
			break;
		default:
			sem_wait(&zero);
			break;
		}
	}
}

/* A different depth per thread; the volatile sum keeps the calls real. */
static volatile long sink;
static void __attribute__((noinline)) level(long depth, long kind)
{
	if (depth > 0)
		level(depth - 1, kind);
	else
		block_forever(kind);
	sink += depth;
}

static void *thread_main(void *arg)
{
	long i = (long)arg;

	level(i % 7, i % 4);
	return NULL;
}

int main(int argc, char **argv)
{
	static pthread_t t[MAX_THREADS];
	long nr = argc > 1 ? atol(argv[1]) : NR_THREADS;

	if (nr < 1 || nr > MAX_THREADS) {
		fprintf(stderr, "snap_futex32: 1..%d threads\n", MAX_THREADS);
		return 2;
	}
	sem_init(&zero, 0, 0);
	pthread_mutex_lock(&held);
	for (long i = 0; i < nr; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)i)) {
			perror("pthread_create");
			return 1;
		}
	while (atomic_load(&started) < nr)
		usleep(1000);
	printf("ready\n");
	fflush(stdout);
	pthread_join(t[0], NULL);
	return 0;
}
