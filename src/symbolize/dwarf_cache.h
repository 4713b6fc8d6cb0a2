/* SPDX-License-Identifier: MIT */
/*
 * Decompressed copies of compressed DWARF, cached by build ID
 * (<cache>/debug/<build id>.dwarf). Internal to the symbolizer.
 */
#ifndef USTACK_SYMBOLIZE_DWARF_CACHE_H
#define USTACK_SYMBOLIZE_DWARF_CACHE_H

#include <libelf.h>

/**
 * @elf (opened from @path, its unread DWARF sections already SHT_NOBITS)
 * has compressed DWARF sections worth caching: open the cached copy, or
 * make one.
 * @param prepare applied to the copy as it was to @elf; 0: no DWARF in it
 * @return the copy (opened ELF_C_READ_MMAP_PRIVATE from the descriptor put
 *         in *fd_out), to be used instead of @elf; NULL: keep using @elf,
 *         whose sections may have been inflated in memory on the way (the
 *         copy was written then, when the cache directory allows it)
 */
Elf *ustack_dwarf_cache__open(Elf *elf, const char *path, int *fd_out, int (*prepare)(Elf *));

#endif
