/* SPDX-License-Identifier: MIT */
/*
 * ustack_u64map: a hash map from 64-bit keys to 64-bit values, the one
 * hash table of the library (trace writer and reader, symbolizer, deferred
 * engine, procmaps) and of the `ustack` command.
 *
 * Open addressing with linear probing, at most half full, grown by
 * doubling; deletion shifts entries back, so there are no tombstones and
 * lookups stay short after many deletions. Every key is valid, 0 included.
 * A pointer is stored as a value through (uintptr_t).
 *
 * After ustack_u64map__reserve(m, n), inserting until the map holds n keys
 * allocates nothing (for callers that must not allocate per event).
 *
 * Not thread-safe.
 */
#ifndef USTACK_HASHMAP_H
#define USTACK_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/ustack.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ustack_u64map;

/** @return an empty map (allocates nothing yet), or NULL with errno ENOMEM */
USTACK_API struct ustack_u64map *ustack_u64map__new(void);

/** Free the map (not what its values point to); NULL is a no-op. @param m the map */
USTACK_API void ustack_u64map__free(struct ustack_u64map *m);

/**
 * Make room for @n keys in all, so that inserting up to that many allocates
 * nothing.
 * @param m the map
 * @param n number of keys
 * @return 0, -ENOMEM (the map is unchanged), -EINVAL
 */
USTACK_API int ustack_u64map__reserve(struct ustack_u64map *m, size_t n);

/**
 * Look @key up.
 * @param m the map
 * @param key the key
 * @param val receives its value when found (may be NULL)
 * @return 1 (found) or 0 (absent)
 */
USTACK_API int ustack_u64map__get(const struct ustack_u64map *m, uint64_t key, uint64_t *val);

/**
 * Insert @key with @val, or overwrite its value.
 * @param m the map
 * @param key the key
 * @param val the value
 * @return 0, -ENOMEM (the map is unchanged), -EINVAL
 */
USTACK_API int ustack_u64map__put(struct ustack_u64map *m, uint64_t key, uint64_t val);

/**
 * The value of @key, inserted as 0 when absent: for counters and
 * find-or-create. The pointer is valid until the next insertion, deletion,
 * clear or free.
 * @param m the map
 * @param key the key
 * @param isnew set to 1 when @key was inserted now, else 0 (may be NULL)
 * @return the value's address, or NULL with errno ENOMEM (nothing inserted)
 */
USTACK_API uint64_t *ustack_u64map__slot(struct ustack_u64map *m, uint64_t key, int *isnew);

/**
 * Remove @key.
 * @param m the map
 * @param key the key
 * @param val receives the value it had (may be NULL)
 * @return 1 (removed) or 0 (absent)
 */
USTACK_API int ustack_u64map__delete(struct ustack_u64map *m, uint64_t key, uint64_t *val);

/**
 * Remove every key. The memory is kept, unless the keys filled less than
 * about 1/16 of the table: then it shrinks, so that clearing costs in
 * proportion to the keys, not to the largest size the map ever reached.
 * @param m the map
 */
USTACK_API void ustack_u64map__clear(struct ustack_u64map *m);

/** @param m the map @return the number of keys */
USTACK_API size_t ustack_u64map__count(const struct ustack_u64map *m);

/**
 * Iterate, in no particular order:
 *   size_t it = 0; uint64_t k, v;
 *   while (ustack_u64map__next(m, &it, &k, &v)) ...
 * The map must not change during the walk (collect the keys to delete).
 * @param m the map
 * @param iter cursor, 0 to start
 * @param key receives the next key (may be NULL)
 * @param val receives its value (may be NULL)
 * @return 1 (an entry) or 0 (done)
 */
USTACK_API int ustack_u64map__next(const struct ustack_u64map *m, size_t *iter, uint64_t *key,
				   uint64_t *val);

#ifdef __cplusplus
}
#endif
#endif /* USTACK_HASHMAP_H */
