/* SPDX-License-Identifier: MIT */
/*
 * ustack stackmap: stores each distinct stack (an array of u64 words) once
 * and hands out a 32-bit stack id for it.
 *
 * A "stack" is any array of 64-bit words: kernel stacks as arrays of ips,
 * user stacks as normalized frames (e.g. two words per frame: file offset
 * and file id). The map compares words only; it never interprets them.
 *
 * Guarantees (details in docs/stackmap.md):
 *  - ustack_stackmap__insert() is lock-free and never allocates: a fixed
 *    pool of entries and a fixed arena of words are sized at creation.
 *  - Ids are dense, assigned in first-insert order from 0, and stable for
 *    the life of the map (until ustack_stackmap__reset() or __free()).
 *  - A stack is stored at most once, even when several threads insert it
 *    at the same moment: exactly one caller is told "new" (return 1).
 *  - When the pool, the arena or the probe bound is exhausted the insert is
 *    dropped (-ENOSPC) and counted; nothing already stored is affected.
 *  - Async-signal-safe: insert may be called from a signal handler that
 *    interrupted another insert on the same thread.
 *
 * Binary export: the 'FSMB' version 2 layout of the ftrace stackmap
 * (stack_map_bin), native endian. The reader accepts both byte orders.
 */
#ifndef USTACK_STACKMAP_H
#define USTACK_STACKMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <ustack/ustack.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Defaults used when an opts field is 0 (or opts is NULL). */
#define USTACK_STACKMAP_DEF_CAPACITY    16384u
#define USTACK_STACKMAP_DEF_MAX_DEPTH   128u
#define USTACK_STACKMAP_DEF_AVG_WORDS   32u   /* arena = capacity * this */
#define USTACK_STACKMAP_DEF_MAX_THREADS 64u
/** Largest accepted capacity (ids stay below 2^31). */
#define USTACK_STACKMAP_MAX_CAPACITY    (1u << 30)
/** Largest accepted max_depth in words. */
#define USTACK_STACKMAP_MAX_DEPTH_LIMIT 4096u
/** Never a valid stack id: callers may use it for "no stack". */
#define USTACK_STACKMAP_NO_ID           UINT32_MAX

/** 'FSMB' binary export constants (the ftrace stack_map_bin format). */
#define USTACK_STACKMAP_BIN_MAGIC       0x464D5342u
#define USTACK_STACKMAP_BIN_VERSION     2u
#define USTACK_STACKMAP_BIN_HDR_SIZE    16u
#define USTACK_STACKMAP_BIN_ENTRY_SIZE  16u

struct ustack_stackmap;

/** Creation options (libbpf style: set sz = sizeof(opts); 0 = default). */
struct ustack_stackmap_opts {
	size_t sz;
	/** most distinct stacks the map holds; rounded up to a power of two
	 *  (minimum 16); default USTACK_STACKMAP_DEF_CAPACITY */
	uint32_t capacity;
	/** most words stored per stack; deeper stacks keep their first
	 *  max_depth words (the innermost frames) and count as truncated;
	 *  default USTACK_STACKMAP_DEF_MAX_DEPTH. Make it a multiple of the
	 *  words per frame when frames span several words. */
	uint32_t max_depth;
	/** arena size in words for all stacks together, each taking its
	 *  words + 3 (header); default capacity * 32, at most 0xfffffff0 */
	uint64_t arena_words;
	/** threads that get private (uncontended) counters; further threads
	 *  share one atomic block; default 64 */
	uint32_t max_threads;
	/** hash seed; 0 = random. Ids do not depend on it. */
	uint64_t seed;
};
#define ustack_stackmap_opts__last_field seed

/** Counters and sizes of a map. */
struct ustack_stackmap_stats {
	uint64_t entries;       /**< distinct stacks stored */
	uint64_t capacity;      /**< most distinct stacks */
	uint64_t table_size;    /**< hash slots (2 x capacity) */
	uint64_t max_depth;     /**< words kept per stack */
	uint64_t words_used;    /**< arena words consumed (incl. headers, waste) */
	uint64_t words_capacity;/**< arena size in words */
	uint64_t successes;     /**< inserts that returned an id (hits + new) */
	uint64_t drops;         /**< inserts refused with -ENOSPC */
	uint64_t truncated;     /**< successful inserts cut to max_depth */
	uint64_t wasted;        /**< pool entries taken but never published
	                           (lost insert races; arena ran out) */
};

/**
 * Create a map. Everything it will ever use is allocated here, as address
 * space: pages are zeroed by the kernel when first touched, so the memory
 * a map holds grows with what it stores (an insert may take a page fault,
 * which is async-signal-safe), and a capacity never used costs nothing.
 * @param opts options or NULL for defaults
 * @return the map (active: inserts accepted), or NULL with errno set
 *         (EINVAL for bad options, ENOMEM)
 */
USTACK_API struct ustack_stackmap *
ustack_stackmap__new(const struct ustack_stackmap_opts *opts);

/**
 * Free a map. No other call on it may be running. NULL is a no-op.
 * @param map the map
 */
USTACK_API void ustack_stackmap__free(struct ustack_stackmap *map);

/**
 * Find or store a stack. Lock-free, no allocation, async-signal-safe.
 * @param map the map
 * @param ips the stack words (innermost first)
 * @param nr number of words (> 0); words past max_depth are ignored
 * @param id receives the stack id
 * @return 1 if this call stored the stack (first time seen), 0 if it was
 *         already there, -EINVAL (bad arguments), -EAGAIN (map stopped or
 *         resetting), -ENOSPC (dropped: map full)
 */
USTACK_API int ustack_stackmap__insert(struct ustack_stackmap *map,
				       const uint64_t *ips, uint32_t nr,
				       uint32_t *id);

/**
 * Look a stack up by id.
 * @param map the map
 * @param id a stack id returned by insert
 * @param ips if not NULL, receives a pointer to the words, valid until
 *        reset or free
 * @param nr if not NULL, receives the number of words
 * @param ref if not NULL, receives the reference count (successful inserts)
 * @return 0, or -ENOENT if no stack has this id, -EINVAL
 */
USTACK_API int ustack_stackmap__lookup(const struct ustack_stackmap *map,
				       uint32_t id, const uint64_t **ips,
				       uint32_t *nr, uint64_t *ref);

/**
 * Read the counters (sums of the per-thread counters; successes is the
 * sum of the stored stacks' references, read under the lock that exports
 * take, so not from a signal handler).
 * @param map the map
 * @param st receives the counters
 * @param sz sizeof(*st) as the caller was built with (since 0.2): an older,
 *        shorter struct gets the fields it has, a newer one's unknown
 *        fields are zeroed
 * @return 0 or -EINVAL
 */
USTACK_API int ustack_stackmap__stats(const struct ustack_stackmap *map,
				      struct ustack_stackmap_stats *st, size_t sz);

/**
 * Accept inserts again after ustack_stackmap__stop().
 * @param map the map
 * @return 0, -EBUSY while a reset runs, -EINVAL
 */
USTACK_API int ustack_stackmap__start(struct ustack_stackmap *map);

/**
 * Refuse new inserts (they return -EAGAIN) and wait until every insert
 * already running has finished. After it returns the map is quiescent:
 * exports are exact and reset is allowed.
 * @param map the map
 * @return 0, -EBUSY while a reset runs, -EINVAL
 */
USTACK_API int ustack_stackmap__stop(struct ustack_stackmap *map);

/**
 * Drop every stack and zero the counters; ids restart at 0. Only allowed
 * while stopped. Pointers from lookup become invalid.
 * @param map the map
 * @return 0, -EBUSY if the map is active or another reset runs, -EINVAL
 */
USTACK_API int ustack_stackmap__reset(struct ustack_stackmap *map);

/**
 * Write every stack as text, in id order:
 *   "stack_id N [ref R, depth D]" then "  [i] 0xWORD" per word, then a
 * blank line. A snapshot: stacks inserted meanwhile may be missing.
 * @param map the map
 * @param f output stream
 * @return number of stacks written, or -EIO / -EINVAL
 */
USTACK_API int ustack_stackmap__write_text(struct ustack_stackmap *map, FILE *f);

/**
 * Write the counters in the seed's stack_map_stat form
 * ("entries: N / CAP", "table_size:", "successes:", "drops:",
 * "success_rate: P%" (only when there was at least one insert)).
 * @param map the map
 * @param f output stream
 * @return 0, -EIO, -EINVAL
 */
USTACK_API int ustack_stackmap__write_stats(const struct ustack_stackmap *map,
					    FILE *f);

/**
 * Export the map in the 'FSMB' v2 binary layout (native endian) into a
 * new malloc'd buffer the caller frees.
 * @param map the map
 * @param buf receives the buffer
 * @param size receives its size in bytes
 * @return number of stacks exported, or -ENOMEM / -EINVAL
 */
USTACK_API int ustack_stackmap__export_bin(struct ustack_stackmap *map,
					   void **buf, size_t *size);

/**
 * Write the 'FSMB' v2 binary export to a stream.
 * @param map the map
 * @param f output stream
 * @return number of stacks written, or -EIO / -ENOMEM / -EINVAL
 */
USTACK_API int ustack_stackmap__write_bin(struct ustack_stackmap *map, FILE *f);

/* ---- reader of the binary form (untrusted input) ---------------------- */

struct ustack_stackmap_bin;

/** Reader options. */
struct ustack_stackmap_bin_opts {
	size_t sz;
	/** if not NULL, receives a one-line reason on failure, naming the
	 *  byte offset ("offset 48: entry 2: nr 9 needs 72 bytes, 40 left") */
	char *errbuf;
	size_t errbuf_sz;
};
#define ustack_stackmap_bin_opts__last_field errbuf_sz

/** One stack of a binary export. */
struct ustack_stackmap_bin_entry {
	uint32_t stack_id;
	uint32_t nr;          /**< number of words */
	uint32_t ref_count;
	uint32_t reserved;    /**< as found in the file */
	uint64_t offset;      /**< byte offset of the entry header */
	const uint64_t *ips;  /**< nr words, host order, owned by the reader */
};

/**
 * Parse and fully validate a binary export (either byte order). The data
 * is copied; the caller may free it afterwards.
 * @param data the bytes
 * @param size their number
 * @param opts options or NULL
 * @return the reader, or NULL with errno EBADMSG (corrupt: reason logged
 *         and put in opts->errbuf), ENOMEM or EINVAL (bad opts, or NULL
 *         data with a size)
 */
USTACK_API struct ustack_stackmap_bin *
ustack_stackmap_bin__open(const void *data, size_t size,
			  const struct ustack_stackmap_bin_opts *opts);

/**
 * Free a reader. NULL is a no-op.
 * @param bin the reader
 */
USTACK_API void ustack_stackmap_bin__free(struct ustack_stackmap_bin *bin);

/**
 * @param bin the reader
 * @return number of stacks in the export
 */
USTACK_API size_t ustack_stackmap_bin__nr_stacks(const struct ustack_stackmap_bin *bin);

/**
 * @param bin the reader
 * @return 1 if the data was in the other byte order (it was swapped)
 */
USTACK_API int ustack_stackmap_bin__swapped(const struct ustack_stackmap_bin *bin);

/**
 * Get the idx-th stack in file order.
 * @param bin the reader
 * @param idx 0 .. nr_stacks-1
 * @param e receives the entry
 * @return 0, or -ENOENT past the end, -EINVAL
 */
USTACK_API int ustack_stackmap_bin__entry(const struct ustack_stackmap_bin *bin,
					  size_t idx,
					  struct ustack_stackmap_bin_entry *e);

/**
 * Find a stack by id (binary search).
 * @param bin the reader
 * @param stack_id the id
 * @param e receives the entry
 * @return 0, or -ENOENT, -EINVAL
 */
USTACK_API int ustack_stackmap_bin__find(const struct ustack_stackmap_bin *bin,
					 uint32_t stack_id,
					 struct ustack_stackmap_bin_entry *e);

#ifdef __cplusplus
}
#endif
#endif /* USTACK_STACKMAP_H */
