// SPDX-License-Identifier: MIT
/*
 * Stitching events to user stacks, exactly the procedure of
 * docs/trace-format.md section 4.2: per tid, the events waiting for their
 * user stack; a USER_STACK with the same tid and cookie resolves them, a
 * different cookie or any LOST record resolves them to "no user stack".
 * All pending events of one tid share one cookie (a new cookie flushes the
 * old ones first), which keeps every step a plain list walk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

struct plist {
	struct ustack_trace_event *ev;
	size_t n, cap;
};

struct ustack_trace_stitcher {
	struct ustack_u64map *tid_idx; /* tid -> index in lists */
	struct plist *lists;
	size_t nlists, lists_cap;
	size_t pending;           /* events in all lists */
	struct ustack_trace_stitched *out;
	size_t out_head, out_len, out_cap;
};

struct ustack_trace_stitcher *ustack_trace_stitcher__new(void)
{
	struct ustack_trace_stitcher *s = calloc(1, sizeof(*s));

	if (!s || !(s->tid_idx = ustack_u64map__new())) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void ustack_trace_stitcher__free(struct ustack_trace_stitcher *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nlists; i++)
		free(s->lists[i].ev);
	free(s->lists);
	free(s->out);
	ustack_u64map__free(s->tid_idx);
	free(s);
}

static int out_push(struct ustack_trace_stitcher *s, const struct ustack_trace_event *ev,
		    uint32_t result, const struct ustack_trace_user_stack *us)
{
	struct ustack_trace_stitched *o;

	if (s->out_head && s->out_head == s->out_len)
		s->out_head = s->out_len = 0;
	if (s->out_len == s->out_cap) {
		size_t ncap = s->out_cap ? s->out_cap * 2 : 64;
		void *np = realloc(s->out, ncap * sizeof(*s->out));

		if (!np)
			return -ENOMEM;
		s->out = np;
		s->out_cap = ncap;
	}
	o = &s->out[s->out_len++];
	memset(o, 0, sizeof(*o));
	o->event = *ev;
	o->result = result;
	o->ustack_id = USTACK_TRACE_NO_STACK;
	if (us) {
		o->ustack_id = us->stack_id;
		o->stop_reason = us->stop_reason;
		o->ustack_time = us->time;
	}
	return 0;
}

/* Resolve every pending event of @l: OK with @us when its cookie matches,
 * else @fail_result. */
static int flush_list(struct ustack_trace_stitcher *s, struct plist *l, uint32_t fail_result,
		      const struct ustack_trace_user_stack *us)
{
	for (size_t i = 0; i < l->n; i++) {
		int ok = us && l->ev[i].cookie == us->cookie;
		int err = out_push(s, &l->ev[i], ok ? USTACK_TRACE_STITCH_OK : fail_result,
				   ok ? us : NULL);

		if (err)
			return err;
	}
	s->pending -= l->n;
	l->n = 0;
	return 0;
}

static int flush_all(struct ustack_trace_stitcher *s, uint32_t result)
{
	if (!s->pending)
		return 0;
	for (size_t i = 0; i < s->nlists; i++) {
		int err = flush_list(s, &s->lists[i], result, NULL);

		if (err)
			return err;
	}
	return 0;
}

static struct plist *list_of(struct ustack_trace_stitcher *s, uint32_t tid, int create)
{
	uint64_t idx;

	if (ustack_u64map__get(s->tid_idx, tid, &idx))
		return &s->lists[idx];
	if (!create)
		return NULL;
	if (s->nlists == s->lists_cap) {
		size_t ncap = s->lists_cap ? s->lists_cap * 2 : 16;
		void *np = realloc(s->lists, ncap * sizeof(*s->lists));

		if (!np)
			return NULL;
		s->lists = np;
		s->lists_cap = ncap;
	}
	if (ustack_u64map__put(s->tid_idx, tid, s->nlists))
		return NULL;
	memset(&s->lists[s->nlists], 0, sizeof(s->lists[0]));
	return &s->lists[s->nlists++];
}

int ustack_trace_stitcher__push(struct ustack_trace_stitcher *s, const struct ustack_trace_record *rec)
{
	struct plist *l;
	int err;

	if (!rec)
		return flush_all(s, USTACK_TRACE_STITCH_END);
	switch (rec->type) {
	case USTACK_TRACE_EVENT:
		if (!rec->event.cookie)
			return out_push(s, &rec->event, USTACK_TRACE_STITCH_NO_COOKIE, NULL);
		l = list_of(s, rec->event.tid, 1);
		if (!l)
			return -ENOMEM;
		if (l->n && l->ev[0].cookie != rec->event.cookie) {
			err = flush_list(s, l, USTACK_TRACE_STITCH_MISMATCH, NULL);
			if (err)
				return err;
		}
		if (l->n == l->cap) {
			size_t ncap = l->cap ? l->cap * 2 : 4;
			void *np = realloc(l->ev, ncap * sizeof(*l->ev));

			if (!np)
				return -ENOMEM;
			l->ev = np;
			l->cap = ncap;
		}
		l->ev[l->n++] = rec->event;
		s->pending++;
		return 0;
	case USTACK_TRACE_USER_STACK:
		l = list_of(s, rec->user_stack.tid, 0);
		if (!l)
			return 0; /* nothing waits for it: a snapshot stack */
		return flush_list(s, l, USTACK_TRACE_STITCH_MISMATCH, &rec->user_stack);
	case USTACK_TRACE_LOST:
		return flush_all(s, USTACK_TRACE_STITCH_LOST);
	default:
		return 0;
	}
}

int ustack_trace_stitcher__pop(struct ustack_trace_stitcher *s, struct ustack_trace_stitched *out)
{
	if (s->out_head == s->out_len)
		return 0;
	*out = s->out[s->out_head++];
	return 1;
}
