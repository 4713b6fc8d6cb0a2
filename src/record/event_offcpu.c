// SPDX-License-Identifier: MIT
/*
 * Off-CPU time: "off-cpu" is every interval a recorded thread spends
 * switched out asleep (interruptible, uninterruptible, the other sleeping
 * states), "off-cpu-preempt" every interval it waits for a CPU after being
 * preempted while runnable. Each interval is an EVENT weighing its length
 * in nanoseconds, written at the switch-in, with the stacks taken at the
 * switch-out (the user stack is the one the thread returns to). Intervals
 * shorter than the recording's off_cpu_min_ns are counted and summed, not
 * written.
 */
#include <string.h>

#include "common/opts.h"
#include "record/event.h"

static int offcpu_parse(const char *spec, struct rec_event *ev, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	if (!strcmp(spec, "off-cpu"))
		ev->offcpu = REC_OFFCPU_SLEEP;
	else if (!strcmp(spec, "off-cpu-preempt"))
		ev->offcpu = REC_OFFCPU_PREEMPT;
	else
		return 0;
	return 1;
}

static void offcpu_describe(const struct rec_event *ev, const struct ustack_record_opts *o,
			    struct ustack_trace_event_desc *d)
{
	(void)ev;
	d->type = USTACK_TRACE_EV_OFFCPU;
	d->flags = USTACK_TRACE_EV_UNIT_NS;
	d->period = OPTS_GET(o, off_cpu_min_ns, 0);
}

static void offcpu_weigh(const struct rec_event *ev, uint64_t raw, struct ustack_trace_event *out)
{
	(void)ev;
	out->value = raw;
	out->flags |= USTACK_TRACE_EVENT_HAS_VALUE;
}

const struct rec_event_kind rec_event_offcpu = {
	.name = "off-cpu",
	.help = "off-cpu, off-cpu-preempt",
	.attach = REC_ATTACH_SCHED,
	.parse = offcpu_parse,
	.describe = offcpu_describe,
	.weigh = offcpu_weigh,
};
