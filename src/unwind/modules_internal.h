/* SPDX-License-Identifier: MIT */
/*
 * struct ustack_modtab's insides, shared by the files of src/unwind/ that
 * answer from it (unwind_modules.c: lookups and the cache, unwind_rows.c:
 * the whole table at once). Not for use outside src/unwind/.
 */
#ifndef USTACK_UNWIND_MODULES_INTERNAL_H
#define USTACK_UNWIND_MODULES_INTERNAL_H

#include <stdint.h>

#include "cfi/cfi.h"
#include "sframe/sframe.h"

struct ustack_elf;

struct ustack_modtab {
	/* identity */
	uint64_t dev, ino, size, mtime_ns, mem_key;
	int is_mem;
	struct ustack_elf *elf; /* NULL: the file could not be opened/parsed */
	void *mem_copy;         /* the image, for in-memory modules */
	int has_sframe, has_cfi, compile_cfi, cfi_warned;
	struct ustack_sframe sf;
	struct ustack_cfi cfi;
	struct ustack_cfi_table *cfi_table; /* compiled on first use */
	struct ustack_cfi_index *cfi_index; /* no search table: built on first use */
	int cfi_index_failed;   /* overlapping FDEs or no memory: walk */
	uint64_t plt[3][2];     /* .plt, .plt.sec, .iplt [start, end) in vaddrs */
	uint64_t entry;         /* e_entry (0: none): no caller, see entry_row() */
	uint64_t last_use;
	uint64_t serial;        /* unique per cache, never reused: weak refs */
	unsigned int refs;      /* the cache's own (while cached) + holders' */
	int slot;               /* index in the cache, -1 once evicted */
};

/*
 * The ELF entry point is where the kernel starts the program, with sp at
 * argc: nothing called it. Where no table covers it (ld.so's _start has
 * no CFI), the code from the entry up to the next address a table covers
 * runs in that first frame: ld.so's `_start` calls `_dl_start`, then
 * `_dl_start_user` calls `_dl_init` and jumps to the program, all on the
 * kernel's frame. So the whole gap, [entry, end), is the outermost frame,
 * as a CFI row with RA undefined would say; a return address into it
 * (`_dl_start` returning to entry + 8) ends the stack there. The gap is
 * capped at USTACK_ENTRY_GAP_MAX bytes: code after that is no longer
 * taken to be the entry's.
 */
#define USTACK_ENTRY_GAP_MAX 256

static inline void ustack_entry_row(uint64_t entry, uint64_t end, struct ustack_row *row)
{
	/* CFA above sp, as the unwinder checks before it reads the RA rule */
	*row = (struct ustack_row){ .start = entry, .end = end, .cfa_off = 8,
				    .ra_rule = USTACK_RULE_UNDEFINED };
}

/* The compiled CFI table when the cache was asked for one (built on first
 * use), else NULL: then the interpreter answers. */
static inline const struct ustack_cfi_table *ustack_modtab__cfi_table(struct ustack_modtab *m)
{
	if (m->compile_cfi && !m->cfi_table) {
		m->cfi_table = ustack_cfi_table__build(&m->cfi);
		if (!m->cfi_table)
			m->compile_cfi = 0; /* out of memory: interpret instead */
	}
	return m->cfi_table;
}

/* The FDE index of a CFI section without search table, built on first
 * use, else NULL: then ustack_cfi__find_row() searches by itself. */
static inline const struct ustack_cfi_index *ustack_modtab__cfi_index(struct ustack_modtab *m)
{
	if (!m->cfi.hdr_count && !m->cfi_index && !m->cfi_index_failed) {
		m->cfi_index = ustack_cfi_index__build(&m->cfi);
		m->cfi_index_failed = !m->cfi_index;
	}
	return m->cfi_index;
}

#endif
