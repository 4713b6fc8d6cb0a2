// SPDX-License-Identifier: MIT
/*
 * Inlined call chains for tests/integration/symbolize_lines.sh: a
 * `static inline` chain and an always_inline chain, built -O2 -g, so that
 * pcs inside leaf() expand into three or four functions, each on its own
 * source line. noinline keeps the outer functions as real frames. The
 * test takes its addresses from the line table, so the program only has
 * to run.
 */
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) void touch(unsigned long v)
{
	sink += v;
	__asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) unsigned long leaf(unsigned long x)
{
	touch(x * 3);
	return x + 1;
}

static inline __attribute__((always_inline)) unsigned long middle(unsigned long x)
{
	unsigned long r = leaf(x);

	touch(r);
	return r * 2;
}

static inline unsigned long plain_inline(unsigned long x)
{
	touch(x ^ 0x55);
	return middle(x) + 7;
}

__attribute__((noinline)) unsigned long outer(unsigned long x)
{
	unsigned long a = plain_inline(x);

	touch(a);
	return a + middle(a);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 3;

	for (unsigned long i = 0; i < n; i++)
		sink += outer(i);
	printf("%lu\n", (unsigned long)sink);
	return 0;
}
