// SPDX-License-Identifier: MIT
/*
 * SHA-256 (FIPS 180-4): the build-ID cache names files by content, and a
 * recording hashes every file it captures, at every recording (a file
 * already in the cache too: its name is its hash). The update loop works on
 * whole 64-byte blocks straight from the caller's buffer and copies only a
 * partial block's bytes into s->buf. The blocks go through the CPU's SHA
 * extensions where it has them (x86-64: SHA-NI, with SSSE3 and SSE4.1; AMD
 * since Zen, Intel since Ice Lake / Goldmont), else through plain C: the
 * same answers (test_bidcache compares both with the NIST vectors and
 * sha256sum), 3.5 -> 0.6 ns per byte on this project's machines (AMD EPYC;
 * bench/capture/run.sh). Valgrind's CPU has no SHA extensions: under it the
 * plain C runs.
 */
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "bidcache/bidcache.h"

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static inline uint32_t load_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void store_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* One round; the eight working variables rotate by renaming, not by moves. */
#define ROUND(a, b, c, d, e, f, g, h, i)                                              \
	do {                                                                          \
		uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +             \
			      ((e & f) ^ (~e & g)) + K[i] + w[i];                     \
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +                 \
			      ((a & b) ^ (a & c) ^ (b & c));                          \
		d += t1;                                                              \
		h = t1 + t2;                                                          \
	} while (0)

static void sha256_blocks_c(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	uint32_t w[64];

	for (; nblocks--; p += 64) {
		uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
		uint32_t e = h[4], f = h[5], g = h[6], hh = h[7];

		for (int i = 0; i < 16; i++)
			w[i] = load_be32(p + 4 * i);
		for (int i = 16; i < 64; i++) {
			uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
			uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);

			w[i] = w[i - 16] + s0 + w[i - 7] + s1;
		}
		for (int i = 0; i < 64; i += 8) {
			ROUND(a, b, c, d, e, f, g, hh, i);
			ROUND(hh, a, b, c, d, e, f, g, i + 1);
			ROUND(g, hh, a, b, c, d, e, f, i + 2);
			ROUND(f, g, hh, a, b, c, d, e, i + 3);
			ROUND(e, f, g, hh, a, b, c, d, i + 4);
			ROUND(d, e, f, g, hh, a, b, c, i + 5);
			ROUND(c, d, e, f, g, hh, a, b, i + 6);
			ROUND(b, c, d, e, f, g, hh, a, i + 7);
		}
		h[0] += a;
		h[1] += b;
		h[2] += c;
		h[3] += d;
		h[4] += e;
		h[5] += f;
		h[6] += g;
		h[7] += hh;
	}
}

#if defined(__x86_64__)
/*
 * The same blocks with SHA-NI. sha256rnds2 does two rounds on the state
 * held as two registers, ABEF and CDGH (A in the highest lane), taking
 * W[i] + K[i] of its two rounds from the low half of its third operand; it
 * returns the new ABEF, and the old ABEF is then the new CDGH, so the two
 * registers trade places at every call. sha256msg1 / sha256msg2 compute the
 * message schedule four words at a time:
 * W[t..t+3] = msg2(msg1(W[t-16..t-13], W[t-12..t-9]) + W[t-7..t-4], W[t-4..t-1]).
 */
__attribute__((target("sha,sse4.1,ssse3"))) static void
sha256_blocks_ni(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
	__m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xb1); /* b a d c */
	__m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1b); /* h g f e */
	__m128i abef = _mm_alignr_epi8(t, efgh, 8);      /* f e b a */
	__m128i cdgh = _mm_blend_epi16(efgh, t, 0xf0);   /* h g d c */

	for (; nblocks--; p += 64) {
		__m128i abef0 = abef, cdgh0 = cdgh, m[4];

		/* unrolled: m[] stays in registers */
#pragma GCC unroll 16
		for (int i = 0; i < 16; i++) {
			__m128i w, wk;

			if (i < 4) {
				w = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
			} else {
				w = _mm_sha256msg1_epu32(m[i & 3], m[(i + 1) & 3]);
				w = _mm_add_epi32(w, _mm_alignr_epi8(m[(i + 3) & 3], m[(i + 2) & 3], 4));
				w = _mm_sha256msg2_epu32(w, m[(i + 3) & 3]);
			}
			m[i & 3] = w;
			wk = _mm_add_epi32(w, _mm_loadu_si128((const __m128i *)&K[4 * i]));
			cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
			abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0e));
		}
		abef = _mm_add_epi32(abef, abef0);
		cdgh = _mm_add_epi32(cdgh, cdgh0);
	}
	t = _mm_shuffle_epi32(abef, 0x1b);      /* a b e f */
	cdgh = _mm_shuffle_epi32(cdgh, 0xb1);   /* g h c d */
	_mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(t, cdgh, 0xf0)); /* a b c d */
	_mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(cdgh, t, 8));   /* e f g h */
}

/* CPUID: SHA (leaf 7, EBX bit 29), SSSE3 and SSE4.1 (leaf 1, ECX bits 9, 19) */
static int cpu_has_sha_ni(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 9)) || !(c & (1u << 19)))
		return 0;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return 0;
	return !!(b & (1u << 29));
}
#endif

/* 0: not decided yet, 1: plain C, 2: SHA-NI (ustack_sha256_use_hw()) */
static int sha_impl;

int ustack_sha256_use_hw(int want)
{
	int hw = 0;

#if defined(__x86_64__)
	hw = cpu_has_sha_ni();
#endif
	__atomic_store_n(&sha_impl, want && hw ? 2 : 1, __ATOMIC_RELAXED);
	return want && hw;
}

static void sha256_blocks(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	int impl = __atomic_load_n(&sha_impl, __ATOMIC_RELAXED);

	if (!impl) {
		const char *e = getenv("USTACK_SHA256");

		ustack_sha256_use_hw(!(e && !strcmp(e, "c")));
		impl = __atomic_load_n(&sha_impl, __ATOMIC_RELAXED);
	}
#if defined(__x86_64__)
	if (impl == 2) {
		sha256_blocks_ni(h, p, nblocks);
		return;
	}
#endif
	sha256_blocks_c(h, p, nblocks);
}

void ustack_sha256_init(struct ustack_sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->fill = 0;
}

void ustack_sha256_update(struct ustack_sha256 *s, const void *data, size_t len)
{
	const uint8_t *p = data;

	s->len += len;
	if (s->fill) {
		size_t take = 64 - s->fill < len ? 64 - s->fill : len;

		memcpy(s->buf + s->fill, p, take);
		s->fill += (uint32_t)take;
		p += take;
		len -= take;
		if (s->fill < 64)
			return;
		sha256_blocks(s->h, s->buf, 1);
		s->fill = 0;
	}
	if (len >= 64) {
		sha256_blocks(s->h, p, len / 64);
		p += len & ~(size_t)63;
		len &= 63;
	}
	if (len) {
		memcpy(s->buf, p, len);
		s->fill = (uint32_t)len;
	}
}

void ustack_sha256_final(struct ustack_sha256 *s, uint8_t out[USTACK_SHA256_SIZE])
{
	uint64_t bits = s->len * 8;
	uint32_t fill = s->fill;

	s->buf[fill++] = 0x80;
	if (fill > 56) {
		memset(s->buf + fill, 0, 64 - fill);
		sha256_blocks(s->h, s->buf, 1);
		fill = 0;
	}
	memset(s->buf + fill, 0, 56 - fill);
	store_be32(s->buf + 56, (uint32_t)(bits >> 32));
	store_be32(s->buf + 60, (uint32_t)bits);
	sha256_blocks(s->h, s->buf, 1);
	for (int i = 0; i < 8; i++)
		store_be32(out + 4 * i, s->h[i]);
}

void ustack_sha256(const void *data, size_t len, uint8_t out[USTACK_SHA256_SIZE])
{
	struct ustack_sha256 s;

	ustack_sha256_init(&s);
	ustack_sha256_update(&s, data, len);
	ustack_sha256_final(&s, out);
}
