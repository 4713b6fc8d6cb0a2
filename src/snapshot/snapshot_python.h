/* SPDX-License-Identifier: MIT */
/*
 * The Python frames of a live snapshot (snapshot.c): the process's CPython
 * found once, each thread's chain read while that thread is stopped or
 * known not to run (as its native stack), then placed among its native
 * frames (py_place.h) when the thread is named.
 */
#ifndef USTACK_SNAPSHOT_PYTHON_H
#define USTACK_SNAPSHOT_PYTHON_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/snapshot.h>
#include <ustack/ustack.h>
#include "python/pyframes.h"

/* One process's CPython, for one snapshot (zeroed: none) */
struct snap_py {
	struct ustack_py_proc *proc;
	uint64_t lo, hi; /* _PyEval_EvalFrameDefault */
	uint64_t clo, chi; /* its cold part (0, 0: none) */
	/* native tids with a Python thread state when the snapshot began,
	 * sorted: the chains are read for those threads only */
	uint64_t *tids;
	int nr_tids;
	/* the thread being handed out: its frames as the API gives them */
	struct ustack_snapshot_pyframe *out;
	size_t cap_out;
	char note[320];
};

/* One thread's chain, between its read and its naming */
struct snap_py_thread {
	struct ustack_py_frame *frames; /* innermost first */
	int nr;
	char note[160]; /* why the chain is cut or missing; "" */
};

/*
 * Finds the CPython of @pid through @read/@ctx and the tids of its threads;
 * the outcome into @st (py_status, python). 0 when there is none or it is
 * not supported (said in @st: the snapshot goes on without), or -ENOMEM.
 */
int snap_py_open(struct snap_py *py, int pid, ustack_py_read_fn read, void *ctx,
		 struct ustack_snapshot_stats *st);

/* Chains of one thread at most: a call into another interpreter nests one */
#define SNAP_PY_MAX_CHAINS 8

/* The same for a core dump: its mappings as /proc/PID/maps text */
int snap_py_open_maps(struct snap_py *py, const char *maps, ustack_py_read_fn read, void *ctx,
		      struct ustack_snapshot_stats *st);

/* Reads @tid's chains into @t (freed first) if @tid is a Python thread:
 * those on its C stack (@native, its @n frames, just unwound), innermost
 * first; called while @tid is stopped or known not to run. */
void snap_py_read(struct snap_py *py, int tid, const struct ustack_frame *native, int n,
		  ustack_py_read_fn read, void *ctx, struct snap_py_thread *t);

/* @t's frames into @th (nr_py_frames, py_frames, py_note), placed among
 * its @n native frames @native; counted in @st. The pointers stay valid
 * until the next call or snap_py_thread_free(@t). */
void snap_py_name(struct snap_py *py, struct snap_py_thread *t, const struct ustack_frame *native,
		  int n, struct ustack_snapshot_thread *th, struct ustack_snapshot_stats *st);

void snap_py_thread_free(struct snap_py_thread *t);
void snap_py_close(struct snap_py *py);

#endif
