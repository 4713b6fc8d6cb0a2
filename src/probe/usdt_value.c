// SPDX-License-Identifier: MIT
/*
 * The value of one USDT argument from a probe hit's user registers and
 * memory (probe.h, ustack_usdt_arg_value()). The registers are the uapi
 * x86-64 struct pt_regs the resolver's register offsets index; the memory
 * comes through the caller's reader (the copy backend's: its stack copy).
 * The argument spec is untrusted (it comes from a file's note): every
 * offset and size is checked before it is used.
 */
#include <asm/ptrace.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "probe/probe.h"

_Static_assert(sizeof(struct pt_regs) == 168, "uapi x86-64 struct pt_regs");

static int arg_bytes(int8_t size)
{
	int n = size < 0 ? -size : size;

	return n == 1 || n == 2 || n == 4 || n == 8 ? n : -EINVAL;
}

/* A register operand: a whole register at a multiple of 8, or one of the
 * legacy high-byte registers (%ah %bh %ch %dh: byte 1 of rax rbx rcx rdx)
 * with a 1-byte size. RIP-relative memory operands name the next
 * instruction's address, which a hit's registers do not hold. */
static int reg_ok(uint16_t reg, int n, int deref)
{
	size_t rax = offsetof(struct pt_regs, rax), rbx = offsetof(struct pt_regs, rbx),
	       rcx = offsetof(struct pt_regs, rcx), rdx = offsetof(struct pt_regs, rdx);

	if ((size_t)reg + (size_t)(deref ? 8 : n) > sizeof(struct pt_regs))
		return 0;
	if (reg == offsetof(struct pt_regs, orig_rax))
		return 0; /* not a register an operand can name */
	if (deref)
		return reg % 8 == 0 && reg != offsetof(struct pt_regs, rip);
	if (reg % 8 == 0)
		return 1;
	return n == 1 && (reg == rax + 1 || reg == rbx + 1 || reg == rcx + 1 || reg == rdx + 1);
}

/* The low @n bytes of @raw, sign-extended when @size is negative. */
static uint64_t extend(uint64_t raw, int n, int8_t size)
{
	unsigned int bits = 8u * (unsigned int)n;
	uint64_t m;

	if (bits == 64)
		return raw;
	m = (1ull << bits) - 1;
	raw &= m;
	if (size < 0 && (raw >> (bits - 1) & 1))
		raw |= ~m;
	return raw;
}

int ustack_usdt_arg_value(const struct ustack_usdt_arg *a, const void *regs,
			  int (*read)(void *ctx, uint64_t addr, void *buf, size_t len), void *ctx,
			  uint64_t *value)
{
	int n = arg_bytes(a->size), ret;
	uint64_t raw = 0, base;

	if (n < 0)
		return n;
	switch (a->kind) {
	case USTACK_USDT_ARG_CONST:
		raw = (uint64_t)a->val;
		break;
	case USTACK_USDT_ARG_REG:
		if (!reg_ok(a->reg, n, 0))
			return -EINVAL;
		memcpy(&raw, (const char *)regs + a->reg, (size_t)n); /* little-endian */
		break;
	case USTACK_USDT_ARG_DEREF:
		if (!reg_ok(a->reg, n, 1) || !read)
			return -EINVAL;
		memcpy(&base, (const char *)regs + a->reg, 8);
		ret = read(ctx, base + (uint64_t)a->val, &raw, (size_t)n);
		if (ret)
			return ret < 0 ? ret : -EFAULT;
		break;
	default:
		return -EINVAL;
	}
	*value = extend(raw, n, a->size);
	return 0;
}
