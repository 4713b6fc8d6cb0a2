// SPDX-License-Identifier: MIT
/*
 * Live allocations: per (pid, address) only the latest event at or before
 * the views' time is kept. An allocation is live exactly when it is that
 * latest event: any later free or alloc of its address ended it. Keeping
 * the latest by time makes the result the same in any file order, and the
 * memory one slot per address seen (malloc reuses addresses), not one per
 * event.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/trace.h>
#include "cli/report_alloc.h"

struct alloc_slot {
	uint64_t addr, time;
	uint32_t pid;
	uint8_t used, is_free;
};

struct report_alloc {
	struct alloc_slot *slots;
	size_t cap, used; /* cap: a power of two */
	uint64_t at;      /* the views' time (absolute ns; UINT64_MAX: the end) */
	struct report_alloc_stats st;
};

int report_view_parse(const char *s, enum report_view *v)
{
	static const char *const names[] = { "alloc_space", "alloc_objects", "inuse_space",
					     "inuse_objects" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*v = (enum report_view)(i + 1);
			return 0;
		}
	return -EINVAL;
}

const char *report_view_name(enum report_view v)
{
	switch (v) {
	case REPORT_VIEW_ALLOC_SPACE: return "alloc_space";
	case REPORT_VIEW_ALLOC_OBJECTS: return "alloc_objects";
	case REPORT_VIEW_INUSE_OBJECTS: return "inuse_objects";
	default: return "inuse_space";
	}
}

int report_alloc_args(const struct ustack_trace_event *e, uint64_t *size, uint64_t *addr)
{
	if (!(e->flags & USTACK_TRACE_EVENT_HAS_ARGS) || e->nr_args < 2 ||
	    e->nr_args > USTACK_TRACE_MAX_ARGS)
		return -EINVAL;
	*size = e->args[0];
	*addr = e->args[1];
	return 0;
}

double report_alloc_objects(const struct ustack_trace_event *e)
{
	uint64_t size, addr;

	if (report_alloc_args(e, &size, &addr) || !size)
		return 0;
	return (double)e->value / (double)size;
}

/* digits[.digits] seconds into ns, exactly (no double rounding) */
static int parse_secs(const char *s, uint64_t *ns)
{
	uint64_t sec = 0, frac = 0, scale = 1000000000ull;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (sec > (UINT64_MAX / 1000000000ull - 9) / 10)
			return -EINVAL;
		sec = sec * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (scale > 1) {
				scale /= 10;
				frac += (uint64_t)(*p - '0') * scale;
			}
	}
	if (*p)
		return -EINVAL;
	*ns = sec * 1000000000ull + frac;
	return 0;
}

int report_at_parse(const char *s, struct report_at *at)
{
	int abs = *s == '@';

	if (parse_secs(s + abs, &at->ns))
		return -EINVAL;
	at->set = 1;
	at->absolute = abs;
	return 0;
}

struct report_alloc *report_alloc__new(void)
{
	struct report_alloc *a = calloc(1, sizeof(*a));

	if (a)
		a->at = UINT64_MAX;
	return a;
}

void report_alloc__free(struct report_alloc *a)
{
	if (!a)
		return;
	free(a->slots);
	free(a);
}

static size_t slot_hash(uint32_t pid, uint64_t addr)
{
	uint64_t h = (addr ^ ((uint64_t)pid << 32 | pid)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h ^ h >> 29);
}

static struct alloc_slot *slot_find(const struct report_alloc *a, uint32_t pid, uint64_t addr)
{
	size_t mask = a->cap - 1;

	if (!a->cap)
		return NULL;
	for (size_t i = slot_hash(pid, addr) & mask;; i = (i + 1) & mask) {
		struct alloc_slot *s = &a->slots[i];

		if (!s->used || (s->pid == pid && s->addr == addr))
			return s;
	}
}

static int grow(struct report_alloc *a)
{
	size_t ncap = a->cap ? a->cap * 2 : 1024, old = a->cap;
	struct alloc_slot *os = a->slots;

	if (ncap > SIZE_MAX / sizeof(*os) || !(a->slots = calloc(ncap, sizeof(*os)))) {
		a->slots = os;
		return -ENOMEM;
	}
	a->cap = ncap;
	for (size_t i = 0; i < old; i++)
		if (os[i].used)
			*slot_find(a, os[i].pid, os[i].addr) = os[i];
	free(os);
	return 0;
}

/* does event (@is_free, @time) come after @s's? A free at the same
 * nanosecond as an allocation ends it: a free never precedes its own
 * allocation, and an address is rarely reused within one nanosecond */
static int later(const struct alloc_slot *s, int is_free, uint64_t time)
{
	return time > s->time || (time == s->time && is_free && !s->is_free);
}

int report_alloc__add(struct report_alloc *a, int is_free, uint32_t pid, uint64_t addr,
		      uint64_t time)
{
	struct alloc_slot *s;

	if (time > a->at)
		return 0;
	is_free ? a->st.frees++ : a->st.allocs++;
	if ((a->used + 1) * 2 > a->cap && grow(a))
		return -ENOMEM;
	s = slot_find(a, pid, addr);
	if (!s->used)
		a->used++;
	else if (!later(s, is_free, time))
		return 0; /* an earlier event: something later ended it */
	*s = (struct alloc_slot){ .addr = addr, .time = time, .pid = pid, .used = 1,
				  .is_free = (uint8_t)!!is_free };
	return 0;
}

int report_alloc__live(const struct report_alloc *a, uint32_t pid, uint64_t addr, uint64_t time)
{
	const struct alloc_slot *s = slot_find(a, pid, addr);

	return s && s->used && !s->is_free && s->time == time;
}

const struct report_alloc_stats *report_alloc__stats(const struct report_alloc *a)
{
	return &a->st;
}

/* an EVENT's kind: 1 alloc, 2 free, 0 other (descriptions cached by id) */
static int event_kind(struct ustack_trace_reader *r, uint8_t *kinds, uint32_t id)
{
	struct ustack_trace_event_desc d;
	int k;

	if (id < 256 && kinds[id])
		return kinds[id] - 1;
	if (ustack_trace_reader__event_desc(r, id, &d))
		return 0; /* not described (yet): not counted as either */
	k = d.type == USTACK_TRACE_EV_ALLOC ? 1 : d.type == USTACK_TRACE_EV_FREE ? 2 : 0;
	if (id < 256)
		kinds[id] = (uint8_t)(k + 1);
	return k;
}

/* The smallest EVENT time of @path (the start a relative --at counts from) */
static int first_time(const char *path, uint64_t *t)
{
	struct ustack_trace_reader *r = ustack_trace_reader__open(path, NULL);
	struct ustack_trace_record rec;

	if (!r)
		return -errno;
	*t = UINT64_MAX;
	while (ustack_trace_reader__next(r, &rec, sizeof(rec)) == 1)
		if (rec.type == USTACK_TRACE_EVENT && rec.event.time < *t)
			*t = rec.event.time;
	ustack_trace_reader__close(r);
	if (*t == UINT64_MAX)
		*t = 0;
	return 0;
}

static int scan_event(struct report_alloc *a, const struct ustack_trace_event *e, int kind)
{
	uint64_t size, addr = e->args[0];

	if (kind == 1 ? report_alloc_args(e, &size, &addr)
		      : !(e->flags & USTACK_TRACE_EVENT_HAS_ARGS) || !e->nr_args ||
				e->nr_args > USTACK_TRACE_MAX_ARGS) {
		a->st.bad++;
		return 0;
	}
	return report_alloc__add(a, kind == 2, e->pid, addr, e->time);
}

int report_alloc__scan(struct report_alloc *a, const char *path, const struct report_at *at)
{
	struct ustack_trace_reader *r;
	struct ustack_trace_record rec;
	uint8_t kinds[256] = { 0 };
	int have = 0, ret = 0;
	uint64_t t0 = 0;

	if (at && at->set && !at->absolute && (ret = first_time(path, &t0)))
		return ret;
	a->at = at && at->set ? (at->ns > UINT64_MAX - t0 ? UINT64_MAX : t0 + at->ns) : UINT64_MAX;
	a->st.time = a->at;
	if (!(r = ustack_trace_reader__open(path, NULL)))
		return -errno;
	while (!ret && ustack_trace_reader__next(r, &rec, sizeof(rec)) == 1) {
		int k;

		if (rec.type == USTACK_TRACE_EVENT_DESC)
			have |= rec.event_desc.type == USTACK_TRACE_EV_ALLOC ||
				rec.event_desc.type == USTACK_TRACE_EV_FREE;
		if (rec.type != USTACK_TRACE_EVENT)
			continue;
		if (!have)
			break; /* every description comes before the first event */
		if ((k = event_kind(r, kinds, rec.event.event_id)))
			ret = scan_event(a, &rec.event, k);
	}
	ustack_trace_reader__close(r);
	a->st.live = 0;
	for (size_t i = 0; i < a->cap; i++)
		a->st.live += a->slots[i].used && !a->slots[i].is_free;
	if (a->st.time == UINT64_MAX)
		a->st.time = 0;
	return ret ? ret : have;
}
