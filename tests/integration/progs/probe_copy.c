// SPDX-License-Identifier: MIT
/*
 * The copy backend's probe target (probes_copy.sh): pc_leaf() reached
 * through two paths, path_a() and path_b(), whose frames are the same
 * size and that call pc_mid() from its one call site, so that at
 * pc_leaf's entry the registers and the word at sp are the same on both
 * paths: only the deeper stack tells them apart. A hit joined to the
 * previous one (a probe sample taken for a kernel-mode one) gets the
 * other path's stack. pc_leaf() returns 7x + 1 and fires a USDT probe
 * pc:leaf with x, -x - 1 (signed 4 bytes) and a short kept in memory on
 * the stack (a memory operand); pc_redzone() fires pc:redzone with a
 * short below sp, in the red zone.
 * Prints its own figures: "a=N b=M retsum=S argsum=T".
 * usage: probe_copy CALLS [WAIT]   (WAIT: pause() after the calls)
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>
#include <time.h>
#include <unistd.h>

volatile long sink;

__attribute__((noinline)) void pc_keep(volatile short *p)
{
	sink += *p;
}

__attribute__((noinline)) long pc_leaf(long x)
{
	volatile short mem = (short)(x * 3 - 100);
	int neg = (int)(-x - 1);

	STAP_PROBE3(pc, leaf, x, neg, mem);
	pc_keep(&mem); /* a frame: mem lies above sp, in the stack copy */
	return 7 * x + 1;
}

/* A leaf: its short lives in the red zone below sp, outside any stack
 * copy (perf's starts at sp): the probe's argument cannot be read. */
__attribute__((noinline)) void pc_redzone(long x)
{
	volatile short mem = (short)x;

	STAP_PROBE1(pc, redzone, mem);
}

__attribute__((noinline)) long pc_mid(long x)
{
	long r = pc_leaf(x);

	sink += r;
	return r;
}

__attribute__((noinline)) long path_a(long x)
{
	long r = pc_mid(x);

	sink += r;
	return r;
}

__attribute__((noinline)) long path_b(long x)
{
	long r = pc_mid(x);

	sink -= r;
	return r;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10, a = 0, b = 0, retsum = 0, argsum = 0;
	/* paced: far below any perf_event_max_sample_rate per tick */
	struct timespec gap = { 0, 2000000 };

	for (long i = 0; i < n; i++) {
		if (i % 3 == 2) {
			retsum += path_b(i);
			b++;
		} else {
			retsum += path_a(i);
			a++;
		}
		argsum += i + (-i - 1) + (short)(i * 3 - 100);
		pc_redzone(i);
		nanosleep(&gap, NULL);
	}
	printf("a=%ld b=%ld retsum=%ld argsum=%ld\n", a, b, retsum, argsum);
	fflush(stdout);
	if (argc > 2)
		pause();
	return 0;
}
