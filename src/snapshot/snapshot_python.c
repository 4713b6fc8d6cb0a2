// SPDX-License-Identifier: MIT
/*
 * Python frames in a live snapshot.
 *
 * The interpreter is found once (src/python/). A thread's chain of Python
 * frames changes only while that thread runs, so it is read while the
 * thread is stopped, or blocked in the kernel between the two schedstat
 * reads that prove it did not run: the chain and the native stack are then
 * of the same moment, and their runs can be paired (py_place.c). The
 * reader reads every thread state each time (it has no per-thread entry);
 * only the chain of the thread in hand is kept, the others may be torn and
 * are dropped. The threads read are those that had a Python thread state
 * when the snapshot began: a process's other threads (a BLAS pool, a C
 * library's workers) cost nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/py_place.h"
#include "snapshot/snapshot_python.h"
#include "common/grow.h"

#define STR(x) #x
#define XSTR(x) STR(x)

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The tids of @th, sorted, into py->tids */
static int keep_tids(struct snap_py *py, const struct ustack_py_thread *th, int nr)
{
	py->tids = malloc((size_t)(nr > 0 ? nr : 1) * sizeof(*py->tids));
	if (!py->tids)
		return -ENOMEM;
	for (int i = 0; i < nr; i++)
		if (th[i].native_tid)
			py->tids[py->nr_tids++] = th[i].native_tid;
	qsort(py->tids, (size_t)py->nr_tids, sizeof(*py->tids), cmp_u64);
	return 0;
}

/* After the find (@ret): the tids of its thread states, the outcome in @st */
static int py_opened(struct snap_py *py, int ret, ustack_py_read_fn read, void *ctx,
		     struct ustack_snapshot_stats *st)
{
	struct ustack_py_thread *th = NULL;
	int nr = 0;

	if (ret) {
		/* no CPython: nothing to say */
		st->py_status = ret == -ENOENT ? 0 : ret;
		if (ret == -ENOENT)
			st->python[0] = 0;
		else if (!st->python[0])
			snprintf(st->python, sizeof(st->python), "CPython: %s", strerror(-ret));
		py->proc = NULL;
		return ret == -ENOMEM ? ret : 0;
	}
	ustack_py_proc__eval_range(py->proc, &py->lo, &py->hi);
	ustack_py_proc__eval_cold_range(py->proc, &py->clo, &py->chi);
	ret = ustack_py_proc__threads(py->proc, read, ctx, &th, &nr, st->python,
				      sizeof(st->python));
	if (!ret)
		ret = keep_tids(py, th, nr);
	ustack_py_threads_free(th, nr);
	if (ret) {
		/* the interpreter is there but its threads cannot be read:
		 * say so (the reader's message names it), read nothing */
		if (!st->python[0] || ret == -ENOMEM)
			snprintf(st->python, sizeof(st->python), "%s: %s",
				 ustack_py_proc__describe(py->proc), strerror(-ret));
		st->py_status = ret;
		ustack_py_proc__free(py->proc);
		py->proc = NULL;
		return ret == -ENOMEM ? ret : 0;
	}
	st->py_status = 1;
	snprintf(st->python, sizeof(st->python), "%s", ustack_py_proc__describe(py->proc));
	return 0;
}

int snap_py_open(struct snap_py *py, int pid, ustack_py_read_fn read, void *ctx,
		 struct ustack_snapshot_stats *st)
{
	st->py_status = 0;
	st->python[0] = 0;
	return py_opened(py, ustack_py_proc__find(pid, NULL, read, ctx, &py->proc, st->python,
						  sizeof(st->python)),
			 read, ctx, st);
}

int snap_py_open_maps(struct snap_py *py, const char *maps, ustack_py_read_fn read, void *ctx,
		      struct ustack_snapshot_stats *st)
{
	st->py_status = 0;
	st->python[0] = 0;
	return py_opened(py, ustack_py_proc__find_maps(maps, NULL, read, ctx, &py->proc, st->python,
						       sizeof(st->python)),
			 read, ctx, st);
}

static const char *stop_text(int stop)
{
	switch (stop) {
	case -ELOOP:
		return "a frame seen twice";
	case -E2BIG:
		return "more frames than " XSTR(USTACK_PY_MAX_FRAMES);
	case -EFAULT:
		return "a pointer into unmapped memory";
	case -EBADMSG:
		return "a field out of range";
	default:
		return strerror(-stop);
	}
}

/* Whether @t's chain runs on the C stack whose frames are @native: its
 * C-level eval state lies between the innermost and outermost frames' sp */
static int on_stack(const struct ustack_py_thread *t, const struct ustack_frame *native, int n)
{
	return t->nr > 0 && t->cstack && n > 1 && t->cstack >= native[0].sp &&
	       t->cstack < native[n - 1].sp;
}

/* @tid's chains in @th, innermost first, into @pick (*@np of them): those
 * on its C stack (several when a call entered another interpreter: the
 * lower the address, the newer), else the one thread state of @tid with
 * frames (another one with frames too: said in @t's note) */
static int pick_threads(const struct ustack_py_thread *th, int nr, int tid,
			const struct ustack_frame *native, int n,
			const struct ustack_py_thread **pick, struct snap_py_thread *t)
{
	const struct ustack_py_thread *got = NULL;
	int np = 0, others = 0;

	for (int i = 0; i < nr && np < SNAP_PY_MAX_CHAINS; i++) {
		int j = np++;

		if (!on_stack(&th[i], native, n)) {
			np--;
			continue;
		}
		for (; j > 0 && pick[j - 1]->cstack > th[i].cstack; j--)
			pick[j] = pick[j - 1];
		pick[j] = &th[i];
	}
	if (np)
		return np;
	for (int i = 0; i < nr; i++) {
		if (th[i].native_tid != (uint64_t)tid)
			continue;
		if (!got || (!got->nr && th[i].nr))
			got = &th[i];
		else if (th[i].nr)
			others++;
	}
	if (others)
		snprintf(t->note, sizeof(t->note), "thread states in %d interpreters, none "
			 "found on the thread's stack: only one's frames", others + 1);
	pick[0] = got;
	return got ? 1 : 0;
}

/* The frames of @np chains @pick into @t, the first's first */
static int copy_chains(const struct ustack_py_thread **pick, int np, struct snap_py_thread *t)
{
	int total = 0;

	for (int i = 0; i < np; i++)
		total += pick[i]->nr;
	if (!total)
		return 0;
	t->frames = malloc((size_t)total * sizeof(*t->frames));
	if (!t->frames)
		return -ENOMEM;
	for (int i = 0; i < np; i++) {
		memcpy(t->frames + t->nr, pick[i]->frames, (size_t)pick[i]->nr * sizeof(*t->frames));
		t->nr += pick[i]->nr;
	}
	return 0;
}

void snap_py_read(struct snap_py *py, int tid, const struct ustack_frame *native, int n,
		  ustack_py_read_fn read, void *ctx, struct snap_py_thread *t)
{
	const struct ustack_py_thread *pick[SNAP_PY_MAX_CHAINS];
	struct ustack_py_thread *th = NULL;
	uint64_t key = (uint64_t)tid;
	char err[160] = "";
	int nr = 0, np, ret;

	snap_py_thread_free(t);
	if (!py->proc || !bsearch(&key, py->tids, (size_t)py->nr_tids, sizeof(key), cmp_u64))
		return;
	ret = ustack_py_proc__threads(py->proc, read, ctx, &th, &nr, err, sizeof(err));
	if (ret) {
		snprintf(t->note, sizeof(t->note), "Python frames not read: %s",
			 err[0] ? err : strerror(-ret));
		return;
	}
	np = pick_threads(th, nr, tid, native, n, pick, t);
	if (copy_chains(pick, np, t))
		snprintf(t->note, sizeof(t->note), "Python frames not read: %s", strerror(ENOMEM));
	for (int i = 0; i < np; i++) {
		if (!pick[i]->stop)
			continue;
		/* a chain cut short ends the frames there: an older chain's
		 * frames after it would not be its callers */
		snprintf(t->note + strlen(t->note), sizeof(t->note) - strlen(t->note),
			 "%sPython frames end early: %s", t->note[0] ? "; " : "",
			 stop_text(pick[i]->stop));
		break;
	}
	ustack_py_threads_free(th, nr);
}

static uint32_t api_flags(uint32_t f)
{
	return (f & USTACK_PY_FRAME_ENTRY ? USTACK_SNAPSHOT_PYFRAME_ENTRY : 0) |
	       (f & USTACK_PY_FRAME_LINE_UNKNOWN ? USTACK_SNAPSHOT_PYFRAME_LINE_UNKNOWN : 0);
}

void snap_py_name(struct snap_py *py, struct snap_py_thread *t, const struct ustack_frame *native,
		  int n, struct ustack_snapshot_thread *th, struct ustack_snapshot_stats *st)
{
	char why[160] = "";
	void *out = py->out;

	py->note[0] = 0;
	if (t->nr && ustack_grow(&out, &py->cap_out, (size_t)t->nr, sizeof(*py->out), 64)) {
		snap_py_thread_free(t);
		snprintf(t->note, sizeof(t->note), "Python frames not read: %s", strerror(ENOMEM));
	}
	py->out = out;
	for (int j = 0; j < t->nr; j++) {
		const struct ustack_py_frame *f = &t->frames[j];

		py->out[j] = (struct ustack_snapshot_pyframe){
			.func = f->func, .file = f->file, .line = f->line > 0 ? (uint32_t)f->line : 0,
			.flags = api_flags(f->flags), .native_index = -1 };
	}
	if (t->nr) {
		st->py_threads++;
		if (ustack_py_place(native, n, py->lo, py->hi, py->clo, py->chi, py->out, t->nr, why, sizeof(why)))
			st->py_unplaced++;
	}
	snprintf(py->note, sizeof(py->note), "%s%s%s", t->note, t->note[0] && why[0] ? "; " : "",
		 why);
	th->nr_py_frames = t->nr;
	th->py_frames = t->nr ? py->out : NULL;
	th->py_note = py->note[0] ? py->note : NULL;
}

void snap_py_thread_free(struct snap_py_thread *t)
{
	free(t->frames);
	t->frames = NULL;
	t->nr = 0;
	t->note[0] = 0;
}

void snap_py_close(struct snap_py *py)
{
	ustack_py_proc__free(py->proc);
	free(py->tids);
	free(py->out);
	memset(py, 0, sizeof(*py));
}
