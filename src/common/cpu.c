// SPDX-License-Identifier: MIT
/* Not __builtin_cpu_supports(): it links libgcc's constructor, which runs
 * cpuid at the start of every process that loads the library (cpuid traps
 * in a VM); not glibc's <sys/platform/x86.h>, which would make the library
 * need glibc 2.33. */
#include "common/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>

static int cpu_features = -1;

unsigned int ustack_cpu_features(void)
{
	int f = __atomic_load_n(&cpu_features, __ATOMIC_RELAXED);
	unsigned int a, b, c, d;

	if (f >= 0)
		return (unsigned int)f;
	f = 0;
	if (__get_cpuid(1, &a, &b, &c, &d) && (d & bit_SSE2)) {
		if (c & bit_PCLMUL)
			f |= USTACK_CPU_CLMUL;
		if ((c & bit_AES) && (c & bit_SSE4_1))
			f |= USTACK_CPU_AES;
	}
	/* racing first calls store the same word */
	__atomic_store_n(&cpu_features, f, __ATOMIC_RELAXED);
	return (unsigned int)f;
}
#else
unsigned int ustack_cpu_features(void)
{
	return 0;
}
#endif
