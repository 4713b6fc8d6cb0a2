// SPDX-License-Identifier: MIT
/*
 * The unwinder core on a synthetic stack: rows come from a table in the
 * test, memory is a buffer. Covers every method and every stop reason.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "unwind/unwind.h"
#include "test.h"

#define STACK_BASE 0x7ffff0000000ull
#define STACK_WORDS 512

static uint64_t stack[STACK_WORDS];

/* A fake module: functions at fixed pcs, each with one row. */
struct fake_fn {
	uint64_t start, end;
	struct ustack_row row;
	int err; /* returned instead of the row when non-zero */
};

static struct fake_fn fns[8];
static int nr_fns;

static void add_fn(uint64_t start, uint64_t end, uint8_t cfa_reg, int32_t cfa_off,
		   uint8_t fp_rule, int32_t fp_off, uint8_t flags, int err)
{
	fns[nr_fns++] = (struct fake_fn){
		.start = start, .end = end, .err = err,
		.row = { .start = start, .end = end, .cfa_reg = cfa_reg, .cfa_off = cfa_off,
			 .ra_rule = (flags & USTACK_ROW_OUTERMOST) ? USTACK_RULE_UNDEFINED : USTACK_RULE_OFFSET,
			 .ra_off = -8, .fp_rule = fp_rule, .fp_off = fp_off, .flags = flags },
	};
}

static int fake_find_row(void *ctx, uint64_t pc, struct ustack_row *row, unsigned int *method)
{
	for (int i = 0; i < nr_fns; i++) {
		if (pc >= fns[i].start && pc < fns[i].end) {
			if (fns[i].err)
				return fns[i].err;
			*row = fns[i].row;
			*method = USTACK_METHOD_SFRAME;
			return 0;
		}
	}
	return -ENOENT;
}

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	if (addr < STACK_BASE || addr + len > STACK_BASE + sizeof(stack))
		return -EFAULT;
	memcpy(buf, (char *)stack + (addr - STACK_BASE), len);
	return 0;
}

static int fake_is_code(void *ctx, uint64_t pc)
{
	return pc >= 0x1000 && pc < 0x9000;
}

static const struct ustack_unwind_ops ops = {
	.find_row = fake_find_row, .read = fake_read, .is_code = fake_is_code,
};

static uint64_t at(int word) { return STACK_BASE + 8ull * word; }

static void reset(void)
{
	memset(stack, 0, sizeof(stack));
	nr_fns = 0;
}

/* main (0x1000) -> mid (0x2000, sp-based, saves rbp) -> leaf (0x3000) */
static void test_sframe_rows(void)
{
	struct ustack_regs regs = { .pc = 0x3010, .sp = at(10), .fp = 0xf00d };
	struct ustack_frame f[8];
	unsigned int stop;
	int n;

	reset();
	add_fn(0x3000, 0x3100, USTACK_CFA_SP, 16, USTACK_RULE_SAME, 0, 0, 0);
	add_fn(0x2000, 0x2100, USTACK_CFA_SP, 32, USTACK_RULE_OFFSET, -16, 0, 0);
	add_fn(0x1000, 0x1100, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_OUTERMOST, 0);
	/* leaf: CFA = sp + 16 = at(12); RA at at(11) */
	stack[11] = 0x2050;
	/* mid: sp = at(12), CFA = at(16); RA at at(15); saved rbp at at(14) */
	stack[15] = 0x1050;
	stack[14] = 0xbeef;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 3);
	CHECK_EQ_U64(f[0].pc, 0x3010);
	CHECK_EQ(f[0].method, USTACK_METHOD_REGS);
	CHECK(f[0].flags & USTACK_FRAME_EXACT_PC);
	CHECK_EQ_U64(f[1].pc, 0x2050);
	CHECK_EQ_U64(f[1].sp, at(12));
	CHECK_EQ(f[1].method, USTACK_METHOD_SFRAME);
	CHECK_EQ_U64(f[2].pc, 0x1050);
	CHECK_EQ_U64(f[2].sp, at(16));
	CHECK_EQ(stop, USTACK_STOP_OUTERMOST);
}

/* An epilogue after `pop %rbp`: GCC's CFI still says rbp is saved at
 * CFA-24, a slot now below sp (and outside a stack copy that starts at
 * sp). The register holds the value already: no read, no read-fault. */
static void test_epilogue_popped_fp(void)
{
	struct ustack_regs regs = { .pc = 0x3010, .sp = at(0), .fp = at(20) };
	struct ustack_frame f[8];
	unsigned int stop;
	int n;

	reset();
	/* leaf: pop %r12; ret left: CFA = sp + 16, "rbp at CFA-24" = sp - 8 */
	add_fn(0x3000, 0x3100, USTACK_CFA_SP, 16, USTACK_RULE_OFFSET, -24, 0, 0);
	/* caller: CFA from rbp, outermost: reached only with rbp = at(20) */
	add_fn(0x2000, 0x2100, USTACK_CFA_FP, 16, USTACK_RULE_SAME, 0, USTACK_ROW_OUTERMOST, 0);
	stack[1] = 0x2050; /* RA at CFA - 8 = at(1) */
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 2);
	CHECK_EQ_U64(f[1].pc, 0x2050);
	CHECK_EQ_U64(f[1].sp, at(2));
	CHECK_EQ(stop, USTACK_STOP_OUTERMOST);
}

/* A return address is looked up at ra - 1: a call at the very end of a
 * function must find that function's row, not the next one's. */
static void test_return_address_minus_one(void)
{
	struct ustack_regs regs = { .pc = 0x3010, .sp = at(10), .fp = 0 };
	struct ustack_frame f[8];
	unsigned int stop;
	int n;

	reset();
	add_fn(0x3000, 0x3100, USTACK_CFA_SP, 16, USTACK_RULE_SAME, 0, 0, 0);
	/* noreturn caller ends at 0x2100; next function starts there */
	add_fn(0x2000, 0x2100, USTACK_CFA_SP, 16, USTACK_RULE_SAME, 0, 0, 0);
	add_fn(0x2100, 0x2200, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_OUTERMOST, 0);
	stack[11] = 0x2100; /* return address == end of 0x2000's function */
	stack[13] = 0;      /* its caller: end of chain */
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 2);
	CHECK_EQ_U64(f[1].pc, 0x2100);
	/* the second step used 0x2000's row (sp+16), reaching RA 0 = outermost;
	 * with 0x2100's row it would have stopped as OUTERMOST without reading */
	CHECK_EQ(stop, USTACK_STOP_OUTERMOST);
	stack[13] = 0x1234; /* make the difference visible: another frame */
	add_fn(0x1200, 0x1300, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_OUTERMOST, 0);
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 3);
	CHECK_EQ_U64(f[2].pc, 0x1234);
}

/* No row: the frame-pointer heuristic, accepted only when it looks sane. */
static void test_fp_fallback(void)
{
	struct ustack_regs regs = { .pc = 0x5000, .sp = at(10), .fp = at(20) };
	struct ustack_frame f[8];
	unsigned int stop;
	int n;

	reset();
	add_fn(0x1000, 0x1100, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_OUTERMOST, 0);
	stack[20] = at(30); /* saved rbp */
	stack[21] = 0x5100; /* return address, no table either */
	stack[30] = at(40);
	stack[31] = 0x1050;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 3);
	CHECK_EQ(f[1].method, USTACK_METHOD_FP);
	CHECK_EQ_U64(f[1].pc, 0x5100);
	CHECK_EQ_U64(f[1].sp, at(22));
	CHECK_EQ(f[2].method, USTACK_METHOD_FP);
	CHECK_EQ_U64(f[2].pc, 0x1050);
	CHECK_EQ(stop, USTACK_STOP_OUTERMOST);

	/* the return address is not code: refuse the step */
	stack[31] = 0xdead0000;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 2);
	CHECK_EQ(stop, USTACK_STOP_NO_INFO);

	/* rbp below sp (garbage): no step at all */
	regs.fp = at(2);
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 1);
	CHECK_EQ(stop, USTACK_STOP_NO_INFO);
}

/* Two stacks in the buffer, as a process with a coroutine has them: words
 * 0..127 one mapping (the coroutine's), 128..511 another (main's). */
static int two_stacks_range(void *ctx, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	(void)ctx;
	if (sp < at(0) || sp >= at(STACK_WORDS))
		return -ENOENT;
	*lo = sp < at(128) ? at(0) : at(128);
	*hi = sp < at(128) ? at(128) : at(STACK_WORDS);
	return 0;
}

/* Frames clipped to the mapping of their stack (ustack_unwind_clip_to_stack).
 * rbp pointing into another stack (a coroutine started with its creator's
 * rbp, a thread made by a raw clone()): that stack's frames, however sane
 * they look, are not callers. Within one mapping the heuristic still
 * works, also after a signal frame moved the walk to another stack. A row
 * whose CFA passes the end of the mapping is a bad step. */
static int clip(struct ustack_frame *f, int n, unsigned int *stop)
{
	return ustack_unwind_clip_to_stack(f, n, two_stacks_range, NULL, stop);
}

static void test_clip_to_stack(void)
{
	struct ustack_regs regs = { .pc = 0x5000, .sp = at(10), .fp = at(200) };
	struct ustack_frame f[8];
	unsigned int stop;
	int n;

	reset();
	add_fn(0x1000, 0x1100, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_OUTERMOST, 0);
	/* main's stack: a good frame at word 200, taken by the walk */
	stack[200] = at(210);
	stack[201] = 0x1050;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 2);
	CHECK_EQ_U64(f[1].pc, 0x1050);
	CHECK_EQ(stop, USTACK_STOP_OUTERMOST);
	/* and cut: the frame-pointer step left the stack */
	n = clip(f, n, &stop);
	CHECK_EQ(n, 1);
	CHECK_EQ(stop, USTACK_STOP_NO_INFO);
	/* a frame that straddles the end of the mapping: cut too */
	regs.fp = at(127);
	stack[127] = at(140);
	stack[128] = 0x1050;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 2);
	n = clip(f, n, &stop);
	CHECK_EQ(n, 1);
	CHECK_EQ(stop, USTACK_STOP_NO_INFO);
	/* the same stack: kept, and the reason with it */
	regs.fp = at(20);
	stack[20] = at(30);
	stack[21] = 0x1050;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	n = clip(f, n, &stop);
	CHECK_EQ(n, 2);
	CHECK_EQ(f[1].method, USTACK_METHOD_FP);
	CHECK_EQ(stop, USTACK_STOP_OUTERMOST);

	/* a handler on the second stack (a sigaltstack) interrupted code on
	 * the first: the signal frame moves the walk there, and the
	 * interrupted code's rbp, in that stack, is followed */
	reset();
	add_fn(0x4000, 0x4010, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_SIGNAL, 0);
	add_fn(0x1000, 0x1100, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_OUTERMOST, 0);
	regs = (struct ustack_regs){ .pc = 0x4000, .sp = at(300), .fp = 0 };
	stack[300 + 5 + 10] = at(30); /* interrupted rbp */
	stack[300 + 5 + 15] = at(20); /* interrupted rsp */
	stack[300 + 5 + 16] = 0x5020; /* interrupted pc: no row, the heuristic */
	stack[30] = at(40);
	stack[31] = 0x1050;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	n = clip(f, n, &stop);
	CHECK_EQ(n, 3);
	CHECK_EQ(f[1].method, USTACK_METHOD_SIGNAL);
	CHECK_EQ_U64(f[1].pc, 0x5020);
	CHECK_EQ(f[2].method, USTACK_METHOD_FP);
	CHECK_EQ_U64(f[2].pc, 0x1050);
	CHECK_EQ(stop, USTACK_STOP_OUTERMOST);
	/* its rbp in the handler's stack (higher, sane looking): cut */
	stack[300 + 5 + 10] = at(400);
	stack[400] = at(410);
	stack[401] = 0x1050;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 3);
	n = clip(f, n, &stop);
	CHECK_EQ(n, 2);
	CHECK_EQ_U64(f[1].pc, 0x5020);
	CHECK_EQ(stop, USTACK_STOP_NO_INFO);

	/* a row at the top of the first mapping: sp = at(127), CFA = sp + 16
	 * = at(129), past it: a bad step; a CFA at its very end: kept */
	reset();
	add_fn(0x3000, 0x3100, USTACK_CFA_SP, 16, USTACK_RULE_SAME, 0, 0, 0);
	add_fn(0x1000, 0x1100, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_OUTERMOST, 0);
	regs = (struct ustack_regs){ .pc = 0x3010, .sp = at(127), .fp = 0 };
	stack[128] = 0x1050;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 2);
	n = clip(f, n, &stop);
	CHECK_EQ(n, 1);
	CHECK_EQ(stop, USTACK_STOP_BAD_STEP);
	regs.sp = at(126);
	stack[127] = 0x1050;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	n = clip(f, n, &stop);
	CHECK_EQ(n, 2);
	CHECK_EQ_U64(f[1].sp, at(128));
	CHECK_EQ(stop, USTACK_STOP_OUTERMOST);
}

/* ra_in_code: a row that reads a data word as the return address (wrong
 * CFI in hand-written assembly) ends the walk; 0 still ends it as the
 * outermost frame. Without the option the word is taken, as before. */
static void test_ra_in_code(void)
{
	struct ustack_walk_opts o = { .sz = sizeof(o), .ra_in_code = 1 };
	struct ustack_regs regs = { .pc = 0x3010, .sp = at(10), .fp = 0 };
	struct ustack_frame f[8];
	unsigned int stop;
	int n;

	reset();
	add_fn(0x3000, 0x3100, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, 0, 0);
	stack[10] = 0x4848484848484848ull;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 2);
	CHECK_EQ_U64(f[1].pc, 0x4848484848484848ull);
	n = ustack_unwind(&ops, &regs, &o, f, 8, &stop);
	CHECK_EQ(n, 1);
	CHECK_EQ(stop, USTACK_STOP_BAD_STEP);
	stack[10] = 0;
	n = ustack_unwind(&ops, &regs, &o, f, 8, &stop);
	CHECK_EQ(n, 1);
	CHECK_EQ(stop, USTACK_STOP_OUTERMOST);
	stack[10] = 0x1050; /* code: taken */
	add_fn(0x1000, 0x1100, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_OUTERMOST, 0);
	n = ustack_unwind(&ops, &regs, &o, f, 8, &stop);
	CHECK_EQ(n, 2);
	CHECK_EQ_U64(f[1].pc, 0x1050);
	CHECK_EQ(stop, USTACK_STOP_OUTERMOST);
}

/* A NEEDS_FALLBACK row (e.g. DRAP) takes the frame-pointer path too. */
static void test_needs_fallback(void)
{
	struct ustack_regs regs = { .pc = 0x3010, .sp = at(10), .fp = at(20) };
	struct ustack_frame f[8];
	unsigned int stop;
	int n;

	reset();
	add_fn(0x3000, 0x3100, USTACK_CFA_SP, 16, USTACK_RULE_SAME, 0, USTACK_ROW_NEEDS_FALLBACK, 0);
	add_fn(0x1000, 0x1100, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_OUTERMOST, 0);
	stack[20] = 0;
	stack[21] = 0x1050;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 2);
	CHECK_EQ(f[1].method, USTACK_METHOD_FP);
	CHECK_EQ_U64(f[1].pc, 0x1050);
}

/* rbp not known (frame 0 read from /proc/PID/syscall: pc and sp only):
 * an fp-based CFA is used only after a deeper frame restored rbp from the
 * stack; before that, and for the frame-pointer heuristic, the walk ends
 * with NO_INFO instead of stepping with a stale value. */
static void test_fp_unknown(void)
{
	struct ustack_walk_opts wo = { .sz = sizeof(wo), .fp_unknown = 1 };
	struct ustack_regs regs = { .pc = 0x3010, .sp = at(10), .fp = at(20) };
	struct ustack_frame f[8];
	unsigned int stop;
	int n;

	reset();
	/* leaf (sp-based, rbp untouched) -> caller whose CFA is rbp + 16
	 * -> main (outermost) */
	add_fn(0x3000, 0x3100, USTACK_CFA_SP, 16, USTACK_RULE_SAME, 0, 0, 0);
	add_fn(0x2000, 0x2100, USTACK_CFA_FP, 16, USTACK_RULE_OFFSET, -16, 0, 0);
	add_fn(0x1000, 0x1100, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_OUTERMOST, 0);
	stack[11] = 0x2050;
	stack[21] = 0x1050; /* the caller's RA at rbp + 8 */
	/* known: the caller's CFA comes from regs.fp */
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 3);
	CHECK_EQ_U64(f[2].pc, 0x1050);
	CHECK_EQ_U64(f[2].sp, at(22));
	CHECK_EQ(stop, USTACK_STOP_OUTERMOST);
	/* unknown: the leaf steps (sp-based), the caller's row is refused */
	n = ustack_unwind(&ops, &regs, &wo, f, 8, &stop);
	CHECK_EQ(n, 2);
	CHECK_EQ_U64(f[1].pc, 0x2050);
	CHECK_EQ(stop, USTACK_STOP_NO_INFO);

	/* the leaf saved rbp at CFA-16 (= at(10)): known from there on */
	fns[0].row.fp_rule = USTACK_RULE_OFFSET;
	fns[0].row.fp_off = -16;
	stack[10] = at(20);
	regs.fp = 0xbad; /* never used: the saved value is */
	n = ustack_unwind(&ops, &regs, &wo, f, 8, &stop);
	CHECK_EQ(n, 3);
	CHECK_EQ_U64(f[2].pc, 0x1050);
	CHECK_EQ(stop, USTACK_STOP_OUTERMOST);

	/* no row at all: the frame-pointer heuristic needs rbp */
	reset();
	add_fn(0x1000, 0x1100, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_OUTERMOST, 0);
	regs.pc = 0x5000;
	regs.fp = at(20);
	stack[20] = at(30);
	stack[21] = 0x1050;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 2);
	CHECK_EQ(f[1].method, USTACK_METHOD_FP);
	n = ustack_unwind(&ops, &regs, &wo, f, 8, &stop);
	CHECK_EQ(n, 1);
	CHECK_EQ(stop, USTACK_STOP_NO_INFO);
}

/* Safety checks: CFA must move up, be aligned, stay in bounds. */
static void test_bad_steps(void)
{
	struct ustack_regs regs = { .pc = 0x3010, .sp = at(10), .fp = at(4) };
	struct ustack_walk_opts opts = { .sz = sizeof(opts), .stack_hi = at(64) };
	struct ustack_frame f[8];
	unsigned int stop;
	int n;

	/* fp-based CFA below sp */
	reset();
	add_fn(0x3000, 0x3100, USTACK_CFA_FP, 16, USTACK_RULE_SAME, 0, 0, 0);
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 1);
	CHECK_EQ(stop, USTACK_STOP_BAD_STEP);

	/* misaligned CFA */
	reset();
	add_fn(0x3000, 0x3100, USTACK_CFA_SP, 13, USTACK_RULE_SAME, 0, 0, 0);
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 1);
	CHECK_EQ(stop, USTACK_STOP_BAD_STEP);

	/* CFA beyond the stack's upper bound */
	reset();
	add_fn(0x3000, 0x3100, USTACK_CFA_SP, 8 * 100, USTACK_RULE_SAME, 0, 0, 0);
	n = ustack_unwind(&ops, &regs, &opts, f, 8, &stop);
	CHECK_EQ(n, 1);
	CHECK_EQ(stop, USTACK_STOP_BAD_STEP);

	/* unreadable memory */
	reset();
	add_fn(0x3000, 0x3100, USTACK_CFA_SP, 8 * 1000, USTACK_RULE_SAME, 0, 0, 0);
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 1);
	CHECK_EQ(stop, USTACK_STOP_READ_FAULT);

	/* corrupt table */
	reset();
	add_fn(0x3000, 0x3100, USTACK_CFA_SP, 16, USTACK_RULE_SAME, 0, 0, -EBADMSG);
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 1);
	CHECK_EQ(stop, USTACK_STOP_BAD_TABLE);
}

/* A loop (a frame whose return address leads back to itself with the same
 * CFA) cannot go on forever: the CFA must strictly increase. */
static void test_loop_and_depth(void)
{
	struct ustack_regs regs = { .pc = 0x3010, .sp = at(10), .fp = 0 };
	struct ustack_walk_opts opts = { .sz = sizeof(opts), .max_depth = 4 };
	struct ustack_frame f[16];
	unsigned int stop;
	int n;

	reset();
	/* every frame: CFA = sp + 16, RA = 0x3010: a genuine deep recursion */
	add_fn(0x3000, 0x3100, USTACK_CFA_SP, 16, USTACK_RULE_SAME, 0, 0, 0);
	for (int i = 11; i < STACK_WORDS; i += 2)
		stack[i] = 0x3010;
	n = ustack_unwind(&ops, &regs, NULL, f, 16, &stop);
	CHECK_EQ(n, 16);
	CHECK_EQ(stop, USTACK_STOP_DEPTH);
	n = ustack_unwind(&ops, &regs, &opts, f, 16, &stop);
	CHECK_EQ(n, 4);
	CHECK_EQ(stop, USTACK_STOP_DEPTH);
	/* recursion runs off the readable stack: a read fault, never a crash */
	{
		static struct ustack_frame big[USTACK_MAX_DEPTH];

		n = ustack_unwind(&ops, &regs, NULL, big, USTACK_MAX_DEPTH, &stop);
		/* frames at sp = at(10), at(12), ... at(512): the next RA slot is outside */
		CHECK_EQ(n, (STACK_WORDS - 10) / 2 + 1);
		CHECK_EQ(stop, USTACK_STOP_READ_FAULT);
	}
}

/* Signal frame: registers restored from the ucontext at sp. */
static void test_signal_frame(void)
{
	struct ustack_regs regs = { .pc = 0x4000, .sp = at(100), .fp = 0 };
	struct ustack_frame f[8];
	unsigned int stop;
	int n;

	reset();
	add_fn(0x4000, 0x4010, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_SIGNAL, 0);
	add_fn(0x3000, 0x3100, USTACK_CFA_SP, 16, USTACK_RULE_SAME, 0, 0, 0);
	add_fn(0x1000, 0x1100, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, USTACK_ROW_OUTERMOST, 0);
	/* ucontext at sp: gregs start 40 bytes in; rbp 10, rsp 15, rip 16 */
	stack[100 + 5 + 10] = at(300);
	stack[100 + 5 + 15] = at(200);
	stack[100 + 5 + 16] = 0x3020; /* interrupted pc: exact, not a return */
	stack[201] = 0x1050;
	n = ustack_unwind(&ops, &regs, NULL, f, 8, &stop);
	CHECK_EQ(n, 3);
	CHECK_EQ(f[1].method, USTACK_METHOD_SIGNAL);
	CHECK_EQ_U64(f[1].pc, 0x3020);
	CHECK(f[1].flags & USTACK_FRAME_EXACT_PC);
	CHECK_EQ_U64(f[1].sp, at(200));
	CHECK_EQ_U64(f[2].pc, 0x1050);
	CHECK_EQ(stop, USTACK_STOP_OUTERMOST);
}

/* PLT stubs without unwind info: CFA = sp + 8, + 16 after the push at 11. */
static void test_plt_row(void)
{
	struct ustack_row r;

	ustack_plt_row(0x401030, &r);
	CHECK_EQ(r.cfa_reg, USTACK_CFA_SP);
	CHECK_EQ(r.cfa_off, 8);
	CHECK_EQ(r.ra_rule, USTACK_RULE_OFFSET);
	CHECK_EQ(r.ra_off, -8);
	CHECK_EQ(r.fp_rule, USTACK_RULE_SAME);
	CHECK_EQ_U64(r.start, 0x401030);
	CHECK_EQ_U64(r.end, 0x40103b);
	ustack_plt_row(0x40103a, &r);
	CHECK_EQ(r.cfa_off, 8);
	ustack_plt_row(0x40103b, &r);
	CHECK_EQ(r.cfa_off, 16);
	CHECK_EQ_U64(r.start, 0x40103b);
	CHECK_EQ_U64(r.end, 0x401040);
	ustack_plt_row(0x40103f, &r);
	CHECK_EQ(r.cfa_off, 16);
	CHECK_STR(ustack_method_name(USTACK_METHOD_PLT), "plt");
}

static void test_names(void)
{
	CHECK_STR(ustack_method_name(USTACK_METHOD_SFRAME), "sframe");
	CHECK_STR(ustack_method_name(USTACK_METHOD_CFI), "cfi");
	CHECK_STR(ustack_method_name(99), "?");
	CHECK_STR(ustack_stop_reason_name(USTACK_STOP_BAD_TABLE), "bad-table");
}

/* The real thing, in this (ASan) process: must at least reach main. */
static __attribute__((noinline)) int self_depth(void)
{
	void *buf[64];
	struct ustack_frame f[64];
	unsigned int stop;
	int n = ustack_backtrace(buf, 64), m = ustack_backtrace_frames(f, 64, &stop);

	return n * 1000 + m;
}

static void test_self_smoke(void)
{
	int r = self_depth();

	/* self_depth -> test_self_smoke -> main at least (frame pointers are on
	 * in the sanitizer build, so the fp method gets there without SFrame) */
	CHECK(r / 1000 >= 3);
	CHECK_EQ(r / 1000, r % 1000);
	CHECK_EQ(ustack_backtrace(NULL, 0), 0);
}

/* The text fallback for /proc/self/maps (kernels without PROCMAP_QUERY):
 * a new thread (nothing cached for its stack) takes its stack through it,
 * and the frames equal those found through the ioctl. */
struct text_arg {
	struct ustack_frame f[64];
	int n;
	unsigned int stop;
};

static __attribute__((noinline)) void *take_stack(void *p)
{
	struct text_arg *a = p;

	a->n = ustack_backtrace_frames(a->f, 64, &a->stop);
	return NULL;
}

static void test_self_text_maps_fallback(void)
{
	struct text_arg ioctl_run = { 0 }, text_run = { 0 };
	pthread_t t;

	CHECK_EQ(pthread_create(&t, NULL, take_stack, &ioctl_run), 0);
	pthread_join(t, NULL);
	ustack_self_force_text_maps = 1;
	CHECK_EQ(pthread_create(&t, NULL, take_stack, &text_run), 0);
	pthread_join(t, NULL);
	ustack_self_force_text_maps = 0;
	/* take_stack <- start_thread <- clone3, at least */
	CHECK(ioctl_run.n >= 3);
	CHECK_EQ(text_run.n, ioctl_run.n);
	CHECK_EQ(text_run.stop, ioctl_run.stop);
	for (int i = 1; i < text_run.n; i++) {
		CHECK_EQ_U64(text_run.f[i].pc, ioctl_run.f[i].pc);
		CHECK_EQ(text_run.f[i].method, ioctl_run.f[i].method);
	}
}

int main(void)
{
	RUN(test_sframe_rows);
	RUN(test_return_address_minus_one);
	RUN(test_epilogue_popped_fp);
	RUN(test_fp_fallback);
	RUN(test_clip_to_stack);
	RUN(test_ra_in_code);
	RUN(test_needs_fallback);
	RUN(test_fp_unknown);
	RUN(test_bad_steps);
	RUN(test_loop_and_depth);
	RUN(test_signal_frame);
	RUN(test_plt_row);
	RUN(test_names);
	RUN(test_self_smoke);
	RUN(test_self_text_maps_fallback);
	TEST_EXIT();
}
