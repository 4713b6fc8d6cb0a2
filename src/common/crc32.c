// SPDX-License-Identifier: MIT
/* CRC-32/ISO-HDLC (reflected polynomial 0xedb88320), slicing-by-8. */
#include "common/crc32.h"

static uint32_t crc_table[8][256];
static int crc_ready;

/* Slicing-by-8 tables: the trace reader checks every byte of a trace, so
 * the CRC should cost well under a nanosecond per byte. */
static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
					  crc_table[0][crc_table[t - 1][i] & 0xff];
	__atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

uint32_t ustack_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	/* Racing initializers compute identical tables: harmless. */
	if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
		crc_init();
	crc = ~crc;
	while (len >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
				     (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][p[4]] ^ crc_table[2][p[5]] ^
		      crc_table[1][p[6]] ^ crc_table[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}
