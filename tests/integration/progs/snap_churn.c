// SPDX-License-Identifier: MIT
/*
 * snap_churn: threads that come and go while a snapshot runs. Four
 * long-lived threads sleep; the main thread starts short-lived detached
 * threads without pause (each lives 0-2 ms), keeping about 16 of them
 * alive. A snapshot must report the main and long-lived threads and skip
 * the ones that vanished between the listing and the stop.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static atomic_int alive;

static void *long_lived(void *arg)
{
	for (;;)
		pause();
	return arg;
}

static void *short_lived(void *arg)
{
	struct timespec ts = { 0, ((long)arg % 3) * 1000000l };

	nanosleep(&ts, NULL);
	atomic_fetch_sub(&alive, 1);
	return NULL;
}

int main(void)
{
	pthread_attr_t attr;
	pthread_t t;

	for (int i = 0; i < 4; i++)
		if (pthread_create(&t, NULL, long_lived, NULL)) {
			perror("pthread_create");
			return 1;
		}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	printf("ready\n");
	fflush(stdout);
	for (long i = 0;; i++) {
		if (atomic_load(&alive) >= 16) {
			usleep(100);
			continue;
		}
		atomic_fetch_add(&alive, 1);
		if (pthread_create(&t, &attr, short_lived, (void *)i))
			atomic_fetch_sub(&alive, 1);
	}
}
