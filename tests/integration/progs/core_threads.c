// SPDX-License-Identifier: MIT
/*
 * Known stacks for core dumps (snapshot_core.sh). Four threads named
 * core-t0..core-t3; thread i runs
 *     core_thr_start -> core_level (i + 1 times, recursive) -> core_block -> pause()
 * and the main thread waits in
 *     main -> core_main_wait -> pthread_join
 * once it has printed "ready". With the argument "segv" or "abort", main
 * instead crashes in
 *     main -> core_crash_outer -> core_crash_inner -> (SIGSEGV | abort())
 * after the threads are blocked, leaving a core of the same shape.
 * "Blocked" is the kernel's word: main waits (at most 30 s) until each
 * thread's /proc/self/task/TID/syscall says pause (34), not a fixed time,
 * which a loaded machine may not give a thread to get there.
 * Every function is noinline and followed by a volatile write, so no call
 * becomes a tail call and each caller's frame stays on the stack.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NTHREADS 4
#define CORE_FN __attribute__((noinline, noipa))

volatile int core_sink;
static pthread_barrier_t core_barrier;
static pid_t core_tids[NTHREADS];

CORE_FN void core_block(void)
{
	for (;;)
		pause();
}

CORE_FN void core_level(int n)
{
	if (n > 1)
		core_level(n - 1);
	else
		core_block();
	core_sink++;
}

CORE_FN void *core_thr_start(void *arg)
{
	int i = (int)(long)arg;
	char name[16];

	snprintf(name, sizeof(name), "core-t%d", i);
	pthread_setname_np(pthread_self(), name);
	core_tids[i] = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&core_barrier);
	core_level(i + 1);
	core_sink++;
	return NULL;
}

/* Until every thread is in pause() (system call 34), at most 30 s. */
static void core_wait_paused(void)
{
	for (int tries = 0; tries < 30000; tries++) {
		int n = 0;

		for (int i = 0; i < NTHREADS; i++) {
			char path[64], buf[32] = "";
			FILE *f;

			snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)core_tids[i]);
			f = fopen(path, "re");
			if (f) {
				if (fgets(buf, sizeof(buf), f) && !strncmp(buf, "34 ", 3))
					n++;
				fclose(f);
			}
		}
		if (n == NTHREADS)
			return;
		usleep(1000);
	}
	fprintf(stderr, "core_threads: the threads did not all get into pause() in 30 s\n");
}

CORE_FN void core_main_wait(pthread_t t)
{
	pthread_join(t, NULL);
	core_sink++;
}

CORE_FN void core_crash_inner(int how_abort)
{
	if (how_abort)
		abort();
	*(volatile int *)(long)core_sink = 1; /* core_sink is 0: SIGSEGV */
	core_sink++;
}

CORE_FN void core_crash_outer(int how_abort)
{
	core_crash_inner(how_abort);
	core_sink++;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];

	pthread_barrier_init(&core_barrier, NULL, NTHREADS + 1);
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, core_thr_start, (void *)i))
			return 1;
	pthread_barrier_wait(&core_barrier);
	/* the threads go on into pause(): wait until each is there */
	core_wait_paused();
	if (argc > 1) {
		core_crash_outer(!strcmp(argv[1], "abort"));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	core_main_wait(t[0]);
	core_sink++;
	return 0;
}
