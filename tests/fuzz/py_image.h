/* SPDX-License-Identifier: MIT */
/*
 * A process's memory for the CPython frame walk, made of a buffer served
 * at a fixed base address (the read callback of src/python/pyframes.h):
 * shared by fuzz_pyframes.c and tests/unit/test_pyframes.c, whose images
 * (tests/fuzz/corpus/pyframes/, make-corpus-pyframes.py) hold their
 * pointers as offsets from that base.
 */
#ifndef USTACK_TESTS_PY_IMAGE_H
#define USTACK_TESTS_PY_IMAGE_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define BASE 0x7f0000010000ULL

struct image {
	uint8_t *data; /* only read */
	size_t size;
};

static int read_image(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = ctx;

	if (addr < BASE || addr - BASE > im->size || len > im->size - (addr - BASE))
		return -EFAULT;
	memcpy(buf, im->data + (addr - BASE), len);
	return 0;
}

#endif
