// SPDX-License-Identifier: MIT
/*
 * USDT probes with known arguments, for tests/integration/probes_more.sh.
 *
 *   ustest:args   STAP_PROBE4(int neg, int64_t big, char c, uintptr_t counter)
 *                 fired from two call paths (path_one, path_two -> fire_args),
 *                 each N times; the four arguments differ per call so that
 *                 a wrong size, sign extension or order shows
 *   ustest:sem    STAP_PROBE1 guarded by its semaphore: the argument
 *                 (sem_value(), which counts its own calls) is computed only
 *                 while the semaphore is non-zero, i.e. while a tracer has
 *                 attached to it; the program logs every such firing, so
 *                 the test proves the recorder incremented the semaphore
 *
 * usage: usdt_args LOG N [GOFILE]
 *   writes "A PATH neg big c counter" per ustest:args firing and
 *   "S value" per ustest:sem firing into LOG (signed decimal, as the probe's
 *   argument spec has it), then "END sem_calls" at exit. With GOFILE, it
 *   first waits (up to 60 s) until GOFILE exists.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* the semaphores STAP_PROBE reads as <provider>_<name>_semaphore (with
 * _SDT_HAS_SEMAPHORES every probe of this file has one; only ustest:sem
 * guards work with it) */
unsigned short ustest_args_semaphore __attribute__((section(".probes"), used));
unsigned short ustest_sem_semaphore __attribute__((section(".probes"), used));

static FILE *logf;
static uintptr_t counter = 0x100000000ull; /* pointer-sized, above 32 bits */
static unsigned sem_calls;

__attribute__((noinline)) static long sem_value(int i)
{
	sem_calls++;
	return -1000000007L * (i + 1);
}

__attribute__((noinline)) void fire_args(const char *path, int i, int scale)
{
	volatile int vneg = -(i + 1) * scale;
	volatile int64_t vbig = (int64_t)0x123456789ll * (i + 1) * (scale == 1 ? 1 : -1);
	volatile char vc = (char)((i % 2) ? -(i % 100) - 1 : (i % 100) + 1);
	int neg = vneg;
	int64_t big = vbig;
	char c = vc;
	uintptr_t cnt = ++counter;

	STAP_PROBE4(ustest, args, neg, big, c, cnt);
	fprintf(logf, "A %s %d %lld %d %llu\n", path, neg, (long long)big, (int)c,
		(unsigned long long)cnt);
	if (ustest_sem_semaphore) {
		long v = sem_value(i);

		STAP_PROBE1(ustest, sem, v);
		fprintf(logf, "S %ld\n", v);
	}
}

__attribute__((noinline)) void path_one(int i)
{
	fire_args("one", i, 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call: path_one stays on the stack */
}

__attribute__((noinline)) void path_two(int i)
{
	fire_args("two", i, 1000);
	__asm__ volatile("" ::: "memory");
}

/* A recorder copying 8 KiB of stack per hit (the copy backend) fills its
 * ring in a few hundred hits of a tight loop: a pause now and then lets its
 * reader drain it (losses that still happen are counted, and the test
 * allows exactly those) */
static void pause_for_reader(void)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static void wait_go(const char *go)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	for (int i = 0; i < 6000 && access(go, F_OK); i++)
		nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	int n;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: usdt_args LOG N [GOFILE]\n");
		return 2;
	}
	logf = fopen(argv[1], "w");
	n = atoi(argv[2]);
	if (!logf || n <= 0) {
		perror(argv[1]);
		return 1;
	}
	if (argc == 4)
		wait_go(argv[3]);
	for (int i = 0; i < n; i++) {
		path_one(i);
		if (i % 3 == 0) /* a different count per path */
			path_two(i);
		if (i % 64 == 63)
			pause_for_reader();
	}
	fprintf(logf, "END %u\n", sem_calls);
	return fclose(logf) ? 1 : 0;
}
