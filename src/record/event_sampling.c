// SPDX-License-Identifier: MIT
/*
 * Sampling events: perf's software and hardware events by their perf
 * names, sampled at the recording's frequency (-F); each sample counts 1.
 */
#include "record/event.h"

static int sampling_parse(const char *spec, struct rec_event *ev, char *err, size_t errlen)
{
	return ustack_perf_named_event(spec, &ev->perf) ? 0 : 1;
}

static void sampling_describe(const struct rec_event *ev, const struct ustack_record_opts *o,
			      struct ustack_trace_event_desc *d)
{
	d->type = USTACK_TRACE_EV_SAMPLE;
	d->flags = USTACK_TRACE_EV_FREQ;
	d->period = o->freq ? o->freq : 999;
}

const struct rec_event_kind rec_event_sampling = {
	.name = "sampling",
	.help = "cpu-clock, task-clock, page-faults, context-switches, cycles, instructions, "
		"cache-misses, branch-misses",
	.attach = REC_ATTACH_PERF,
	.parse = sampling_parse,
	.describe = sampling_describe,
};
