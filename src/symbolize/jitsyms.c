// SPDX-License-Identifier: MIT
/*
 * Per-process JIT symbol tables (include/ustack/perfmap.h): one perf map per
 * pid, filled from a trace's JITSYM records.
 */
#include <errno.h>
#include <stdlib.h>

#include <ustack/hashmap.h>
#include <ustack/perfmap.h>
#include <ustack/trace.h>

#include "trace/trace.h"

struct ustack_jitsyms {
	struct ustack_u64map *idx; /* pid -> index into maps */
	struct ustack_perfmap **maps;
	size_t n, cap;
};

struct ustack_jitsyms *ustack_jitsyms__new(void)
{
	struct ustack_jitsyms *t = calloc(1, sizeof(*t));

	if (!t || !(t->idx = ustack_u64map__new())) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

void ustack_jitsyms__free(struct ustack_jitsyms *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		ustack_perfmap__free(t->maps[i]);
	free(t->maps);
	ustack_u64map__free(t->idx);
	free(t);
}

int ustack_jitsyms__add(struct ustack_jitsyms *t, uint32_t pid, uint64_t start, uint64_t size,
			const char *name)
{
	uint64_t i;

	if (!t)
		return -EINVAL;
	if (!ustack_u64map__get(t->idx, pid, &i)) {
		if (t->n == t->cap) {
			size_t ncap = t->cap ? 2 * t->cap : 8;
			void *np = realloc(t->maps, ncap * sizeof(*t->maps));

			if (!np)
				return -ENOMEM;
			t->maps = np;
			t->cap = ncap;
		}
		if (!(t->maps[t->n] = ustack_perfmap__new()))
			return -ENOMEM;
		if (ustack_u64map__put(t->idx, pid, t->n)) {
			ustack_perfmap__free(t->maps[t->n]);
			return -ENOMEM;
		}
		i = t->n++;
	}
	return ustack_perfmap__add(t->maps[i], start, size, name);
}

uint32_t ustack_jitsyms__map_index(const struct ustack_jitsyms *t, uint32_t pid)
{
	uint64_t i;

	if (!t || !ustack_u64map__get(t->idx, pid, &i))
		return 0;
	return (uint32_t)i + 1;
}

const struct ustack_perfmap_entry *ustack_jitsyms__lookup(struct ustack_jitsyms *t, uint32_t pid,
							  uint64_t addr)
{
	uint32_t i = ustack_jitsyms__map_index(t, pid);

	return i ? ustack_perfmap__lookup(t->maps[i - 1], addr) : NULL;
}

long ustack_jitsyms__load_trace(struct ustack_jitsyms *t, const char *path)
{
	struct ustack_trace_reader *r = ustack_trace_reader__open(path, NULL);
	struct ustack_trace_record rec;
	long added = 0;
	int ret;

	if (!r)
		return -errno;
	/* the report's own pass checks the rest */
	ustack_trace_reader__skim(r, 1u << USTACK_TRACE_JITSYM);
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		if (rec.type != USTACK_TRACE_JITSYM)
			continue;
		ret = ustack_jitsyms__add(t, rec.jitsym.pid, rec.jitsym.addr, rec.jitsym.size,
					  rec.jitsym.name);
		if (ret == -ENOMEM) {
			ustack_trace_reader__close(r);
			return ret;
		}
		added += !ret;
	}
	ustack_trace_reader__close(r);
	return added;
}
