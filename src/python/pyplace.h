/* SPDX-License-Identifier: MIT */
/*
 * Python frames placed among native ones: the one rule snapshot and
 * record share. Each C-level call of _PyEval_EvalFrameDefault runs one
 * run of Python frames (an entry frame and the newer frames up to the
 * next entry); the native frames in that function and the runs pair off
 * in order.
 */
#ifndef USTACK_PYTHON_PYPLACE_H
#define USTACK_PYTHON_PYPLACE_H

#include <stddef.h>
#include <stdint.h>

/*
 * @is_eval[i] (i < @n, innermost first): native frame i is in
 * _PyEval_EvalFrameDefault; @entry[j] (j < @m, innermost first): Python
 * frame j is an entry frame. Sets @native_index[j] to the index of the
 * native frame that runs Python frame j, when the runs and those native
 * frames are as many; with @native_cut (the native walk stopped at its
 * depth limit, so its outermost frames are missing) the innermost runs
 * may outnumber the eval frames: those are placed and the older runs get
 * USTACK_PY_PLACE_BEYOND (they belong past the last native frame). Else
 * every native_index is -1 and @why says why: a count that does not
 * match is never placed by a guess.
 * @return 0 (placed, or @m is 0); -ERANGE: the counts differ
 */
#define USTACK_PY_PLACE_BEYOND (-2)
int ustack_py_place_runs(const uint8_t *is_eval, int n, const uint8_t *entry, int m,
			 int native_cut, int *native_index, char *why, size_t whylen);

#endif
