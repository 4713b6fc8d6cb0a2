// SPDX-License-Identifier: MIT
/* A program whose debug information is moved around by
 * symbolize_debugsrc.sh: two exported functions (in .dynsym when linked
 * with -rdynamic) and two static ones (known only to .symtab / DWARF), one
 * of which holds an inlined function. */
#include <stdio.h>
#include <stdlib.h>

volatile int sink;

__attribute__((noinline)) int dbgsrc_alpha(int x)
{
	for (int i = 0; i < x; i++)
		sink += i * 3;
	return sink;
}

__attribute__((noinline)) int dbgsrc_beta(int x)
{
	return dbgsrc_alpha(x + 1) * 5 + sink;
}

/* inlined into dbgsrc_gamma_local: an inline chain for the tests to find
 * in every place the debug information is moved to */
static inline __attribute__((always_inline)) int dbgsrc_mix(int v)
{
	return (v * 7) ^ (v >> 3) ^ sink;
}

__attribute__((noinline)) static int dbgsrc_gamma_local(int x)
{
	for (int i = 0; i < x; i++)
		sink ^= dbgsrc_mix(dbgsrc_beta(i));
	return sink + 7;
}

__attribute__((noinline)) static int dbgsrc_delta_local(int x)
{
	return dbgsrc_gamma_local(x * 2) - sink;
}

int main(int argc, char **argv)
{
	printf("%d\n", dbgsrc_delta_local(argc > 1 ? atoi(argv[1]) : 3));
	return 0;
}
