// SPDX-License-Identifier: MIT
/*
 * The perf side-band applied: COMM, MMAP2, FORK and EXIT keep the mapping
 * picture and the thread names current and become THREAD records, LOST
 * becomes a LOST record; the backend hears of each through its operations
 * (backend.h) and gets the records it unwinds from (SAMPLE,
 * CALLCHAIN_DEFERRED). Both backends read the side-band from perf.
 */
#include <string.h>

#include "common/clock.h"
#include "common/grow.h"
#include "record/backend.h"
#include "record/rec.h"

/* ---- processes that exited ------------------------------------------------- */

/* The mapping picture of @pid, whose main thread exited, is dropped a
 * second from now (struct rec, exits). */
static void exit_later(struct rec *r, uint32_t pid)
{
	if (ustack_grow((void **)&r->exits.v, &r->exits.cap, r->exits.nr + 1, sizeof(*r->exits.v),
			16)) {
		ustack_recmaps__exit(r->rm, pid);
		return;
	}
	r->exits.v[r->exits.nr++] = (struct rec_exit){ .pid = pid, .due = ustack_mono_ns() + 1000000000ull };
}

/* @pid is a new process (a reused pid): its earlier holder's drop is done
 * by the fork itself, a later one would drop the new picture */
static void exits_forget(struct rec *r, uint32_t pid)
{
	size_t j = 0;

	for (size_t i = 0; i < r->exits.nr; i++)
		if (r->exits.v[i].pid != pid)
			r->exits.v[j++] = r->exits.v[i];
	r->exits.nr = j;
}

/* Drop the pictures whose time came (in exit order: due times ascend). */
void rec_exits_due(struct rec *r, uint64_t now)
{
	size_t i = 0;

	if (!r->exits.nr)
		return;
	while (i < r->exits.nr && r->exits.v[i].due <= now)
		ustack_recmaps__exit(r->rm, r->exits.v[i++].pid);
	memmove(r->exits.v, r->exits.v + i, (r->exits.nr - i) * sizeof(*r->exits.v));
	r->exits.nr -= i;
}

/* ---- records --------------------------------------------------------------------- */

/* A new executable mapping: what waits for the task is named from the
 * picture before it changes (the backend's remap), then the mapping is in
 * it (the backend's mapped). */
static void on_mmap2(struct rec *r, const struct ustack_perf_record *rec)
{
	if (r->be->remap)
		r->be->remap(r, rec->mmap2.tid, 0);
	rec_map_result(r, ustack_recmaps__mmap(r->rm, rec->mmap2.pid, rec->mmap2.start,
					   rec->mmap2.len, rec->mmap2.pgoff,
					   rec->mmap2.maj, rec->mmap2.min,
					   rec->mmap2.ino, rec->mmap2.build_id,
					   rec->mmap2.build_id_size,
					   rec->mmap2.filename),
		   rec->mmap2.pid, rec->mmap2.filename);
	if (r->be->mapped)
		r->be->mapped(r, rec->mmap2.pid, rec->mmap2.start);
}

void rec_on_record(void *ctx, const struct ustack_perf_record *rec)
{
	struct rec *r = ctx;
	const struct rec_backend_ops *be = r->be;

	switch (rec->type) {
	case USTACK_PREC_SAMPLE:
	case USTACK_PREC_DEFERRED:
	case USTACK_PREC_SWITCH:
	case USTACK_PREC_THROTTLE:
		if (be->record)
			be->record(r, rec);
		break;
	case USTACK_PREC_COMM:
		if (rec->comm.exec) {
			/* what waits for this task is written, named from the
			 * mapping picture before the exec changes it */
			if (be->remap)
				be->remap(r, rec->comm.tid, 1);
			if (rec->comm.pid == rec->comm.tid)
				ustack_recmaps__exec(r->rm, rec->comm.pid);
		}
		rec_write_thread(r, rec->time, rec->comm.pid, rec->comm.tid,
			     rec->comm.exec ? USTACK_TRACE_THREAD_EXEC : 0, rec->comm.comm);
		break;
	case USTACK_PREC_MMAP2:
		if (rec->mmap2.prot & 4 /* PROT_EXEC */)
			on_mmap2(r, rec);
		break;
	case USTACK_PREC_FORK:
		if (rec->task.pid != rec->task.ppid) {
			exits_forget(r, rec->task.pid); /* a reused pid */
			rec_map_result(r, ustack_recmaps__fork(r->rm, rec->task.pid, rec->task.ppid),
				   rec->task.pid, "fork");
		}
		rec_write_thread(r, rec->time, rec->task.pid, rec->task.tid, USTACK_TRACE_THREAD_FORK,
			     rec_thread_comm(r, rec->task.ptid));
		break;
	case USTACK_PREC_EXIT:
		if (be->exit)
			be->exit(r, rec->task.tid);
		rec_write_thread(r, rec->time, rec->task.pid, rec->task.tid, USTACK_TRACE_THREAD_EXIT,
			     rec_thread_comm(r, rec->task.tid));
		rec_forget_thread(r, rec->task.tid);
		if (rec->task.pid == rec->task.tid) {
			exit_later(r, rec->task.pid);
			rec_jit_exit(r, rec->task.pid);
		}
		break;
	case USTACK_PREC_LOST: {
		struct ustack_trace_lost l = { .time = rec->time, .what = USTACK_TRACE_LOST_KERNEL,
					       .cpu = rec->lost.cpu, .count = rec->lost.lost };

		if (be->lost)
			be->lost(r, rec->lost.cpu, rec->time);
		rec_write_lost(r, &l);
		break;
	}
	}
}
