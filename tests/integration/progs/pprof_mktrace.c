// SPDX-License-Identifier: MIT
/*
 * Writes the edge-case traces of tests/integration/report_pprof.sh with the
 * library's trace writer: "empty" (a cpu-clock event kind and no record
 * after it) and "lost" (the same, then only LOST records: 5 + 7 lost).
 * usage: pprof_mktrace empty|lost FILE
 */
#include <stdio.h>
#include <string.h>

#include <ustack/trace.h>

int main(int argc, char **argv)
{
	struct ustack_trace_header h = { .clock_id = 1, .hostname = "test", .cmdline = "pprof_mktrace" };
	struct ustack_trace_event_desc d = {
		.id = 0, .type = USTACK_TRACE_EV_SAMPLE, .flags = USTACK_TRACE_EV_FREQ, .period = 1000,
		.name = "cpu-clock",
	};
	struct ustack_trace_writer *w;

	if (argc != 3)
		return 2;
	w = ustack_trace_writer__open(argv[2], &h, NULL);
	if (!w || ustack_trace_writer__add_event_desc(w, &d))
		return 1;
	if (!strcmp(argv[1], "lost")) {
		struct ustack_trace_lost l = { .time = 1000, .what = USTACK_TRACE_LOST_KERNEL, .cpu = 0, .count = 5 };

		if (ustack_trace_writer__add_lost(w, &l))
			return 1;
		l.time = 2000;
		l.cpu = USTACK_TRACE_NO_CPU;
		l.what = USTACK_TRACE_LOST_USTACK;
		l.count = 7;
		if (ustack_trace_writer__add_lost(w, &l))
			return 1;
	}
	return ustack_trace_writer__close(w) ? 1 : 0;
}
