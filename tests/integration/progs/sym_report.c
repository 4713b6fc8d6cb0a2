// SPDX-License-Identifier: MIT
/*
 * A marker syscall made from inside an always_inline chain, for the
 * end-to-end report test in tests/integration/symbolize_lines.sh: built
 * -O2 -g, recorded with `ustack record -e syscalls:sys_enter_getppid`, the
 * return address in work() expands into inner -> mid -> top inlined frames.
 */
#include <stdlib.h>
#include <unistd.h>

volatile unsigned long sink;

static inline __attribute__((always_inline)) void inner(unsigned long i)
{
	sink += (unsigned long)getppid() + i;
	sink ^= i;
}

static inline __attribute__((always_inline)) void mid(unsigned long i)
{
	inner(i * 3);
	sink += 5;
}

static inline __attribute__((always_inline)) void top(unsigned long i)
{
	mid(i + 1);
	sink *= 7;
}

__attribute__((noinline)) void work(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		top(i);
}

int main(int argc, char **argv)
{
	work(argc > 1 ? strtoul(argv[1], NULL, 0) : 10);
	return 0;
}
