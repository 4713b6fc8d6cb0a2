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
 * placed rather than something placed wrong. The one exception is a
 * native walk cut at its depth: its innermost frames are all there, so
 * the innermost runs pair with them from the inside.
 */
#include <errno.h>
#include <stdio.h>

#include "python/pyplace.h"

/* Runs of Python frames: one per entry frame, and one more for newer
 * frames above the last entry (a chain read without its outermost entry) */
static int count_runs(const uint8_t *entry, int m)
{
	int runs = 0;

	for (int j = 0; j < m; j++)
		if (entry[j] || j == m - 1)
			runs++;
	return runs;
}

int ustack_py_place_runs(const uint8_t *is_eval, int n, const uint8_t *entry, int m,
			 int native_cut, int *native_index, char *why, size_t whylen)
{
	int evals = 0, runs, j;

	for (j = 0; j < m; j++)
		native_index[j] = -1;
	if (m <= 0)
		return 0;
	for (int i = 0; i < n; i++)
		evals += !!is_eval[i];
	runs = count_runs(entry, m);
	if ((runs != evals && !(native_cut && runs > evals)) || !entry[m - 1]) {
		snprintf(why, whylen, "Python frames not placed: %d run%s of Python frames%s, "
			 "%d _PyEval_EvalFrameDefault frame%s", runs, runs == 1 ? "" : "s",
			 entry[m - 1] ? "" : " (the oldest without its entry frame)", evals,
			 evals == 1 ? "" : "s");
		return -ERANGE;
	}
	/* innermost first on both sides: the k-th eval frame from the inside
	 * runs the k-th run from the inside, as from the outside (same counts) */
	j = 0;
	for (int i = 0; i < n && j < m; i++) {
		if (!is_eval[i])
			continue;
		do
			native_index[j] = i;
		while (!entry[j++] && j < m);
	}
	for (; j < m; j++)
		native_index[j] = USTACK_PY_PLACE_BEYOND;
	return 0;
}
