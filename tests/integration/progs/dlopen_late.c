// SPDX-License-Identifier: MIT
/*
 * Loads a library only when told to, for tests/integration/probes_more.sh:
 * the library is probed by its path before any process maps it, and its
 * probe must fire once the dlopen maps it.
 *
 * usage: dlopen_late LIB LOG N GOFILE
 *   writes "waiting PID" to LOG, waits (up to 60 s) until GOFILE exists,
 *   checks LIB is not mapped yet ("mapped-early" in LOG if it is), dlopens
 *   LIB and calls its late_work() N times through late_caller(), then
 *   writes "calls N".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef long (*late_fn)(long);

static int mapped(const char *lib)
{
	char line[4096];
	FILE *m = fopen("/proc/self/maps", "r");
	int found = 0;

	while (m && fgets(line, sizeof(line), m))
		found |= strstr(line, lib) != NULL;
	if (m)
		fclose(m);
	return found;
}

__attribute__((noinline)) long late_caller(late_fn fn, long i)
{
	long r = fn(i);

	__asm__ volatile("" ::: "memory"); /* no tail call */
	return r;
}

int main(int argc, char **argv)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	late_fn fn;
	void *h;
	FILE *f;
	long n;

	if (argc != 5) {
		fprintf(stderr, "usage: dlopen_late LIB LOG N GOFILE\n");
		return 2;
	}
	f = fopen(argv[2], "w");
	n = atol(argv[3]);
	if (!f)
		return 1;
	fprintf(f, "waiting %d\n", (int)getpid());
	fflush(f);
	for (int i = 0; i < 6000 && access(argv[4], F_OK); i++)
		nanosleep(&ts, NULL);
	if (mapped(argv[1]))
		fprintf(f, "mapped-early\n");
	h = dlopen(argv[1], RTLD_NOW);
	fn = h ? (late_fn)dlsym(h, "late_work") : NULL;
	if (!fn) {
		fprintf(f, "dlopen failed: %s\n", dlerror());
		return 1;
	}
	for (long i = 0; i < n; i++) {
		late_caller(fn, i);
		/* a stack-copying recorder's ring holds a few hundred hits: let its
		 * reader drain it (what is still lost is counted, and allowed) */
		if (i % 64 == 63)
			nanosleep(&ts, NULL);
	}
	fprintf(f, "calls %ld\n", n);
	return fclose(f) ? 1 : 0;
}
