// SPDX-License-Identifier: MIT
/*
 * Workload of bench/symbolize/run.sh: N getppid() calls (the marker the
 * recorders sample on), each made from inside an always_inline chain
 * (three levels) of one of 16 functions, below a recursion of 0..7 noinline
 * frames: 128 distinct stacks, each user frame of the program with source
 * lines, 48 of them inside inlined code. Built -O2 -g.
 */
#include <stdlib.h>
#include <unistd.h>

volatile unsigned long sink;

static inline __attribute__((always_inline)) void lvl3(unsigned long i)
{
	sink += (unsigned long)getppid() ^ i;
}

static inline __attribute__((always_inline)) void lvl2(unsigned long i)
{
	lvl3(i + 3);
	sink ^= i;
}

static inline __attribute__((always_inline)) void lvl1(unsigned long i)
{
	lvl2(i * 5);
	sink += 1;
}

#define F(k) __attribute__((noinline)) void f##k(unsigned long i) { lvl1(i + k); sink *= 3; }
F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12) F(13) F(14) F(15)

static void (*const fns[16])(unsigned long) = {
	f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15,
};

__attribute__((noinline)) void rec(unsigned long d, unsigned long i)
{
	if (d)
		rec(d - 1, i);
	else
		fns[(i / 8) % 16](i);
	__asm__ volatile("" ::: "memory"); /* not a tail call: a frame per level */
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 100000;

	for (unsigned long i = 0; i < n; i++)
		rec(i % 8, i);
	return 0;
}
