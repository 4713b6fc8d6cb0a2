// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the kernel symbol table's two untrusted inputs
 * (src/perf/kallsyms.c). Each input is parsed both ways:
 *  - as /proc/kallsyms text; the table it gives is then written as a cache
 *    image and loaded back, which must succeed and give the same table;
 *  - as a cache file image whose key is the one it carries (bytes 8..15),
 *    so the fuzzer gets past the key check.
 * Invariants of every table loaded: sorted by address, strings readable,
 * and ustack_kallsyms__find() consistent with the entries: a symbol's own
 * address finds the last symbol at that address, its size reaches the next
 * address when that is in the same image (kernel or module) and never
 * passes it, and the byte before it finds the symbol before if that one
 * reaches so far, nothing otherwise. A symbol without a name (the cache's
 * BPF programs and ftrace trampolines, or an empty name in the text) is
 * found by nothing. The cache image gives the text's table, with the names
 * of BPF programs and ftrace trampolines emptied.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "perf/kallsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_table(const struct ustack_kallsyms *k)
{
	size_t n = ustack_kallsyms__count(k);
	uint64_t prev = 0, addr, a2, s2, junk;
	const char *name, *mod, *n2, *m2;
	int prev_unnamed = 0;

	if (!ustack_kallsyms__entry(k, n, &addr, &name, &mod))
		abort();
	if (!n) {
		if (ustack_kallsyms__find(k, 0, &a2, &s2, &n2, &m2) != -ENOENT ||
		    ustack_kallsyms__find(k, UINT64_MAX, &a2, &s2, &n2, &m2) != -ENOENT)
			abort();
		return;
	}
	for (size_t i = 0; i < n; i++) {
		size_t last = i, next;

		if (ustack_kallsyms__entry(k, i, &addr, &name, &mod))
			abort();
		if (i && addr < prev)
			abort();
		junk = strlen(name) + (mod ? strlen(mod) : 0);
		(void)junk;
		/* the last entry at this address, and the next address */
		while (last + 1 < n && !ustack_kallsyms__entry(k, last + 1, &a2, &n2, &m2) &&
		       a2 == addr)
			last++;
		next = last + 1;
		ustack_kallsyms__entry(k, last, &a2, &name, &mod);
		if (!*name) {
			if (ustack_kallsyms__find(k, addr, &a2, &s2, &n2, &m2) != -ENOENT ||
			    (addr < UINT64_MAX &&
			     ustack_kallsyms__find(k, addr + 1, &a2, &s2, &n2, &m2) == 0 && a2 == addr))
				abort();
			prev = addr;
			prev_unnamed = 1;
			i = last;
			continue;
		}
		if (ustack_kallsyms__find(k, addr, &a2, &s2, &n2, &m2) || a2 != addr)
			abort();
		if (strcmp(name, n2) || (mod == NULL) != (m2 == NULL) || (mod && strcmp(mod, m2)))
			abort();
		if (next < n) {
			uint64_t na, s3;
			const char *x, *y, *nm;

			ustack_kallsyms__entry(k, next, &na, &x, &nm);
			if (s2 > na - addr || ustack_kallsyms__find(k, addr + s2 - 1, &a2, &s3, &x, &y) ||
			    a2 != addr)
				abort();
			if ((mod == NULL) == (nm == NULL) && (!mod || !strcmp(mod, nm)) ?
				    s2 != na - addr :
				    (s2 == 0 || s2 > 8192))
				abort();
		} else if (s2 == 0 || s2 > 8192) {
			abort();
		}
		/* the byte before the first symbol at this address */
		if (i == 0 || prev != addr) {
			uint64_t ps = 0;
			int r;

			if (i && !prev_unnamed && ustack_kallsyms__find(k, prev, &a2, &ps, &n2, &m2))
				abort();
			r = addr ? ustack_kallsyms__find(k, addr - 1, &a2, &s2, &n2, &m2) : -ENOENT;
			if (i == 0 || prev_unnamed ? r != -ENOENT :
			    (addr - 1 - prev < ps ? r || a2 != prev : r != -ENOENT))
				abort();
		}
		prev = addr;
		prev_unnamed = 0;
		i = last;
	}
}

static void same_table(const struct ustack_kallsyms *a, const struct ustack_kallsyms *b)
{
	size_t n = ustack_kallsyms__count(a);

	if (ustack_kallsyms__count(b) != n)
		abort();
	for (size_t i = 0; i < n; i++) {
		uint64_t x, y;
		const char *n1, *n2, *m1, *m2;

		int dynamic;

		if (ustack_kallsyms__entry(a, i, &x, &n1, &m1) ||
		    ustack_kallsyms__entry(b, i, &y, &n2, &m2) || x != y ||
		    (m1 == NULL) != (m2 == NULL) || (m1 && strcmp(m1, m2)))
			abort();
		dynamic = m1 && (!strcmp(m1, "bpf") || !strcmp(m1, "__builtin__ftrace"));
		if (dynamic ? *n2 : strcmp(n1, n2) != 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ustack_kallsyms *k, *c;
	uint64_t key = 0x5eed;
	void *img;
	size_t len;

	k = ustack_kallsyms__from_text((const char *)data, size);
	if (k) {
		check_table(k);
		if (!ustack_kallsyms__cache_image(k, key, &img, &len)) {
			c = ustack_kallsyms__from_cache(img, len, key);
			if (!c)
				abort(); /* what we write must read back */
			same_table(k, c);
			ustack_kallsyms__free(c);
			if (ustack_kallsyms__from_cache(img, len, key + 1))
				abort(); /* another boot's cache */
			free(img);
		}
		ustack_kallsyms__free(k);
	}
	if (size >= 16)
		key = ld_u64(data + 8);
	k = ustack_kallsyms__from_cache(data, size, key);
	if (k) {
		check_table(k);
		ustack_kallsyms__free(k);
	} else if (errno != EBADMSG && errno != ENOMEM) {
		abort();
	}
	return 0;
}
