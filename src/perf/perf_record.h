/* SPDX-License-Identifier: MIT */
/*
 * Parser of the records a perf session reads from its ring buffers
 * (perf_events.c), in the one layout the session asks the kernel for:
 * sample_type = IDENTIFIER | IP | TID | TIME | CPU | PERIOD | CALLCHAIN |
 * REGS_USER (bx, bp, sp, ip; every general-purpose register for the events
 * whose bit is set in regs_events) | STACK_USER, RAW too for the events
 * whose bit is set in raw_events, and sample_id_all (TID, TIME, CPU,
 * IDENTIFIER after every other record). Split out of the session so that it
 * can be tested and fuzzed without perf_event_open: the records are
 * untrusted input and every field is bounds-checked.
 */
#ifndef USTACK_PERF_PERF_RECORD_H
#define USTACK_PERF_PERF_RECORD_H

#include <stdint.h>

#include "perf/perf_events.h"

/*
 * Whether a callchain entry is one of perf's context markers
 * (PERF_CONTEXT_KERNEL = -128, _USER = -512, ...: the top 4095 values of
 * the u64 space), not an address. They come in the perf ring buffer's
 * callchains and in the kernel stacks bpf_get_stackid() stores; neither
 * may reach a trace as a frame.
 */
static inline int ustack_callchain_is_marker(uint64_t ip)
{
	return ip >= (uint64_t)-4095;
}

/** Event index (into opts.events) of a sample id, or -1 when unknown. */
typedef int (*ustack_perf_event_of_id_fn)(void *ctx, uint64_t id);

/* Scratch a parsed record points into: valid until the next parse. */
struct ustack_perf_parser {
	ustack_perf_event_of_id_fn event_of_id;
	void *ctx;
	uint64_t *kips;    /* kernel callchain, grown to the deepest one seen */
	uint32_t cap_kips;
	char comm[32];
	/* bit i: the samples of event i carry PERF_SAMPLE_RAW (set by the
	 * owner after init) */
	uint64_t raw_events;
	/* bit i: the samples of event i carry every general-purpose user
	 * register (USTACK_PERF_EV_PROBE), not only bx, bp, sp, ip */
	uint64_t regs_events;
};

/** Set up @p (no allocation yet). */
void ustack_perf_parser__init(struct ustack_perf_parser *p, ustack_perf_event_of_id_fn event_of_id,
			      void *ctx);

/** Free what @p allocated; @p may be initialised again. */
void ustack_perf_parser__fini(struct ustack_perf_parser *p);

/**
 * Time of a record for sorting, read without parsing it.
 * @param rec the record (perf_event_header first)
 * @param len its length in bytes
 * @return CLOCK_MONOTONIC ns, or 0 when the record is too short to hold it
 */
uint64_t ustack_perf_record__time(const uint8_t *rec, uint32_t len);

/**
 * Where in a record of @type and @len bytes its time is (the offset of a
 * u64, CLOCK_MONOTONIC ns), or -1 when it has none: read without parsing
 * the record, in place in its ring, to sort records by time.
 */
int64_t ustack_perf_record__time_offset(uint32_t type, uint32_t len);

/**
 * Parse one record. Pointers in @out point into @rec or into @p.
 * @param p the parser
 * @param rec the record (perf_event_header first)
 * @param len its length in bytes (the header's size)
 * @param out receives the record
 * @return 0, -ENOENT (a record type the session does not use), -EBADMSG
 *         (malformed, or a sample of an unknown id), -ENOMEM
 */
int ustack_perf_record__parse(struct ustack_perf_parser *p, const uint8_t *rec, uint32_t len,
			      struct ustack_perf_record *out);

/**
 * Where @field is in a tracepoint's format file @text (tracefs
 * events/SUBSYS/NAME/format: "field:TYPE NAME;\toffset:N;\tsize:N;...").
 * @return 0 with *@off and *@size set, -ENOENT (no such field), -EBADMSG
 *         (its line malformed, or offset + size past 64 KiB)
 */
int ustack_perf_format_field(const char *text, const char *field, uint32_t *off, uint32_t *size);

#endif
