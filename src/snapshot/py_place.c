// SPDX-License-Identifier: MIT
/*
 * Python frames placed under their _PyEval_EvalFrameDefault native frames.
 *
 * Every C-level call of _PyEval_EvalFrameDefault marks the first Python
 * frame it runs (the entry frame); the frames it calls itself, in Python,
 * run in the same native frame. So the native frames in that function and
 * the runs of Python frames (outermost first: an entry frame and the
 * newer frames up to the next entry) pair off in order, from the outermost
 * of each. When the two counts differ (a native frame of a build without
 * symbols, a thread caught between entering the function and pushing its
 * frame, a chain or a walk cut short), the pairing is unknown: nothing is
 * placed rather than something placed wrong.
 */
#include <errno.h>
#include <stdio.h>

#include "snapshot/py_place.h"

static int in_eval(const struct ustack_frame *f, uint64_t lo, uint64_t hi)
{
	/* a return address is past its call: the call's own pc is before it */
	uint64_t pc = f->pc - (f->flags & USTACK_FRAME_EXACT_PC ? 0 : 1);

	return pc >= lo && pc < hi;
}

/* Runs of Python frames: one per entry frame, and one more for newer
 * frames above the last entry (a chain read without its outermost entry) */
static int count_runs(const struct ustack_snapshot_pyframe *py, int m)
{
	int runs = 0;

	for (int j = 0; j < m; j++)
		if (py[j].flags & USTACK_SNAPSHOT_PYFRAME_ENTRY || j == m - 1)
			runs++;
	return runs;
}

int ustack_py_place(const struct ustack_frame *native, int n, uint64_t lo, uint64_t hi,
		    struct ustack_snapshot_pyframe *py, int m, char *why, size_t whylen)
{
	int evals = 0, runs, j;

	for (j = 0; j < m; j++)
		py[j].native_index = -1;
	if (m <= 0)
		return 0;
	if (lo >= hi) {
		snprintf(why, whylen, "Python frames not placed: _PyEval_EvalFrameDefault is not "
			 "among the interpreter's symbols");
		return -ENOENT;
	}
	for (int i = 0; i < n; i++)
		evals += in_eval(&native[i], lo, hi);
	runs = count_runs(py, m);
	if (runs != evals || !(py[m - 1].flags & USTACK_SNAPSHOT_PYFRAME_ENTRY)) {
		snprintf(why, whylen, "Python frames not placed: %d run%s of Python frames%s, "
			 "%d _PyEval_EvalFrameDefault frame%s", runs, runs == 1 ? "" : "s",
			 py[m - 1].flags & USTACK_SNAPSHOT_PYFRAME_ENTRY ? "" :
			 " (the oldest without its entry frame)", evals, evals == 1 ? "" : "s");
		return -ERANGE;
	}
	/* innermost first on both sides: the k-th eval frame from the inside
	 * runs the k-th run from the inside, as from the outside (same counts) */
	j = 0;
	for (int i = 0; i < n && j < m; i++) {
		if (!in_eval(&native[i], lo, hi))
			continue;
		do
			py[j].native_index = i;
		while (!(py[j++].flags & USTACK_SNAPSHOT_PYFRAME_ENTRY));
	}
	return 0;
}
