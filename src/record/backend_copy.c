// SPDX-License-Identifier: MIT
/*
 * The copy backend (backend.h): each perf sample carries the user
 * registers and a copy of the top of the user stack; the deferred engine
 * unwinds once per kernel entry, here in user space, from the sample that
 * opened it.
 *
 * Each sample becomes an EVENT at once, carrying its kernel stack id and
 * the cookie the deferred engine gave it. When the entry closes the
 * engine calls our consumer, which normalizes the frames to (file offset,
 * file id), stores the stack once and writes one USER_STACK record per
 * cookie. Readers stitch events to user stacks by tid and cookie. Where
 * the kernel defers user callchains itself (6.19+), kfp.c combines its
 * frames with ours.
 *
 * Off-CPU events (off-cpu, off-cpu-preempt) come from one
 * sched:sched_switch tracepoint: its sample is the thread's switch-out,
 * taken in its own context (the user registers saved at its kernel entry,
 * the stack copy, the kernel stack in schedule()), its raw prev_state
 * saying asleep or preempted. The same event asks for PERF_RECORD_SWITCH
 * records, whose switch-ins end the intervals (offcpu_pair.c pairs them).
 * The interval's EVENT is written at the switch-in; until then its cookie
 * is held, and a USER_STACK of a held cookie (its entry closed while the
 * thread was still off CPU: lost records, a full engine) waits for the
 * EVENT, which readers need first (docs/trace-format.md 4.2).
 *
 * Probe events (uprobe, uretprobe, usdt) open one perf event of perf's
 * uprobe PMU per place (r->probes): never a tracefs uprobe_events entry,
 * so the kernel removes each probe with its last fd, also when ustack is
 * killed. A hit's sample is taken at the probed user instruction: a
 * user-mode sample of its own, unwound from its copy like every sample.
 * Its payload (a uretprobe's rax, a USDT probe's arguments) comes from the
 * registers the sample carries and from the stack copy; an argument in
 * memory outside the copy cannot be read, and such a hit is written
 * without args (counted, said at the end), never with a made-up value.
 * perf's own throttle (kernel.perf_event_max_sample_rate per second per
 * event) is the only limit: there is no in-kernel --probe-rate here; its
 * THROTTLE records of probe events are counted and said at the end.
 */
#include <asm/ptrace.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/grow.h"
#include "common/log.h"
#include "common/opts.h"
#include "deferred/deferred.h"
#include "python/pyframes.h"
#include "record/backend.h"
#include "record/kfp.h"
#include "record/offcpu_pair.h"
#include "record/rec.h"

/* sched_switch's prev_state (__trace_sched_switch_state()): one bit of
 * TASK_REPORT (S D T t X Z P I), 0 for R, TASK_REPORT_MAX (0x100) for a
 * preemption; the same since Linux 4.14 */
#define PREV_STATE_MASK 0xffu
#define PREV_STATE_DEAD 0x30u /* X, Z: an exiting task's last switch-out */

struct copy_state {
	struct ustack_deferred *def;
	struct ustack_u64map *py_seen; /* pids said to run CPython (copy_mapped) */
	struct ustack_deferred_consumer consumer;
	/* the kernel's deferred user callchains (NULL: not used) */
	struct rec_kfp *kfp;
	/* the perf session's events (copy_perf_opts), laid out by open: */
	struct ustack_perf_event_spec specs[USTACK_PERF_MAX_SESSION_EVENTS];
	int nr_specs;
	/* the perf session's event index -> the recording's (-1: sched) */
	int ev_of_perf[USTACK_PERF_MAX_SESSION_EVENTS];
	/* -> the probe place (index in r->probes.v), -1: not a probe */
	int probe_of_perf[USTACK_PERF_MAX_SESSION_EVENTS];
	uint64_t args_unread; /* USDT hits written without args */
	uint64_t throttled;   /* perf's THROTTLE records of probe events */
	/* ---- off-CPU (oc NULL: not recorded) ---- */
	struct rec_offcpu_pair *oc;
	int sched_perf;            /* perf index of sched:sched_switch */
	int ev_sleep, ev_preempt;  /* the recording's off-cpu, off-cpu-preempt; -1 */
	uint32_t state_off, state_size, pid_off, pid_size; /* in the raw fields */
	struct ustack_perf_event_spec sched;
	uint64_t bad_raw;
	struct ustack_u64map *holds;    /* cookie -> its events not written yet */
	struct ustack_u64map *stash_of; /* cookie -> index in stash */
	struct ustack_trace_user_stack *stash;
	size_t nr_stash, cap_stash;
};

static int unwind_sample(void *ctx, const struct ustack_deferred_sample *s,
			 struct ustack_frame *frames, uint32_t max, uint32_t *stop)
{
	((struct rec *)ctx)->st.unwinds++;
	return rec_unwind_copy(ctx, s->pid, s->ip, s->sp, s->bp, s->has_bx ? &s->bx : NULL,
			       s->stack, s->stack_size, frames, max, stop);
}

/* ---- off-CPU: held cookies, their user stacks waiting ----------------------- */

/* The USER_STACK of a cookie whose off-CPU events are not written yet:
 * named now (the mapping picture as it is at the entry's end), written
 * after them. */
static void stash_user_stack(struct rec *r, struct ustack_trace_user_stack *u,
			     const struct ustack_deferred_stack *stack)
{
	struct copy_state *cs = r->be_state;

	if (rec_store_frames(r, u->pid, stack->frames, stack->nr, &u->stack_id) ||
	    ustack_grow((void **)&cs->stash, &cs->cap_stash, cs->nr_stash + 1,
			sizeof(*cs->stash), 16) ||
	    ustack_u64map__put(cs->stash_of, u->cookie, cs->nr_stash)) {
		r->st.no_user_stack += stack->nr_requests;
		return;
	}
	cs->stash[cs->nr_stash++] = *u;
}

static void hold(struct rec *r, uint64_t cookie)
{
	struct copy_state *cs = r->be_state;
	uint64_t *n = ustack_u64map__slot(cs->holds, cookie, NULL);

	if (n)
		(*n)++;
	else
		rec_werr(r, -ENOMEM);
}

/* An off-CPU event of @cookie is written (or will never be): the last one
 * lets its user stack out. */
static void release(struct rec *r, uint64_t cookie)
{
	struct copy_state *cs = r->be_state;
	uint64_t n, i;
	size_t last;

	if (!cookie || !ustack_u64map__get(cs->holds, cookie, &n))
		return;
	if (n > 1) {
		ustack_u64map__put(cs->holds, cookie, n - 1); /* there: allocates nothing */
		return;
	}
	ustack_u64map__delete(cs->holds, cookie, NULL);
	if (!ustack_u64map__delete(cs->stash_of, cookie, &i))
		return;
	rec_werr(r, ustack_trace_writer__add_user_stack(r->w, &cs->stash[i]));
	r->st.user_stacks++;
	last = --cs->nr_stash;
	if (i != last) {
		cs->stash[i] = cs->stash[last];
		ustack_u64map__put(cs->stash_of, cs->stash[i].cookie, i);
	}
}

/* A switch-out that will never have its switch-in. */
static void on_unpaired(void *ctx, const struct rec_offcpu_out *o)
{
	struct rec *r = ctx;

	r->st.offcpu_unpaired++;
	release(r, o->cookie);
}

/* ---- off-CPU: switch-outs and switch-ins ----------------------------------- */

/* A field of the sample's raw tracepoint data, as an integer. */
static int raw_field(const struct ustack_perf_sample *s, uint32_t off, uint32_t size,
		     uint64_t *v)
{
	if (!s->raw || (uint64_t)off + size > s->raw_size)
		return 0;
	if (size == 8)
		*v = ld_u64(s->raw + off);
	else if (size == 4)
		*v = ld_u32(s->raw + off);
	else
		return 0;
	return 1;
}

/* The recording's event a switch-out of @state belongs to, -1: none. */
static int offcpu_event(const struct copy_state *cs, uint64_t state)
{
	uint64_t st = state & PREV_STATE_MASK;

	if (st & PREV_STATE_DEAD)
		return -1; /* never switched in again: not an interval */
	return st ? cs->ev_sleep : cs->ev_preempt;
}

/*
 * The whole stack copy (and rbx) as the entry's tag: the only switch-outs
 * to share an unwind are those whose unwind input is the same bytes, so
 * two sleeps from different callers at the same ip and sp never share a
 * stack. Within one kernel entry the stack does not change, so the
 * intervals of one entry still share one unwind.
 */
static uint64_t stack_tag(const struct ustack_perf_sample *s)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ s->stack_size ^ (s->ubx * 0xff51afd7ed558ccdull);
	uint64_t n = s->stack_size / 8;

	for (uint64_t i = 0; i < n; i++) {
		h ^= ld_u64(s->stack + 8 * i);
		h = ((h << 27) | (h >> 37)) * 0xc4ceb9fe1a85ec53ull;
	}
	for (uint64_t i = 8 * n; i < s->stack_size; i++)
		h = (h ^ s->stack[i]) * 0x100000001b3ull;
	return h;
}

/* The user stack of a switch-out through the deferred engine: its cookie,
 * 0 for none (a kernel thread). */
static uint64_t offcpu_cookie(struct rec *r, const struct ustack_perf_record *rec)
{
	struct copy_state *cs = r->be_state;
	const struct ustack_perf_sample *s = &rec->sample;
	struct ustack_deferred_sample ds = {
		.pid = s->pid, .tid = s->tid, .cpu = s->cpu, .flags = USTACK_DEFERRED_KERNEL,
		.time = rec->time, .ip = s->uip, .sp = s->usp, .bp = s->ubp,
		.stack = s->stack, .stack_size = s->stack_size, .bx = s->ubx, .has_bx = 1,
	};
	uint64_t cookie = 0;
	int ret;

	if (!s->has_uregs || !(s->uip || s->usp))
		return 0;
	ds.tag = stack_tag(s);
	ret = ustack_deferred__request(cs->def, &cs->consumer, &ds, &cookie);
	if (ret == 1)
		r->st.shared++;
	return ret < 0 ? 0 : cookie;
}

/* A sched_switch sample: the thread in it (current, prev) switches out. */
static void on_switch_out(struct rec *r, const struct ustack_perf_record *rec)
{
	struct copy_state *cs = r->be_state;
	const struct ustack_perf_sample *s = &rec->sample;
	struct rec_offcpu_out o = {
		.pid = s->pid, .tid = s->tid, .cpu = s->cpu, .time = rec->time,
		.kstack_id = USTACK_TRACE_NO_STACK,
	};
	uint64_t state, prev_pid;
	int ret;

	if (!raw_field(s, cs->state_off, cs->state_size, &state) ||
	    !raw_field(s, cs->pid_off, cs->pid_size, &prev_pid) || (uint32_t)prev_pid != s->tid) {
		if (!cs->bad_raw++)
			pr_warn("sched_switch sample of tid %u without the fields its format "
				"file names: off-CPU intervals not recorded from such samples\n",
				s->tid);
		return;
	}
	/* the idle task, and switch-outs the filter let through but not asked for */
	if (!s->tid || (o.event = offcpu_event(cs, state)) < 0)
		return;
	if (s->nr_kips &&
	    ustack_stackmap__insert(r->kmap, s->kips, s->nr_kips, &o.kstack_id) < 0)
		o.kstack_id = USTACK_TRACE_NO_STACK;
	o.cookie = offcpu_cookie(r, rec);
	ret = rec_offcpu__switch_out(cs->oc, &o);
	if (!ret && o.cookie)
		hold(r, o.cookie);
	else if (ret)
		r->st.offcpu_unpaired++;
	if (ret == -ENOMEM)
		rec_werr(r, ret);
}

/* A PERF_RECORD_SWITCH: a switch-in ends the thread's interval. */
static void on_switch(struct rec *r, const struct ustack_perf_record *rec)
{
	struct copy_state *cs = r->be_state;
	struct rec_offcpu_out o;
	struct ustack_trace_event ev;
	uint64_t ns;

	if (!cs->oc || rec->sw.out ||
	    rec_offcpu__switch_in(cs->oc, rec->sw.pid, rec->sw.tid, rec->time, &o) != 1)
		return;
	ns = rec->time - o.time;
	if (ns < OPTS_GET(r->o, off_cpu_min_ns, 0)) {
		r->st.offcpu_short++;
		r->st.offcpu_short_ns += ns;
	} else {
		ev = (struct ustack_trace_event){
			.time = rec->time, .pid = o.pid, .tid = o.tid, .cpu = rec->sw.cpu,
			.event_id = (uint32_t)o.event, .kstack_id = o.kstack_id, .cookie = o.cookie,
		};
		rec_event_weigh(&r->events[o.event], ns, &ev);
		rec_write_event(r, &ev);
		r->st.offcpu_intervals++;
		r->st.offcpu_ns += ns;
		if (!o.cookie)
			r->st.no_user_stack++;
	}
	release(r, o.cookie);
}

/* The deferred engine delivers a cookie's stack: normalize, dedup, write. */
static void on_user_stack(struct ustack_deferred_consumer *c, uint64_t cookie,
			  const struct ustack_deferred_task *task, uint32_t cpu, uint64_t time,
			  const struct ustack_deferred_stack *stack)
{
	struct rec *r = c->ctx;
	struct copy_state *cs = r->be_state;
	struct ustack_trace_user_stack u = {
		.time = time, .pid = task->pid, .tid = task->tid, .cpu = cpu,
		.stop_reason = stack->stop, .cookie = cookie, .stack_id = USTACK_TRACE_NO_STACK,
	};

	if (stack->err) {
		/* withheld (lost records, misordered) or unwind error: the
		 * events with this cookie get no user stack */
		r->st.no_user_stack += stack->nr_requests;
		return;
	}
	if (cs->holds && ustack_u64map__get(cs->holds, cookie, NULL)) {
		stash_user_stack(r, &u, stack);
		return;
	}
	/* the kernel deferred this entry's user callchain too: combined there */
	if (cs->kfp && rec_kfp_user_stack(r, cs->kfp, cookie, task, &u, stack))
		return;
	rec_write_user_stack(r, &u, stack->frames, stack->nr, stack->nr_requests);
}

/* ---- probes: a hit's payload ----------------------------------------------- */

/* The stack copy as the memory a USDT operand is read from. */
struct copy_mem {
	uint64_t sp;
	const uint8_t *p;
	uint64_t n;
};

static int copy_mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct copy_mem *m = ctx;

	if (addr < m->sp || addr - m->sp > m->n || len > m->n - (addr - m->sp))
		return -EFAULT;
	memcpy(buf, m->p + (addr - m->sp), len);
	return 0;
}

/* perf's registers as the uapi struct pt_regs USDT operands index. */
static void sample_pt_regs(const struct ustack_perf_sample *s, struct pt_regs *pr)
{
	const uint64_t *g = s->gpregs;

	memset(pr, 0, sizeof(*pr));
	pr->rax = g[USTACK_PERF_AX], pr->rbx = g[USTACK_PERF_BX], pr->rcx = g[USTACK_PERF_CX];
	pr->rdx = g[USTACK_PERF_DX], pr->rsi = g[USTACK_PERF_SI], pr->rdi = g[USTACK_PERF_DI];
	pr->rbp = g[USTACK_PERF_BP], pr->rsp = g[USTACK_PERF_SP], pr->rip = g[USTACK_PERF_IP];
	pr->r8 = g[USTACK_PERF_R8], pr->r9 = g[USTACK_PERF_R9], pr->r10 = g[USTACK_PERF_R10];
	pr->r11 = g[USTACK_PERF_R11], pr->r12 = g[USTACK_PERF_R12], pr->r13 = g[USTACK_PERF_R13];
	pr->r14 = g[USTACK_PERF_R14], pr->r15 = g[USTACK_PERF_R15];
}

/* The USDT arguments of a hit, all of them or none (0: none readable). */
static uint32_t usdt_args(const struct ustack_probe_target *t, const struct ustack_perf_sample *s,
			  uint64_t *args)
{
	struct copy_mem m = { .sp = s->usp, .p = s->stack, .n = s->stack ? s->stack_size : 0 };
	struct pt_regs pr;
	uint32_t n = t->nr_args < USTACK_TRACE_MAX_ARGS ? t->nr_args : USTACK_TRACE_MAX_ARGS;

	sample_pt_regs(s, &pr);
	for (uint32_t i = 0; i < n; i++)
		if (ustack_usdt_arg_value(&t->args[i], &pr, copy_mem_read, &m, &args[i]))
			return 0;
	return n;
}

/* A hit's payload into @ev: a uretprobe's return value, the USDT
 * arguments; a plain uprobe has none. */
static void probe_payload(struct rec *r, const struct rec_probe *p,
			  const struct ustack_perf_sample *s, struct ustack_trace_event *ev)
{
	struct copy_state *cs = r->be_state;

	if (p->t.kind == USTACK_PROBE_UPROBE || (p->t.kind == USTACK_PROBE_USDT && !p->t.nr_args))
		return;
	if (!s->has_gpregs) {
		cs->args_unread++;
		return;
	}
	if (p->t.kind == USTACK_PROBE_URETPROBE) {
		ev->args[0] = s->gpregs[USTACK_PERF_AX];
		ev->nr_args = 1;
	} else if (!(ev->nr_args = usdt_args(&p->t, s, ev->args))) {
		cs->args_unread++;
		return;
	}
	ev->flags |= USTACK_TRACE_EVENT_HAS_ARGS;
}

/* ---- perf records ------------------------------------------------------------- */

static void on_sample(struct rec *r, const struct ustack_perf_record *rec)
{
	struct copy_state *cs = r->be_state;
	const struct ustack_perf_sample *s = &rec->sample;
	int evi = cs->ev_of_perf[s->event], probe = cs->probe_of_perf[s->event];
	struct ustack_trace_event ev = {
		.time = rec->time, .pid = s->pid, .tid = s->tid, .cpu = s->cpu,
		.event_id = (uint32_t)evi, .kstack_id = USTACK_TRACE_NO_STACK,
	};
	int ret;

	r->st.samples++;
	if (evi < 0) {
		on_switch_out(r, rec);
		return;
	}
	if (probe >= 0) {
		r->st.probe_hits++;
		r->st.probe_kept++;
		probe_payload(r, &r->probes.v[probe], s, &ev);
	}
	if (s->nr_kips &&
	    ustack_stackmap__insert(r->kmap, s->kips, s->nr_kips, &ev.kstack_id) < 0)
		ev.kstack_id = USTACK_TRACE_NO_STACK;
	if (s->has_uregs && (s->uip || s->usp)) {
		/* a probe's hit is taken at the probed user instruction: a
		 * user-mode sample, its own entry, whatever cpumode perf says */
		struct ustack_deferred_sample ds = {
			.pid = s->pid, .tid = s->tid, .cpu = s->cpu,
			.flags = s->kernel_mode && probe < 0 ? USTACK_DEFERRED_KERNEL : 0,
			.time = rec->time, .ip = s->uip, .sp = s->usp, .bp = s->ubp,
			.stack = s->stack, .stack_size = s->stack_size, .bx = s->ubx, .has_bx = 1,
		};

		/* the return-address word at sp tells two entries from the
		 * same ip/sp apart when no user-mode sample separated them */
		if (s->stack_size >= 8)
			memcpy(&ds.tag, s->stack, 8);
		/* The kernel's deferred-callchain cookie names the kernel entry
		 * exactly (6.19+): the samples of one entry share it, also
		 * those a system call's tracepoints take with the user
		 * registers (user-mode samples to the engine otherwise), and
		 * two entries from the same registers differ in it. */
		if (cs->kfp && s->has_kcookie) {
			ds.flags = USTACK_DEFERRED_KERNEL;
			ds.tag = s->kcookie;
		}
		ret = ustack_deferred__request(cs->def, &cs->consumer, &ds, &ev.cookie);
		if (ret == 1)
			r->st.shared++;
		else if (ret < 0)
			ev.cookie = 0;
		if (cs->kfp && s->has_kcookie && ev.cookie)
			rec_kfp_sample(r, cs->kfp, s, ev.cookie);
	}
	if (!ev.cookie)
		r->st.no_user_stack++;
	rec_event_weigh(&r->events[evi], 0, &ev);
	rec_write_event(r, &ev);
}

/* ---- the operations ------------------------------------------------------------ */

/* Only the switch-outs asked for reach user space: the ones of the other
 * kind would cost a stack copy each. X and Z (exits) never do. */
static void sched_filter(const struct rec *r, const struct copy_state *cs, char *f, size_t n)
{
	const char *sleep = "prev_state & 0xcf", *pre = "prev_state == 0 || prev_state == 256";

	if (cs->ev_sleep >= 0 && cs->ev_preempt >= 0)
		snprintf(f, n, "(%s || %s)", sleep, pre);
	else
		snprintf(f, n, "(%s)", cs->ev_sleep >= 0 ? sleep : pre);
	/* -a: not the idle task's */
	if (OPTS_GET(r->o, system_wide, 0))
		snprintf(f + strlen(f), n - strlen(f), " && prev_pid != 0");
}

/* The off-CPU events asked for: sched:sched_switch, where its prev_state
 * and prev_pid are, the pairing. */
static int open_offcpu(struct rec *r, struct copy_state *cs, char *err, size_t errlen)
{
	struct ustack_perf_event_spec *sp = &cs->sched;
	int ret;

	cs->ev_sleep = cs->ev_preempt = -1;
	for (int i = 0; i < r->nr_events; i++)
		if (r->events[i].kind->attach == REC_ATTACH_SCHED)
			*(r->events[i].offcpu == REC_OFFCPU_SLEEP ? &cs->ev_sleep : &cs->ev_preempt) = i;
	if (cs->ev_sleep < 0 && cs->ev_preempt < 0)
		return 0;
	if ((ret = ustack_perf_tracepoint("sched:sched_switch", sp, err, errlen)) ||
	    (ret = ustack_perf_tracepoint_field("sched:sched_switch", "prev_state", &cs->state_off,
						&cs->state_size, err, errlen)) ||
	    (ret = ustack_perf_tracepoint_field("sched:sched_switch", "prev_pid", &cs->pid_off,
						&cs->pid_size, err, errlen)))
		return ret;
	snprintf(sp->name, sizeof(sp->name), "sched:sched_switch");
	/* no deferred callchain of the kernel's: see copy_perf_opts() */
	sp->flags = USTACK_PERF_EV_RAW | USTACK_PERF_EV_SWITCHES | USTACK_PERF_EV_NO_DEFER;
	sched_filter(r, cs, sp->filter, sizeof(sp->filter));
	cs->oc = rec_offcpu__new(on_unpaired, r);
	cs->holds = ustack_u64map__new();
	cs->stash_of = ustack_u64map__new();
	if (!cs->oc || !cs->holds || !cs->stash_of) {
		snprintf(err, errlen, "setting up the off-CPU intervals: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

/* Room for one more perf event in the session, or the refusal naming how
 * many the probes need. */
static int room(const struct rec *r, const struct copy_state *cs, int ev, char *err,
		size_t errlen)
{
	size_t places = 0;

	if (cs->nr_specs < USTACK_PERF_MAX_SESSION_EVENTS)
		return 0;
	for (size_t j = 0; j < r->probes.nr; j++)
		places += r->events[r->probes.v[j].event].kind->attach == REC_ATTACH_UPROBE;
	snprintf(err, errlen, "event %s: the probes name %zu places; the copy backend opens a perf "
		 "event per place, at most %d with the other events: use --backend bpf, or name "
		 "fewer functions", r->events[ev].perf.name, places, USTACK_PERF_MAX_SESSION_EVENTS);
	return -E2BIG;
}

/* The perf events of probe event @ev: one of perf's uprobe PMU per place. */
static int layout_probes(struct rec *r, struct copy_state *cs, int ev, char *err, size_t errlen)
{
	int ret;

	for (size_t j = 0; j < r->probes.nr; j++) {
		const struct rec_probe *p = &r->probes.v[j];
		struct ustack_perf_event_spec *sp;

		if (p->event != ev)
			continue;
		if ((ret = room(r, cs, ev, err, errlen)))
			return ret;
		sp = &cs->specs[cs->nr_specs];
		memset(sp, 0, sizeof(*sp));
		snprintf(sp->name, sizeof(sp->name), "%s", r->events[ev].perf.name);
		/* the path stays in r->probes while the session opens */
		ret = ustack_perf_uprobe(p->t.path, p->t.offset, p->t.kind == USTACK_PROBE_URETPROBE,
					 p->t.ref_ctr_offset, sp, err, errlen);
		if (ret)
			return ret;
		/* the copy at the hit is exact: nothing for the kernel to defer */
		sp->flags |= USTACK_PERF_EV_NO_DEFER;
		sp->pid = p->pid > 0 ? p->pid : 0;
		cs->ev_of_perf[cs->nr_specs] = ev;
		cs->probe_of_perf[cs->nr_specs++] = (int)j;
		r->st.probe_attached++;
	}
	return 0;
}

/*
 * The session's events: the recording's in order, a probe event as its
 * places, the off-CPU events as one sched_switch event, last. Its samples
 * take no deferred callchain of the kernel's even where it has them
 * (6.19+): it would come at the return to user space, after the
 * switch-in, frame pointers only, for a stack the copy at the switch-out
 * already holds.
 */
static int layout_events(struct rec *r, struct copy_state *cs, char *err, size_t errlen)
{
	int ret;

	for (int i = 0; i < USTACK_PERF_MAX_SESSION_EVENTS; i++)
		cs->ev_of_perf[i] = cs->probe_of_perf[i] = -1;
	for (int i = 0; i < r->nr_events; i++) {
		enum rec_attach a = r->events[i].kind->attach;

		if (a == REC_ATTACH_ALLOC) {
			snprintf(err, errlen, "--alloc needs the bpf backend (its byte sampling runs "
				 "in the kernel): use --backend bpf or auto");
			return -EOPNOTSUPP;
		}
		if (a == REC_ATTACH_SCHED)
			continue;
		if (a == REC_ATTACH_UPROBE) {
			if ((ret = layout_probes(r, cs, i, err, errlen)))
				return ret;
			continue;
		}
		if ((ret = room(r, cs, i, err, errlen)))
			return ret;
		cs->ev_of_perf[cs->nr_specs] = i;
		cs->specs[cs->nr_specs++] = r->events[i].perf;
	}
	if (cs->oc) {
		if ((ret = room(r, cs, 0, err, errlen)))
			return ret;
		cs->sched_perf = cs->nr_specs;
		cs->specs[cs->nr_specs++] = cs->sched;
	}
	return 0;
}

/* The deferred engine, and the kernel's callchains where it has them
 * (6.19+) unless turned off. */
static int copy_open(struct rec *r, char *err, size_t errlen)
{
	struct ustack_deferred_opts dopts = { .sz = sizeof(dopts) };
	struct copy_state *cs = calloc(1, sizeof(*cs));
	int ret;

	r->be_state = cs;
	if (cs && !(cs->py_seen = ustack_u64map__new())) {
		free(cs);
		r->be_state = cs = NULL;
	}
	if (!cs) {
		snprintf(err, errlen, "setting up the deferred unwinder (%s CPUs): %s", "all",
			 strerror(ENOMEM));
		return -ENOMEM;
	}
	if ((ret = open_offcpu(r, cs, err, errlen)) || (ret = layout_events(r, cs, err, errlen)))
		return ret;
	if (!OPTS_GET(r->o, no_kernel_callchains, 0)) {
		int k = ustack_perf_probe_defer_callchain();

		r->st.kernel_callchains = k > 0 ? USTACK_KCC_USED : USTACK_KCC_UNSUPPORTED;
		if (k > 0 && !(cs->kfp = rec_kfp_new())) {
			snprintf(err, errlen, "setting up the kernel's callchains: %s",
				 strerror(ENOMEM));
			return -ENOMEM;
		}
	}
	dopts.nr_cpus = (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
	dopts.max_frames = MAX_USER_FRAMES;
	dopts.unwind = unwind_sample;
	dopts.unwind_ctx = r;
	cs->def = ustack_deferred__new(&dopts);
	ret = cs->def ? ustack_deferred__init_consumer(cs->def, &cs->consumer, on_user_stack, r)
		      : -errno;
	if (ret)
		snprintf(err, errlen, "setting up the deferred unwinder (%s CPUs): %s", "all",
			 strerror(-ret));
	return ret;
}

static void copy_perf_opts(struct rec *r, struct ustack_perf_opts *po,
			   struct ustack_perf_event_spec *scratch)
{
	struct copy_state *cs = r->be_state;

	(void)scratch; /* the layout is open's (layout_events): it may be longer */
	po->defer_callchain = cs->kfp != NULL;
	po->events = cs->specs;
	po->nr_events = cs->nr_specs;
	/* a switch-out is a 16 KiB copy, and a context-switch storm makes
	 * thousands a second: 16 MiB per CPU rides out a reader kept off its
	 * CPU for ~0.25 s at 4000 switches/s (lost records cost intervals) */
	if (cs->oc && !po->pages && sysconf(_SC_NPROCESSORS_CONF) <= 16)
		po->pages = 4096;
}

static int cs_nr_specs(const struct rec *r)
{
	return ((const struct copy_state *)r->be_state)->nr_specs;
}

static int copy_watch(struct rec *r, int (*add)(void *ctx, int fd), void *ctx)
{
	int ret;

	for (int i = 0; i < cs_nr_specs(r); i++)
		if ((ret = ustack_perf_session__for_each_fd(r->ps, i, add, ctx)))
			return ret;
	return 0;
}

static int copy_read(struct rec *r, char *err, size_t errlen)
{
	int ret = ustack_perf_session__poll(r->ps, 0, rec_on_record, r);

	if (ret < 0)
		snprintf(err, errlen, "reading the perf ring buffers: %s (the trace is "
			 "readable up to the last complete chunk)", strerror(-ret));
	return ret;
}

static void copy_record(struct rec *r, const struct ustack_perf_record *rec)
{
	struct copy_state *cs = r->be_state;

	if (rec->type == USTACK_PREC_SAMPLE)
		on_sample(r, rec);
	else if (rec->type == USTACK_PREC_SWITCH)
		on_switch(r, rec);
	else if (rec->type == USTACK_PREC_DEFERRED && cs->kfp)
		rec_kfp_deferred(r, cs->kfp, rec);
	else if (rec->type == USTACK_PREC_THROTTLE && rec->throttle.on &&
		 rec->throttle.event >= 0 && cs->probe_of_perf[rec->throttle.event] >= 0)
		cs->throttled++;
}

/*
 * An exec or a new executable mapping made by @tid: the stack of an entry
 * @tid still has open was unwound already, but its frames are named (file
 * id, offset) only when the entry closes, from the mapping picture as it
 * is then. Close it now, before the picture changes: the task ran user
 * code since that entry to make this call, so no later sample can join it
 * (the kernel's deferred unwind would have run on that return to user
 * space). Without this the last stack before an exec was named from the
 * new image (file id 0), and a library dlclose()d and replaced at the same
 * address took the frames of the one sampled.
 */
static void copy_remap(struct rec *r, uint32_t tid, int exec)
{
	struct copy_state *cs = r->be_state;

	ustack_deferred__task_exit(cs->def, tid);
	if (exec && cs->kfp)
		rec_kfp_exec(r, cs->kfp, tid);
}

static void copy_exit(struct rec *r, uint32_t tid)
{
	struct copy_state *cs = r->be_state;

	ustack_deferred__task_exit(cs->def, tid);
	if (cs->oc)
		rec_offcpu__task_exit(cs->oc, tid);
	if (cs->kfp)
		rec_kfp_exit(r, cs->kfp, tid);
}

static void copy_lost(struct rec *r, uint32_t cpu, uint64_t time)
{
	struct copy_state *cs = r->be_state;

	ustack_deferred__lost(cs->def, cpu, time);
	/* a switch-in lost with a later switch-out would pair wrong halves */
	if (cs->oc)
		rec_offcpu__lost(cs->oc, time);
}

static void copy_finish(struct rec *r)
{
	struct copy_state *cs = r->be_state;

	/* first: their user stacks then need not wait */
	if (cs->oc)
		rec_offcpu__flush(cs->oc);
	ustack_deferred__flush(cs->def);
	if (cs->kfp)
		rec_kfp_finish(r, cs->kfp);
	if (cs->throttled)
		pr_warn("perf throttled the probe events %llu times (more hits per second than "
			"kernel.perf_event_max_sample_rate): their hits in those ticks were not "
			"recorded; --backend bpf limits by --probe-rate and counts what it drops\n",
			(unsigned long long)cs->throttled);
	if (cs->args_unread)
		pr_warn("%llu probe hits written without their arguments: an operand in memory "
			"outside the stack copy (--stack-size), or no registers in the sample\n",
			(unsigned long long)cs->args_unread);
}

/* A CPython process: its frames are on the interpreter's heap, not in
 * the stack copy, and have changed by the time the copy is read. Said
 * once, counted per process. */
static void copy_mapped(struct rec *r, uint32_t pid, uint64_t start)
{
	struct copy_state *cs = r->be_state;
	const struct pm_vma *v = ustack_recmaps__find(r->rm, pid, start);
	uint64_t seen;

	if (!cs || !v || !v->name || OPTS_GET(r->o, no_python, 0) ||
	    ustack_py_path_minor(v->name) < 0 || ustack_u64map__get(cs->py_seen, pid, &seen))
		return;
	if (ustack_u64map__put(cs->py_seen, pid, 1))
		return;
	if (!r->st.python_copy++)
		pr_warn("pid %u runs CPython (%s): its Python frames cannot be recorded with the "
			"copy backend (they are on the interpreter's heap, not in the stack copy): "
			"use --backend bpf\n", pid, v->name);
}

static void copy_close(struct rec *r)
{
	struct copy_state *cs = r->be_state;

	if (!cs)
		return;
	rec_kfp_free(cs->kfp);
	ustack_u64map__free(cs->py_seen);
	ustack_deferred__free(cs->def);
	rec_offcpu__free(cs->oc);
	ustack_u64map__free(cs->holds);
	ustack_u64map__free(cs->stash_of);
	free(cs->stash);
	free(cs);
	r->be_state = NULL;
}

const struct rec_backend_ops rec_backend_copy = {
	.name = "copy",
	.id = USTACK_RECORD_COPY,
	.open = copy_open,
	.perf_opts = copy_perf_opts,
	.watch = copy_watch,
	.read = copy_read,
	.record = copy_record,
	.remap = copy_remap,
	.mapped = copy_mapped,
	.exit = copy_exit,
	.lost = copy_lost,
	.finish = copy_finish,
	.close = copy_close,
};
