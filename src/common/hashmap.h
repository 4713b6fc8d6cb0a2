/* SPDX-License-Identifier: MIT */
/* Internals of ustack_u64map (API: <ustack/hashmap.h>) that its unit test
 * needs too: where a key's probe run starts. */
#ifndef USTACK_COMMON_HASHMAP_H
#define USTACK_COMMON_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/hashmap.h>

/* Home slot of @k in a table of mask + 1 slots: murmur3's finalizer, so
 * that sequential keys (tids, ids) spread over all bits. */
static inline size_t ustack_u64map_home(uint64_t k, size_t mask)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return (size_t)k & mask;
}

#endif
