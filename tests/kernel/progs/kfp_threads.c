// SPDX-License-Identifier: MIT
/*
 * The program of the real-kernel tests (tests/kernel/guest.sh), built
 * twice: with frame pointers (kfp_threads_fp) and without
 * (kfp_threads_nofp). Thread i (i = 0..3, named kfp-thr-i) runs
 *     kfp_start -> kfp_work -> kfp_leaf -> getppid x 4(i+1)
 * and main, while they run,
 *     main -> kfp_main_leaf -> getppid x 2,
 * each pass; argv[1] passes (default 1). The system call is made inline in
 * the leaf (no libc wrapper), so the interrupted user pc is in our code:
 * with frame pointers (and a call before the system call, so that gcc
 * sets up the frame) the kernel's frame-pointer walk is right from the
 * first frame up to libc's start_thread / __libc_start_call_main (built
 * without them).
 * argv[2] = milliseconds of CPU work per thread after the calls, in
 *     kfp_start -> kfp_work -> kfp_spin (for cpu-clock; default 0).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>

#define KFP_FN __attribute__((noipa, used))
#define NTHREADS 4

static volatile long kfp_sink;
static pthread_barrier_t kfp_barrier;
static int kfp_passes = 1, kfp_spin_ms;

static inline __attribute__((always_inline)) void kfp_getppid(int n)
{
	for (int i = 0; i < n; i++) {
		long ret;

		__asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_getppid) : "rcx", "r11", "memory");
		kfp_sink += ret;
	}
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* called first by the leaves: a function that calls is no leaf, so gcc
 * (12 ignores -mno-omit-leaf-frame-pointer here) gives it a frame */
KFP_FN void kfp_note(void)
{
	kfp_sink++;
}

KFP_FN void kfp_leaf(int n)
{
	kfp_note();
	kfp_getppid(n);
	kfp_sink++;
}

KFP_FN void kfp_spin(void)
{
	double end = now_ms() + kfp_spin_ms;

	while (now_ms() < end)
		for (int i = 0; i < 10000; i++)
			kfp_sink += i;
	kfp_sink++;
}

KFP_FN void kfp_work(int i)
{
	for (int p = 0; p < kfp_passes; p++)
		kfp_leaf(4 * (i + 1));
	if (kfp_spin_ms)
		kfp_spin();
	kfp_sink++;
}

KFP_FN void *kfp_start(void *arg)
{
	int i = (int)(long)arg;
	char name[16];

	snprintf(name, sizeof(name), "kfp-thr-%d", i);
	pthread_setname_np(pthread_self(), name);
	pthread_barrier_wait(&kfp_barrier);
	kfp_work(i);
	kfp_sink++;
	return NULL;
}

KFP_FN void kfp_main_leaf(int n)
{
	kfp_note();
	kfp_getppid(n);
	kfp_sink++;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];

	if (argc > 1)
		kfp_passes = atoi(argv[1]);
	if (argc > 2)
		kfp_spin_ms = atoi(argv[2]);
	pthread_barrier_init(&kfp_barrier, NULL, NTHREADS + 1);
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, kfp_start, (void *)i)) {
			perror("pthread_create");
			return 1;
		}
	pthread_barrier_wait(&kfp_barrier);
	for (int p = 0; p < kfp_passes; p++)
		kfp_main_leaf(2);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	printf("kfp_threads: %d threads, %d passes\n", NTHREADS, kfp_passes);
	return 0;
}
