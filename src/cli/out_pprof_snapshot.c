// SPDX-License-Identifier: MIT
/*
 * ustack snapshot --format pprof: one sample per thread (sample type
 * threads/count, value 1) with thread, pid and comm labels
 * (docs/cli/snapshot.md, "pprof").
 *
 * A snapshot has the real addresses of one live process, so mappings are
 * its VMAs (start, end, file offset, path and build ID from
 * /proc/PID/maps, through the procmaps API) and locations keep their pcs
 * (a return address minus one: the call instruction).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include <elf.h>

#include <ustack/procmaps.h>
#include "cli/out_pprof.h"

struct snapshot_pprof {
	int pid;
	struct pprof *pp;
	struct ustack_procmaps *pm; /* NULL when the maps cannot be read */
};

static uint64_t vma_mapping(struct snapshot_pprof *sp, uint64_t addr);

/* The program's entry point from /proc/PID/auxv (AT_ENTRY), 0 if unknown. */
static uint64_t auxv_entry(int pid)
{
	uint64_t av[2], entry = 0;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fread(av, sizeof(av), 1, f) == 1 && av[0] != AT_NULL)
		if (av[0] == AT_ENTRY)
			entry = av[1];
	fclose(f);
	return entry;
}

struct snapshot_pprof *snapshot_pprof__new(int pid)
{
	struct snapshot_pprof *sp = calloc(1, sizeof(*sp));

	if (!sp)
		return NULL;
	sp->pid = pid;
	sp->pp = pprof__new();
	if (!sp->pp || pprof__add_sample_type(sp->pp, "threads", "count")) {
		snapshot_pprof__free(sp);
		errno = ENOMEM;
		return NULL;
	}
	/* without the maps, locations are plain addresses (no mapping) */
	sp->pm = ustack_procmaps__open(pid, NULL);
	/* pprof takes the first mapping for the profiled binary ("File:"):
	 * the executable's, found from its entry point (AT_ENTRY) */
	if (sp->pm) {
		uint64_t entry = auxv_entry(pid);

		if (entry)
			vma_mapping(sp, entry);
	}
	return sp;
}

void snapshot_pprof__free(struct snapshot_pprof *sp)
{
	if (!sp)
		return;
	ustack_procmaps__close(sp->pm);
	pprof__free(sp->pp);
	free(sp);
}

static uint64_t vma_mapping(struct snapshot_pprof *sp, uint64_t addr)
{
	struct ustack_vma vma;
	struct ustack_file_map fm;
	char hex[2 * USTACK_BUILD_ID_MAX + 1] = "";

	if (!sp->pm || ustack_procmaps__query(sp->pm, addr, &vma) || !vma.name ||
	    (vma.kind != USTACK_VMA_FILE && vma.kind != USTACK_VMA_VDSO))
		return 0;
	if (vma.file_id && !ustack_procmaps__file_map(sp->pm, vma.file_id, &fm)) {
		static const char dg[] = "0123456789abcdef";
		uint32_t n = fm.build_id_size > USTACK_BUILD_ID_MAX ? USTACK_BUILD_ID_MAX
								    : fm.build_id_size;

		for (uint32_t k = 0; k < n; k++) {
			hex[2 * k] = dg[fm.build_id[k] >> 4];
			hex[2 * k + 1] = dg[fm.build_id[k] & 15];
		}
		hex[2 * n] = 0;
	}
	/* snapshot reads DWARF lines for every frame (USTACK_SNAPSHOT_LINES) */
	return pprof__mapping(sp->pp, vma.start, vma.start, vma.end, vma.pgoff, vma.name, hex, 1, 0);
}

/* A Python frame's location: no mapping, no address, one line of its
 * function (name and file); keyed by that function and the line, apart
 * from the native locations (keyed by address under 0) */
static uint64_t py_location(struct snapshot_pprof *sp, const struct ustack_snapshot_pyframe *pf)
{
	return pprof__py_location(sp->pp, pf->func, pf->file, 0, pf->line);
}

/* @t's locations innermost first: the Python frames before the native
 * frame that runs them, those not placed at the leaf; @nat[i]: native
 * frame i's. @out has room for every frame. Returns how many, 0 on no
 * memory. */
static size_t merge_locations(struct snapshot_pprof *sp, const struct ustack_snapshot_thread *t,
			      const uint64_t *nat, uint64_t *out)
{
	size_t n = 0;
	int j = 0;

	for (int k = 0; k < t->nr_py_frames; k++)
		if (t->py_frames[k].native_index < 0 && !(out[n++] = py_location(sp, &t->py_frames[k])))
			return 0;
	for (int i = 0; i < t->nr_frames; i++) {
		while (j < t->nr_py_frames && t->py_frames[j].native_index < i)
			j++;
		for (; j < t->nr_py_frames && t->py_frames[j].native_index == i; j++)
			if (!(out[n++] = py_location(sp, &t->py_frames[j])))
				return 0;
		out[n++] = nat[i];
	}
	return n;
}

int snapshot_pprof__thread(struct snapshot_pprof *sp, const struct ustack_snapshot_thread *t,
			   const struct ustack_perfmap_entry *(*jit_name)(void *ctx,
						const struct ustack_snapshot_frame *f),
			   void *ctx)
{
	uint64_t *locs = calloc((size_t)t->nr_frames + 1, sizeof(*locs));
	struct pprof_line *lines = NULL;
	size_t lines_cap = 0;
	char tid_comm[32];
	int64_t *vals;
	int li = 0;
	struct pprof_label labels[3] = {
		{ .key = "thread", .num = t->tid },
		{ .key = "pid", .num = sp->pid },
		{ .key = "comm", .str = tid_comm },
	};

	if (!locs)
		return -ENOMEM;
	snprintf(tid_comm, sizeof(tid_comm), "%s", t->comm);
	for (int i = 0; i < t->nr_frames; i++) {
		const struct ustack_snapshot_frame *f = &t->frames[i];
		const struct ustack_perfmap_entry *je = jit_name ? jit_name(ctx, f) : NULL;
		uint64_t addr = (f->flags & USTACK_FRAME_EXACT_PC) || !f->pc ? f->pc : f->pc - 1;
		size_t n = 0;
		int first, nl = 0;

		if ((locs[i] = pprof__location_find(sp->pp, 0, addr)))
			continue;
		/* this frame's entries of t->lines (innermost first) */
		while (t->lines && li < t->nr_lines && t->lines[li].frame < i)
			li++;
		first = li;
		while (t->lines && first + nl < t->nr_lines && t->lines[first + nl].frame == i)
			nl++;
		if ((size_t)nl + 1 > lines_cap) {
			void *np = realloc(lines, ((size_t)nl + 1) * sizeof(*lines));

			if (!np) {
				free(locs);
				free(lines);
				return -ENOMEM;
			}
			lines = np;
			lines_cap = (size_t)nl + 1;
		}
		if (je) {
			lines[n].function_id = pprof__function(sp->pp, je->name, je->name, "", 0);
			lines[n++].line = 0;
		} else if (f->symbol) {
			/* the inlined functions, then the symbol whose code it is
			 * (its name as the other formats show it) */
			for (int j = 0; j < nl - 1; j++) {
				const struct ustack_snapshot_line *l = &t->lines[first + j];

				if (!l->function)
					continue;
				lines[n].function_id = pprof__function(sp->pp, l->function, l->function,
								       l->file ? l->file : "",
								       t->line_decls ? t->line_decls[first + j] : 0);
				lines[n++].line = l->line;
			}
			lines[n].function_id =
				pprof__function(sp->pp, f->symbol, f->symbol,
						nl && t->lines[first + nl - 1].file ?
							t->lines[first + nl - 1].file : "",
						nl && t->line_decls ? t->line_decls[first + nl - 1] : 0);
			lines[n++].line = nl ? t->lines[first + nl - 1].line : 0;
		}
		locs[i] = pprof__location_add(sp->pp, 0, addr, je ? 0 : vma_mapping(sp, addr), addr,
					      lines, n);
		if (!locs[i]) {
			free(locs);
			free(lines);
			return -ENOMEM;
		}
	}
	free(lines);
	if (t->nr_py_frames > 0) {
		uint64_t *all = calloc((size_t)t->nr_frames + (size_t)t->nr_py_frames + 1, sizeof(*all));
		size_t n = all ? merge_locations(sp, t, locs, all) : 0;

		free(locs);
		if (!n) {
			free(all);
			return -ENOMEM;
		}
		vals = pprof__sample(sp->pp, all, n, labels, 3);
		free(all);
	} else {
		vals = pprof__sample(sp->pp, locs, (size_t)t->nr_frames, labels, 3);
		free(locs);
	}
	if (!vals)
		return -ENOMEM;
	vals[0]++;
	return 0;
}

int snapshot_pprof__write(struct snapshot_pprof *sp, FILE *out)
{
	struct timespec ts;
	char text[64];

	if (!clock_gettime(CLOCK_REALTIME, &ts))
		pprof__set_times(sp->pp, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, 0);
	pprof__set_period(sp->pp, "threads", "count", 1);
	snprintf(text, sizeof(text), "ustack snapshot of pid %d", sp->pid);
	pprof__add_comment(sp->pp, text);
	return pprof__write(sp->pp, out);
}
