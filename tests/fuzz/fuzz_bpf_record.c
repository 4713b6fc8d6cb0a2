// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the checks of the BPF backend's ring-buffer records
 * (src/bpfload/bpf_record.c). Input: one byte giving the number of events
 * the recorder asked for (0..15), then records, each a little-endian u16
 * length followed by that many bytes (a length past the end takes the rest).
 * Each record is checked from an exactly-sized heap copy, so a
 * read past its end is caught; tests/fuzz/make-corpus-bpf_record.py writes
 * the seed corpus.
 * Invariants after a successful check: one pointer set, equal to the
 * record; the bytes the recorder will read (the event, a stack's words, a
 * copy's data and Python words, a kernel stack's ips) lie inside it and are read here; the stop reason, method
 * bits, event index and sizes are in range. Errors are only -EBADMSG.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/ustack.h>
#include "bpfload/bpf_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void touch(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += b[i];
	sink += s;
}

static void check_one(const uint8_t *rec, size_t len, uint32_t nr_events)
{
	struct ustack_bpf_rec r;
	const char *why = NULL;
	void *copy = len ? malloc(len) : NULL; /* 16-aligned, exactly len for ASan */
	int ret;

	if (len && !copy)
		return;
	if (len)
		memcpy(copy, rec, len);
	ret = ustack_bpf_record__check(copy, len, nr_events, &r, &why);
	if (ret) {
		if (ret != -EBADMSG || !why || r.event || r.stack || r.copy || r.kstack)
			abort();
		free(copy);
		return;
	}
	if (!!r.event + !!r.stack + !!r.copy + !!r.kstack != 1)
		abort();
	if (r.event) {
		if ((const void *)r.event != copy || len < sizeof(*r.event) || r.event->event >= nr_events)
			abort();
		if ((r.event->flags & UB_EV_USER) &&
		    (!r.event->cookie || r.event->stop > USTACK_STOP_MAPS_BUSY || r.event->nr > UB_MAX_FRAMES))
			abort();
		if (!(r.event->flags & UB_EV_VALUE) && r.event->value)
			abort(); /* a weight the event does not say it has */
		if ((r.event->flags & UB_EV_KSTACK) && (r.event->kstack >= 0 || !r.event->kseq))
			abort(); /* a kernel stack both in the map and sent whole */
		touch(r.event, sizeof(*r.event));
	} else if (r.stack) {
		if ((const void *)r.stack != copy || !r.stack->nr || r.stack->nr > UB_MAX_FRAMES ||
		    16 + 16 * (size_t)r.stack->nr > len)
			abort();
		for (uint32_t i = 0; i < r.stack->nr; i++)
			if (((r.stack->words[2 * i + 1] >> 56) & 0x3f) > USTACK_METHOD_PLT)
				abort();
		touch(r.stack->words, 16 * (size_t)r.stack->nr);
	} else if (r.kstack) {
		if ((const void *)r.kstack != copy || !r.kstack->nr || r.kstack->nr > UB_MAX_FRAMES ||
		    offsetof(struct ub_kstack, ips) + 8 * (size_t)r.kstack->nr > len)
			abort();
		touch(r.kstack->ips, 8 * (size_t)r.kstack->nr);
	} else {
		if ((const void *)r.copy != copy || r.copy->size > UB_COPY_BYTES ||
		    offsetof(struct ub_copy, data) + r.copy->size > len ||
		    r.copy->npy > UB_MAX_PY_FRAMES || r.copy->pystop > UB_PYSTOP_NO_THREAD)
			abort();
		touch(r.copy->data, r.copy->size);
		touch(r.copy->py, 16 * (size_t)r.copy->npy);
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t nr_events;

	if (!size)
		return 0;
	nr_events = data[0] & 15;
	data++, size--;
	while (size >= 2) {
		size_t len = data[0] | (size_t)data[1] << 8;

		data += 2, size -= 2;
		if (len > size)
			len = size;
		check_one(data, len, nr_events);
		data += len, size -= len;
	}
	return 0;
}
