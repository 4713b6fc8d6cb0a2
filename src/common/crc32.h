/* SPDX-License-Identifier: MIT */
/* CRC-32/ISO-HDLC: the CRC of zlib's crc32(), .gnu_debuglink and the trace
 * file's chunk checksums (docs/trace-format.md section 1). */
#ifndef USTACK_COMMON_CRC32_H
#define USTACK_COMMON_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* crc = ustack_crc32(0, buf, len) for a whole buffer; pass the previous
 * result as @crc to continue over the next piece. Thread-safe. */
uint32_t ustack_crc32(uint32_t crc, const void *buf, size_t len);

#endif
