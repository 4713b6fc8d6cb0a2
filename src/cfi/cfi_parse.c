// SPDX-License-Identifier: MIT
/*
 * CIE/FDE parsing, .eh_frame_hdr search and the FDE lookup behind
 * ustack_cfi__find_row(). Written from DWARF 4/5 section 6.4 and the LSB
 * .eh_frame / .eh_frame_hdr description. Async-signal-safe: no
 * allocation, no logging; every loop is bounded by the section size.
 */
#include <errno.h>
#include <string.h>

#include "cfi/cfi.h"
#include "cfi/cfi_read.h"

const char *ustack_cfi__section_name(const struct ustack_cfi *cfi)
{
	return cfi->is_debug_frame ? ".debug_frame" : ".eh_frame";
}

/*
 * Entry header at @off: length (32-bit, or 0xffffffff + 64-bit) and the
 * CIE id / CIE pointer. Returns 1 for a real entry, -ENOENT at the end.
 */
static int entry_header(const struct ustack_cfi *cfi, uint64_t off, uint64_t *body,
			uint64_t *end, unsigned int *osz, uint64_t *id)
{
	uint64_t len;
	uint32_t len32;

	if (off >= cfi->sec_size || cfi->sec_size - off < 4)
		return -ENOENT;
	len32 = ld_u32(cfi->sec + off);
	if (len32 == 0)
		return 0;
	if (len32 == 0xffffffffu) {
		if (!in_bounds(off + 4, 8, cfi->sec_size))
			return -EBADMSG;
		len = ld_u64(cfi->sec + off + 4);
		*body = off + 12;
		*osz = 8;
	} else if (len32 >= 0xfffffff0u) {
		return -EBADMSG; /* reserved length values */
	} else {
		len = len32;
		*body = off + 4;
		*osz = 4;
	}
	if (!in_bounds(*body, len, cfi->sec_size) || len < *osz)
		return -EBADMSG;
	*end = *body + len;
	*id = *osz == 8 ? ld_u64(cfi->sec + *body) : ld_u32(cfi->sec + *body);
	return 1;
}

static int is_cie_id(const struct ustack_cfi *cfi, uint64_t id, unsigned int osz)
{
	if (!cfi->is_debug_frame)
		return id == 0;
	return osz == 8 ? id == ~(uint64_t)0 : id == 0xffffffffu;
}

static int parse_cie(const struct ustack_cfi *cfi, uint64_t off, struct ustack_cfi_cie *cie)
{
	struct cfi_cur c;
	uint64_t body, end, id, aug_len = 0;
	const char *aug;
	const uint8_t *aug_data_end = NULL;
	unsigned int osz;
	uint8_t version, u8;
	int err;

	err = entry_header(cfi, off, &body, &end, &osz, &id);
	if (err <= 0 || !is_cie_id(cfi, id, osz))
		return -EBADMSG; /* the CIE pointer does not lead to a CIE */
	memset(cie, 0, sizeof(*cie));
	cie->off = off;
	cie->addr_size = 8;
	c.p = cfi->sec + body + osz;
	c.end = cfi->sec + end;
	if (cur_u8(&c, &version) || (version != 1 && version != 3 && version != 4))
		return -EBADMSG;
	aug = (const char *)c.p;
	{
		const uint8_t *nul = memchr(c.p, 0, cur_left(&c));

		if (!nul)
			return -EBADMSG;
		c.p = nul + 1;
	}
	if (!strcmp(aug, "eh"))
		return -EBADMSG; /* pre-1999 GCC layout with an inline pointer */
	if (version == 4) {
		uint8_t seg;

		if (cur_u8(&c, &cie->addr_size) || cur_u8(&c, &seg) || seg != 0 ||
		    (cie->addr_size != 4 && cie->addr_size != 8))
			return -EBADMSG;
	}
	if (cur_uleb(&c, &cie->code_align) || cur_sleb(&c, &cie->data_align))
		return -EBADMSG;
	if (version == 1) {
		if (cur_u8(&c, &u8))
			return -EBADMSG;
		cie->ra_reg = u8;
	} else if (cur_uleb(&c, &cie->ra_reg)) {
		return -EBADMSG;
	}
	/* The row tracks rbp (6) and rsp (7) separately from the RA column. */
	if (cie->ra_reg == 6 || cie->ra_reg == 7)
		return -EBADMSG;
	cie->fde_enc = PE_ABSPTR;
	if (aug[0] == 'z') {
		cie->has_z = 1;
		if (cur_uleb(&c, &aug_len) || aug_len > cur_left(&c))
			return -EBADMSG;
		aug_data_end = c.p + aug_len;
		for (const char *a = aug + 1; *a; a++) {
			struct cfi_cur ac = { c.p, aug_data_end };
			struct cfi_ptr_bases b = {
				.sec = cfi->sec, .sec_addr = cfi->sec_addr, .has_text = 1,
				.has_data = 1, .has_func = 1, .addr_size = cie->addr_size,
			};
			uint64_t ignored;

			switch (*a) {
			case 'R':
				if (cur_u8(&ac, &cie->fde_enc))
					return -EBADMSG;
				break;
			case 'L':
				if (cur_u8(&ac, &u8)) /* LSDA encoding: the FDE's z length skips it */
					return -EBADMSG;
				break;
			case 'P':
				/* Personality: parsed only to step over it; the
				 * bases do not matter since the value is unused. */
				if (cur_u8(&ac, &u8) || cur_encoded(&ac, u8 & 0x7f, &b, &ignored))
					return -EBADMSG;
				break;
			case 'S':
				cie->signal = 1;
				break;
			case 'B': case 'G':
				break; /* AArch64 BTI / MTE markers: no data */
			default:
				return -EBADMSG;
			}
			c.p = ac.p;
		}
		c.p = aug_data_end;
	} else if (aug[0]) {
		return -EBADMSG; /* unknown augmentation without a length */
	}
	if (!cfi->is_debug_frame && !cie->has_z)
		cie->fde_enc = PE_ABSPTR;
	if ((cie->fde_enc & PE_INDIRECT) || (cie->fde_enc != PE_ABSPTR &&
	    !pe_fixed_size(cie->fde_enc, 8) && (cie->fde_enc & 0x0f) != PE_ULEB128 &&
	    (cie->fde_enc & 0x0f) != PE_SLEB128))
		return -EBADMSG;
	cie->insns = c.p;
	cie->insns_len = cur_left(&c);
	return 0;
}

int ustack_cfi__parse_entry(const struct ustack_cfi *cfi, uint64_t off,
			    struct ustack_cfi_fde *fde, uint64_t *next)
{
	struct cfi_cur c;
	struct cfi_ptr_bases b;
	uint64_t body, end, id, cie_off, range;
	unsigned int osz;
	int err;

	*next = ~(uint64_t)0;
	err = entry_header(cfi, off, &body, &end, &osz, &id);
	if (err < 0)
		return err;
	if (err == 0) {
		/* Zero length: the terminator of .eh_frame; in .debug_frame
		 * only padding, so step over it. */
		if (!cfi->is_debug_frame)
			return -ENOENT;
		*next = off + 4;
		return 0;
	}
	*next = end;
	if (is_cie_id(cfi, id, osz))
		return 0;
	if (cfi->is_debug_frame) {
		cie_off = id;
	} else {
		/* relative to the CIE pointer field itself */
		if (id > body)
			return -EBADMSG;
		cie_off = body - id;
	}
	if (cie_off == off)
		return -EBADMSG;
	err = parse_cie(cfi, cie_off, &fde->cie);
	if (err)
		return err;
	fde->off = off;
	c.p = cfi->sec + body + osz;
	c.end = cfi->sec + end;
	memset(&b, 0, sizeof(b));
	b.sec = cfi->sec;
	b.sec_addr = cfi->sec_addr;
	b.addr_size = fde->cie.addr_size;
	if (cfi->is_debug_frame) {
		/* absolute target addresses of address_size bytes */
		if (cur_encoded(&c, PE_ABSPTR, &b, &fde->pc_begin) ||
		    cur_encoded(&c, PE_ABSPTR, &b, &range))
			return -EBADMSG;
	} else {
		/* pc_range uses only the value format of the encoding */
		if (cur_encoded(&c, fde->cie.fde_enc, &b, &fde->pc_begin) ||
		    cur_encoded(&c, fde->cie.fde_enc & 0x0f, &b, &range))
			return -EBADMSG;
	}
	if (fde->pc_begin + range < fde->pc_begin)
		return -EBADMSG;
	fde->pc_end = fde->pc_begin + range;
	if (fde->cie.has_z) {
		uint64_t aug_len;

		if (cur_uleb(&c, &aug_len) || cur_skip(&c, aug_len))
			return -EBADMSG;
	}
	fde->insns = c.p;
	fde->insns_len = cur_left(&c);
	return 1;
}

static void hdr_bases(const struct ustack_cfi *cfi, struct cfi_ptr_bases *b)
{
	memset(b, 0, sizeof(*b));
	b->sec = cfi->hdr;
	b->sec_addr = cfi->hdr_addr;
	b->data = cfi->hdr_addr; /* datarel in .eh_frame_hdr: from its start */
	b->has_data = 1;
	b->addr_size = 8;
}

int ustack_cfi__hdr_eh_frame_addr(const void *eh_frame_hdr, size_t hdr_size,
				  uint64_t hdr_addr, uint64_t *eh_frame_addr)
{
	struct ustack_cfi tmp = { .hdr = eh_frame_hdr, .hdr_size = hdr_size, .hdr_addr = hdr_addr };
	struct cfi_ptr_bases b;
	struct cfi_cur c;
	const uint8_t *h = eh_frame_hdr;

	if (!h || hdr_size < 4 || h[0] != 1)
		return -EBADMSG;
	if (h[1] == PE_OMIT)
		return -ENOENT;
	hdr_bases(&tmp, &b);
	c.p = h + 4;
	c.end = h + hdr_size;
	return cur_encoded(&c, h[1], &b, eh_frame_addr) ? -EBADMSG : 0;
}

int ustack_cfi__init_eh_frame(struct ustack_cfi *cfi, const void *eh_frame, size_t size,
			      uint64_t eh_frame_addr, const void *eh_frame_hdr,
			      size_t hdr_size, uint64_t hdr_addr)
{
	struct cfi_ptr_bases b;
	struct cfi_cur c;
	const uint8_t *h = eh_frame_hdr;
	uint64_t v, count;
	unsigned int esz;

	memset(cfi, 0, sizeof(*cfi));
	cfi->sec = eh_frame;
	cfi->sec_size = eh_frame ? size : 0;
	cfi->sec_addr = eh_frame_addr;
	if (!h || !hdr_size)
		return 0;
	cfi->hdr = h;
	cfi->hdr_size = hdr_size;
	cfi->hdr_addr = hdr_addr;
	if (hdr_size < 4 || h[0] != 1)
		return -EBADMSG;
	hdr_bases(cfi, &b);
	c.p = h + 4;
	c.end = h + hdr_size;
	if (h[1] != PE_OMIT) {
		if (cur_encoded(&c, h[1], &b, &v))
			return -EBADMSG;
		/* A mismatch means the caller mixed address spaces (file
		 * offsets vs vaddrs): every table entry would be wrong. */
		if (v != eh_frame_addr)
			return -EBADMSG;
	}
	if (h[2] == PE_OMIT || h[3] == PE_OMIT)
		return 0; /* no search table: lookups walk the section */
	if (cur_encoded(&c, h[2], &b, &count))
		return -EBADMSG;
	esz = pe_fixed_size(h[3], 8);
	if (!esz || (h[3] & PE_INDIRECT) || (h[3] & 0x70) == PE_ALIGNED)
		return 0; /* not binary-searchable: fall back to the walk */
	cfi->hdr_table_off = (uint64_t)(c.p - h);
	if (count > cur_left(&c) / (2 * esz))
		return -EBADMSG;
	cfi->hdr_count = count;
	cfi->hdr_enc = h[3];
	cfi->hdr_entry_size = (uint8_t)(2 * esz);
	return 0;
}

int ustack_cfi__init_debug_frame(struct ustack_cfi *cfi, const void *debug_frame, size_t size)
{
	memset(cfi, 0, sizeof(*cfi));
	cfi->sec = debug_frame;
	cfi->sec_size = debug_frame ? size : 0;
	cfi->is_debug_frame = 1;
	return 0;
}

static int hdr_entry(const struct ustack_cfi *cfi, uint64_t i, uint64_t *loc, uint64_t *fde)
{
	struct cfi_ptr_bases b;
	struct cfi_cur c;

	hdr_bases(cfi, &b);
	c.p = cfi->hdr + cfi->hdr_table_off + i * cfi->hdr_entry_size;
	c.end = c.p + cfi->hdr_entry_size;
	if (cur_encoded(&c, cfi->hdr_enc, &b, loc))
		return -EBADMSG;
	if (fde && cur_encoded(&c, cfi->hdr_enc, &b, fde))
		return -EBADMSG;
	return 0;
}

/* Last table entry with initial_loc <= pc (the entries are probed as a
 * binary search does: an unsorted table gives what that search gives). */
static int hdr_search(const struct ustack_cfi *cfi, uint64_t pc, uint64_t *idx)
{
	uint64_t lo = 0, hi = cfi->hdr_count, loc;

	/* hi is one past the end */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (hdr_entry(cfi, mid, &loc, NULL))
			return -EBADMSG;
		if (loc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ENOENT;
	*idx = lo - 1;
	return 0;
}

/* The FDE that table entry @idx names. */
static int hdr_fde(const struct ustack_cfi *cfi, uint64_t idx, struct ustack_cfi_fde *fde)
{
	uint64_t loc, fde_addr, next;
	int err;

	if (hdr_entry(cfi, idx, &loc, &fde_addr))
		return -EBADMSG;
	/* The table entry must name an FDE inside .eh_frame that starts
	 * exactly there: this catches an unsorted or stale table. */
	if (fde_addr < cfi->sec_addr || fde_addr - cfi->sec_addr >= cfi->sec_size)
		return -EBADMSG;
	err = ustack_cfi__parse_entry(cfi, fde_addr - cfi->sec_addr, fde, &next);
	if (err != 1)
		return -EBADMSG;
	if (fde->pc_begin != loc)
		return -EBADMSG;
	return 0;
}

int ustack_cfi__hdr_loc(const struct ustack_cfi *cfi, uint64_t idx, uint64_t *loc)
{
	if (idx >= cfi->hdr_count)
		return -ERANGE;
	return hdr_entry(cfi, idx, loc, NULL);
}

int ustack_cfi__hdr_search(const struct ustack_cfi *cfi, uint64_t pc, uint64_t *idx)
{
	return hdr_search(cfi, pc, idx);
}

int ustack_cfi__hdr_fde(const struct ustack_cfi *cfi, uint64_t idx, struct ustack_cfi_fde *fde)
{
	if (idx >= cfi->hdr_count)
		return -ERANGE;
	return hdr_fde(cfi, idx, fde);
}

static int find_fde_hdr(const struct ustack_cfi *cfi, uint64_t pc, struct ustack_cfi_fde *fde)
{
	uint64_t idx;
	int err;

	err = hdr_search(cfi, pc, &idx);
	if (err)
		return err;
	err = hdr_fde(cfi, idx, fde);
	if (err)
		return err;
	if (pc >= fde->pc_end)
		return -ENOENT;
	return 0;
}

static int find_fde_walk(const struct ustack_cfi *cfi, uint64_t pc, struct ustack_cfi_fde *fde)
{
	uint64_t off = 0, next;

	for (;;) {
		int err = ustack_cfi__parse_entry(cfi, off, fde, &next);

		if (err < 0)
			return err;
		if (err == 1 && pc >= fde->pc_begin && pc < fde->pc_end)
			return 0;
		off = next; /* always > off: entries are at least 4 bytes */
	}
}

int ustack_cfi__find_row(const struct ustack_cfi *cfi, uint64_t pc, struct ustack_row *row)
{
	struct ustack_cfi_fde fde;
	int err;

	err = cfi->hdr_count ? find_fde_hdr(cfi, pc, &fde) : find_fde_walk(cfi, pc, &fde);
	if (err)
		return err;
	return ustack_cfi__exec(cfi, &fde, pc, row, NULL, NULL);
}
