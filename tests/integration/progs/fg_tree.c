// SPDX-License-Identifier: MIT
/*
 * A known call tree for tests/integration/flamegraph_browser.sh:
 *
 *   main -> run -> alpha -> leaf_work   (2 units of work)
 *               -> beta  -> leaf_work   (1 unit)
 *               -> WWW...W (a long name of wide glyphs: its label must
 *                           be cut, never overflow its box)
 *
 * noinline and the asm barriers keep every function a real frame (no
 * inlining, no tail calls) at -O2. argv[1]: rounds (default 200).
 */
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) void leaf_work(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		sink += i;
		__asm__ volatile("" ::: "memory");
	}
}

__attribute__((noinline)) void alpha(unsigned long n)
{
	leaf_work(2 * n);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void beta(unsigned long n)
{
	leaf_work(n);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void
WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		sink ^= i;
		__asm__ volatile("" ::: "memory");
	}
}

__attribute__((noinline)) void run(unsigned long n)
{
	alpha(n);
	beta(n);
	WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW(n / 2);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 0) : 200;

	for (unsigned long r = 0; r < rounds; r++)
		run(1000000);
	return 0;
}
