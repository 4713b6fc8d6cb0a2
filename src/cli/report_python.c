// SPDX-License-Identifier: MIT
/*
 * Python frames for the trace readers of the CLI (report_python.h).
 */
#include <errno.h>
#include <string.h>

#include "cli.h"
#include "report_python.h"
#include "trace/trace.h"

int report_py__load(struct report_py *py, const char *path)
{
	struct ustack_trace_reader_opts o = { .sz = sizeof(o),
					      .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_trace_record rec;
	int ret;

	py->funcs = ustack_trace_reader__open(path, &o);
	if (!py->funcs)
		return -errno;
	/* the records are kept by the reader itself, for its lookup */
	ustack_trace_reader__skim(py->funcs, 1u << USTACK_TRACE_PYFUNC);
	while ((ret = ustack_trace_reader__next(py->funcs, &rec, sizeof(rec))) == 1)
		py->nfuncs += rec.type == USTACK_TRACE_PYFUNC;
	return ret == -ENOMEM ? ret : 0;
}

void report_py__close(struct report_py *py)
{
	ustack_trace_reader__close(py->funcs);
	py->funcs = NULL;
}

int report_py__is_py(struct report_py *py, const struct ustack_trace_frame *f)
{
	struct ustack_file_map fm;

	if (!f->file_id || !py->r)
		return 0;
	if (f->file_id != py->last_file) {
		py->last_file = f->file_id;
		py->last_kind = ustack_trace_reader__file_map(py->r, f->file_id, &fm) ? 0 : fm.kind;
	}
	return py->last_kind == USTACK_TRACE_FILE_KIND_PYTHON;
}

int report_py__func(const struct report_py *py, const struct ustack_trace_frame *f,
		    struct ustack_trace_pyfunc *pf)
{
	if (!py->funcs)
		return -ENOENT;
	return ustack_trace_reader__pyfunc(py->funcs, ustack_trace_py_offset_func(f->offset), pf);
}

int report_py__is_trampoline(const char *jit_name)
{
	return jit_name && !strncmp(jit_name, "py::", 4);
}

uint32_t report_py__select(struct report_py *py, const struct ustack_trace_stack *st, uint32_t pid,
			   uint8_t *keep, uint32_t *npy)
{
	uint32_t kept = 0;

	*npy = 0;
	for (uint32_t i = 0; i < st->nr; i++) {
		keep[i] = report_py__is_py(py, &st->frames[i]);
		*npy += keep[i];
	}
	for (uint32_t i = 0; i < st->nr; i++) {
		const struct ustack_trace_frame *f = &st->frames[i];

		if (!keep[i] && *npy) {
			const struct ustack_perfmap_entry *je =
				!f->file_id && py->jit
					? ustack_jitsyms__lookup(py->jit, pid,
								 cli_frame_exact(f) ? f->offset
										    : f->offset - 1)
					: NULL;

			/* the trampoline of a Python function that the
			 * Python frame beside it names already */
			keep[i] = !py->python_only && !(je && report_py__is_trampoline(je->name));
		} else if (!*npy) {
			keep[i] = 1;
		}
		kept += keep[i];
	}
	return kept;
}

const char *report_py__base(const char *file)
{
	const char *s = strrchr(file, '/');

	return s && s[1] ? s + 1 : file;
}
