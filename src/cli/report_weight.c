// SPDX-License-Identifier: MIT
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/report_weight.h"

const char *report_unit_name(uint32_t unit)
{
	switch (unit) {
	case USTACK_TRACE_EV_UNIT_COUNT: return "samples";
	case USTACK_TRACE_EV_UNIT_NS: return "ns";
	case USTACK_TRACE_EV_UNIT_BYTES: return "bytes";
	case REPORT_UNIT_OBJECTS: return "objects";
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

char *report_fmt_ns(char *buf, size_t size, uint64_t ns)
{
	static const struct { uint64_t div; const char *unit; } scale[] = {
		{ 1000000000ull, "s" }, { 1000000ull, "ms" }, { 1000ull, "us" },
	};

	for (size_t i = 0; i < sizeof(scale) / sizeof(scale[0]); i++) {
		uint64_t d = scale[i].div, milli = d / 1000, v;
		const char *unit = scale[i].unit;

		if (ns < d)
			continue;
		/* rounded to the third decimal in integers: a double would
		 * print 2^53 ns and up inexactly */
		v = ns / milli + (milli > 1 && ns % milli >= milli / 2);
		if (v >= 1000000 && i > 0) { /* 999.9996 ms rounds to 1.000 s */
			v /= 1000;
			unit = scale[i - 1].unit;
		}
		snprintf(buf, size, "%" PRIu64 ".%03" PRIu64 " %s", v / 1000, v % 1000, unit);
		return buf;
	}
	snprintf(buf, size, "%" PRIu64 " ns", ns);
	return buf;
}

char *report_fmt_weight(char *buf, size_t size, uint32_t unit, uint64_t w)
{
	if (unit == USTACK_TRACE_EV_UNIT_NS)
		return report_fmt_ns(buf, size, w);
	snprintf(buf, size, "%" PRIu64 " %s", w, report_unit_name(unit));
	return buf;
}

char *report_fmt_args(char *buf, const struct ustack_trace_event_desc *d,
		      const struct ustack_trace_event *e)
{
	uint32_t n = e->nr_args, type = d ? d->type : USTACK_TRACE_EV_PROBE;
	char *p = buf, *end = buf + REPORT_ARGS_MAX;

	*buf = 0;
	if (!(e->flags & USTACK_TRACE_EVENT_HAS_ARGS) || !n || n > USTACK_TRACE_MAX_ARGS)
		return buf;
	if (type == USTACK_TRACE_EV_ALLOC && n >= 2) {
		snprintf(buf, REPORT_ARGS_MAX, "size=%" PRIu64 " addr=0x%" PRIx64, e->args[0], e->args[1]);
		return buf;
	}
	if (type == USTACK_TRACE_EV_FREE) {
		snprintf(buf, REPORT_ARGS_MAX, "addr=0x%" PRIx64, e->args[0]);
		return buf;
	}
	if (d && d->name && !strncmp(d->name, "uretprobe:", 10)) {
		snprintf(buf, REPORT_ARGS_MAX, "ret=0x%" PRIx64, e->args[0]);
		return buf;
	}
	for (uint32_t i = 0; i < n && p < end; i++)
		p += snprintf(p, (size_t)(end - p), "%sarg%" PRIu32 "=0x%" PRIx64, i ? " " : "", i,
			      e->args[i]);
	return buf;
}
