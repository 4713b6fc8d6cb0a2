// SPDX-License-Identifier: MIT
/*
 * A target for the probe resolver's tests (probe_resolve.sh): functions of
 * its own (exported with -rdynamic, so a stripped copy keeps them in
 * .dynsym), USDT probes with arguments of several sizes and one with a
 * semaphore when <sys/sdt.h> is there (-DHAVE_SDT), and a mode that
 * waits, so that a test can resolve inside its mount namespace.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef HAVE_SDT
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
/* with semaphores on, every probe has one, named PROVIDER_NAME_semaphore,
 * in .probes (args4 fires whatever its semaphore says) */
__attribute__((section(".probes"), used)) volatile unsigned short ptest_args4_semaphore;
__attribute__((section(".probes"), used)) volatile unsigned short ptest_gated_semaphore;
#endif

volatile long sink;

__attribute__((noinline)) long pt_work_one(long x)
{
	sink += x;
	return sink * 3;
}

__attribute__((noinline)) long pt_work_two(long x)
{
	sink ^= x;
	return sink + 7;
}

__attribute__((noinline)) int pt_other(int x)
{
	return x * 2 + (int)sink;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1;
	char c = (char)argc;
	short s = (short)(argc * 3);

	for (long i = 0; i < n; i++) {
		long a = pt_work_one(i), b = pt_work_two(i);
		int o = pt_other((int)i);
#ifdef HAVE_SDT
		STAP_PROBE4(ptest, args4, a, o, c, s);
		if (ptest_gated_semaphore)
			STAP_PROBE1(ptest, gated, b);
#endif
		(void)a, (void)b, (void)o;
	}
	if (argc > 2) /* wait to be looked at */
		pause();
	return 0;
}
