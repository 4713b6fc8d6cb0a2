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
/* @pid exec'd: what it ran is gone; looked for again at its next event */
void rec_py__exec(struct rec_py *py, struct ustack_bpf *bpf, uint32_t pid);
/* Processes whose interpreter was not started at their last look:
 * looked at again when due (called at every read round). Returns when
 * the next one is due (CLOCK_MONOTONIC ns), 0: none waits */
/* At the end of the recording: a refusal still settling is said and counted */
void rec_py__end(struct rec *r, struct rec_py *py);

uint64_t rec_py__retry(struct rec *r, struct rec_py *py, struct ustack_bpf *bpf);

/*
 * The trace words of the checked stack record @s (@s->npy > 0): its
 * native frames @native (2 * s->nr words, as the recorder prepared them)
 * with the Python frames placed among them, into @out (room for
 * 2 * UB_MAX_FRAMES words). Returns the frames written; the native ones
 * alone when the Python frames cannot be placed (counted).
 */
uint32_t rec_py__frames(struct rec *r, struct rec_py *py, const struct ub_stack *s,
			const uint64_t *native, uint64_t *out);


#endif
