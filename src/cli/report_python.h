/* SPDX-License-Identifier: MIT */
/*
 * Python frames in the commands that read traces (report in every format,
 * flamegraph): a frame whose file id has a FILE_MAP of kind 10 is a Python
 * function (a PYFUNC record) at a line (docs/trace-format.md 4.3). Which
 * frames of a stack show: where a stack holds Python frames, the JIT
 * frames that name CPython's -X perf trampolines ("py::..." in the perf
 * map) are dropped, being the same functions told twice; --python-only
 * keeps the Python frames alone (docs/cli/report.md "Python frames").
 */
#ifndef USTACK_CLI_REPORT_PYTHON_H
#define USTACK_CLI_REPORT_PYTHON_H

#include <stdint.h>

#include <ustack/perfmap.h>
#include <ustack/trace.h>

struct report_py {
	/* a reader that has read every PYFUNC of the file (they may come
	 * after the stacks that name them), or NULL: none looked for */
	struct ustack_trace_reader *funcs;
	struct ustack_trace_reader *r;  /* the printing pass's reader (FILE_MAPs) */
	struct ustack_jitsyms *jit;     /* may be NULL */
	int python_only;
	uint64_t nfuncs;                /* PYFUNC records read by the first pass */
	uint64_t last_file, last_kind;  /* one-entry cache of file id -> kind */
};

/* The first pass: every PYFUNC of @path. 0 or -errno (open, -ENOMEM);
 * damage ends the pass quietly (the printing pass says where). */
int report_py__load(struct report_py *py, const char *path);
void report_py__close(struct report_py *py);

/* Is @f a Python frame? (its file id's FILE_MAP is of kind 10) */
int report_py__is_py(struct report_py *py, const struct ustack_trace_frame *f);

/* The function of Python frame @f: 0 and *@pf, or -ENOENT (no PYFUNC of
 * its id in the file: an unknown Python function, never another one) */
int report_py__func(const struct report_py *py, const struct ustack_trace_frame *f,
		    struct ustack_trace_pyfunc *pf);

/* Which of @st's frames a report shows: @keep[i] set for those; returns
 * how many. *@npy receives the number of Python frames. */
uint32_t report_py__select(struct report_py *py, const struct ustack_trace_stack *st, uint32_t pid,
			   uint8_t *keep, uint32_t *npy);

/* "py::" starts the perf map names of CPython's -X perf trampolines */
int report_py__is_trampoline(const char *jit_name);

/* The base name of a Python file, as folded output shows it */
const char *report_py__base(const char *file);

#endif
