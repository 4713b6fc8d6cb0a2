// SPDX-License-Identifier: MIT
/*
 * Every event of a trace, one line each, for the off-CPU tests: what the
 * report's aggregated outputs hide (each interval's cpu, end time and
 * weight), read with the library's trace reader, stitcher and symbolizer,
 * so that the checker (tests/integration/lib/offcpu_check.py) sees each
 * interval apart:
 *   D ID TYPE FLAGS PERIOD NAME          an EVENT_DESC
 *   V EVENT TID CPU TIME VALUE HAS STOP STACK  an EVENT: TIME its time
 *                                       (ns), VALUE its weight, HAS 1 when it
 *                                       stored one, STOP why its user stack
 *                                       ended (enum ustack_stop_reason; "-":
 *                                       none attached), STACK its user frames
 *                                       root first joined by ';' ("-": no user
 *                                       stack, or an empty one; a frame
 *                                       without a name: [BASENAME])
 *   L COUNT                              a LOST record
 * usage: offcpu_events TRACE
 */
#include "trace_events.h"

static void print_event(struct ustack_trace_reader *r, struct ustack_symbolizer *sy,
			const struct ustack_trace_stitched *e)
{
	const struct ustack_trace_event *ev = &e->event;
	const char *name = ev_name(ev->event_id);

	printf("V %s %u %u %llu %llu %d ", name ? name : "?", ev->tid, ev->cpu,
	       (unsigned long long)ev->time, (unsigned long long)ev->value,
	       (ev->flags & USTACK_TRACE_EVENT_HAS_VALUE) ? 1 : 0);
	if (e->result == USTACK_TRACE_STITCH_OK)
		printf("%u ", e->stop_reason);
	else
		printf("- ");
	ev_print_stack(r, sy, e, 1);
}

int main(int argc, char **argv)
{
	return ev_main(argc, argv, "offcpu_events", print_event);
}
