// SPDX-License-Identifier: MIT
/*
 * The oracle of tests/integration/alloc.sh: allocations of known sizes from
 * three known call paths (main -> path_a / path_b / path_c, each calling
 * the allocator itself), built without frame pointers. It counts its own
 * calls, bytes and live bytes per path and prints them before it exits,
 * its unfreed allocations still live:
 *   path NAME calls N bytes B live L
 *   size NAME SIZE COUNT        (the size mix, for the sampling error)
 *
 * The counting follows record --alloc's model: realloc(p, n) is the free of
 * p and an allocation of n; pvalloc(n) allocates n rounded up to the page.
 *   path_a  malloc: many small blocks, some of 3000 bytes, every 8th round
 *           one of 64 KiB; half of the small ones and every other 64 KiB
 *           one freed
 *   path_b  calloc, realloc(NULL, n) (a malloc inside glibc's realloc:
 *           counted once), realloc growing a block, calloc(4, 64 KiB)
 *           every 16th round
 *   path_c  posix_memalign, aligned_alloc, memalign, valloc, pvalloc(5000)
 *           (8192 bytes); the aligned_alloc ones freed
 * usage: alloc_paths [ROUNDS]   (default 300)
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
#define PAGE 4096u

enum { A, B, C, NPATHS };
static const char *const names[NPATHS] = { "path_a", "path_b", "path_c" };

struct path {
	uint64_t calls, bytes, live;
	struct { uint64_t size, count; } mix[16];
	int nmix;
};
static struct path paths[NPATHS];

/* every block kept here: the compiler cannot drop an allocation whose
 * pointer escapes, and the live ones stay live until the exit */
static void **kept;
static size_t nkept, capkept;

NOINLINE static void *keep(void *p)
{
	if (!p) {
		fprintf(stderr, "alloc_paths: out of memory\n");
		exit(1);
	}
	if (nkept == capkept) {
		capkept = capkept ? 2 * capkept : 4096;
		/* the program's own bookkeeping: from main's frame, no path's */
		kept = realloc(kept, capkept * sizeof(*kept));
		if (!kept)
			exit(1);
	}
	kept[nkept++] = p;
	return p;
}

static void count(int path, uint64_t size)
{
	struct path *p = &paths[path];
	int i;

	p->calls++;
	p->bytes += size;
	p->live += size;
	for (i = 0; i < p->nmix && p->mix[i].size != size; i++)
		;
	if (i == p->nmix) {
		if (p->nmix == 16)
			abort();
		p->mix[p->nmix++].size = size;
	}
	p->mix[i].count++;
}

static void forget(int path, uint64_t size)
{
	paths[path].live -= size;
}

static void *volatile sink;

NOINLINE static void path_a(int round)
{
	void *small[8];

	for (int i = 0; i < 8; i++) {
		small[i] = malloc(32);
		count(A, 32);
	}
	for (int i = 0; i < 2; i++) {
		keep(malloc(200));
		count(A, 200);
	}
	keep(malloc(3000));
	count(A, 3000);
	if (round % 8 == 0) {
		void *big = malloc(64 * 1024);

		count(A, 64 * 1024);
		if (round % 16 == 0) {
			free(big);
			forget(A, 64 * 1024);
		} else {
			keep(big);
		}
	}
	for (int i = 0; i < 8; i++) {
		if (i % 2) {
			sink = small[i];
			free(small[i]);
			forget(A, 32);
		} else {
			keep(small[i]);
		}
	}
}

NOINLINE static void path_b(int round)
{
	void *p;

	for (int i = 0; i < 4; i++) {
		keep(calloc(10, 48));
		count(B, 480);
	}
	for (int i = 0; i < 2; i++) {
		keep(realloc(NULL, 500));
		count(B, 500);
	}
	p = realloc(NULL, 100);
	count(B, 100);
	if (!p)
		exit(1);
	memset(p, 1, 100);
	p = realloc(p, 1500); /* the free of the 100 bytes, an allocation of 1500 */
	forget(B, 100);
	count(B, 1500);
	keep(p);
	if (round % 16 == 0) {
		keep(calloc(4, 64 * 1024));
		count(B, 4 * 64 * 1024);
	}
}

NOINLINE static void path_c(int round)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, 640))
		exit(1);
	keep(p);
	count(C, 640);
	p = aligned_alloc(256, 4096);
	count(C, 4096);
	sink = p;
	free(p);
	forget(C, 4096);
	keep(memalign(128, 1000));
	count(C, 1000);
	keep(valloc(5000));
	count(C, 5000);
	keep(pvalloc(5000));
	count(C, (5000 + PAGE - 1) / PAGE * PAGE);
	(void)round;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 300;

	for (int r = 0; r < rounds; r++) {
		path_a(r);
		path_b(r);
		path_c(r);
	}
	for (int i = 0; i < NPATHS; i++) {
		const struct path *p = &paths[i];

		printf("path %s calls %llu bytes %llu live %llu\n", names[i],
		       (unsigned long long)p->calls, (unsigned long long)p->bytes,
		       (unsigned long long)p->live);
		for (int j = 0; j < p->nmix; j++)
			printf("size %s %llu %llu\n", names[i], (unsigned long long)p->mix[j].size,
			       (unsigned long long)p->mix[j].count);
	}
	fflush(stdout);
	/* exit, not return: nothing of ours is freed after the figures */
	_exit(0);
}
