// SPDX-License-Identifier: MIT
/* SFrame decoder on sections built by hand (a tiny builder below), covering
 * v1/v2/v3, FRE start sizes, offset sizes, PCMASK, PCREL, outermost frames,
 * flexible FDEs and every error path with its errno and FDE/FRE index. */
#include <errno.h>

#include "test.h"
#include "sframe/sframe.h"

#define SEC_ADDR 0x10000ull

struct tfre {
	uint32_t start;
	int fp_base;      /* CFA based on FP instead of SP */
	int wsize;        /* 1, 2, 4 (0 means 1) */
	int n;
	int32_t w[8];
	int raw_info;     /* non-zero: use info_byte as is */
	uint8_t info_byte;
};

struct tfunc {
	uint64_t start;
	uint32_t size;
	int mask;
	uint8_t rep;
	int fre_type;     /* 0, 1, 2 */
	int flex;
	int signal;
	int nfres;
	struct tfre fres[8];
};

struct sb {
	uint8_t b[4096];
	size_t len;
};

static void put(struct sb *s, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		s->b[s->len++] = (uint8_t)(v >> (8 * i));
}

static void put_at(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

struct layout {
	size_t fde_at[16];  /* byte offset of each FDE */
	size_t fre_at[16];  /* byte offset of each function's first FRE */
	size_t fre_base;
};

/* Section = header | FDEs | FREs. Returns its size. */
static size_t build(struct sb *s, int version, int flags, int abi, int8_t fixed_fp, int8_t fixed_ra,
		    const struct tfunc *f, int n, struct layout *lay)
{
	struct sb fres = { .len = 0 };
	uint32_t fre_off[16], total = 0;
	int fde_size = version == 1 ? 17 : version == 2 ? 20 : 16;
	size_t fde_base = 28, fre_base = 28 + (size_t)n * fde_size;

	s->len = 0;
	for (int i = 0; i < n; i++) {
		fre_off[i] = (uint32_t)fres.len;
		if (version == 3) {
			put(&fres, f[i].nfres, 2);
			put(&fres, (f[i].signal << 7) | (f[i].mask << 4) | f[i].fre_type, 1);
			put(&fres, f[i].flex, 1);
			put(&fres, f[i].rep, 1);
		}
		if (lay)
			lay->fre_at[i] = fre_base + fres.len;
		for (int j = 0; j < f[i].nfres; j++) {
			const struct tfre *r = &f[i].fres[j];
			int wsz = r->wsize ? r->wsize : 1, code = wsz == 1 ? 0 : wsz == 2 ? 1 : 2;

			put(&fres, r->start, 1 << f[i].fre_type);
			put(&fres, r->raw_info ? r->info_byte :
				   (code << 5) | (r->n << 1) | (r->fp_base ? 0 : 1), 1);
			for (int k = 0; k < r->n; k++)
				put(&fres, (uint32_t)r->w[k], wsz);
		}
		total += f[i].nfres;
	}
	put(s, 0xdee2, 2);
	put(s, version, 1);
	put(s, flags, 1);
	put(s, abi, 1);
	put(s, (uint8_t)fixed_fp, 1);
	put(s, (uint8_t)fixed_ra, 1);
	put(s, 0, 1);
	put(s, n, 4);
	put(s, total, 4);
	put(s, fres.len, 4);
	put(s, 0, 4);
	put(s, (uint64_t)n * fde_size, 4);
	for (int i = 0; i < n; i++) {
		size_t at = fde_base + (size_t)i * fde_size;
		uint64_t base = SEC_ADDR + ((flags & 4) ? at : 0);
		int64_t rel = (int64_t)(f[i].start - base);

		if (lay)
			lay->fde_at[i] = at;
		if (version == 3) {
			put(s, (uint64_t)rel, 8);
			put(s, f[i].size, 4);
			put(s, fre_off[i], 4);
		} else {
			put(s, (uint64_t)rel, 4);
			put(s, f[i].size, 4);
			put(s, fre_off[i], 4);
			put(s, f[i].nfres, 4);
			put(s, (f[i].mask << 4) | f[i].fre_type, 1);
			if (version == 2) {
				put(s, f[i].rep, 1);
				put(s, 0, 2);
			}
		}
	}
	if (lay)
		lay->fre_base = fre_base;
	memcpy(s->b + s->len, fres.b, fres.len);
	s->len += fres.len;
	return s->len;
}

#define AMD64 3
#define AARCH64 2

/* Two ordinary functions plus a gap; used for v1, v2 (both start
 * encodings) and v3. */
static const struct tfunc basic[] = {
	{ .start = 0x1000, .size = 0x20, .nfres = 3, .fres = {
		{ .start = 0, .n = 1, .w = { 8 } },
		{ .start = 1, .n = 2, .w = { 16, -16 } },
		{ .start = 4, .fp_base = 1, .n = 2, .w = { 16, -16 } } } },
	{ .start = 0x1040, .size = 0x10, .nfres = 2, .fres = {
		{ .start = 2, .n = 1, .w = { 8 } },
		{ .start = 9, .n = 1, .w = { 24 } } } },
};

static void check_basic(int version, int flags)
{
	struct ustack_sframe sf;
	struct ustack_sframe_error e;
	struct ustack_row r;
	struct sb s;
	size_t n = build(&s, version, flags, AMD64, 0, -8, basic, 2, NULL);

	CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
	CHECK_EQ(ustack_sframe__validate(&sf, &e), 0);
	CHECK_EQ(ustack_sframe__nr_fdes(&sf), 2);

	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1000, &r), 0);
	CHECK_EQ_U64(r.start, 0x1000);
	CHECK_EQ_U64(r.end, 0x1001);
	CHECK_EQ(r.cfa_reg, USTACK_CFA_SP);
	CHECK_EQ(r.cfa_off, 8);
	CHECK_EQ(r.ra_rule, USTACK_RULE_OFFSET);
	CHECK_EQ(r.ra_off, -8);
	CHECK_EQ(r.fp_rule, USTACK_RULE_SAME);
	CHECK_EQ(r.flags, 0);

	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1003, &r), 0);
	CHECK_EQ_U64(r.start, 0x1001);
	CHECK_EQ_U64(r.end, 0x1004);
	CHECK_EQ(r.cfa_off, 16);
	CHECK_EQ(r.fp_rule, USTACK_RULE_OFFSET);
	CHECK_EQ(r.fp_off, -16);

	CHECK_EQ(ustack_sframe__find_row(&sf, 0x101f, &r), 0);
	CHECK_EQ(r.cfa_reg, USTACK_CFA_FP);
	CHECK_EQ_U64(r.start, 0x1004);
	CHECK_EQ_U64(r.end, 0x1020);

	/* gap, before the first FRE, past the end, before everything */
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1020, &r), -ENOENT);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1041, &r), -ENOENT);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1050, &r), -ENOENT);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0xfff, &r), -ENOENT);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0, &r), -ENOENT);
	CHECK_EQ(ustack_sframe__find_row(&sf, UINT64_MAX, &r), -ENOENT);

	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1042, &r), 0);
	CHECK_EQ_U64(r.start, 0x1042);
	CHECK_EQ_U64(r.end, 0x1049);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x104f, &r), 0);
	CHECK_EQ(r.cfa_off, 24);
	CHECK_EQ_U64(r.end, 0x1050);
}

static void test_v1_basic(void) { check_basic(1, 1); }
static void test_v2_section_relative(void) { check_basic(2, 1); }
static void test_v2_pcrel(void) { check_basic(2, 1 | 4); }
static void test_v3_pcrel(void) { check_basic(3, 1 | 4); }
static void test_v3_section_relative(void) { check_basic(3, 1); }
static void test_v2_unsorted_flag_linear(void) { check_basic(2, 0); }

/* sec_addr moves every address: a runtime mapping of the same section. */
static void test_sec_addr_shift(void)
{
	struct ustack_sframe sf;
	struct ustack_row r;
	struct sb s;
	size_t n = build(&s, 3, 5, AMD64, 0, -8, basic, 2, NULL);

	CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR + 0x7f0000000000ull), 0);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1003, &r), -ENOENT);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x7f0000001003ull, &r), 0);
	CHECK_EQ_U64(r.start, 0x7f0000001001ull);
	CHECK_EQ(r.cfa_off, 16);
}

static void test_fre_start_and_offset_sizes(void)
{
	struct tfunc f[] = {
		{ .start = 0x1000, .size = 0x2000, .fre_type = 1, .nfres = 2, .fres = {
			{ .start = 0, .wsize = 2, .n = 1, .w = { 1000 } },
			{ .start = 0x1234, .wsize = 2, .n = 2, .w = { 1000, -300 } } } },
		{ .start = 0x10000, .size = 0x20000, .fre_type = 2, .nfres = 2, .fres = {
			{ .start = 0, .n = 1, .w = { 8 } },
			{ .start = 0x12345, .wsize = 4, .n = 2, .w = { 100000, -70000 } } } },
	};
	struct ustack_sframe_fre fre;
	struct ustack_sframe_fde fde;
	struct ustack_sframe sf;
	struct ustack_row r;
	struct sb s;

	for (int v = 1; v <= 3; v++) {
		size_t n = build(&s, v, 1 | (v > 1 ? 4 : 0), AMD64, 0, -8, f, 2, NULL);

		CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
		CHECK_EQ(ustack_sframe__validate(&sf, NULL), 0);
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x1000 + 0x1233, &r), 0);
		CHECK_EQ(r.cfa_off, 1000);
		CHECK_EQ(r.fp_rule, USTACK_RULE_SAME);
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x1000 + 0x1234, &r), 0);
		CHECK_EQ(r.fp_off, -300);
		CHECK_EQ_U64(r.end, 0x3000);
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x10000 + 0x12345, &r), 0);
		CHECK_EQ(r.cfa_off, 100000);
		CHECK_EQ(r.fp_off, -70000);
		CHECK_EQ_U64(r.start, 0x22345);
		CHECK_EQ_U64(r.end, 0x30000);
		CHECK_EQ(ustack_sframe__fde(&sf, 1, &fde), 0);
		CHECK_EQ(fde.fre_type, 2);
		CHECK_EQ(ustack_sframe__fde_row(&sf, &fde, 1, &fre), 0);
		CHECK_EQ(fre.word_size, 4);
		CHECK_EQ(fre.nr_words, 2);
		CHECK_EQ(fre.start_off, 0x12345);
		CHECK_EQ(ustack_sframe__fde_row(&sf, &fde, 2, &fre), -ERANGE);
		CHECK_EQ(ustack_sframe__fde(&sf, 2, &fde), -ERANGE);
	}
}

static void test_pcmask(void)
{
	struct tfunc f[] = {
		{ .start = 0x2000, .size = 0x30, .mask = 1, .rep = 16, .nfres = 2, .fres = {
			{ .start = 0, .n = 1, .w = { 8 } },
			{ .start = 11, .n = 1, .w = { 16 } } } },
	};
	struct ustack_sframe sf;
	struct ustack_row r;
	struct sb s;

	for (int v = 1; v <= 3; v++) {
		size_t n = build(&s, v, 1, AMD64, 0, -8, f, 1, NULL);

		CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
		CHECK_EQ(ustack_sframe__validate(&sf, NULL), 0);
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x2025, &r), 0);
		CHECK_EQ(r.cfa_off, 8);
		CHECK_EQ_U64(r.start, 0x2020);
		CHECK_EQ_U64(r.end, 0x202b);
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x201b, &r), 0);
		CHECK_EQ(r.cfa_off, 16);
		CHECK_EQ_U64(r.start, 0x201b);
		CHECK_EQ_U64(r.end, 0x2020);
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x202f, &r), 0);
		CHECK_EQ(r.cfa_off, 16);
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x2030, &r), -ENOENT);
	}
}

static void test_outermost(void)
{
	struct tfunc f[] = {
		{ .start = 0x1000, .size = 0x10, .nfres = 1, .fres = { { .start = 0, .n = 0 } } },
		{ .start = 0x1010, .size = 0x10, .nfres = 0 },
		{ .start = 0x1020, .size = 0x10, .signal = 1, .nfres = 1, .fres = { { .start = 0, .n = 1, .w = { 120 } } } },
	};
	struct ustack_sframe sf;
	struct ustack_row r;
	struct sb s;
	size_t n = build(&s, 3, 5, AMD64, 0, -8, f, 3, NULL);

	CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
	CHECK_EQ(ustack_sframe__validate(&sf, NULL), 0);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1005, &r), 0);
	CHECK_EQ(r.flags, USTACK_ROW_OUTERMOST);
	CHECK_EQ(r.ra_rule, USTACK_RULE_UNDEFINED);
	/* v3: an FDE without FREs is outermost too */
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x101f, &r), 0);
	CHECK_EQ(r.flags, USTACK_ROW_OUTERMOST);
	CHECK_EQ(r.ra_rule, USTACK_RULE_UNDEFINED);
	CHECK_EQ_U64(r.start, 0x1010);
	CHECK_EQ_U64(r.end, 0x1020);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1020, &r), 0);
	CHECK_EQ(r.flags, USTACK_ROW_SIGNAL);
	CHECK_EQ(r.cfa_off, 120);

	/* v2: no FREs means no information */
	n = build(&s, 2, 1, AMD64, 0, -8, f, 2, NULL);
	CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1015, &r), -ENOENT);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1000, &r), 0);
	CHECK_EQ(r.flags, USTACK_ROW_OUTERMOST);
}

/* Control word: regnum << 3 | deref << 1 | reg_p. */
#define CTRL(reg, deref, regp) (((reg) << 3) | ((deref) << 1) | (regp))

static void test_v3_flex(void)
{
	struct tfunc f[] = {
		{ .start = 0x1000, .size = 0x100, .flex = 1, .nfres = 6, .fres = {
			{ .start = 0, .n = 2, .w = { CTRL(7, 0, 1), 8 } },            /* rsp+8 */
			{ .start = 5, .n = 2, .w = { CTRL(10, 0, 1), 0 } },           /* r10+0 */
			{ .start = 0x10, .n = 5, .w = { CTRL(6, 0, 1), 16, 0, CTRL(6, 0, 0), -16 } },
			{ .start = 0x20, .n = 5, .w = { CTRL(6, 1, 1), -8, 0, CTRL(6, 1, 1), 0 } },
			{ .start = 0x30, .wsize = 2, .n = 6, .w = { CTRL(7, 0, 1), 24, CTRL(16, 0, 0), -8, CTRL(6, 0, 0), -24 } },
			{ .start = 0x40, .n = 5, .w = { CTRL(7, 0, 1), 16, 0, CTRL(6, 1, 1), 0 } } } },
	};
	struct ustack_sframe sf;
	struct ustack_row r;
	struct sb s;
	size_t n = build(&s, 3, 5, AMD64, 0, -8, f, 1, NULL);

	CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
	CHECK_EQ(ustack_sframe__validate(&sf, NULL), 0);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1000, &r), 0);
	CHECK_EQ(r.flags, 0);
	CHECK_EQ(r.cfa_reg, USTACK_CFA_SP);
	CHECK_EQ(r.cfa_off, 8);
	CHECK_EQ(r.ra_rule, USTACK_RULE_OFFSET);
	CHECK_EQ(r.ra_off, -8);
	CHECK_EQ(r.fp_rule, USTACK_RULE_SAME);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1005, &r), 0);
	CHECK_EQ(r.flags, USTACK_ROW_NEEDS_FALLBACK);
	/* rbp+16, RA padding (header's fixed CFA-8), FP at CFA-16 */
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1010, &r), 0);
	CHECK_EQ(r.flags, 0);
	CHECK_EQ(r.cfa_reg, USTACK_CFA_FP);
	CHECK_EQ(r.cfa_off, 16);
	CHECK_EQ(r.ra_off, -8);
	CHECK_EQ(r.fp_rule, USTACK_RULE_OFFSET);
	CHECK_EQ(r.fp_off, -16);
	/* CFA = *(rbp - 8): DRAP */
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1020, &r), 0);
	CHECK_EQ(r.flags, USTACK_ROW_NEEDS_FALLBACK);
	/* explicit RA and FP slots, 2-byte words */
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1030, &r), 0);
	CHECK_EQ(r.flags, 0);
	CHECK_EQ(r.cfa_off, 24);
	CHECK_EQ(r.ra_off, -8);
	CHECK_EQ(r.fp_off, -24);
	/* FP = *(rbp + 0): not a CFA slot */
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1040, &r), 0);
	CHECK_EQ(r.flags, USTACK_ROW_NEEDS_FALLBACK);
	CHECK_EQ(r.cfa_off, 16);
}

static void test_flex_errors(void)
{
	struct tfunc f[] = {
		{ .start = 0x1000, .size = 0x100, .flex = 1, .nfres = 1, .fres = {
			{ .start = 0, .n = 1, .w = { CTRL(7, 0, 1) } } } },
	};
	struct ustack_sframe_error e;
	struct ustack_sframe sf;
	struct ustack_row r;
	struct sb s;
	size_t n = build(&s, 3, 5, AMD64, 0, -8, f, 1, NULL);

	CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1000, &r), -EBADMSG);
	CHECK_EQ(ustack_sframe__validate(&sf, &e), -EBADMSG);
	CHECK_EQ(e.fde, 0);
	CHECK_EQ(e.fre, 0);
	CHECK_STR(e.reason, "flexible FRE without CFA rule");

	f[0].fres[0] = (struct tfre){ .start = 0, .n = 2, .w = { CTRL(7, 0, 0), 8 } };
	n = build(&s, 3, 5, AMD64, 0, -8, f, 1, NULL);
	CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
	CHECK_EQ(ustack_sframe__validate(&sf, &e), -EBADMSG);
	CHECK_STR(e.reason, "flexible FRE with CFA not based on a register");

	f[0].fres[0] = (struct tfre){ .start = 0, .n = 3, .w = { CTRL(7, 0, 1), 8, CTRL(16, 0, 0) } };
	n = build(&s, 3, 5, AMD64, 0, -8, f, 1, NULL);
	CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
	CHECK_EQ(ustack_sframe__validate(&sf, &e), -EBADMSG);
	CHECK_STR(e.reason, "flexible FRE with truncated rule");
}

static void test_aarch64_ra_in_fre(void)
{
	struct tfunc f[] = {
		{ .start = 0x1000, .size = 0x40, .nfres = 3, .fres = {
			{ .start = 0, .n = 1, .w = { 0 } },
			{ .start = 4, .n = 3, .w = { 16, -8, -16 } },
			{ .start = 8, .n = 3, .w = { 16, -8, -16 }, .raw_info = 1,
			  .info_byte = 0x80 | (3 << 1) | 1 } } },
	};
	struct ustack_sframe sf;
	struct ustack_row r;
	struct sb s;
	size_t n = build(&s, 2, 1, AARCH64, 0, 0, f, 1, NULL);

	CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
	CHECK_EQ(ustack_sframe__validate(&sf, NULL), 0);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1000, &r), 0);
	CHECK_EQ(r.ra_rule, USTACK_RULE_SAME); /* still in LR */
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1004, &r), 0);
	CHECK_EQ(r.ra_rule, USTACK_RULE_OFFSET);
	CHECK_EQ(r.ra_off, -8);
	CHECK_EQ(r.fp_off, -16);
	/* signed (mangled) RA */
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1008, &r), 0);
	CHECK_EQ(r.flags, USTACK_ROW_NEEDS_FALLBACK);
}

/* ---- error paths -------------------------------------------------------- */

static size_t good(struct sb *s, int version, struct layout *lay)
{
	return build(s, version, version > 1 ? 5 : 1, AMD64, 0, -8, basic, 2, lay);
}

static void test_header_errors(void)
{
	struct ustack_sframe_error e;
	struct ustack_sframe sf;
	struct sb s;
	size_t n;

	for (int v = 1; v <= 3; v++) {
		n = good(&s, v, NULL);
		s.b[0] = 0x34;
		CHECK_EQ(ustack_sframe__init_err(&sf, s.b, n, SEC_ADDR, &e), -EBADMSG);
		CHECK_STR(e.reason, "bad magic");
		CHECK_EQ(e.fde, -1);

		n = good(&s, v, NULL);
		put_at(s.b, 0xe2de, 2);
		CHECK_EQ(ustack_sframe__init_err(&sf, s.b, n, SEC_ADDR, &e), -ENOTSUP);

		n = good(&s, v, NULL);
		s.b[2] = 4;
		CHECK_EQ(ustack_sframe__init_err(&sf, s.b, n, SEC_ADDR, &e), -ENOTSUP);
		CHECK_STR(e.reason, "unsupported version");

		n = good(&s, v, NULL);
		s.b[4] = 4; /* s390x */
		CHECK_EQ(ustack_sframe__init_err(&sf, s.b, n, SEC_ADDR, &e), -ENOTSUP);
		CHECK_STR(e.reason, "unsupported ABI");

		n = good(&s, v, NULL);
		s.b[3] |= 0x80;
		CHECK_EQ(ustack_sframe__init_err(&sf, s.b, n, SEC_ADDR, &e), -ENOTSUP);

		n = good(&s, v, NULL);
		CHECK_EQ(ustack_sframe__init_err(&sf, s.b, 27, SEC_ADDR, &e), -EBADMSG);
		CHECK_STR(e.reason, "truncated header");
		CHECK_EQ(ustack_sframe__init_err(&sf, s.b, 3, SEC_ADDR, &e), -EBADMSG);
		CHECK_EQ(ustack_sframe__init_err(&sf, NULL, 0, SEC_ADDR, &e), -EBADMSG);

		n = good(&s, v, NULL);
		s.b[7] = 200; /* auxhdr_len */
		CHECK_EQ(ustack_sframe__init_err(&sf, s.b, n, SEC_ADDR, &e), -EBADMSG);
		CHECK_STR(e.reason, "auxiliary header beyond section");

		n = good(&s, v, NULL);
		put_at(s.b + 8, 0xffffffffu, 4); /* num_fdes: huge, no overflow */
		CHECK_EQ(ustack_sframe__init_err(&sf, s.b, n, SEC_ADDR, &e), -EBADMSG);
		CHECK_STR(e.reason, "FDE array beyond section");

		n = good(&s, v, NULL);
		put_at(s.b + 20, 0xfffffff0u, 4); /* fdeoff */
		CHECK_EQ(ustack_sframe__init_err(&sf, s.b, n, SEC_ADDR, &e), -EBADMSG);

		n = good(&s, v, NULL);
		put_at(s.b + 16, 0x7fffffffu, 4); /* fre_len */
		CHECK_EQ(ustack_sframe__init_err(&sf, s.b, n, SEC_ADDR, &e), -EBADMSG);
		CHECK_STR(e.reason, "FRE sub-section beyond section");

		n = good(&s, v, NULL);
		put_at(s.b + 12, 1000, 4); /* num_fres */
		CHECK_EQ(ustack_sframe__init_err(&sf, s.b, n, SEC_ADDR, &e), -EBADMSG);

		n = good(&s, v, NULL);
		put_at(s.b + 12, 4, 4); /* num_fres plausible but wrong */
		CHECK_EQ(ustack_sframe__init_err(&sf, s.b, n, SEC_ADDR, &e), 0);
		CHECK_EQ(ustack_sframe__validate(&sf, &e), -EBADMSG);
		CHECK_STR(e.reason, "FRE count in header does not match the FDEs");
	}
}

static void test_unsorted(void)
{
	struct tfunc f[5];
	struct ustack_sframe_error e;
	struct ustack_sframe sf;
	struct ustack_row r;
	struct sb s;
	size_t n;

	for (int i = 0; i < 5; i++)
		f[i] = (struct tfunc){ .start = 0x1000 + 0x100 * i, .size = 0x10, .nfres = 1,
				       .fres = { { .start = 0, .n = 1, .w = { 8 } } } };
	f[3].start = 0x1050; /* FDE 3 lower than FDE 2 */
	for (int v = 1; v <= 3; v++) {
		n = build(&s, v, 1, AMD64, 0, -8, f, 5, NULL);
		CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
		CHECK_EQ(ustack_sframe__validate(&sf, &e), -EBADMSG);
		CHECK_EQ(e.fde, 3);
		CHECK_EQ(e.fre, -1);
		CHECK_STR(e.reason, "not sorted");
		/* the search meets FDE 2 (0x1200), FDE 4 (0x1400), then FDE 3
		 * (0x1050) between them */
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x1300, &r), -EBADMSG);
		/* a path that never meets FDE 3 still works */
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x1400, &r), 0);
	}
}

static void test_fde_fre_errors(void)
{
	struct ustack_sframe_error e;
	struct ustack_sframe sf;
	struct ustack_row r;
	struct layout lay;
	char msg[160];
	struct sb s;
	size_t n;

	for (int v = 1; v <= 3; v++) {
		size_t fre_off_field = v == 3 ? 12 : 8;
		size_t info_at;

		/* FRE offset beyond the FRE sub-section */
		n = good(&s, v, &lay);
		put_at(s.b + lay.fde_at[1] + fre_off_field, 5000, 4);
		CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
		CHECK_EQ(ustack_sframe__validate(&sf, &e), -EBADMSG);
		CHECK_EQ(e.fde, 1);
		CHECK_EQ_U64(e.offset, lay.fde_at[1]);
		CHECK_STR(e.reason, "FRE offset beyond section");
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x1042, &r), -EBADMSG);
		ustack_sframe_error__format(&e, msg, sizeof(msg));
		snprintf((char *)s.b, 64, "FDE 1 at offset 0x%zx: FRE offset beyond section", lay.fde_at[1]);
		CHECK_STR(msg, (char *)s.b);

		/* unknown FRE type */
		n = good(&s, v, &lay);
		info_at = v == 3 ? lay.fre_at[1] - 3 : lay.fde_at[1] + 16;
		s.b[info_at] = 3;
		CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
		CHECK_EQ(ustack_sframe__validate(&sf, &e), -EBADMSG);
		CHECK_EQ(e.fde, 1);
		CHECK_STR(e.reason, "unknown FRE type");
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x1042, &r), -EBADMSG);

		/* FRE start beyond the function size (FDE 0 FRE 2) */
		n = good(&s, v, &lay);
		s.b[lay.fre_at[0] + 3 + 4] = 0x40;
		CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
		CHECK_EQ(ustack_sframe__validate(&sf, &e), -EBADMSG);
		CHECK_EQ(e.fde, 0);
		CHECK_EQ(e.fre, 2);
		CHECK_EQ_U64(e.offset, lay.fre_at[0] + 7);
		CHECK_STR(e.reason, "FRE start beyond function size");
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x101f, &r), -EBADMSG);
		ustack_sframe_error__format(&e, msg, sizeof(msg));
		snprintf((char *)s.b, 80, "FDE 0 FRE 2 at offset 0x%zx: FRE start beyond function size",
			 lay.fre_at[0] + 7);
		CHECK_STR(msg, (char *)s.b);

		/* FRE starts not increasing (FDE 0 FRE 1 starts at 0) */
		n = good(&s, v, &lay);
		s.b[lay.fre_at[0] + 3] = 0;
		CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
		CHECK_EQ(ustack_sframe__validate(&sf, &e), -EBADMSG);
		CHECK_EQ(e.fde, 0);
		CHECK_EQ(e.fre, 1);
		CHECK_STR(e.reason, "FRE start not increasing");

		/* offset size 3 is undefined */
		n = good(&s, v, &lay);
		s.b[lay.fre_at[1] + 1] |= 3 << 5;
		CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
		CHECK_EQ(ustack_sframe__validate(&sf, &e), -EBADMSG);
		CHECK_EQ(e.fde, 1);
		CHECK_EQ(e.fre, 0);
		CHECK_STR(e.reason, "bad offset size");

		/* too many offsets for AMD64 (CFA, FP, and one more) */
		n = good(&s, v, &lay);
		s.b[lay.fre_at[1] + 1] = (3 << 1) | 1;
		CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
		CHECK_EQ(ustack_sframe__validate(&sf, &e), -EBADMSG);
		CHECK_EQ(e.fde, 1);
		CHECK_EQ(e.fre, 0);
		CHECK_STR(e.reason, "too many offsets in FRE");

		/* last FRE runs past the end of the section */
		n = good(&s, v, &lay);
		CHECK_EQ(ustack_sframe__init(&sf, s.b, n - 1, SEC_ADDR), -EBADMSG);
		put_at(s.b + 16, (uint32_t)(n - 1 - lay.fre_base) + (v == 3 ? 0 : 0), 4);
		CHECK_EQ(ustack_sframe__init(&sf, s.b, n - 1, SEC_ADDR), 0);
		CHECK_EQ(ustack_sframe__validate(&sf, &e), -EBADMSG);
		CHECK_EQ(e.fde, 1);
		CHECK_EQ(e.fre, 1);
		CHECK_STR(e.reason, "offset beyond section");
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x104a, &r), -EBADMSG);
		/* the row before it needs the broken FRE's start: corrupt too */
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x1043, &r), -EBADMSG);
		/* other functions still resolve */
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x1003, &r), 0);
	}
}

static void test_pcmask_zero_rep(void)
{
	struct tfunc f[] = {
		{ .start = 0x2000, .size = 0x30, .mask = 1, .rep = 0, .nfres = 1, .fres = {
			{ .start = 0, .n = 1, .w = { 8 } } } },
	};
	struct ustack_sframe_error e;
	struct ustack_sframe sf;
	struct ustack_row r;
	struct sb s;

	for (int v = 2; v <= 3; v++) {
		size_t n = build(&s, v, 1, AMD64, 0, -8, f, 1, NULL);

		CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
		CHECK_EQ(ustack_sframe__find_row(&sf, 0x2000, &r), -EBADMSG);
		CHECK_EQ(ustack_sframe__validate(&sf, &e), -EBADMSG);
		CHECK_EQ(e.fde, 0);
		CHECK_STR(e.reason, "PCMASK function with zero repetition size");
	}
}

static void test_empty_section(void)
{
	struct ustack_sframe sf;
	struct ustack_row r;
	struct sb s;
	size_t n = build(&s, 2, 1, AMD64, 0, -8, NULL, 0, NULL);

	CHECK_EQ(ustack_sframe__init(&sf, s.b, n, SEC_ADDR), 0);
	CHECK_EQ(ustack_sframe__validate(&sf, NULL), 0);
	CHECK_EQ(ustack_sframe__find_row(&sf, 0x1000, &r), -ENOENT);
}

int main(void)
{
	RUN(test_v1_basic);
	RUN(test_v2_section_relative);
	RUN(test_v2_pcrel);
	RUN(test_v3_pcrel);
	RUN(test_v3_section_relative);
	RUN(test_v2_unsorted_flag_linear);
	RUN(test_sec_addr_shift);
	RUN(test_fre_start_and_offset_sizes);
	RUN(test_pcmask);
	RUN(test_outermost);
	RUN(test_v3_flex);
	RUN(test_flex_errors);
	RUN(test_aarch64_ra_in_fre);
	RUN(test_header_errors);
	RUN(test_unsorted);
	RUN(test_fde_fre_errors);
	RUN(test_pcmask_zero_rep);
	RUN(test_empty_section);
	TEST_EXIT();
}
