// SPDX-License-Identifier: MIT
/*
 * `ustack report --format speedscope|perf-script`: the trace's stitched
 * events turned into frames (kernel stack, then user stack, innermost
 * first, inlined functions as entries of their own) and handed to the
 * writers of out_speedscope.c / out_perfscript.c. Each distinct
 * (kernel stack, user stack) pair is resolved once.
 *
 * Weights: a clock sample weighs its period in ns, an event of a unit
 * other than a count (off-CPU intervals, trace format 1.3) its value in
 * that unit, any other event 1. With --wall every event weighs its
 * wall-clock ns (report_wall_ns(), as folded --wall does), each thread
 * has one profile of all its events in time order, and events without a
 * time meaning are left out.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/hashmap.h>
#include <ustack/perfmap.h>
#include <ustack/symbolize.h>
#include <ustack/trace.h>
#include "cli/cli.h"
#include "cli/out_viewers.h"
#include "cli/report_weight.h"
#include "cli/report_python.h"

#define MAX_CHAIN 64

struct ev_info {
	int known, has_desc;
	const char *name, *unit;
	uint64_t weight;
	struct ustack_trace_event_desc d; /* has_desc */
};

struct cli_report_viewer {
	enum cli_viewer_format fmt;
	struct ustack_trace_reader *r;
	struct ustack_symbolizer *sym;
	struct ustack_jitsyms *jit;
	FILE *out;
	struct cli_speedscope *ss;
	struct cli_perfscript *ps;
	struct ustack_u64map *uview; /* jit map << 32 | user stack id -> dense view */
	struct cli_frame *fr;        /* scratch */
	size_t nfr, fr_cap;
	struct ev_info ev[256];
	int wall;
	char jit_path[64];
	struct report_py *py; /* or NULL */
	uint8_t *keep;        /* report_py__select()'s, one stack */
	size_t keep_cap;
};

struct cli_report_viewer *cli_report_viewer__new(enum cli_viewer_format fmt,
						 struct ustack_trace_reader *r,
						 struct ustack_symbolizer *sym,
						 struct ustack_jitsyms *jit, const char *name,
						 FILE *out)
{
	struct cli_report_viewer *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->fmt = fmt;
	v->r = r;
	v->sym = sym;
	v->jit = jit;
	v->out = out;
	v->uview = ustack_u64map__new();
	if (fmt == CLI_VIEWER_SPEEDSCOPE)
		v->ss = cli_speedscope__new(name);
	else
		v->ps = cli_perfscript__new(out);
	if (!v->uview || (!v->ss && !v->ps)) {
		cli_report_viewer__free(v);
		errno = ENOMEM;
		return NULL;
	}
	return v;
}

void cli_report_viewer__free(struct cli_report_viewer *v)
{
	if (!v)
		return;
	cli_speedscope__free(v->ss);
	cli_perfscript__free(v->ps);
	ustack_u64map__free(v->uview);
	free(v->keep);
	free(v->fr);
	free(v);
}

static struct cli_frame *new_frame(struct cli_report_viewer *v)
{
	if (v->nfr == v->fr_cap) {
		size_t ncap = v->fr_cap ? 2 * v->fr_cap : 128;
		void *np = realloc(v->fr, ncap * sizeof(*v->fr));

		if (!np)
			return NULL;
		v->fr = np;
		v->fr_cap = ncap;
	}
	memset(&v->fr[v->nfr], 0, sizeof(v->fr[0]));
	return &v->fr[v->nfr++];
}

static int kernel_frames(struct cli_report_viewer *v, uint32_t id)
{
	struct ustack_trace_stack st;

	if (id == USTACK_TRACE_NO_STACK || ustack_trace_reader__stack(v->r, USTACK_TRACE_KSTACK, id, &st))
		return 0;
	for (uint32_t i = 0; i < st.nr; i++) {
		struct ustack_trace_ksym ks;
		struct cli_frame *f = new_frame(v);

		if (!f)
			return -ENOMEM;
		f->kernel = 1;
		f->addr = st.ips[i];
		f->dso = "[kernel.kallsyms]";
		if (ustack_trace_reader__ksym(v->r, st.ips[i], &ks) ||
		    (ks.size && st.ips[i] - ks.addr >= ks.size))
			continue;
		f->name = ks.name;
		f->sym_off = st.ips[i] - ks.addr;
		f->has_off = 1;
		/* a module's name, bare: the perf-script writer brackets it */
		if (ks.module && *ks.module)
			f->dso = ks.module;
	}
	return 0;
}

void cli_report_viewer__set_python(struct cli_report_viewer *v, struct report_py *py)
{
	v->py = py;
}

/* A Python frame: its function with file and line, no address or dso */
static int py_frame(struct cli_report_viewer *v, const struct ustack_trace_frame *tf)
{
	struct ustack_trace_pyfunc pf;
	struct cli_frame *f = new_frame(v);

	if (!f)
		return -ENOMEM;
	f->python = 1;
	if (report_py__func(v->py, tf, &pf)) {
		f->name = "??"; /* no PYFUNC of its id: unknown, not another */
		f->dso = "[python]";
		return 0;
	}
	f->name = pf.name;
	f->file = pf.file;
	f->dso = pf.file;
	f->line = ustack_trace_py_offset_line(tf->offset);
	return 0;
}

static int user_frames(struct cli_report_viewer *v, uint32_t id, uint32_t pid)
{
	struct ustack_trace_stack st;
	struct ustack_sym chain[MAX_CHAIN];
	uint32_t npy = 0;

	if (id == USTACK_TRACE_NO_STACK || ustack_trace_reader__stack(v->r, USTACK_TRACE_USTACK, id, &st))
		return 0;
	if (v->py && st.nr) {
		if (cli_grow((void **)&v->keep, &v->keep_cap, st.nr))
			return -ENOMEM;
		report_py__select(v->py, &st, pid, v->keep, &npy);
	}
	for (uint32_t i = 0; i < st.nr; i++) {
		const struct ustack_trace_frame *tf = &st.frames[i];
		const struct ustack_perfmap_entry *je;
		struct cli_frame *f;
		int n;

		if (npy && !v->keep[i])
			continue;
		if (npy && report_py__is_py(v->py, tf)) {
			if (py_frame(v, tf))
				return -ENOMEM;
			continue;
		}

		if (!tf->file_id && v->jit &&
		    (je = ustack_jitsyms__lookup(v->jit, pid,
						 cli_frame_exact(tf) ? tf->offset : tf->offset - 1))) {
			if (!(f = new_frame(v)))
				return -ENOMEM;
			f->jit = 1;
			f->name = je->name;
			f->addr = tf->offset;
			f->sym_off = tf->offset - je->start;
			f->has_off = 1;
			/* the writers copy what they keep: one buffer per call */
			snprintf(v->jit_path, sizeof(v->jit_path), "/tmp/perf-%" PRIu32 ".map", pid);
			f->dso = v->jit_path;
			continue;
		}
		n = ustack_symbolizer__symbolize_frames(v->sym, tf->file_id, tf->offset,
							cli_frame_exact(tf) ? USTACK_SYM_EXACT_PC : 0, chain,
							MAX_CHAIN, sizeof(chain[0]));
		if (n < 0)
			return n;
		if (n > MAX_CHAIN)
			n = MAX_CHAIN;
		for (int k = 0; k < n; k++) {
			const struct ustack_sym *sy = &chain[k];

			if (!(f = new_frame(v)))
				return -ENOMEM;
			f->addr = chain[n - 1].vaddr ? chain[n - 1].vaddr : tf->offset;
			f->dso = sy->path;
			if (chain[n - 1].status != USTACK_SYM_OK)
				break; /* no name: one frame, named after its file */
			f->name = sy->name;
			f->file = sy->file;
			f->line = sy->line;
			f->inlined = !!sy->inlined;
			if (!sy->inlined) {
				f->sym_off = sy->sym_offset;
				f->has_off = 1;
			}
		}
	}
	return 0;
}

void cli_report_viewer__set_wall(struct cli_report_viewer *v, int wall)
{
	v->wall = wall;
}

/* a unit as speedscope's schema names it ("none" for a count) */
static const char *speedscope_unit(uint32_t unit)
{
	switch (unit) {
	case USTACK_TRACE_EV_UNIT_NS: return "nanoseconds";
	case USTACK_TRACE_EV_UNIT_BYTES: return "bytes";
	default: return "none";
	}
}

static const struct ev_info *event_info(struct cli_report_viewer *v, uint32_t id)
{
	static struct ev_info other = { .known = 1, .name = "event", .unit = "none", .weight = 1 };
	struct ustack_trace_event_desc d;
	struct ev_info *e;

	if (id >= 256)
		return &other;
	e = &v->ev[id];
	if (e->known)
		return e;
	e->known = 1;
	e->name = "event";
	e->unit = "none";
	e->weight = 1;
	if (ustack_trace_reader__event_desc(v->r, id, &d))
		return e;
	e->has_desc = 1;
	e->d = d;
	e->name = d.name;
	if (report_unit(&d) != USTACK_TRACE_EV_UNIT_COUNT) {
		/* weighed by the value each event stores */
		e->unit = speedscope_unit(report_unit(&d));
		return e;
	}
	/* clock events count time: each sample stands for one period, in ns
	 * (a frequency is turned into its period); other events count 1 */
	if (d.type == USTACK_TRACE_EV_SAMPLE &&
	    (!strcmp(d.name, "cpu-clock") || !strcmp(d.name, "task-clock")) && d.period) {
		e->unit = "nanoseconds";
		e->weight = d.flags & USTACK_TRACE_EV_FREQ ? (1000000000u + d.period / 2) / d.period
							  : d.period;
	}
	return e;
}

static int viewer_event(struct cli_report_viewer *v, const struct ustack_trace_stitched *s,
			const char *comm, uint64_t weight, const char *unit);

int cli_report_viewer__event(struct cli_report_viewer *v, const struct ustack_trace_stitched *s,
			     const char *comm)
{
	return viewer_event(v, s, comm, UINT64_MAX, NULL);
}

int cli_report_viewer__event_weighed(struct cli_report_viewer *v,
				     const struct ustack_trace_stitched *s, const char *comm,
				     uint64_t weight, const char *unit)
{
	return viewer_event(v, s, comm, weight, unit);
}

/* @unit NULL: the event's own weight */
static int viewer_event(struct cli_report_viewer *v, const struct ustack_trace_stitched *s,
			const char *comm, uint64_t weight, const char *unit)
{
	const struct ustack_trace_event *e = &s->event;
	const struct ev_info *ei = event_info(v, e->event_id);
	const char *ev_name = ei->name;
	uint32_t uid = s->result == USTACK_TRACE_STITCH_OK ? s->ustack_id : USTACK_TRACE_NO_STACK;
	uint64_t view = UINT32_MAX, key;
	char args[REPORT_ARGS_MAX];
	int ret;

	/* a stored weight (its own period, an interval's ns) wins */
	if (!unit) {
		unit = ei->unit;
		weight = e->flags & USTACK_TRACE_EVENT_HAS_VALUE ? e->value : ei->weight;
	}
	if (v->wall) {
		weight = ei->has_desc ? report_wall_ns(&ei->d, e->value) : 0;
		if (!weight)
			return 0; /* no time meaning: not in the wall-clock view */
		unit = "nanoseconds";
		/* one event kind: speedscope gives each thread one profile of
		 * all its events in time order, stackcollapse-perf.pl (which
		 * keeps only the first event kind it meets) sums them all */
		ev_name = "wall";
	}

	if (uid != USTACK_TRACE_NO_STACK) {
		/* the same user stack names JIT frames per process map */
		uint64_t jit = ustack_jitsyms__map_index(v->jit, e->pid), *slot;
		int isnew;

		slot = ustack_u64map__slot(v->uview, jit << 32 | uid, &isnew);
		if (!slot)
			return -ENOMEM;
		if (isnew)
			*slot = ustack_u64map__count(v->uview) - 1;
		view = *slot;
	}
	key = (uint64_t)e->kstack_id << 32 | view;
	if (v->ss ? !cli_speedscope__has_stack(v->ss, key) : !cli_perfscript__has_stack(v->ps, key)) {
		v->nfr = 0;
		ret = kernel_frames(v, e->kstack_id);
		if (!ret)
			ret = user_frames(v, uid, e->pid);
		if (!ret)
			ret = v->ss ? cli_speedscope__add_stack(v->ss, key, v->fr, v->nfr)
				    : cli_perfscript__add_stack(v->ps, key, v->fr, v->nfr);
		if (ret)
			return ret;
	}
	if (v->ss)
		return cli_speedscope__add_sample(v->ss, e->tid, comm, ev_name, unit, key, weight);
	{
		struct cli_perfscript_sample smp = {
			.comm = comm, .pid = e->pid, .tid = e->tid, .cpu = e->cpu, .time = e->time,
			.period = weight, .event = ev_name,
		};

		/* a probe's payload after the event, as perf prints a
		 * tracepoint's fields; an allocation's stays in raw: words
		 * after the event would hide its weight (the period) from
		 * stackcollapse-perf.pl */
		if (!v->wall && ei->has_desc && ei->d.type == USTACK_TRACE_EV_PROBE &&
		    *report_fmt_args(args, &ei->d, e))
			smp.args = args;

		return cli_perfscript__sample(v->ps, &smp, key);
	}
}

int cli_report_viewer__finish(struct cli_report_viewer *v)
{
	return v->ss ? cli_speedscope__write(v->ss, v->out) : 0;
}
