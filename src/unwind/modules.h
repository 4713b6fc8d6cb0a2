/* SPDX-License-Identifier: MIT */
/*
 * Unwind tables of mapped files, for unwinding other processes: one entry
 * per file (ELF mapped read-only, its .sframe and its DWARF CFI), cached by
 * file identity (dev, inode, size, mtime) so a library shared by many
 * processes or threads is opened and parsed once.
 */
#ifndef USTACK_UNWIND_MODULES_H
#define USTACK_UNWIND_MODULES_H

#include <stdint.h>

#include "common/unwind_row.h"

struct ustack_elf;
struct ustack_modtab;
struct ustack_modcache;

enum ustack_modcache_flags {
	/*
	 * Compile each file's DWARF CFI into a sorted row table on its first
	 * CFI lookup, and answer later lookups from it (a binary search
	 * instead of interpreting the FDE each time). Worth it for many
	 * lookups (recording); a one-shot snapshot is faster without.
	 */
	USTACK_MODCACHE_COMPILE_CFI = 1u << 0,
};

/** An empty cache holding at most @max_files open files (0: 256). */
struct ustack_modcache *ustack_modcache__new(unsigned int max_files, unsigned int flags);
void ustack_modcache__free(struct ustack_modcache *mc);

/**
 * Tables of the file at @path (opened through /proc/PID/map_files or
 * /proc/PID/root by the caller). Cached; a file that cannot be opened or
 * parsed is remembered as such too, so it is reported once.
 * @return the tables (owned by the cache), or NULL with errno
 */
struct ustack_modtab *ustack_modcache__get(struct ustack_modcache *mc, const char *path);

/**
 * Tables of an ELF image held in memory (the vDSO, copied from the
 * target). @key distinguishes images (e.g. the vDSO's address + size).
 */
struct ustack_modtab *ustack_modcache__get_mem(struct ustack_modcache *mc, uint64_t key,
					       const void *image, size_t size, const char *name);

/**
 * Row for @vaddr (the file's own virtual address): SFrame first, then DWARF
 * CFI (.eh_frame, else .debug_frame).
 * @param method receives USTACK_METHOD_SFRAME or USTACK_METHOD_CFI
 * @return 0, -ENOENT (no table covers it), -EBADMSG (corrupt table; that
 *         table is reported once and not used again)
 */
int ustack_modtab__find_row(struct ustack_modtab *m, uint64_t vaddr, struct ustack_row *row,
			    unsigned int *method);

/** The ELF file, for symbols and offset <-> vaddr translation. */
struct ustack_elf *ustack_modtab__elf(struct ustack_modtab *m);

#endif
