/* SPDX-License-Identifier: MIT */
/*
 * DWARF call frame information (.eh_frame, .eh_frame_hdr, .debug_frame)
 * turned into unwind rows (common/unwind_row.h).
 *
 * Two ways in:
 *  - struct ustack_cfi: a zero-allocation view over the section bytes.
 *    ustack_cfi__find_row() finds the FDE covering a pc (binary search in
 *    .eh_frame_hdr when given, else a linear walk) and interprets its
 *    instructions up to that pc. Async-signal-safe: no allocation, no
 *    locks, no logging, bounded work. Used by the in-process backtrace.
 *  - struct ustack_cfi_table: every FDE compiled once into sorted rows,
 *    looked up by binary search. Cold build (allocates, warns about
 *    corrupt FDEs), hot lookup. Used for remote processes.
 *
 * Addresses: *_addr arguments say where the first byte of a section lives
 * in the address space that later pcs are given in (sh_addr / p_vaddr for
 * a file read from disk, the runtime address for in-memory use). pcrel and
 * datarel pointers are resolved against them; rows come back in that
 * same space. See docs/cfi.md for the full mapping and its limits.
 */
#ifndef USTACK_CFI_CFI_H
#define USTACK_CFI_CFI_H

#include <stddef.h>
#include <stdint.h>

#include "common/unwind_row.h"

struct ustack_elf;

/* Work bounds (the lookup must terminate on any input). */
#define USTACK_CFI_MAX_INSNS   (1u << 20) /* CFA instructions per lookup */
#define USTACK_CFI_STACK_DEPTH 32         /* remember_state nesting */
/* A PLT expression row wider than this is not expanded slot by slot. */
#define USTACK_CFI_PLT_MAX_SPAN (1u << 18)

/* A view over one CFI section; fill with an init function, no free. */
struct ustack_cfi {
	const uint8_t *sec;      /* .eh_frame or .debug_frame bytes */
	uint64_t sec_size;
	uint64_t sec_addr;       /* address of sec[0] */
	const uint8_t *hdr;      /* .eh_frame_hdr or NULL */
	uint64_t hdr_size;
	uint64_t hdr_addr;
	uint64_t hdr_table_off;  /* offset of the search table inside hdr */
	uint64_t hdr_count;      /* entries of the search table (0: no table) */
	uint8_t hdr_enc;         /* pointer encoding of the table entries */
	uint8_t hdr_entry_size;  /* bytes per (initial_loc, fde) pair */
	uint8_t is_debug_frame;
	const char *file;        /* the ELF file's path for messages, or NULL */
};

/**
 * View an .eh_frame section, with its .eh_frame_hdr when available.
 * @param eh_frame section bytes (kept alive by the caller)
 * @param size bytes at @eh_frame (for in-memory use: up to the end of the
 *        mapping; the zero terminator ends the walk)
 * @param eh_frame_addr address of eh_frame[0] in the lookup address space
 * @param eh_frame_hdr .eh_frame_hdr bytes or NULL (then lookups walk the
 *        whole section)
 * @param hdr_size bytes at @eh_frame_hdr
 * @param hdr_addr address of eh_frame_hdr[0] in the same space
 * @return 0, -EBADMSG when the header is corrupt (bad version, table
 *         outside the section)
 */
int ustack_cfi__init_eh_frame(struct ustack_cfi *cfi, const void *eh_frame, size_t size,
			      uint64_t eh_frame_addr, const void *eh_frame_hdr,
			      size_t hdr_size, uint64_t hdr_addr);

/**
 * View a .debug_frame section (CIE id 0xffffffff or 64-bit ~0, absolute
 * addresses, CIE pointers are section offsets).
 * @return 0
 */
int ustack_cfi__init_debug_frame(struct ustack_cfi *cfi, const void *debug_frame, size_t size);

/**
 * Where .eh_frame starts according to an .eh_frame_hdr (its eh_frame_ptr),
 * for in-memory use when only PT_GNU_EH_FRAME is known.
 * @return 0, -EBADMSG (bad version or encoding), -ENOENT (omitted)
 */
int ustack_cfi__hdr_eh_frame_addr(const void *eh_frame_hdr, size_t hdr_size,
				  uint64_t hdr_addr, uint64_t *eh_frame_addr);

/**
 * Row for @pc. Async-signal-safe.
 * @param row receives the row; row->start/end bound the pc range over
 *        which it holds (an advance_loc boundary, or the part of a PLT
 *        slot where the PLT expression evaluates to the returned offset)
 * @return 0, -ENOENT (no FDE covers @pc), -EBADMSG (corrupt entry or
 *         instructions before @pc, remember stack too deep, work bound hit)
 */
int ustack_cfi__find_row(const struct ustack_cfi *cfi, uint64_t pc, struct ustack_row *row);

/** ".eh_frame" or ".debug_frame", for messages. */
const char *ustack_cfi__section_name(const struct ustack_cfi *cfi);

/*
 * ---- ELF convenience (cfi_elf.c) ----
 * Fill @cfi from an ELF file: .eh_frame (+ PT_GNU_EH_FRAME / .eh_frame_hdr),
 * else .debug_frame when @allow_debug_frame. Addresses are file vaddrs.
 * The view points into @elf's mapping: keep the file open.
 * @return 0, -ENOENT (no CFI), -EBADMSG
 */
int ustack_cfi__init_elf(struct ustack_cfi *cfi, const struct ustack_elf *elf,
			 int allow_debug_frame);

/*
 * ---- the whole table at once (cfi_rows.c) ----
 * Receives rows in increasing address order, never overlapping. @bad
 * non-zero: every pc of [row->start, row->end) gets -EBADMSG (the rule
 * fields are then meaningless). A non-zero return stops the walk and is
 * passed back.
 */
typedef int (*ustack_cfi_span_fn)(void *ctx, const struct ustack_row *row, int bad);

/* ustack_cfi__rows() gives up (-E2BIG) on an FDE with more rows than this
 * (PLT expression rows split per half slot can multiply a few bytes). */
#define USTACK_CFI_ROWS_MAX_FDE (1u << 22)

/**
 * Every row of @cfi exactly as ustack_cfi__find_row() answers it: the FDE
 * a pc is given by the .eh_frame_hdr search (or by the walk, first FDE in
 * section order), the rows its instructions give up to the first damage,
 * -EBADMSG after it; where the search or the walk itself meets damage,
 * -EBADMSG over the addresses it decides (that can reach to UINT64_MAX;
 * the last address, UINT64_MAX itself, is never covered). A PLT expression
 * row comes split per half slot, as the lookup resolves it. Cold path:
 * allocates, runs every FDE once.
 * @return 0, -ENOMEM, -E2BIG, or fn()'s non-zero return
 */
int ustack_cfi__rows(const struct ustack_cfi *cfi, ustack_cfi_span_fn fn, void *ctx);

/*
 * ---- FDE index for a section without a search table (cfi_index.c) ----
 * Without an .eh_frame_hdr table ustack_cfi__find_row() walks the section
 * from its start on every lookup. The index is that walk done once: the
 * FDEs sorted by start address, then a binary search per lookup. The
 * build allocates (cold path); a lookup does not.
 */
struct ustack_cfi_index;

/**
 * Index every FDE of @cfi, walking it as ustack_cfi__find_row() does (up
 * to the terminator or the first entry it cannot parse).
 * @return the index, or NULL with errno: ENOMEM, or ENOTUNIQ when two FDEs
 *         overlap (the walk's answer then depends on section order: keep
 *         walking)
 */
struct ustack_cfi_index *ustack_cfi_index__build(const struct ustack_cfi *cfi);

/**
 * Row for @pc: the same answer as ustack_cfi__find_row(@cfi, @pc, @row)
 * for a @cfi without search table, by binary search.
 * @return 0, -ENOENT, -EBADMSG (as ustack_cfi__find_row())
 */
int ustack_cfi_index__find_row(const struct ustack_cfi *cfi, const struct ustack_cfi_index *ix,
			       uint64_t pc, struct ustack_row *row);

/** FDEs indexed (those covering at least one byte). */
size_t ustack_cfi_index__nr_fdes(const struct ustack_cfi_index *ix);
/** Free; NULL is a no-op. */
void ustack_cfi_index__free(struct ustack_cfi_index *ix);

/* ---- compiled table (cfi_table.c) ---- */
struct ustack_cfi_table;

/**
 * Compile every FDE of @cfi into sorted rows. A corrupt FDE is reported
 * once (pr_warn with section and byte offset) and left out; a corrupt
 * entry length ends the walk (FDEs before it are kept).
 * @return the table, or NULL with errno (ENOMEM)
 */
struct ustack_cfi_table *ustack_cfi_table__build(const struct ustack_cfi *cfi);

/**
 * Row for @pc by binary search. Same result as ustack_cfi__find_row()
 * except: a pc inside an FDE that was left out as corrupt gives -ENOENT,
 * and where FDEs overlap, the one with the lower start wins here.
 * @return 0 or -ENOENT
 */
int ustack_cfi_table__find_row(const struct ustack_cfi_table *t, uint64_t pc,
			       struct ustack_row *row);

/**
 * Every row of @t in address order, exactly as ustack_cfi_table__find_row()
 * answers (so never a bad one: corrupt FDEs were left out).
 * @return 0 or fn()'s non-zero return
 */
int ustack_cfi_table__rows(const struct ustack_cfi_table *t, ustack_cfi_span_fn fn, void *ctx);

/** Number of rows (holes between FDEs not counted). */
size_t ustack_cfi_table__nr_rows(const struct ustack_cfi_table *t);
/** Number of FDEs compiled / left out as corrupt. */
size_t ustack_cfi_table__nr_fdes(const struct ustack_cfi_table *t);
size_t ustack_cfi_table__nr_bad_fdes(const struct ustack_cfi_table *t);
/** Bytes of memory held by the table. */
size_t ustack_cfi_table__mem_size(const struct ustack_cfi_table *t);
/** Free; NULL is a no-op. */
void ustack_cfi_table__free(struct ustack_cfi_table *t);

/* ---- internal, shared between the cfi_*.c files ---- */

/* A parsed CIE. */
struct ustack_cfi_cie {
	uint64_t off;           /* entry offset in the section */
	const uint8_t *insns;   /* initial instructions */
	uint64_t insns_len;
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;        /* 'R' (eh_frame) or absptr of addr_size */
	uint8_t addr_size;
	uint8_t has_z;
	uint8_t signal;         /* 'S' */
};

/* A parsed FDE with its CIE. */
struct ustack_cfi_fde {
	uint64_t off;           /* entry offset in the section */
	uint64_t pc_begin, pc_end;
	const uint8_t *insns;
	uint64_t insns_len;
	struct ustack_cfi_cie cie;
};

/* Parameters of the x86-64 PLT CFA expression
 *   CFA = rsp + base + (((pc & mask) >= lit) << shift) */
struct ustack_cfi_plt {
	int32_t base;
	uint8_t mask, lit, shift;
};

/*
 * Parse the entry at @off. Returns 1 and fills @fde for an FDE, 0 for a
 * CIE (skip it), -ENOENT at the end of the section (zero terminator or no
 * bytes left), -EBADMSG when corrupt. *next receives the next entry's
 * offset when the entry's length was valid (even if its body is corrupt),
 * else it is left at ~0.
 */
int ustack_cfi__parse_entry(const struct ustack_cfi *cfi, uint64_t off,
			    struct ustack_cfi_fde *fde, uint64_t *next);

/*
 * Interpret @fde. Lookup mode (emit == NULL): stop at the row covering
 * @pc and store it in *row (a PLT expression row is resolved for @pc).
 * Compile mode: call emit() for every row in address order; a PLT row is
 * passed with its parameters in *plt (else plt is NULL) for the caller to
 * expand. Returns 0, -EBADMSG, or emit()'s negative return.
 */
typedef int (*ustack_cfi_emit_fn)(void *ctx, const struct ustack_row *row,
				  const struct ustack_cfi_plt *plt);
int ustack_cfi__exec(const struct ustack_cfi *cfi, const struct ustack_cfi_fde *fde,
		     uint64_t pc, struct ustack_row *row, ustack_cfi_emit_fn emit, void *ctx);

/* Resolve a PLT row for @pc: set cfa_off and narrow start/end to the part
 * of the slot that holds @pc. */
void ustack_cfi__plt_apply(const struct ustack_cfi_plt *plt, uint64_t pc, struct ustack_row *row);

/* Split a PLT expression row into the rows ustack_cfi__plt_apply() gives
 * over it (one per half slot, in order) and pass each to @add. Returns 0
 * or add()'s non-zero return. */
int ustack_cfi__plt_split(const struct ustack_row *row, const struct ustack_cfi_plt *plt,
			  int (*add)(void *ctx, const struct ustack_row *row), void *ctx);

/* .eh_frame_hdr search table, as ustack_cfi__find_row() uses it.
 * hdr_loc: initial location of entry @idx (0, -ERANGE, -EBADMSG).
 * hdr_search: the entry a binary search picks for @pc, the last one with
 *   initial_loc <= pc when sorted (0, -ENOENT, -EBADMSG).
 * hdr_fde: the FDE entry @idx names, checked to start at its initial
 *   location (0, -ERANGE, -EBADMSG). */
int ustack_cfi__hdr_loc(const struct ustack_cfi *cfi, uint64_t idx, uint64_t *loc);
int ustack_cfi__hdr_search(const struct ustack_cfi *cfi, uint64_t pc, uint64_t *idx);
int ustack_cfi__hdr_fde(const struct ustack_cfi *cfi, uint64_t idx, struct ustack_cfi_fde *fde);

#endif
