// SPDX-License-Identifier: MIT
/*
 * snap_counters FILE NTHREADS: the main thread and NTHREADS others each
 * count in their own 8-byte slot of FILE (mapped shared), one step per
 * millisecond. A test reads FILE twice: a slot that did not grow is a
 * thread that is not running (left stopped). Prints "ready" when every
 * thread has counted at least once.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static _Atomic uint64_t *slots;

static void count(long i)
{
	const struct timespec ms = { 0, 1000000 };

	for (;;) {
		atomic_fetch_add_explicit(&slots[i], 1, memory_order_relaxed);
		nanosleep(&ms, NULL);
	}
}

static void *thread_main(void *arg)
{
	count((long)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc == 3 ? atol(argv[2]) : 0;
	pthread_t t;
	int fd;

	if (n < 1 || n > 1000) {
		fprintf(stderr, "usage: snap_counters FILE NTHREADS(1..1000)\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, (n + 1) * 8)) {
		perror(argv[1]);
		return 1;
	}
	slots = mmap(NULL, (n + 1) * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (slots == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (long i = 1; i <= n; i++)
		if (pthread_create(&t, NULL, thread_main, (void *)i)) {
			perror("pthread_create");
			return 1;
		}
	for (int ready = 0; !ready;) {
		usleep(1000);
		ready = 1;
		for (long i = 1; i <= n; i++)
			if (!atomic_load(&slots[i]))
				ready = 0;
	}
	printf("ready\n");
	fflush(stdout);
	count(0);
}
