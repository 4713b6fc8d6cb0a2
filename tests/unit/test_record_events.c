// SPDX-License-Identifier: MIT
/* The recorder's event kinds (src/record/event.h): which kind claims a -e
 * name, what perf opens for it, what the trace says of it, and the errors
 * (the messages are the CLI's, unchanged from before the kinds). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "bpf/record_abi.h"
#include "probe/probe.h"
#include "record/event.h"
#include "test.h"

static char err[512];

static void test_sampling(void)
{
	struct ustack_record_opts o = { .sz = sizeof(o) };
	struct ustack_trace_event_desc d;
	struct rec_event ev;

	CHECK_EQ(rec_event_parse("cpu-clock", &ev, err, sizeof(err)), 0);
	CHECK(ev.kind == &rec_event_sampling);
	CHECK_EQ(ev.kind->attach, REC_ATTACH_PERF);
	CHECK_STR(ev.perf.name, "cpu-clock");
	CHECK_EQ(ev.perf.type, PERF_TYPE_SOFTWARE);
	CHECK_EQ_U64(ev.perf.config, PERF_COUNT_SW_CPU_CLOCK);
	CHECK(!ev.perf.is_tracepoint && !ev.perf.is_hardware && !ev.tracepoint[0]);
	rec_event_describe(&ev, 3, &o, &d);
	CHECK_EQ(d.id, 3);
	CHECK_STR(d.name, "cpu-clock");
	CHECK_EQ(d.type, USTACK_TRACE_EV_SAMPLE);
	CHECK_EQ(d.flags, USTACK_TRACE_EV_FREQ);
	CHECK_EQ_U64(d.period, 999); /* the default frequency */
	o.freq = 4999;
	rec_event_describe(&ev, 0, &o, &d);
	CHECK_EQ_U64(d.period, 4999);

	CHECK_EQ(rec_event_parse("cycles", &ev, err, sizeof(err)), 0);
	CHECK(ev.kind == &rec_event_sampling && ev.perf.is_hardware);
	CHECK_EQ(ev.perf.type, PERF_TYPE_HARDWARE);
	CHECK_EQ(rec_event_parse("cs", &ev, err, sizeof(err)), 0);
	CHECK_EQ_U64(ev.perf.config, PERF_COUNT_SW_CONTEXT_SWITCHES);
}

static void test_unknown(void)
{
	char longname[200];
	struct rec_event ev;

	CHECK_EQ(rec_event_parse("bogus", &ev, err, sizeof(err)), -ENOENT);
	CHECK_STR(err, "unknown event 'bogus' (cpu-clock, task-clock, page-faults, "
		  "context-switches, cycles, instructions, cache-misses, branch-misses, off-cpu, "
		  "off-cpu-preempt, alloc, free (record --alloc), uprobe:PATH:SYMBOL, "
		  "uretprobe:PATH:SYMBOL, usdt:PATH:PROVIDER:NAME, or "
		  "SUBSYSTEM:TRACEPOINT)");
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	CHECK_EQ(rec_event_parse(longname, &ev, err, sizeof(err)), -ENAMETOOLONG);
	CHECK(!strncmp(err, "event name too long: 'xxxx", 26));
	/* names that would leave tracefs: claimed by the tracepoint kind, refused */
	CHECK_EQ(rec_event_parse("../x:y", &ev, err, sizeof(err)), -ENOENT);
	CHECK_STR(err, "bad tracepoint name '../x:y' (want SUBSYSTEM:EVENT)");
	CHECK_EQ(rec_event_parse("sched:a/b", &ev, err, sizeof(err)), -ENOENT);
	CHECK_EQ(rec_event_parse(":x", &ev, err, sizeof(err)), -ENOENT);
	CHECK_EQ(rec_event_parse("sched:", &ev, err, sizeof(err)), -ENOENT);
	/* a short buffer: cut, terminated */
	CHECK_EQ(rec_event_parse("bogus", &ev, err, 20), -ENOENT);
	CHECK_STR(err, "unknown event 'bogu");
}

/* Probe names go to the probe kind, never to the tracepoint kind that
 * claims every "A:B"; alloc weighs sizes into unbiased bytes. */
static void test_probe_alloc(void)
{
	struct ustack_record_opts o = { .sz = sizeof(o) };
	struct ustack_trace_event_desc d;
	struct ustack_trace_event out = { 0 };
	struct rec_event ev;

	CHECK_EQ(rec_event_parse("uretprobe:/bin/true:main", &ev, err, sizeof(err)), 0);
	CHECK(ev.kind == &rec_event_probe);
	CHECK_EQ(ev.kind->attach, REC_ATTACH_UPROBE);
	CHECK_EQ(ev.probe, USTACK_PROBE_URETPROBE);
	rec_event_describe(&ev, 1, &o, &d);
	CHECK_EQ(d.type, USTACK_TRACE_EV_PROBE);
	CHECK_EQ(d.flags & USTACK_TRACE_EV_UNIT_MASK, USTACK_TRACE_EV_UNIT_COUNT);
	CHECK_EQ(rec_event_parse("usdt:/bin/true:prov:name", &ev, err, sizeof(err)), 0);
	CHECK(ev.kind == &rec_event_probe && ev.probe == USTACK_PROBE_USDT);
	CHECK(rec_event_parse("uprobe:/bin/true", &ev, err, sizeof(err)) < 0);

	CHECK_EQ(rec_event_parse("alloc", &ev, err, sizeof(err)), 0);
	CHECK(ev.kind == &rec_event_alloc && ev.alloc == REC_ALLOC_ALLOC);
	ev.alloc_mean = 1000;
	rec_event_describe(&ev, 2, &o, &d);
	CHECK_EQ(d.type, USTACK_TRACE_EV_ALLOC);
	CHECK_EQ(d.flags & USTACK_TRACE_EV_UNIT_MASK, USTACK_TRACE_EV_UNIT_BYTES);
	CHECK_EQ_U64(d.period, 1000);
	rec_event_weigh(&ev, 1000, &out);
	CHECK(out.flags & USTACK_TRACE_EVENT_HAS_VALUE);
	CHECK_EQ_U64(out.value, 1582); /* 1000 / (1 - e^-1) = 1581.98 */
	/* small: about the mean plus half the size; large: the size */
	CHECK_EQ_U64(rec_alloc_weight(1, 1000), 1001);   /* 1 / (1 - e^-0.001) = 1000.50008 */
	CHECK_EQ_U64(rec_alloc_weight(8, 524288), 524292); /* 524292.0 */
	CHECK_EQ_U64(rec_alloc_weight(50000, 1000), 50000);
	CHECK_EQ_U64(rec_alloc_weight(3000, 1000), 3157); /* 3000 / (1 - e^-3) = 3157.2 */
	CHECK_EQ_U64(rec_alloc_weight(777, 1), 777);      /* every allocation kept */
	CHECK_EQ(rec_event_parse("free", &ev, err, sizeof(err)), 0);
	CHECK(ev.kind == &rec_event_alloc && ev.alloc == REC_ALLOC_FREE);
	rec_event_describe(&ev, 3, &o, &d);
	CHECK_EQ(d.type, USTACK_TRACE_EV_FREE);
	out = (struct ustack_trace_event){ 0 };
	rec_event_weigh(&ev, 123, &out);
	CHECK(!(out.flags & USTACK_TRACE_EVENT_HAS_VALUE));
}

static void test_tracepoint(void)
{
	struct ustack_record_opts o = { .sz = sizeof(o), .freq = 4999 };
	struct ustack_trace_event_desc d;
	struct rec_event ev;
	int ret;

	ret = rec_event_parse("syscalls:sys_enter_getppid", &ev, err, sizeof(err));
	if (ret == -ENODEV || (ret && access("/sys/kernel/tracing/events", F_OK) &&
			       access("/sys/kernel/debug/tracing/events", F_OK))) {
		SKIP("tracefs not mounted: %.200s", err);
		return;
	}
	CHECK_EQ(ret, 0);
	CHECK(ev.kind == &rec_event_tracepoint);
	CHECK_EQ(ev.kind->attach, REC_ATTACH_TRACEPOINT);
	CHECK(ev.perf.is_tracepoint && ev.perf.type == PERF_TYPE_TRACEPOINT && ev.perf.config);
	CHECK_STR(ev.tracepoint, "syscalls:sys_enter_getppid");
	CHECK_EQ_U64(ev.bpf_flags, UB_TP_SYSCALL);
	rec_event_describe(&ev, 1, &o, &d);
	CHECK_EQ(d.type, USTACK_TRACE_EV_TRACEPOINT);
	CHECK_EQ(d.flags, 0);
	CHECK_EQ_U64(d.period, 1); /* every hit, whatever -F says */

	CHECK_EQ(rec_event_parse("sched:sched_switch", &ev, err, sizeof(err)), 0);
	CHECK_EQ_U64(ev.bpf_flags, 0);
	CHECK_STR(ev.tracepoint, "sched:sched_switch");

	CHECK_EQ(rec_event_parse("nosuch:event", &ev, err, sizeof(err)), -ENOENT);
	CHECK(!strncmp(err, "unknown tracepoint subsystem 'nosuch'", 37));
	CHECK_EQ(rec_event_parse("sched:nosuch", &ev, err, sizeof(err)), -ENOENT);
	CHECK(!strncmp(err, "unknown tracepoint 'sched:nosuch'", 33));
}

int main(void)
{
	RUN(test_sampling);
	RUN(test_unknown);
	RUN(test_tracepoint);
	RUN(test_probe_alloc);
	TEST_EXIT();
}
