// SPDX-License-Identifier: MIT
/*
 * Every EVENT of a trace with its args, for probes_copy.sh (the report's
 * outputs aggregate them away), read with the library's trace reader,
 * stitcher and symbolizer:
 *   E NAME TID ARGS STACK   ARGS: the args as signed decimals joined by
 *                           ',' ("-": none stored); STACK: the user
 *                           frames root first joined by ';' ("-": none;
 *                           a frame without a name: [BASENAME])
 *   D ..., L COUNT          an EVENT_DESC, a LOST record (trace_events.h)
 * usage: probe_copy_events TRACE
 */
#include <inttypes.h>

#include "trace_events.h"

static void print_event(struct ustack_trace_reader *r, struct ustack_symbolizer *sy,
			const struct ustack_trace_stitched *e)
{
	const struct ustack_trace_event *ev = &e->event;
	const char *name = ev_name(ev->event_id);

	printf("E %s %u ", name ? name : "?", ev->tid);
	if (!(ev->flags & USTACK_TRACE_EVENT_HAS_ARGS) || !ev->nr_args)
		printf("-");
	for (uint32_t i = 0; (ev->flags & USTACK_TRACE_EVENT_HAS_ARGS) && i < ev->nr_args &&
			     i < USTACK_TRACE_MAX_ARGS; i++)
		printf("%s%" PRId64, i ? "," : "", (int64_t)ev->args[i]);
	printf(" ");
	ev_print_stack(r, sy, e, 1);
}

int main(int argc, char **argv)
{
	return ev_main(argc, argv, "probe_copy_events", print_event);
}
