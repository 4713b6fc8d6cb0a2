/* SPDX-License-Identifier: MIT */
/*
 * A thread's Python frames put among its native frames (snapshot.c): each
 * native frame whose pc is in _PyEval_EvalFrameDefault runs one run of
 * Python frames (from an entry frame to the newest frame before the next
 * entry frame). Apart from snapshot.c so that a unit test gives it every
 * shape without a process.
 */
#ifndef USTACK_SNAPSHOT_PY_PLACE_H
#define USTACK_SNAPSHOT_PY_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/ustack.h>
#include <ustack/snapshot.h>

/*
 * Sets native_index of the @m Python frames @py (innermost first, their
 * flags set) to the index in @native (@n frames, innermost first) of the
 * _PyEval_EvalFrameDefault frame ([@lo, @hi), or its cold part [@clo,
 * @chi) where the compiler split one off) that runs each, when the
 * runs of Python frames and those native frames are as many; otherwise
 * every native_index is -1 and @why (@whylen bytes) says why: a count
 * that does not match is never placed by a guess.
 * @return 0 (placed, or @m is 0); -ENOENT: no range (a build without
 *         the symbol); -ERANGE: the counts differ
 */
int ustack_py_place(const struct ustack_frame *native, int n, uint64_t lo, uint64_t hi,
		    uint64_t clo, uint64_t chi, struct ustack_snapshot_pyframe *py, int m, char *why, size_t whylen);

#endif
