/* SPDX-License-Identifier: MIT */
/*
 * A snapshot thread's Python frames among its native frames, for every
 * output of `ustack snapshot`: placed frames come right before (inside of)
 * the _PyEval_EvalFrameDefault frame that runs them; native_index grows
 * with the frame's index in py_frames[] (innermost first on both sides),
 * so one cursor walks both lists.
 */
#ifndef USTACK_CLI_SNAPSHOT_PY_H
#define USTACK_CLI_SNAPSHOT_PY_H

#include <ustack/snapshot.h>

/* The next Python frame that goes before native frame @i (innermost
 * first), from *@j on, or NULL */
static inline const struct ustack_snapshot_pyframe *
snap_py_before(const struct ustack_snapshot_thread *t, int i, int *j)
{
	if (*j < t->nr_py_frames && t->py_frames[*j].native_index == i)
		return &t->py_frames[(*j)++];
	return NULL;
}

/* Outermost first (folded): the next Python frame that goes after native
 * frame @i, from *@j (counting down from nr_py_frames - 1), or NULL */
static inline const struct ustack_snapshot_pyframe *
snap_py_after(const struct ustack_snapshot_thread *t, int i, int *j)
{
	if (*j >= 0 && t->py_frames[*j].native_index == i)
		return &t->py_frames[(*j)--];
	return NULL;
}

#endif
