// SPDX-License-Identifier: MIT
/*
 * SFrame decoder, written from the published SFrame specification
 * (versions 1, 2 and 3). Layout summary (little-endian, packed):
 *
 *   header (28 bytes)  magic u16, version u8, flags u8, abi u8,
 *                      fixed_fp s8, fixed_ra s8, auxhdr_len u8,
 *                      num_fdes u32, num_fres u32, fre_len u32,
 *                      fdeoff u32, freoff u32 (both from the end of the
 *                      header including the auxiliary header)
 *   v1 FDE (17 bytes)  start s32, size u32, fre_off u32, num_fres u32, info u8
 *   v2 FDE (20 bytes)  v1 + rep_size u8 + padding u16
 *   v3 FDE index (16)  start s64, size u32, fre_off u32; the attributes
 *                      (num_fres u16, info u8, info2 u8, rep_size u8) sit at
 *                      fre_off in the FRE sub-section, right before the FREs
 *   FRE                start offset (1, 2 or 4 bytes by the FDE's FRE type),
 *                      info u8, then N data words of S bytes (from info)
 *
 * Everything here is async-signal-safe: no allocation, no locks, no logging.
 */
#include <errno.h>

#include "common/compiler.h"
#include "sframe/sframe.h"

/* DWARF register numbers of the stack and frame pointers, for flexible FDEs. */
#define DW_AMD64_RBP 6
#define DW_AMD64_RSP 7
#define DW_AARCH64_FP 29
#define DW_AARCH64_SP 31

/* v1 has no repetition size; PCMASK was only ever used for PLT stubs, whose
 * entries are 16 bytes on both AMD64 and AArch64. */
#define SFRAME_V1_PLT_ENTRY_SIZE 16

static void set_err(struct ustack_sframe_error *err, int e, int64_t fde, int64_t fre,
		    uint64_t offset, const char *reason)
{
	if (!err)
		return;
	err->err = e;
	err->fde = fde;
	err->fre = fre;
	err->offset = offset;
	err->reason = reason;
}

int ustack_sframe__init_err(struct ustack_sframe *sf, const void *data, size_t size,
			    uint64_t sec_addr, struct ustack_sframe_error *err)
{
	const uint8_t *p = data;
	uint64_t hdr_len;
	uint16_t magic;

	memset(sf, 0, sizeof(*sf));
	set_err(err, 0, -1, -1, UINT64_MAX, NULL);
	if (!p || size < 4) {
		set_err(err, -EBADMSG, -1, -1, 0, "truncated header");
		return -EBADMSG;
	}
	magic = ld_u16(p);
	if (magic == 0xe2de) {
		/* A valid section of the other byte order: not for this host. */
		set_err(err, -ENOTSUP, -1, -1, 0, "foreign byte order");
		return -ENOTSUP;
	}
	if (magic != USTACK_SFRAME_MAGIC) {
		set_err(err, -EBADMSG, -1, -1, 0, "bad magic");
		return -EBADMSG;
	}
	sf->version = p[2];
	sf->flags = p[3];
	if (sf->version < 1 || sf->version > 3) {
		set_err(err, -ENOTSUP, -1, -1, 2, "unsupported version");
		return -ENOTSUP;
	}
	if (size < USTACK_SFRAME_HDR_SIZE) {
		set_err(err, -EBADMSG, -1, -1, 0, "truncated header");
		return -EBADMSG;
	}
	/* An unknown flag may change how the rest is read: refuse it. */
	if (sf->flags & ~(USTACK_SFRAME_F_FDE_SORTED | USTACK_SFRAME_F_FRAME_POINTER |
			  USTACK_SFRAME_F_FDE_FUNC_START_PCREL)) {
		set_err(err, -ENOTSUP, -1, -1, 3, "unknown flags");
		return -ENOTSUP;
	}
	sf->abi = p[4];
	if (sf->abi != USTACK_SFRAME_ABI_AMD64_LE && sf->abi != USTACK_SFRAME_ABI_AARCH64_LE) {
		set_err(err, -ENOTSUP, -1, -1, 4, "unsupported ABI");
		return -ENOTSUP;
	}
	sf->fixed_fp = ld_s8(p + 5);
	sf->fixed_ra = ld_s8(p + 6);
	sf->auxhdr_len = p[7];
	sf->nr_fdes = ld_u32(p + 8);
	sf->nr_fres = ld_u32(p + 12);
	sf->fre_len = ld_u32(p + 16);
	sf->fde_size = sf->version == 1 ? 17 : sf->version == 2 ? 20 : 16;

	hdr_len = USTACK_SFRAME_HDR_SIZE + (uint64_t)sf->auxhdr_len;
	if (hdr_len > size) {
		set_err(err, -EBADMSG, -1, -1, 7, "auxiliary header beyond section");
		return -EBADMSG;
	}
	sf->fde_base = hdr_len + ld_u32(p + 20);
	sf->fre_base = hdr_len + ld_u32(p + 24);
	/* Count checked against the room left before multiplying. */
	if (sf->fde_base > size || sf->nr_fdes > (size - sf->fde_base) / sf->fde_size) {
		set_err(err, -EBADMSG, -1, -1, 20, "FDE array beyond section");
		return -EBADMSG;
	}
	if (!in_bounds(sf->fre_base, sf->fre_len, size)) {
		set_err(err, -EBADMSG, -1, -1, 24, "FRE sub-section beyond section");
		return -EBADMSG;
	}
	/* Each FRE takes at least 2 bytes: a cheap sanity bound on the count. */
	if (sf->nr_fres > sf->fre_len / 2) {
		set_err(err, -EBADMSG, -1, -1, 12, "FRE count larger than FRE sub-section");
		return -EBADMSG;
	}
	sf->data = p;
	sf->size = size;
	sf->sec_addr = sec_addr;
	return 0;
}

int ustack_sframe__init(struct ustack_sframe *sf, const void *data, size_t size,
			uint64_t sec_addr)
{
	return ustack_sframe__init_err(sf, data, size, sec_addr, NULL);
}

/* Start address of FDE @i; the caller has checked i < nr_fdes (init proved
 * the whole array lies inside the section). */
static inline uint64_t fde_start(const struct ustack_sframe *sf, uint32_t i)
{
	uint64_t off = sf->fde_base + (uint64_t)i * sf->fde_size;
	int64_t rel = sf->version == 3 ? ld_s64(sf->data + off) : ld_s32(sf->data + off);
	uint64_t base = sf->sec_addr;

	/* PCREL: relative to the start field itself, which opens the FDE. */
	if (sf->flags & USTACK_SFRAME_F_FDE_FUNC_START_PCREL)
		base += off;
	return base + (uint64_t)rel;
}

static int fde_decode(const struct ustack_sframe *sf, uint32_t i, struct ustack_sframe_fde *fde,
		      struct ustack_sframe_error *err)
{
	uint64_t off, fre_off;
	const uint8_t *p;

	if (i >= sf->nr_fdes) {
		set_err(err, -ERANGE, i, -1, UINT64_MAX, "no such FDE");
		return -ERANGE;
	}
	off = sf->fde_base + (uint64_t)i * sf->fde_size;
	p = sf->data + off;
	memset(fde, 0, sizeof(*fde));
	fde->offset = off;
	fde->start = fde_start(sf, i);
	fde->size = ld_u32(p + (sf->version == 3 ? 8 : 4));
	fre_off = ld_u32(p + (sf->version == 3 ? 12 : 8));
	if (sf->version == 3) {
		const uint8_t *a;

		if (!in_bounds(fre_off, 5, sf->fre_len)) {
			set_err(err, -EBADMSG, i, -1, off, "FRE offset beyond section");
			return -EBADMSG;
		}
		a = sf->data + sf->fre_base + fre_off;
		fde->nr_fres = ld_u16(a);
		fde->info = a[2];
		fde->info2 = a[3];
		fde->rep_size = a[4];
		fde->fres = sf->fre_base + fre_off + 5;
		fde->fde_type = fde->info2 & 0x1f;
		fde->signal = fde->info >> 7;
	} else {
		if (fre_off > sf->fre_len) {
			set_err(err, -EBADMSG, i, -1, off, "FRE offset beyond section");
			return -EBADMSG;
		}
		fde->nr_fres = ld_u32(p + 12);
		fde->info = p[16];
		fde->rep_size = sf->version == 2 ? p[17] : SFRAME_V1_PLT_ENTRY_SIZE;
		fde->fres = sf->fre_base + fre_off;
		fde->fde_type = USTACK_SFRAME_FDE_DEFAULT;
	}
	fde->fre_type = fde->info & 0xf;
	fde->pc_type = (fde->info >> 4) & 1;
	if (fde->fre_type > 2) {
		set_err(err, -EBADMSG, i, -1, off, "unknown FRE type");
		return -EBADMSG;
	}
	if (fde->fde_type > USTACK_SFRAME_FDE_FLEX) {
		set_err(err, -EBADMSG, i, -1, off, "unknown FDE type");
		return -EBADMSG;
	}
	if (fde->pc_type == USTACK_SFRAME_PC_MASK && !fde->rep_size) {
		set_err(err, -EBADMSG, i, -1, off, "PCMASK function with zero repetition size");
		return -EBADMSG;
	}
	/* Each FRE needs at least 2 bytes: bounds the walk before it starts. */
	if (fde->nr_fres > (sf->fre_base + sf->fre_len - fde->fres) / 2) {
		set_err(err, -EBADMSG, i, -1, off, "FRE count beyond section");
		return -EBADMSG;
	}
	if (fde->start + fde->size < fde->start) {
		set_err(err, -EBADMSG, i, -1, off, "function wraps around the address space");
		return -EBADMSG;
	}
	return 0;
}

int ustack_sframe__fde(const struct ustack_sframe *sf, uint32_t i, struct ustack_sframe_fde *fde)
{
	return fde_decode(sf, i, fde, NULL);
}

static inline int dw_sp(const struct ustack_sframe *sf)
{
	return sf->abi == USTACK_SFRAME_ABI_AMD64_LE ? DW_AMD64_RSP : DW_AARCH64_SP;
}

static inline int dw_fp(const struct ustack_sframe *sf)
{
	return sf->abi == USTACK_SFRAME_ABI_AMD64_LE ? DW_AMD64_RBP : DW_AARCH64_FP;
}

static inline uint32_t word_u(const struct ustack_sframe_fre *fre, unsigned int i)
{
	uint32_t v = (uint32_t)fre->words[i];

	return fre->word_size == 4 ? v : v & ((1u << (8 * fre->word_size)) - 1);
}

/* The rule for RA or FP when the FRE does not carry it. */
static void fixed_rule(int8_t fixed, uint8_t *rule, int32_t *off)
{
	if (fixed) {
		*rule = USTACK_RULE_OFFSET;
		*off = fixed;
	} else {
		*rule = USTACK_RULE_SAME;
		*off = 0;
	}
}

/*
 * Flexible FDE (v3): pairs of (control word, offset) for CFA, RA, FP, where
 * a single zero word stands for "not tracked here". Control word: bit 0
 * reg_p (base is a register, else the CFA), bit 1 deref_p, bits 3.. DWARF
 * register number. Only the rules struct ustack_row can hold are mapped;
 * anything else marks the row NEEDS_FALLBACK.
 */
static const char *flex_row(const struct ustack_sframe *sf, const struct ustack_sframe_fre *fre,
			    struct ustack_row *row)
{
	unsigned int n = fre->nr_words, i = 2;
	uint32_t ctrl;

	if (n < 2)
		return "flexible FRE without CFA rule";
	ctrl = word_u(fre, 0);
	if (!(ctrl & 1))
		return "flexible FRE with CFA not based on a register";
	row->cfa_off = fre->words[1];
	if ((ctrl >> 3) == (uint32_t)dw_sp(sf))
		row->cfa_reg = USTACK_CFA_SP;
	else if ((ctrl >> 3) == (uint32_t)dw_fp(sf))
		row->cfa_reg = USTACK_CFA_FP;
	else
		row->flags |= USTACK_ROW_NEEDS_FALLBACK;
	if (ctrl & 2) /* CFA = *(reg + off): beyond the row form */
		row->flags |= USTACK_ROW_NEEDS_FALLBACK;

	for (int what = 0; what < 2; what++) {
		uint8_t *rule = what ? &row->fp_rule : &row->ra_rule;
		int32_t *off = what ? &row->fp_off : &row->ra_off;

		if (i >= n || word_u(fre, i) == 0) {
			fixed_rule(what ? sf->fixed_fp : sf->fixed_ra, rule, off);
			i += i < n;
			continue;
		}
		if (i + 1 >= n)
			return "flexible FRE with truncated rule";
		ctrl = word_u(fre, i);
		if ((ctrl & 3) == 0) {
			*rule = USTACK_RULE_OFFSET;
			*off = fre->words[i + 1];
		} else {
			/* In a register, or behind one: the unwinder must use
			 * another method. */
			fixed_rule(what ? sf->fixed_fp : sf->fixed_ra, rule, off);
			row->flags |= USTACK_ROW_NEEDS_FALLBACK;
		}
		i += 2;
	}
	if (i != n)
		return "flexible FRE with extra data words";
	return NULL;
}

/* Default FDE: CFA offset, then RA (unless fixed), then FP (unless fixed). */
static const char *default_row(const struct ustack_sframe *sf, const struct ustack_sframe_fre *fre,
			       struct ustack_row *row)
{
	unsigned int n = fre->nr_words, i = 1;

	row->cfa_reg = (fre->info & 1) ? USTACK_CFA_SP : USTACK_CFA_FP;
	row->cfa_off = fre->words[0];
	if (sf->fixed_ra) {
		fixed_rule(sf->fixed_ra, &row->ra_rule, &row->ra_off);
	} else if (i < n) {
		row->ra_rule = USTACK_RULE_OFFSET;
		row->ra_off = fre->words[i++];
	} else {
		row->ra_rule = USTACK_RULE_SAME; /* still in the link register */
	}
	if (sf->fixed_fp) {
		fixed_rule(sf->fixed_fp, &row->fp_rule, &row->fp_off);
	} else if (i < n) {
		row->fp_rule = USTACK_RULE_OFFSET;
		row->fp_off = fre->words[i++];
	} else {
		row->fp_rule = USTACK_RULE_SAME;
	}
	if (i != n)
		return "too many offsets in FRE";
	/* AArch64 pointer authentication: the saved RA is signed. */
	if (fre->info & 0x80)
		row->flags |= USTACK_ROW_NEEDS_FALLBACK;
	return NULL;
}

static int fre_decode(const struct ustack_sframe *sf, const struct ustack_sframe_fde *fde,
		      uint64_t *pos, struct ustack_sframe_fre *fre, const char **why)
{
	uint64_t end = sf->fre_base + sf->fre_len, p = *pos;
	unsigned int asz = 1u << fde->fre_type, wsz_code;
	const uint8_t *b;
	const char *bad;

	*why = NULL;
	memset(fre, 0, sizeof(*fre));
	fre->offset = p;
	if (p < sf->fre_base || p > end || end - p < asz + 1) {
		*why = "offset beyond section";
		return -EBADMSG;
	}
	b = sf->data + p;
	fre->start_off = asz == 1 ? b[0] : asz == 2 ? ld_u16(b) : ld_u32(b);
	fre->info = b[asz];
	fre->nr_words = (fre->info >> 1) & 0xf;
	wsz_code = (fre->info >> 5) & 3;
	if (wsz_code == 3) {
		*why = "bad offset size";
		return -EBADMSG;
	}
	fre->word_size = 1u << wsz_code;
	p += asz + 1;
	if (end - p < (uint64_t)fre->nr_words * fre->word_size) {
		*why = "offset beyond section";
		return -EBADMSG;
	}
	b = sf->data + p;
	for (unsigned int k = 0; k < fre->nr_words; k++, b += fre->word_size)
		fre->words[k] = fre->word_size == 1 ? ld_s8(b) :
				fre->word_size == 2 ? ld_s16(b) : ld_s32(b);
	p += (uint64_t)fre->nr_words * fre->word_size;
	fre->len = (uint32_t)(p - *pos);
	*pos = p;

	/* Row with start/end relative to the function (or block) start. */
	fre->row.start = fre->start_off;
	fre->row.end = fde->pc_type == USTACK_SFRAME_PC_MASK ? fde->rep_size : fde->size;
	if (fde->signal)
		fre->row.flags |= USTACK_ROW_SIGNAL;
	if (!fre->nr_words) {
		/* No offsets: the outermost frame (no caller to return to). */
		fre->row.cfa_reg = USTACK_CFA_SP;
		fre->row.ra_rule = USTACK_RULE_UNDEFINED;
		fre->row.fp_rule = USTACK_RULE_SAME;
		fre->row.flags |= USTACK_ROW_OUTERMOST;
		return 0;
	}
	bad = fde->fde_type == USTACK_SFRAME_FDE_FLEX ? flex_row(sf, fre, &fre->row)
						      : default_row(sf, fre, &fre->row);
	if (bad) {
		*why = bad;
		return -EBADMSG;
	}
	return 0;
}

int ustack_sframe__fre_next(const struct ustack_sframe *sf, const struct ustack_sframe_fde *fde,
			    uint64_t *pos, struct ustack_sframe_fre *fre)
{
	const char *why;

	return fre_decode(sf, fde, pos, fre, &why);
}

/* Walk the FREs of @fde checking their order; stop at @stop_j or at the
 * first FRE that starts after @stop_off. Shared by lookup, row access and
 * validation so that all three apply the same checks. */
struct fre_walk {
	uint32_t j;                   /* index of the FRE in *cur */
	struct ustack_sframe_fre cur; /* last FRE with start_off <= stop_off */
	uint32_t next_start;          /* start of the FRE after it, or limit */
	int have;
};

static int walk_fres(const struct ustack_sframe *sf, const struct ustack_sframe_fde *fde,
		     uint32_t stop_j, uint64_t stop_off, struct fre_walk *w,
		     struct ustack_sframe_error *err, int64_t fde_idx)
{
	uint32_t limit = fde->pc_type == USTACK_SFRAME_PC_MASK ? fde->rep_size : fde->size;
	uint64_t pos = fde->fres;
	struct ustack_sframe_fre fre;
	const char *why;
	int64_t prev = -1;
	int ret;

	w->have = 0;
	w->next_start = limit;
	for (uint32_t j = 0; j < fde->nr_fres; j++) {
		ret = fre_decode(sf, fde, &pos, &fre, &why);
		if (ret) {
			set_err(err, ret, fde_idx, j, fre.offset, why);
			return ret;
		}
		if ((int64_t)fre.start_off <= prev) {
			set_err(err, -EBADMSG, fde_idx, j, fre.offset, "FRE start not increasing");
			return -EBADMSG;
		}
		if (fre.start_off >= limit) {
			set_err(err, -EBADMSG, fde_idx, j, fre.offset,
				fde->pc_type == USTACK_SFRAME_PC_MASK ?
				"FRE start beyond repetition block" : "FRE start beyond function size");
			return -EBADMSG;
		}
		prev = fre.start_off;
		if (fre.start_off > stop_off || (w->have && w->j == stop_j)) {
			w->next_start = fre.start_off;
			break;
		}
		w->cur = fre;
		w->j = j;
		w->have = 1;
	}
	if (w->have)
		w->cur.row.end = w->next_start;
	return 0;
}

int ustack_sframe__fde_row(const struct ustack_sframe *sf, const struct ustack_sframe_fde *fde,
			   uint32_t j, struct ustack_sframe_fre *fre)
{
	struct fre_walk w;
	int ret;

	if (j >= fde->nr_fres)
		return -ERANGE;
	ret = walk_fres(sf, fde, j, UINT64_MAX, &w, NULL, -1);
	if (ret)
		return ret;
	if (!w.have || w.j != j)
		return -EBADMSG;
	*fre = w.cur;
	return 0;
}

/* Binary search for the last FDE starting at or before @addr, checking that
 * each probe lies between the bounds proven so far (so an unsorted table is
 * caught on the path instead of silently giving a wrong answer). */
/*
 * Lookup's fast walk: step over the FREs of @fde reading only each start
 * offset and info byte (with the same order, bounds and size checks as
 * walk_fres()), and decode only the FRE that covers @stop_off.
 */
static int scan_fres(const struct ustack_sframe *sf, const struct ustack_sframe_fde *fde,
		     uint64_t stop_off, struct fre_walk *w)
{
	uint32_t limit = fde->pc_type == USTACK_SFRAME_PC_MASK ? fde->rep_size : fde->size;
	uint64_t end = sf->fre_base + sf->fre_len, pos = fde->fres, hit = 0;
	unsigned int asz = 1u << fde->fre_type;
	int64_t prev = -1;
	const char *why;
	int have = 0;

	w->have = 0;
	w->next_start = limit;
	if (pos < sf->fre_base)
		return -EBADMSG;
	for (uint32_t j = 0; j < fde->nr_fres; j++) {
		const uint8_t *b;
		uint32_t start;
		unsigned int info, wsz_code;
		uint64_t len;

		if (pos > end || end - pos < asz + 1)
			return -EBADMSG;
		b = sf->data + pos;
		start = asz == 1 ? b[0] : asz == 2 ? ld_u16(b) : ld_u32(b);
		info = b[asz];
		wsz_code = (info >> 5) & 3;
		if (wsz_code == 3 || (int64_t)start <= prev || start >= limit)
			return -EBADMSG;
		len = asz + 1 + (uint64_t)((info >> 1) & 0xf) * (1u << wsz_code);
		/* the whole FRE must fit, also the one whose start ends our row */
		if (end - pos < len)
			return -EBADMSG;
		prev = start;
		if (start > stop_off) {
			w->next_start = start;
			break;
		}
		hit = pos;
		have = 1;
		w->j = j;
		pos += len;
	}
	if (!have)
		return 0;
	if (fre_decode(sf, fde, &hit, &w->cur, &why))
		return -EBADMSG;
	w->have = 1;
	w->cur.row.end = w->next_start;
	return 0;
}

static int find_fde(const struct ustack_sframe *sf, uint64_t addr, uint32_t *idx)
{
	uint64_t lo_start = 0, hi_start = UINT64_MAX;
	uint32_t lo = 0, hi = sf->nr_fdes;
	int found = 0;

	if (!(sf->flags & USTACK_SFRAME_F_FDE_SORTED)) {
		/* No order promised: a linear scan (rare; linkers sort). */
		for (uint32_t i = 0; i < sf->nr_fdes; i++) {
			uint64_t s = fde_start(sf, i);
			uint32_t size = ld_u32(sf->data + sf->fde_base + (uint64_t)i * sf->fde_size +
					       (sf->version == 3 ? 8 : 4));

			if (addr >= s && addr - s < size) {
				*idx = i;
				return 0;
			}
		}
		return -ENOENT;
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t s = fde_start(sf, mid);

		if (s < lo_start || s > hi_start)
			return -EBADMSG;
		if (s <= addr) {
			lo_start = s;
			*idx = mid;
			found = 1;
			lo = mid + 1;
		} else {
			hi_start = s;
			hi = mid;
		}
	}
	return found ? 0 : -ENOENT;
}

int ustack_sframe__find_row(const struct ustack_sframe *sf, uint64_t addr, struct ustack_row *row)
{
	struct ustack_sframe_fde fde;
	struct fre_walk w;
	uint64_t rel, base, fend;
	uint32_t i;
	int ret;

	if (!sf->data || !sf->nr_fdes)
		return -ENOENT;
	ret = find_fde(sf, addr, &i);
	if (ret)
		return ret;
	ret = fde_decode(sf, i, &fde, NULL);
	if (ret)
		return ret;
	rel = addr - fde.start;
	if (rel >= fde.size)
		return -ENOENT;
	fend = fde.start + fde.size;
	if (!fde.nr_fres) {
		/* v3: a function without rows is an outermost frame. */
		if (sf->version < 3)
			return -ENOENT;
		memset(row, 0, sizeof(*row));
		row->start = fde.start;
		row->end = fend;
		row->ra_rule = USTACK_RULE_UNDEFINED;
		row->flags = USTACK_ROW_OUTERMOST | (fde.signal ? USTACK_ROW_SIGNAL : 0);
		return 0;
	}
	base = fde.start;
	if (fde.pc_type == USTACK_SFRAME_PC_MASK) {
		uint64_t in_block = rel % fde.rep_size;

		base = addr - in_block;
		rel = in_block;
	}
	ret = scan_fres(sf, &fde, rel, &w);
	if (ret)
		return ret;
	if (!w.have)
		return -ENOENT;
	*row = w.cur.row;
	row->start = base + w.cur.row.start;
	row->end = base + w.cur.row.end;
	if (row->end > fend)
		row->end = fend;
	return 0;
}

int ustack_sframe__validate(const struct ustack_sframe *sf, struct ustack_sframe_error *err)
{
	struct ustack_sframe_fde fde;
	uint64_t total = 0, prev_start = 0;
	struct fre_walk w;
	int ret;

	set_err(err, 0, -1, -1, UINT64_MAX, NULL);
	if (!sf->data) {
		set_err(err, -EINVAL, -1, -1, UINT64_MAX, "not initialized");
		return -EINVAL;
	}
	for (uint32_t i = 0; i < sf->nr_fdes; i++) {
		ret = fde_decode(sf, i, &fde, err);
		if (ret)
			return ret;
		if ((sf->flags & USTACK_SFRAME_F_FDE_SORTED) && i && fde.start < prev_start) {
			set_err(err, -EBADMSG, i, -1, fde.offset, "not sorted");
			return -EBADMSG;
		}
		prev_start = fde.start;
		ret = walk_fres(sf, &fde, UINT32_MAX, UINT64_MAX, &w, err, i);
		if (ret)
			return ret;
		total += fde.nr_fres;
	}
	if (total != sf->nr_fres) {
		set_err(err, -EBADMSG, -1, -1, 12, "FRE count in header does not match the FDEs");
		return -EBADMSG;
	}
	return 0;
}
