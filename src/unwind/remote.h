/* SPDX-License-Identifier: MIT */
/*
 * Unwinding another process: pc -> mapping (procmaps) -> file tables
 * (modcache), plus names for frames. The memory reader is the caller's
 * (process_vm_readv for a live snapshot, a copied stack for perf samples).
 */
#ifndef USTACK_UNWIND_REMOTE_H
#define USTACK_UNWIND_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/procmaps.h>
#include "unwind/modules.h"
#include "unwind/unwind.h"

#define REMOTE_VMA_CACHE 8

struct remote_vma {
	struct ustack_vma vma;
	struct ustack_modtab *mod; /* a reference; NULL: no tables (anonymous, unreadable file) */
	int valid;
	uint32_t gen;              /* r->gen when filled: never reused */
};

/* Rows found, by runtime pc: the threads of a process stop at the same
 * return addresses, and a row from CFI costs a search and a parse of the
 * FDE's instructions each time. An entry is good while the mapping slot it
 * was found through still holds the same fill (gen). */
#define REMOTE_ROW_CACHE 256
struct remote_row {
	uint64_t pc;               /* 0: empty */
	uint32_t gen;
	unsigned int method;
	struct ustack_row row;     /* runtime addresses */
};

struct ustack_remote {
	struct ustack_procmaps *pm;
	struct ustack_modcache *mc;
	/* read target memory (for the vDSO image): 0 or -EFAULT */
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *read_ctx;
	struct remote_vma vmas[REMOTE_VMA_CACHE];
	unsigned int next_slot;
	uint32_t gen;
	struct remote_row rows[REMOTE_ROW_CACHE];
};

/** Set up @r over an open procmaps and module cache (both borrowed). */
void ustack_remote__init(struct ustack_remote *r, struct ustack_procmaps *pm,
			 struct ustack_modcache *mc,
			 int (*read)(void *ctx, uint64_t addr, void *buf, size_t len),
			 void *read_ctx);
/**
 * Open the tables of every executable mapping now, so that later lookups
 * (made while a thread is stopped) do not open files.
 * @return number of mappings with tables
 */
int ustack_remote__preload(struct ustack_remote *r);
/** Forget cached mappings (after the target's address space changed). */
void ustack_remote__flush(struct ustack_remote *r);
/** Release what @r holds (the tables of its cached mappings). */
void ustack_remote__fini(struct ustack_remote *r);

/** The unwind_ops callbacks; ctx is the struct ustack_remote. */
int ustack_remote__find_row(void *ctx, uint64_t pc, struct ustack_row *row, unsigned int *method);
int ustack_remote__is_code(void *ctx, uint64_t pc);
/* The mapping holding @sp (for ustack_unwind_clip_to_stack()), queried
 * anew each time: 0, or a negative errno */
int ustack_remote__stack_range(void *ctx, uint64_t sp, uint64_t *lo, uint64_t *hi);
/* Forwards to the reader given at init. */
int ustack_remote__read(void *ctx, uint64_t addr, void *buf, size_t len);

/**
 * Name of @pc: mapping, file offset, function symbol and offset in it.
 * *sym points into the file's tables: valid while a reference to them is
 * held (ustack_remote__module()).
 * @param lookup_pc pc to name (a return address minus one)
 * @param sym NULL: no symbol is looked up (nor @sym_off set)
 * @return 0 with *vma filled (and *sym NULL when no symbol covers it),
 *         -ENOENT when @pc is not mapped
 */
int ustack_remote__describe(struct ustack_remote *r, uint64_t lookup_pc,
			    const struct ustack_vma **vma, const char **sym, uint64_t *sym_off,
			    uint64_t *file_off);

/** Tables of the file mapped at @pc: a new reference (put it), or NULL. */
struct ustack_modtab *ustack_remote__module(struct ustack_remote *r, uint64_t pc);

#endif
