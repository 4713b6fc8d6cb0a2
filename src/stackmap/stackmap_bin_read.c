// SPDX-License-Identifier: MIT
/*
 * Reader of the 'FSMB' v2 binary export (ours or the kernel's
 * stack_map_bin). The input is untrusted: every field is checked against
 * the end of the buffer before use, counts are checked before they are
 * multiplied, and the first problem is reported with its byte offset.
 * The whole buffer is validated at open, so iterating can never fail.
 *
 * Byte order: writers use their native order; the magic tells which, and a
 * foreign-order file is swapped into host order at open.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "common/log.h"
#include "common/opts.h"
#include "stackmap/stackmap_internal.h"

struct smap_bin_idx {
	uint32_t stack_id;
	uint32_t entry;    /* position in file order */
};

struct ustack_stackmap_bin {
	uint64_t *data;            /* copy, 8-byte aligned, host order */
	size_t size;
	size_t nr;                 /* stacks */
	uint64_t *offsets;         /* nr: byte offset of each entry header */
	struct smap_bin_idx *by_id;/* nr: sorted by stack_id */
	int swapped;
};

__attribute__((format(printf, 3, 4)))
static int smap_bin_err(const struct ustack_stackmap_bin_opts *opts,
			size_t off, const char *fmt, ...)
{
	char msg[200];
	int n;
	va_list ap;

	n = snprintf(msg, sizeof(msg), "stack_map_bin: offset %zu: ", off);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
	va_end(ap);
	pr_warn("%s\n", msg);
	OPTS_SET_ERR(opts, "%s", msg);
	return -EBADMSG;
}

static uint32_t smap_rd32(const struct ustack_stackmap_bin *b, size_t off)
{
	uint32_t v = ld_u32((const uint8_t *)b->data + off);

	return b->swapped ? __builtin_bswap32(v) : v;
}

static int smap_cmp_idx(const void *a, const void *b)
{
	const struct smap_bin_idx *x = a, *y = b;

	if (x->stack_id != y->stack_id)
		return x->stack_id < y->stack_id ? -1 : 1;
	return x->entry < y->entry ? -1 : x->entry > y->entry;
}

static int smap_bin_parse(struct ustack_stackmap_bin *b,
			  const struct ustack_stackmap_bin_opts *opts)
{
	const uint8_t *p = (const uint8_t *)b->data;
	uint32_t magic, version, nr_stacks;
	size_t off;

	if (b->size < USTACK_STACKMAP_BIN_HDR_SIZE)
		return smap_bin_err(opts, 0, "file of %zu bytes is shorter than the %u-byte header",
				    b->size, USTACK_STACKMAP_BIN_HDR_SIZE);
	magic = ld_u32(p);
	if (magic == __builtin_bswap32(USTACK_STACKMAP_BIN_MAGIC))
		b->swapped = 1;
	else if (magic != USTACK_STACKMAP_BIN_MAGIC)
		return smap_bin_err(opts, 0, "bad magic 0x%08x (want 0x%08x 'FSMB' in either byte order)",
				    magic, USTACK_STACKMAP_BIN_MAGIC);
	version = smap_rd32(b, 4);
	if (version != USTACK_STACKMAP_BIN_VERSION)
		return smap_bin_err(opts, 4, "unsupported version %u (want %u)",
				    version, USTACK_STACKMAP_BIN_VERSION);
	nr_stacks = smap_rd32(b, 8);
	/* each entry takes at least its header: reject absurd counts before
	 * allocating anything sized by them */
	if (nr_stacks > (b->size - USTACK_STACKMAP_BIN_HDR_SIZE) / USTACK_STACKMAP_BIN_ENTRY_SIZE)
		return smap_bin_err(opts, 8, "nr_stacks %u cannot fit in the %zu bytes after the header",
				    nr_stacks, b->size - USTACK_STACKMAP_BIN_HDR_SIZE);
	b->offsets = malloc((nr_stacks ? nr_stacks : 1) * sizeof(*b->offsets));
	b->by_id = malloc((nr_stacks ? nr_stacks : 1) * sizeof(*b->by_id));
	if (!b->offsets || !b->by_id)
		return -ENOMEM;

	off = USTACK_STACKMAP_BIN_HDR_SIZE;
	for (uint32_t i = 0; i < nr_stacks; i++) {
		uint32_t nr;

		if (!in_bounds(off, USTACK_STACKMAP_BIN_ENTRY_SIZE, b->size))
			return smap_bin_err(opts, off, "entry %u: header needs %u bytes, %zu left",
					    i, USTACK_STACKMAP_BIN_ENTRY_SIZE, b->size - off);
		nr = smap_rd32(b, off + 4);
		if ((b->size - off - USTACK_STACKMAP_BIN_ENTRY_SIZE) / 8 < nr)
			return smap_bin_err(opts, off + 4, "entry %u: nr %u needs %llu bytes, %zu left",
					    i, nr, (unsigned long long)nr * 8,
					    b->size - off - USTACK_STACKMAP_BIN_ENTRY_SIZE);
		b->offsets[i] = off;
		b->by_id[i].stack_id = smap_rd32(b, off);
		b->by_id[i].entry = i;
		if (b->swapped) {
			uint64_t *ips = b->data + (off + USTACK_STACKMAP_BIN_ENTRY_SIZE) / 8;

			for (uint32_t k = 0; k < nr; k++)
				ips[k] = __builtin_bswap64(ips[k]);
		}
		off += USTACK_STACKMAP_BIN_ENTRY_SIZE + (size_t)nr * 8;
	}
	if (off != b->size)
		return smap_bin_err(opts, off, "%zu bytes after the last of %u stacks",
				    b->size - off, nr_stacks);
	b->nr = nr_stacks;

	/* ids name stacks: two entries with one id would make a trace
	 * ambiguous, so that is corruption too */
	qsort(b->by_id, b->nr, sizeof(*b->by_id), smap_cmp_idx);
	for (size_t i = 1; i < b->nr; i++)
		if (b->by_id[i].stack_id == b->by_id[i - 1].stack_id)
			return smap_bin_err(opts, b->offsets[b->by_id[i].entry],
					    "entry %u: stack_id %u already used by entry %u",
					    b->by_id[i].entry, b->by_id[i].stack_id,
					    b->by_id[i - 1].entry);
	return 0;
}

USTACK_API struct ustack_stackmap_bin *
ustack_stackmap_bin__open(const void *data, size_t size,
			  const struct ustack_stackmap_bin_opts *opts)
{
	struct ustack_stackmap_bin *b;
	int err;

	if (!OPTS_VALID(opts, struct ustack_stackmap_bin_opts)) {
		errno = EINVAL;
		return NULL;
	}
	if (!data && size) {
		OPTS_SET_ERR(opts, "stack_map_bin: no data but size %zu", size);
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	/* a copy rounded up to whole words: aligned u64 access to the ips
	 * (every field of the format sits at a multiple of 8) */
	b->size = size;
	b->data = calloc(size / 8 + 1, 8);
	if (!b->data) {
		free(b);
		errno = ENOMEM;
		return NULL;
	}
	if (size)
		memcpy(b->data, data, size);
	err = smap_bin_parse(b, opts);
	if (err) {
		ustack_stackmap_bin__free(b);
		errno = -err;
		return NULL;
	}
	return b;
}

USTACK_API void ustack_stackmap_bin__free(struct ustack_stackmap_bin *bin)
{
	if (!bin)
		return;
	free(bin->data);
	free(bin->offsets);
	free(bin->by_id);
	free(bin);
}

USTACK_API size_t ustack_stackmap_bin__nr_stacks(const struct ustack_stackmap_bin *bin)
{
	return bin ? bin->nr : 0;
}

USTACK_API int ustack_stackmap_bin__swapped(const struct ustack_stackmap_bin *bin)
{
	return bin ? bin->swapped : 0;
}

USTACK_API int ustack_stackmap_bin__entry(const struct ustack_stackmap_bin *bin,
					  size_t idx,
					  struct ustack_stackmap_bin_entry *e)
{
	size_t off;

	if (!bin || !e)
		return -EINVAL;
	if (idx >= bin->nr)
		return -ENOENT;
	off = bin->offsets[idx];
	e->stack_id = smap_rd32(bin, off);
	e->nr = smap_rd32(bin, off + 4);
	e->ref_count = smap_rd32(bin, off + 8);
	e->reserved = smap_rd32(bin, off + 12);
	e->offset = off;
	e->ips = bin->data + (off + USTACK_STACKMAP_BIN_ENTRY_SIZE) / 8;
	return 0;
}

USTACK_API int ustack_stackmap_bin__find(const struct ustack_stackmap_bin *bin,
					 uint32_t stack_id,
					 struct ustack_stackmap_bin_entry *e)
{
	size_t lo = 0, hi;

	if (!bin || !e)
		return -EINVAL;
	hi = bin->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (bin->by_id[mid].stack_id < stack_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= bin->nr || bin->by_id[lo].stack_id != stack_id)
		return -ENOENT;
	return ustack_stackmap_bin__entry(bin, bin->by_id[lo].entry, e);
}
