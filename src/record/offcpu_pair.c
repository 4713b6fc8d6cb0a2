// SPDX-License-Identifier: MIT
/* Off-CPU intervals paired per thread (offcpu_pair.h). */
#include <errno.h>
#include <stdlib.h>

#include <ustack/hashmap.h>
#include "common/grow.h"
#include "record/offcpu_pair.h"

/* One thread: its held switch-out, and its last switch-in, kept while it
 * lives so that a switch-out that comes after its own switch-in (late) is
 * not paired with the next one. */
struct tstate {
	uint32_t tid;
	int held;
	uint64_t last_in;
	struct rec_offcpu_out o;
};

struct rec_offcpu_pair {
	rec_offcpu_drop_fn drop;
	void *ctx;
	struct tstate *v;
	size_t nr, cap;
	struct ustack_u64map *of; /* tid -> index in v */
	uint64_t held;
};

struct rec_offcpu_pair *rec_offcpu__new(rec_offcpu_drop_fn drop, void *ctx)
{
	struct rec_offcpu_pair *p = calloc(1, sizeof(*p));

	if (!p || !(p->of = ustack_u64map__new())) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	p->drop = drop;
	p->ctx = ctx;
	return p;
}

void rec_offcpu__free(struct rec_offcpu_pair *p)
{
	if (!p)
		return;
	ustack_u64map__free(p->of);
	free(p->v);
	free(p);
}

static struct tstate *state_of(struct rec_offcpu_pair *p, uint32_t tid, int create)
{
	uint64_t i;

	if (ustack_u64map__get(p->of, tid, &i))
		return &p->v[i];
	if (!create)
		return NULL;
	if (ustack_grow((void **)&p->v, &p->cap, p->nr + 1, sizeof(*p->v), 64) ||
	    ustack_u64map__put(p->of, tid, p->nr))
		return NULL;
	p->v[p->nr] = (struct tstate){ .tid = tid };
	return &p->v[p->nr++];
}

static void drop_held(struct rec_offcpu_pair *p, struct tstate *t)
{
	struct rec_offcpu_out o;

	if (!t->held)
		return;
	t->held = 0;
	p->held--;
	o = t->o;
	p->drop(p->ctx, &o);
}

int rec_offcpu__switch_out(struct rec_offcpu_pair *p, const struct rec_offcpu_out *o)
{
	struct tstate *t = state_of(p, o->tid, 1);

	if (!t)
		return -ENOMEM;
	if (o->time < t->last_in)
		return -ESTALE;
	/* two switch-outs in a row: the switch-in between them is missing */
	drop_held(p, t);
	t->o = *o;
	t->held = 1;
	p->held++;
	return 0;
}

int rec_offcpu__switch_in(struct rec_offcpu_pair *p, uint32_t pid, uint32_t tid, uint64_t time,
			  struct rec_offcpu_out *out)
{
	struct tstate *t = state_of(p, tid, 0);

	/* a thread never seen switching out is not tracked: its first
	 * switch-out, not this, is where its intervals start */
	if (!t)
		return 0;
	if (time > t->last_in)
		t->last_in = time;
	if (!t->held || time < t->o.time)
		return 0;
	if (t->o.pid != pid) {
		/* the id is another process's now: its exit was not seen */
		drop_held(p, t);
		return 0;
	}
	*out = t->o;
	t->held = 0;
	p->held--;
	return 1;
}

void rec_offcpu__task_exit(struct rec_offcpu_pair *p, uint32_t tid)
{
	uint64_t i;
	size_t last;

	if (!ustack_u64map__get(p->of, tid, &i))
		return;
	drop_held(p, &p->v[i]);
	ustack_u64map__delete(p->of, tid, NULL);
	last = --p->nr;
	if (i != last) {
		p->v[i] = p->v[last];
		/* an overwrite of a key that is there: allocates nothing */
		ustack_u64map__put(p->of, p->v[i].tid, i);
	}
}

void rec_offcpu__lost(struct rec_offcpu_pair *p, uint64_t time)
{
	for (size_t i = 0; i < p->nr && p->held; i++)
		if (p->v[i].held && p->v[i].o.time <= time)
			drop_held(p, &p->v[i]);
}

void rec_offcpu__flush(struct rec_offcpu_pair *p)
{
	for (size_t i = 0; i < p->nr && p->held; i++)
		drop_held(p, &p->v[i]);
}

uint64_t rec_offcpu__held(const struct rec_offcpu_pair *p)
{
	return p->held;
}
