// SPDX-License-Identifier: MIT
/*
 * Fuzz target: a line cache file (src/symbolize/line_cache.c), which the
 * symbolizer reads from the cache directory. Each input is read as it is
 * and, so that mutations get past the CRC, with its CRC field (bytes
 * 12..15) set to the CRC of what follows the header. Invariants of every image
 * accepted: each entry's address gives its levels (a count within
 * USTACK_DWARF_MAX_LEVELS, readable strings, inlined 0 or 1) and an
 * address between entries gives -ENOENT; written back (with one address
 * added) and read again, it gives the same answers.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/ustack.h>

#include "common/crc32.h"
#include "symbolize/line_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int quiet(enum ustack_print_level level, const char *fmt, va_list ap)
{
	(void)level, (void)fmt, (void)ap;
	return 0;
}

static size_t touch(const struct ustack_dwarf_level *lv, int n)
{
	size_t sum = 0;

	if (n < 0 || n > USTACK_DWARF_MAX_LEVELS)
		abort();
	for (int k = 0; k < n; k++) {
		if (lv[k].inlined != 0 && lv[k].inlined != 1)
			abort();
		sum += (lv[k].name ? strlen(lv[k].name) : 0) + (lv[k].file ? strlen(lv[k].file) : 0) +
		       (lv[k].linkage ? strlen(lv[k].linkage) : 0);
	}
	return sum;
}

static void same(struct ustack_line_cache *a, struct ustack_line_cache *b, uint64_t addr)
{
	struct ustack_dwarf_level x[USTACK_DWARF_MAX_LEVELS], y[USTACK_DWARF_MAX_LEVELS];
	int n = ustack_line_cache__get(a, addr, x), m = ustack_line_cache__get(b, addr, y);

	if (n != m)
		abort();
	for (int k = 0; k < n; k++) {
		if ((x[k].name == NULL) != (y[k].name == NULL) ||
		    (x[k].file == NULL) != (y[k].file == NULL) ||
		    (x[k].linkage == NULL) != (y[k].linkage == NULL) ||
		    (x[k].name && strcmp(x[k].name, y[k].name)) ||
		    (x[k].file && strcmp(x[k].file, y[k].file)) ||
		    (x[k].linkage && strcmp(x[k].linkage, y[k].linkage)) || x[k].line != y[k].line ||
		    x[k].column != y[k].column || x[k].inlined != y[k].inlined ||
		    x[k].decl_line != y[k].decl_line)
			abort();
	}
}

static void one(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ustack_set_print(quiet);
	one(data, size);
	if (size >= 128) {
		uint8_t *fixed = malloc(size);
		uint32_t crc;

		if (!fixed)
			return 0;
		memcpy(fixed, data, size);
		crc = ustack_crc32(0, fixed + 128, size - 128);
		memcpy(fixed + 12, &crc, sizeof(crc));
		one(fixed, size);
		free(fixed);
	}
	return 0;
}

static void one(const uint8_t *data, size_t size)
{
	static const struct ustack_dwarf_level added = { .name = "added", .file = "/a.c", .line = 1 };
	struct ustack_dwarf_level lv[USTACK_DWARF_MAX_LEVELS];
	struct ustack_line_cache *c, *d;
	uint64_t addr, prev = 0, fresh = UINT64_MAX;
	volatile size_t sink = 0;
	void *img;
	size_t len;

	c = ustack_line_cache__from_image(data, size, "fuzz");
	if (!c)
		return;
	for (size_t i = 0; !ustack_line_cache__entry(c, i, &addr); i++) {
		if (i && addr <= prev)
			abort();
		sink += touch(lv, ustack_line_cache__get(c, addr, lv));
		if (i && addr > prev + 1 && ustack_line_cache__get(c, addr - 1, lv) != -ENOENT)
			abort();
		if (addr > prev + 1)
			fresh = addr - 1; /* an address no entry has */
		prev = addr;
	}
	if (fresh == UINT64_MAX && prev < UINT64_MAX)
		fresh = prev + 1;
	if (fresh != UINT64_MAX && ustack_line_cache__put(c, fresh, &added, 1))
		fresh = UINT64_MAX;
	if (!ustack_line_cache__image(c, &img, &len)) {
		d = ustack_line_cache__from_image(img, len, "fuzz (written back)");
		if (!d)
			abort();
		for (size_t i = 0; !ustack_line_cache__entry(c, i, &addr); i++)
			same(c, d, addr);
		if (fresh != UINT64_MAX)
			same(c, d, fresh);
		ustack_line_cache__free(d);
		free(img);
	}
	ustack_line_cache__free(c);
	(void)sink;
}
