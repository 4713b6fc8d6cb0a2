/* SPDX-License-Identifier: MIT */
/*
 * The unwind row: the one form every table source (SFrame, compiled DWARF
 * CFI) yields and the unwinder consumes. It is what SFrame encodes:
 *
 *   CFA = (SP | FP) + cfa_off
 *   RA  = *(CFA + ra_off)            (ra_rule == USTACK_RULE_OFFSET)
 *   FP  = *(CFA + fp_off)            (fp_rule == USTACK_RULE_OFFSET)
 *         unchanged                  (fp_rule == USTACK_RULE_SAME)
 *
 * and, from DWARF CFI only, rbx ("BX"): a function that realigns its stack
 * through rbx (glibc's _dl_runtime_resolve_*: push rbx; mov rsp, rbx;
 * and $-64, rsp) has CFA = BX + cfa_off, so the unwinder follows the
 * caller's rbx as it follows fp:
 *
 *   BX  = *(CFA + bx_off)            (bx_rule == USTACK_BX_OFFSET)
 *         unchanged                  (bx_rule == USTACK_BX_SAME)
 *         not known any more         (bx_rule == USTACK_BX_UNKNOWN: every
 *                                     source that does not say, e.g. SFrame)
 *
 * Addresses (start, end) are in the module's own virtual address space
 * (the p_vaddr space of its ELF file), not runtime addresses. A row returned
 * by a lookup is valid for the pc that was asked for; [start, end) is the
 * range over which it holds (for an SFrame PCMASK function, the covered
 * sub-range of the repetition block that contains the pc).
 */
#ifndef USTACK_COMMON_UNWIND_ROW_H
#define USTACK_COMMON_UNWIND_ROW_H

#include <stdint.h>

/* CFA base registers. */
enum ustack_cfa_reg {
	USTACK_CFA_SP = 0,
	USTACK_CFA_FP = 1,
	USTACK_CFA_BX = 2, /* rbx: DWARF CFI only, needs the caller's rbx known */
};

/* How the caller's rbx is recovered (bx_rule); 0, the default of every
 * source that does not track rbx, is "not known". */
enum ustack_bx_rule {
	USTACK_BX_UNKNOWN = 0,
	USTACK_BX_SAME = 1,
	USTACK_BX_OFFSET = 2, /* saved at CFA + bx_off */
};

/* How a register of the caller is recovered. */
enum ustack_rule {
	USTACK_RULE_SAME = 0,      /* unchanged (SFrame: not saved) */
	USTACK_RULE_OFFSET = 1,    /* saved at CFA + off */
	USTACK_RULE_UNDEFINED = 2, /* no value: for RA it means outermost frame */
};

enum ustack_row_flags {
	/* Outermost frame: no caller (SFrame FRE without offsets, DWARF RA
	 * undefined). The unwinder stops with USTACK_STOP_OUTERMOST. */
	USTACK_ROW_OUTERMOST = 1u << 0,
	/* The source has a rule this form cannot express (DWARF expression,
	 * CFA from another register, DRAP realignment): the unwinder must use
	 * another method for this frame. */
	USTACK_ROW_NEEDS_FALLBACK = 1u << 1,
	/* Signal trampoline (DWARF 'S' augmentation, __restore_rt): restore
	 * the caller's registers from the ucontext on the stack. */
	USTACK_ROW_SIGNAL = 1u << 2,
};

struct ustack_row {
	uint64_t start;   /* first address covered (module vaddr) */
	uint64_t end;     /* one past the last address covered */
	int32_t cfa_off;
	int32_t ra_off;   /* on x86-64 always -8 when ra_rule is OFFSET */
	int32_t fp_off;
	uint8_t cfa_reg;  /* enum ustack_cfa_reg */
	uint8_t ra_rule;  /* enum ustack_rule */
	uint8_t fp_rule;  /* enum ustack_rule */
	uint8_t flags;    /* enum ustack_row_flags */
	int32_t bx_off;
	uint8_t bx_rule;  /* enum ustack_bx_rule */
};

#endif
