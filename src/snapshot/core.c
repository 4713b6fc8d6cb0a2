// SPDX-License-Identifier: MIT
/*
 * ustack_snapshot_core(): the threads of a core dump, unwound through the
 * public unwinder (ustack/unwind.h) exactly as an embedder would: the
 * core's NT_FILE mappings are added to an unwinder, its memory is the read
 * callback, its NT_PRSTATUS registers start each walk. Names come from
 * the unwinder (ELF symbols) and, as for a live snapshot, from the
 * symbolizer (separate debug files by build ID, source lines).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ustack/procmaps.h>
#include <ustack/snapshot.h>
#include <ustack/symbolize.h>
#include <ustack/unwind.h>
#include "snapshot/lines.h"
#include "common/grow.h"
#include "common/log.h"
#include "common/opts.h"
#include "snapshot/snapshot_python.h"
#include "snapshot/core_file.h"

#define CORE_DEFAULT_DEPTH 256
#define CORE_MAX_DEPTH 1024

struct core_snap {
	struct ustack_core *core;
	struct ustack_unwinder *u;
	struct ustack_symbolizer *sym;
	const char **sym_paths; /* index + 1 = file id (strings owned by the unwinder) */
	size_t nr_sym, cap_sym;
	int want_lines;
	struct ustack_snapshot_line *lines;
	uint32_t *decls; /* the thread's line_decls[]: parallel to lines[] */
	int nr_lines;
	size_t cap_lines, cap_decls;
	struct snap_py py;      /* the core's CPython (py.proc NULL: none) */
	struct snap_py_thread pyt;
};

/* The core's mappings as /proc/PID/maps text, for the CPython finder */
static char *core_maps_text(const struct ustack_core *c)
{
	size_t cap = 1, n = 0;
	char *out;

	for (size_t i = 0; i < c->nr_maps; i++)
		cap += 80 + strlen(c->maps[i].path ? c->maps[i].path : "");
	out = malloc(cap);
	if (!out)
		return NULL;
	out[0] = 0;
	for (size_t i = 0; i < c->nr_maps; i++) {
		const struct ustack_core_map *m = &c->maps[i];

		if (!m->path || m->path[0] != '/')
			continue;
		n += (size_t)snprintf(out + n, cap - n, "%llx-%llx r%sp %llx 00:00 0 %s\n",
				      (unsigned long long)m->start, (unsigned long long)m->end,
				      m->flags & USTACK_MAPPING_EXEC ? "-x" : "--",
				      (unsigned long long)m->file_offset, m->path);
	}
	return out;
}

/* The core's mappings into the unwinder: files with the build ID the
 * core recorded, and the vDSO as an image copied out of the core. */
static int add_mappings(struct core_snap *s)
{
	struct ustack_core *c = s->core;
	int ret;

	for (size_t i = 0; i < c->nr_maps; i++) {
		const struct ustack_core_map *cm = &c->maps[i];
		int seen = 0;

		/* a file missing here explains frames without names: say so
		 * once per path */
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(c->maps[j].path, cm->path);
		if (!seen && access(cm->path, R_OK))
			pr_warn("%s: %s: %s (mapped in the core: no unwind table or names from it%s)\n",
				c->name, cm->path, strerror(errno),
				c->entry && cm->start <= c->entry && c->entry < cm->end ? "; --exe PATH" : "");
	}
	for (size_t i = 0; i < c->nr_maps; i++) {
		const struct ustack_core_map *cm = &c->maps[i];
		struct ustack_mapping m = {
			.sz = sizeof(m), .start = cm->start, .end = cm->end,
			.file_offset = cm->file_offset, .path = cm->path, .flags = cm->flags,
			.build_id = cm->build_id_size ? cm->build_id : NULL,
			.build_id_size = cm->build_id_size,
		};

		ret = ustack_unwinder__add_mapping(s->u, &m);
		if (ret)
			return ret;
	}
	if (c->vdso) {
		/* the vDSO is no file: the core holds its pages */
		uint8_t *img = malloc(64 * 1024);
		size_t size = 0;

		if (!img)
			return -ENOMEM;
		while (size < 64 * 1024 && !ustack_core__read(c, c->vdso + size, img + size, 4096))
			size += 4096;
		if (size) {
			/* path: the name its frames get, as in /proc/PID/maps */
			struct ustack_mapping m = { .sz = sizeof(m), .start = c->vdso,
						    .end = c->vdso + size, .path = "[vdso]", .image = img,
						    .image_size = size, .flags = USTACK_MAPPING_EXEC };

			ustack_unwinder__add_mapping(s->u, &m);
		}
		free(img);
	}
	return 0;
}

/* File id of @path for the symbolizer (0: none), registered once. */
static uint64_t sym_file(struct core_snap *s, const struct ustack_frame_info *fi)
{
	struct ustack_file_map fm = { 0 };

	if (!s->sym || !fi->has_table || !fi->path || fi->path[0] == '[')
		return 0;
	for (size_t i = 0; i < s->nr_sym; i++)
		if (s->sym_paths[i] == fi->path)
			return i + 1;
	if (s->nr_sym == s->cap_sym) {
		size_t cap = s->cap_sym ? 2 * s->cap_sym : 16;
		const char **g = realloc(s->sym_paths, cap * sizeof(*g));

		if (!g)
			return 0;
		s->sym_paths = g;
		s->cap_sym = cap;
	}
	fm.file_id = s->nr_sym + 1;
	fm.kind = USTACK_VMA_FILE;
	fm.path = fi->path;
	if (fi->build_id_size) {
		fm.build_id_size = fi->build_id_size < USTACK_BUILD_ID_MAX ? fi->build_id_size
									    : USTACK_BUILD_ID_MAX;
		memcpy(fm.build_id, fi->build_id, fm.build_id_size);
		fm.build_id_source = USTACK_BUILD_ID_ELF;
	}
	if (ustack_symbolizer__add_file(s->sym, &fm))
		return 0;
	s->sym_paths[s->nr_sym++] = fi->path;
	return fm.file_id;
}

static int grow_lines(struct core_snap *s, int more)
{
	return ustack_snapshot_lines_grow(&s->lines, &s->decls, &s->cap_lines, &s->cap_decls,
					  (size_t)s->nr_lines + more);
}

static void name_frame(struct core_snap *s, int i, const struct ustack_frame *f,
		       struct ustack_snapshot_frame *o)
{
	struct ustack_frame_info fi = { .sz = sizeof(fi) };
	int exact = !!(f->flags & USTACK_FRAME_EXACT_PC);
	struct ustack_sym sym;
	uint64_t fid, off;
	int n = 0;

	*o = (struct ustack_snapshot_frame){ .pc = f->pc, .method = f->method, .flags = f->flags };
	if (ustack_unwinder__describe(s->u, f, &fi))
		goto lines;
	o->path = fi.path;
	o->file_offset = fi.file_offset;
	o->symbol = fi.symbol;
	o->symbol_off = fi.symbol_off;
	/* the offset of the pc itself: the symbolizer steps back from a
	 * return address on its own */
	off = fi.file_offset + (exact ? 0 : 1);
	fid = sym_file(s, &fi);
	if (fid && !ustack_symbolizer__symbolize(s->sym, fid, off, exact ? USTACK_SYM_EXACT_PC : 0,
						 &sym) && sym.status == USTACK_SYM_OK) {
		o->symbol = sym.name;
		o->symbol_off = sym.sym_offset;
	}
	if (s->want_lines && fid) {
		struct ustack_sym chain[64];

		n = ustack_symbolizer__symbolize_frames(s->sym, fid, off,
							exact ? USTACK_SYM_EXACT_PC : 0, chain, 64,
							sizeof(chain[0]));
		if (n > 64)
			n = 64;
		if (n > 0 && !grow_lines(s, n)) {
			for (int k = 0; k < n; k++) {
				s->decls[s->nr_lines] = chain[k].decl_line;
				s->lines[s->nr_lines++] = (struct ustack_snapshot_line){
					.frame = i, .inlined = chain[k].inlined,
					.function = chain[k].status == USTACK_SYM_OK ? chain[k].name : NULL,
					.file = chain[k].file, .line = chain[k].line,
					.column = chain[k].column };
			}
		}
	}
lines:
	/* every frame has at least one entry: its own name */
	if (s->want_lines && n <= 0 && !grow_lines(s, 1)) {
		s->decls[s->nr_lines] = 0;
		s->lines[s->nr_lines++] = (struct ustack_snapshot_line){ .frame = i,
									.function = o->symbol };
	}
}

/* Core thread @ct unwound into @frames (room for @max) and named into
 * @named: *@t as the callback gets it (t->error: it could not be). */
static void core_thread(struct core_snap *s, const struct ustack_core_thread *ct,
			struct ustack_frame *frames, struct ustack_snapshot_frame *named, int max,
			struct ustack_snapshot_thread *t, struct ustack_snapshot_stats *st)
{
	struct ustack_unwind_opts uo = { .sz = sizeof(uo), .read = ustack_core__read,
					 .read_ctx = s->core, .bx = ct->bx, .has_bx = 1 };
	int n;

	*t = (struct ustack_snapshot_thread){ .tid = ct->tid };
	memcpy(t->comm, s->core->comm, sizeof(t->comm));
	n = ustack_unwinder__unwind(s->u, &ct->regs, &uo, frames, max, &t->stop_reason);
	if (n < 0) {
		t->error = n;
		return;
	}
	s->nr_lines = 0;
	for (int k = 0; k < n; k++)
		name_frame(s, k, &frames[k], &named[k]);
	t->nr_frames = n;
	t->frames = named;
	if (s->py.proc) {
		snap_py_read(&s->py, ct->tid, frames, n, ustack_core__read, s->core, &s->pyt);
		snap_py_name(&s->py, &s->pyt, frames, n, t, st);
	}
	if (s->want_lines) {
		t->nr_lines = s->nr_lines;
		t->lines = s->lines;
		t->line_decls = s->decls;
	}
}

USTACK_API int ustack_snapshot_core(const char *path, const struct ustack_snapshot_core_opts *opts,
				    ustack_snapshot_fn fn, void *ctx,
				    struct ustack_snapshot_stats *stats, size_t stats_sz)
{
	struct ustack_snapshot_stats st = { 0 };
	struct core_snap s = { 0 };
	struct ustack_frame *frames = NULL;
	struct ustack_snapshot_frame *named = NULL;
	char *errbuf = OPTS_GET(opts, errbuf, NULL);
	size_t errbuf_sz = OPTS_GET(opts, errbuf_sz, 0);
	int max = OPTS_GET(opts, max_depth, 0), ret;

	if (!path || !OPTS_VALID(opts, struct ustack_snapshot_core_opts) || max < 0)
		return -EINVAL;
	if (!max)
		max = CORE_DEFAULT_DEPTH;
	if (max > CORE_MAX_DEPTH)
		max = CORE_MAX_DEPTH;
	s.want_lines = !!(OPTS_GET(opts, flags, 0) & USTACK_SNAPSHOT_LINES);
	{
		/* absolute: the symbolizer and the messages want a full path */
		const char *exe = OPTS_GET(opts, exe, NULL);
		char *abs_exe = exe ? realpath(exe, NULL) : NULL;

		s.core = ustack_core__open(path, abs_exe ? abs_exe : exe, errbuf, errbuf_sz);
		ret = -errno;
		free(abs_exe);
		if (!s.core)
			return ret;
	}
	s.u = ustack_unwinder__new(NULL);
	{
		struct ustack_symbolizer_opts so = {
			.sz = sizeof(so), .flags = s.want_lines ? 0 : USTACK_SYMBOLIZER_NO_LINES,
			.debug_dir = OPTS_GET(opts, debug_dir, NULL),
		};

		s.sym = ustack_symbolizer__new(&so); /* names from debug files: optional */
	}
	frames = calloc(max, sizeof(*frames));
	named = calloc(max, sizeof(*named));
	if (!s.u || !frames || !named) {
		ret = -ENOMEM;
		goto out;
	}
	ret = add_mappings(&s);
	if (ret)
		goto out;
	if (!(OPTS_GET(opts, flags, 0) & USTACK_SNAPSHOT_NO_PYTHON)) {
		char *maps = core_maps_text(s.core);

		ret = maps ? snap_py_open_maps(&s.py, maps, ustack_core__read, s.core, &st) : -ENOMEM;
		free(maps);
		if (ret)
			goto out;
	}
	st.threads = s.core->nr_threads;
	for (size_t i = 0; i < s.core->nr_threads; i++) {
		struct ustack_snapshot_thread t;

		core_thread(&s, &s.core->threads[i], frames, named, max, &t, &st);
		st.unwound += !t.error;
		if (fn && fn(&t, ctx))
			break;
	}
	ret = 0;
out:
	if (stats)
		ustack_copy_out(stats, stats_sz, &st, sizeof(st));
	free(frames);
	free(named);
	free(s.lines);
	free(s.decls);
	free(s.sym_paths);
	ustack_symbolizer__free(s.sym);
	ustack_unwinder__free(s.u);
	snap_py_thread_free(&s.pyt);
	snap_py_close(&s.py);
	ustack_core__close(s.core);
	return ret;
}
