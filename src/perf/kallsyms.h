/* SPDX-License-Identifier: MIT */
/*
 * Kernel text symbols from /proc/kallsyms, sorted by address, with an
 * on-disk cache: the kernel formats 100k+ lines through vsnprintf each time
 * the file is read (~0.1 s of CPU), which a recording on a busy machine
 * takes from the workload. The cache is keyed by the boot ID, the kernel
 * release and a hash of /proc/modules (the symbol set changes only with
 * those), and is validated like any other input before use.
 */
#ifndef USTACK_PERF_KALLSYMS_H
#define USTACK_PERF_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ustack_kallsyms;

/**
 * Load the symbols.
 * @param cache_dir directory of the cache; NULL: $USTACK_CACHE_DIR, else
 *        /var/cache/ustack for root, else $HOME/.cache/ustack; "": no cache
 * @param from_cache if not NULL, set to 1 when the cache was used
 * @return the table (possibly empty: addresses hidden by kptr_restrict), or
 *         NULL with errno (ENOMEM)
 */
struct ustack_kallsyms *ustack_kallsyms__load(const char *cache_dir, int *from_cache);

/** Number of symbols. */
size_t ustack_kallsyms__count(const struct ustack_kallsyms *k);

/**
 * The symbol holding @ip: the last one starting at or below it, if @ip lies
 * within its extent. /proc/kallsyms has no sizes: a symbol reaches the next
 * one in the same image (the kernel, or the same module); the last one of
 * an image reaches to the end of the page after its start (perf's rule),
 * so an address in the gap after the kernel or a module, or far past the
 * last symbol, finds nothing.
 * @param size receives the extent (never 0)
 * @param module receives the module name, or NULL for the kernel itself
 * @return 0 or -ENOENT
 */
int ustack_kallsyms__find(const struct ustack_kallsyms *k, uint64_t ip, uint64_t *addr,
			  uint64_t *size, const char **name, const char **module);

void ustack_kallsyms__free(struct ustack_kallsyms *k);

/* ---- the two untrusted inputs from memory, for tests and fuzzing --------- */

/**
 * Parse /proc/kallsyms text (as __load() does without a cache).
 * @return the table, or NULL with errno (ENOMEM)
 */
struct ustack_kallsyms *ustack_kallsyms__from_text(const char *text, size_t len);

/**
 * Validate and load a cache file image (as __load() does with the file).
 * @param key the cache key it must carry
 * @return the table, or NULL with errno (EBADMSG: not a valid cache; ENOMEM)
 */
struct ustack_kallsyms *ustack_kallsyms__from_cache(const void *img, size_t len, uint64_t key);

/**
 * The bytes of the cache file __load() writes for @k (free() *img).
 * @return 0 or -ENOMEM
 */
int ustack_kallsyms__cache_image(const struct ustack_kallsyms *k, uint64_t key, void **img,
				 size_t *len);

/**
 * Symbol @i in address order.
 * @param module receives the module name, or NULL for the kernel itself
 * @return 0 or -ENOENT (@i >= count)
 */
int ustack_kallsyms__entry(const struct ustack_kallsyms *k, size_t i, uint64_t *addr,
			   const char **name, const char **module);

#endif
