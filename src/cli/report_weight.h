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

#include <stdint.h>

#include <ustack/trace.h>

/* USTACK_TRACE_EV_UNIT_COUNT, _NS or _BYTES of event @d */
static inline uint32_t report_unit(const struct ustack_trace_event_desc *d)
{
	return d->flags & USTACK_TRACE_EV_UNIT_MASK;
}

/* The unit's name as folded output and docs spell it: "samples" (a count),
 * "ns", "bytes"; "unknown" for the reserved value. */
const char *report_unit_name(uint32_t unit);

/* --wall: the ns one event of @d stands for, given its stored @value:
 * an off-CPU interval its value; a cpu-clock or task-clock sample the
 * time between samples (1e9 / frequency, or the period in ns);
 * 0: @d has no time meaning (cycles, a tracepoint). */
uint64_t report_wall_ns(const struct ustack_trace_event_desc *d, uint64_t value);

#endif
