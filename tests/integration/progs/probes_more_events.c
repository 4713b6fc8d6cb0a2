// SPDX-License-Identifier: MIT
/*
 * Every event of a trace with its args, one line each, for the probe tests
 * (tests/integration/probes_more.sh, lib/probe_check.py), read with the
 * library's trace reader, stitcher and symbolizer: what `report` does not
 * print (each probe hit's arguments):
 *   D ID TYPE FLAGS PERIOD NAME          an EVENT_DESC
 *   V EVENT TID VALUE ARGS STACK         an EVENT: VALUE its weight, ARGS its
 *                                       args as signed decimals joined by ','
 *                                       ("-": no args), STACK its user frames
 *                                       root first joined by ';' ("-": no
 *                                       user stack; a frame without a name:
 *                                       [BASENAME])
 *   L COUNT                              a LOST record
 * usage: probes_more_events TRACE
 */
#include "trace_events.h"

static void print_event(struct ustack_trace_reader *r, struct ustack_symbolizer *sy,
			const struct ustack_trace_stitched *e)
{
	const struct ustack_trace_event *ev = &e->event;
	const char *name = ev_name(ev->event_id);

	printf("V %s %u %llu ", name ? name : "?", ev->tid, (unsigned long long)ev->value);
	if (!(ev->flags & USTACK_TRACE_EVENT_HAS_ARGS) || !ev->nr_args || ev->nr_args > USTACK_TRACE_MAX_ARGS)
		printf("- ");
	for (uint32_t i = 0; (ev->flags & USTACK_TRACE_EVENT_HAS_ARGS) && i < ev->nr_args &&
			     i < USTACK_TRACE_MAX_ARGS; i++)
		printf("%lld%s", (long long)ev->args[i], i + 1 < ev->nr_args ? "," : " ");
	ev_print_stack(r, sy, e, 1);
}

int main(int argc, char **argv)
{
	return ev_main(argc, argv, "probes_more_events", print_event);
}
