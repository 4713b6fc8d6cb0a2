// SPDX-License-Identifier: MIT
/*
 * The allocation events of a trace, one line each, for
 * tests/integration/alloc.sh (what the report's views add up, seen event
 * by event: each allocation's size, address and weight, each free):
 *   D ID TYPE FLAGS PERIOD NAME      an EVENT_DESC
 *   A PID VALUE HAS SIZE ADDR STACK  an "alloc": VALUE its weight (HAS 1 when
 *                                    stored), SIZE and ADDR its args,
 *                                    STACK its user frames leaf first joined
 *                                    by ';' ("-": none; a frame without a
 *                                    name: [BASENAME])
 *   F PID ADDR NARGS HASSTACK        a "free"
 *   L COUNT                          a LOST record
 * usage: alloc_events TRACE
 */
#include <inttypes.h>

#include "trace_events.h"

static void print_event(struct ustack_trace_reader *r, struct ustack_symbolizer *sy,
			const struct ustack_trace_stitched *e)
{
	const struct ustack_trace_event *ev = &e->event;
	const char *name = ev_name(ev->event_id);
	int has_args = !!(ev->flags & USTACK_TRACE_EVENT_HAS_ARGS);
	int has_stack = e->result == USTACK_TRACE_STITCH_OK && e->ustack_id != USTACK_TRACE_NO_STACK;

	if (!name)
		return;
	if (!strcmp(name, "free")) {
		printf("F %u %#" PRIx64 " %u %d\n", ev->pid, has_args ? ev->args[0] : 0,
		       has_args ? ev->nr_args : 0, has_stack);
		return;
	}
	if (strcmp(name, "alloc"))
		return;
	printf("A %u %" PRIu64 " %d %" PRIu64 " %#" PRIx64 " ", ev->pid, ev->value,
	       (ev->flags & USTACK_TRACE_EVENT_HAS_VALUE) ? 1 : 0,
	       has_args && ev->nr_args >= 2 ? ev->args[0] : 0,
	       has_args && ev->nr_args >= 2 ? ev->args[1] : 0);
	ev_print_stack(r, sy, e, 0);
}

int main(int argc, char **argv)
{
	return ev_main(argc, argv, "alloc_events", print_event);
}
