// SPDX-License-Identifier: MIT
/*
 * Target of snapshot_blocked.sh: the threads a snapshot reads without a
 * stop (blocked in the kernel) next to those it must stop. Built with plain
 * `gcc -O2` (no frame pointers, no SFrame), except where said.
 *
 *   fp_block   blocked for good in read(2) on a pipe nobody writes, issued
 *              by an inline `syscall` in fp_read_forever(), which keeps a
 *              frame pointer: its CFA is rbp-based at the syscall, and rbp
 *              is one register /proc/PID/task/TID/syscall does not give. A
 *              snapshot must stop this thread after all.
 *   flip_a / flip_b (FLIPPERS of each)
 *              wake every 20-40 us and sleep again under one of two call
 *              chains, the next one each time (flip_x_1 -> flip_x_2 ->
 *              flip_x_3 -> nanosleep, x = a or b, "flip_a" starting with
 *              a): a thread read while blocked may run before its stack is
 *              read, and the snapshot must then notice and stop it, or it
 *              would mix the two chains.
 *   spinner    never blocks (spin_forever()): always running, so stopped.
 *   main       pthread_join, blocked for good.
 *
 * With the arguments "fp N": N fp_block threads and main, nothing else
 * (every thread but main needs a stop).
 *
 * Prints "ready" once every thread has started.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FLIPPERS 3

static atomic_int started;
static atomic_int quit; /* never set: keeps the loops from being noreturn */
static volatile long sink;
static int pipefd[2];

/* read(pipefd[0], buf, 1) by hand, under a frame pointer */
static long __attribute__((noinline, optimize("no-omit-frame-pointer")))
fp_read_forever(void)
{
	char buf[64];
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_read), "D"((long)pipefd[0]), "S"(buf), "d"(1L)
			 : "rcx", "r11", "memory");
	sink += buf[0];
	return ret;
}

static void *fp_block(void *arg)
{
	prctl(PR_SET_NAME, "fp_block");
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&quit))
		fp_read_forever();
	return arg;
}

static void nap(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

/* Two chains of three frames each; the locals and sink keep them real. */
#define CHAIN(x, ns)                                                          \
	static void __attribute__((noinline)) flip_##x##_3(long n)            \
	{                                                                     \
		nap(ns);                                                      \
		sink += n;                                                    \
	}                                                                     \
	static void __attribute__((noinline)) flip_##x##_2(long n)            \
	{                                                                     \
		volatile long pad[4] = { n, n, n, n };                        \
		flip_##x##_3(n + pad[1]);                                     \
		sink += pad[2];                                               \
	}                                                                     \
	static void __attribute__((noinline)) flip_##x##_1(long n)            \
	{                                                                     \
		volatile long pad[8] = { n };                                 \
		flip_##x##_2(n + pad[0]);                                     \
		sink += pad[3];                                               \
	}
CHAIN(a, 20000)
CHAIN(b, 40000)

static void *flipper(void *arg)
{
	long b = (long)arg;

	prctl(PR_SET_NAME, b ? "flip_b" : "flip_a");
	atomic_fetch_add(&started, 1);
	for (long n = 0; !atomic_load(&quit); n++) {
		if ((n + b) & 1)
			flip_b_1(n);
		else
			flip_a_1(n);
	}
	return arg;
}

static void __attribute__((noinline)) spin_forever(void)
{
	while (!atomic_load(&quit))
		sink++;
}

static void *spinner(void *arg)
{
	prctl(PR_SET_NAME, "spinner");
	atomic_fetch_add(&started, 1);
	spin_forever();
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t[64];
	int n = 0, nfp = argc == 3 && !strcmp(argv[1], "fp") ? atoi(argv[2]) : 0;

	if (pipe(pipefd) || nfp < 0 || nfp > 64)
		return 1;
	if (nfp) {
		while (n < nfp)
			pthread_create(&t[n++], NULL, fp_block, NULL);
	} else {
		pthread_create(&t[n++], NULL, fp_block, NULL);
		for (long i = 0; i < 2 * FLIPPERS; i++)
			pthread_create(&t[n++], NULL, flipper, (void *)(i & 1));
		pthread_create(&t[n++], NULL, spinner, NULL);
	}
	while (atomic_load(&started) < n)
		nap(1000000);
	printf("ready\n");
	fflush(stdout);
	pthread_join(t[0], NULL);
	return 0;
}
