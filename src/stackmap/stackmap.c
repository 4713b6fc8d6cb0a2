// SPDX-License-Identifier: MIT
/*
 * Lock-free stack deduplication (the user-space twin of the ftrace stackmap
 * of the seeds): open addressing over a 2x table of 64-bit slots, bounded
 * linear probing, a pre-allocated pool of entries and a pre-allocated arena
 * of words.
 *
 * Unlike the seed, an inserter fills its pool entry *before* it claims a
 * slot, and claims the slot with one compare-and-swap that writes the hash
 * tag and the entry index together. A slot therefore goes straight from
 * free to complete: there is no "claimed but empty" state, no gravestones
 * when the pool runs out, and no duplicates when two threads insert the
 * same stack at once (the CAS loser re-reads the slot, finds its stack and
 * takes the winner's id; the entry it filled is marked wasted). The price
 * is one pool entry per lost race, which the stats report.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/cpu.h"
#include "common/log.h"
#include "common/opts.h"
#include "stackmap/stackmap_internal.h"

#define SMAP_TAG_MASK 0xffffffff00000000ull
#define SMAP_NO_ELT   UINT32_MAX

/* ---- hash --------------------------------------------------------------
 * Stacks are short arrays of u64 (20-60 words), and a hit hashes every word
 * before it can compare, so the hash is most of a hit's cost. Equality is
 * always confirmed with memcmp: the hash only has to spread well, not to
 * resist an attacker (the seed is random all the same).
 *
 * With AES-NI (every x86-64 CPU of the last decade; asked once per map), 16
 * bytes at a time go through one AES round in eight independent lanes, so
 * the CPU overlaps the rounds. 32 words: ~7 ns against ~20 ns for the
 * multiply hash below (a micro-benchmark on the development machine), and
 * a hit in bench/stackmap from ~41 to ~25 ns.
 *
 * Without it, pairs of words are mixed with one 64x64->128 multiply folded
 * to 64 bits (wyhash's "mum"), keyed by the seed and the pair's position so
 * that reordered frames hash apart; the products are independent, so the
 * CPU runs them in parallel, where a chained hash (jhash, xxh64) would
 * serialize one multiply per word. */
#define SMAP_K0 0xa0761d6478bd642full
#define SMAP_K1 0xe7037ed1a0b428dbull
#define SMAP_K2 0x8ebc6af09c88c6e3ull

static inline uint64_t smap_mum(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t smap_hash_mum(const uint64_t *w, uint32_t nr, uint64_t seed)
{
	uint64_t a = seed ^ ((uint64_t)nr * SMAP_K2), b = 0, k = seed + SMAP_K0;
	uint32_t i = 0;

	for (; i + 4 <= nr; i += 4) {
		a += smap_mum(w[i] ^ k, w[i + 1] ^ (k ^ SMAP_K2));
		b += smap_mum(w[i + 2] ^ (k + SMAP_K1),
			      w[i + 3] ^ ((k + SMAP_K1) ^ SMAP_K2));
		k += 2 * SMAP_K1;
	}
	for (; i + 2 <= nr; i += 2) {
		a += smap_mum(w[i] ^ k, w[i + 1] ^ (k ^ SMAP_K2));
		k += SMAP_K1;
	}
	if (i < nr)
		b += smap_mum(w[i] ^ k, SMAP_K1 ^ k);
	a ^= b * SMAP_K1;
	/* murmur3 fmix64: spreads the high bits of the sum down to the low
	 * bits that pick the slot. */
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdull;
	a ^= a >> 33;
	a *= 0xc4ceb9fe1a85ec53ull;
	a ^= a >> 33;
	return a;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SMAP_HAVE_AES 1

__attribute__((target("aes,sse4.1")))
static inline uint64_t smap_hash_aes(const uint64_t *w, uint32_t nr, uint64_t seed)
{
#define SMAP_AES(lane, blk) lane = _mm_aesenc_si128(_mm_xor_si128(lane, blk), k)
	const __m128i *p = (const __m128i *)w;
	/* the length is in the key, so a stack and its prefix padded with
	 * zero words hash apart */
	__m128i k = _mm_set_epi64x((long long)(seed ^ SMAP_K0),
				   (long long)(seed + (uint64_t)nr * SMAP_K1));
	__m128i k1 = _mm_set1_epi64x((long long)SMAP_K1);
	__m128i k2 = _mm_set1_epi64x((long long)SMAP_K2);
	/* eight lanes, each starting from its own value, so that blocks
	 * swapped between lanes hash apart */
	__m128i a0 = k, a1 = _mm_xor_si128(k, k2), a2 = _mm_add_epi64(k, k1);
	__m128i a3 = _mm_sub_epi64(k, k1), a4 = _mm_add_epi64(k, k2);
	__m128i a5 = _mm_sub_epi64(k, k2), a6 = _mm_xor_si128(k, k1);
	__m128i a7 = _mm_xor_si128(a2, k2);
	uint32_t i = 0, n = nr / 2;

	for (; i + 8 <= n; i += 8) {
		SMAP_AES(a0, _mm_loadu_si128(p + i));
		SMAP_AES(a1, _mm_loadu_si128(p + i + 1));
		SMAP_AES(a2, _mm_loadu_si128(p + i + 2));
		SMAP_AES(a3, _mm_loadu_si128(p + i + 3));
		SMAP_AES(a4, _mm_loadu_si128(p + i + 4));
		SMAP_AES(a5, _mm_loadu_si128(p + i + 5));
		SMAP_AES(a6, _mm_loadu_si128(p + i + 6));
		SMAP_AES(a7, _mm_loadu_si128(p + i + 7));
	}
	if (i + 4 <= n) {
		SMAP_AES(a0, _mm_loadu_si128(p + i));
		SMAP_AES(a1, _mm_loadu_si128(p + i + 1));
		SMAP_AES(a2, _mm_loadu_si128(p + i + 2));
		SMAP_AES(a3, _mm_loadu_si128(p + i + 3));
		i += 4;
	}
	if (i + 2 <= n) {
		SMAP_AES(a4, _mm_loadu_si128(p + i));
		SMAP_AES(a5, _mm_loadu_si128(p + i + 1));
		i += 2;
	}
	if (i < n)
		SMAP_AES(a6, _mm_loadu_si128(p + i));
	if (nr & 1)  /* the last word alone: 8 bytes, never past the end */
		SMAP_AES(a7, _mm_loadl_epi64(p + n));
#undef SMAP_AES
	/* A hit waits for the hash before it can load the slot, so what
	 * counts is the latency: the lanes are folded with XOR (one cycle,
	 * not an AES round each), then one more round. Every block has then
	 * been through two rounds, after which each byte of a lane's input
	 * reaches a whole column of the sum; the 64-bit result (low half XOR
	 * high half) takes two bytes of every column into each 32-bit half,
	 * so both the slot and the tag depend on every input byte. A second
	 * final round cost 1 ns per hit and spread test_stackmap's shapes no
	 * better. */
	a0 = _mm_xor_si128(_mm_xor_si128(_mm_xor_si128(a0, a1), _mm_xor_si128(a2, a3)),
			   _mm_xor_si128(_mm_xor_si128(a4, a5), _mm_xor_si128(a6, a7)));
	a0 = _mm_aesenc_si128(a0, k);
	return (uint64_t)_mm_cvtsi128_si64(a0) ^ (uint64_t)_mm_extract_epi64(a0, 1);
}
#endif

/* ---- per-thread counter blocks -----------------------------------------
 * Each thread gets a private block per map, found through a small
 * thread-local cache keyed by the map's generation number (never reused,
 * unlike the map's address). Private counters are bumped with a plain
 * "add to memory" instruction: one instruction cannot be split by a signal
 * handler on the same thread, and no other thread writes the block, so no
 * lock prefix is needed (the kernel's local_t trick). */
#define SMAP_TLS_WAYS 4
struct smap_tls_ent {
	uint64_t gen;
	struct smap_tblock *blk;
};
static __thread struct smap_tls_ent smap_tls[SMAP_TLS_WAYS]
	__attribute__((tls_model("initial-exec")));
static __thread unsigned int smap_tls_victim
	__attribute__((tls_model("initial-exec")));
static _Atomic uint64_t smap_next_gen = 1;

#if defined(__SANITIZE_THREAD__)
#define SMAP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SMAP_TSAN 1
#endif
#endif

static inline void smap_local_add(uint64_t *p, int64_t v)
{
#if defined(__x86_64__) && !defined(SMAP_TSAN)
	/* "memory" clobber: together with x86 store order this makes the
	 * decrement of inflight a release of everything before it. */
	__asm__ volatile("addq %1, %0" : "+m"(*p) : "er"(v) : "memory");
#else
	__atomic_fetch_add(p, (uint64_t)v, __ATOMIC_RELEASE);
#endif
}

static inline void smap_ctr_add(struct smap_tblock *b, uint64_t *p, int64_t v)
{
	if (unlikely(b->shared))
		__atomic_fetch_add(p, (uint64_t)v, __ATOMIC_SEQ_CST);
	else
		smap_local_add(p, v);
}

static struct smap_tblock *smap_block_slow(struct ustack_stackmap *map)
{
	struct smap_tblock *blk = &map->blocks[map->max_threads];
	unsigned int way;

	if (atomic_load_explicit(&map->next_block, memory_order_relaxed) < map->max_threads) {
		uint32_t i = atomic_fetch_add_explicit(&map->next_block, 1,
						       memory_order_relaxed);
		if (i < map->max_threads)
			blk = &map->blocks[i];
	}
	/* blk before gen: a signal handler that reads the entry between the
	 * two stores sees the old gen and misses, never a wrong block. */
	way = smap_tls_victim++ % SMAP_TLS_WAYS;
	smap_tls[way].blk = blk;
	atomic_signal_fence(memory_order_seq_cst);
	smap_tls[way].gen = map->gen;
	return blk;
}

static inline struct smap_tblock *smap_block(struct ustack_stackmap *map)
{
	for (int i = 0; i < SMAP_TLS_WAYS; i++)
		if (smap_tls[i].gen == map->gen)
			return smap_tls[i].blk;
	return smap_block_slow(map);
}

/* Entering: announce the insert, then look at the state. stop() stores the
 * state, then forces a barrier on every thread (membarrier) and waits for
 * the inflight counts to drop: either we see STOPPED, or stop sees us. */
static inline int smap_enter(struct ustack_stackmap *map, struct smap_tblock *b)
{
	smap_ctr_add(b, &b->inflight, 1);
	if (unlikely(map->need_fence))
		atomic_thread_fence(memory_order_seq_cst);
	else
		atomic_signal_fence(memory_order_seq_cst);
	return atomic_load_explicit(&map->state, memory_order_acquire) == SMAP_ACTIVE;
}

static inline void smap_leave(struct smap_tblock *b)
{
	smap_ctr_add(b, &b->inflight, -1);
}

/* ---- creation ------------------------------------------------------------ */

static int smap_membarrier_ok(void)
{
#ifdef __NR_membarrier
	static _Atomic int ok = -1;  /* registration is per process; idempotent */

	if (ok < 0)
		ok = syscall(__NR_membarrier,
			     MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
	return ok;
#else
	return 0;
#endif
}

/* The map's arrays are anonymous mappings: the kernel hands out zeroed
 * pages as they are first touched, so a map costs the memory it holds, not
 * its capacity (a recorder's two maps of 65,536 stacks are 2 x 20 MiB; the
 * memset that used to touch them all up front was a fifth of `ustack
 * record`'s start-up). The price: an insert may take a page fault, which is
 * async-signal-safe. A PROT_NONE page after each array turns a write past
 * its end into a fault, in any build. */
static size_t smap_span(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return ((size ? size : 1) + page - 1) / page * page + page;
}

static void *smap_zalloc(size_t size)
{
	size_t span = smap_span(size), page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p + span - page, page, PROT_NONE)) {
		munmap(p, span);
		return NULL;
	}
	return p;
}

/* Zero an array of smap_zalloc(@size) again: its pages handed back, to be
 * zero-filled when touched (a reset costs what the map held, as new()
 * does, and gives that memory back); memset if the kernel refuses */
static void smap_rezero(void *p, size_t size)
{
	size_t span = smap_span(size), page = (size_t)sysconf(_SC_PAGESIZE);

	if (madvise(p, span - page, MADV_DONTNEED))
		memset(p, 0, size);
}

static void smap_free(void *p, size_t size)
{
	if (p)
		munmap(p, smap_span(size));
}

/* the sizes smap_zalloc() was given for each array of @map */
#define SMAP_TABLE_BYTES(m)  (2 * (size_t)(m)->capacity * sizeof(*(m)->table))
#define SMAP_ELTS_BYTES(m)   ((size_t)(m)->capacity * sizeof(*(m)->elts))
#define SMAP_ARENA_BYTES(m)  ((size_t)(m)->arena_words * sizeof(uint64_t))
#define SMAP_BLOCKS_BYTES(m) (((size_t)(m)->max_threads + 1) * sizeof(*(m)->blocks))

static void smap_free_arrays(struct ustack_stackmap *map)
{
	smap_free(map->table, SMAP_TABLE_BYTES(map));
	smap_free(map->elts, SMAP_ELTS_BYTES(map));
	smap_free(map->arena, SMAP_ARENA_BYTES(map));
	smap_free(map->blocks, SMAP_BLOCKS_BYTES(map));
}

USTACK_API struct ustack_stackmap *
ustack_stackmap__new(const struct ustack_stackmap_opts *opts)
{
	struct ustack_stackmap *map;
	uint64_t cap, depth, words, threads, arena;

	if (!OPTS_VALID(opts, struct ustack_stackmap_opts)) {
		errno = EINVAL;
		return NULL;
	}
	/* 0 in a field means its default, as does a field the caller's
	 * (older) struct does not have */
	cap = OPTS_GET(opts, capacity, 0) ?: USTACK_STACKMAP_DEF_CAPACITY;
	depth = OPTS_GET(opts, max_depth, 0) ?: USTACK_STACKMAP_DEF_MAX_DEPTH;
	threads = OPTS_GET(opts, max_threads, 0) ?: USTACK_STACKMAP_DEF_MAX_THREADS;
	arena = OPTS_GET(opts, arena_words, 0);
	if (cap > USTACK_STACKMAP_MAX_CAPACITY || depth > USTACK_STACKMAP_MAX_DEPTH_LIMIT ||
	    threads > 65536) {
		errno = EINVAL;
		return NULL;
	}
	if (cap < 16)
		cap = 16;
	cap = 1ull << (64 - __builtin_clzll(cap - 1));
	words = arena ? arena : cap * USTACK_STACKMAP_DEF_AVG_WORDS;
	if (words > SMAP_MAX_ARENA_WORDS || words > SIZE_MAX / 16) {
		errno = EINVAL;
		return NULL;
	}

	map = calloc(1, sizeof(*map));
	if (!map)
		return NULL;
	map->capacity = (uint32_t)cap;
	map->table_mask = (uint32_t)(2 * cap - 1);
	map->max_depth = (uint32_t)depth;
	map->max_threads = (uint32_t)threads;
	map->arena_words = words;
	map->table = smap_zalloc(SMAP_TABLE_BYTES(map));
	map->elts = smap_zalloc(SMAP_ELTS_BYTES(map));
	map->arena = smap_zalloc(SMAP_ARENA_BYTES(map));
	map->blocks = smap_zalloc(SMAP_BLOCKS_BYTES(map));
	if (!map->table || !map->elts || !map->arena || !map->blocks ||
	    pthread_rwlock_init(&map->export_lock, NULL)) {
		smap_free_arrays(map);
		free(map);
		errno = ENOMEM;
		return NULL;
	}
	map->blocks[threads].shared = 1;
	map->seed = OPTS_GET(opts, seed, 0);
	if (!map->seed && getrandom(&map->seed, sizeof(map->seed), GRND_NONBLOCK) !=
			  (ssize_t)sizeof(map->seed)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		map->seed = (uint64_t)ts.tv_nsec * SMAP_K1 ^ (uintptr_t)map;
	}
	map->need_fence = !smap_membarrier_ok();
	map->aes = !!(ustack_cpu_features() & USTACK_CPU_AES);
	map->gen = atomic_fetch_add(&smap_next_gen, 1);
	atomic_store(&map->state, SMAP_ACTIVE);
	return map;
}

USTACK_API void ustack_stackmap__free(struct ustack_stackmap *map)
{
	if (!map)
		return;
	pthread_rwlock_destroy(&map->export_lock);
	smap_free_arrays(map);
	free(map);
}

/* ---- insert -------------------------------------------------------------- */

static inline void smap_waste(struct ustack_stackmap *map, struct smap_tblock *b,
			      uint32_t idx)
{
	atomic_store_explicit(&map->elts[idx].state, SMAP_ELT_WASTED,
			      memory_order_release);
	smap_ctr_add(b, &b->wasted, 1);
}

/* Take a pool entry and arena words and fill them. The fast checks before
 * the fetch_adds keep a full map from bouncing those cache lines. */
static int smap_fill(struct ustack_stackmap *map, const uint64_t *ips,
		     uint32_t nr, uint64_t hash, uint32_t *out, uint64_t *out_off)
{
	uint64_t need = (uint64_t)nr + SMAP_REC_WORDS, i, off;
	struct smap_rec *r;

	if (atomic_load_explicit(&map->next_elt, memory_order_relaxed) >= map->capacity ||
	    atomic_load_explicit(&map->next_word, memory_order_relaxed) + need >
	    map->arena_words)
		return -ENOSPC;
	i = atomic_fetch_add_explicit(&map->next_elt, 1, memory_order_relaxed);
	if (i >= map->capacity)
		return -ENOSPC;
	off = atomic_fetch_add_explicit(&map->next_word, need, memory_order_relaxed);
	if (off + need > map->arena_words) {
		*out = (uint32_t)i;
		return -ENOSPC;  /* the caller wastes entry i */
	}
	r = smap_rec_at(map, off);
	r->hash = hash;
	r->nr = nr;
	r->id = (uint32_t)i;
	atomic_store_explicit(&r->ref, 1, memory_order_relaxed);
	memcpy(r->ips, ips, (size_t)nr * sizeof(uint64_t));
	map->elts[i].off = off;
	atomic_store_explicit(&map->elts[i].state, SMAP_ELT_FILLED, memory_order_release);
	*out = (uint32_t)i;
	*out_off = off;
	return 0;
}

/* The insert, with the hash picked by the constant @aes: instantiated once
 * with AES-NI enabled (so the hash inlines into it) and once without. */
static __attribute__((always_inline)) inline int
smap_insert(struct ustack_stackmap *map, const uint64_t *ips, uint32_t nr,
	    uint32_t *id, int aes)
{
	struct smap_tblock *b;
	uint32_t mine = SMAP_NO_ELT, pos, truncated = 0;
	uint64_t h, tag, mine_off = 0;
	int ret;

	if (unlikely(!map || !ips || !nr || !id))
		return -EINVAL;
	b = smap_block(map);
	if (unlikely(!smap_enter(map, b))) {
		smap_leave(b);
		return -EAGAIN;
	}
	if (unlikely(nr > map->max_depth)) {
		nr = map->max_depth;
		truncated = 1;
	}
#ifdef SMAP_HAVE_AES
	if (aes)
		h = smap_hash_aes(ips, nr, map->seed);
	else
#endif
		h = smap_hash_mum(ips, nr, map->seed);
	(void)aes;
	tag = h & SMAP_TAG_MASK;
	pos = (uint32_t)h;

	for (int p = 0; p < SMAP_MAX_PROBE; p++) {
		_Atomic uint64_t *slot = &map->table[(pos + p) & map->table_mask];
		uint64_t w = atomic_load_explicit(slot, memory_order_acquire);

		if (w == 0) {
			if (mine == SMAP_NO_ELT &&
			    smap_fill(map, ips, nr, h, &mine, &mine_off)) {
				if (mine != SMAP_NO_ELT)
					smap_waste(map, b, mine);
				mine = SMAP_NO_ELT;
				break;
			}
			/* release: the filled record is visible with the slot;
			 * acquire on failure: so is the winner's */
			if (atomic_compare_exchange_strong_explicit(slot, &w,
					tag | (mine_off + 1),
					memory_order_acq_rel, memory_order_acquire)) {
				atomic_store_explicit(&map->elts[mine].state,
						      SMAP_ELT_PUBLISHED,
						      memory_order_release);
				*id = mine;
				ret = 1;
				goto success;
			}
			/* lost the slot: w is now the winner's word */
		}
		if ((w & SMAP_TAG_MASK) == tag) {
			struct smap_rec *r = smap_rec_at(map, (uint32_t)w - 1);

			if (r->hash == h && r->nr == nr &&
			    !memcmp(r->ips, ips, (size_t)nr * sizeof(uint64_t))) {
				atomic_fetch_add_explicit(&r->ref, 1, memory_order_relaxed);
				if (mine != SMAP_NO_ELT)
					smap_waste(map, b, mine);
				*id = r->id;
				ret = 0;
				goto success;
			}
		}
	}
	if (mine != SMAP_NO_ELT)
		smap_waste(map, b, mine);
	smap_ctr_add(b, &b->drops, 1);
	smap_leave(b);
	return -ENOSPC;

success:
	/* no "successes" counter: every success is one reference of the
	 * stack it returned, so stats sums the references instead of every
	 * insert paying a counter update */
	if (truncated)
		smap_ctr_add(b, &b->truncated, 1);
	smap_leave(b);
	return ret;
}

#ifdef SMAP_HAVE_AES
__attribute__((target("aes,sse4.1")))
static int smap_insert_aes(struct ustack_stackmap *map, const uint64_t *ips,
			   uint32_t nr, uint32_t *id)
{
	return smap_insert(map, ips, nr, id, 1);
}
#endif

USTACK_API int ustack_stackmap__insert(struct ustack_stackmap *map,
				       const uint64_t *ips, uint32_t nr,
				       uint32_t *id)
{
#ifdef SMAP_HAVE_AES
	if (likely(map && map->aes))
		return smap_insert_aes(map, ips, nr, id);
#endif
	return smap_insert(map, ips, nr, id, 0);
}

/* ---- lookup, stats --------------------------------------------------------- */

USTACK_API int ustack_stackmap__lookup(const struct ustack_stackmap *map,
				       uint32_t id, const uint64_t **ips,
				       uint32_t *nr, uint64_t *ref)
{
	const struct smap_elt *e;
	const struct smap_rec *r;
	uint32_t st;

	if (!map)
		return -EINVAL;
	if (id >= smap_nr_elts(map))
		return -ENOENT;
	e = &map->elts[id];
	/* FILLED counts: the id may come from a thread that found the slot
	 * before the inserter marked the entry PUBLISHED */
	st = atomic_load_explicit(&e->state, memory_order_acquire);
	if (st != SMAP_ELT_FILLED && st != SMAP_ELT_PUBLISHED)
		return -ENOENT;
	r = smap_rec_at(map, e->off);
	if (ips)
		*ips = r->ips;
	if (nr)
		*nr = r->nr;
	if (ref)
		*ref = atomic_load_explicit(&r->ref, memory_order_relaxed);
	return 0;
}

USTACK_API int ustack_stackmap__stats(const struct ustack_stackmap *map,
				      struct ustack_stackmap_stats *out, size_t sz)
{
	struct ustack_stackmap_stats full, *st = &full;
	uint64_t words, nr_elts;

	if (!map || !out)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->capacity = map->capacity;
	st->table_size = (uint64_t)map->table_mask + 1;
	st->max_depth = map->max_depth;
	st->words_capacity = map->arena_words;
	words = atomic_load_explicit(&map->next_word, memory_order_relaxed);
	st->words_used = words < map->arena_words ? words : map->arena_words;
	for (uint32_t i = 0; i <= map->max_threads; i++) {
		const struct smap_tblock *b = &map->blocks[i];

		st->drops += smap_ld(&b->drops);
		st->truncated += smap_ld(&b->truncated);
		st->wasted += smap_ld(&b->wasted);
	}
	/* successes: the references of the stacks in the table (a FILLED
	 * entry is in the table, or about to be wasted by an insert that is
	 * still running), under the export lock so that a reset cannot clear
	 * the pool under the scan */
	pthread_rwlock_rdlock((pthread_rwlock_t *)&map->export_lock);
	nr_elts = smap_nr_elts(map);
	for (uint64_t i = 0; i < nr_elts; i++) {
		const struct smap_elt *e = &map->elts[i];
		uint32_t es = atomic_load_explicit(&e->state, memory_order_acquire);

		if (es == SMAP_ELT_FILLED || es == SMAP_ELT_PUBLISHED)
			st->successes += atomic_load_explicit(
				&smap_rec_at(map, e->off)->ref, memory_order_relaxed);
	}
	pthread_rwlock_unlock((pthread_rwlock_t *)&map->export_lock);
	/* entries handed out minus those that never made it into the table */
	st->entries = nr_elts;
	st->entries = st->entries > st->wasted ? st->entries - st->wasted : 0;
	ustack_copy_out(out, sz, st, sizeof(*st));
	return 0;
}

/* ---- start / stop / reset --------------------------------------------------- */

USTACK_API int ustack_stackmap__start(struct ustack_stackmap *map)
{
	uint32_t s = SMAP_STOPPED;

	if (!map)
		return -EINVAL;
	if (atomic_compare_exchange_strong(&map->state, &s, SMAP_ACTIVE))
		return 0;
	return s == SMAP_ACTIVE ? 0 : -EBUSY;
}

static void smap_drain(struct ustack_stackmap *map)
{
#ifdef __NR_membarrier
	if (!map->need_fence &&
	    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0)) {
		/* cannot happen once registered; fall back to a long grace
		 * period rather than trusting an unfenced inflight count */
		pr_warn("stackmap: membarrier failed (%s), waiting 10 ms\n",
			strerror(errno));
		usleep(10000);
	}
#endif
	for (uint32_t i = 0; i <= map->max_threads; i++)
		while (__atomic_load_n(&map->blocks[i].inflight, __ATOMIC_ACQUIRE))
			sched_yield();
}

USTACK_API int ustack_stackmap__stop(struct ustack_stackmap *map)
{
	uint32_t s = SMAP_ACTIVE;

	if (!map)
		return -EINVAL;
	if (!atomic_compare_exchange_strong(&map->state, &s, SMAP_STOPPED) &&
	    s != SMAP_STOPPED)
		return -EBUSY;
	smap_drain(map);
	return 0;
}

USTACK_API int ustack_stackmap__reset(struct ustack_stackmap *map)
{
	uint32_t s = SMAP_STOPPED;

	if (!map)
		return -EINVAL;
	if (!atomic_compare_exchange_strong(&map->state, &s, SMAP_RESETTING))
		return -EBUSY;
	/* stop drained every insert already; this catches an insert that
	 * slipped between a start and a stop issued from elsewhere */
	smap_drain(map);
	pthread_rwlock_wrlock(&map->export_lock);
	smap_rezero((void *)map->table, SMAP_TABLE_BYTES(map));
	smap_rezero(map->elts, SMAP_ELTS_BYTES(map));
	atomic_store_explicit(&map->next_elt, 0, memory_order_relaxed);
	atomic_store_explicit(&map->next_word, 0, memory_order_relaxed);
	for (uint32_t i = 0; i <= map->max_threads; i++) {
		struct smap_tblock *b = &map->blocks[i];

		/* not inflight: a thread may be between its increment and
		 * its decrement, having seen RESETTING */
		__atomic_store_n(&b->drops, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->truncated, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->wasted, 0, __ATOMIC_RELAXED);
	}
	pthread_rwlock_unlock(&map->export_lock);
	atomic_store_explicit(&map->state, SMAP_STOPPED, memory_order_release);
	return 0;
}
