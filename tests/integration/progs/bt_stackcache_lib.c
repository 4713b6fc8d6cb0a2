// SPDX-License-Identifier: MIT
/*
 * Built twice by backtrace_stackcache.sh with different PAD (32 and 64
 * words): the same code layout and addresses, different frame sizes. The
 * pad is filled with this frame's own return address, so a row left over
 * from the other copy (CFA too low or too high by 256 bytes) would find
 * "the right" return address at its slot and pass the stack cache's
 * return-address check: only the module check can catch it.
 */
#include <stdint.h>

typedef void (*sc_cb)(int k);

__attribute__((noinline)) int sc_fn(sc_cb cb, int k)
{
	volatile uintptr_t pad[PAD];

	for (int i = 0; i < PAD; i++)
		pad[i] = (uintptr_t)__builtin_return_address(0);
	cb(k);
	return (int)pad[k & 7];
}
