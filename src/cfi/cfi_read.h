/* SPDX-License-Identifier: MIT */
/*
 * Bounds-checked readers for CFI bytes: a cursor over [p, end), LEB128 and
 * the DW_EH_PE pointer encodings (LSB "Linux Standard Base Core
 * Specification", .eh_frame section, and the x86-64 psABI). Every reader
 * returns 0 or -EBADMSG and never reads past end.
 */
#ifndef USTACK_CFI_CFI_READ_H
#define USTACK_CFI_CFI_READ_H

#include <errno.h>
#include <stdint.h>

#include "common/compiler.h"

/* DW_EH_PE_* */
#define PE_ABSPTR  0x00
#define PE_ULEB128 0x01
#define PE_UDATA2  0x02
#define PE_UDATA4  0x03
#define PE_UDATA8  0x04
#define PE_SIGNED  0x08
#define PE_SLEB128 0x09
#define PE_SDATA2  0x0a
#define PE_SDATA4  0x0b
#define PE_SDATA8  0x0c
#define PE_PCREL   0x10
#define PE_TEXTREL 0x20
#define PE_DATAREL 0x30
#define PE_FUNCREL 0x40
#define PE_ALIGNED 0x50
#define PE_INDIRECT 0x80
#define PE_OMIT    0xff

struct cfi_cur {
	const uint8_t *p, *end;
};

static inline uint64_t cur_left(const struct cfi_cur *c)
{
	return (uint64_t)(c->end - c->p);
}

static inline int cur_u8(struct cfi_cur *c, uint8_t *v)
{
	if (c->p >= c->end)
		return -EBADMSG;
	*v = *c->p++;
	return 0;
}

static inline int cur_skip(struct cfi_cur *c, uint64_t n)
{
	if (n > cur_left(c))
		return -EBADMSG;
	c->p += n;
	return 0;
}

static inline int cur_uleb(struct cfi_cur *c, uint64_t *v)
{
	uint64_t r = 0;
	unsigned int shift = 0;

	for (;;) {
		uint8_t b;

		if (c->p >= c->end || shift >= 70)
			return -EBADMSG; /* truncated, or longer than any u64 */
		b = *c->p++;
		if (shift < 64)
			r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	*v = r;
	return 0;
}

static inline int cur_sleb(struct cfi_cur *c, int64_t *v)
{
	uint64_t r = 0;
	unsigned int shift = 0;
	uint8_t b;

	for (;;) {
		if (c->p >= c->end || shift >= 70)
			return -EBADMSG;
		b = *c->p++;
		if (shift < 64)
			r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (shift < 64 && (b & 0x40))
		r |= ~(uint64_t)0 << shift;
	*v = (int64_t)r;
	return 0;
}

/* Fixed size of an encoding's value, 0 for LEB128 / invalid. */
static inline unsigned int pe_fixed_size(uint8_t enc, unsigned int addr_size)
{
	switch (enc & 0x0f) {
	case PE_ABSPTR: case PE_SIGNED: return addr_size;
	case PE_UDATA2: case PE_SDATA2: return 2;
	case PE_UDATA4: case PE_SDATA4: return 4;
	case PE_UDATA8: case PE_SDATA8: return 8;
	default: return 0;
	}
}

/* Bases for the relative applications; has_* says whether it is known. */
struct cfi_ptr_bases {
	const uint8_t *sec;  /* bytes whose address is sec_addr */
	uint64_t sec_addr;   /* for pcrel: address of sec[0] */
	uint64_t text, data, func;
	uint8_t has_text, has_data, has_func;
	uint8_t addr_size;   /* absptr size */
};

/*
 * Read a pointer with encoding @enc. The value of an indirect pointer is
 * the address where the real pointer is stored (never dereferenced: only
 * the personality uses it and it is skipped). @enc must not be PE_OMIT.
 */
static inline int cur_encoded(struct cfi_cur *c, uint8_t enc, const struct cfi_ptr_bases *b,
			      uint64_t *out)
{
	uint64_t field_addr, v = 0;
	unsigned int asz = b->addr_size ? b->addr_size : 8;
	int err = 0;

	if (enc == PE_OMIT)
		return -EBADMSG;
	if ((enc & 0x70) == PE_ALIGNED) {
		/* aligned: padding up to an address-size boundary, then an
		 * absolute pointer (the low nibble must be absptr). */
		uint64_t a = b->sec_addr + (uint64_t)(c->p - b->sec);
		uint64_t pad = (asz - (a % asz)) % asz;

		if ((enc & 0x0f) != PE_ABSPTR || cur_skip(c, pad))
			return -EBADMSG;
		enc = PE_ABSPTR;
	}
	field_addr = b->sec_addr + (uint64_t)(c->p - b->sec);
	switch (enc & 0x0f) {
	case PE_ABSPTR:
	case PE_SIGNED:
		if (cur_left(c) < asz || (asz != 4 && asz != 8))
			return -EBADMSG;
		v = asz == 8 ? ld_u64(c->p) :
			((enc & 0x0f) == PE_SIGNED ? (uint64_t)(int64_t)ld_s32(c->p) : ld_u32(c->p));
		c->p += asz;
		break;
	case PE_UDATA2: case PE_SDATA2:
		if (cur_left(c) < 2)
			return -EBADMSG;
		v = (enc & 0x0f) == PE_SDATA2 ? (uint64_t)(int64_t)ld_s16(c->p) : ld_u16(c->p);
		c->p += 2;
		break;
	case PE_UDATA4: case PE_SDATA4:
		if (cur_left(c) < 4)
			return -EBADMSG;
		v = (enc & 0x0f) == PE_SDATA4 ? (uint64_t)(int64_t)ld_s32(c->p) : ld_u32(c->p);
		c->p += 4;
		break;
	case PE_UDATA8: case PE_SDATA8:
		if (cur_left(c) < 8)
			return -EBADMSG;
		v = ld_u64(c->p);
		c->p += 8;
		break;
	case PE_ULEB128:
		err = cur_uleb(c, &v);
		break;
	case PE_SLEB128: {
		int64_t s = 0;

		err = cur_sleb(c, &s);
		v = (uint64_t)s;
		break;
	}
	default:
		return -EBADMSG;
	}
	if (err)
		return err;
	switch (enc & 0x70) {
	case PE_ABSPTR: case PE_ALIGNED:
		break;
	case PE_PCREL:
		v += field_addr;
		break;
	case PE_TEXTREL:
		if (!b->has_text)
			return -EBADMSG;
		v += b->text;
		break;
	case PE_DATAREL:
		if (!b->has_data)
			return -EBADMSG;
		v += b->data;
		break;
	case PE_FUNCREL:
		if (!b->has_func)
			return -EBADMSG;
		v += b->func;
		break;
	default:
		return -EBADMSG;
	}
	if (asz == 4 && (enc & 0x70) != PE_ABSPTR)
		v &= 0xffffffffu;
	*out = v;
	return 0;
}

#endif
