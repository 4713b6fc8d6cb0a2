/* SPDX-License-Identifier: MIT */
/* Instruction-set extensions the fast paths may use, asked of the CPU once. */
#ifndef USTACK_COMMON_CPU_H
#define USTACK_COMMON_CPU_H

enum {
	USTACK_CPU_CLMUL = 1 << 0,  /* PCLMULQDQ (with SSE2): crc32.c */
	USTACK_CPU_AES = 1 << 1,    /* AES-NI (with SSE4.1): stackmap hash */
};

/* USTACK_CPU_* bits of this CPU; 0 off x86-64. The first call runs cpuid
 * (a trap in a VM), later calls read a cached word. Thread-safe. */
unsigned int ustack_cpu_features(void);

#endif
