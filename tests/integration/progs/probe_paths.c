// SPDX-License-Identifier: MIT
/*
 * The oracle of tests/integration/probes_bpf.sh: calls a function of its
 * own, target(n), from three known call paths a known number of times and
 * prints its own counts and the sum of target's return values. Built
 * without frame pointers (-fomit-frame-pointer): the probe's stacks come
 * from the unwind tables.
 *
 *   probe_paths paths A B C   path_a calls target A times, path_b B, path_c C;
 *                             prints "path_a A", ..., "sum S" (S: the sum of
 *                             target's return values)
 *   probe_paths spin SECONDS  calls target from path_spin for SECONDS;
 *                             prints "calls N"
 *   probe_paths maps N        calls target N times, then prints "uprobes 1"
 *                             if its mappings have the [uprobes] page (the
 *                             kernel maps it at a process's first uprobe
 *                             hit that single-steps), else "uprobes 0"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile int sink;

/* Returns a value that differs per call, so that a wrong return value
 * (another register than rax) shows in the sum. */
__attribute__((noinline, noclone)) int target(int n)
{
	sink += n;
	return n * 7 + 3;
}

static long long sum;

__attribute__((noinline, noclone)) void path_a(int count)
{
	for (int i = 0; i < count; i++)
		sum += target(i);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline, noclone)) void path_b(int count)
{
	for (int i = 0; i < count; i++)
		sum += target(i + 1000);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) static void path_c_inner(int count)
{
	for (int i = 0; i < count; i++)
		sum += target(-i);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) void path_c(int count)
{
	path_c_inner(count);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) long long path_spin(double seconds)
{
	struct timespec t0, t;
	long long n = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (int i = 0; i < 1000; i++, n++)
			sum += target(i);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	return n;
}

static int has_uprobes_page(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[uprobes]"))
			found = 1;
	if (f)
		fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "paths")) {
		int a = atoi(argv[2]), b = atoi(argv[3]), c = atoi(argv[4]);

		path_a(a);
		path_b(b);
		path_c(c);
		printf("path_a %d\npath_b %d\npath_c %d\nsum %lld\n", a, b, c, sum);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "spin")) {
		printf("calls %lld\n", path_spin(atof(argv[2])));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "maps")) {
		int n = atoi(argv[2]);

		for (int i = 0; i < n; i++)
			sum += target(i);
		printf("uprobes %d\n", has_uprobes_page());
		return 0;
	}
	fprintf(stderr, "usage: probe_paths paths A B C | spin SECONDS | maps N\n");
	return 2;
}
