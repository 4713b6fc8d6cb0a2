// SPDX-License-Identifier: MIT
/*
 * Writes the edge-case traces of tests/integration/report_pprof.sh with the
 * library's trace writer: "empty" (a cpu-clock event kind and no record
 * after it), "lost" (the same, then only LOST records: 5 + 7 lost) and
 * "rename" (thread 10 named "before" has an event, is renamed "after",
 * then has another: each sample must keep the name of its time).
 * usage: pprof_mktrace empty|lost|rename FILE
 */
#include <stdio.h>
#include <string.h>

#include <ustack/trace.h>

/* "rename": one kernel stack (id 0, one ip, named by a KSYM record) */
static const uint64_t kips[] = { 0xffffffff81000100ull };

static int get_stack(void *ctx, uint32_t kind, uint32_t id, struct ustack_trace_stack *st)
{
	(void)ctx;
	if (kind != USTACK_TRACE_KSTACK || id != 0)
		return -1;
	st->id = id;
	st->kind = kind;
	st->nr = 1;
	st->ips = kips;
	return 0;
}

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
	struct ustack_trace_writer_opts o = { .sz = sizeof(o), .get_stack = get_stack };

	w = ustack_trace_writer__open(argv[2], &h, &o);
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
	if (!strcmp(argv[1], "rename")) {
		struct ustack_trace_thread t = { .time = 100, .pid = 10, .tid = 10, .comm = "before" };
		struct ustack_trace_event e = { .time = 200, .pid = 10, .tid = 10, .event_id = 0,
						.kstack_id = 0 };
		struct ustack_trace_ksym k = { .addr = 0xffffffff81000000ull, .size = 0x1000,
					       .name = "kfunc" };

		if (ustack_trace_writer__add_ksym(w, &k) || ustack_trace_writer__add_thread(w, &t) ||
		    ustack_trace_writer__add_event(w, &e))
			return 1;
		t.time = 300;
		t.comm = "after";
		e.time = 400;
		if (ustack_trace_writer__add_thread(w, &t) || ustack_trace_writer__add_event(w, &e))
			return 1;
	}
	return ustack_trace_writer__close(w) ? 1 : 0;
}
