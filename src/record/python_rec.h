/* SPDX-License-Identifier: MIT */
/*
 * Python frames in a recording (issue 32, bpf backend): which recorded
 * processes run CPython (found once, retried while the interpreter is not
 * started yet, again after an exec), the kernel told where their frames
 * are (pyprocs), and the Python words of a stack record turned into trace
 * frames: each code object read once per (pid, address, fingerprint),
 * named by a PYFUNC record, the frames placed under their
 * _PyEval_EvalFrameDefault native frames (python/pyplace.c).
 */
#ifndef USTACK_RECORD_PYTHON_REC_H
#define USTACK_RECORD_PYTHON_REC_H

#include <stdint.h>

#include "bpf/record_abi.h"
#include "bpfload/bpf_backend.h"

struct rec;
struct rec_py;

struct rec_py *rec_py__new(void);
void rec_py__free(struct rec_py *py);

/* @pid was seen (an event, a new executable mapping): looked for CPython
 * now if never, or if its last look was before an exec */
void rec_py__seen(struct rec *r, struct rec_py *py, struct ustack_bpf *bpf, uint32_t pid);
/* An event of @pid with a user stack walked at @time (CLOCK_MONOTONIC
 * ns): counted in python_early when @pid maps CPython whose interpreter
 * the kernel did not know of then (its stack has native frames only);
 * a process whose interpreter was not started at the last look is looked
 * at again (at most every 10 ms) */
void rec_py__event(struct rec *r, struct rec_py *py, struct ustack_bpf *bpf, uint32_t pid,
		   uint64_t time);
/* @pid exec'd: what it ran is gone; looked for again at its next event */
void rec_py__exec(struct rec_py *py, struct ustack_bpf *bpf, uint32_t pid);
/* Processes whose interpreter was not started at their last look:
 * looked at again when due (called at every read round). Returns when
 * the next one is due (CLOCK_MONOTONIC ns), 0: none waits */
/* At the end of the recording: a refusal still settling is said and counted */
void rec_py__end(struct rec *r, struct rec_py *py);

uint64_t rec_py__retry(struct rec *r, struct rec_py *py, struct ustack_bpf *bpf);

/* The Python frames the kernel read with a stack: @npy of them, two words
 * each (UB_PY_*), innermost first, naming code objects of process @pid.
 * From a checked stack record (after its native words) or copy record. */
struct rec_py_words {
	uint32_t pid, npy;
	const uint64_t *words;
};

/*
 * The trace words of a stack whose kernel walk read Python frames @pw
 * (@pw->npy > 0, @n + @pw->npy <= UB_MAX_FRAMES): its @n native frames
 * @native (2 * n words, as the recorder prepared them: from the stack
 * record, or unwound from the copy) with the Python frames placed among
 * them, into @out (room for 2 * UB_MAX_FRAMES words). @native_cut: the
 * native walk stopped before the outermost frame (its stop reason says
 * why): the innermost runs pair with the eval frames it has, and the
 * older ones come after its last frame, where the walk would have gone
 * on (counted in python_beyond_cut). Returns the frames written; the
 * native ones alone when the Python frames cannot be placed (counted).
 */
uint32_t rec_py__frames(struct rec *r, struct rec_py *py, const struct rec_py_words *pw,
			const uint64_t *native, uint32_t n, int native_cut, uint64_t *out);


#endif
