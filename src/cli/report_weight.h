/* SPDX-License-Identifier: MIT */
/*
 * What one EVENT weighs in `ustack report`'s outputs: its unit (the
 * EVENT_DESC's unit bits, trace format 1.3: a count, nanoseconds, bytes)
 * and, for the wall-clock view (--wall), its time in ns. Shared by the text
 * and folded output (cmd_report.c), the flame graph, pprof and the viewers
 * (speedscope, perf-script), so that all of them weigh an event alike.
 */
#ifndef USTACK_CLI_REPORT_WEIGHT_H
#define USTACK_CLI_REPORT_WEIGHT_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/trace.h>

/* USTACK_TRACE_EV_UNIT_COUNT, _NS or _BYTES of event @d */
static inline uint32_t report_unit(const struct ustack_trace_event_desc *d)
{
	return d->flags & USTACK_TRACE_EV_UNIT_MASK;
}

/* Not a trace unit: an objects view's estimated number of allocations
 * (report_alloc.h), named "objects"; folded never adds it to bytes or
 * samples. */
#define REPORT_UNIT_OBJECTS 0x8u

/* The unit's name as folded output and docs spell it: "samples" (a count),
 * "ns", "bytes", "objects"; "unknown" for the reserved value. */
const char *report_unit_name(uint32_t unit);

/* --wall: the ns one event of @d stands for, given its stored @value:
 * an off-CPU interval its value; a cpu-clock or task-clock sample the
 * time between samples (1e9 / frequency, or the period in ns);
 * 0: @d has no time meaning (cycles, a tracepoint). */
uint64_t report_wall_ns(const struct ustack_trace_event_desc *d, uint64_t value);

/* What one event of @d with stored @value adds to its stack: with @wall
 * its report_wall_ns() (0: left out of the wall-clock view), else @value
 * in @d's own unit (1 for an event that stores none: the reader's value). */
static inline uint64_t report_weight(const struct ustack_trace_event_desc *d, uint64_t value,
				     int wall)
{
	return wall ? report_wall_ns(d, value) : value;
}

/* @ns for a reader: "850 ns", "2.500 us", "1.000 ms", "3.250 s" (three
 * decimals from a microsecond up). Returns @buf (at least 32 bytes). */
char *report_fmt_ns(char *buf, size_t size, uint64_t ns);

/* A weight @w of @unit for a reader: a time as report_fmt_ns(), else
 * "N samples" or "N bytes". Returns @buf (at least 48 bytes). */
char *report_fmt_weight(char *buf, size_t size, uint32_t unit, uint64_t w);

/*
 * An EVENT's payload as words for text, raw and perf-script lines
 * (docs/cli/report.md, "Payloads"), without a leading blank: a uretprobe's
 * "ret=0x2a", other probes' "arg0=0x1 arg1=0xffffffffffffffff" (the
 * stored 64-bit values in hex: the trace keeps no C types), an
 * allocation's "size=4096 addr=0x7f..", a free's "addr=0x7f..". Empty when
 * the event carries no args. Returns @buf (REPORT_ARGS_MAX bytes).
 */
#define REPORT_ARGS_MAX (USTACK_TRACE_MAX_ARGS * 28 + 8)
char *report_fmt_args(char *buf, const struct ustack_trace_event_desc *d,
		      const struct ustack_trace_event *e);

/*
 * `ustack report` run in-process by `ustack flamegraph`, saying what the
 * numbers of the folded stacks it wrote are: @unit is
 * USTACK_TRACE_EV_UNIT_NS with --wall or for events in ns, _BYTES for
 * allocations' space views, REPORT_UNIT_OBJECTS for their objects views,
 * _COUNT for samples (and for a trace without events). cmd_report() is this with
 * NULL. Returns the exit status.
 */
struct report_result {
	uint32_t unit;
	const char *view; /* a trace with allocations: the view drawn, else NULL */
};
int report_run(int argc, char **argv, struct report_result *res);

#endif
