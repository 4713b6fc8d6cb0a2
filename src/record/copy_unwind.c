// SPDX-License-Identifier: MIT
/*
 * A user stack unwound in user space from a copy of its top (perf's
 * PERF_SAMPLE_STACK_USER, the BPF backend's COPY records) with the
 * mapping picture's unwind tables.
 */
#include <errno.h>
#include <string.h>

#include "record/rec.h"

struct stack_copy {
	uint64_t base;
	const uint8_t *data;
	uint64_t size;
	struct ustack_recmaps *rm;
};

static int copy_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct stack_copy *c = ctx;

	if (addr < c->base || addr - c->base > c->size || len > c->size - (addr - c->base))
		return -EFAULT;
	memcpy(buf, c->data + (addr - c->base), len);
	return 0;
}

static int copy_find_row(void *ctx, uint64_t pc, struct ustack_row *row, unsigned int *method)
{
	return ustack_recmaps__find_row(((struct stack_copy *)ctx)->rm, pc, row, method);
}

static int copy_is_code(void *ctx, uint64_t pc)
{
	return ustack_recmaps__is_code(((struct stack_copy *)ctx)->rm, pc);
}

int rec_unwind_copy(struct rec *r, uint32_t pid, uint64_t ip, uint64_t sp, uint64_t bp,
		    const uint64_t *bx, const void *stack, uint64_t size,
		    struct ustack_frame *frames, uint32_t max, uint32_t *stop)
{
	struct stack_copy c = { .base = sp, .data = stack, .size = size, .rm = r->rm };
	struct ustack_unwind_ops ops = {
		.find_row = copy_find_row, .read = copy_read, .is_code = copy_is_code, .ctx = &c,
	};
	struct ustack_regs regs = { .pc = ip, .sp = sp, .fp = bp };
	struct ustack_walk_opts uo = { .sz = sizeof(uo), .stack_lo = sp, .stack_hi = sp + size,
				       .has_bx = !!bx, .bx = bx ? *bx : 0, .hi_is_copy_end = 1 };
	unsigned int why;
	int n;

	ustack_recmaps__set_pid(r->rm, pid);
	n = ustack_unwind(&ops, &regs, &uo, frames, (int)max, &why);
	*stop = why;
	return n;
}

