/* SPDX-License-Identifier: MIT */
/*
 * Source lines and inline chains already read from DWARF, cached by build
 * ID (<cache>/lines/<build id>.lines), so that a report of frames seen
 * before opens no DWARF. Internal to the symbolizer.
 */
#ifndef USTACK_SYMBOLIZE_LINE_CACHE_H
#define USTACK_SYMBOLIZE_LINE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "symbolize/symbolize_dwarf.h"

struct ustack_line_cache;

/* Bounds on one cache file: what a hostile file may make us allocate, and
 * what a long-lived symbolizer may add. */
#define USTACK_LINE_CACHE_MAX_ENTRIES (1u << 20)
#define USTACK_LINE_CACHE_MAX_BYTES (64u << 20)
/* What <cache>/lines may hold together (least recently written go first). */
#define USTACK_LINE_CACHE_DIR_MAX_BYTES (64ull << 20)

/**
 * The cache of the DWARF file at @dwarf_path (the file the lines of build
 * ID @id are read from). The file <cache>/lines/<id>.lines is used only if
 * it was written from this same file: same path, size, mtime and inode;
 * otherwise (changed, replaced, another copy of the same build) it starts
 * empty and is replaced at the next save. A corrupt cache file is ignored
 * with one warning naming it and the offset.
 * @return the cache, or NULL: no cache directory, no build ID, @dwarf_path
 *         not found, or no memory
 */
struct ustack_line_cache *ustack_line_cache__open(const uint8_t *id, size_t id_size,
						  const char *dwarf_path);

/**
 * The levels cached for link-time address @addr (as ustack_dwarf__lookup()
 * gives them; the strings live as long as the cache).
 * @return the number of levels (0: the DWARF has nothing there), or
 *         -ENOENT when @addr was never cached
 */
int ustack_line_cache__get(struct ustack_line_cache *c, uint64_t addr,
			   struct ustack_dwarf_level *out);

/**
 * Add what ustack_dwarf__lookup() said for @addr (n >= 0 levels; strings
 * copied). An address cached already is left as it is.
 * @return 0, -ENOSPC (the file's bounds reached), -ENOMEM
 */
int ustack_line_cache__put(struct ustack_line_cache *c, uint64_t addr,
			   const struct ustack_dwarf_level *lv, int n);

/**
 * 1: the cache file says the DWARF file has no DWARF (nothing else is
 * cached then); set_no_dwarf() says so, for the next save (only on a cache
 * with no entries).
 */
int ustack_line_cache__no_dwarf(const struct ustack_line_cache *c);
void ustack_line_cache__set_no_dwarf(struct ustack_line_cache *c);

/**
 * The DWARF was found corrupt: write nothing of this run, and remove the
 * cache file if it was written from this same DWARF file.
 */
void ustack_line_cache__drop(struct ustack_line_cache *c);

/**
 * Write the cache file when something was added (the entries read plus the
 * new ones), then trim <cache>/lines. Best effort.
 * @return 0, or -errno of the write
 */
int ustack_line_cache__save(struct ustack_line_cache *c);

void ustack_line_cache__free(struct ustack_line_cache *c);

/* For the fuzz target and the tests: a cache from a file image, checked as
 * a cache file is (NULL with errno EBADMSG, one warning naming @name);
 * its image back, with what was added since. The identity fields are
 * taken from the image. */
struct ustack_line_cache *ustack_line_cache__from_image(const void *img, size_t len,
							const char *name);
int ustack_line_cache__image(struct ustack_line_cache *c, void **img, size_t *len);
/* The i-th cached address in order (0: ok, -ENOENT past the end). */
int ustack_line_cache__entry(const struct ustack_line_cache *c, size_t i, uint64_t *addr);

#endif
