// SPDX-License-Identifier: MIT
/*
 * Writes a trace with known weights for the report tests of off-CPU time,
 * with the library's trace writer. Kernel stacks only (named by KSYM
 * records), so that every name is known without any file:
 *   stack 0: kfunc_a            stack 1: kfunc_b <- kfunc_a (leaf first)
 * Events (event 0 cpu-clock at 1000 Hz, 1 off-cpu, 2 off-cpu-preempt):
 *   tid 10 "worker": cpu-clock x3 on stack 0; off-cpu 1000000 and 2500000
 *                    ns on stack 1
 *   tid 11 "waiter": off-cpu 500000 ns on stack 0; off-cpu-preempt 250000
 *                    ns on stack 1; cpu-clock x1 on stack 1
 * So: off-cpu 4000000 ns (kfunc_b 3500000 self, kfunc_a 500000 self),
 * off-cpu-preempt 250000 ns, cpu-clock 4 samples (1 ms each at 1000 Hz).
 * usage: offcpu_mktrace [mixed|offcpu] FILE   (offcpu: events 1 and 2 only)
 */
#include <stdio.h>
#include <string.h>

#include <ustack/trace.h>

static const uint64_t k0[] = { 0xffffffff81000100ull };
static const uint64_t k1[] = { 0xffffffff81001100ull, 0xffffffff81000180ull };

static int get_stack(void *ctx, uint32_t kind, uint32_t id, struct ustack_trace_stack *st)
{
	(void)ctx;
	if (kind != USTACK_TRACE_KSTACK || id > 1)
		return -1;
	st->id = id;
	st->kind = kind;
	st->nr = id ? 2 : 1;
	st->ips = id ? k1 : k0;
	return 0;
}

struct ev {
	uint32_t tid, event, kstack;
	uint64_t ns; /* 0: a sample without a value */
};

int main(int argc, char **argv)
{
	static const struct ev evs[] = {
		{ 10, 0, 0, 0 }, { 10, 1, 1, 1000000 }, { 10, 0, 0, 0 }, { 11, 1, 0, 500000 },
		{ 10, 1, 1, 2500000 }, { 11, 2, 1, 250000 }, { 10, 0, 0, 0 }, { 11, 0, 1, 0 },
	};
	struct ustack_trace_header h = { .clock_id = 1, .hostname = "test", .cmdline = "offcpu_mktrace" };
	struct ustack_trace_event_desc d[] = {
		{ .id = 0, .type = USTACK_TRACE_EV_SAMPLE, .flags = USTACK_TRACE_EV_FREQ,
		  .period = 1000, .name = "cpu-clock" },
		{ .id = 1, .type = USTACK_TRACE_EV_OFFCPU, .flags = USTACK_TRACE_EV_UNIT_NS,
		  .name = "off-cpu" },
		{ .id = 2, .type = USTACK_TRACE_EV_OFFCPU, .flags = USTACK_TRACE_EV_UNIT_NS,
		  .name = "off-cpu-preempt" },
	};
	struct ustack_trace_ksym ks[] = {
		{ .addr = 0xffffffff81000000ull, .size = 0x1000, .name = "kfunc_a" },
		{ .addr = 0xffffffff81001000ull, .size = 0x1000, .name = "kfunc_b" },
	};
	struct ustack_trace_thread t[] = {
		{ .time = 100, .pid = 10, .tid = 10, .comm = "worker" },
		{ .time = 100, .pid = 10, .tid = 11, .comm = "waiter" },
	};
	struct ustack_trace_writer_opts o = { .sz = sizeof(o), .get_stack = get_stack };
	struct ustack_trace_writer *w;
	int mixed;

	if (argc != 3 || (strcmp(argv[1], "mixed") && strcmp(argv[1], "offcpu")))
		return 2;
	mixed = !strcmp(argv[1], "mixed");
	w = ustack_trace_writer__open(argv[2], &h, &o);
	if (!w)
		return 1;
	for (int i = mixed ? 0 : 1; i < 3; i++)
		if (ustack_trace_writer__add_event_desc(w, &d[i]))
			return 1;
	for (int i = 0; i < 2; i++)
		if (ustack_trace_writer__add_ksym(w, &ks[i]) || ustack_trace_writer__add_thread(w, &t[i]))
			return 1;
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		struct ustack_trace_event e = {
			.time = 1000000 * (i + 1), .pid = 10, .tid = evs[i].tid, .cpu = 0,
			.event_id = evs[i].event, .kstack_id = evs[i].kstack, .value = 1,
		};

		if (!mixed && !evs[i].ns)
			continue;
		if (evs[i].ns) {
			e.value = evs[i].ns;
			e.flags = USTACK_TRACE_EVENT_HAS_VALUE;
		}
		if (ustack_trace_writer__add_event(w, &e))
			return 1;
	}
	return ustack_trace_writer__close(w) ? 1 : 0;
}
