// SPDX-License-Identifier: MIT
/*
 * A function with known callers, for tests/integration/probes_more.sh (the
 * mount-namespace, stripped-binary, SIGKILL and gdb cases). Every function
 * is global so that a -rdynamic build names them in .dynsym (the stripped
 * case) and noinline so that each is a frame of its own.
 *
 *   pm_beat -> pm_target          before GOFILE exists, every 5 ms: proves
 *                                 the probe is attached before the counted
 *                                 calls start
 *   pm_path_a -> pm_mid -> pm_target   N times
 *   pm_path_b -> pm_target             (N + 1) / 2 times
 *
 * usage: probes_more_target LOG N [GOFILE [STOPFILE]]
 *   LOG gets "pid PID" first, then "a A", "b B", "beat K" (calls made) at
 *   the end. With STOPFILE and N = 0 the counted loop runs (one pm_path_a a
 *   millisecond) until STOPFILE exists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile long pm_sink;
static long calls_a, calls_b, beats;

__attribute__((noinline)) long pm_target(long v)
{
	pm_sink += v;
	return pm_sink;
}

__attribute__((noinline)) long pm_mid(long v)
{
	long r = pm_target(v + 1);

	__asm__ volatile("" ::: "memory"); /* no tail call: each caller stays a frame */
	return r;
}

__attribute__((noinline)) long pm_path_a(long i)
{
	long r = pm_mid(i);

	__asm__ volatile("" ::: "memory");
	calls_a++;
	return r;
}

__attribute__((noinline)) long pm_path_b(long i)
{
	long r = pm_target(i * 3);

	__asm__ volatile("" ::: "memory");
	calls_b++;
	return r;
}

__attribute__((noinline)) long pm_beat(void)
{
	long r = pm_target(-1);

	__asm__ volatile("" ::: "memory");
	beats++;
	return r;
}

static void nap(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	FILE *f;
	long n;

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: probes_more_target LOG N [GOFILE [STOPFILE]]\n");
		return 2;
	}
	f = fopen(argv[1], "w");
	n = atol(argv[2]);
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	fprintf(f, "pid %d\n", (int)getpid());
	fflush(f);
	if (argc >= 4)
		for (int i = 0; i < 12000 && access(argv[3], F_OK); i++) {
			pm_beat();
			nap(5 * 1000 * 1000);
		}
	if (argc == 5 && n == 0) {
		for (long i = 0; access(argv[4], F_OK); i++) {
			pm_path_a(i);
			nap(1000 * 1000);
		}
	}
	for (long i = 0; i < n; i++) {
		pm_path_a(i);
		if (i % 2 == 0)
			pm_path_b(i);
		/* a stack-copying recorder's ring holds a few hundred hits: let its
		 * reader drain it (what is still lost is counted, and allowed) */
		if (i % 64 == 63)
			nap(2 * 1000 * 1000);
	}
	fprintf(f, "a %ld\nb %ld\nbeat %ld\n", calls_a, calls_b, beats);
	return fclose(f) ? 1 : 0;
}
