// SPDX-License-Identifier: MIT
/*
 * The unwinder loop. Per frame: a row from the table source (SFrame, CFI),
 * else the frame-pointer heuristic; signal trampolines restore the full
 * interrupted context. Every step is checked: the CFA moves up, stays
 * aligned and inside the stack bounds; the depth is capped. A step that
 * fails a check ends the walk (USTACK_STOP_BAD_STEP) rather than producing
 * a frame that might be wrong.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/compiler.h"
#include "unwind/unwind.h"

/* Caps the number of consecutive signal frames (nested signals). */
#define MAX_SIGNAL_FRAMES 16

static const char *const method_names[] = {
	[USTACK_METHOD_REGS] = "regs",
	[USTACK_METHOD_SFRAME] = "sframe",
	[USTACK_METHOD_CFI] = "cfi",
	[USTACK_METHOD_FP] = "fp",
	[USTACK_METHOD_SIGNAL] = "signal",
	[USTACK_METHOD_PLT] = "plt",
	[USTACK_METHOD_KERNEL_FP] = "kernel-fp",
};

static const char *const stop_names[] = {
	[USTACK_STOP_OUTERMOST] = "outermost",
	[USTACK_STOP_DEPTH] = "depth",
	[USTACK_STOP_NO_INFO] = "no-info",
	[USTACK_STOP_BAD_STEP] = "bad-step",
	[USTACK_STOP_READ_FAULT] = "read-fault",
	[USTACK_STOP_BAD_TABLE] = "bad-table",
	[USTACK_STOP_NOT_LOADED] = "not-loaded",
	[USTACK_STOP_MAPS_BUSY] = "maps-busy",
};

USTACK_API const char *ustack_method_name(unsigned int method)
{
	return method < ARRAY_SIZE(method_names) ? method_names[method] : "?";
}

USTACK_API const char *ustack_stop_reason_name(unsigned int reason)
{
	return reason < ARRAY_SIZE(stop_names) ? stop_names[reason] : "?";
}

void ustack_plt_row(uint64_t pc, struct ustack_row *row)
{
	/* 16-byte slots: "jmp *GOT; push $n; jmp PLT0": the push at slot
	 * offset 11 moves sp by 8 (ld's generated CFI says the same) */
	int pushed = (pc & 15) >= 11;

	*row = (struct ustack_row){
		.start = pushed ? (pc & ~15ull) + 11 : pc & ~15ull,
		.end = pushed ? (pc & ~15ull) + 16 : (pc & ~15ull) + 11,
		.cfa_reg = USTACK_CFA_SP, .cfa_off = pushed ? 16 : 8,
		.ra_rule = USTACK_RULE_OFFSET, .ra_off = -8, .fp_rule = USTACK_RULE_SAME,
	};
}

static inline int addr_in_stack(const struct ustack_unwind_cursor *c, uint64_t addr)
{
	return addr >= c->lo && (!c->hi || addr < c->hi);
}

static inline int read_u64(const struct ustack_unwind_cursor *c, uint64_t addr, uint64_t *val)
{
	return c->ops->read(c->ops->ctx, addr, val, sizeof(*val));
}

/* How far above a stack copy's end a CFA still reads as the stack going
 * on (one frame's worth, generously); farther is a wrong step. */
#define COPY_END_SLACK (1u << 20)

/*
 * One step with a row. Returns 0 and fills *next, or a stop reason + 1
 * (so 0 stays "ok").
 */
static int step_row(const struct ustack_unwind_cursor *c, const struct ustack_row *row,
		    struct ustack_regs *next, uint64_t *nbx, int *nbx_known, int *nfp_known)
{
	const struct ustack_regs *cur = &c->cur;
	uint64_t base = row->cfa_reg == USTACK_CFA_FP ? cur->fp
			: row->cfa_reg == USTACK_CFA_BX ? c->bx
							: cur->sp;
	uint64_t cfa = base + (int64_t)row->cfa_off;

	if (row->cfa_reg == USTACK_CFA_FP && !c->fp_known)
		return USTACK_STOP_NO_INFO + 1;
	/* The CFA sits above the return address, so above sp; it is 8-byte
	 * aligned on x86-64 (16 at calls, 8 in PLT and prologue rows). */
	if (cfa <= cur->sp || (cfa & 7))
		return USTACK_STOP_BAD_STEP + 1;
	if (!addr_in_stack(c, cfa - 1))
		/* just above the end of a stack copy: those bytes were not
		 * copied (a deep stack, a 16 KiB copy), the step is not wrong */
		return (c->hi_is_copy && c->hi && cfa - 1 >= c->hi &&
				cfa - 1 - c->hi < COPY_END_SLACK ?
			USTACK_STOP_READ_FAULT : USTACK_STOP_BAD_STEP) + 1;
	if (row->ra_rule != USTACK_RULE_OFFSET)
		return USTACK_STOP_OUTERMOST + 1;
	if (read_u64(c, cfa + (int64_t)row->ra_off, &next->pc))
		return USTACK_STOP_READ_FAULT + 1;
	/* 0 ends the chain (the caller checks); anything else that is not
	 * code was never a return address: the row is wrong here */
	if (c->ra_in_code && next->pc && c->ops->is_code && !c->ops->is_code(c->ops->ctx, next->pc))
		return USTACK_STOP_BAD_STEP + 1;
	/* A save slot below sp was popped already (an epilogue whose CFI
	 * does not restore the rule, as GCC leaves it): the register holds
	 * the value, and a stack copy does not reach below sp */
	if (row->fp_rule == USTACK_RULE_OFFSET && cfa + (int64_t)row->fp_off >= cur->sp) {
		if (read_u64(c, cfa + (int64_t)row->fp_off, &next->fp))
			return USTACK_STOP_READ_FAULT + 1;
		*nfp_known = 1;
	} else {
		next->fp = cur->fp;
		*nfp_known = c->fp_known;
	}
	/* the caller's rbx, as fp (CFI rows only say; others: not known) */
	*nbx = c->bx;
	*nbx_known = c->bx_known && row->bx_rule == USTACK_BX_SAME;
	if (row->bx_rule == USTACK_BX_OFFSET && cfa + (int64_t)row->bx_off >= cur->sp) {
		if (read_u64(c, cfa + (int64_t)row->bx_off, nbx))
			return USTACK_STOP_READ_FAULT + 1;
		*nbx_known = 1;
	}
	next->sp = cfa;
	return 0;
}

/* The frame-pointer heuristic: [fp] = caller's fp, [fp + 8] = return
 * address. Accepted only if fp lies in the stack above sp and the return
 * address points into code. */
static int step_fp(const struct ustack_unwind_cursor *c, struct ustack_regs *next)
{
	uint64_t fp = c->cur.fp;

	if (!c->fp_known)
		return USTACK_STOP_NO_INFO + 1;
	if (fp < c->cur.sp || (fp & 7) || !addr_in_stack(c, fp) || !addr_in_stack(c, fp + 15))
		return USTACK_STOP_NO_INFO + 1;
	if (read_u64(c, fp, &next->fp) || read_u64(c, fp + 8, &next->pc))
		return USTACK_STOP_NO_INFO + 1;
	if (!next->pc || (c->ops->is_code && !c->ops->is_code(c->ops->ctx, next->pc)))
		return USTACK_STOP_NO_INFO + 1;
	next->sp = fp + 16;
	return 0;
}

/*
 * CPython 3.12+'s perf trampoline (`python -X perf`): a stub in anonymous
 * executable memory, one per Python function, `sub $8,%rsp; call *%rcx;
 * add $8,%rsp; ret`, without unwind information or a frame pointer. A
 * return address into one, with exactly those 11 bytes around it, has
 * its caller's return address at sp + 8 and CFA sp + 16; fp and rbx are
 * untouched. The bytes are read from the process, so a reader that has
 * only the stack (a stack copy) never takes this rule.
 */
static const uint8_t py_trampoline[11] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1,
					   0x48, 0x83, 0xc4, 0x08, 0xc3 };
#define PY_TRAMPOLINE_RA 6 /* the return address's offset in it */

int ustack_unwind_is_py_trampoline(const uint8_t code[11])
{
	return !memcmp(code, py_trampoline, sizeof(py_trampoline));
}

static int step_py_trampoline(const struct ustack_unwind_cursor *c, struct ustack_regs *next)
{
	uint8_t code[sizeof(py_trampoline)];
	uint64_t sp = c->cur.sp;

	if (!c->is_return || c->cur.pc < PY_TRAMPOLINE_RA ||
	    c->ops->read(c->ops->ctx, c->cur.pc - PY_TRAMPOLINE_RA, code, sizeof(code)) ||
	    !ustack_unwind_is_py_trampoline(code))
		return -1;
	if ((sp & 7) || !addr_in_stack(c, sp + 15) || read_u64(c, sp + 8, &next->pc))
		return -1;
	next->sp = sp + 16;
	next->fp = c->cur.fp;
	return 0;
}

void ustack_unwind_begin(struct ustack_unwind_cursor *c, const struct ustack_unwind_ops *ops,
			 const struct ustack_regs *regs, const struct ustack_walk_opts *opts)
{
	*c = (struct ustack_unwind_cursor){ .ops = ops, .cur = *regs, .max = USTACK_MAX_DEPTH,
					    .fp_known = 1 };
	if (opts) {
		c->lo = opts->stack_lo;
		c->hi = opts->stack_hi;
		c->is_return = opts->first_is_return;
		if (opts->max_depth > 0 && opts->max_depth < c->max)
			c->max = opts->max_depth;
		if (opts->sz >= offsetof(struct ustack_walk_opts, bx) + sizeof(opts->bx) &&
		    opts->has_bx) {
			c->bx = opts->bx;
			c->bx_known = 1;
		}
		if (opts->sz >= offsetof(struct ustack_walk_opts, hi_is_copy_end) +
				sizeof(opts->hi_is_copy_end))
			c->hi_is_copy = opts->hi_is_copy_end;
		if (opts->sz >= offsetof(struct ustack_walk_opts, fp_unknown) +
				sizeof(opts->fp_unknown))
			c->fp_known = !opts->fp_unknown;
		if (opts->sz >= offsetof(struct ustack_walk_opts, ra_in_code) +
				sizeof(opts->ra_in_code))
			c->ra_in_code = opts->ra_in_code;
	}
	/* Bound checks start at the initial sp. */
	if (c->lo < regs->sp)
		c->lo = regs->sp;
	if (!regs->pc) {
		c->done = 1;
		c->reason = USTACK_STOP_OUTERMOST;
	}
}

static int unwind_stop(struct ustack_unwind_cursor *c, unsigned int reason)
{
	c->done = 1;
	c->reason = reason;
	return 0;
}

int ustack_unwind_next(struct ustack_unwind_cursor *c, struct ustack_frame *frame)
{
	const struct ustack_unwind_ops *ops = c->ops;
	struct ustack_regs next;
	struct ustack_row row;
	unsigned int method = USTACK_METHOD_FP;
	int err, ret, exact = 0, nbx_known = 0, nfp_known = 1;
	uint64_t nbx = 0;

	if (c->done)
		return 0;
	if (c->depth >= c->max)
		return unwind_stop(c, USTACK_STOP_DEPTH);
	if (!c->started) {
		c->started = 1;
		c->depth = 1;
		*frame = (struct ustack_frame){
			.pc = c->cur.pc, .sp = c->cur.sp, .method = USTACK_METHOD_REGS,
			.flags = c->is_return ? 0 : USTACK_FRAME_EXACT_PC,
		};
		return 1;
	}

	/* A return address may sit just past the end of its function (call
	 * to a noreturn function): look up the call instruction itself. */
	err = ops->find_row(ops->ctx, c->is_return ? c->cur.pc - 1 : c->cur.pc, &row, &method);
	if (err == -EBADMSG)
		return unwind_stop(c, USTACK_STOP_BAD_TABLE);
	if (!err && (row.flags & USTACK_ROW_OUTERMOST))
		return unwind_stop(c, USTACK_STOP_OUTERMOST);
	if (!err && (row.flags & USTACK_ROW_SIGNAL)) {
		if (++c->signals > MAX_SIGNAL_FRAMES ||
		    ustack_arch_signal_regs(ops, c->cur.sp, &next))
			return unwind_stop(c, USTACK_STOP_BAD_STEP);
		nbx_known = !ustack_arch_signal_bx(ops, c->cur.sp, &nbx);
		/* The interrupted context may run on another stack
		 * (sigaltstack): bounds restart from its sp. */
		c->lo = next.sp;
		c->hi = 0;
		method = USTACK_METHOD_SIGNAL;
		exact = 1;
	} else if (!err && !(row.flags & USTACK_ROW_NEEDS_FALLBACK) &&
		   (row.cfa_reg != USTACK_CFA_BX || c->bx_known)) {
		ret = step_row(c, &row, &next, &nbx, &nbx_known, &nfp_known);
		if (ret)
			return unwind_stop(c, ret - 1);
	} else if (err && !step_py_trampoline(c, &next)) {
		method = USTACK_METHOD_PLT; /* a fixed rule for a known stub */
		nbx = c->bx;
		nbx_known = c->bx_known;
		nfp_known = c->fp_known;
	} else {
		method = USTACK_METHOD_FP;
		ret = step_fp(c, &next);
		if (ret)
			return unwind_stop(c, ret - 1);
	}
	/* a zero return address ends the chain (thread start) */
	if (!next.pc)
		return unwind_stop(c, USTACK_STOP_OUTERMOST);
	if (!exact && next.sp <= c->cur.sp)
		return unwind_stop(c, USTACK_STOP_BAD_STEP);
	*frame = (struct ustack_frame){
		.pc = next.pc, .sp = next.sp, .method = method,
		.flags = exact ? USTACK_FRAME_EXACT_PC : 0,
	};
	c->cur = next;
	c->bx = nbx;
	c->bx_known = nbx_known;
	c->fp_known = nfp_known;
	c->is_return = !exact;
	c->depth++;
	return 1;
}

void ustack_unwind_mark_trampolines(struct ustack_frame *frames, int n)
{
	for (int k = 1; k < n; k++)
		if (frames[k].method == USTACK_METHOD_SIGNAL)
			frames[k - 1].flags |= USTACK_FRAME_EXACT_PC;
}

int ustack_unwind_clip_to_stack(struct ustack_frame *frames, int n,
				int (*range)(void *ctx, uint64_t addr, uint64_t *lo, uint64_t *hi),
				void *ctx, unsigned int *stop)
{
	uint64_t lo = 0, hi = 0;
	int known = 0;

	for (int k = 0; k < n; k++) {
		if (k == 0 || frames[k].method == USTACK_METHOD_SIGNAL) {
			known = !range(ctx, frames[k].sp, &lo, &hi) && frames[k].sp >= lo &&
				frames[k].sp < hi;
			continue;
		}
		/* a CFA may be the very end of the mapping (the caller's sp
		 * just past a stack's top): its last byte is what must be in */
		if (known && (frames[k].sp - 1 < lo || frames[k].sp - 1 >= hi)) {
			*stop = frames[k].method == USTACK_METHOD_FP ? USTACK_STOP_NO_INFO
								     : USTACK_STOP_BAD_STEP;
			return k;
		}
	}
	return n;
}

int ustack_unwind(const struct ustack_unwind_ops *ops, const struct ustack_regs *regs,
		  const struct ustack_walk_opts *opts, struct ustack_frame *frames, int max,
		  unsigned int *stop)
{
	struct ustack_unwind_cursor c;
	int n = 0;

	ustack_unwind_begin(&c, ops, regs, opts);
	while (n < max && ustack_unwind_next(&c, &frames[n]))
		n++;
	ustack_unwind_mark_trampolines(frames, n);
	if (stop)
		*stop = c.done ? c.reason : USTACK_STOP_DEPTH;
	return n;
}
