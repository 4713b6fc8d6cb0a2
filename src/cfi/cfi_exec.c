// SPDX-License-Identifier: MIT
/*
 * The DW_CFA interpreter (DWARF 5 section 6.4.2) and the mapping of its
 * register rules onto struct ustack_row.
 *
 * Only the rules the row can carry are tracked: the CFA, rbp (DWARF 6),
 * rsp (7) and the CIE's return-address column (16 on x86-64). Rules of
 * other registers are decoded (to stay in step with the byte stream) and
 * dropped. The state is a few dozen bytes and the remember_state stack a
 * fixed array, so a lookup needs no allocation and no recursion.
 */
#include <errno.h>
#include <string.h>

#include "cfi/cfi.h"
#include "cfi/cfi_read.h"

enum {
	DW_CFA_nop = 0x00,
	DW_CFA_set_loc = 0x01,
	DW_CFA_advance_loc1 = 0x02,
	DW_CFA_advance_loc2 = 0x03,
	DW_CFA_advance_loc4 = 0x04,
	DW_CFA_offset_extended = 0x05,
	DW_CFA_restore_extended = 0x06,
	DW_CFA_undefined = 0x07,
	DW_CFA_same_value = 0x08,
	DW_CFA_register = 0x09,
	DW_CFA_remember_state = 0x0a,
	DW_CFA_restore_state = 0x0b,
	DW_CFA_def_cfa = 0x0c,
	DW_CFA_def_cfa_register = 0x0d,
	DW_CFA_def_cfa_offset = 0x0e,
	DW_CFA_def_cfa_expression = 0x0f,
	DW_CFA_expression = 0x10,
	DW_CFA_offset_extended_sf = 0x11,
	DW_CFA_def_cfa_sf = 0x12,
	DW_CFA_def_cfa_offset_sf = 0x13,
	DW_CFA_val_offset = 0x14,
	DW_CFA_val_offset_sf = 0x15,
	DW_CFA_val_expression = 0x16,
	DW_CFA_GNU_args_size = 0x2e,
	DW_CFA_GNU_negative_offset_extended = 0x2f,
	DW_CFA_advance_loc = 0x40,
	DW_CFA_offset = 0x80,
	DW_CFA_restore = 0xc0,
};

/* DWARF register numbers (x86-64 psABI) */
#define REG_RBX 3
#define REG_RBP 6
#define REG_RSP 7

enum rule_type {
	RULE_UNSPEC = 0, /* no instruction named the register */
	RULE_SAME,
	RULE_UNDEF,
	RULE_OFFSET,     /* saved at CFA + val */
	RULE_VAL_OFFSET, /* value is CFA + val */
	RULE_REGISTER,
	RULE_EXPR,
	RULE_VAL_EXPR,
};

enum { CFA_UNSET = 0, CFA_REG, CFA_EXPR };

/* Tracked columns */
enum { T_RBP = 0, T_RSP = 1, T_RA = 2, T_RBX = 3, T_NR = 4 };

struct reg_rule {
	uint8_t type;
	int64_t val;
};

struct cfa_rule {
	uint8_t type;
	uint64_t reg;
	int64_t off;
	const uint8_t *expr;
	uint64_t expr_len;
};

struct cfi_state {
	struct cfa_rule cfa;
	struct reg_rule r[T_NR];
};

struct exec_ctx {
	const struct ustack_cfi *cfi;
	const struct ustack_cfi_fde *fde;
	struct cfi_state st, init;
	struct cfi_state stack[USTACK_CFI_STACK_DEPTH];
	unsigned int depth;
	uint32_t insns;
	uint64_t loc;
	uint64_t pc;
	struct ustack_row *row;
	ustack_cfi_emit_fn emit;
	void *emit_ctx;
	int done;
};

static int track_idx(const struct ustack_cfi_fde *fde, uint64_t reg)
{
	if (reg == REG_RBP)
		return T_RBP;
	if (reg == REG_RSP)
		return T_RSP;
	if (reg == REG_RBX && reg != fde->cie.ra_reg)
		return T_RBX;
	if (reg == fde->cie.ra_reg)
		return T_RA;
	return -1;
}

/* factored offset: n * data_alignment_factor, overflow-checked */
static int factor_s(const struct ustack_cfi_fde *fde, int64_t n, int64_t *out)
{
	return __builtin_mul_overflow(n, fde->cie.data_align, out) ? -EBADMSG : 0;
}

static int factor_u(const struct ustack_cfi_fde *fde, uint64_t n, int64_t *out)
{
	if (n > INT64_MAX)
		return -EBADMSG;
	return factor_s(fde, (int64_t)n, out);
}

/*
 * Match the x86-64 PLT CFA expression that ld emits for .plt:
 *   DW_OP_breg7 A; DW_OP_breg16 0; DW_OP_lit<M>; DW_OP_and; DW_OP_lit<N>;
 *   DW_OP_ge; DW_OP_lit<S>; DW_OP_shl; DW_OP_plus
 * i.e. CFA = rsp + A + (((rip & M) >= N) << S), M + 1 a power of two.
 */
static int match_plt(const uint8_t *e, uint64_t len, struct ustack_cfi_plt *plt)
{
	struct cfi_cur c = { e, e + len };
	int64_t a, b;
	uint8_t op, m, n, s;

	if (cur_u8(&c, &op) || op != 0x77 || cur_sleb(&c, &a))      /* breg7 */
		return 0;
	if (cur_u8(&c, &op) || op != 0x80 || cur_sleb(&c, &b) || b) /* breg16 0 */
		return 0;
	if (cur_u8(&c, &m) || m < 0x30 || m > 0x4f)                /* lit M */
		return 0;
	if (cur_u8(&c, &op) || op != 0x1a)                          /* and */
		return 0;
	if (cur_u8(&c, &n) || n < 0x30 || n > 0x4f)                /* lit N */
		return 0;
	if (cur_u8(&c, &op) || op != 0x2a)                          /* ge */
		return 0;
	if (cur_u8(&c, &s) || s < 0x30 || s > 0x4f)                /* lit S */
		return 0;
	if (cur_u8(&c, &op) || op != 0x24)                          /* shl */
		return 0;
	if (cur_u8(&c, &op) || op != 0x22 || cur_left(&c))          /* plus */
		return 0;
	m -= 0x30; n -= 0x30; s -= 0x30;
	if (m < 15 || (m & (m + 1)) || s > 16 || a < INT32_MIN || a > INT32_MAX - (1 << 16))
		return 0;
	plt->base = (int32_t)a;
	plt->mask = m;
	plt->lit = n;
	plt->shift = s;
	return 1;
}

void ustack_cfi__plt_apply(const struct ustack_cfi_plt *plt, uint64_t pc, struct ustack_row *row)
{
	uint64_t slot = pc & ~(uint64_t)plt->mask;
	uint64_t lo, hi;
	int cond = (pc & plt->mask) >= plt->lit;

	if (cond) {
		lo = slot + plt->lit;
		hi = slot + plt->mask + 1;
	} else {
		lo = slot;
		hi = slot + (plt->lit > plt->mask ? plt->mask + 1u : plt->lit);
	}
	if (hi < lo) /* slot at the very top of the address space */
		hi = UINT64_MAX;
	row->cfa_off = plt->base + (cond ? (int32_t)(1u << plt->shift) : 0);
	if (lo > row->start)
		row->start = lo;
	if (hi < row->end)
		row->end = hi;
}

int ustack_cfi__plt_split(const struct ustack_row *row, const struct ustack_cfi_plt *plt,
			  int (*add)(void *ctx, const struct ustack_row *row), void *ctx)
{
	for (uint64_t p = row->start; p < row->end;) {
		struct ustack_row r = *row;
		int err;

		ustack_cfi__plt_apply(plt, p, &r);
		err = add(ctx, &r);
		if (err)
			return err;
		if (r.end <= p)
			break;
		p = r.end;
	}
	return 0;
}

static int fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* Map the interpreter state onto a row for [start, end). Sets *is_plt
 * when the CFA is the PLT expression (cfa_off still to be resolved). */
static void state_to_row(const struct exec_ctx *x, uint64_t start, uint64_t end,
			 struct ustack_row *row, struct ustack_cfi_plt *plt, int *is_plt)
{
	const struct cfi_state *st = &x->st;
	const struct reg_rule *ra = &st->r[T_RA], *fp = &st->r[T_RBP], *sp = &st->r[T_RSP];
	const struct reg_rule *bx = &st->r[T_RBX];
	uint8_t flags = 0;

	memset(row, 0, sizeof(*row));
	row->start = start;
	row->end = end;
	*is_plt = 0;
	if (x->fde->cie.signal)
		flags |= USTACK_ROW_SIGNAL;

	row->cfa_reg = USTACK_CFA_SP;
	if (st->cfa.type == CFA_REG && (st->cfa.reg == REG_RSP || st->cfa.reg == REG_RBP) &&
	    fits32(st->cfa.off)) {
		row->cfa_reg = st->cfa.reg == REG_RSP ? USTACK_CFA_SP : USTACK_CFA_FP;
		row->cfa_off = (int32_t)st->cfa.off;
	} else if (st->cfa.type == CFA_REG && st->cfa.reg == REG_RBX && fits32(st->cfa.off)) {
		/* a realignment through rbx (glibc's _dl_runtime_resolve_*) */
		row->cfa_reg = USTACK_CFA_BX;
		row->cfa_off = (int32_t)st->cfa.off;
	} else if (st->cfa.type == CFA_EXPR && match_plt(st->cfa.expr, st->cfa.expr_len, plt) &&
		   end - start <= USTACK_CFI_PLT_MAX_SPAN) {
		*is_plt = 1;
		row->cfa_off = plt->base;
	} else {
		/* CFA from another register (DRAP: r10/r13), any other
		 * expression, or never defined. */
		flags |= USTACK_ROW_NEEDS_FALLBACK;
		if (st->cfa.type == CFA_REG && fits32(st->cfa.off))
			row->cfa_off = (int32_t)st->cfa.off;
	}

	switch (ra->type) {
	case RULE_OFFSET:
		if (fits32(ra->val)) {
			row->ra_rule = USTACK_RULE_OFFSET;
			row->ra_off = (int32_t)ra->val;
		} else {
			flags |= USTACK_ROW_NEEDS_FALLBACK;
		}
		break;
	case RULE_UNDEF:
		row->ra_rule = USTACK_RULE_UNDEFINED;
		flags |= USTACK_ROW_OUTERMOST;
		break;
	default:
		/* RA in a register, an expression, or no rule at all */
		flags |= USTACK_ROW_NEEDS_FALLBACK;
		break;
	}

	switch (fp->type) {
	case RULE_UNSPEC:
	case RULE_SAME:
		row->fp_rule = USTACK_RULE_SAME;
		break;
	case RULE_OFFSET:
		if (fits32(fp->val)) {
			row->fp_rule = USTACK_RULE_OFFSET;
			row->fp_off = (int32_t)fp->val;
		} else {
			flags |= USTACK_ROW_NEEDS_FALLBACK;
		}
		break;
	case RULE_UNDEF:
		row->fp_rule = USTACK_RULE_UNDEFINED;
		break;
	default:
		flags |= USTACK_ROW_NEEDS_FALLBACK;
		break;
	}

	/* the caller's rbx: what CFI says, "not known" for any other rule */
	if (bx->type == RULE_UNSPEC || bx->type == RULE_SAME) {
		row->bx_rule = USTACK_BX_SAME;
	} else if (bx->type == RULE_OFFSET && fits32(bx->val)) {
		row->bx_rule = USTACK_BX_OFFSET;
		row->bx_off = (int32_t)bx->val;
	}

	/* The row form implies caller's rsp == CFA. */
	if (!(sp->type == RULE_UNSPEC || (sp->type == RULE_VAL_OFFSET && sp->val == 0)))
		flags |= USTACK_ROW_NEEDS_FALLBACK;
	row->flags = flags;
}

/* The state holds over [x->loc, end): hand it out. Returns 1 when the
 * lookup is satisfied, 0 to go on, or a negative errno from emit(). */
static int flush_row(struct exec_ctx *x, uint64_t end)
{
	struct ustack_row row;
	struct ustack_cfi_plt plt;
	int is_plt;

	if (end > x->fde->pc_end)
		end = x->fde->pc_end;
	if (end <= x->loc)
		return 0;
	if (!x->emit) {
		if (x->pc >= end)
			return 0;
		state_to_row(x, x->loc, end, x->row, &plt, &is_plt);
		if (is_plt)
			ustack_cfi__plt_apply(&plt, x->pc, x->row);
		return 1;
	}
	state_to_row(x, x->loc, end, &row, &plt, &is_plt);
	return x->emit(x->emit_ctx, &row, is_plt ? &plt : NULL);
}

static int move_to(struct exec_ctx *x, uint64_t new_loc)
{
	int r;

	if (new_loc == x->loc)
		return 0;
	r = flush_row(x, new_loc);
	if (r)
		return r;
	x->loc = new_loc;
	if (x->loc >= x->fde->pc_end)
		x->done = 1; /* later instructions describe no address */
	return 0;
}

static int advance(struct exec_ctx *x, uint64_t delta)
{
	uint64_t d, new_loc;

	if (__builtin_mul_overflow(delta, x->fde->cie.code_align, &d) ||
	    __builtin_add_overflow(x->loc, d, &new_loc))
		return -EBADMSG;
	return move_to(x, new_loc);
}

static int set_reg(struct exec_ctx *x, uint64_t reg, uint8_t type, int64_t val)
{
	int i = track_idx(x->fde, reg);

	if (i >= 0) {
		x->st.r[i].type = type;
		x->st.r[i].val = val;
	}
	return 0;
}

static int run(struct exec_ctx *x, const uint8_t *insns, uint64_t len, int in_cie)
{
	const struct ustack_cfi_fde *fde = x->fde;
	struct cfi_cur c = { insns, insns + len };
	struct cfi_ptr_bases b;

	memset(&b, 0, sizeof(b));
	b.sec = x->cfi->sec;
	b.sec_addr = x->cfi->sec_addr;
	b.addr_size = fde->cie.addr_size;
	b.func = fde->pc_begin;
	b.has_func = 1;

	while (c.p < c.end && !x->done) {
		uint8_t op, low;
		uint64_t reg, u, reg2;
		int64_t s, off;
		int r = 0;

		if (++x->insns > USTACK_CFI_MAX_INSNS)
			return -EBADMSG;
		if (cur_u8(&c, &op))
			return -EBADMSG;
		low = op & 0x3f;
		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			r = in_cie ? -EBADMSG : advance(x, low);
			if (r)
				return r;
			continue;
		case DW_CFA_offset:
			if (cur_uleb(&c, &u) || factor_u(fde, u, &off))
				return -EBADMSG;
			set_reg(x, low, RULE_OFFSET, off);
			continue;
		case DW_CFA_restore:
			reg = low;
			goto restore;
		}
		switch (op) {
		case DW_CFA_nop:
			break;
		case DW_CFA_set_loc: {
			uint64_t addr;

			if (in_cie)
				return -EBADMSG;
			if (cur_encoded(&c, x->cfi->is_debug_frame ? PE_ABSPTR : fde->cie.fde_enc,
					&b, &addr) || addr < x->loc)
				return -EBADMSG;
			r = move_to(x, addr);
			break;
		}
		case DW_CFA_advance_loc1:
			if (in_cie || cur_left(&c) < 1)
				return -EBADMSG;
			r = advance(x, ld_u8(c.p));
			c.p += 1;
			break;
		case DW_CFA_advance_loc2:
			if (in_cie || cur_left(&c) < 2)
				return -EBADMSG;
			r = advance(x, ld_u16(c.p));
			c.p += 2;
			break;
		case DW_CFA_advance_loc4:
			if (in_cie || cur_left(&c) < 4)
				return -EBADMSG;
			r = advance(x, ld_u32(c.p));
			c.p += 4;
			break;
		case DW_CFA_offset_extended:
			if (cur_uleb(&c, &reg) || cur_uleb(&c, &u) || factor_u(fde, u, &off))
				return -EBADMSG;
			set_reg(x, reg, RULE_OFFSET, off);
			break;
		case DW_CFA_offset_extended_sf:
			if (cur_uleb(&c, &reg) || cur_sleb(&c, &s) || factor_s(fde, s, &off))
				return -EBADMSG;
			set_reg(x, reg, RULE_OFFSET, off);
			break;
		case DW_CFA_GNU_negative_offset_extended:
			if (cur_uleb(&c, &reg) || cur_uleb(&c, &u) || u > INT64_MAX ||
			    factor_s(fde, -(int64_t)u, &off))
				return -EBADMSG;
			set_reg(x, reg, RULE_OFFSET, off);
			break;
		case DW_CFA_val_offset:
			if (cur_uleb(&c, &reg) || cur_uleb(&c, &u) || factor_u(fde, u, &off))
				return -EBADMSG;
			set_reg(x, reg, RULE_VAL_OFFSET, off);
			break;
		case DW_CFA_val_offset_sf:
			if (cur_uleb(&c, &reg) || cur_sleb(&c, &s) || factor_s(fde, s, &off))
				return -EBADMSG;
			set_reg(x, reg, RULE_VAL_OFFSET, off);
			break;
		case DW_CFA_restore_extended:
			if (cur_uleb(&c, &reg))
				return -EBADMSG;
		restore: {
			int i = track_idx(fde, reg);

			/* In the CIE there is no initial rule yet to go back to. */
			if (i >= 0)
				x->st.r[i] = in_cie ? (struct reg_rule){ RULE_UNSPEC, 0 } : x->init.r[i];
			break;
		}
		case DW_CFA_undefined:
			if (cur_uleb(&c, &reg))
				return -EBADMSG;
			set_reg(x, reg, RULE_UNDEF, 0);
			break;
		case DW_CFA_same_value:
			if (cur_uleb(&c, &reg))
				return -EBADMSG;
			set_reg(x, reg, RULE_SAME, 0);
			break;
		case DW_CFA_register:
			if (cur_uleb(&c, &reg) || cur_uleb(&c, &reg2) || reg2 > INT64_MAX)
				return -EBADMSG;
			set_reg(x, reg, RULE_REGISTER, (int64_t)reg2);
			break;
		case DW_CFA_remember_state:
			if (x->depth >= USTACK_CFI_STACK_DEPTH)
				return -EBADMSG;
			x->stack[x->depth++] = x->st;
			break;
		case DW_CFA_restore_state:
			if (!x->depth)
				return -EBADMSG;
			x->st = x->stack[--x->depth];
			break;
		case DW_CFA_def_cfa:
			if (cur_uleb(&c, &reg) || cur_uleb(&c, &u) || u > INT64_MAX)
				return -EBADMSG;
			x->st.cfa.type = CFA_REG;
			x->st.cfa.reg = reg;
			x->st.cfa.off = (int64_t)u;
			break;
		case DW_CFA_def_cfa_sf:
			if (cur_uleb(&c, &reg) || cur_sleb(&c, &s) || factor_s(fde, s, &off))
				return -EBADMSG;
			x->st.cfa.type = CFA_REG;
			x->st.cfa.reg = reg;
			x->st.cfa.off = off;
			break;
		case DW_CFA_def_cfa_register:
			if (cur_uleb(&c, &reg))
				return -EBADMSG;
			/* Only meaningful after a register rule; after an
			 * expression the offset is taken as 0. */
			if (x->st.cfa.type != CFA_REG)
				x->st.cfa.off = 0;
			x->st.cfa.type = CFA_REG;
			x->st.cfa.reg = reg;
			break;
		case DW_CFA_def_cfa_offset:
			if (cur_uleb(&c, &u) || u > INT64_MAX)
				return -EBADMSG;
			x->st.cfa.off = (int64_t)u;
			break;
		case DW_CFA_def_cfa_offset_sf:
			if (cur_sleb(&c, &s) || factor_s(fde, s, &off))
				return -EBADMSG;
			x->st.cfa.off = off;
			break;
		case DW_CFA_def_cfa_expression:
			if (cur_uleb(&c, &u) || u > cur_left(&c))
				return -EBADMSG;
			x->st.cfa.type = CFA_EXPR;
			x->st.cfa.expr = c.p;
			x->st.cfa.expr_len = u;
			c.p += u;
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			if (cur_uleb(&c, &reg) || cur_uleb(&c, &u) || cur_skip(&c, u))
				return -EBADMSG;
			set_reg(x, reg, op == DW_CFA_expression ? RULE_EXPR : RULE_VAL_EXPR, 0);
			break;
		case DW_CFA_GNU_args_size:
			/* rsp adjustment for landing pads: not part of the row */
			if (cur_uleb(&c, &u))
				return -EBADMSG;
			break;
		default:
			return -EBADMSG; /* unknown or other-architecture opcode */
		}
		if (r)
			return r;
	}
	return 0;
}

int ustack_cfi__exec(const struct ustack_cfi *cfi, const struct ustack_cfi_fde *fde,
		     uint64_t pc, struct ustack_row *row, ustack_cfi_emit_fn emit, void *ctx)
{
	/* ~2.5 KB, on the stack: the lookup may run in a signal handler */
	struct exec_ctx x;
	int r;

	memset(&x.st, 0, sizeof(x.st));
	x.cfi = cfi;
	x.fde = fde;
	x.depth = 0;
	x.insns = 0;
	x.loc = fde->pc_begin;
	x.pc = pc;
	x.row = row;
	x.emit = emit;
	x.emit_ctx = ctx;
	x.done = 0;

	/* CIE initial instructions (advances are refused there) */
	r = run(&x, fde->cie.insns, fde->cie.insns_len, 1);
	if (r < 0)
		return r;
	/* The stack does not carry over from the CIE (DWARF 5 6.4.2.4). */
	x.depth = 0;
	x.init = x.st;
	r = run(&x, fde->insns, fde->insns_len, 0);
	if (r < 0)
		return r;
	if (r == 1 || x.done)
		return emit || r == 1 ? 0 : -ENOENT;
	r = flush_row(&x, fde->pc_end);
	if (r < 0)
		return r;
	if (!emit && r != 1)
		return -ENOENT; /* pc not inside the FDE */
	return 0;
}
