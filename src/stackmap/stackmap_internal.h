/* SPDX-License-Identifier: MIT */
/* Internals of the stackmap shared by its core, exports and reader. */
#ifndef USTACK_STACKMAP_INTERNAL_H
#define USTACK_STACKMAP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <ustack/stackmap.h>

/* With a 2x table and a decent hash, chains stay short; the bound keeps
 * the worst case constant when the table is nearly full (as in the seed). */
#define SMAP_MAX_PROBE 64

/* Pool entry states. An entry is written completely before it becomes
 * FILLED, and FILLED before its index is published in a table slot. */
enum smap_elt_state {
	SMAP_ELT_FREE = 0,
	SMAP_ELT_FILLED = 1,    /* content valid; table slot not yet confirmed */
	SMAP_ELT_PUBLISHED = 2, /* in the table: visible to exports */
	SMAP_ELT_WASTED = 3,    /* lost a race; never in the table */
};

/* id -> record. Kept apart from the records so that ids stay dense while
 * records vary in size. */
struct smap_elt {
	_Atomic uint32_t state;
	uint32_t unused;
	uint64_t off;          /* the record's first word in the arena */
};

/* A stored stack: header and words back to back in the arena, so that a
 * hit reads one table slot and one contiguous record. */
struct smap_rec {
	uint64_t hash;
	uint32_t nr;           /* words */
	uint32_t id;
	_Atomic uint64_t ref;
	uint64_t ips[];
};
#define SMAP_REC_WORDS 3       /* header size in words */
/* slot words hold off + 1 in 32 bits */
#define SMAP_MAX_ARENA_WORDS 0xfffffff0ull

enum smap_state {
	SMAP_ACTIVE = 0,
	SMAP_STOPPED = 1,
	SMAP_RESETTING = 2,
};

/* Counters of one thread. Written only by the owning thread (with an
 * instruction that is atomic against signal handlers on the same CPU),
 * read by anyone with atomic loads. The last block is shared by threads
 * beyond max_threads and updated with locked atomics. */
struct smap_tblock {
	uint64_t inflight;  /* inserts running on this thread (nesting count) */
	uint64_t drops;
	uint64_t truncated;
	uint64_t wasted;
	int shared;
} __attribute__((aligned(64)));

struct ustack_stackmap {
	/* read-mostly, hot */
	uint64_t gen;           /* unique per map: key of the thread caches */
	uint64_t seed;
	_Atomic uint64_t *table;/* slot: (hash >> 32) << 32 | (record offset + 1) */
	struct smap_elt *elts;
	uint64_t *arena;
	uint32_t table_mask;
	uint32_t capacity;
	uint32_t max_depth;
	uint32_t max_threads;
	uint64_t arena_words;
	int need_fence;         /* membarrier unavailable: fence on fast path */
	int aes;                /* hash with AES-NI (fixed for the map's life) */

	_Atomic uint32_t state __attribute__((aligned(64)));
	_Atomic uint64_t next_elt __attribute__((aligned(64)));
	_Atomic uint64_t next_word __attribute__((aligned(64)));
	_Atomic uint32_t next_block __attribute__((aligned(64)));

	struct smap_tblock *blocks;   /* max_threads + 1 (last is shared) */
	pthread_rwlock_t export_lock; /* exports (read) vs reset (write) */
};

static inline uint64_t smap_ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Number of pool entries handed out (fetch_add may overshoot). */
static inline uint64_t smap_nr_elts(const struct ustack_stackmap *map)
{
	uint64_t n = atomic_load_explicit(&map->next_elt, memory_order_acquire);

	return n < map->capacity ? n : map->capacity;
}

static inline struct smap_rec *smap_rec_at(const struct ustack_stackmap *map,
					    uint64_t off)
{
	return (struct smap_rec *)(map->arena + off);
}

#endif
