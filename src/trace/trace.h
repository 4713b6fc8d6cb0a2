/* SPDX-License-Identifier: MIT */
/* Internals shared by the trace writer and reader: on-disk constants
 * (docs/trace-format.md) and varints. The CRC-32 of chunks is
 * ustack_crc32() (common/crc32.h), their hash maps ustack_u64map
 * (<ustack/hashmap.h>). */
#ifndef USTACK_TRACE_TRACE_H
#define USTACK_TRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/hashmap.h>
#include <ustack/trace.h>

#define TRACE_FILE_MAGIC "\x7fUSTACK\n"
#define TRACE_FILE_HDR_SIZE 32u
#define TRACE_BYTE_ORDER 0x01020304u
#define TRACE_WORD_SIZE 8u
#define TRACE_CHUNK_MAGIC "UCHK"
#define TRACE_CHUNK_HDR_SIZE 20u
#define TRACE_MAX_BUILD_ID 32u
#define TRACE_MIN_CHUNK_SIZE 64u

/* Per-record flag bits as stored. */
#define TRACE_EV_KSTACK 0x1u
#define TRACE_EV_COOKIE 0x2u
#define TRACE_EV_VALUE 0x4u
#define TRACE_EV_ARGS 0x8u /* 1.4: nr_args, then the args */
#define TRACE_US_STACK 0x1u
#define TRACE_FR_METHOD_MASK 0x7u
#define TRACE_FR_EXACT_PC 0x8u
#define TRACE_FR_SAME_FILE 0x10u
#define TRACE_FR_RESERVED 0xe0u
#define TRACE_THREAD_FLAGS 0x7u

/* ---- varints --------------------------------------------------------- */

#define TRACE_VARINT_MAX 10

static inline size_t trace_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline uint64_t trace_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t trace_unzigzag(uint64_t u)
{
	return (int64_t)((u >> 1) ^ (0 - (u & 1)));
}

/* A bounded cursor over untrusted bytes. Any read past the end, or an
 * invalid varint, sets bad; later reads return 0. */
struct trace_cur {
	const uint8_t *p;
	size_t len, pos;
	int bad;
};

/* trace_get_varint() of more than one byte, or at the end */
static __attribute__((noinline, unused)) uint64_t trace_get_varint_long(struct trace_cur *c)
{
	uint64_t v = 0;

	for (int i = 0; i < TRACE_VARINT_MAX; i++) {
		uint8_t b;

		if (c->bad || c->pos >= c->len) {
			c->bad = 1;
			return 0;
		}
		b = c->p[c->pos++];
		if (i == 9 && b > 1) {
			c->bad = 1;
			return 0;
		}
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	c->bad = 1;
	return 0;
}

/* Most varints of a trace (ids, counts, small deltas) are one byte: that
 * case inline, the rest out of line. */
static inline uint64_t trace_get_varint(struct trace_cur *c)
{
	uint8_t b;

	if (c->bad || c->pos >= c->len) {
		c->bad = 1;
		return 0;
	}
	b = c->p[c->pos];
	if (b & 0x80)
		return trace_get_varint_long(c);
	c->pos++;
	return b;
}

static inline uint32_t trace_get_u32v(struct trace_cur *c)
{
	uint64_t v = trace_get_varint(c);

	if (v > UINT32_MAX)
		c->bad = 1;
	return (uint32_t)v;
}

static inline uint8_t trace_get_u8(struct trace_cur *c)
{
	if (c->bad || c->pos >= c->len) {
		c->bad = 1;
		return 0;
	}
	return c->p[c->pos++];
}

/* Bytes of a string/bytes field: pointer into the buffer and its length. */
static inline const uint8_t *trace_get_bytes(struct trace_cur *c, size_t *n)
{
	uint64_t len = trace_get_varint(c);
	const uint8_t *p;

	if (c->bad || len > c->len - c->pos) {
		c->bad = 1;
		*n = 0;
		return NULL;
	}
	p = c->p + c->pos;
	c->pos += len;
	*n = len;
	return p;
}

/*
 * Make @r decode only the records of @types (bit 1 << type) and the HEADER;
 * the others are stepped over by their length, unchecked, and never handed
 * out (chunks are still checked whole: CRC, record counts). For a pre-pass
 * that looks for one kind of record in a trace whose main pass checks
 * everything (the JIT symbols of a report). Before the first read.
 */
struct ustack_trace_reader;
void ustack_trace_reader__skim(struct ustack_trace_reader *r, uint32_t types);

#endif
