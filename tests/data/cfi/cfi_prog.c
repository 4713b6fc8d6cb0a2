/* Test program for tests/integration/cfi_readelf.sh: a few functions with
 * different frame shapes (leaf, big stack frame, alloca, realigned stack,
 * many callee-saved registers), compiled in several ways. */
#include <alloca.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }

__attribute__((noinline)) int big_frame(int n)
{
	char buf[5000];

	snprintf(buf, sizeof(buf), "%d", n);
	return leaf(atoi(buf)) + buf[0];
}

__attribute__((noinline)) int dyn_frame(int n)
{
	char *p = alloca((size_t)n + 16);

	memset(p, 'a', (size_t)n + 16);
	return big_frame(p[n]);
}

/* 32-byte aligned local plus alloca: gcc realigns the stack through a
 * DRAP register (CFA from r10, rbp by expression) */
__attribute__((noinline)) int aligned_frame(int n)
{
	int v[8] __attribute__((aligned(32)));
	volatile char *q = alloca((size_t)n + 1);

	q[0] = (char)n;

	for (int i = 0; i < 8; i++)
		v[i] = n + i;
	__asm__ volatile("" : : "r"(v) : "memory");
	return dyn_frame(v[n & 7] & 63);
}

__attribute__((noinline)) long many_regs(long a, long b, long c, long d)
{
	long x = a * b, y = c * d, z = a ^ d, w = b - c;

	__asm__ volatile("" : "+r"(x), "+r"(y), "+r"(z), "+r"(w) : : "rbx", "r12", "r13", "r14", "r15");
	return x + y + z + w + aligned_frame((int)(x & 31));
}

int main(int argc, char **argv)
{
	printf("%ld\n", many_regs(argc, 2, 3, 4));
	return 0;
}
