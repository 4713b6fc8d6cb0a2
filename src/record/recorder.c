// SPDX-License-Identifier: MIT
/*
 * ustack_record(): the public recorder and its loop. The set-up is in
 * setup.c; the events are read by the backend (backend.h: copy or bpf),
 * the perf side-band applied by sideband.c, the records written through
 * sink.c. This file knows no backend and no event kind by name.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ustack/record.h>
#include <ustack/ustack.h>
#include "common/clock.h"
#include "common/compiler.h"
#include "common/log.h"
#include "common/opts.h"
#include "record/backend.h"
#include "record/core.h"
#include "record/rec.h"

/* The totals now into @st (r->st, or a copy of it for a const caller). */
static void fill_stats(const struct rec *r, struct ustack_record_stats *st)
{
	struct ustack_trace_stats ts;
	struct ustack_stackmap_stats ks, us;

	if (r->w) {
		ustack_trace_writer__stats(r->w, &ts, sizeof(ts));
		st->bytes = ts.bytes;
	}
	if (r->kmap && !ustack_stackmap__stats(r->kmap, &ks, sizeof(ks)))
		st->kernel_stacks = ks.entries;
	if (r->umap && !ustack_stackmap__stats(r->umap, &us, sizeof(us)))
		st->distinct_user_stacks = us.entries;
	st->bad_records = r->bad_maps;
	if (r->ps)
		st->bad_records += ustack_perf_session__bad_records(r->ps);
	st->kernel_bytes = r->ps ? ustack_perf_session__bytes(r->ps) : 0;
	if (r->be && r->be->stats)
		r->be->stats(r, st);
	rec_capture_stats(r, st);
	st->alloc_via = r->probes.alloc_via;
	st->seconds = (ustack_mono_ns() - r->t0) / 1e9;
}

/* One round: read what the kernel has, then see whether recording is over.
 * 0: go on; 1: over (the command ended, the processes are gone, the
 * duration passed, a write failed); -errno with the message set. */
static int rec_step(struct rec *r, int timeout_ms)
{
	const struct ustack_record_opts *o = r->o;
	struct epoll_event evs[8];
	char err[512];
	uint64_t ticks;
	int ret, status;

	if (timeout_ms && epoll_wait(r->run.epfd, evs, 8, timeout_ms) < 0 && errno != EINTR) {
		ret = -errno;
		rec_set_err(r, "waiting for the ring buffers: %s%s", strerror(-ret), "");
		return ret;
	}
	/* re-arm the tick's readiness (EAGAIN: it has not fired since) */
	if (read(r->run.tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		pr_debug("recorder tick: %s\n", strerror(errno));
	ret = r->be->read(r, err, sizeof(err));
	if (ret < 0) {
		rec_set_err(r, "%s%s", err, "");
		return ret;
	}
	rec_exits_due(r, ustack_mono_ns());
	rec_capture_drain(r);
	if (r->werr)
		return 1;
	if (o->stop && *o->stop)
		return 1;
	if (r->run.deadline && ustack_mono_ns() >= r->run.deadline)
		return 1;
	if (r->run.child > 0 && waitpid(r->run.child, &status, WNOHANG) == r->run.child) {
		r->st.child_status = status;
		r->run.child = 0;
		return 1;
	}
	if (!r->o->argv && !o->system_wide && o->nr_pids) {
		int alive = 0;

		for (int i = 0; i < o->nr_pids; i++)
			alive += !(kill(o->pids[i], 0) && errno == ESRCH);
		if (!alive)
			return 1;
	}
	if (ustack_mono_ns() - r->run.last_progress >= 1000000000ull) {
		/* a chunk a second reaches the disk: a full disk or a killed
		 * recorder loses at most the last second */
		ret = ustack_trace_writer__flush(r->w);
		if (ret && !r->werr)
			r->werr = ret;
		fill_stats(r, &r->st);
		if (o->progress)
			o->progress(o->progress_ctx, &r->st);
		r->run.last_progress = ustack_mono_ns();
	}
	return 0;
}

static void rec_end_child(struct rec *r);

/* Recording is over: what is still in the buffers, the entries still
 * open, the trace closed. 0 or -errno with the message set. */
static int rec_finish(struct rec *r)
{
	const struct ustack_record_opts *o = r->o;
	int ret = 0;

	ustack_perf_session__disable(r->ps);
	if (r->be->drain)
		r->be->drain(r);
	/* what is still in the buffers, and what waited for a later round */
	while (!r->werr && ustack_perf_session__poll_until(r->ps, 0, UINT64_MAX, rec_on_record, r) > 0)
		;
	/* what the kernel dropped at the end that no LOST record said */
	if (r->w) {
		struct ustack_trace_lost l = { .what = USTACK_TRACE_LOST_KERNEL,
					       .cpu = USTACK_TRACE_NO_CPU,
					       .count = ustack_perf_session__unreported_lost(r->ps) };

		if (l.count) {
			l.time = ustack_mono_ns();
			rec_write_lost(r, &l);
		}
	}
	r->be->finish(r);
	rec_end_child(r);
	rec_jit_finish(r);
	rec_capture_finish(r);
	fill_stats(r, &r->st);
	if (r->w) {
		int cret = ustack_trace_writer__close(r->w);
		struct stat sb;

		r->w = NULL;
		if (!r->werr && cret)
			r->werr = cret;
		if (!stat(o->output ? o->output : "ustack.data", &sb))
			r->st.bytes = sb.st_size;
	}
	if (!ret && r->werr) {
		ret = r->werr;
		if (r->errmsg[0])
			rec_set_err(r, "%s%s", r->errmsg, " (the trace is readable up to the last complete chunk)");
		else
			rec_set_err(r, "%s: %s (the trace is readable up to the last complete chunk)",
				o->output ? o->output : "ustack.data", strerror(-ret));
	}
	return ret;
}

/* The command, if it still runs: released if it never was (it exits on
 * the closed pipe), else left to finish on its own, as perf does. */
static void rec_end_child(struct rec *r)
{
	if (r->run.go_fd >= 0) {
		close(r->run.go_fd);
		r->run.go_fd = -1;
		if (r->run.child > 0) {
			waitpid(r->run.child, NULL, 0);
			r->run.child = 0;
		}
	}
	if (r->run.report_fd >= 0) {
		close(r->run.report_fd);
		r->run.report_fd = -1;
	}
	if (r->run.child > 0) {
		int status;

		if (waitpid(r->run.child, &status, WNOHANG) == r->run.child)
			r->st.child_status = status;
	}
}

static void rec_free(struct rec *r)
{
	if (!r)
		return;
	rec_end_child(r);
	if (r->w) { /* never finished: close what was written */
		ustack_trace_writer__close(r->w);
		r->w = NULL;
	}
	if (r->run.epfd >= 0)
		close(r->run.epfd);
	if (r->run.tfd >= 0)
		close(r->run.tfd);
	if (r->run.pidfd >= 0)
		close(r->run.pidfd);
	ustack_perf_session__close(r->ps);
	if (r->be)
		r->be->close(r);
	ustack_stackmap__free(r->kmap);
	ustack_stackmap__free(r->umap);
	rec_capture_free(r);
	ustack_recmaps__free(r->rm);
	free(r->exits.v);
	ustack_modcache__free(r->mc);
	rec_ksyms_free(r);
	free(r->comms.v);
	ustack_u64map__free(r->comms.of);
	rec_jit_free(r);
	rec_probes_free(r);
	free(r);
}

/* ---- the public recorder ------------------------------------------------------------ */

USTACK_API struct ustack_recorder *ustack_recorder__new(const struct ustack_record_opts *opts)
{
	struct rec *r;
	int ret;

	if (!OPTS_VALID(opts, struct ustack_record_opts)) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	/* our full-size copy: a field an older caller's struct lacks reads
	 * as 0 (its default) everywhere after this */
	if (opts)
		memcpy(&r->opts, opts, opts->sz < sizeof(r->opts) ? opts->sz : sizeof(r->opts));
	r->opts.sz = sizeof(r->opts);
	r->o = &r->opts;
	r->run.go_fd = r->run.report_fd = r->run.epfd = r->run.tfd = r->run.pidfd = -1;
	ret = rec_setup(r);
	if (ret) {
		rec_free(r);
		errno = -ret;
		return NULL;
	}
	return (struct ustack_recorder *)r;
}

USTACK_API int ustack_recorder__fd(const struct ustack_recorder *rec)
{
	return rec ? ((const struct rec *)rec)->run.epfd : -EINVAL;
}

USTACK_API int ustack_recorder__poll(struct ustack_recorder *rec, int timeout_ms)
{
	struct rec *r = (struct rec *)rec;
	int ret;

	if (!r)
		return -EINVAL;
	if (r->run.state != REC_RUNNING)
		return 1;
	ret = rec_step(r, timeout_ms);
	if (ret) {
		r->run.state = REC_OVER;
		r->run.result = ret < 0 ? ret : 0;
		return ret < 0 ? ret : 1;
	}
	return 0;
}

USTACK_API int ustack_recorder__read(struct ustack_recorder *rec)
{
	return ustack_recorder__poll(rec, 0);
}

USTACK_API int ustack_recorder__stop(struct ustack_recorder *rec)
{
	struct rec *r = (struct rec *)rec;
	int ret;

	if (!r)
		return -EINVAL;
	if (r->run.state == REC_FINISHED)
		return r->run.result;
	ret = rec_finish(r);
	if (!r->run.result)
		r->run.result = ret;
	r->run.state = REC_FINISHED;
	return r->run.result;
}

USTACK_API int ustack_recorder__stats(const struct ustack_recorder *rec,
				      struct ustack_record_stats *st, size_t sz)
{
	const struct rec *r = (const struct rec *)rec;
	struct ustack_record_stats now;

	if (!r || !st)
		return -EINVAL;
	now = r->st;
	if (r->run.state != REC_FINISHED)
		fill_stats(r, &now);
	ustack_copy_out(st, sz, &now, sizeof(now));
	return 0;
}

USTACK_API void ustack_recorder__free(struct ustack_recorder *rec)
{
	/* the open user stacks and the end record first, as __stop writes them */
	if (rec)
		ustack_recorder__stop(rec);
	rec_free((struct rec *)rec);
}

USTACK_API int ustack_record(const struct ustack_record_opts *o, struct ustack_record_stats *stats,
			     size_t stats_sz)
{
	struct ustack_recorder *rec;
	int ret;

	rec = ustack_recorder__new(o);
	if (!rec) {
		ret = -errno;
		if (stats)
			memset(stats, 0, stats_sz);
		return ret;
	}
	while (!(ret = ustack_recorder__poll(rec, 100)))
		;
	ret = ustack_recorder__stop(rec);
	if (stats)
		ustack_recorder__stats(rec, stats, stats_sz);
	ustack_recorder__free(rec);
	return ret;
}
