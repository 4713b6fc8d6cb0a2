// SPDX-License-Identifier: MIT
/*
 * Several threads making the marker at the same time: thread i (named
 * rec-thr-i, i = 0..3) runs
 *     rec_thr_start -> rec_thr_work -> rec_thr_leaf -> getppid() x 4(i+1)
 * and the main thread, while they run,
 *     main -> rec_thr_main_leaf -> getppid() x 2.
 * A barrier lets every thread start its calls together, so their events
 * interleave; the counts per thread name are fixed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>

#include "rec_common.h"

#define NTHREADS 4

static pthread_barrier_t rec_thr_barrier;

REC_FN void rec_thr_leaf(int n)
{
	rec_marker(n);
	rec_sink++;
}

REC_FN void rec_thr_work(int i)
{
	rec_thr_leaf(4 * (i + 1));
	rec_sink++;
}

REC_FN void *rec_thr_start(void *arg)
{
	int i = (int)(long)arg;
	char name[16];

	snprintf(name, sizeof(name), "rec-thr-%d", i);
	pthread_setname_np(pthread_self(), name);
	pthread_barrier_wait(&rec_thr_barrier);
	rec_thr_work(i);
	rec_sink++;
	return NULL;
}

REC_FN void rec_thr_main_leaf(int n)
{
	rec_marker(n);
	rec_sink++;
}

int main(void)
{
	pthread_t t[NTHREADS];

	rec_warm();
	pthread_barrier_init(&rec_thr_barrier, NULL, NTHREADS + 1);
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, rec_thr_start, (void *)i)) {
			perror("pthread_create");
			return 1;
		}
	pthread_barrier_wait(&rec_thr_barrier);
	rec_thr_main_leaf(2);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	printf("rec_threads: %d threads\n", NTHREADS);
	return 0;
}
