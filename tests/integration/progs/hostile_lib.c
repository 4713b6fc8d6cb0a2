// SPDX-License-Identifier: MIT
/*
 * The code that moves, for tests/integration/record_hostile.sh: built twice,
 * as libhostile_a.so (default: a_outer -> a_spin) and with -DHOSTILE_B as
 * libhostile_b.so (b_outer -> b_spin, other arithmetic: other code, another
 * build ID, the same size, so that the loader puts one where the other
 * was). hostile_moving calls X_outer through via_a / via_b of its own.
 *
 * The code uses no data, no PLT and no GOT (X_spin is hidden, so the call
 * to it is direct; the state is on the stack): hostile_moving's raw mode
 * maps the file itself with mmap(PROT_EXEC), without the loader, and calls
 * X_outer there.
 */
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define H_FN __attribute__((noipa, used))
#endif
#endif
#ifndef H_FN
#define H_FN __attribute__((noinline, noclone, used))
#endif
#define H_HIDDEN __attribute__((visibility("hidden")))

#ifndef HOSTILE_B
H_HIDDEN H_FN unsigned long a_spin(unsigned long n)
{
	volatile unsigned long x = n;

	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

H_FN unsigned long a_outer(unsigned long n)
{
	unsigned long r = a_spin(n);

	return r + 1;
}
#else
H_HIDDEN H_FN unsigned long b_spin(unsigned long n)
{
	volatile unsigned long x = n | 1;

	for (unsigned long i = 0; i < n; i++)
		x = (x ^ (x << 13)) ^ ((x ^ (x << 13)) >> 7);
	return x;
}

H_FN unsigned long b_outer(unsigned long n)
{
	unsigned long r = b_spin(n);

	return r ^ 3;
}
#endif
