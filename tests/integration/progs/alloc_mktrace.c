// SPDX-License-Identifier: MIT
/*
 * Writes traces for tests/integration/report_alloc.sh with the library's
 * trace writer, and prints its own listing of every event (one line each)
 * for the test to compute the expected views from, without ustack.
 *
 * usage: alloc_mktrace alloc FILE   allocations and frees
 *        alloc_mktrace probe FILE   probe hits with payloads
 *
 * Stacks are kernel stacks named by KSYM records (leaf first), so that
 * every name is known without any file:
 *   0: kfunc_a   1: kfunc_b <- kfunc_a   2: kfunc_c <- kfunc_a   3: kfunc_d
 * "alloc" (event 0, bytes, sampling mean 4096) and "free" (event 1) in
 * pids 10 ("app") and 20 ("other"), on CPUs 0 and 1. The file holds CPU
 * 1's events first, then CPU 0's (each in time order), as per-CPU buffers
 * drained in turn do: a free on CPU 1 of an allocation made on CPU 0
 * comes before it in the file and after it in time. Besides the generated
 * allocations, frees and address reuse, the listing holds on purpose:
 *   - a free of an address no kept allocation had (ignored),
 *   - an address allocated again while live (its free was lost),
 *   - a free in pid 20 of an address live in pid 10 (not that one's),
 *   - an allocation without args (left out of every view).
 * Listing: "alloc t=T pid=P tid=T cpu=C stack=S size=N addr=0xA value=V",
 * "free t=T pid=P tid=T cpu=C addr=0xA", "noargs t=... value=V",
 * "probe ..." lines with "args=a,b,c".
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/trace.h>

#define MEAN 4096
#define MAXEV 512

static const uint64_t k0[] = { 0xffffffff81000100ull };
static const uint64_t k1[] = { 0xffffffff81001100ull, 0xffffffff81000180ull };
static const uint64_t k2[] = { 0xffffffff81002100ull, 0xffffffff81000200ull };
static const uint64_t k3[] = { 0xffffffff81003100ull };

static int get_stack(void *ctx, uint32_t kind, uint32_t id, struct ustack_trace_stack *st)
{
	static const uint64_t *const ips[] = { k0, k1, k2, k3 };
	static const uint32_t nr[] = { 1, 2, 2, 1 };

	(void)ctx;
	if (kind != USTACK_TRACE_KSTACK || id > 3)
		return -1;
	st->id = id;
	st->kind = kind;
	st->nr = nr[id];
	st->ips = ips[id];
	return 0;
}

static struct ustack_trace_event evs[MAXEV];
static int nev;

/* the recorder's unbiased weight: size / (1 - exp(-size / mean)) */
static uint64_t weight(uint64_t size)
{
	return (uint64_t)((double)size / (1 - exp(-(double)size / MEAN)) + 0.5);
}

static struct ustack_trace_event *add(uint32_t id, uint64_t t, uint32_t pid, uint32_t cpu,
				      uint32_t stack)
{
	struct ustack_trace_event *e = &evs[nev++];

	*e = (struct ustack_trace_event){ .time = t, .pid = pid, .tid = pid + cpu, .cpu = cpu,
					  .event_id = id, .kstack_id = stack, .value = 1 };
	return e;
}

static void alloc_ev(uint64_t t, uint32_t pid, uint32_t cpu, uint32_t stack, uint64_t size,
		     uint64_t addr)
{
	struct ustack_trace_event *e = add(0, t, pid, cpu, stack);

	e->value = weight(size);
	e->flags = USTACK_TRACE_EVENT_HAS_VALUE | USTACK_TRACE_EVENT_HAS_ARGS;
	e->nr_args = 2;
	e->args[0] = size;
	e->args[1] = addr;
}

static void free_ev(uint64_t t, uint32_t pid, uint32_t cpu, uint64_t addr)
{
	struct ustack_trace_event *e = add(1, t, pid, cpu, USTACK_TRACE_NO_STACK);

	e->flags = USTACK_TRACE_EVENT_HAS_ARGS;
	e->nr_args = 1;
	e->args[0] = addr;
}

static void make_allocs(void)
{
	static const uint64_t sizes[] = { 16, 100, 1000, 4096, 10000, 70000 };
	static uint64_t busy[2][64]; /* per pid and address: in use until */
	uint32_t x = 12345;

	/* generated: 120 allocations, two thirds freed 500-5150 ns later on
	 * the other CPU (after the next allocations), each at an address not
	 * in use then, so that addresses come back as malloc's do */
	for (int i = 0; i < 120; i++) {
		uint64_t t = 1000000 + (uint64_t)i * 1000, ft;
		uint32_t pid = i % 3 ? 10 : 20, cpu, stack, size, slot;

		x = x * 1103515245u + 12345u;
		cpu = x >> 16 & 1;
		stack = x >> 17 & 3;
		size = (uint32_t)sizes[(x >> 19) % 6];
		for (slot = (x >> 22) & 63; busy[pid == 20][slot] >= t; slot = (slot + 1) & 63)
			;
		alloc_ev(t, pid, cpu, stack, size, 0x7f0000001000ull + slot * 0x100000);
		ft = t + 500 + (x >> 27) * 150;
		if ((x >> 25) % 3) {
			free_ev(ft, pid, !cpu, 0x7f0000001000ull + slot * 0x100000);
			busy[pid == 20][slot] = ft;
		} else {
			busy[pid == 20][slot] = UINT64_MAX;
		}
	}
	/* a free of an address never kept */
	free_ev(1050100, 10, 1, 0x7e0000000000ull);
	/* allocated again while live: the first one's free was lost */
	alloc_ev(1200000, 10, 0, 3, 5000, 0x7d0000000000ull);
	alloc_ev(1200100, 10, 0, 2, 6000, 0x7d0000000000ull);
	/* pid 20 frees an address pid 10 holds: not pid 10's */
	alloc_ev(1200200, 10, 0, 1, 7000, 0x7c0000000000ull);
	free_ev(1200300, 20, 1, 0x7c0000000000ull);
	/* no args: a damaged trace */
	add(0, 1200400, 10, 0, 0)->value = 999;
}

static void make_probes(void)
{
	struct ustack_trace_event *e;

	e = add(2, 2000000, 10, 0, 0);
	e->flags = USTACK_TRACE_EVENT_HAS_ARGS;
	e->nr_args = 3;
	e->args[0] = 1;
	e->args[1] = (uint64_t)-5;
	e->args[2] = 0x7f00dead0000ull;
	e = add(3, 2001000, 10, 0, 1);
	e->flags = USTACK_TRACE_EVENT_HAS_ARGS;
	e->nr_args = 1;
	e->args[0] = 42;
	add(4, 2002000, 10, 1, 1); /* a uprobe: no payload */
}

static void list(const struct ustack_trace_event *e)
{
	if (e->event_id == 0 && !(e->flags & USTACK_TRACE_EVENT_HAS_ARGS))
		printf("noargs t=%" PRIu64 " pid=%u value=%" PRIu64 "\n", e->time, e->pid, e->value);
	else if (e->event_id == 0)
		printf("alloc t=%" PRIu64 " pid=%u tid=%u cpu=%u stack=%u size=%" PRIu64
		       " addr=0x%" PRIx64 " value=%" PRIu64 "\n", e->time, e->pid, e->tid, e->cpu,
		       e->kstack_id, e->args[0], e->args[1], e->value);
	else if (e->event_id == 1)
		printf("free t=%" PRIu64 " pid=%u tid=%u cpu=%u addr=0x%" PRIx64 "\n", e->time, e->pid,
		       e->tid, e->cpu, e->args[0]);
	else {
		printf("probe t=%" PRIu64 " event=%u args=", e->time, e->event_id);
		for (uint32_t i = 0; i < e->nr_args; i++)
			printf("%s%" PRIu64, i ? "," : "", e->args[i]);
		printf("\n");
	}
}

/* CPU 1's events, then CPU 0's, each in time order */
static int file_order(const void *a, const void *b)
{
	const struct ustack_trace_event *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu > y->cpu ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

int main(int argc, char **argv)
{
	struct ustack_trace_header h = { .clock_id = 1, .hostname = "test", .cmdline = "alloc_mktrace" };
	struct ustack_trace_event_desc d[] = {
		{ .id = 0, .type = USTACK_TRACE_EV_ALLOC, .flags = USTACK_TRACE_EV_UNIT_BYTES,
		  .period = MEAN, .name = "alloc" },
		{ .id = 1, .type = USTACK_TRACE_EV_FREE, .name = "free" },
		{ .id = 2, .type = USTACK_TRACE_EV_PROBE, .name = "usdt:/usr/bin/app:prov:ev" },
		{ .id = 3, .type = USTACK_TRACE_EV_PROBE, .name = "uretprobe:/usr/bin/app:get" },
		{ .id = 4, .type = USTACK_TRACE_EV_PROBE, .name = "uprobe:/usr/bin/app:get" },
	};
	struct ustack_trace_ksym ks[] = {
		{ .addr = 0xffffffff81000000ull, .size = 0x1000, .name = "kfunc_a" },
		{ .addr = 0xffffffff81001000ull, .size = 0x1000, .name = "kfunc_b" },
		{ .addr = 0xffffffff81002000ull, .size = 0x1000, .name = "kfunc_c" },
		{ .addr = 0xffffffff81003000ull, .size = 0x1000, .name = "kfunc_d" },
	};
	struct ustack_trace_thread t[] = {
		{ .time = 100, .pid = 10, .tid = 10, .comm = "app" },
		{ .time = 100, .pid = 10, .tid = 11, .comm = "app" },
		{ .time = 100, .pid = 20, .tid = 20, .comm = "other" },
		{ .time = 100, .pid = 20, .tid = 21, .comm = "other" },
	};
	struct ustack_trace_writer_opts o = { .sz = sizeof(o), .get_stack = get_stack };
	struct ustack_trace_writer *w;
	int probes, first, last;

	if (argc != 3 || (strcmp(argv[1], "alloc") && strcmp(argv[1], "probe")))
		return 2;
	probes = !strcmp(argv[1], "probe");
	probes ? make_probes() : make_allocs();
	qsort(evs, (size_t)nev, sizeof(evs[0]), file_order);
	if (!(w = ustack_trace_writer__open(argv[2], &h, &o)))
		return 1;
	first = probes ? 2 : 0;
	last = probes ? 4 : 1;
	for (int i = first; i <= last; i++)
		if (ustack_trace_writer__add_event_desc(w, &d[i]))
			return 1;
	for (int i = 0; i < 4; i++)
		if (ustack_trace_writer__add_ksym(w, &ks[i]) || ustack_trace_writer__add_thread(w, &t[i]))
			return 1;
	for (int i = 0; i < nev; i++) {
		list(&evs[i]);
		if (ustack_trace_writer__add_event(w, &evs[i]))
			return 1;
	}
	return ustack_trace_writer__close(w) ? 1 : 0;
}
