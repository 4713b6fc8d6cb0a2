// SPDX-License-Identifier: MIT
/* Checks of the BPF backend's ring-buffer records (see bpf_record.h). */
#include <errno.h>
#include <stddef.h>

#include <ustack/ustack.h>
#include <ustack/trace.h>
#include "bpfload/bpf_record.h"

/* the BPF program's clang and this compiler must lay it out alike: no
 * padding anywhere (record.bpf.c asserts the same) */
_Static_assert(sizeof(struct ub_event) == 56 && offsetof(struct ub_event, value) == 48,
	       "struct ub_event: 56 bytes, value last");

_Static_assert(sizeof(struct ub_pevent) == 160 && offsetof(struct ub_pevent, args) == 64 &&
	       UB_MAX_ARGS == USTACK_TRACE_MAX_ARGS,
	       "struct ub_pevent: 160 bytes, args at 64");

_Static_assert(offsetof(struct ub_copy, py) == 72 &&
		       offsetof(struct ub_copy, data) == 72 + 16 * UB_MAX_PY_FRAMES,
	       "struct ub_copy: Python words at 72, the stack bytes after them");

_Static_assert(sizeof(struct ub_kstack) == 16 + 8 * UB_MAX_FRAMES &&
		       offsetof(struct ub_kstack, ips) == 16,
	       "struct ub_kstack: the ips at 16");

#define EV_FLAGS (UB_EV_NEW_ENTRY | UB_EV_USER | UB_EV_USER_MODE | UB_EV_COPY | UB_EV_VALUE | \
		  UB_EV_ARGS | UB_EV_KSTACK)

static int bad(const char **why, const char *what)
{
	if (why)
		*why = what;
	return -EBADMSG;
}

static int check_event(const struct ub_event *e, size_t size, uint32_t nr_events,
		       const char **why)
{
	if (size < sizeof(*e))
		return bad(why, "event record cut short");
	if (e->flags & ~EV_FLAGS)
		return bad(why, "event record with unknown flags");
	if (e->flags & UB_EV_ARGS) {
		const struct ub_pevent *pe = (const struct ub_pevent *)e;

		if (size < sizeof(*pe))
			return bad(why, "event record with args cut short");
		if (!pe->nr_args || pe->nr_args > UB_MAX_ARGS)
			return bad(why, "event record with a bad number of args");
	}
	if (e->event >= nr_events)
		return bad(why, "event record naming an event not asked for");
	if (!(e->flags & UB_EV_VALUE) && e->value)
		return bad(why, "event record with a value but no value flag");
	if ((e->flags & UB_EV_KSTACK) ? e->kstack >= 0 || !e->kseq : e->kseq != 0)
		return bad(why, "event record whose kernel stack is in the map and sent whole, "
				"or neither with a sequence number");
	if (e->flags & UB_EV_USER) {
		if (!e->cookie)
			return bad(why, "event record with a user stack but no cookie");
		if (e->stop > USTACK_STOP_MAPS_BUSY)
			return bad(why, "event record with an unknown stop reason");
		if (e->nr > UB_MAX_FRAMES)
			return bad(why, "event record with more frames than a walk makes");
	} else if (e->flags & (UB_EV_NEW_ENTRY | UB_EV_USER_MODE | UB_EV_COPY)) {
		return bad(why, "event record with entry flags but no user stack");
	}
	return 0;
}

static int check_stack(const struct ub_stack *s, size_t size, const char **why)
{
	if (size < offsetof(struct ub_stack, words))
		return bad(why, "stack record cut short");
	if (!s->id)
		return bad(why, "stack record with id 0");
	if (!s->nr || s->nr + s->npy > UB_MAX_FRAMES || s->npy > UB_MAX_PY_FRAMES)
		return bad(why, "stack record with no frames or more than a walk makes");
	if ((size - offsetof(struct ub_stack, words)) / 16 < (size_t)s->nr + s->npy)
		return bad(why, "stack record shorter than its frames");
	if (s->pystop > UB_PYSTOP_NO_THREAD || (s->npy && !s->pypid) ||
	    s->nstop > USTACK_STOP_MAPS_BUSY)
		return bad(why, "stack record with Python frames of no process or an unknown stop");
	for (uint32_t i = 0; i < s->nr; i++)
		if (((s->words[2 * i + 1] >> 56) & 0x3f) > USTACK_METHOD_PLT)
			return bad(why, "stack record with an unknown unwind method");
	return 0;
}

static int check_copy(const struct ub_copy *c, size_t size, const char **why)
{
	if (size < offsetof(struct ub_copy, data))
		return bad(why, "copy record cut short");
	if (c->size > UB_COPY_BYTES || size - offsetof(struct ub_copy, data) < c->size)
		return bad(why, "copy record shorter than its stack bytes");
	if (!c->cookie)
		return bad(why, "copy record without a cookie");
	if (c->npy > UB_MAX_PY_FRAMES || c->pystop > UB_PYSTOP_NO_THREAD)
		return bad(why, "copy record with more Python frames than a walk makes or an unknown stop");
	return 0;
}

static int check_kstack(const struct ub_kstack *k, size_t size, const char **why)
{
	if (size < offsetof(struct ub_kstack, ips))
		return bad(why, "kernel stack record cut short");
	if (!k->nr || k->nr > UB_MAX_FRAMES || !k->seq)
		return bad(why, "kernel stack record with no frames, more than a walk takes, "
				"or no sequence number");
	if ((size - offsetof(struct ub_kstack, ips)) / 8 < k->nr)
		return bad(why, "kernel stack record shorter than its frames");
	return 0;
}

int ustack_bpf_record__check(const void *data, size_t size, uint32_t nr_events,
			     struct ustack_bpf_rec *out, const char **why)
{
	int ret;

	*out = (struct ustack_bpf_rec){ 0 };
	if (!data || !size)
		return bad(why, "empty record");
	/* records start 8-byte aligned in the ring: the structs' alignment */
	if ((uintptr_t)data & 7)
		return bad(why, "misaligned record");
	out->type = *(const uint8_t *)data;
	switch (out->type) {
	case UB_REC_EVENT:
		ret = check_event(data, size, nr_events, why);
		out->event = ret ? NULL : data;
		return ret;
	case UB_REC_STACK:
		ret = check_stack(data, size, why);
		out->stack = ret ? NULL : data;
		return ret;
	case UB_REC_COPY:
		ret = check_copy(data, size, why);
		out->copy = ret ? NULL : data;
		return ret;
	case UB_REC_KSTACK:
		ret = check_kstack(data, size, why);
		out->kstack = ret ? NULL : data;
		return ret;
	}
	return bad(why, "unknown record type");
}
