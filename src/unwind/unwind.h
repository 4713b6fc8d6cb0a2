/* SPDX-License-Identifier: MIT */
/*
 * The unwinder core: from (pc, sp, fp) and a memory reader, produce frames.
 * Table lookup is pluggable: the caller supplies find_row(), which maps a
 * runtime pc to a row (SFrame first, then CFI: its choice) and says which
 * method produced it. The frame-pointer heuristic is built in.
 *
 * Methods per frame, in order: the row from find_row(); when there is none
 * (-ENOENT) or it is marked NEEDS_FALLBACK, the frame-pointer heuristic,
 * accepted only if its result passes the same checks plus is_code(RA).
 * A row source that reports a corrupt table (-EBADMSG) stops the unwind
 * with USTACK_STOP_BAD_TABLE (the source is expected to drop that table).
 *
 * The core does no allocation and no syscalls of its own: it is used by the
 * async-signal-safe ustack_backtrace() as well as by remote unwinding.
 */
#ifndef USTACK_UNWIND_UNWIND_H
#define USTACK_UNWIND_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/ustack.h>
#include <ustack/unwind.h> /* struct ustack_regs */
#include "common/unwind_row.h"

#define USTACK_MAX_DEPTH 1024

struct ustack_unwind_ops {
	/*
	 * Row for runtime address @pc (already adjusted: for a return address
	 * the core asks for ra - 1). Sets *method to USTACK_METHOD_SFRAME or
	 * USTACK_METHOD_CFI. Returns 0, -ENOENT (no table covers pc) or
	 * -EBADMSG (corrupt table).
	 */
	int (*find_row)(void *ctx, uint64_t pc, struct ustack_row *row, unsigned int *method);
	/* Read @len bytes at @addr: 0 or -EFAULT. */
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	/* Non-zero when @pc lies in executable, file-backed or known code.
	 * Used to accept a frame-pointer step; NULL accepts any non-zero pc. */
	int (*is_code)(void *ctx, uint64_t pc);
	void *ctx;
};

struct ustack_walk_opts {
	size_t sz;          /* sizeof(struct ustack_walk_opts) (internal: the core
	                       of the public struct ustack_unwind_opts) */
	uint64_t stack_lo;  /* CFA/FP must stay within [stack_lo, stack_hi) */
	uint64_t stack_hi;  /* 0: no upper bound known */
	int max_depth;      /* 0: USTACK_MAX_DEPTH */
	/* Non-zero: frame 0's pc is a return address, not an exact pc
	 * (the caller already unwound its own frame). */
	int first_is_return;
	/* Non-zero: @bx is frame 0's rbx (for rows whose CFA is rbx-based,
	 * from DWARF CFI; unknown, such a row ends the walk as before) */
	int has_bx;
	uint64_t bx;
	/* Non-zero: @stack_hi is where a copy of the stack ends (the copy's
	 * size, or the top of the stack), not a bound a CFA may not pass: a
	 * CFA just above it stops the walk as a read fault (the memory was
	 * not copied), not as a bad step */
	int hi_is_copy_end;
	/* Non-zero: frame 0's fp (rbp) is not known (registers read from
	 * /proc/PID/syscall give only sp and pc). A row whose CFA is
	 * fp-based before a frame restored fp from the stack, and the
	 * frame-pointer heuristic, end the walk with USTACK_STOP_NO_INFO
	 * instead of using a value that is not there. */
	int fp_unknown;
	/* Non-zero: a return address read through a row must lie in code
	 * (ops->is_code), else the step is a bad one: for a source that
	 * knows every mapping as it is now (a live snapshot). A wrong row
	 * (hand-written assembly, an assembler whose SFrame drops
	 * .cfi_undefined rip) then ends the walk instead of yielding a data
	 * word as a caller. A recording's picture of the mappings may lag
	 * behind the process (a library mapped since), so it does not ask. */
	int ra_in_code;
};

/* Step-by-step form, for callers that store frames their own way (the
 * in-process backtrace writes straight into the user's buffer). */
struct ustack_unwind_cursor {
	const struct ustack_unwind_ops *ops;
	struct ustack_regs cur;
	uint64_t lo, hi;
	int is_return, started, done, depth, max;
	unsigned int signals, reason;
	int bx_known; /* bx: the current frame's rbx, where known */
	uint64_t bx;
	int fp_known; /* cur.fp is the frame's rbp (ustack_walk_opts.fp_unknown) */
	int hi_is_copy; /* ustack_walk_opts.hi_is_copy_end */
	int ra_in_code; /* ustack_walk_opts.ra_in_code */
};

/** Start a walk; the first ustack_unwind_next() yields the frame of @regs. */
void ustack_unwind_begin(struct ustack_unwind_cursor *c, const struct ustack_unwind_ops *ops,
			 const struct ustack_regs *regs, const struct ustack_walk_opts *opts);
/**
 * Next frame.
 * @return 1 with *frame filled, or 0 at the end (c->reason says why)
 */
int ustack_unwind_next(struct ustack_unwind_cursor *c, struct ustack_frame *frame);

/**
 * The frame before each one restored from a signal frame is the signal
 * trampoline (glibc's __restore_rt) the handler returns to: its pc is the
 * trampoline's first instruction, not an address after a call, so it is
 * marked USTACK_FRAME_EXACT_PC and named at the pc itself (one byte before
 * it lies outside __restore_rt). The cursor cannot mark it: it learns
 * that a frame is a trampoline only when it steps out of it.
 */
void ustack_unwind_mark_trampolines(struct ustack_frame *frames, int n);

/* 1 when the 11 bytes around a return address (from 6 before it) are
 * CPython's perf trampoline (`python -X perf`): the caller's return
 * address at sp + 8, CFA sp + 16 (the BPF program checks the same bytes) */
int ustack_unwind_is_py_trampoline(const uint8_t code[11]);

/**
 * Cut @frames (of ustack_unwind()) at the first one whose sp (its CFA)
 * lies outside the mapping that holds the stack it was found on: that of
 * frame 0's sp, and after a frame restored from a signal frame (the only
 * step that may change stacks, e.g. from a sigaltstack) that of its sp.
 * A thread that switched stacks (a makecontext() coroutine, a thread
 * started by a bare clone()) can hold in rbp a frame pointer into the
 * stack it came from, whose frames are not its callers, and a wrong row
 * at the bottom of such a stack reads past its end. For sources that
 * can tell mappings only after the fact (a snapshot asks for them after
 * the thread runs again, not while it is stopped); a stack copy bounds
 * itself.
 * @param range the mapping [*lo, *hi) holding an address: 0, or a negative
 *        errno (then that stack is not checked)
 * @param stop set, when frames are cut, to USTACK_STOP_NO_INFO (the cut
 *        frame came from the frame-pointer heuristic) or USTACK_STOP_BAD_STEP
 * @return the number of frames kept
 */
int ustack_unwind_clip_to_stack(struct ustack_frame *frames, int n,
				int (*range)(void *ctx, uint64_t addr, uint64_t *lo, uint64_t *hi),
				void *ctx, unsigned int *stop);

/**
 * Unwind from @regs into @frames (at most @max). frames[0] is the frame of
 * @regs itself; trampolines are marked (ustack_unwind_mark_trampolines()).
 * @param stop receives the enum ustack_stop_reason (may be NULL)
 * @return the number of frames stored (>= 1 when max >= 1 and pc != 0)
 */
int ustack_unwind(const struct ustack_unwind_ops *ops, const struct ustack_regs *regs,
		  const struct ustack_walk_opts *opts, struct ustack_frame *frames, int max,
		  unsigned int *stop);

/* Tests only: non-zero makes the in-process backtrace find its stack
 * mapping through the text of /proc/self/maps, as on kernels without
 * PROCMAP_QUERY. */
extern int ustack_self_force_text_maps;
/* Tests only: how many module slots the in-process backtrace uses (1..64;
 * fewer forces evictions). */
extern unsigned int ustack_self_module_slots;
/* Tests only: 0 turns off the in-process backtrace's whole-stack cache
 * (every walk then goes frame by frame through the row cache). */
extern int ustack_self_stack_cache;

/*
 * Row of a pc inside a PLT section that has no unwind info (the .plt/.iplt
 * of static executables): the stack is as at function entry, plus 8 after
 * the lazy-binding push at slot offset 11.
 */
void ustack_plt_row(uint64_t pc, struct ustack_row *row);

/*
 * Architecture helpers (x86-64 today), kept small so aarch64 can slot in.
 * Restore pc/sp/fp of the interrupted context from the signal frame whose
 * trampoline (__restore_rt) is executing with stack pointer @sp.
 */
/* The interrupted context's rbx, from the ucontext at @sp. */
int ustack_arch_signal_bx(const struct ustack_unwind_ops *ops, uint64_t sp, uint64_t *bx);
int ustack_arch_signal_regs(const struct ustack_unwind_ops *ops, uint64_t sp,
			    struct ustack_regs *out);

#endif
