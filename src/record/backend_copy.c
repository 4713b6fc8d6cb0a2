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
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/opts.h"
#include "deferred/deferred.h"
#include "record/backend.h"
#include "record/kfp.h"
#include "record/rec.h"

struct copy_state {
	struct ustack_deferred *def;
	struct ustack_deferred_consumer consumer;
	/* the kernel's deferred user callchains (NULL: not used) */
	struct rec_kfp *kfp;
};

static int unwind_sample(void *ctx, const struct ustack_deferred_sample *s,
			 struct ustack_frame *frames, uint32_t max, uint32_t *stop)
{
	((struct rec *)ctx)->st.unwinds++;
	return rec_unwind_copy(ctx, s->pid, s->ip, s->sp, s->bp, s->has_bx ? &s->bx : NULL,
			       s->stack, s->stack_size, frames, max, stop);
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
	/* the kernel deferred this entry's user callchain too: combined there */
	if (cs->kfp && rec_kfp_user_stack(r, cs->kfp, cookie, task, &u, stack))
		return;
	rec_write_user_stack(r, &u, stack->frames, stack->nr, stack->nr_requests);
}

/* ---- perf records ------------------------------------------------------------- */

static void on_sample(struct rec *r, const struct ustack_perf_record *rec)
{
	struct copy_state *cs = r->be_state;
	const struct ustack_perf_sample *s = &rec->sample;
	struct ustack_trace_event ev = {
		.time = rec->time, .pid = s->pid, .tid = s->tid, .cpu = s->cpu,
		.event_id = (uint32_t)s->event, .kstack_id = USTACK_TRACE_NO_STACK,
	};
	int ret;

	r->st.samples++;
	if (s->nr_kips &&
	    ustack_stackmap__insert(r->kmap, s->kips, s->nr_kips, &ev.kstack_id) < 0)
		ev.kstack_id = USTACK_TRACE_NO_STACK;
	if (s->has_uregs && (s->uip || s->usp)) {
		struct ustack_deferred_sample ds = {
			.pid = s->pid, .tid = s->tid, .cpu = s->cpu,
			.flags = s->kernel_mode ? USTACK_DEFERRED_KERNEL : 0,
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
	rec_event_weigh(&r->events[s->event], 0, &ev);
	rec_write_event(r, &ev);
}

/* ---- the operations ------------------------------------------------------------ */

/* The deferred engine, and the kernel's callchains where it has them
 * (6.19+) unless turned off. */
static int copy_open(struct rec *r, char *err, size_t errlen)
{
	struct ustack_deferred_opts dopts = { .sz = sizeof(dopts) };
	struct copy_state *cs = calloc(1, sizeof(*cs));
	int ret;

	r->be_state = cs;
	for (int i = 0; i < r->nr_events; i++) {
		if (r->events[i].kind->attach == REC_ATTACH_SCHED) {
			snprintf(err, errlen, "copy backend: %s is not recorded yet",
				 r->events[i].perf.name);
			return -EOPNOTSUPP;
		}
	}
	if (!cs) {
		snprintf(err, errlen, "setting up the deferred unwinder (%s CPUs): %s", "all",
			 strerror(ENOMEM));
		return -ENOMEM;
	}
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

	po->defer_callchain = cs->kfp != NULL;
}

static int copy_watch(struct rec *r, int (*add)(void *ctx, int fd), void *ctx)
{
	int ret;

	for (int i = 0; i < USTACK_PERF_MAX_EVENTS + 1; i++)
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
	else if (rec->type == USTACK_PREC_DEFERRED && cs->kfp)
		rec_kfp_deferred(r, cs->kfp, rec);
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
	if (cs->kfp)
		rec_kfp_exit(r, cs->kfp, tid);
}

static void copy_lost(struct rec *r, uint32_t cpu, uint64_t time)
{
	ustack_deferred__lost(((struct copy_state *)r->be_state)->def, cpu, time);
}

static void copy_finish(struct rec *r)
{
	struct copy_state *cs = r->be_state;

	ustack_deferred__flush(cs->def);
	if (cs->kfp)
		rec_kfp_finish(r, cs->kfp);
}

static void copy_close(struct rec *r)
{
	struct copy_state *cs = r->be_state;

	if (!cs)
		return;
	rec_kfp_free(cs->kfp);
	ustack_deferred__free(cs->def);
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
	.exit = copy_exit,
	.lost = copy_lost,
	.finish = copy_finish,
	.close = copy_close,
};
