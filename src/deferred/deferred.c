// SPDX-License-Identifier: MIT
/*
 * The deferred engine. Rules in docs/deferred.md; interface in deferred.h.
 *
 * State: a pool of entries (one per open kernel entry of a task, or per
 * user-mode sample waiting for delivery), a tid -> entry map (ustack_u64map,
 * reserved for max_tasks tids), an LRU list of the entries in the map
 * (oldest first: eviction and flush order), and the per-CPU cookie counters
 * and last-seen times. Everything is allocated in __new(); requests only
 * move indices around.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/hashmap.h>
#include "deferred/deferred.h"

#define NONE UINT32_MAX

enum dstate {
	D_FREE = 0,
	D_OPEN = 1,   /* kernel entry: joins later samples with the same user context */
	D_READY = 2,  /* user-mode sample: delivered at the start of the next call */
};

struct dentry {
	uint64_t cookie;
	uint64_t first_time, last_time;
	uint64_t ip, sp, bp, tag;
	uint64_t mask;          /* consumers that requested this cookie */
	uint32_t pid, tid;
	uint32_t cpu;           /* of the first request: the cookie's CPU */
	uint32_t last_cpu;
	uint32_t nr_frames, stop;
	uint32_t nr_requests;
	uint32_t state;
	uint32_t prev, next;    /* LRU (D_OPEN/D_READY) or free list */
	int err;
	struct ustack_frame *frames;
};

struct dlist {
	uint32_t head, tail, nr;
};

struct ustack_deferred {
	struct ustack_deferred_opts opts;
	struct dentry *ents;
	struct ustack_frame *frame_pool;
	struct ustack_u64map *by_tid; /* tid -> entry index of its open entry */
	uint32_t free_head;
	struct dlist lru;       /* D_OPEN entries, least recently seen first */
	struct dlist ready;     /* D_READY entries (at most one between calls) */
	uint32_t *cpu_ctr;      /* last counter used per CPU (the kernel's unwind_ctx_ctr) */
	uint64_t *cpu_time;     /* time of the last record seen per CPU */
	struct ustack_deferred_consumer *cons[USTACK_DEFERRED_MAX_CONSUMERS];
	int in_callback;
	struct ustack_deferred_stats st;
};

const char *ustack_deferred_close_name(unsigned int reason)
{
	static const char *const names[] = {
		"user-mode", "new-entry", "user-sample", "exit", "tid-reuse",
		"reorder", "lost", "evicted", "flush",
	};
	return reason < sizeof(names) / sizeof(names[0]) ? names[reason] : "unknown";
}

/* ---- the kernel's cookie ------------------------------------------------ */

/* Same recurrence as the kernel's get_cookie(): the counter only moves on
 * the first request of an entry, stays odd (so a cookie is never 0) and
 * wraps from 0xffffffff to 1 by plain u32 arithmetic. */
static uint64_t next_cookie(struct ustack_deferred *d, uint32_t cpu)
{
	uint32_t cnt = (d->cpu_ctr[cpu] + 2u) | 1u;

	d->cpu_ctr[cpu] = cnt;
	return USTACK_DEFERRED_COOKIE(cnt, cpu);
}

int ustack_deferred__set_counter(struct ustack_deferred *d, uint32_t cpu, uint32_t value)
{
	if (!d || cpu >= d->opts.nr_cpus)
		return -EINVAL;
	d->cpu_ctr[cpu] = value;
	return 0;
}

/* ---- tid map ------------------------------------------------------------ */

static struct dentry *lookup(struct ustack_deferred *d, uint32_t tid)
{
	uint64_t idx;

	return ustack_u64map__get(d->by_tid, tid, &idx) ? &d->ents[idx] : NULL;
}

/* ---- lists: open entries (LRU, oldest first) and ready entries ------ */

static void list_unlink(struct ustack_deferred *d, struct dlist *l, uint32_t idx)
{
	struct dentry *e = &d->ents[idx];

	if (e->prev != NONE)
		d->ents[e->prev].next = e->next;
	else
		l->head = e->next;
	if (e->next != NONE)
		d->ents[e->next].prev = e->prev;
	else
		l->tail = e->prev;
	e->prev = e->next = NONE;
	l->nr--;
}

static void list_append(struct ustack_deferred *d, struct dlist *l, uint32_t idx)
{
	struct dentry *e = &d->ents[idx];

	e->prev = l->tail;
	e->next = NONE;
	if (l->tail != NONE)
		d->ents[l->tail].next = idx;
	else
		l->head = idx;
	l->tail = idx;
	l->nr++;
}

/* ---- delivery ------------------------------------------------------------ */

static void run_callbacks(struct ustack_deferred *d, struct dentry *e, uint32_t reason,
			  uint64_t close_time)
{
	struct ustack_deferred_task task = { .pid = e->pid, .tid = e->tid };
	struct ustack_deferred_stack st = {
		.frames = e->err ? NULL : e->frames,
		.nr = e->err ? 0 : e->nr_frames,
		.stop = e->stop,
		.err = e->err,
		.close_reason = reason,
		.nr_requests = e->nr_requests,
		.close_time = close_time,
	};

	d->in_callback++;
	for (int i = 0; i < USTACK_DEFERRED_MAX_CONSUMERS; i++) {
		struct ustack_deferred_consumer *c;

		/* Re-read every time: a callback may cancel any consumer,
		 * which also clears its bit here. */
		if (!(e->mask & (1ull << i)) || !(c = d->cons[i]))
			continue;
		d->st.callbacks++;
		c->func(c, e->cookie, &task, e->cpu, e->first_time, &st);
	}
	d->in_callback--;
}

/* Close entry @idx: take it out of the map and list, run its callbacks,
 * free it. @err != 0 withholds the stack. */
static void close_entry(struct ustack_deferred *d, uint32_t idx, uint32_t reason,
			uint64_t close_time, int err)
{
	struct dentry *e = &d->ents[idx];

	ustack_u64map__delete(d->by_tid, e->tid, NULL);
	list_unlink(d, e->state == D_READY ? &d->ready : &d->lru, idx);
	d->st.open--;
	if (err) {
		e->err = err;
		if (err == -ENODATA)
			d->st.dropped_after_lost++;
		else if (err == -ESTALE)
			d->st.dropped_misordered++;
	}
	/* Freed only after the callbacks: nothing can reuse it meanwhile,
	 * since callbacks may not request. */
	run_callbacks(d, e, reason, close_time);
	e->state = D_FREE;
	e->next = d->free_head;
	d->free_head = idx;
}

static int same_sample(const struct dentry *e, const struct ustack_deferred_sample *s)
{
	return e->pid == s->pid && e->tid == s->tid && e->last_cpu == s->cpu &&
	       e->last_time == s->time && e->ip == s->ip && e->sp == s->sp &&
	       e->bp == s->bp && e->tag == s->tag;
}

/*
 * Deliver user-mode samples' entries: their "return to user" is right after
 * the sample, i.e. before anything that follows it. The one exception is a
 * further request for that very sample (another consumer), which must share
 * its cookie and unwind.
 */
static void deliver_ready(struct ustack_deferred *d, const struct ustack_deferred_sample *keep)
{
	uint32_t idx, next;

	for (idx = d->ready.head; idx != NONE; idx = next) {
		struct dentry *e = &d->ents[idx];

		next = e->next;
		if (!(keep && !(keep->flags & USTACK_DEFERRED_KERNEL) && same_sample(e, keep)))
			close_entry(d, idx, USTACK_DEFERRED_CLOSE_USER_SAMPLE, e->last_time, 0);
	}
}

static void note_cpu_time(struct ustack_deferred *d, uint32_t cpu, uint64_t time)
{
	if (cpu < d->opts.nr_cpus && time > d->cpu_time[cpu])
		d->cpu_time[cpu] = time;
}

/* ---- life cycle ------------------------------------------------------------ */

struct ustack_deferred *ustack_deferred__new(const struct ustack_deferred_opts *opts)
{
	struct ustack_deferred_opts o = { 0 };
	struct ustack_deferred *d;

	if (!opts || opts->sz < offsetof(struct ustack_deferred_opts, unwind_ctx)) {
		errno = EINVAL;
		return NULL;
	}
	if (opts->sz > sizeof(o)) {
		/* A newer caller: accept only if the fields we do not know are 0. */
		const unsigned char *p = (const unsigned char *)opts;

		for (size_t i = sizeof(o); i < opts->sz; i++)
			if (p[i]) {
				errno = EINVAL;
				return NULL;
			}
	}
	memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	o.sz = sizeof(o);
	if (!o.max_tasks)
		o.max_tasks = 1024;
	if (!o.max_frames)
		o.max_frames = 127;
	if (!o.nr_cpus || o.nr_cpus == UINT32_MAX || !o.unwind ||
	    o.max_tasks > (1u << 24) || o.max_frames > (1u << 16)) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->opts = o;
	d->ents = calloc(o.max_tasks, sizeof(*d->ents));
	d->frame_pool = calloc((size_t)o.max_tasks * o.max_frames, sizeof(*d->frame_pool));
	d->by_tid = ustack_u64map__new();
	d->cpu_ctr = calloc(o.nr_cpus, sizeof(*d->cpu_ctr));
	d->cpu_time = calloc(o.nr_cpus, sizeof(*d->cpu_time));
	if (!d->ents || !d->frame_pool || !d->by_tid || !d->cpu_ctr || !d->cpu_time ||
	    ustack_u64map__reserve(d->by_tid, o.max_tasks)) {
		ustack_deferred__free(d);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < o.max_tasks; i++) {
		d->ents[i].frames = d->frame_pool + (size_t)i * o.max_frames;
		d->ents[i].prev = NONE;
		d->ents[i].next = i + 1 < o.max_tasks ? i + 1 : NONE;
	}
	d->free_head = 0;
	d->lru.head = d->lru.tail = NONE;
	d->ready.head = d->ready.tail = NONE;
	return d;
}

void ustack_deferred__free(struct ustack_deferred *d)
{
	if (!d)
		return;
	for (int i = 0; i < USTACK_DEFERRED_MAX_CONSUMERS; i++)
		if (d->cons[i])
			d->cons[i]->idx = -1;
	free(d->ents);
	free(d->frame_pool);
	ustack_u64map__free(d->by_tid);
	free(d->cpu_ctr);
	free(d->cpu_time);
	free(d);
}

/* ---- consumers ------------------------------------------------------------- */

static int registered(const struct ustack_deferred *d, const struct ustack_deferred_consumer *c)
{
	return c->idx >= 0 && c->idx < USTACK_DEFERRED_MAX_CONSUMERS && d->cons[c->idx] == c;
}

int ustack_deferred__init_consumer(struct ustack_deferred *d, struct ustack_deferred_consumer *c,
				   ustack_deferred_cb_t func, void *ctx)
{
	if (!d || !c || !func)
		return -EINVAL;
	for (int i = 0; i < USTACK_DEFERRED_MAX_CONSUMERS; i++)
		if (d->cons[i] == c)
			return -EALREADY;
	for (int i = 0; i < USTACK_DEFERRED_MAX_CONSUMERS; i++) {
		if (d->cons[i])
			continue;
		c->func = func;
		c->ctx = ctx;
		c->idx = i;
		d->cons[i] = c;
		return 0;
	}
	return -EBUSY;
}

void ustack_deferred__cancel(struct ustack_deferred *d, struct ustack_deferred_consumer *c)
{
	uint64_t bit;

	if (!d || !c || !registered(d, c))
		return;
	bit = 1ull << c->idx;
	d->cons[c->idx] = NULL;
	c->idx = -1;
	/* Clear the bit in every live entry: a consumer registered later in
	 * the same slot must not inherit this one's requests. */
	for (uint32_t i = 0; i < d->opts.max_tasks; i++)
		d->ents[i].mask &= ~bit;
}

/* ---- requests and notifications ------------------------------------------- */

static uint32_t alloc_entry(struct ustack_deferred *d)
{
	uint32_t idx;

	/* Full: close the least recently seen entry. Its events keep their
	 * stack; a later sample of that task only loses the sharing. The ready
	 * list is empty here (the request delivered it), so every entry is in
	 * the LRU list. */
	if (d->free_head == NONE) {
		idx = d->lru.head;
		d->st.evicted++;
		close_entry(d, idx, USTACK_DEFERRED_CLOSE_EVICTED, d->ents[idx].last_time, 0);
	}
	idx = d->free_head;
	d->free_head = d->ents[idx].next;
	return idx;
}

static uint32_t why_not_join(const struct dentry *e, const struct ustack_deferred_sample *s,
			     int *join)
{
	*join = 0;
	if (e->pid != s->pid)
		return USTACK_DEFERRED_CLOSE_TID_REUSE;
	if (s->time < e->last_time)
		return USTACK_DEFERRED_CLOSE_REORDER;
	if (e->state == D_READY)
		/* deliver_ready() kept it only for this very sample */
		goto join;
	if (!(s->flags & USTACK_DEFERRED_KERNEL))
		return USTACK_DEFERRED_CLOSE_USER_MODE;
	if (e->ip != s->ip || e->sp != s->sp || e->bp != s->bp || e->tag != s->tag)
		return USTACK_DEFERRED_CLOSE_NEW_ENTRY;
join:
	*join = 1;
	return 0;
}

int ustack_deferred__request(struct ustack_deferred *d, struct ustack_deferred_consumer *c,
			     const struct ustack_deferred_sample *s, uint64_t *cookie)
{
	struct dentry *e;
	uint32_t idx, reason;
	int join, n;

	if (cookie)
		*cookie = 0;
	if (!d || !c || !s || !cookie || !registered(d, c))
		return -EINVAL;
	if (d->in_callback)
		return -EDEADLK;
	if (s->cpu >= d->opts.nr_cpus || (!s->ip && !s->sp))
		return -EINVAL;

	deliver_ready(d, s);
	note_cpu_time(d, s->cpu, s->time);

	e = lookup(d, s->tid);
	if (e) {
		reason = why_not_join(e, s, &join);
		if (join) {
			if (e->state == D_OPEN) {
				list_unlink(d, &d->lru, (uint32_t)(e - d->ents));
				list_append(d, &d->lru, (uint32_t)(e - d->ents));
			}
			e->last_time = s->time;
			e->last_cpu = s->cpu;
			e->nr_requests++;
			e->mask |= 1ull << c->idx;
			d->st.requests++;
			d->st.shared++;
			*cookie = e->cookie;
			return 1;
		}
		close_entry(d, (uint32_t)(e - d->ents), reason,
			    reason == USTACK_DEFERRED_CLOSE_REORDER ? e->last_time : s->time, 0);
	}

	idx = alloc_entry(d);
	e = &d->ents[idx];
	e->cookie = next_cookie(d, s->cpu);
	e->first_time = e->last_time = s->time;
	e->ip = s->ip;
	e->sp = s->sp;
	e->bp = s->bp;
	e->tag = s->tag;
	e->mask = 1ull << c->idx;
	e->pid = s->pid;
	e->tid = s->tid;
	e->cpu = e->last_cpu = s->cpu;
	e->nr_requests = 1;
	e->err = 0;
	e->stop = 0;
	e->nr_frames = 0;
	e->state = (s->flags & USTACK_DEFERRED_KERNEL) ? D_OPEN : D_READY;

	d->in_callback++;  /* the unwind must not re-enter the engine either */
	n = d->opts.unwind(d->opts.unwind_ctx, s, e->frames, d->opts.max_frames, &e->stop);
	d->in_callback--;
	d->st.unwinds++;
	if (n < 0) {
		e->err = n;
		d->st.unwind_errors++;
	} else {
		e->nr_frames = (uint32_t)n > d->opts.max_frames ? d->opts.max_frames : (uint32_t)n;
	}

	/* cannot fail: at most max_tasks entries, as many keys reserved */
	ustack_u64map__put(d->by_tid, e->tid, idx);
	list_append(d, e->state == D_READY ? &d->ready : &d->lru, idx);
	d->st.open++;
	d->st.requests++;
	*cookie = e->cookie;
	return 0;
}

void ustack_deferred__user_mode(struct ustack_deferred *d, uint32_t tid, uint32_t cpu,
				uint64_t time)
{
	struct dentry *e;

	if (!d || d->in_callback)
		return;
	deliver_ready(d, NULL);
	note_cpu_time(d, cpu, time);
	e = lookup(d, tid);
	if (!e || time < e->first_time)
		return;
	/* Seen in user mode between two samples that were merged into one
	 * entry: they were not one kernel entry after all. */
	close_entry(d, (uint32_t)(e - d->ents), USTACK_DEFERRED_CLOSE_USER_MODE, time,
		    time < e->last_time ? -ESTALE : 0);
}

void ustack_deferred__task_exit(struct ustack_deferred *d, uint32_t tid)
{
	struct dentry *e;

	if (!d || d->in_callback)
		return;
	deliver_ready(d, NULL);
	e = lookup(d, tid);
	if (e)
		close_entry(d, (uint32_t)(e - d->ents), USTACK_DEFERRED_CLOSE_EXIT, e->last_time, 0);
}

void ustack_deferred__lost(struct ustack_deferred *d, uint32_t cpu, uint64_t time)
{
	uint64_t gap_start;
	uint32_t idx, next;

	if (!d || d->in_callback)
		return;
	deliver_ready(d, NULL);
	/*
	 * Records of a CPU arrive in time order, so what was lost on @cpu lies
	 * after the last record we saw from it. An entry all of whose samples
	 * precede that point cannot have a lost record (a lost user-mode
	 * sample of its task) between them: its stack is right for all its
	 * events. Any other entry might, on any CPU, since its task may have
	 * migrated to @cpu unseen.
	 */
	gap_start = cpu < d->opts.nr_cpus ? d->cpu_time[cpu] : 0;
	for (idx = d->lru.head; idx != NONE; idx = next) {
		struct dentry *e = &d->ents[idx];
		int withhold = cpu >= d->opts.nr_cpus || e->last_time > gap_start;

		next = e->next;
		close_entry(d, idx, USTACK_DEFERRED_CLOSE_LOST, time, withhold ? -ENODATA : 0);
	}
	note_cpu_time(d, cpu, time);
}

void ustack_deferred__flush(struct ustack_deferred *d)
{
	uint32_t idx, next;

	if (!d || d->in_callback)
		return;
	deliver_ready(d, NULL);
	for (idx = d->lru.head; idx != NONE; idx = next) {
		next = d->ents[idx].next;
		close_entry(d, idx, USTACK_DEFERRED_CLOSE_FLUSH, d->ents[idx].last_time, 0);
	}
}

void ustack_deferred__stats(const struct ustack_deferred *d, struct ustack_deferred_stats *st)
{
	if (!d || !st)
		return;
	*st = d->st;
}
