/* SPDX-License-Identifier: MIT */
#ifndef USTACK_COMMON_CACHE_DIR_H
#define USTACK_COMMON_CACHE_DIR_H

#include <stddef.h>
#include <stdint.h>

/**
 * Where ustack keeps what it derives from files (kallsyms images,
 * decompressed debug files): $USTACK_CACHE_DIR, else /var/cache/ustack for
 * root, else ~/.cache/ustack.
 * @param buf scratch for a path built from $HOME
 * @return the directory (@buf or a static string), "" when there is none
 */
const char *ustack_cache_dir(char *buf, size_t size);

/* What <cache>/debug may hold, by default: the copies are rewritten from
 * the originals when they are needed again. */
#define USTACK_CACHE_DEBUG_MAX_MB 1024ull
/* The kallsyms images (one per boot and set of modules, ~4 MB each). */
#define USTACK_CACHE_KALLSYMS_MAX_BYTES (64ull << 20)

/**
 * Bytes <cache>/debug may hold: $USTACK_CACHE_MAX_MB (MiB; 0: no limit),
 * else USTACK_CACHE_DEBUG_MAX_MB.
 */
uint64_t ustack_cache_debug_budget(void);

/** A cached file was used: its mtime becomes now, so trims keep it longer. */
void ustack_cache_touch(int fd);

/**
 * Remove the least recently used (oldest mtime) regular files of @dir whose
 * names start with @prefix and end with one of @suffixes (NULL-terminated;
 * NULL: any) until they hold at most @max_bytes together. @keep (a name in
 * @dir, or NULL) is never removed: the file just written. Files another
 * process is still writing (*.tmp) are left alone. Best effort.
 * @return the number of files removed, or -errno when @dir cannot be read
 */
int ustack_cache_trim(const char *dir, const char *prefix, const char *const *suffixes,
		      uint64_t max_bytes, const char *keep);

/**
 * After a file was written to <cache>/debug (@dir) at @path: trim the
 * decompressed copies there (.dwarf, .zstd-dec, .gnu_debugdata) to
 * ustack_cache_debug_budget(), keeping @path.
 */
void ustack_debug_cache_trim(const char *dir, const char *path);

/**
 * Write @len bytes of @buf to @path, a file of @dir (made when missing,
 * with its parent),
 * through a temporary name (<path>.<pid>.tmp) and a rename: a reader sees
 * the old file or the whole new one, never half of it.
 * @return 0 or -errno
 */
int ustack_cache_write(const char *dir, const char *path, const void *buf, size_t len);

#endif
