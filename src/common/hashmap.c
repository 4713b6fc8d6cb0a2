// SPDX-License-Identifier: MIT
/*
 * ustack_u64map (include/ustack/hashmap.h). Slots hold key and value side
 * by side, so a probe touches one cache line. Key 0 marks an empty slot;
 * the key 0 itself lives outside the table (has_zero, zero_val).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashmap.h"

#define MIN_CAP 16u

struct u64slot {
	uint64_t key, val;
};

struct ustack_u64map {
	struct u64slot *slots;
	size_t cap;      /* power of two, or 0 before the first insertion */
	size_t n;        /* keys in slots (key 0 not counted) */
	int has_zero;
	uint64_t zero_val;
};

struct ustack_u64map *ustack_u64map__new(void)
{
	struct ustack_u64map *m = calloc(1, sizeof(*m));

	if (!m)
		errno = ENOMEM;
	return m;
}

void ustack_u64map__free(struct ustack_u64map *m)
{
	if (!m)
		return;
	free(m->slots);
	free(m);
}

static int resize(struct ustack_u64map *m, size_t ncap)
{
	struct u64slot *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->slots[i].key)
			continue;
		for (j = ustack_u64map_home(m->slots[i].key, ncap - 1); ns[j].key; j = (j + 1) & (ncap - 1))
			;
		ns[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

int ustack_u64map__reserve(struct ustack_u64map *m, size_t n)
{
	size_t ncap = m && m->cap ? m->cap : MIN_CAP;

	if (!m)
		return -EINVAL;
	if (n > SIZE_MAX / 4 / sizeof(struct u64slot))
		return -ENOMEM;
	/* at most half full: n keys need 2n slots */
	while (ncap < 2 * n)
		ncap *= 2;
	return ncap == m->cap ? 0 : resize(m, ncap);
}

/* Slot index of @key (nonzero), or of the empty slot ending its probe. */
static inline size_t find(const struct ustack_u64map *m, uint64_t key)
{
	size_t mask = m->cap - 1, i;

	for (i = ustack_u64map_home(key, mask); m->slots[i].key && m->slots[i].key != key; i = (i + 1) & mask)
		;
	return i;
}

/* The value of @key (its slot in *slot), or NULL when absent. */
static uint64_t *value_of(const struct ustack_u64map *m, uint64_t key, size_t *slot)
{
	size_t i;

	if (!key)
		return m->has_zero ? (uint64_t *)&m->zero_val : NULL;
	if (!m->cap)
		return NULL;
	i = find(m, key);
	if (!m->slots[i].key)
		return NULL;
	if (slot)
		*slot = i;
	return &m->slots[i].val;
}

int ustack_u64map__get(const struct ustack_u64map *m, uint64_t key, uint64_t *val)
{
	const uint64_t *v = m ? value_of(m, key, NULL) : NULL;

	if (v && val)
		*val = *v;
	return v != NULL;
}

uint64_t *ustack_u64map__slot(struct ustack_u64map *m, uint64_t key, int *isnew)
{
	uint64_t *v;
	size_t i;

	if (!m) {
		errno = EINVAL;
		return NULL;
	}
	if (isnew)
		*isnew = 0;
	if ((v = value_of(m, key, NULL)))
		return v;
	if (!key) {
		m->has_zero = 1;
		m->zero_val = 0;
		v = &m->zero_val;
	} else {
		/* Load factor <= 1/2 keeps probes short and guarantees an empty slot. */
		if ((m->n + 1) * 2 > m->cap && ustack_u64map__reserve(m, m->n + 1)) {
			errno = ENOMEM;
			return NULL;
		}
		i = find(m, key);
		m->slots[i].key = key;
		m->slots[i].val = 0;
		m->n++;
		v = &m->slots[i].val;
	}
	if (isnew)
		*isnew = 1;
	return v;
}

int ustack_u64map__put(struct ustack_u64map *m, uint64_t key, uint64_t val)
{
	uint64_t *v = ustack_u64map__slot(m, key, NULL);

	if (!v)
		return -errno;
	*v = val;
	return 0;
}

int ustack_u64map__delete(struct ustack_u64map *m, uint64_t key, uint64_t *val)
{
	size_t mask, i = 0, j;
	uint64_t *v = m ? value_of(m, key, &i) : NULL;

	if (!v)
		return 0;
	if (val)
		*val = *v;
	if (!key) {
		m->has_zero = 0;
		return 1;
	}
	m->slots[i].key = 0;
	m->n--;
	/* Backward shift: pull later entries of the probe run into the hole
	 * unless their home lies cyclically in (hole, j]. */
	mask = m->cap - 1;
	for (j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
		size_t home = ustack_u64map_home(m->slots[j].key, mask);

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			m->slots[j].key = 0;
			i = j;
		}
	}
	return 1;
}

void ustack_u64map__clear(struct ustack_u64map *m)
{
	size_t ncap = MIN_CAP;
	struct u64slot *ns;

	if (!m)
		return;
	/* A table far larger than what it held shrinks, so that a map
	 * cleared per chunk costs in proportion to its keys, not to the
	 * largest chunk ever seen. */
	while (ncap < 4 * m->n)
		ncap *= 2;
	if (m->cap > 4 * ncap && (ns = calloc(ncap, sizeof(*ns)))) {
		free(m->slots);
		m->slots = ns;
		m->cap = ncap;
	} else if (m->n) {
		memset(m->slots, 0, m->cap * sizeof(*m->slots));
	}
	m->n = 0;
	m->has_zero = 0;
}

size_t ustack_u64map__count(const struct ustack_u64map *m)
{
	return m ? m->n + (size_t)m->has_zero : 0;
}

int ustack_u64map__next(const struct ustack_u64map *m, size_t *iter, uint64_t *key,
			uint64_t *val)
{
	/* *iter: 0 = key 0 next, i + 1 = slot i next */
	size_t i = *iter;

	if (!m)
		return 0;
	if (i == 0) {
		*iter = i = 1;
		if (m->has_zero) {
			if (key)
				*key = 0;
			if (val)
				*val = m->zero_val;
			return 1;
		}
	}
	for (; i - 1 < m->cap; i++) {
		const struct u64slot *s = &m->slots[i - 1];

		if (s->key) {
			*iter = i + 1;
			if (key)
				*key = s->key;
			if (val)
				*val = s->val;
			return 1;
		}
	}
	*iter = i;
	return 0;
}
