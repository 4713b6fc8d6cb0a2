// SPDX-License-Identifier: MIT
/*
 * Built twice by backtrace_full.sh with different PAD: the same code size
 * and layout, different frame sizes, so the second copy, dlopen()ed after
 * the first is dlclose()d, usually lands at the same address with rows
 * that differ at the same pcs.
 */
#include <stdint.h>

typedef int (*bf_cb)(uint32_t s);

/* the return addresses of the last calls: where the frames must point */
uintptr_t bf_ra_inner, bf_ra_outer;

__attribute__((noinline)) int bf_lib_inner(bf_cb cb, uint32_t s)
{
	volatile uintptr_t pad[PAD];

	bf_ra_inner = (uintptr_t)__builtin_return_address(0);
	for (int i = 0; i < PAD; i++)
		pad[i] = bf_ra_inner;
	return cb(s) + (int)pad[s & 7];
}

__attribute__((noinline)) int bf_lib_outer(bf_cb cb, uint32_t s)
{
	volatile uintptr_t pad[PAD / 2];

	bf_ra_outer = (uintptr_t)__builtin_return_address(0);
	pad[s % (PAD / 2)] = s;
	return bf_lib_inner(cb, s) + (int)pad[s % (PAD / 2)];
}
