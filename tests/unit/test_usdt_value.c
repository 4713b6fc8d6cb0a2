// SPDX-License-Identifier: MIT
/* ustack_usdt_arg_value() (src/probe/usdt_value.c) on hand-built uapi
 * struct pt_regs and memory: every size with both signs, for registers,
 * memory operands and constants; bad register offsets, sizes and kinds
 * refused; a failed read passed on, never a value made up. */
#include <asm/ptrace.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "probe/probe.h"
#include "test.h"

/* The probed process's memory: 32 bytes at MEM_BASE. */
#define MEM_BASE 0x7ffd00001000ull
static uint8_t mem[32];
static unsigned int reads;

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	reads++;
	if (addr < MEM_BASE || addr - MEM_BASE > sizeof(mem) || len > sizeof(mem) - (addr - MEM_BASE))
		return -EFAULT;
	memcpy(buf, mem + (addr - MEM_BASE), len);
	return 0;
}

static uint64_t value_of(const struct ustack_usdt_arg *a, const struct pt_regs *regs, int *ret)
{
	uint64_t v = 0xdeadbeefdeadbeefull;

	*ret = ustack_usdt_arg_value(a, regs, mem_read, NULL, &v);
	return v;
}

static struct ustack_usdt_arg reg_arg(int8_t size, size_t off)
{
	return (struct ustack_usdt_arg){ .kind = USTACK_USDT_ARG_REG, .size = size,
					 .reg = (uint16_t)off };
}

/* A register whose every byte has its top bit set: each size shows its
 * own truncation and extension. */
static void test_reg_sizes(void)
{
	struct pt_regs regs;
	static const struct {
		int8_t size;
		uint64_t want;
	} cases[] = {
		{ 1, 0x88 }, { -1, 0xffffffffffffff88ull },
		{ 2, 0x9988 }, { -2, 0xffffffffffff9988ull },
		{ 4, 0xbbaa9988 }, { -4, 0xffffffffbbaa9988ull },
		{ 8, 0xffeeddccbbaa9988ull }, { -8, 0xffeeddccbbaa9988ull },
	};
	int ret;

	memset(&regs, 0, sizeof(regs));
	regs.rdx = 0xffeeddccbbaa9988ull;
	regs.rax = 0x1111111111111111ull; /* its neighbour in the struct: not read */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ustack_usdt_arg a = reg_arg(cases[i].size, offsetof(struct pt_regs, rdx));

		CHECK_EQ_U64(value_of(&a, &regs, &ret), cases[i].want);
		CHECK_EQ(ret, 0);
	}
	/* positive values: sign extension leaves them alone */
	regs.r15 = 0x7f; /* offset 0: the first register */
	{
		struct ustack_usdt_arg a = reg_arg(-1, offsetof(struct pt_regs, r15));

		CHECK_EQ_U64(value_of(&a, &regs, &ret), 0x7f);
		CHECK_EQ(ret, 0);
	}
	regs.ss = 0x8000; /* the last register of the struct */
	{
		struct ustack_usdt_arg a = reg_arg(-2, offsetof(struct pt_regs, ss));

		CHECK_EQ_U64(value_of(&a, &regs, &ret), 0xffffffffffff8000ull);
		CHECK_EQ(ret, 0);
	}
	/* %ah: byte 1 of rax */
	regs.rax = 0x0000000000f100ull;
	{
		struct ustack_usdt_arg a = reg_arg(-1, offsetof(struct pt_regs, rax) + 1);

		CHECK_EQ_U64(value_of(&a, &regs, &ret), 0xfffffffffffffff1ull);
		CHECK_EQ(ret, 0);
	}
}

static void test_deref_sizes(void)
{
	struct pt_regs regs;
	static const struct {
		int8_t size;
		int64_t disp;
		uint64_t want;
	} cases[] = {
		{ 1, 8, 0x80 }, { -1, 8, 0xffffffffffffff80ull },
		{ 2, 8, 0x8180 }, { -2, 8, 0xffffffffffff8180ull },
		{ 4, 8, 0x83828180 }, { -4, 8, 0xffffffff83828180ull },
		{ 8, 8, 0x8786858483828180ull }, { -8, 8, 0x8786858483828180ull },
		{ -4, 0, 0x03020100 },               /* below the register: val is negative */
		{ -2, 24, 0x1918 },                  /* the last 8 bytes of memory */
	};
	int ret;

	for (unsigned int i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)(i < 8 || i >= 16 ? i : 0x80 + (i - 8));
	memset(&regs, 0, sizeof(regs));
	regs.rbp = MEM_BASE + 8;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ustack_usdt_arg a = { .kind = USTACK_USDT_ARG_DEREF, .size = cases[i].size,
					     .reg = offsetof(struct pt_regs, rbp),
					     .val = cases[i].disp - 8 };

		CHECK_EQ_U64(value_of(&a, &regs, &ret), cases[i].want);
		CHECK_EQ(ret, 0);
	}
	/* outside the memory the reader has: its error, no value */
	{
		struct ustack_usdt_arg a = { .kind = USTACK_USDT_ARG_DEREF, .size = 8,
					     .reg = offsetof(struct pt_regs, rbp), .val = 20 };
		uint64_t v = 0x5555;

		CHECK_EQ(ustack_usdt_arg_value(&a, &regs, mem_read, NULL, &v), -EFAULT);
		CHECK_EQ_U64(v, 0x5555);
	}
}

static void test_const(void)
{
	struct pt_regs regs;
	struct ustack_usdt_arg a = { .kind = USTACK_USDT_ARG_CONST, .size = -4, .val = -5 };
	int ret;

	memset(&regs, 0, sizeof(regs));
	CHECK_EQ_U64(value_of(&a, &regs, &ret), (uint64_t)-5);
	CHECK_EQ(ret, 0);
	a.size = 4; /* unsigned 4 bytes: the 32-bit pattern */
	CHECK_EQ_U64(value_of(&a, &regs, &ret), 0xfffffffbull);
	a.size = 1;
	a.val = 0x1ff;
	CHECK_EQ_U64(value_of(&a, &regs, &ret), 0xff);
	a.size = 8;
	a.val = INT64_MIN;
	CHECK_EQ_U64(value_of(&a, &regs, &ret), 0x8000000000000000ull);
	CHECK_EQ(ret, 0);
}

static void test_refused(void)
{
	struct pt_regs regs;
	struct ustack_usdt_arg bad[] = {
		reg_arg(8, sizeof(struct pt_regs)),          /* past the struct */
		reg_arg(8, sizeof(struct pt_regs) - 4),      /* straddles its end */
		reg_arg(4, offsetof(struct pt_regs, rdx) + 4), /* inside a register */
		reg_arg(2, offsetof(struct pt_regs, rsi) + 1), /* no %sih */
		reg_arg(8, offsetof(struct pt_regs, orig_rax)),
		reg_arg(3, offsetof(struct pt_regs, rax)),   /* no 3-byte size */
		reg_arg(0, offsetof(struct pt_regs, rax)),
		reg_arg(-16, offsetof(struct pt_regs, rax)),
		reg_arg(INT8_MIN, offsetof(struct pt_regs, rax)),
		{ .kind = USTACK_USDT_ARG_DEREF, .size = 8, .reg = offsetof(struct pt_regs, rip) },
		{ .kind = USTACK_USDT_ARG_DEREF, .size = 1, .reg = sizeof(struct pt_regs) - 1 },
		{ .kind = USTACK_USDT_ARG_DEREF, .size = 1, .reg = offsetof(struct pt_regs, rax) + 1 },
		{ .kind = USTACK_USDT_ARG_DEREF, .size = 1, .reg = UINT16_MAX },
		{ .kind = 0, .size = 8 },
		{ .kind = 4, .size = 8 },
	};
	int ret;

	memset(&regs, 0, sizeof(regs));
	regs.rbp = MEM_BASE;
	reads = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = value_of(&bad[i], &regs, &ret);

		CHECK_EQ(ret, -EINVAL);
		CHECK_EQ_U64(v, 0xdeadbeefdeadbeefull);
	}
	CHECK_EQ(reads, 0); /* refused before any memory was read */
	/* a memory operand without a reader */
	{
		struct ustack_usdt_arg a = { .kind = USTACK_USDT_ARG_DEREF, .size = 8,
					     .reg = offsetof(struct pt_regs, rbp) };
		uint64_t v;

		CHECK_EQ(ustack_usdt_arg_value(&a, &regs, NULL, NULL, &v), -EINVAL);
	}
}

int main(void)
{
	RUN(test_reg_sizes);
	RUN(test_deref_sizes);
	RUN(test_const);
	RUN(test_refused);
	TEST_EXIT();
}
