// SPDX-License-Identifier: MIT
/*
 * x86-64 specifics of the unwinder. Kept to this file so another
 * architecture adds one file of the same shape.
 *
 * Signal frames: when a handler returns into __restore_rt, the handler's
 * `ret` has popped rt_sigframe.pretcode, so sp points at the ucontext_t:
 *   uc_flags (8) + uc_link (8) + uc_stack (24) = 40 bytes, then
 *   mcontext gregs[23]: ... REG_RBP = 10, REG_RBX = 11, REG_RSP = 15, REG_RIP = 16.
 */
#include <errno.h>

#include "unwind/unwind.h"

#if defined(__x86_64__)

#define UC_MCONTEXT_OFF 40
#define GREG(i) (UC_MCONTEXT_OFF + 8 * (i))
#define GREG_RBP 10
#define GREG_RBX 11
#define GREG_RSP 15
#define GREG_RIP 16

int ustack_arch_signal_regs(const struct ustack_unwind_ops *ops, uint64_t sp,
			    struct ustack_regs *out)
{
	if (ops->read(ops->ctx, sp + GREG(GREG_RBP), &out->fp, 8) ||
	    ops->read(ops->ctx, sp + GREG(GREG_RSP), &out->sp, 8) ||
	    ops->read(ops->ctx, sp + GREG(GREG_RIP), &out->pc, 8))
		return -EFAULT;
	if (!out->sp)
		return -EBADMSG;
	return 0;
}

int ustack_arch_signal_bx(const struct ustack_unwind_ops *ops, uint64_t sp, uint64_t *bx)
{
	return ops->read(ops->ctx, sp + GREG(GREG_RBX), bx, 8) ? -EFAULT : 0;
}

#else
#error "ustack: only x86-64 is supported today (see src/unwind/unwind_arch_x86_64.c)"
#endif
