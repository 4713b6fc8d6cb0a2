// SPDX-License-Identifier: MIT
/* The u64 hash map and record names shared by the trace writer and
 * reader. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

static inline size_t map_hash(uint64_t k, size_t mask)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k & mask;
}

int trace_map_get(const struct trace_map *m, uint64_t key, uint64_t *val)
{
	size_t mask, i;

	if (!m->cap)
		return 0;
	mask = m->cap - 1;
	for (i = map_hash(key, mask);; i = (i + 1) & mask) {
		if (m->gen[i] != m->cur_gen)
			return 0;
		if (m->keys[i] == key) {
			if (val)
				*val = m->vals[i];
			return 1;
		}
	}
}

static int map_grow(struct trace_map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	struct trace_map nm = { 0 };

	nm.keys = malloc(ncap * sizeof(*nm.keys));
	nm.vals = malloc(ncap * sizeof(*nm.vals));
	nm.gen = calloc(ncap, sizeof(*nm.gen));
	if (!nm.keys || !nm.vals || !nm.gen) {
		trace_map_free(&nm);
		return -ENOMEM;
	}
	nm.cap = ncap;
	nm.cur_gen = 1;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->gen[i] != m->cur_gen)
			continue;
		size_t j = map_hash(m->keys[i], ncap - 1);

		while (nm.gen[j] == nm.cur_gen)
			j = (j + 1) & (ncap - 1);
		nm.gen[j] = nm.cur_gen;
		nm.keys[j] = m->keys[i];
		nm.vals[j] = m->vals[i];
		nm.n++;
	}
	trace_map_free(m);
	*m = nm;
	return 0;
}

int trace_map_put(struct trace_map *m, uint64_t key, uint64_t val)
{
	size_t mask, i;

	/* Load factor <= 1/2 keeps probes short and guarantees a free slot. */
	if ((m->n + 1) * 2 > m->cap) {
		int err = map_grow(m);

		if (err)
			return err;
	}
	mask = m->cap - 1;
	for (i = map_hash(key, mask);; i = (i + 1) & mask) {
		if (m->gen[i] != m->cur_gen) {
			m->gen[i] = m->cur_gen;
			m->keys[i] = key;
			m->vals[i] = val;
			m->n++;
			return 0;
		}
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return 0;
		}
	}
}

void trace_map_clear(struct trace_map *m)
{
	if (!m->cap)
		return;
	m->n = 0;
	if (++m->cur_gen == 0) {
		/* wrapped: stale stamps could look current again */
		memset(m->gen, 0, m->cap * sizeof(*m->gen));
		m->cur_gen = 1;
	}
}

void trace_map_free(struct trace_map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->gen);
	memset(m, 0, sizeof(*m));
}

const char *ustack_trace_record_name(unsigned int type)
{
	static const char *const names[] = {
		[USTACK_TRACE_HEADER] = "HEADER",
		[USTACK_TRACE_EVENT_DESC] = "EVENT_DESC",
		[USTACK_TRACE_THREAD] = "THREAD",
		[USTACK_TRACE_EVENT] = "EVENT",
		[USTACK_TRACE_USER_STACK] = "USER_STACK",
		[USTACK_TRACE_STACK] = "STACK",
		[USTACK_TRACE_FILE_MAP] = "FILE_MAP",
		[USTACK_TRACE_LOST] = "LOST",
		[USTACK_TRACE_KSYM] = "KSYM",
		[USTACK_TRACE_END] = "END",
	};

	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "unknown";
}
