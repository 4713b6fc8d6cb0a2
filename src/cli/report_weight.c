// SPDX-License-Identifier: MIT
#include <string.h>

#include "cli/report_weight.h"

const char *report_unit_name(uint32_t unit)
{
	switch (unit) {
	case USTACK_TRACE_EV_UNIT_COUNT: return "samples";
	case USTACK_TRACE_EV_UNIT_NS: return "ns";
	case USTACK_TRACE_EV_UNIT_BYTES: return "bytes";
	default: return "unknown";
	}
}

uint64_t report_wall_ns(const struct ustack_trace_event_desc *d, uint64_t value)
{
	if (report_unit(d) == USTACK_TRACE_EV_UNIT_NS)
		return value;
	/* a clock's sample stands for the CPU time since the one before */
	if (d->type != USTACK_TRACE_EV_SAMPLE || !d->period || !d->name ||
	    (strcmp(d->name, "cpu-clock") && strcmp(d->name, "task-clock")))
		return 0;
	if (d->flags & USTACK_TRACE_EV_FREQ)
		return (1000000000ull + d->period / 2) / d->period * value;
	return d->period * value;
}
