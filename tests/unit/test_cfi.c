// SPDX-License-Identifier: MIT
/*
 * DWARF CFI parser and interpreter on hand-assembled .eh_frame /
 * .eh_frame_hdr / .debug_frame bytes: every DW_CFA opcode, pointer
 * encodings, 64-bit lengths, terminators, the PLT expression, signal
 * frames, outermost frames, DRAP, and each kind of corruption with its
 * exact errno. Every find_row result is also compared with the linear walk
 * and the compiled table.
 */
#include <errno.h>
#include <stdarg.h>

#include "test.h"
#include "cfi/cfi.h"
#include "common/compiler.h"
#include "common/log.h"

#define SEC_ADDR 0x1000ull
#define HDR_ADDR 0x800ull

/* ---- a tiny CFI assembler ---- */
struct bb {
	uint8_t b[8192];
	size_t n;
};

static void p8(struct bb *b, uint64_t v) { b->b[b->n++] = (uint8_t)v; }
static void p16(struct bb *b, uint64_t v) { p8(b, v); p8(b, v >> 8); }
static void p32(struct bb *b, uint64_t v) { p16(b, v); p16(b, v >> 16); }
static void p64(struct bb *b, uint64_t v) { p32(b, v); p32(b, v >> 32); }
static void puleb(struct bb *b, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;

		v >>= 7;
		p8(b, c | (v ? 0x80 : 0));
	} while (v);
}
static void psleb(struct bb *b, int64_t v)
{
	for (;;) {
		uint8_t c = v & 0x7f;

		v >>= 7;
		if ((v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40))) {
			p8(b, c);
			return;
		}
		p8(b, c | 0x80);
	}
}
static void pbytes(struct bb *b, const void *p, size_t n) { if (n) memcpy(b->b + b->n, p, n); b->n += n; }

/* An entry: length placeholder (32- or 64-bit), patched by end(). */
struct ent {
	size_t off, body;
	int is64;
};

static struct ent begin(struct bb *b, int is64)
{
	struct ent e = { b->n, 0, is64 };

	if (is64) {
		p32(b, 0xffffffffu);
		p64(b, 0);
	} else {
		p32(b, 0);
	}
	e.body = b->n;
	return e;
}

static void end(struct bb *b, struct ent e)
{
	uint64_t len;

	while ((b->n - e.off) % 4) /* DW_CFA_nop padding */
		p8(b, 0);
	len = b->n - e.body;
	if (e.is64)
		memcpy(b->b + e.off + 4, &len, 8);
	else
		memcpy(b->b + e.off, &(uint32_t){ (uint32_t)len }, 4);
}

/* Standard x86-64 CIE: "zR" pcrel|sdata4, cf 1, df -8, ra 16,
 * CFA = rsp + 8, RA at CFA-8. Extra initial instructions optional. */
static size_t cie_std(struct bb *b, const char *aug, uint8_t fde_enc, const uint8_t *ins, size_t nins)
{
	struct ent e = begin(b, 0);

	p32(b, 0);        /* CIE id */
	p8(b, 1);         /* version */
	pbytes(b, aug, strlen(aug) + 1);
	puleb(b, 1);
	psleb(b, -8);
	p8(b, 16);
	puleb(b, 1);      /* augmentation data length */
	p8(b, fde_enc);
	p8(b, 0x0c); p8(b, 7); p8(b, 8);  /* def_cfa rsp 8 */
	p8(b, 0x90); p8(b, 1);            /* offset r16 at cfa-8 */
	if (nins)
		pbytes(b, ins, nins);
	end(b, e);
	return e.off;
}

/* FDE with pcrel sdata4 start, udata4 range, empty aug data. */
static size_t fde_std(struct bb *b, size_t cie, uint64_t start, uint32_t range,
		      const uint8_t *ins, size_t nins)
{
	struct ent e = begin(b, 0);

	p32(b, e.body - cie);
	p32(b, (uint32_t)(start - (SEC_ADDR + b->n)));
	p32(b, range);
	puleb(b, 0);
	pbytes(b, ins, nins);
	end(b, e);
	return e.off;
}

static void terminator(struct bb *b) { p32(b, 0); }

/* Seed the fuzz corpus with every buffer built here (layout of
 * tests/fuzz/fuzz_cfi.c) when USTACK_CFI_DUMP_DIR is set. */
static void dump_seed(int mode, const uint8_t *hdr, size_t hdr_n, const uint8_t *sec, size_t n)
{
	static int seq;
	const char *dir = getenv("USTACK_CFI_DUMP_DIR");
	char path[512];
	uint64_t sa = SEC_ADDR, ha = HDR_ADDR;
	uint32_t hl = (uint32_t)hdr_n;
	uint8_t m = (uint8_t)mode;
	FILE *f;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/unit_%03d", dir, seq++);
	f = fopen(path, "wb");
	if (!f)
		return;
	fwrite(&m, 1, 1, f);
	fwrite(&sa, 8, 1, f);
	fwrite(&ha, 8, 1, f);
	fwrite(&hl, 4, 1, f);
	if (hdr_n)
		fwrite(hdr, 1, hdr_n, f);
	if (n)
		fwrite(sec, 1, n, f);
	fclose(f);
}

static int eh_init(struct ustack_cfi *cfi, const struct bb *b)
{
	dump_seed(0, NULL, 0, b->b, b->n);
	return ustack_cfi__init_eh_frame(cfi, b->b, b->n, SEC_ADDR, NULL, 0, 0);
}

static int same_row(const struct ustack_row *a, const struct ustack_row *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* Without a search table, the FDE index answers as the walk did (@err,
 * @row): the same error, the same row. Overlapping FDEs: no index. */
static int index_agrees(const struct ustack_cfi *cfi, uint64_t pc, int err,
			const struct ustack_row *row)
{
	struct ustack_cfi_index *ix;
	struct ustack_row irow;
	int ierr;

	if (cfi->hdr_count)
		return 1;
	ix = ustack_cfi_index__build(cfi);
	if (!ix)
		return errno == ENOTUNIQ;
	memset(&irow, 0, sizeof(irow));
	ierr = ustack_cfi_index__find_row(cfi, ix, pc, &irow);
	ustack_cfi_index__free(ix);
	if (ierr != err || (!err && !same_row(row, &irow))) {
		printf("  index differs at 0x%" PRIx64 ": %d vs the walk's %d\n", pc, ierr, err);
		return 0;
	}
	return 1;
}

/* find_row, also checked against the compiled table and the FDE index. */
static int lookup(const struct ustack_cfi *cfi, uint64_t pc, struct ustack_row *row)
{
	ustack_print_fn_t old = ustack_set_print(NULL); /* corrupt cases warn */
	struct ustack_cfi_table *t = ustack_cfi_table__build(cfi);
	struct ustack_row trow;
	int err, terr;

	ustack_set_print(old);

	memset(row, 0, sizeof(*row));
	memset(&trow, 0, sizeof(trow));
	err = ustack_cfi__find_row(cfi, pc, row);
	terr = ustack_cfi_table__find_row(t, pc, &trow);
	ustack_cfi_table__free(t);
	if (err == 0 && (terr != 0 || !same_row(row, &trow))) {
		printf("  table differs at 0x%" PRIx64 ": err %d [%" PRIx64 ",%" PRIx64 ") off %d vs "
		       "[%" PRIx64 ",%" PRIx64 ") off %d\n", pc, terr, row->start, row->end,
		       row->cfa_off, trow.start, trow.end, trow.cfa_off);
		return -1000;
	}
	if (err == -ENOENT && terr != -ENOENT)
		return -1001;
	return index_agrees(cfi, pc, err, row) ? err : -1002;
}

#define EXPECT_ROW(r, st, en, creg, coff, rarule, raoff, fprule, fpoff, fl) do { \
	CHECK_EQ_U64((r).start, st); CHECK_EQ_U64((r).end, en); \
	CHECK_EQ((r).cfa_reg, creg); CHECK_EQ((r).cfa_off, coff); \
	CHECK_EQ((r).ra_rule, rarule); if ((rarule) == USTACK_RULE_OFFSET) CHECK_EQ((r).ra_off, raoff); \
	CHECK_EQ((r).fp_rule, fprule); if ((fprule) == USTACK_RULE_OFFSET) CHECK_EQ((r).fp_off, fpoff); \
	CHECK_EQ((r).flags, fl); } while (0)

/* ---- tests ---- */

static void test_cfi_basic_prologue(void)
{
	/* push rbp; mov rbp,rsp; ...; leave; ret */
	static const uint8_t ins[] = {
		0x41,             /* advance 1 */
		0x0e, 16,         /* def_cfa_offset 16 */
		0x86, 2,          /* offset rbp at cfa-16 */
		0x43,             /* advance 3 */
		0x0d, 6,          /* def_cfa_register rbp */
		0x02, 0x50,       /* advance_loc1 0x50 */
		0x0c, 7, 8,       /* def_cfa rsp 8 */
	};
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	struct ustack_row r;
	size_t cie = cie_std(&b, "zR", 0x1b, NULL, 0);

	fde_std(&b, cie, 0x2000, 0x60, ins, sizeof(ins));
	terminator(&b);
	CHECK_EQ(eh_init(&cfi, &b), 0);
	CHECK_EQ(lookup(&cfi, 0x2000, &r), 0);
	EXPECT_ROW(r, 0x2000, 0x2001, USTACK_CFA_SP, 8, USTACK_RULE_OFFSET, -8, USTACK_RULE_SAME, 0, 0);
	CHECK_EQ(lookup(&cfi, 0x2003, &r), 0);
	EXPECT_ROW(r, 0x2001, 0x2004, USTACK_CFA_SP, 16, USTACK_RULE_OFFSET, -8, USTACK_RULE_OFFSET, -16, 0);
	CHECK_EQ(lookup(&cfi, 0x2004, &r), 0);
	EXPECT_ROW(r, 0x2004, 0x2054, USTACK_CFA_FP, 16, USTACK_RULE_OFFSET, -8, USTACK_RULE_OFFSET, -16, 0);
	CHECK_EQ(lookup(&cfi, 0x205f, &r), 0);
	EXPECT_ROW(r, 0x2054, 0x2060, USTACK_CFA_SP, 8, USTACK_RULE_OFFSET, -8, USTACK_RULE_OFFSET, -16, 0);
	CHECK_EQ(lookup(&cfi, 0x2060, &r), -ENOENT);
	CHECK_EQ(lookup(&cfi, 0x1fff, &r), -ENOENT);
}

static void test_cfi_every_opcode(void)
{
	/* One FDE at 0x4000, code_align 1, each advance_loc 1 opens the next
	 * row; the expected row per address is in the table below. */
	static const uint8_t ins[] = {
		/* 0x4000: offset_extended rbp, 2 -> rbp at cfa-16 */
		0x05, 6, 2, 0x41,
		/* 0x4001: offset_extended_sf rbp, -3 -> cfa+24 */
		0x11, 6, 0x7d, 0x41,
		/* 0x4002: restore rbp (CIE: unspecified -> same) */
		0xc6, 0x41,
		/* 0x4003: GNU_negative_offset_extended rbp 4 -> -(4*-8) = +32 */
		0x2f, 6, 4, 0x41,
		/* 0x4004: restore_extended rbp; undefined rbp */
		0x06, 6, 0x07, 6, 0x41,
		/* 0x4005: same_value rbp */
		0x08, 6, 0x41,
		/* 0x4006: remember; def_cfa_sf rbp, -2 -> rbp+16; register rbp in rbx */
		0x0a, 0x12, 6, 0x7e, 0x09, 6, 3, 0x41,
		/* 0x4007: restore_state -> rsp+8, rbp same */
		0x0b, 0x41,
		/* 0x4008: def_cfa_offset_sf -4 -> rsp+32; GNU_args_size 16; nop */
		0x13, 0x7c, 0x2e, 16, 0x00, 0x41,
		/* 0x4009: val_offset rbp 1 -> fallback */
		0x14, 6, 1, 0x41,
		/* 0x400a: val_offset_sf rbp -1; then offset rbp 2 again */
		0x15, 6, 0x7f, 0x86, 2, 0x41,
		/* 0x400b: expression rbp {DW_OP_breg7 0} -> fallback */
		0x10, 6, 2, 0x77, 0x00, 0x41,
		/* 0x400c: val_expression rbp; restore rbp */
		0x16, 6, 2, 0x77, 0x00, 0xc6, 0x41,
		/* 0x400d: def_cfa_expression {DW_OP_breg6 -8; DW_OP_deref} -> fallback */
		0x0f, 3, 0x76, 0x78, 0x06, 0x41,
		/* 0x400e: def_cfa rsp 8 (back to plain); advance_loc2 0x10 */
		0x0c, 7, 8, 0x03, 0x10, 0x00,
		/* 0x401e: advance_loc4 2 after def_cfa_offset 40 */
		0x0e, 40, 0x04, 0x02, 0x00, 0x00, 0x00,
		/* 0x4020: set_loc 0x4030 (pcrel sdata4, offset patched below) */
		0x01, 0, 0, 0, 0,
		/* 0x4030: offset r16 at cfa-16 (RA elsewhere), def_cfa_register rbp */
		0x90, 2, 0x0d, 6,
	};
	struct {
		uint64_t pc, start, end;
		int cfa_reg, cfa_off, fp_rule, fp_off, flags;
	} exp[] = {
		{ 0x4000, 0x4000, 0x4001, USTACK_CFA_SP, 8, USTACK_RULE_OFFSET, -16, 0 },
		{ 0x4001, 0x4001, 0x4002, USTACK_CFA_SP, 8, USTACK_RULE_OFFSET, 24, 0 },
		{ 0x4002, 0x4002, 0x4003, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, 0 },
		{ 0x4003, 0x4003, 0x4004, USTACK_CFA_SP, 8, USTACK_RULE_OFFSET, 32, 0 },
		{ 0x4004, 0x4004, 0x4005, USTACK_CFA_SP, 8, USTACK_RULE_UNDEFINED, 0, 0 },
		{ 0x4005, 0x4005, 0x4006, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, 0 },
		{ 0x4006, 0x4006, 0x4007, USTACK_CFA_FP, 16, USTACK_RULE_SAME, 0, USTACK_ROW_NEEDS_FALLBACK },
		{ 0x4007, 0x4007, 0x4008, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, 0 },
		{ 0x4008, 0x4008, 0x4009, USTACK_CFA_SP, 32, USTACK_RULE_SAME, 0, 0 },
		{ 0x4009, 0x4009, 0x400a, USTACK_CFA_SP, 32, USTACK_RULE_SAME, 0, USTACK_ROW_NEEDS_FALLBACK },
		{ 0x400a, 0x400a, 0x400b, USTACK_CFA_SP, 32, USTACK_RULE_OFFSET, -16, 0 },
		{ 0x400b, 0x400b, 0x400c, USTACK_CFA_SP, 32, USTACK_RULE_SAME, 0, USTACK_ROW_NEEDS_FALLBACK },
		{ 0x400c, 0x400c, 0x400d, USTACK_CFA_SP, 32, USTACK_RULE_SAME, 0, 0 },
		{ 0x400d, 0x400d, 0x400e, USTACK_CFA_SP, 0, USTACK_RULE_SAME, 0, USTACK_ROW_NEEDS_FALLBACK },
		{ 0x400e, 0x400e, 0x401e, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, 0 },
		{ 0x401d, 0x400e, 0x401e, USTACK_CFA_SP, 8, USTACK_RULE_SAME, 0, 0 },
		{ 0x401e, 0x401e, 0x4020, USTACK_CFA_SP, 40, USTACK_RULE_SAME, 0, 0 },
		{ 0x4020, 0x4020, 0x4030, USTACK_CFA_SP, 40, USTACK_RULE_SAME, 0, 0 },
		{ 0x403f, 0x4030, 0x4040, USTACK_CFA_FP, 40, USTACK_RULE_SAME, 0, 0 },
	};
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	struct ustack_row r;
	uint8_t code[sizeof(ins)];
	size_t cie = cie_std(&b, "zR", 0x1b, NULL, 0), fde, setloc;

	memcpy(code, ins, sizeof(ins));
	fde = fde_std(&b, cie, 0x4000, 0x40, code, sizeof(code));
	/* patch the set_loc operand: pcrel from the operand's own address */
	setloc = fde + 4 + 4 + 4 + 4 + 1 + (sizeof(ins) - 4 - 5) + 1;
	CHECK_EQ(b.b[setloc - 1], 0x01);
	{
		int32_t v = (int32_t)(0x4030 - (SEC_ADDR + setloc));

		memcpy(b.b + setloc, &v, 4);
	}
	terminator(&b);
	CHECK_EQ(eh_init(&cfi, &b), 0);
	for (size_t i = 0; i < ARRAY_SIZE(exp); i++) {
		int ra_ok = exp[i].pc < 0x4030;

		CHECK_EQ(lookup(&cfi, exp[i].pc, &r), 0);
		EXPECT_ROW(r, exp[i].start, exp[i].end, exp[i].cfa_reg, exp[i].cfa_off,
			   USTACK_RULE_OFFSET, ra_ok ? -8 : -16, exp[i].fp_rule, exp[i].fp_off,
			   exp[i].flags);
	}
}

/* FDE whose initial_location uses @enc; returns find_row's result. */
static int try_encoding(uint8_t enc, uint64_t start, struct ustack_row *r)
{
	static const uint8_t ins[] = { 0x41, 0x0e, 16 };
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	size_t cie = cie_std(&b, "zR", enc, NULL, 0);
	struct ent e = begin(&b, 0);
	uint64_t field = SEC_ADDR + b.n + 4, v = start;

	p32(&b, e.body - cie);
	if ((enc & 0x70) == 0x50) { /* aligned */
		while ((SEC_ADDR + b.n) % 8)
			p8(&b, 0);
		field = SEC_ADDR + b.n;
	}
	if ((enc & 0x70) == 0x10)
		v = start - field;
	switch (enc & 0x0f) {
	case 0x00: p64(&b, v); p64(&b, 0x20); break;
	case 0x01: puleb(&b, v); puleb(&b, 0x20); break;
	case 0x02: case 0x0a: p16(&b, v); p16(&b, 0x20); break;
	case 0x03: case 0x0b: p32(&b, v); p32(&b, 0x20); break;
	case 0x04: case 0x0c: p64(&b, v); p64(&b, 0x20); break;
	case 0x09: psleb(&b, (int64_t)v); psleb(&b, 0x20); break;
	}
	puleb(&b, 0);
	pbytes(&b, ins, sizeof(ins));
	end(&b, e);
	terminator(&b);
	if (eh_init(&cfi, &b))
		return -1;
	return lookup(&cfi, start + 5, r);
}

static void test_cfi_pointer_encodings(void)
{
	static const uint8_t fmts[] = { 0x00, 0x01, 0x02, 0x03, 0x04, 0x09, 0x0a, 0x0b, 0x0c };
	struct ustack_row r;

	for (size_t i = 0; i < ARRAY_SIZE(fmts); i++) {
		for (int pcrel = 0; pcrel < 2; pcrel++) {
			uint8_t enc = fmts[i] | (pcrel ? 0x10 : 0);
			/* 2-byte absolute values need a small address */
			uint64_t start = (fmts[i] == 0x02 || fmts[i] == 0x0a) && !pcrel ? 0x3000 : 0x12345000;

			if ((fmts[i] == 0x02 || fmts[i] == 0x0a) && pcrel)
				start = 0x2000;
			CHECK_EQ(try_encoding(enc, start, &r), 0);
			CHECK_EQ_U64(r.start, start + 1);
			CHECK_EQ_U64(r.end, start + 0x20);
			CHECK_EQ(r.cfa_off, 16);
		}
	}
	/* sdata2 pcrel to an address below the field: negative delta */
	CHECK_EQ(try_encoding(0x1a, 0x800, &r), 0);
	CHECK_EQ_U64(r.start, 0x801);
	/* aligned absolute pointer */
	CHECK_EQ(try_encoding(0x50, 0x7000, &r), 0);
	CHECK_EQ_U64(r.start, 0x7001);
	/* textrel/datarel: no base known for .eh_frame FDEs -> corrupt */
	CHECK_EQ(try_encoding(0x23, 0x7000, &r), -EBADMSG);
	CHECK_EQ(try_encoding(0x33, 0x7000, &r), -EBADMSG);
	/* invalid value format 0x05 */
	CHECK_EQ(try_encoding(0x05, 0x7000, &r), -EBADMSG);
}

static void test_cfi_personality_lsda(void)
{
	/* "zPLR": P = indirect|pcrel|sdata4 (skipped), L = pcrel sdata4, the
	 * FDE carries an LSDA pointer in its augmentation data. */
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	struct ustack_row r;
	struct ent e = begin(&b, 0);
	size_t cie = e.off;

	p32(&b, 0); p8(&b, 1); pbytes(&b, "zPLR", 5);
	puleb(&b, 1); psleb(&b, -8); p8(&b, 16);
	puleb(&b, 7); p8(&b, 0x9b); p32(&b, 0x1234); p8(&b, 0x1b); p8(&b, 0x1b);
	p8(&b, 0x0c); p8(&b, 7); p8(&b, 8); p8(&b, 0x90); p8(&b, 1);
	end(&b, e);
	e = begin(&b, 0);
	p32(&b, e.body - cie);
	p32(&b, (uint32_t)(0x5000 - (SEC_ADDR + b.n)));
	p32(&b, 0x10);
	puleb(&b, 4); p32(&b, 0xdeadbeef); /* LSDA */
	p8(&b, 0x44); p8(&b, 0x0e); p8(&b, 24);
	end(&b, e);
	terminator(&b);
	CHECK_EQ(eh_init(&cfi, &b), 0);
	CHECK_EQ(lookup(&cfi, 0x5004, &r), 0);
	EXPECT_ROW(r, 0x5004, 0x5010, USTACK_CFA_SP, 24, USTACK_RULE_OFFSET, -8, USTACK_RULE_SAME, 0, 0);
	CHECK_EQ(lookup(&cfi, 0x5003, &r), 0);
	CHECK_EQ(r.cfa_off, 8);
}

static void test_cfi_64bit_lengths(void)
{
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	struct ustack_row r;
	struct ent e = begin(&b, 1);
	size_t cie = e.off, idfield;

	p64(&b, 0); p8(&b, 1); pbytes(&b, "zR", 3);
	puleb(&b, 1); psleb(&b, -8); p8(&b, 16); puleb(&b, 1); p8(&b, 0x1b);
	p8(&b, 0x0c); p8(&b, 7); p8(&b, 8); p8(&b, 0x90); p8(&b, 1);
	end(&b, e);
	e = begin(&b, 1);
	idfield = b.n;
	p64(&b, idfield - cie);
	p32(&b, (uint32_t)(0x6000 - (SEC_ADDR + b.n)));
	p32(&b, 0x40);
	puleb(&b, 0);
	p8(&b, 0x48); p8(&b, 0x0e); p8(&b, 48);
	end(&b, e);
	terminator(&b);
	CHECK_EQ(ld_u32(b.b), 0xffffffffu);
	CHECK_EQ(eh_init(&cfi, &b), 0);
	CHECK_EQ(lookup(&cfi, 0x6008, &r), 0);
	EXPECT_ROW(r, 0x6008, 0x6040, USTACK_CFA_SP, 48, USTACK_RULE_OFFSET, -8, USTACK_RULE_SAME, 0, 0);
	CHECK_EQ(lookup(&cfi, 0x6007, &r), 0);
	CHECK_EQ(r.cfa_off, 8);
}

static void test_cfi_zero_terminator(void)
{
	static const uint8_t ins[] = { 0x41, 0x0e, 16 };
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	struct ustack_row r;
	size_t cie = cie_std(&b, "zR", 0x1b, NULL, 0);

	fde_std(&b, cie, 0x2000, 0x10, ins, sizeof(ins));
	terminator(&b);
	/* beyond the terminator: never seen */
	fde_std(&b, cie, 0x3000, 0x10, ins, sizeof(ins));
	CHECK_EQ(eh_init(&cfi, &b), 0);
	CHECK_EQ(lookup(&cfi, 0x2000, &r), 0);
	CHECK_EQ(lookup(&cfi, 0x3000, &r), -ENOENT);
	/* empty section */
	CHECK_EQ(ustack_cfi__init_eh_frame(&cfi, b.b, 0, SEC_ADDR, NULL, 0, 0), 0);
	CHECK_EQ(ustack_cfi__find_row(&cfi, 0x2000, &r), -ENOENT);
}

/* The PLT FDE ld writes for .plt (lit11) or .plt.sec-style stubs (lit10). */
static void plt_check(int lit)
{
	uint8_t ins[] = {
		0x0e, 16, 0x46, 0x0e, 24, 0x4a,
		0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, (uint8_t)(0x30 + lit), 0x2a, 0x33, 0x24, 0x22,
	};
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	struct ustack_row r;
	size_t cie = cie_std(&b, "zR", 0x1b, NULL, 0);
	const uint64_t base = 0x3000, slots = 6;

	fde_std(&b, cie, base, 16 * slots, ins, sizeof(ins));
	terminator(&b);
	CHECK_EQ(eh_init(&cfi, &b), 0);
	/* PLT0: push; jmp *GOT+16 */
	CHECK_EQ(lookup(&cfi, base + 3, &r), 0);
	EXPECT_ROW(r, base, base + 6, USTACK_CFA_SP, 16, USTACK_RULE_OFFSET, -8, USTACK_RULE_SAME, 0, 0);
	CHECK_EQ(lookup(&cfi, base + 6, &r), 0);
	EXPECT_ROW(r, base + 6, base + 16, USTACK_CFA_SP, 24, USTACK_RULE_OFFSET, -8, USTACK_RULE_SAME, 0, 0);
	/* every byte of every following slot */
	for (uint64_t pc = base + 16; pc < base + 16 * slots; pc++) {
		int hi = (int)(pc & 15) >= lit;
		uint64_t slot = pc & ~15ull;

		CHECK_EQ(lookup(&cfi, pc, &r), 0);
		EXPECT_ROW(r, hi ? slot + lit : slot, hi ? slot + 16 : slot + lit, USTACK_CFA_SP,
			   hi ? 16 : 8, USTACK_RULE_OFFSET, -8, USTACK_RULE_SAME, 0, 0);
	}
	CHECK_EQ(lookup(&cfi, base + 16 * slots, &r), -ENOENT);
}

static void test_cfi_plt_expression(void)
{
	plt_check(11);
	plt_check(10);
}

static void test_cfi_signal_frame(void)
{
	/* glibc __restore_rt style: "zRS", CFA and registers by expressions */
	static const uint8_t ins[] = {
		0x0f, 3, 0x77, 0xa0, 0x01,         /* def_cfa_expression breg7 160 */
		0x10, 16, 2, 0x77, 0x28,           /* expression rip */
		0x10, 6, 2, 0x77, 0x78,            /* expression rbp */
	};
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	struct ustack_row r;
	size_t cie = cie_std(&b, "zRS", 0x1b, NULL, 0);

	fde_std(&b, cie, 0x8000 - 1, 0x10, ins, sizeof(ins));
	terminator(&b);
	CHECK_EQ(eh_init(&cfi, &b), 0);
	CHECK_EQ(lookup(&cfi, 0x8000, &r), 0);
	CHECK(r.flags & USTACK_ROW_SIGNAL);
	CHECK(r.flags & USTACK_ROW_NEEDS_FALLBACK);
	CHECK(!(r.flags & USTACK_ROW_OUTERMOST));
	CHECK_EQ_U64(r.start, 0x7fff);
	/* a plain 'S' FDE keeps its rules and gets the flag */
	b.n = 0;
	cie = cie_std(&b, "zRS", 0x1b, NULL, 0);
	fde_std(&b, cie, 0x8000, 0x10, ins, 0);
	terminator(&b);
	CHECK_EQ(eh_init(&cfi, &b), 0);
	CHECK_EQ(lookup(&cfi, 0x8000, &r), 0);
	EXPECT_ROW(r, 0x8000, 0x8010, USTACK_CFA_SP, 8, USTACK_RULE_OFFSET, -8, USTACK_RULE_SAME, 0,
		   USTACK_ROW_SIGNAL);
}

static void test_cfi_undefined_ra(void)
{
	/* _start: CIE says DW_CFA_undefined rip */
	static const uint8_t cie_ins[] = { 0x07, 16 };
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	struct ustack_row r;
	size_t cie = cie_std(&b, "zR", 0x1b, cie_ins, sizeof(cie_ins));

	fde_std(&b, cie, 0x9000, 0x22, NULL, 0);
	terminator(&b);
	CHECK_EQ(eh_init(&cfi, &b), 0);
	CHECK_EQ(lookup(&cfi, 0x9021, &r), 0);
	EXPECT_ROW(r, 0x9000, 0x9022, USTACK_CFA_SP, 8, USTACK_RULE_UNDEFINED, 0, USTACK_RULE_SAME, 0,
		   USTACK_ROW_OUTERMOST);
}

static void test_cfi_drap_needs_fallback(void)
{
	/* gcc -mstackrealign style: lea r10,[rsp+8]; and rsp,-16; push [r10-8];
	 * push rbp; mov rbp,rsp; push r10 */
	static const uint8_t ins[] = {
		0x45, 0x0c, 10, 0,                            /* def_cfa r10 0 */
		0x49, 0x10, 6, 2, 0x76, 0,                    /* expression rbp {breg6 0} */
		0x44, 0x0f, 5, 0x76, 0x78, 0x06, 0x23, 0x10,  /* def_cfa_expression breg6 -8; deref; plus_uconst 16 */
		0x50, 0x0c, 7, 8,                             /* def_cfa rsp 8 */
	};
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	struct ustack_row r;
	size_t cie = cie_std(&b, "zR", 0x1b, NULL, 0);

	fde_std(&b, cie, 0xa000, 0x40, ins, sizeof(ins));
	terminator(&b);
	CHECK_EQ(eh_init(&cfi, &b), 0);
	CHECK_EQ(lookup(&cfi, 0xa005, &r), 0);
	CHECK_EQ(r.flags, USTACK_ROW_NEEDS_FALLBACK);
	CHECK_EQ(r.ra_rule, USTACK_RULE_OFFSET); /* what is known is still filled */
	CHECK_EQ(lookup(&cfi, 0xa00e, &r), 0);
	CHECK_EQ(r.flags, USTACK_ROW_NEEDS_FALLBACK);
	CHECK_EQ(lookup(&cfi, 0xa012, &r), 0);
	CHECK_EQ(r.flags, USTACK_ROW_NEEDS_FALLBACK);
	CHECK_EQ(lookup(&cfi, 0xa022, &r), 0);
	/* rbp still described by an expression */
	CHECK_EQ(r.flags, USTACK_ROW_NEEDS_FALLBACK);
	CHECK_EQ(r.cfa_off, 8);
	CHECK_EQ(lookup(&cfi, 0xa000, &r), 0);
	CHECK_EQ(r.flags, 0);
}

static void test_cfi_debug_frame(void)
{
	for (int is64 = 0; is64 < 2; is64++) {
		struct bb b = { .n = 0 };
		struct ustack_cfi cfi;
		struct ustack_row r;
		struct ent e;
		size_t cie;

		b.n = 0;
		/* a leading FDE-less CIE of version 1 must not confuse the walk */
		e = begin(&b, is64);
		if (is64) p64(&b, ~0ull); else p32(&b, 0xffffffffu);
		p8(&b, 1); p8(&b, 0); puleb(&b, 1); psleb(&b, -8); p8(&b, 16);
		end(&b, e);
		e = begin(&b, is64);
		cie = e.off;
		if (is64) p64(&b, ~0ull); else p32(&b, 0xffffffffu);
		p8(&b, 4); p8(&b, 0); p8(&b, 8); p8(&b, 0); /* v4: "", addr 8, seg 0 */
		puleb(&b, 1); psleb(&b, -8); puleb(&b, 16);
		p8(&b, 0x0c); p8(&b, 7); p8(&b, 8); p8(&b, 0x90); p8(&b, 1);
		end(&b, e);
		e = begin(&b, is64);
		if (is64) p64(&b, cie); else p32(&b, cie);
		p64(&b, 0x401000); p64(&b, 0x30);
		p8(&b, 0x41); p8(&b, 0x0e); p8(&b, 16); p8(&b, 0x86); p8(&b, 2);
		end(&b, e);
		dump_seed(1, NULL, 0, b.b, b.n);
		CHECK_EQ(ustack_cfi__init_debug_frame(&cfi, b.b, b.n), 0);
		CHECK_EQ(lookup(&cfi, 0x401010, &r), 0);
		EXPECT_ROW(r, 0x401001, 0x401030, USTACK_CFA_SP, 16, USTACK_RULE_OFFSET, -8,
			   USTACK_RULE_OFFSET, -16, 0);
		CHECK_EQ(lookup(&cfi, 0x401030, &r), -ENOENT);
		CHECK_STR(ustack_cfi__section_name(&cfi), ".debug_frame");
	}
}

/* .eh_frame_hdr for the FDEs at @fdes (offsets in the section). */
static void build_hdr(struct bb *h, const struct bb *sec, const size_t *fdes, const uint64_t *starts,
		      size_t n)
{
	h->n = 0;
	p8(h, 1); p8(h, 0x1b); p8(h, 0x03); p8(h, 0x3b);
	p32(h, (uint32_t)(SEC_ADDR - (HDR_ADDR + 4)));
	p32(h, n);
	for (size_t i = 0; i < n; i++) {
		p32(h, (uint32_t)(starts[i] - HDR_ADDR));
		p32(h, (uint32_t)(SEC_ADDR + fdes[i] - HDR_ADDR));
	}
	(void)sec;
}

static void test_cfi_eh_frame_hdr(void)
{
	static const uint8_t ins[] = { 0x42, 0x0e, 16 };
	struct bb b = { .n = 0 }, h;
	struct ustack_cfi cfi, walk;
	struct ustack_row r, w;
	size_t cie = cie_std(&b, "zR", 0x1b, NULL, 0), fdes[8];
	uint64_t starts[8];

	for (int i = 0; i < 8; i++) {
		starts[i] = 0x10000 + 0x100 * i;
		fdes[i] = fde_std(&b, cie, starts[i], 0x80, ins, sizeof(ins));
	}
	terminator(&b);
	build_hdr(&h, &b, fdes, starts, 8);
	dump_seed(0, h.b, h.n, b.b, b.n);
	CHECK_EQ(ustack_cfi__init_eh_frame(&cfi, b.b, b.n, SEC_ADDR, h.b, h.n, HDR_ADDR), 0);
	CHECK_EQ(cfi.hdr_count, 8);
	CHECK_EQ(eh_init(&walk, &b), 0);
	for (uint64_t pc = 0xff00; pc < 0x10900; pc += 3) {
		int e1 = ustack_cfi__find_row(&cfi, pc, &r), e2 = ustack_cfi__find_row(&walk, pc, &w);

		CHECK_EQ(e1, e2);
		if (!e1)
			CHECK(same_row(&r, &w));
	}
	/* the upper bound: last FDE and beyond it */
	CHECK_EQ(ustack_cfi__find_row(&cfi, 0x1077f, &r), 0);
	CHECK_EQ(ustack_cfi__find_row(&cfi, 0x10780, &r), -ENOENT);
	CHECK_EQ(ustack_cfi__find_row(&cfi, ~0ull, &r), -ENOENT);
	CHECK_EQ(ustack_cfi__find_row(&cfi, 0, &r), -ENOENT);
	{
		uint64_t a;

		CHECK_EQ(ustack_cfi__hdr_eh_frame_addr(h.b, h.n, HDR_ADDR, &a), 0);
		CHECK_EQ_U64(a, SEC_ADDR);
	}
	/* eh_frame_ptr disagreeing with the section address (file offset
	 * given instead of vaddr) */
	CHECK_EQ(ustack_cfi__init_eh_frame(&cfi, b.b, b.n, SEC_ADDR + 0x200000, h.b, h.n, HDR_ADDR),
		 -EBADMSG);
	/* fde_count larger than the table */
	h.b[8] = 9;
	CHECK_EQ(ustack_cfi__init_eh_frame(&cfi, b.b, b.n, SEC_ADDR, h.b, h.n, HDR_ADDR), -EBADMSG);
	h.b[8] = 8;
	/* bad version */
	h.b[0] = 2;
	CHECK_EQ(ustack_cfi__init_eh_frame(&cfi, b.b, b.n, SEC_ADDR, h.b, h.n, HDR_ADDR), -EBADMSG);
	h.b[0] = 1;
	/* a table entry pointing at the CIE instead of an FDE */
	memcpy(h.b + 12 + 8 * 3 + 4, &(uint32_t){ (uint32_t)(SEC_ADDR + cie - HDR_ADDR) }, 4);
	CHECK_EQ(ustack_cfi__init_eh_frame(&cfi, b.b, b.n, SEC_ADDR, h.b, h.n, HDR_ADDR), 0);
	CHECK_EQ(ustack_cfi__find_row(&cfi, 0x10310, &r), -EBADMSG);
	/* a table entry whose location disagrees with its FDE (unsorted/stale) */
	build_hdr(&h, &b, fdes, starts, 8);
	memcpy(h.b + 12 + 8 * 3, &(uint32_t){ (uint32_t)(0x10308 - HDR_ADDR) }, 4);
	CHECK_EQ(ustack_cfi__init_eh_frame(&cfi, b.b, b.n, SEC_ADDR, h.b, h.n, HDR_ADDR), 0);
	CHECK_EQ(ustack_cfi__find_row(&cfi, 0x10310, &r), -EBADMSG);
}

/* Standard CIE + one FDE [0x2000, 0x2100) with @ins; find_row at 0x20f0. */
static int run_ins(const uint8_t *ins, size_t n)
{
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	struct ustack_row r;
	size_t cie = cie_std(&b, "zR", 0x1b, NULL, 0);

	fde_std(&b, cie, 0x2000, 0x100, ins, n);
	terminator(&b);
	if (eh_init(&cfi, &b))
		return -1;
	return ustack_cfi__find_row(&cfi, 0x20f0, &r);
}

static void test_cfi_corrupt(void)
{
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	struct ustack_row r;
	size_t cie = cie_std(&b, "zR", 0x1b, NULL, 0), fde;
	static const uint8_t ins[] = { 0x41, 0x0e, 16 };
	uint8_t deep[USTACK_CFI_STACK_DEPTH + 2];

	fde = fde_std(&b, cie, 0x2000, 0x100, ins, sizeof(ins));
	terminator(&b);

	/* length beyond the section */
	{
		struct bb c = b;

		memcpy(c.b + fde, &(uint32_t){ 0x1000 }, 4);
		CHECK_EQ(eh_init(&cfi, &c), 0);
		CHECK_EQ(ustack_cfi__find_row(&cfi, 0x2010, &r), -EBADMSG);
	}
	/* reserved length value */
	{
		struct bb c = b;

		memcpy(c.b + fde, &(uint32_t){ 0xfffffff0u }, 4);
		CHECK_EQ(eh_init(&cfi, &c), 0);
		CHECK_EQ(ustack_cfi__find_row(&cfi, 0x2010, &r), -EBADMSG);
	}
	/* CIE pointer to garbage (into the middle of the CIE), and before
	 * the section start */
	{
		struct bb c = b;

		memcpy(c.b + fde + 4, &(uint32_t){ (uint32_t)(fde + 4 - 8) }, 4);
		CHECK_EQ(eh_init(&cfi, &c), 0);
		CHECK_EQ(ustack_cfi__find_row(&cfi, 0x2010, &r), -EBADMSG);
		memcpy(c.b + fde + 4, &(uint32_t){ 0x10000 }, 4);
		CHECK_EQ(ustack_cfi__find_row(&cfi, 0x2010, &r), -EBADMSG);
	}
	/* CIE version 2, and the ancient "eh" augmentation */
	{
		struct bb c = b;

		c.b[cie + 8] = 2;
		CHECK_EQ(eh_init(&cfi, &c), 0);
		CHECK_EQ(ustack_cfi__find_row(&cfi, 0x2010, &r), -EBADMSG);
		c = b;
		c.b[cie + 9] = 'e';
		c.b[cie + 10] = 'h';
		CHECK_EQ(eh_init(&cfi, &c), 0);
		CHECK_EQ(ustack_cfi__find_row(&cfi, 0x2010, &r), -EBADMSG);
	}
	/* truncated instructions: offset_extended without its operands at
	 * the end of the FDE (no padding follows: length covers exactly) */
	{
		struct bb c = { .n = 0 };
		struct ent e;
		size_t ci = cie_std(&c, "zR", 0x1b, NULL, 0);

		e = begin(&c, 0);
		p32(&c, e.body - ci);
		p32(&c, (uint32_t)(0x2000 - (SEC_ADDR + c.n)));
		p32(&c, 0x100);
		puleb(&c, 0);
		p8(&c, 0x05); p8(&c, 0x86); p8(&c, 0x80); /* reg = uleb 0x86 0x80 ... cut */
		memcpy(c.b + e.off, &(uint32_t){ (uint32_t)(c.n - e.body) }, 4);
		terminator(&c);
		CHECK_EQ(eh_init(&cfi, &c), 0);
		CHECK_EQ(ustack_cfi__find_row(&cfi, 0x2010, &r), -EBADMSG);
	}
	/* truncated block of def_cfa_expression */
	CHECK_EQ(run_ins((const uint8_t[]){ 0x0f, 9, 0x77, 0 }, 4), -EBADMSG);
	/* advance_loc4 with the two padding bytes left */
	CHECK_EQ(run_ins((const uint8_t[]){ 0x04 }, 1), -EBADMSG);
	/* too-deep remember stack */
	memset(deep, 0x0a, sizeof(deep));
	CHECK_EQ(run_ins(deep, USTACK_CFI_STACK_DEPTH), 0);
	CHECK_EQ(run_ins(deep, USTACK_CFI_STACK_DEPTH + 1), -EBADMSG);
	/* restore_state on an empty stack */
	CHECK_EQ(run_ins((const uint8_t[]){ 0x0b }, 1), -EBADMSG);
	/* unknown opcode */
	CHECK_EQ(run_ins((const uint8_t[]){ 0x1d }, 1), -EBADMSG);
	/* factored offset overflow */
	CHECK_EQ(run_ins((const uint8_t[]){ 0x11, 6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					    0xff, 0xff, 0xff, 0x00 }, 12), -EBADMSG);
	/* set_loc backwards */
	CHECK_EQ(run_ins((const uint8_t[]){ 0x44, 0x01, 0, 0, 0, 0 }, 6), -EBADMSG);
	/* corruption after the pc is not seen by the lookup */
	CHECK_EQ(run_ins((const uint8_t[]){ 0x41, 0x0e, 16, 0x04, 0xff, 0, 0, 0, 0x1d }, 9), 0);
}

static char warn_buf[4096];

static int capture(enum ustack_print_level level, const char *fmt, va_list ap)
{
	size_t n = strlen(warn_buf);

	if (level == USTACK_WARN && n < sizeof(warn_buf) - 1)
		vsnprintf(warn_buf + n, sizeof(warn_buf) - n, fmt, ap);
	return 0;
}

static void test_cfi_table_skips_corrupt_fde(void)
{
	static const uint8_t good[] = { 0x41, 0x0e, 16 };
	static const uint8_t bad[] = { 0x41, 0x0e, 16, 0x42, 0x1d };
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	struct ustack_cfi_table *t;
	struct ustack_row r;
	ustack_print_fn_t old;
	size_t cie = cie_std(&b, "zR", 0x1b, NULL, 0), badoff;
	char want[64];

	/* sorted out of section order on purpose */
	fde_std(&b, cie, 0x3000, 0x10, good, sizeof(good));
	badoff = fde_std(&b, cie, 0x2000, 0x10, bad, sizeof(bad));
	fde_std(&b, cie, 0x1000, 0x10, good, sizeof(good));
	terminator(&b);
	CHECK_EQ(eh_init(&cfi, &b), 0);
	warn_buf[0] = 0;
	old = ustack_set_print(capture);
	t = ustack_cfi_table__build(&cfi);
	ustack_set_print(old);
	CHECK(t);
	CHECK_EQ(ustack_cfi_table__nr_fdes(t), 2);
	CHECK_EQ(ustack_cfi_table__nr_bad_fdes(t), 1);
	CHECK_EQ(ustack_cfi_table__nr_rows(t), 4);
	snprintf(want, sizeof(want), ".eh_frame: FDE at offset 0x%zx", badoff);
	CHECK(strstr(warn_buf, want));
	CHECK(!strstr(strstr(warn_buf, want) + strlen(want), "FDE at offset"));
	CHECK_EQ(ustack_cfi_table__find_row(t, 0x1001, &r), 0);
	CHECK_EQ(r.cfa_off, 16);
	CHECK_EQ(ustack_cfi_table__find_row(t, 0x1010, &r), -ENOENT);
	CHECK_EQ(ustack_cfi_table__find_row(t, 0x2001, &r), -ENOENT);
	CHECK_EQ(ustack_cfi__find_row(&cfi, 0x2001, &r), 0);      /* before the damage */
	CHECK_EQ(ustack_cfi__find_row(&cfi, 0x2003, &r), -EBADMSG);
	CHECK_EQ(ustack_cfi_table__find_row(t, 0x300f, &r), 0);
	CHECK_EQ_U64(r.end, 0x3010);
	CHECK_EQ(ustack_cfi_table__find_row(t, 0x3010, &r), -ENOENT);
	CHECK_EQ(ustack_cfi_table__find_row(t, 0xfff, &r), -ENOENT);
	ustack_cfi_table__free(t);
	ustack_cfi_table__free(NULL);
}

/* The index of @b's section as .eh_frame into @cfi, which must hold
 * @nfdes FDEs; NULL (a failed check) when it cannot be built */
static struct ustack_cfi_index *index_of(struct ustack_cfi *cfi, const struct bb *b, size_t nfdes)
{
	struct ustack_cfi_index *ix;

	CHECK_EQ(eh_init(cfi, b), 0);
	ix = ustack_cfi_index__build(cfi);
	CHECK(ix != NULL);
	if (ix)
		CHECK_EQ(ustack_cfi_index__nr_fdes(ix), nfdes);
	return ix;
}

/* The FDE index of a section without search table: FDEs out of address
 * order, a zero-length one, a gap; then an entry the walk cannot parse
 * (everything it did not find before gives -EBADMSG, even an FDE after
 * it); then overlapping FDEs, which the index refuses. */
static void test_cfi_index(void)
{
	static const uint8_t ins[] = { 0x42, 0x0e, 16, 0x44, 0x0e, 24 };
	struct bb b = { .n = 0 };
	struct ustack_cfi cfi;
	struct ustack_cfi_index *ix;
	struct ustack_row r, w;
	size_t cie = cie_std(&b, "zR", 0x1b, NULL, 0);
	unsigned int found = 0, differ = 0;
	struct ent e;

	fde_std(&b, cie, 0x3000, 0x100, ins, sizeof(ins));
	fde_std(&b, cie, 0x2000, 0x80, ins, sizeof(ins));
	fde_std(&b, cie, 0x2090, 0, ins, sizeof(ins));
	fde_std(&b, cie, 0x2080, 0x20, NULL, 0);
	terminator(&b);
	ix = index_of(&cfi, &b, 3);
	if (!ix)
		return;
	for (uint64_t pc = 0x1f00; pc < 0x3200; pc++) {
		int e1 = ustack_cfi__find_row(&cfi, pc, &w), e2 = ustack_cfi_index__find_row(&cfi, ix, pc, &r);

		differ += e1 != e2 || (!e1 && !same_row(&r, &w));
		found += !e2;
	}
	CHECK_EQ(differ, 0);
	CHECK_EQ(found, 0x100 + 0x80 + 0x20);
	CHECK_EQ(ustack_cfi_index__find_row(&cfi, ix, 0x3005, &r), 0);
	EXPECT_ROW(r, 0x3002, 0x3006, USTACK_CFA_SP, 16, USTACK_RULE_OFFSET, -8,
		   USTACK_RULE_SAME, 0, 0);
	CHECK_EQ(ustack_cfi_index__find_row(&cfi, ix, 0x3100, &r), -ENOENT);
	CHECK_EQ(ustack_cfi_index__find_row(&cfi, ix, ~0ull, &r), -ENOENT);
	ustack_cfi_index__free(ix);

	/* an FDE whose CIE pointer points before the section, then one more */
	b.n -= 4;
	e = begin(&b, 0);
	p32(&b, 0x7ffffff0u);
	p32(&b, 0); p32(&b, 0x10);
	end(&b, e);
	fde_std(&b, cie, 0x5000, 0x10, NULL, 0);
	terminator(&b);
	ix = index_of(&cfi, &b, 3);
	if (!ix)
		return;
	CHECK_EQ(ustack_cfi_index__find_row(&cfi, ix, 0x2010, &r), 0);
	CHECK_EQ(ustack_cfi__find_row(&cfi, 0x5000, &r), -EBADMSG);
	CHECK_EQ(ustack_cfi_index__find_row(&cfi, ix, 0x5000, &r), -EBADMSG);
	CHECK_EQ(ustack_cfi_index__find_row(&cfi, ix, 0x2fff, &r), -EBADMSG);
	CHECK_EQ(ustack_cfi_index__find_row(&cfi, ix, 0x3100, &r), -EBADMSG);
	CHECK_EQ(lookup(&cfi, 0x2fff, &r), -EBADMSG);
	ustack_cfi_index__free(ix);

	/* overlapping FDEs: the walk's answer depends on section order */
	b.n = 0;
	cie = cie_std(&b, "zR", 0x1b, NULL, 0);
	fde_std(&b, cie, 0x2000, 0x80, ins, sizeof(ins));
	fde_std(&b, cie, 0x2040, 0x80, NULL, 0);
	terminator(&b);
	CHECK_EQ(eh_init(&cfi, &b), 0);
	errno = 0;
	CHECK(ustack_cfi_index__build(&cfi) == NULL);
	CHECK_EQ(errno, ENOTUNIQ);
	CHECK_EQ(lookup(&cfi, 0x2050, &r), 0);
	ustack_cfi_index__free(NULL);
}

int main(void)
{
	RUN(test_cfi_basic_prologue);
	RUN(test_cfi_every_opcode);
	RUN(test_cfi_pointer_encodings);
	RUN(test_cfi_personality_lsda);
	RUN(test_cfi_64bit_lengths);
	RUN(test_cfi_zero_terminator);
	RUN(test_cfi_plt_expression);
	RUN(test_cfi_signal_frame);
	RUN(test_cfi_undefined_ra);
	RUN(test_cfi_drap_needs_fallback);
	RUN(test_cfi_debug_frame);
	RUN(test_cfi_eh_frame_hdr);
	RUN(test_cfi_corrupt);
	RUN(test_cfi_table_skips_corrupt_fde);
	RUN(test_cfi_index);
	TEST_EXIT();
}
