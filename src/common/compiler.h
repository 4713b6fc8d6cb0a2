/* SPDX-License-Identifier: MIT */
/* Small compiler helpers shared by every module. */
#ifndef USTACK_COMMON_COMPILER_H
#define USTACK_COMMON_COMPILER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Unaligned little/native-endian loads from untrusted bytes. The caller has
 * checked the bounds; these only avoid unaligned-access UB. */
static inline uint8_t ld_u8(const void *p) { return *(const uint8_t *)p; }
static inline uint16_t ld_u16(const void *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t ld_u32(const void *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t ld_u64(const void *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline int8_t ld_s8(const void *p) { return (int8_t)ld_u8(p); }
static inline int16_t ld_s16(const void *p) { return (int16_t)ld_u16(p); }
static inline int32_t ld_s32(const void *p) { return (int32_t)ld_u32(p); }
static inline int64_t ld_s64(const void *p) { return (int64_t)ld_u64(p); }

/* true when [off, off+len) lies inside a buffer of size size, without
 * overflow. */
static inline int in_bounds(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/*
 * Number of leading elements of a sorted array whose u64 key (at byte
 * offset @key_off of each @stride-byte element) is <= @key: the element
 * covering @key, if any, is the one before that (index - 1).
 */
static inline size_t ustack_count_le_u64(const void *base, size_t n, size_t stride,
					 size_t key_off, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ld_u64((const char *)base + mid * stride + key_off) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Parse lowercase hex digits at @p (up to @end, NULL: until a non-digit).
 * Async-signal-safe. Returns the first byte after the digits, or NULL when
 * there is none.
 */
static inline const char *ustack_parse_hex(const char *p, const char *end, uint64_t *v)
{
	uint64_t x = 0;
	int digits = 0;

	for (; !end || p < end; p++, digits++) {
		unsigned int d;

		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else
			break;
		x = x << 4 | d;
	}
	*v = x;
	return digits ? p : NULL;
}

#endif
