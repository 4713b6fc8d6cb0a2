// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the perf JIT map parser (src/symbolize/perfmap.c) over
 * arbitrary text. Whatever the input:
 *  - no crash; the bytes consumed end just after a '\n' (a partial last
 *    line is left for later);
 *  - the entries are exactly the well-formed lines, in file order, as a
 *    reference parser written here from the format (perfmap.h) reads them:
 *    same start, same size, the same name or, for one longer than
 *    USTACK_PERFMAP_MAX_NAME, a prefix of it (not ending inside a UTF-8
 *    sequence) followed by USTACK_PERFMAP_CUT_MARK, never longer than the
 *    bound; the malformed lines counted as the reference counts them;
 *  - every entry is non-empty and inside the address space;
 *  - parsing the text in two pieces, resuming where the first call
 *    stopped (a reader of a growing file), gives the same entries;
 *  - the lookup agrees with a linear scan implementing the overlap rule
 *    (the newest covering entry wins) at the edges of every entry.
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

/* ---- the reference: the format of perfmap.h, read the plain way ---------- */

static int blank(uint8_t c)
{
	return c == ' ' || c == '\t';
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* [0x]HEX of at most 64 significant bits at p[*i]; 0 or -1 */
static int ref_hex(const uint8_t *p, size_t n, size_t *i, uint64_t *v)
{
	size_t k = *i, digits = 0;
	unsigned __int128 x = 0;

	if (n - k >= 2 && p[k] == '0' && (p[k + 1] == 'x' || p[k + 1] == 'X'))
		k += 2;
	for (; k < n && hexval(p[k]) >= 0; k++, digits++) {
		x = x * 16 + (unsigned)hexval(p[k]);
		if (x >> 64)
			return -1;
	}
	if (!digits)
		return -1;
	*i = k;
	*v = (uint64_t)x;
	return 0;
}

/* The line p[0..n) (no '\n'): 1 and the fields if well-formed, 0 if blank,
 * -1 if malformed */
static int ref_line(const uint8_t *p, size_t n, uint64_t *start, uint64_t *sz, size_t *name_at)
{
	size_t i = 0, j;

	if (!n || (n == 1 && p[0] == '\r'))
		return 0;
	if (memchr(p, 0, n))
		return -1;
	if (p[n - 1] == '\r')
		n--;
	while (i < n && blank(p[i]))
		i++;
	if (ref_hex(p, n, &i, start))
		return -1;
	for (j = i; j < n && blank(p[j]); j++)
		;
	if (j == i)
		return -1;
	i = j;
	if (ref_hex(p, n, &i, sz))
		return -1;
	for (j = i; j < n && blank(p[j]); j++)
		;
	if (j == i || j == n || !*sz || *start + *sz < *start)
		return -1;
	*name_at = j;
	return 1;
}

/* @kept is @name (its text in the line, @len bytes) as the map keeps it:
 * whole, or cut and marked: its first MAX - 3 bytes, less the 0-3 before a
 * UTF-8 continuation byte (the bytes from the cut to MAX - 3 all are
 * continuation bytes; the one at the cut is not, unless 3 went) */
static int same_name(const char *kept, const uint8_t *name, size_t len)
{
	size_t k = strlen(kept), mark = strlen(USTACK_PERFMAP_CUT_MARK);

	if (len <= USTACK_PERFMAP_MAX_NAME)
		return k == len && !memcmp(kept, name, len);
	/* cut: a prefix, 1-3 bytes shorter only to end before a UTF-8
	 * continuation byte, then the mark */
	if (k > USTACK_PERFMAP_MAX_NAME || k < USTACK_PERFMAP_MAX_NAME - 3 ||
	    strcmp(kept + k - mark, USTACK_PERFMAP_CUT_MARK) || memcmp(kept, name, k - mark))
		return 0;
	for (size_t c = k - mark + 1; c <= USTACK_PERFMAP_MAX_NAME - mark; c++)
		if ((name[c] & 0xc0) != 0x80)
			return 0;
	return k == USTACK_PERFMAP_MAX_NAME - 3 || (name[k - mark] & 0xc0) != 0x80;
}

static void check_reference(const struct ustack_perfmap *m, const uint8_t *data, size_t size)
{
	size_t at = 0, idx = 0;
	unsigned long bad = 0;

	for (;;) {
		const uint8_t *nl = memchr(data + at, '\n', size - at);
		uint64_t start = 0, sz = 0;
		size_t name_at = 0, n;
		int r;

		if (!nl)
			break;
		n = (size_t)(nl - (data + at));
		r = ref_line(data + at, n, &start, &sz, &name_at);
		if (r < 0)
			bad++;
		if (r > 0) {
			const struct ustack_perfmap_entry *e = ustack_perfmap__entry(m, idx++);
			size_t len = n - name_at - (data[at + n - 1] == '\r');

			if (!e || e->start != start || e->size != sz ||
			    !same_name(e->name, data + at + name_at, len))
				abort();
		}
		at += n + 1;
	}
	if (idx != ustack_perfmap__count(m) || bad != ustack_perfmap__bad_lines(m))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ustack_perfmap *m, *m2;
	long used, used1;
	size_t n, cut;

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
		    strlen(e->name) > USTACK_PERFMAP_MAX_NAME || strchr(e->name, '\n'))
			abort();
	}
	check_reference(m, data, size);

	/* in two pieces: the first call's leftover is given again with the
	 * rest, as a reader of a growing file does */
	cut = size ? (size_t)data[0] * 7919u % (size + 1) : 0;
	m2 = ustack_perfmap__new();
	if (m2) {
		char *buf = malloc(size + 1);

		used1 = ustack_perfmap__parse(m2, (const char *)data, cut, "fuzz.map", 1);
		if (used1 < 0 || !buf)
			abort();
		memcpy(buf, data + used1, size - (size_t)used1);
		if (ustack_perfmap__parse(m2, buf, size - (size_t)used1, "fuzz.map", 2) + used1 != used)
			abort();
		free(buf);
		if (ustack_perfmap__count(m2) != n || ustack_perfmap__bad_lines(m2) !=
						      ustack_perfmap__bad_lines(m))
			abort();
		for (size_t i = 0; i < n; i++) {
			const struct ustack_perfmap_entry *a = ustack_perfmap__entry(m, i);
			const struct ustack_perfmap_entry *b = ustack_perfmap__entry(m2, i);

			if (a->start != b->start || a->size != b->size || strcmp(a->name, b->name))
				abort();
		}
		ustack_perfmap__free(m2);
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
