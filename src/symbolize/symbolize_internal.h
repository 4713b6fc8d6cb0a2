/* SPDX-License-Identifier: MIT */
/* The symbolizer's functions for the library's own sources (not exported). */
#ifndef USTACK_SYMBOLIZE_INTERNAL_H
#define USTACK_SYMBOLIZE_INTERNAL_H

#include <ustack/symbolize.h>

struct ustack_elf;

/**
 * ustack_symbolizer__add_file() for a file the caller has open already
 * (a snapshot's unwind tables): @image is used instead of opening
 * fm->path again. Borrowed: it must stay open until the symbolizer is
 * freed, and carry fm's build ID (it is where that ID was read from).
 * @return 0, -EINVAL, -ENOMEM
 */
int ustack_symbolizer__add_file_elf(struct ustack_symbolizer *s, const struct ustack_file_map *fm,
				    struct ustack_elf *image);

/**
 * The caller will ask for the @n file offsets @looks of @file_id (each
 * the offset looked up: pc - 1 for a return address), not asked before:
 * the table the lookups ask first answers them now, in one pass
 * (ustack_elf__expect_addrs()). Opens the file if it is not yet.
 */
void ustack_symbolizer__expect(struct ustack_symbolizer *s, uint64_t file_id,
			       const uint64_t *looks, size_t n);

/**
 * Write the line caches (line_cache.h) of the files whose DWARF answered
 * something new. ustack_symbolizer__free() does it too; a caller that exits
 * without freeing calls this.
 */
void ustack_symbolizer__save_line_caches(struct ustack_symbolizer *s);

/**
 * The @i-th file found for @file_id and not used (in the order they were
 * met; report --stats and symbolize -v show them). Opens the id when not
 * done yet.
 * @param path receives the file (valid until ustack_symbolizer__free())
 * @param source receives the enum ustack_image_source of its place
 * @return why (enum ustack_image_refusal_reason, image_lookup.h: 1 build ID
 *         differs, 2 content differs), 0 when there is no @i-th
 */
int ustack_symbolizer__file_refusal(struct ustack_symbolizer *s, uint64_t file_id, unsigned int i,
				    const char **path, unsigned int *source);

#endif
