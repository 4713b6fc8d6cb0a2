// SPDX-License-Identifier: MIT
/*
 * Writes a trace for tests/integration/report_weights.sh whose events have
 * no time meaning besides one that has: thread 7 "t", one kernel stack
 * (kfunc, by a KSYM record); event 0 syscalls:sys_enter_futex (a count)
 * x2, event 1 off-cpu 1500 ns x1 and 0 ns x1 (a zero-length interval:
 * nothing to draw). So --wall keeps 1500 ns and leaves 2 events out.
 * usage: weights_mktrace FILE
 */
#include <ustack/trace.h>

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
	struct ustack_trace_header h = { .clock_id = 1, .hostname = "test", .cmdline = "weights_mktrace" };
	struct ustack_trace_event_desc d[] = {
		{ .id = 0, .type = USTACK_TRACE_EV_TRACEPOINT, .name = "syscalls:sys_enter_futex" },
		{ .id = 1, .type = USTACK_TRACE_EV_OFFCPU, .flags = USTACK_TRACE_EV_UNIT_NS,
		  .period = 1000, .name = "off-cpu" },
	};
	struct ustack_trace_ksym ks = { .addr = 0xffffffff81000000ull, .size = 0x1000, .name = "kfunc" };
	struct ustack_trace_thread t = { .time = 1, .pid = 7, .tid = 7, .comm = "t" };
	struct ustack_trace_writer_opts o = { .sz = sizeof(o), .get_stack = get_stack };
	static const struct { uint32_t event; uint64_t ns; int has; } evs[] = {
		{ 0, 1, 0 }, { 1, 1500, 1 }, { 0, 1, 0 }, { 1, 0, 1 },
	};
	struct ustack_trace_writer *w;

	if (argc != 2 || !(w = ustack_trace_writer__open(argv[1], &h, &o)))
		return argc != 2 ? 2 : 1;
	if (ustack_trace_writer__add_event_desc(w, &d[0]) || ustack_trace_writer__add_event_desc(w, &d[1]) ||
	    ustack_trace_writer__add_ksym(w, &ks) || ustack_trace_writer__add_thread(w, &t))
		return 1;
	for (unsigned int i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		struct ustack_trace_event e = {
			.time = 1000 * (i + 1), .pid = 7, .tid = 7, .event_id = evs[i].event,
			.kstack_id = 0, .value = evs[i].ns,
			.flags = evs[i].has ? USTACK_TRACE_EVENT_HAS_VALUE : 0,
		};

		if (ustack_trace_writer__add_event(w, &e))
			return 1;
	}
	return ustack_trace_writer__close(w) ? 1 : 0;
}
