/* SPDX-License-Identifier: MIT */
/*
 * Source lines and inline chains from DWARF, through elfutils libdw.
 * Internal to the symbolizer.
 */
#ifndef USTACK_SYMBOLIZE_DWARF_H
#define USTACK_SYMBOLIZE_DWARF_H

#include <stdint.h>

struct ustack_dwarf;

/** One level of an inline chain (strings live as long as the handle). */
struct ustack_dwarf_level {
	const char *name;    /**< DW_AT_name (through abstract origins) or NULL */
	const char *linkage; /**< DW_AT_linkage_name or NULL */
	const char *file;    /**< source file of the pc in this function, or NULL */
	uint32_t line;       /**< 0 when unknown */
	uint32_t column;     /**< 0 when unknown */
	int inlined;         /**< 1: a DW_TAG_inlined_subroutine */
	uint32_t decl_line;  /**< DW_AT_decl_line of the function (through its
	                          abstract origin), 0 when unknown */
};

/** Deepest inline chain reported (levels beyond are dropped, outermost kept). */
#define USTACK_DWARF_MAX_LEVELS 64

/**
 * Open the DWARF of the ELF file at @path.
 * @return the handle, or NULL with errno: ENOENT (no DWARF), EBADMSG
 *         (corrupt: a warning naming the file was printed), ENOMEM
 */
struct ustack_dwarf *ustack_dwarf__open(const char *path);

/** Close a handle; NULL is a no-op. */
void ustack_dwarf__close(struct ustack_dwarf *d);

/**
 * The inline chain at link-time address @addr, innermost first: level 0 is
 * the innermost inlined function (file/line from the line table), each next
 * level the function it was inlined into (file/line: its call site), the
 * last the DW_TAG_subprogram.
 * @param out receives up to USTACK_DWARF_MAX_LEVELS levels
 * @return the number of levels (0: no DWARF covers @addr, or only a line),
 *         -EBADMSG when the DWARF is corrupt (a unit header, a line program,
 *         DIEs): one warning naming the file, the section and the offset
 *         was printed, the first time only; every later lookup of this
 *         handle gives -EBADMSG without a word
 */
int ustack_dwarf__lookup(struct ustack_dwarf *d, uint64_t addr, struct ustack_dwarf_level *out);

#endif
