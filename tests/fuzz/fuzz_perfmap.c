// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the perf JIT map parser (src/symbolize/perfmap.c) over
 * arbitrary text. Whatever the input: no crash; the bytes consumed end just
 * after a '\n' (a partial last line is left for later); every entry kept is
 * non-empty and inside the address space; and the lookup agrees with a
 * linear scan implementing the overlap rule (the newest covering entry
 * wins) at the edges of every entry.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/perfmap.h>
#include <ustack/ustack.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int quiet(enum ustack_print_level l, const char *fmt, va_list ap)
{
	(void)l; (void)fmt; (void)ap;
	return 0;
}

static const struct ustack_perfmap_entry *scan(const struct ustack_perfmap *m, uint64_t a)
{
	const struct ustack_perfmap_entry *best = NULL;

	for (size_t i = 0; i < ustack_perfmap__count(m); i++) {
		const struct ustack_perfmap_entry *e = ustack_perfmap__entry(m, i);

		if (a - e->start < e->size)
			best = e;
	}
	return best;
}

static void check_at(struct ustack_perfmap *m, uint64_t a)
{
	if (ustack_perfmap__lookup(m, a) != scan(m, a))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ustack_perfmap *m;
	long used;
	size_t n;

	ustack_set_print(quiet);
	m = ustack_perfmap__new();
	if (!m)
		return 0;
	used = ustack_perfmap__parse(m, (const char *)data, size, "fuzz.map", 1);
	if (used < 0 || (size_t)used > size || (used > 0 && data[used - 1] != '\n') ||
	    memchr(data + used, '\n', size - (size_t)used))
		abort();
	n = ustack_perfmap__count(m);
	for (size_t i = 0; i < n; i++) {
		const struct ustack_perfmap_entry *e = ustack_perfmap__entry(m, i);

		if (!e->size || e->start + e->size < e->start || !e->name[0] ||
		    strlen(e->name) > USTACK_PERFMAP_MAX_NAME)
			abort();
	}
	/* the linear scan is quadratic overall: only for small maps */
	if (n <= 256) {
		for (size_t i = 0; i < n; i++) {
			const struct ustack_perfmap_entry *e = ustack_perfmap__entry(m, i);

			check_at(m, e->start);
			check_at(m, e->start + e->size - 1);
			check_at(m, e->start + e->size);
			check_at(m, e->start - 1);
		}
		check_at(m, 0);
		check_at(m, UINT64_MAX);
	}
	ustack_perfmap__free(m);
	return 0;
}
