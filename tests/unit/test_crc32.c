// SPDX-License-Identifier: MIT
/*
 * ustack_crc32() (src/common/crc32.c): the CRC-32/ISO-HDLC check value,
 * continuation over split buffers, and agreement with zlib's crc32() and
 * with a bit-at-a-time reference at every alignment and tail length the
 * slicing-by-8 loop has, and at every length across the carry-less
 * multiply path's steps (64-byte lanes, 16-byte blocks, the tail), split
 * anywhere.
 */
#include "common/crc32.h"
#include "test.h"

#if __has_include(<zlib.h>)
#include <zlib.h>
#define HAVE_ZLIB 1
#endif

static uint8_t buf[4096];

static void fill(void)
{
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
}

/* The textbook definition, one bit at a time. */
static uint32_t crc_bitwise(const uint8_t *p, size_t len)
{
	uint32_t crc = ~0u;

	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
	}
	return ~crc;
}

static void test_check_value(void)
{
	/* the check value of CRC-32/ISO-HDLC, as the catalogue states */
	CHECK_EQ_U64(ustack_crc32(0, "123456789", 9), 0xcbf43926u);
	CHECK_EQ_U64(ustack_crc32(0, "", 0), 0);
	CHECK_EQ_U64(ustack_crc32(0, "a", 1), 0xe8b7be43u);
	/* continuation: any split gives the CRC of the whole */
	for (size_t k = 0; k <= 9; k++)
		CHECK_EQ_U64(ustack_crc32(ustack_crc32(0, "123456789", k), "123456789" + k, 9 - k),
			     0xcbf43926u);
}

static void test_bitwise_reference(void)
{
	fill();
	for (size_t off = 0; off < 16; off++)
		for (size_t len = 0; len < 64; len++)
			CHECK_EQ_U64(ustack_crc32(0, buf + off, len), crc_bitwise(buf + off, len));
	CHECK_EQ_U64(ustack_crc32(0, buf, sizeof(buf)), crc_bitwise(buf, sizeof(buf)));
}

static void test_long_buffers(void)
{
	unsigned int bad = 0;

	fill();
	for (size_t off = 0; off < 16; off += 3)
		for (size_t len = 0; len <= 300; len++)
			bad += ustack_crc32(0, buf + off, len) != crc_bitwise(buf + off, len);
	/* continuation through both paths: the first piece short or long */
	for (size_t k = 0; k <= 300; k += 7)
		bad += ustack_crc32(ustack_crc32(0, buf, k), buf + k, 1000 - k) !=
		       crc_bitwise(buf, 1000);
	CHECK_EQ(bad, 0);
}

static void test_zlib(void)
{
#ifdef HAVE_ZLIB
	fill();
	for (size_t n = 0; n < 100; n++)
		CHECK_EQ_U64(ustack_crc32(0, buf + n, sizeof(buf) - 3 * n),
			     crc32(crc32(0, NULL, 0), buf + n, sizeof(buf) - 3 * n));
#else
	SKIP("zlib.h not installed: no outside oracle");
#endif
}

int main(void)
{
	RUN(test_check_value);
	RUN(test_bitwise_reference);
	RUN(test_long_buffers);
	RUN(test_zlib);
	TEST_EXIT();
}
