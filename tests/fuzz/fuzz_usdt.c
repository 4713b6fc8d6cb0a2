// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the probe resolver's parsers of untrusted bytes
 * (src/probe/): the first byte picks one, the rest is its input.
 *   0  stapsdt notes of a .note.stapsdt section (ustack_usdt_notes_walk),
 *      each note's argument spec parsed as the resolver does
 *   1  a USDT argument spec (ustack_usdt_parse_args)
 *   2  an ld.so.cache file (ustack_ldcache_walk)
 *   3  a probe name (ustack_probe_parse)
 * Whatever the input: no crash, no read outside it (ASan), and what comes
 * back holds: strings end inside the input, argument sizes are 1, 2, 4 or
 * 8 (either sign), registers are 64-bit slots of struct pt_regs other
 * than rip, at most the room given; a refusal always says why.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe.h"
#include "probe/probe_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct span { const uint8_t *p; size_t n; };

static void inside(const struct span *s, const char *str)
{
	const uint8_t *u = (const uint8_t *)str;

	if (u < s->p || u >= s->p + s->n || !memchr(u, 0, (size_t)(s->p + s->n - u)))
		abort();
}

static void check_args(const char *spec, unsigned int max)
{
	struct ustack_usdt_arg a[USTACK_USDT_MAX_ARGS];
	char err[128] = "";
	int n = ustack_usdt_parse_args(spec, a, max, err, sizeof(err));

	if (n < 0) {
		if (n != -EBADMSG || !err[0])
			abort();
		return;
	}
	if ((unsigned int)n > max)
		abort();
	for (int i = 0; i < n; i++) {
		int sz = a[i].size < 0 ? -a[i].size : a[i].size;

		if (sz != 1 && sz != 2 && sz != 4 && sz != 8)
			abort();
		if (a[i].kind == USTACK_USDT_ARG_CONST)
			continue;
		if ((a[i].kind != USTACK_USDT_ARG_REG && a[i].kind != USTACK_USDT_ARG_DEREF) ||
		    a[i].reg % 8 || a[i].reg > 152 || a[i].reg == 128 || a[i].reg == 120)
			abort();
	}
}

static int note_cb(void *ctx, const struct ustack_usdt_note *n)
{
	const struct span *s = ctx;

	inside(s, n->provider);
	inside(s, n->name);
	if (n->args[0])
		inside(s, n->args);
	if (!n->provider[0] || !n->name[0] || n->off >= s->n)
		abort();
	check_args(n->args, USTACK_USDT_MAX_ARGS);
	return 0;
}

static int lc_cb(void *ctx, const char *k, const char *v)
{
	inside(ctx, k);
	inside(ctx, v);
	return 0;
}

static void check_spec(const char *s)
{
	struct ustack_probe_spec sp;
	char err[256] = "";
	int r = ustack_probe_parse(s, &sp, err, sizeof(err));

	if (r < 0 && (r != -EINVAL || !err[0]))
		abort();
	if (r == 0 && (!strncmp(s, "uprobe:", 7) || !strncmp(s, "usdt:", 5)))
		abort();
	if (r != 1)
		return;
	if (!sp.path[0] || strchr(sp.path, ':') || memchr(sp.path, 0, sizeof(sp.path)) == NULL)
		abort();
	if (sp.kind == USTACK_PROBE_USDT ? !sp.provider[0] || !sp.name[0]
					  : !sp.symbol[0] && (sp.kind != USTACK_PROBE_UPROBE || sp.offset))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct span s;
	uint64_t bad;
	char *str;

	if (!size)
		return 0;
	s.n = size - 1;
	/* a copy of exactly the input: ASan sees any read past it */
	s.p = malloc(s.n ? s.n : 1);
	if (!s.p)
		return 0;
	memcpy((void *)s.p, data + 1, s.n);
	switch (data[0] % 4) {
	case 0:
		ustack_usdt_notes_walk(s.p, s.n, note_cb, &s, &bad);
		break;
	case 2:
		ustack_ldcache_walk(s.p, s.n, lc_cb, &s);
		break;
	default:
		str = malloc(s.n + 1);
		if (!str)
			break;
		memcpy(str, s.p, s.n);
		str[s.n] = 0;
		if (data[0] % 4 == 1)
			check_args(str, 1 + data[0] / 4 % USTACK_USDT_MAX_ARGS);
		else
			check_spec(str);
		free(str);
	}
	free((void *)s.p);
	return 0;
}
