// SPDX-License-Identifier: MIT
/*
 * The stapsdt notes of .note.stapsdt (<sys/sdt.h>): owner "stapsdt", type
 * 3, a descriptor of three 64-bit addresses (the probe's pc, the
 * link-time address of .stapsdt.base, the semaphore or 0) followed by
 * three strings: provider, name, argument spec. The bytes come from a
 * file anyone may have written: each length is checked against the end.
 */
#include <errno.h>
#include <string.h>

#include "common/compiler.h"
#include "probe/probe_internal.h"

#define NT_STAPSDT 3

/* the string at desc[*at..dsz) if it ends inside (*at then past its NUL),
 * else NULL */
static const char *next_str(const uint8_t *desc, uint64_t dsz, uint64_t *at)
{
	const uint8_t *s = desc + *at, *nul;

	if (*at >= dsz)
		return NULL;
	nul = memchr(s, 0, dsz - *at);
	if (!nul)
		return NULL;
	*at = (uint64_t)(nul - desc) + 1;
	return (const char *)s;
}

static int note_decode(const uint8_t *desc, uint64_t dsz, struct ustack_usdt_note *n)
{
	uint64_t at = 24;

	if (dsz < 24)
		return -1;
	n->pc = ld_u64(desc);
	n->base = ld_u64(desc + 8);
	n->semaphore = ld_u64(desc + 16);
	n->provider = next_str(desc, dsz, &at);
	n->name = n->provider ? next_str(desc, dsz, &at) : NULL;
	if (!n->name || !n->provider[0] || !n->name[0])
		return -1;
	/* the argument string may be missing (a probe without arguments
	 * written by an old sdt.h): no arguments, not a bad note */
	n->args = next_str(desc, dsz, &at);
	if (!n->args)
		n->args = "";
	return 0;
}

int ustack_usdt_notes_walk(const uint8_t *p, size_t size,
			   int (*fn)(void *ctx, const struct ustack_usdt_note *n), void *ctx,
			   uint64_t *bad)
{
	uint64_t off = 0;

	while (off < size) {
		uint32_t nsz, dsz, type;
		uint64_t name_off, desc_off;
		struct ustack_usdt_note n;
		int ret;

		*bad = off;
		if (!in_bounds(off, 12, size))
			return -EBADMSG;
		nsz = ld_u32(p + off);
		dsz = ld_u32(p + off + 4);
		type = ld_u32(p + off + 8);
		name_off = off + 12;
		desc_off = name_off + (((uint64_t)nsz + 3) & ~3ull);
		if (!in_bounds(name_off, nsz, size) || !in_bounds(desc_off, dsz, size))
			return -EBADMSG;
		if (type == NT_STAPSDT && nsz == 8 && !memcmp(p + name_off, "stapsdt", 8)) {
			memset(&n, 0, sizeof(n));
			n.off = off;
			if (note_decode(p + desc_off, dsz, &n))
				return -EBADMSG;
			ret = fn(ctx, &n);
			if (ret)
				return ret;
		}
		off = desc_off + (((uint64_t)dsz + 3) & ~3ull);
	}
	return 0;
}
