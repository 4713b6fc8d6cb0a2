// SPDX-License-Identifier: MIT
/* `ustack snapshot --format speedscope`: each thread's stack as one sample
 * of a profile of its own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/perfmap.h>
#include <ustack/snapshot.h>
#include "cli/out_viewers.h"
#include "cli/snapshot_py.h"

/* A Python frame as a function of its own: its file and line, no dso */
static void py_frame(struct cli_frame *fr, const struct ustack_snapshot_pyframe *pf)
{
	fr->name = pf->func;
	fr->file = pf->file;
	fr->line = pf->line;
}

int cli_speedscope__add_snapshot_thread(struct cli_speedscope *s,
					const struct ustack_snapshot_thread *t,
					struct ustack_perfmap *jit, const char *jit_path)
{
	size_t n = 0, cap = (size_t)(t->nr_frames > 0 ? t->nr_frames : 0) +
			    (size_t)(t->nr_lines > 0 ? t->nr_lines : 0) +
			    (size_t)(t->nr_py_frames > 0 ? t->nr_py_frames : 0) + 1;
	struct cli_frame *fr = calloc(cap, sizeof(*fr));
	int k = 0, pj = 0, ret;

	if (!fr)
		return -ENOMEM;
	for (int i = 0; i < t->nr_frames; i++) {
		const struct ustack_snapshot_frame *f = &t->frames[i];
		const struct ustack_perfmap_entry *je = NULL;
		const struct ustack_snapshot_pyframe *pf;
		int nl = 0;

		/* the Python frames this frame runs, inside of it */
		while ((pf = snap_py_before(t, i, &pj)))
			py_frame(&fr[n++], pf);
		/* this frame's inline chain: entries of t->lines, innermost first */
		while (t->lines && k < t->nr_lines && t->lines[k].frame < i)
			k++;
		while (t->lines && k + nl < t->nr_lines && t->lines[k + nl].frame == i)
			nl++;
		if (!f->symbol && !f->path && jit)
			je = ustack_perfmap__lookup(jit, (f->flags & USTACK_FRAME_EXACT_PC) ? f->pc
											   : f->pc - 1);
		if (je) {
			fr[n].name = je->name;
			fr[n].dso = jit_path;
			fr[n].jit = 1;
			n++;
			continue;
		}
		for (int j = 0; f->symbol && j < nl - 1; j++, n++) {
			fr[n].name = t->lines[k + j].function;
			fr[n].file = t->lines[k + j].file;
			fr[n].line = t->lines[k + j].line;
			fr[n].dso = f->path;
			fr[n].inlined = 1;
		}
		fr[n].name = f->symbol;
		fr[n].dso = f->path;
		fr[n].addr = f->pc;
		if (f->symbol && nl) {
			fr[n].file = t->lines[k + nl - 1].file;
			fr[n].line = t->lines[k + nl - 1].line;
		}
		n++;
	}
	/* not placed: inside of every native frame */
	if (pj < t->nr_py_frames) {
		size_t rest = (size_t)(t->nr_py_frames - pj);

		memmove(fr + rest, fr, n * sizeof(*fr));
		memset(fr, 0, rest * sizeof(*fr));
		for (size_t r = 0; r < rest; r++)
			py_frame(&fr[r], &t->py_frames[pj + (int)r]);
		n += rest;
	}
	ret = cli_speedscope__add_stack(s, (uint64_t)(uint32_t)t->tid, fr, n);
	if (!ret)
		ret = cli_speedscope__add_sample(s, (uint32_t)t->tid, t->comm, "snapshot", "none",
						 (uint64_t)(uint32_t)t->tid, 1);
	free(fr);
	return ret;
}
