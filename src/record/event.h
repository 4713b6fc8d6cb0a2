/* SPDX-License-Identifier: MIT */
/*
 * What an event is: one struct of operations per kind of event `record -e`
 * accepts, in the manner of the kernel's struct file_operations.
 *
 *   sampling    (event_sampling.c)    cpu-clock, cycles, ...: a perf event
 *               sampled at a frequency; weight: one sample
 *   tracepoint  (event_tracepoint.c)  SUBSYSTEM:NAME: every hit; weight:
 *               one event
 *   off-cpu     (event_offcpu.c)  off-cpu, off-cpu-preempt: every interval
 *               a thread spends switched out asleep (or preempted); weight:
 *               its length in ns
 *   probe       (event_probe.c)   uprobe:, uretprobe:, usdt: (src/probe/):
 *               every hit; weight: one hit; payload: the return value or
 *               the USDT arguments (EVENT args)
 *   alloc       (event_alloc.c)   alloc, free (record --alloc): allocations
 *               kept by the byte sampling, weight: the bytes each stands
 *               for; the frees of those
 *
 * A kind says how it is named on the command line (parse, help), how it
 * attaches (attach: which perf event the session opens for it, and what
 * the BPF backend attaches its program to), what the trace says of it (its
 * EVENT_DESC: describe), and what weight each of its records carries into
 * the trace's EVENT and so through `report` (weigh: a count, nanoseconds,
 * bytes; the trace stores a weight other than 1 with
 * USTACK_TRACE_EVENT_HAS_VALUE).
 *
 * Adding a kind: one file implementing these operations and a line in
 * rec_event_kinds[] (events.c). A kind that attaches in a way neither
 * backend knows yet (a uprobe) adds an enum rec_attach value, and each
 * backend the case for it.
 */
#ifndef USTACK_RECORD_EVENT_H
#define USTACK_RECORD_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/record.h>
#include <ustack/trace.h>
#include "perf/perf_events.h"

struct rec_event_kind;

/* One event of the recording (one -e). */
struct rec_event {
	const struct rec_event_kind *kind;
	struct ustack_perf_event_spec perf; /* its name (as given), and how perf opens it */
	char tracepoint[128];               /* REC_ATTACH_TRACEPOINT: SUBSYSTEM:NAME */
	uint32_t bpf_flags;                 /* UB_TP_* the BPF program is given */
	uint32_t offcpu;                    /* REC_ATTACH_SCHED: REC_OFFCPU_* */
	uint32_t probe;                     /* REC_ATTACH_UPROBE: enum ustack_probe_kind */
	uint32_t alloc;                     /* REC_ATTACH_ALLOC: REC_ALLOC_* */
	uint64_t alloc_mean;                /* REC_ALLOC_ALLOC: the sampling mean in bytes
	                                       (set by the set-up from the options) */
};

/* The two events of allocation profiling. */
enum rec_alloc {
	REC_ALLOC_ALLOC = 1, /* "alloc": an allocation the byte sampling kept */
	REC_ALLOC_FREE = 2,  /* "free": the free of one of those */
};

/* The default mean of the byte sampling (jemalloc's lg_prof_sample 19). */
#define REC_ALLOC_MEAN_DEFAULT (512u * 1024)
#define REC_ALLOC_LIVE_DEFAULT (1u << 20)
#define REC_PROBE_RATE_DEFAULT 200000u

/* Which intervals an off-CPU event (REC_ATTACH_SCHED) records: switched
 * out asleep (TASK_INTERRUPTIBLE, TASK_UNINTERRUPTIBLE and the other
 * sleeping states: prev_state != TASK_RUNNING), or preempted while
 * runnable (prev_state == TASK_RUNNING). */
enum rec_offcpu {
	REC_OFFCPU_SLEEP = 1,   /* "off-cpu" */
	REC_OFFCPU_PREEMPT = 2, /* "off-cpu-preempt" */
};

/* How an event is attached: the perf event the session opens for it (copy
 * backend: each record samples the user registers and stack), and where
 * the BPF backend runs its program. */
enum rec_attach {
	/* a perf event with a period or frequency; the BPF program is
	 * attached to the perf event's fds */
	REC_ATTACH_PERF,
	/* a tracepoint: a record per hit; the BPF program is attached to
	 * the tracepoint itself (perf opens nothing for it then) */
	REC_ATTACH_TRACEPOINT,
	/* the scheduler's context switches (sched_switch): an event per
	 * interval a thread spends switched out, from its switch-out (where
	 * its stacks are taken, in its own context) to its switch-in (where
	 * the interval is written, weighing its length in ns). bpf: its own
	 * program on sched_switch; copy: perf's sched:sched_switch samples
	 * with the stack copy, paired with PERF_RECORD_SWITCH switch-ins */
	REC_ATTACH_SCHED,
	/* a user-space probe (uprobe, uretprobe, USDT) at every place
	 * (file, offset) its name resolves to (r->probes, probes.c): a record
	 * per hit, taken in the probed thread at the probe (user registers
	 * at hand: its own entry, UB_EV_USER_MODE). bpf: a uprobe program per
	 * place (libbpf); copy: perf's uprobe PMU with the stack copy */
	REC_ATTACH_UPROBE,
	/* the allocator's functions (malloc family, r->probes with
	 * rec_probe.alloc_fn), sampled by bytes in the kernel; bpf only */
	REC_ATTACH_ALLOC,
};

struct rec_event_kind {
	const char *name;      /* "sampling", "tracepoint" */
	/* what -e accepts of this kind, for the "unknown event" message */
	const char *help;
	enum rec_attach attach;
	/* 1 with @ev filled (perf.name is @spec already; perf's type and
	 * config, and for REC_ATTACH_TRACEPOINT the tracepoint, set here):
	 * @spec names an event of this kind; 0: not of this kind; -errno with
	 * @err: of this kind but unusable (no such tracepoint, tracefs not
	 * mounted). */
	int (*parse)(const char *spec, struct rec_event *ev, char *err, size_t errlen);
	/* Its EVENT_DESC (id and name are set by the caller). */
	void (*describe)(const struct rec_event *ev, const struct ustack_record_opts *o,
			 struct ustack_trace_event_desc *d);
	/* The weight of one record into @out (NULL: a count of 1, not stored).
	 * @raw: the value its source measured for the record, 0 where the
	 * source measures none (today's perf samples and BPF events: both
	 * kinds count). */
	void (*weigh)(const struct rec_event *ev, uint64_t raw, struct ustack_trace_event *out);
};

/* Every kind, in the order their parse is tried (a kind that claims any
 * "A:B" name, the tracepoint, comes last), NULL-terminated. */
extern const struct rec_event_kind *const rec_event_kinds[];

/* The -e @spec into @ev, by the first kind that claims it. 0, or -errno
 * with @err (no kind: "unknown event '...' (HELP of each kind)"). */
int rec_event_parse(const char *spec, struct rec_event *ev, char *err, size_t errlen);

/* The EVENT_DESC of event @id. */
void rec_event_describe(const struct rec_event *ev, uint32_t id, const struct ustack_record_opts *o,
			struct ustack_trace_event_desc *d);

/* Weigh one record of @ev into @out (a count of 1 when the kind has no
 * weigh). */
static inline void rec_event_weigh(const struct rec_event *ev, uint64_t raw,
				   struct ustack_trace_event *out)
{
	if (ev->kind->weigh)
		ev->kind->weigh(ev, raw, out);
}

extern const struct rec_event_kind rec_event_sampling;
extern const struct rec_event_kind rec_event_tracepoint;
extern const struct rec_event_kind rec_event_offcpu;
extern const struct rec_event_kind rec_event_probe;
extern const struct rec_event_kind rec_event_alloc;

/* The unbiased weight in bytes of an allocation of @size bytes kept by a
 * byte sampling of mean @mean: size / (1 - exp(-size / mean)), rounded
 * (@size itself when @mean is 1: every allocation is kept). */
uint64_t rec_alloc_weight(uint64_t size, uint64_t mean);

#endif
