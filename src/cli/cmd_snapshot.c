// SPDX-License-Identifier: MIT
/* ustack snapshot -p PID: stacks of every thread of a running process. */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <ustack/perfmap.h>
#include <ustack/snapshot.h>
#include <ustack/symbolize.h>
#include "cli/cli.h"
#include "cli/cli_fmt.h"
#include "cli/out_names.h"
#include "cli/out_viewers.h"
#include "cli/out_pprof.h"
#include "cli/snapshot_py.h"
#include "cli/report_python.h"

enum snap_format { FMT_TEXT, FMT_RAW, FMT_FOLDED, FMT_JSON, FMT_SPEEDSCOPE, FMT_PPROF };

struct snap_out {
	enum snap_format fmt;
	int pid;
	int printed;
	int show_method;
	/* folded, as report's: inlined functions as frames, "func file.c:LINE",
	 * inlined frames marked "_[i]" */
	int inline_frames, srcline, annotate;
	int stats; /* --stats */
	int python_only; /* --python-only: the Python frames alone */
	/* folded: identical lines are merged with a count */
	char **lines;
	int *counts;
	int nr_lines, cap_lines;
	/* the live /tmp/perf-PID.map: names of frames in JIT code */
	struct ustack_perfmap *jit;
	char jit_path[96];
	uint32_t jit_uid; /* owner the map may have besides root (the process's) */
	int jit_reread;
	/* --stats: the files of the frames, each once (debug sources) */
	char **files;
	size_t nfiles, cap_files;
	struct cli_speedscope *ss; /* speedscope: written at the end */
	struct snapshot_pprof *pprof; /* --format pprof (out_pprof_snapshot.c) */
};

/* The uid of process @pid (the owner of /proc/PID: its euid), or -1 when
 * unknown, which leaves only root and ourselves as owners of its JIT map. */
static uint32_t proc_uid(int pid)
{
	char p[32];
	struct stat st;

	snprintf(p, sizeof(p), "/proc/%d", pid);
	return stat(p, &st) ? (uint32_t)-1 : (uint32_t)st.st_uid;
}

/* The JIT symbol of a frame in anonymous memory (no file, no symbol), from
 * the process's perf map. The map grows while the process runs: code
 * compiled since it was read is found by reading it once more. */
static const struct ustack_perfmap_entry *jit_sym(struct snap_out *o,
						  const struct ustack_snapshot_frame *f)
{
	const struct ustack_perfmap_entry *e;
	uint64_t pc;

	if (f->symbol || f->path || !o->jit)
		return NULL;
	pc = (f->flags & USTACK_FRAME_EXACT_PC) ? f->pc : f->pc - 1;
	e = ustack_perfmap__lookup(o->jit, pc);
	if (!e && !o->jit_reread) {
		struct ustack_perfmap *m = ustack_perfmap__new();

		o->jit_reread = 1;
		if (m && !ustack_perfmap__read_pid(m, o->pid, o->jit_uid, o->jit_path,
						   sizeof(o->jit_path))) {
			ustack_perfmap__free(o->jit);
			o->jit = m;
			e = ustack_perfmap__lookup(o->jit, pc);
		} else {
			ustack_perfmap__free(m);
		}
	}
	return e;
}

/* a JSON string (out_names.c: valid UTF-8, escaped), or null */
static void json_str_or_null(const char *s)
{
	if (s)
		out_name_json(stdout, s);
	else
		printf("null");
}

/* a name in a text line (out_names.c: no control characters) */
static void put_name(const char *s)
{
	out_name_put(stdout, OUT_NAME_LINE, s);
}

/* A frame's "path", "file_offset" and "method" fields. */
static void json_frame_where(const struct ustack_snapshot_frame *f)
{
	printf(", \"path\": ");
	json_str_or_null(f->path);
	printf(", \"file_offset\": \"0x%llx\", \"method\": \"%s\"",
	       (unsigned long long)f->file_offset, ustack_method_name(f->method));
}

static const char *base_name(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;

	return b ? b + 1 : path;
}

/* Append @n bytes of @p to the line (*line, *len, *cap), as they are
 * (@rule < 0) or as a name under that rule of out_names.h (a folded frame
 * holds no ';' and no line break). 0 or -1 (no memory). */
static int line_add(char **line, size_t *len, size_t *cap, const char *p, size_t n, int rule)
{
	size_t clean = rule < 0 ? n : out_name_clean(rule, p, n);
	size_t out = clean == n ? n : out_name_escape(rule, p, n, NULL);

	if (*len + out + 1 > *cap) {
		size_t ncap = 2 * (*len + out + 1);
		char *g = realloc(*line, ncap);

		if (!g)
			return -1;
		*line = g;
		*cap = ncap;
	}
	if (clean == n)
		memcpy(*line + *len, p, n);
	else
		out_name_escape(rule, p, n, *line + *len);
	*len += out;
	(*line)[*len] = 0;
	return 0;
}

static const struct ustack_snapshot_line *frame_lines(const struct ustack_snapshot_thread *t,
						      int i, int *k, int *n);

/* the entries of frame @i in t->lines (innermost first), *n of them; any
 * order of @i (folded walks the frames from the root) */
static const struct ustack_snapshot_line *lines_of(const struct ustack_snapshot_thread *t, int i,
						   int *n)
{
	int k = 0;

	return t->lines ? frame_lines(t, i, &k, n) : (*n = 0, NULL);
}

/* One folded frame: ";" @pre @name @post (the brackets of "[file]", the
 * JIT mark "_[j]": ours, as they are), with --srcline " file.c:LINE" (base
 * name, as report's and perf's srcline), with --annotate "_[i]" after an
 * inlined one */
static int folded_frame(struct snap_out *o, char **line, size_t *len, size_t *cap,
			const char *pre, const char *name, const char *post,
			const struct ustack_snapshot_line *l, int inlined)
{
	char sl[64];
	const char *base = l && l->file ? base_name(l->file) : NULL;

	if (line_add(line, len, cap, ";", 1, -1) || line_add(line, len, cap, pre, strlen(pre), -1) ||
	    line_add(line, len, cap, name, strlen(name), OUT_NAME_FOLDED) ||
	    line_add(line, len, cap, post, strlen(post), -1))
		return -1;
	if (o->srcline && base && l->line) {
		if (line_add(line, len, cap, " ", 1, -1) ||
		    line_add(line, len, cap, base, strlen(base), OUT_NAME_FOLDED_SRC))
			return -1;
		snprintf(sl, sizeof(sl), ":%u", l->line);
		if (line_add(line, len, cap, sl, strlen(sl), -1))
			return -1;
	}
	if (o->annotate && inlined && line_add(line, len, cap, "_[i]", 4, -1))
		return -1;
	return 0;
}

/* Folded native frame @i of @t (and with --inline the functions inlined
 * into it) onto the line: 0 or -1 (no memory) */
static int add_folded_native(struct snap_out *o, const struct ustack_snapshot_thread *t, int i,
			     char **line, size_t *len, size_t *cap)
{
	const struct ustack_snapshot_frame *f = &t->frames[i];
	const struct ustack_perfmap_entry *je = jit_sym(o, f);
	int nl;
	const struct ustack_snapshot_line *ls = lines_of(t, i, &nl);
	const char *pre = "", *name, *post = "";

	if (je) { /* "_[j]": FlameGraph's mark of a JIT frame */
		name = je->name;
		post = "_[j]";
		ls = NULL;
	} else if (f->symbol) {
		name = f->symbol;
	} else {
		name = f->path ? base_name(f->path) : "unknown";
		if (!cli_is_bracketed(name)) { /* [vdso] as it is */
			pre = "[";
			post = "]";
		}
		ls = NULL;
	}
	if (folded_frame(o, line, len, cap, pre, name, post, ls ? &ls[nl - 1] : NULL, 0))
		return -1;
	for (int j = nl - 2; ls && o->inline_frames && j >= 0; j--)
		if (folded_frame(o, line, len, cap, "", ls[j].function ? ls[j].function : "??", "",
				 &ls[j], 1))
			return -1;
	return 0;
}

/* One folded Python frame: ";py::QUALNAME (BASENAME:LINE)" */
static int folded_py(char **line, size_t *len, size_t *cap, const struct ustack_snapshot_pyframe *pf)
{
	const char *name = pf->func && pf->func[0] ? pf->func : "??";
	const char *base = pf->file && pf->file[0] ? base_name(pf->file) : "??";
	char sl[24];

	snprintf(sl, sizeof(sl), pf->line ? ":%u)" : ")", pf->line);
	return line_add(line, len, cap, ";py::", 5, -1) ||
	       line_add(line, len, cap, name, strlen(name), OUT_NAME_FOLDED) ||
	       line_add(line, len, cap, " (", 2, -1) ||
	       line_add(line, len, cap, base, strlen(base), OUT_NAME_FOLDED_SRC) ||
	       line_add(line, len, cap, sl, strlen(sl), -1) ? -1 : 0;
}

/* One folded line per thread: comm;outermost;...;innermost; with
 * --inline, a frame is its function then the functions inlined into it
 * (root first), as in report's folded output */
static int add_folded(struct snap_out *o, const struct ustack_snapshot_thread *t)
{
	size_t cap = 256, len = 0;
	char *line = malloc(cap);

	if (!line)
		return -1;
	line[0] = 0;
	/* the thread's name is one frame, whatever it holds */
	if (line_add(&line, &len, &cap, t->comm[0] ? t->comm : "?", strlen(t->comm[0] ? t->comm : "?"),
		     OUT_NAME_FOLDED))
		goto oom;
	/* Python frames after the native frame that runs them; those not
	 * placed after all the native frames (--python-only: alone) */
	for (int i = o->python_only ? -1 : t->nr_frames - 1, j = t->nr_py_frames - 1;; i--) {
		const struct ustack_snapshot_pyframe *pf;

		if (i < 0) {
			for (; j >= 0; j--)
				if (folded_py(&line, &len, &cap, &t->py_frames[j]))
					goto oom;
			break;
		}
		if (add_folded_native(o, t, i, &line, &len, &cap))
			goto oom;
		while ((pf = snap_py_after(t, i, &j)))
			if (folded_py(&line, &len, &cap, pf))
				goto oom;
	}
	for (int i = 0; i < o->nr_lines; i++) {
		if (!strcmp(o->lines[i], line)) {
			o->counts[i]++;
			free(line);
			return 0;
		}
	}
	if (o->nr_lines == o->cap_lines) {
		int cap2 = o->cap_lines ? 2 * o->cap_lines : 32;
		char **l = realloc(o->lines, cap2 * sizeof(*l));
		int *c = l ? realloc(o->counts, cap2 * sizeof(*c)) : NULL;

		if (l)
			o->lines = l;
		if (!l || !c) {
			free(line);
			return -1;
		}
		o->counts = c;
		o->cap_lines = cap2;
	}
	o->lines[o->nr_lines] = line;
	o->counts[o->nr_lines++] = 1;
	return 0;
oom:
	free(line);
	return -1;
}

/* the entries of frame @i in t->lines (innermost first), *n of them */
static const struct ustack_snapshot_line *frame_lines(const struct ustack_snapshot_thread *t,
						      int i, int *k, int *n)
{
	while (*k < t->nr_lines && t->lines[*k].frame < i)
		(*k)++;
	*n = 0;
	while (*k + *n < t->nr_lines && t->lines[*k + *n].frame == i)
		(*n)++;
	return *n ? &t->lines[*k] : NULL;
}

static void json_line_fields(const struct ustack_snapshot_line *l)
{
	printf(", \"file\": ");
	json_str_or_null(l ? l->file : NULL);
	printf(", \"line\": %u, \"inlined\": %s", l ? l->line : 0,
	       l && l->inlined ? "true" : "false");
}

/* json: Python frame @pf, after a comma unless it is the first of its list */
static void json_py_frame(const struct ustack_snapshot_pyframe *pf, int *printed)
{
	printf("%s\n      {\"python\": true, \"function\": ", (*printed)++ ? "," : "");
	json_str_or_null(pf->func);
	printf(", \"file\": ");
	json_str_or_null(pf->file);
	printf(", \"line\": %u, \"entry\": %s}", pf->line,
	       pf->flags & USTACK_SNAPSHOT_PYFRAME_ENTRY ? "true" : "false");
}

/* json: the thread's Python frames not placed (--python-only: all of them,
 * in "frames"), and why */
static void json_py_rest(struct snap_out *o, const struct ustack_snapshot_thread *t, int j)
{
	int printed = 0;

	if (!o->python_only && j < t->nr_py_frames) {
		printf(", \"python_unplaced\": [");
		for (; j < t->nr_py_frames; j++)
			json_py_frame(&t->py_frames[j], &printed);
		printf("\n    ]");
	}
	if (t->py_note) {
		printf(", \"python_note\": ");
		out_name_json(stdout, t->py_note);
	}
}

static void print_json_thread(struct snap_out *o, const struct ustack_snapshot_thread *t)
{
	int k = 0, nl, printed = 0, pj = 0;

	printf("%s\n    {\"tid\": %d, \"comm\": ", o->printed++ ? "," : "", t->tid);
	out_name_json(stdout, t->comm);
	printf(", \"stopped\": %s, \"stopped_us\": %.1f, \"stop_reason\": \"%s\", \"frames\": [",
	       t->thread_flags & USTACK_SNAPSHOT_THREAD_NOT_STOPPED ? "false" : "true",
	       t->stopped_ns / 1e3, ustack_stop_reason_name(t->stop_reason));
	for (; o->python_only && pj < t->nr_py_frames; pj++)
		json_py_frame(&t->py_frames[pj], &printed);
	for (int i = 0; i < t->nr_frames && !o->python_only; i++) {
		const struct ustack_snapshot_frame *f = &t->frames[i];
		const struct ustack_snapshot_line *ls = t->lines ? frame_lines(t, i, &k, &nl) : NULL;
		const struct ustack_perfmap_entry *je = jit_sym(o, f);
		const struct ustack_snapshot_pyframe *pf;

		while ((pf = snap_py_before(t, i, &pj)))
			json_py_frame(pf, &printed);

		/* the functions inlined at this pc, innermost first, as frames
		 * of their own with the same pc */
		for (int j = 0; ls && j < nl - 1; j++) {
			printf("%s\n      {\"pc\": \"0x%llx\", \"function\": ", printed++ ? "," : "",
			       (unsigned long long)f->pc);
			json_str_or_null(ls[j].function);
			printf(", \"offset\": 0");
			json_frame_where(f);
			json_line_fields(&ls[j]);
			putchar('}');
		}
		printf("%s\n      {\"pc\": \"0x%llx\", \"function\": ", printed++ ? "," : "",
		       (unsigned long long)f->pc);
		json_str_or_null(je ? je->name : f->symbol);
		if (je)
			printf(", \"jit\": true");
		printf(", \"offset\": %llu",
		       (unsigned long long)(je ? f->pc - je->start : f->symbol_off));
		json_frame_where(f);
		json_line_fields(ls ? &ls[nl - 1] : NULL);
		putchar('}');
	}
	printf("%s]", printed ? "\n    " : "");
	json_py_rest(o, t, pj);
	putchar('}');
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ustack snapshot -p PID|--core FILE [--exe PATH]\n"
		"                       [--format text|raw|folded|json|pprof|speedscope]\n"
		"                       [-o FILE] [--max-depth N] [--methods] [--lines] [--stats]\n"
		"                       [--inline] [--srcline] [--annotate] [--stop-all]\n"
		"                       [--no-python | --python-only]\n"
		"\n"
		"Print the user stack of every thread of process PID, right now. A thread\n"
		"blocked in the kernel (futex, read, poll, sleep) is read without a stop,\n"
		"from the registers it entered the kernel with (/proc/PID/task/TID/syscall;\n"
		"read again with a stop if it ran meanwhile). Any other thread is stopped\n"
		"only while its stack is unwound (SFrame, DWARF CFI, frame pointers) and\n"
		"resumed at once; the process is never left stopped.\n"
		"\n"
		"  -p, --pid PID       process to inspect\n"
		"      --core FILE     instead: every thread of this ELF core dump (x86-64;\n"
		"                      files named by its NT_FILE note, checked by build ID)\n"
		"      --exe PATH      with --core: the executable, when not at the core's path\n"
		"  -f, --format FMT    text (default): '#N 0xPC function+0xOFF (path)';\n"
		"                      raw: '#N 0xPC' only; folded: 'comm;outer;...;inner COUNT'\n"
		"                      (FlameGraph input, identical stacks merged); json;\n"
		"                      pprof: gzipped profile.proto, one sample per thread\n"
		"                      (needs -o or a pipe; implies --lines; not with --core:\n"
		"                      its mappings come from the live process)\n"
		"                      speedscope: speedscope's JSON file, a profile per thread\n"
		"  -o, --output FILE   write to FILE instead of standard output\n"
		"  -d, --max-depth N   frames per thread (default 256)\n"
		"      --max-tables N  unwind tables of at most N files kept open (default 256)\n"
		"  -m, --methods       append how each frame was found [sframe|cfi|fp|signal]\n"
		"  -l, --lines         text and json: source file:line of each frame and the\n"
		"                      functions inlined at its pc, innermost first (DWARF of\n"
		"                      the file or its debug file; read after the threads run again)\n"
		"      --inline        folded: inlined functions as frames of their own\n"
		"      --srcline       folded: 'func file.c:LINE' frames (source file base name)\n"
		"      --annotate      folded: inlined frames end in '_[i]' (FlameGraph's mark)\n"
		"  -s, --stats         print totals (threads, how many were read without a\n"
		"                      stop, longest stop) and the debug source of each file\n"
		"                      to stderr\n"
		"      --stop-all      stop every thread, also those blocked in the kernel\n"
		"      --debug-dir DIR root of separate debug files (default /usr/lib/debug)\n"
		"      --no-python     do not read CPython's frames\n"
		"      --python-only   the Python frames alone (text, folded, json), as\n"
		"                      py-spy dump shows them\n"
		"\n"
		"Frame 0 is the exact pc; every later pc is a return address (as eu-stack).\n"
		"Frames in JIT code are named from /tmp/perf-PID.map when the process writes\n"
		"one (node --perf-basic-prof, python3 -X perf, JVM perf agents).\n"
		"A process running CPython 3.11-3.15 gets its Python frames too, each\n"
		"'#N py  QUALNAME (FILE:LINE)' right above the _PyEval_EvalFrameDefault\n"
		"frame that runs it (folded: 'py::QUALNAME (BASE:LINE)'); a CPython that\n"
		"is not read says why on stderr.\n");
}

static const struct ustack_perfmap_entry *jit_sym_cb(void *ctx,
						     const struct ustack_snapshot_frame *f)
{
	return jit_sym(ctx, f);
}

/* --stats: remember the file of each frame (files are few: a linear search) */
static void note_files(struct snap_out *o, const struct ustack_snapshot_thread *t)
{
	for (int i = 0; i < t->nr_frames; i++) {
		const char *p = t->frames[i].path;
		size_t k;

		if (!p || p[0] != '/')
			continue;
		for (k = 0; k < o->nfiles && strcmp(o->files[k], p); k++)
			;
		if (k < o->nfiles)
			continue;
		if (o->nfiles == o->cap_files) {
			size_t ncap = o->cap_files ? 2 * o->cap_files : 16;
			char **nf = realloc(o->files, ncap * sizeof(*nf));

			if (!nf)
				return; /* stats lose a file, nothing else */
			o->files = nf;
			o->cap_files = ncap;
		}
		if ((o->files[o->nfiles] = strdup(p)))
			o->nfiles++;
	}
}

/* --stats: where the symbols and the DWARF of each file come from, as
 * report --stats says it: a symbolizer of our own looks for them the same
 * way as the snapshot's (the file at its path, its build ID, --debug-dir) */
static void stats_debug_sources(struct snap_out *o, const char *debug_dir, int lines)
{
	struct ustack_symbolizer_opts so = {
		.sz = sizeof(so), .debug_dir = debug_dir,
		.flags = lines ? 0 : USTACK_SYMBOLIZER_NO_LINES,
	};
	struct ustack_symbolizer *sym = o->nfiles ? ustack_symbolizer__new(&so) : NULL;

	for (size_t i = 0; sym && i < o->nfiles; i++) {
		struct ustack_file_map fm = { .file_id = i + 1, .kind = USTACK_VMA_FILE,
					      .path = o->files[i] };
		const char *from = NULL;
		int st, src;

		if (ustack_symbolizer__add_file(sym, &fm))
			break;
		st = ustack_symbolizer__file_status(sym, i + 1, &from);
		src = ustack_symbolizer__file_source(sym, i + 1);
		fputs("symbols: ", stderr);
		out_name_put(stderr, OUT_NAME_LINE, o->files[i]);
		fprintf(stderr, ": %s (", ustack_debug_source_name((unsigned int)src));
		out_name_put(stderr, OUT_NAME_LINE, from ? from : ustack_sym_status_name((unsigned int)st));
		fputs(")\n", stderr);
		src = ustack_symbolizer__file_dwarf_source(sym, i + 1, &from);
		fputs("dwarf: ", stderr);
		out_name_put(stderr, OUT_NAME_LINE, o->files[i]);
		fprintf(stderr, ": %s%s", ustack_debug_source_name((unsigned int)src), from ? " (" : "");
		out_name_put(stderr, OUT_NAME_LINE, from);
		fputs(from ? ")\n" : "\n", stderr);
	}
	ustack_symbolizer__free(sym);
	for (size_t i = 0; i < o->nfiles; i++)
		free(o->files[i]);
	free(o->files);
}

/* A thread the library could not unwind: one line on stderr saying why. */
static void print_thread_error(struct snap_out *o, const struct ustack_snapshot_thread *t)
{
	if (t->error == -ESRCH)
		fprintf(stderr, "ustack: pid %d: thread %d exited during the snapshot\n",
			o->pid, t->tid);
	else if (t->error == -EPERM)
		/* its registers needed a stop, and ptrace was refused
		 * where /proc was not: another tracer holds it */
		fprintf(stderr, "ustack: pid %d: thread %d: cannot stop it (%s; already "
			"traced by a debugger?)\n", o->pid, t->tid, strerror(-t->error));
	else
		fprintf(stderr, "ustack: pid %d: thread %d: %s\n", o->pid, t->tid,
			strerror(-t->error));
}

/* text: the functions inlined at frame @i's pc (all of @ls but the last,
 * the frame's own function), with the frame's number and pc */
static void print_text_inlined(const struct ustack_snapshot_frame *f, int i,
			       const struct ustack_snapshot_line *ls, int nl)
{
	for (int j = 0; ls && j < nl - 1; j++) {
		printf("#%d 0x%llx ", i, (unsigned long long)f->pc);
		put_name(ls[j].function ? ls[j].function : "??");
		put_str(stdout, " (");
		put_name(f->path ? f->path : "unmapped");
		putchar_unlocked(')');
		if (ls[j].file) {
			put_str(stdout, " at ");
			put_name(ls[j].file);
			printf(":%u", ls[j].line);
		}
		printf(" [inlined]\n");
	}
}

/* text and raw: frame @i's line; @l is its own function's source line
 * (NULL: none) */
static void print_text_frame(struct snap_out *o, const struct ustack_snapshot_frame *f, int i,
			     const struct ustack_snapshot_line *l)
{
	const struct ustack_perfmap_entry *je = o->fmt == FMT_TEXT ? jit_sym(o, f) : NULL;
	char b[48], *p = b;

	*p++ = '#';
	p = fmt_dec(p, (uint32_t)i, 1);
	memcpy(p, " 0x", 3);
	p = fmt_hex(p + 3, f->pc);
	put_buf(stdout, b, p);
	if (je) {
		putchar_unlocked(' ');
		put_name(je->name);
		printf("+0x%llx ([jit] %s)", (unsigned long long)(f->pc - je->start),
		       o->jit_path);
	} else if (o->fmt == FMT_TEXT) {
		if (f->symbol) {
			putchar_unlocked(' ');
			put_name(f->symbol);
			memcpy(b, "+0x", 3);
			put_buf(stdout, b, fmt_hex(b + 3, f->symbol_off));
		} else {
			put_str(stdout, " ??");
		}
		put_str(stdout, " (");
		put_name(f->path ? f->path : "unmapped");
		putchar_unlocked(')');
		if (l && l->file) {
			put_str(stdout, " at ");
			put_name(l->file);
			printf(":%u", l->line);
		}
	}
	if (o->show_method) {
		put_str(stdout, " [");
		put_str(stdout, ustack_method_name(f->method));
		putchar_unlocked(']');
	}
	putchar_unlocked('\n');
}

/* text: Python frame @pf as frame @num: "#N py  QUALNAME (FILE:LINE)" */
static void print_text_py(const struct ustack_snapshot_pyframe *pf, int num)
{
	char b[32], *p = b;

	*p++ = '#';
	p = fmt_dec(p, (uint32_t)num, 1);
	memcpy(p, " py  ", 5);
	put_buf(stdout, b, p + 5);
	put_name(pf->func && pf->func[0] ? pf->func : "??");
	put_str(stdout, " (");
	put_name(pf->file && pf->file[0] ? pf->file : "??");
	if (pf->line)
		printf(":%u", pf->line);
	put_str(stdout, ")\n");
}

/* text: the Python frames not placed among the native ones (all of them
 * with --python-only), numbered from @num on, after why (py_note) */
static void print_text_py_rest(struct snap_out *o, const struct ustack_snapshot_thread *t, int j,
			       int num)
{
	if (t->py_note) {
		put_str(stdout, "# ");
		put_name(t->py_note);
		putchar_unlocked('\n');
	}
	for (; j < t->nr_py_frames; j++)
		if (o->python_only || t->py_frames[j].native_index < 0)
			print_text_py(&t->py_frames[j], num++);
}

/* text and raw: "TID N comm", the frames, and why the walk ended */
static void print_text_thread(struct snap_out *o, const struct ustack_snapshot_thread *t)
{
	int num = 0, j = 0;

	/* the per-frame lines are written in place (cli_fmt.h): printf was a
	 * fifth of a text snapshot's instructions */
	if (o->printed++)
		putchar_unlocked('\n');
	{
		char b[32], *p = b;

		memcpy(p, "TID ", 4);
		p = fmt_dec(p + 4, (uint32_t)t->tid, 1);
		*p++ = ' ';
		put_buf(stdout, b, p);
		put_name(t->comm);
		putchar_unlocked('\n');
	}
	if (o->python_only) {
		print_text_py_rest(o, t, 0, 0);
		return;
	}
	for (int i = 0, k = 0, nl = 0; i < t->nr_frames; i++) {
		const struct ustack_snapshot_frame *f = &t->frames[i];
		const struct ustack_snapshot_line *ls =
			t->lines && o->fmt == FMT_TEXT ? frame_lines(t, i, &k, &nl) : NULL;
		const struct ustack_snapshot_pyframe *pf;

		while ((pf = snap_py_before(t, i, &j)))
			print_text_py(pf, num++);
		print_text_inlined(f, num, ls, nl);
		print_text_frame(o, f, num++, ls ? &ls[nl - 1] : NULL);
	}
	if (t->stop_reason != USTACK_STOP_OUTERMOST && o->fmt == FMT_TEXT)
		printf("# stopped: %s\n", ustack_stop_reason_name(t->stop_reason));
	print_text_py_rest(o, t, j, num);
}

/* The thread as the outputs show it (text, folded, pprof, speedscope):
 * under `python -X perf` every Python function's call runs through a
 * perf-map trampoline ("py::f:file.py", [jit]) beside the Python frame
 * that names the same function; with Python frames, those trampolines are
 * left out, as report does (report_python.c), so each function shows once.
 * The copy's arrays are in @v (freed by the caller: view_free); @t itself
 * when there is nothing to leave out, NULL when out of memory. */
struct snap_view {
	struct ustack_snapshot_thread t;
	struct ustack_snapshot_frame *fr;
	struct ustack_snapshot_line *ln;
	uint32_t *decl;
	struct ustack_snapshot_pyframe *py;
	int *to; /* old frame index -> new, -1: left out */
};

static void view_free(struct snap_view *v)
{
	free(v->fr);
	free(v->ln);
	free(v->decl);
	free(v->py);
	free(v->to);
}

static const struct ustack_snapshot_thread *
without_trampolines(struct snap_out *o, const struct ustack_snapshot_thread *t, struct snap_view *v)
{
	int n = 0, k = 0, drop = 0;

	memset(v, 0, sizeof(*v));
	if (t->nr_py_frames <= 0 || !o->jit || o->fmt == FMT_JSON || o->fmt == FMT_RAW)
		return t;
	for (int i = 0; i < t->nr_frames; i++) {
		const struct ustack_perfmap_entry *je = jit_sym(o, &t->frames[i]);

		drop += je && report_py__is_trampoline(je->name);
	}
	if (!drop)
		return t;
	v->to = malloc(sizeof(*v->to) * (size_t)t->nr_frames);
	v->fr = malloc(sizeof(*v->fr) * (size_t)t->nr_frames);
	v->py = malloc(sizeof(*v->py) * (size_t)t->nr_py_frames);
	v->ln = t->nr_lines ? malloc(sizeof(*v->ln) * (size_t)t->nr_lines) : NULL;
	v->decl = t->nr_lines && t->line_decls ? malloc(sizeof(*v->decl) * (size_t)t->nr_lines) : NULL;
	if (!v->to || !v->fr || !v->py || (t->nr_lines && !v->ln) ||
	    (t->nr_lines && t->line_decls && !v->decl))
		return NULL;
	for (int i = 0; i < t->nr_frames; i++) {
		const struct ustack_perfmap_entry *je = jit_sym(o, &t->frames[i]);

		v->to[i] = je && report_py__is_trampoline(je->name) ? -1 : n;
		if (v->to[i] >= 0)
			v->fr[n++] = t->frames[i];
	}
	for (int i = 0; i < t->nr_lines; i++) {
		if (t->lines[i].frame < 0 || t->lines[i].frame >= t->nr_frames ||
		    v->to[t->lines[i].frame] < 0)
			continue;
		v->ln[k] = t->lines[i];
		v->ln[k].frame = v->to[t->lines[i].frame];
		if (v->decl)
			v->decl[k] = t->line_decls[i];
		k++;
	}
	for (int j = 0; j < t->nr_py_frames; j++) {
		int ni = t->py_frames[j].native_index;

		v->py[j] = t->py_frames[j];
		/* placed under an eval frame, which is never a trampoline */
		if (ni >= 0 && ni < t->nr_frames)
			v->py[j].native_index = v->to[ni];
	}
	v->t = *t;
	v->t.frames = v->fr;
	v->t.nr_frames = n;
	v->t.lines = v->ln;
	v->t.line_decls = v->decl;
	v->t.nr_lines = k;
	v->t.py_frames = v->py;
	return &v->t;
}

static int print_view(struct snap_out *o, const struct ustack_snapshot_thread *t);

static int print_thread(const struct ustack_snapshot_thread *t, void *arg)
{
	struct snap_out *o = arg;
	struct snap_view v;
	const struct ustack_snapshot_thread *shown;
	int ret;

	if (t->error) {
		print_thread_error(o, t);
		return 0;
	}
	if (o->stats)
		note_files(o, t);
	shown = without_trampolines(o, t, &v);
	ret = shown ? print_view(o, shown) : -1;
	view_free(&v);
	return ret;
}

static int print_view(struct snap_out *o, const struct ustack_snapshot_thread *t)
{
	if (o->fmt == FMT_FOLDED)
		return add_folded(o, t) ? -1 : 0;
	if (o->ss)
		return cli_speedscope__add_snapshot_thread(o->ss, t, o->jit, o->jit_path) ? -1 : 0;
	if (o->fmt == FMT_PPROF)
		return snapshot_pprof__thread(o->pprof, t, jit_sym_cb, o) ? -1 : 0;
	if (o->fmt == FMT_JSON) {
		print_json_thread(o, t);
		return 0;
	}
	print_text_thread(o, t);
	return 0;
}

/* What the formats that print once every thread is in print then
 * (speedscope's document, folded's merged lines; nothing after an error
 * @ret), their memory freed: @ret, or the error of the writing. */
static int print_end(struct snap_out *out, int ret)
{
	if (out->ss && !ret)
		ret = cli_speedscope__write(out->ss, stdout);
	cli_speedscope__free(out->ss);
	for (int i = 0; i < out->nr_lines; i++) {
		if (!ret)
			printf("%s %d\n", out->lines[i], out->counts[i]);
		free(out->lines[i]);
	}
	free(out->lines);
	free(out->counts);
	return ret;
}

/* --core: the same output, from a core dump (ustack_snapshot_core()). */
static int snapshot_core(struct snap_out *out, const char *core, const char *exe,
			 const struct ustack_snapshot_opts *so)
{
	char err[512] = "";
	struct ustack_snapshot_core_opts opts = {
		.sz = sizeof(opts), .exe = exe, .max_depth = so->max_depth,
		.flags = so->flags & (USTACK_SNAPSHOT_LINES | USTACK_SNAPSHOT_NO_PYTHON),
		.debug_dir = so->debug_dir, .errbuf = err, .errbuf_sz = sizeof(err),
	};
	struct ustack_snapshot_stats st = { 0 };
	int ret;

	if (out->fmt == FMT_JSON) {
		printf("{\"core\": ");
		out_name_json(stdout, core);
		printf(", \"threads\": [");
	}
	ret = ustack_snapshot_core(core, &opts, print_thread, out, &st, sizeof(st));
	if (out->fmt == FMT_JSON)
		printf("\n  ]}\n");
	ret = print_end(out, ret);
	fflush(stdout);
	if (ret) {
		if (err[0])
			cli_error("%s", err);
		else
			cli_error("%s: %s", core, strerror(-ret));
		return 1;
	}
	if (st.py_status < 0) {
		/* the core's paths: one line whatever they hold */
		fprintf(stderr, "ustack: core %s: Python frames not read: ", core);
		out_name_put(stderr, OUT_NAME_LINE, st.python);
		fputc('\n', stderr);
	}
	if (out->python_only && st.py_status <= 0) {
		if (st.py_status == 0)
			cli_error("core %s: --python-only: no CPython in the process", core);
		return 1;
	}
	return 0;
}

/* The command line, parsed: what to snapshot, how, and where to. */
struct snap_cmd {
	struct ustack_snapshot_opts opts;
	struct snap_out out;
	const char *out_path, *core, *exe;
};

/* -f's argument into *@fmt: 0, or -1 (said why) */
static int parse_format(const char *arg, enum snap_format *fmt)
{
	if (!strcmp(arg, "text"))
		*fmt = FMT_TEXT;
	else if (!strcmp(arg, "raw"))
		*fmt = FMT_RAW;
	else if (!strcmp(arg, "folded"))
		*fmt = FMT_FOLDED;
	else if (!strcmp(arg, "json"))
		*fmt = FMT_JSON;
	else if (!strcmp(arg, "speedscope"))
		*fmt = FMT_SPEEDSCOPE;
	else if (!strcmp(arg, "pprof"))
		*fmt = FMT_PPROF;
	else {
		cli_error("snapshot: unknown format '%s' (text, raw, folded, json, pprof, "
			  "speedscope)", arg);
		return -1;
	}
	return 0;
}

/* Option @opt (argument @arg) into @c: -1 to go on, else the exit status
 * (the usage or the error said). */
static int parse_option(struct snap_cmd *c, int opt, const char *arg)
{
	unsigned long long v;

	switch (opt) {
	case 'p':
		if (cli_parse_u64(arg, 10, &v) || v == 0 || v > 0x7fffffff) {
			cli_error("snapshot: bad pid '%s'", arg);
			return 2;
		}
		c->out.pid = (int)v;
		break;
	case 'f':
		if (parse_format(arg, &c->out.fmt))
			return 2;
		break;
	case 'o':
		c->out_path = arg;
		break;
	case 'd':
		if (cli_parse_u64(arg, 10, &v) || v == 0 || v > 1024) {
			cli_error("snapshot: --max-depth takes 1..1024");
			return 2;
		}
		c->opts.max_depth = (int)v;
		break;
	case 'm':
		c->out.show_method = 1;
		break;
	case 'l':
		c->opts.flags |= USTACK_SNAPSHOT_LINES;
		break;
	case 'I':
		c->out.inline_frames = 1;
		break;
	case 'R':
		c->out.srcline = 1;
		break;
	case 'A':
		c->out.annotate = 1;
		break;
	case 'T':
		if (cli_parse_u64(arg, 10, &v) || v == 0 || v > 1000000) {
			cli_error("snapshot: --max-tables takes 1..1000000");
			return 2;
		}
		c->opts.max_tables = (unsigned int)v;
		break;
	case 'S':
		c->opts.flags |= USTACK_SNAPSHOT_STOP_ALL;
		break;
	case 's':
		c->out.stats = 1;
		break;
	case 'D':
		c->opts.debug_dir = arg;
		break;
	case 'C':
		c->core = arg;
		break;
	case 'E':
		c->exe = arg;
		break;
	case 'N':
		c->opts.flags |= USTACK_SNAPSHOT_NO_PYTHON;
		break;
	case 'Y':
		c->out.python_only = 1;
		break;
	case 'h':
		usage(stdout);
		return 0;
	default:
		usage(stderr);
		return 2;
	}
	return -1;
}

/* The options together: combinations that mean nothing are refused, and
 * folded's --inline and --srcline ask for lines. -1 to go on, else the
 * exit status. @extra: arguments left after the options. */
static int check_args(struct snap_cmd *c, int extra)
{
	struct snap_out *out = &c->out;

	if (!!out->pid == !!c->core || (c->exe && !c->core) || extra) {
		usage(stderr);
		return 2;
	}
	if ((out->inline_frames || out->srcline || out->annotate) && out->fmt != FMT_FOLDED) {
		cli_error("snapshot: --inline, --srcline and --annotate are for --format folded "
			  "(text and json take --lines)");
		return 2;
	}
	if (out->fmt == FMT_FOLDED && (c->opts.flags & USTACK_SNAPSHOT_LINES) &&
	    !out->inline_frames && !out->srcline) {
		cli_error("snapshot: --lines does not change --format folded: give --inline "
			  "(inlined functions as frames) and/or --srcline ('func file.c:LINE')");
		return 2;
	}
	/* folded frames with their inlined functions or lines: read DWARF */
	if (out->inline_frames || out->srcline)
		c->opts.flags |= USTACK_SNAPSHOT_LINES;
	if (out->python_only && ((c->opts.flags & USTACK_SNAPSHOT_NO_PYTHON) ||
				 (out->fmt != FMT_TEXT && out->fmt != FMT_FOLDED &&
				  out->fmt != FMT_JSON))) {
		cli_error("snapshot: --python-only is for text, folded or json, and not with "
			  "--no-python");
		return 2;
	}
	if (c->core && out->fmt == FMT_PPROF) {
		cli_error("snapshot: --format pprof is not available with --core (its mappings "
			  "come from the live process)");
		return 2;
	}
	return -1;
}

/* -1 to go on, else the exit status */
static int parse_args(struct snap_cmd *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "max-depth", required_argument, NULL, 'd' },
		{ "methods", no_argument, NULL, 'm' },
		{ "lines", no_argument, NULL, 'l' },
		{ "inline", no_argument, NULL, 'I' },
		{ "srcline", no_argument, NULL, 'R' },
		{ "annotate", no_argument, NULL, 'A' },
		{ "stats", no_argument, NULL, 's' },
		{ "max-tables", required_argument, NULL, 'T' },
		{ "stop-all", no_argument, NULL, 'S' },
		{ "debug-dir", required_argument, NULL, 'D' },
		{ "core", required_argument, NULL, 'C' },
		{ "exe", required_argument, NULL, 'E' },
		{ "no-python", no_argument, NULL, 'N' },
		{ "python-only", no_argument, NULL, 'Y' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "p:f:o:d:mlsh", longopts, NULL)) != -1) {
		ret = parse_option(c, opt, optarg);
		if (ret >= 0)
			return ret;
	}
	return check_args(c, optind != argc);
}

/* -o, and speedscope's document (named after what it shows), for the live
 * and the core snapshot alike: -1 to go on, else the exit status */
static int open_output(struct snap_cmd *c)
{
	struct snap_out *out = &c->out;

	/* every format prints to stdout: -o points it at the file */
	if (c->out_path && !freopen(c->out_path, out->fmt == FMT_PPROF ? "wb" : "w", stdout)) {
		cli_error("%s: %s", c->out_path, strerror(errno));
		return 1;
	}
	if (out->fmt == FMT_SPEEDSCOPE) {
		char name[PATH_MAX + 8];

		if (c->core)
			snprintf(name, sizeof(name), "core %s", c->core);
		else
			snprintf(name, sizeof(name), "pid %d", out->pid);
		if (!(out->ss = cli_speedscope__new(name))) {
			cli_error("snapshot: %s", strerror(ENOMEM));
			return 1;
		}
	}
	return -1;
}

/* JIT code is named from the process's perf map, if it writes one (in
 * its own /tmp, under its own pid: the library finds which) */
static void open_jit_map(struct snap_out *out)
{
	int ret;

	out->jit_uid = proc_uid(out->pid);
	out->jit = out->fmt == FMT_RAW ? NULL : ustack_perfmap__new();
	if (out->jit && (ret = ustack_perfmap__read_pid(out->jit, out->pid, out->jit_uid,
							out->jit_path, sizeof(out->jit_path)))) {
		/* not a regular file, wrong owner, bad status: the library said
		 * why; no such file or process: nothing to say */
		if (ret != -ENOENT && ret != -EINVAL && ret != -EPERM && ret != -EBADMSG &&
		    ret != -ESRCH)
			fprintf(stderr, "ustack: %s: %s (JIT frames stay unnamed)\n", out->jit_path,
				strerror(-ret));
		ustack_perfmap__free(out->jit);
		out->jit = NULL;
	}
}

/* A live snapshot's set-up: the test hook, pprof's profile, the library
 * asked for no more than the output prints, the JIT map. -1 to go on,
 * else the exit status. */
static int live_setup(struct snap_cmd *c)
{
	const char *hold = getenv("USTACK_TEST_HOLD_MS");
	struct snap_out *out = &c->out;
	unsigned long long v;

	/* test hook: keep each thread stopped this long (kill tests) */
	if (hold && !cli_parse_u64(hold, 10, &v) && v < 60000)
		c->opts.hold_ms = (unsigned int)v;

	if (out->fmt == FMT_PPROF) {
		if (!c->out_path && isatty(STDOUT_FILENO)) {
			cli_error("snapshot: --format pprof writes a gzipped binary profile: give -o "
				  "FILE or a pipe, not a terminal");
			return 2;
		}
		/* inlined functions are lines of their locations */
		c->opts.flags |= USTACK_SNAPSHOT_LINES;
		out->pprof = snapshot_pprof__new(out->pid);
		if (!out->pprof) {
			cli_error("snapshot: %s", strerror(errno));
			return 1;
		}
	}
	/* nothing is read that the output does not print: raw prints
	 * addresses, folded source lines only with --inline or --srcline */
	if (out->fmt == FMT_RAW)
		c->opts.flags = (c->opts.flags & ~USTACK_SNAPSHOT_LINES) | USTACK_SNAPSHOT_NO_NAMES |
				USTACK_SNAPSHOT_NO_PYTHON;
	if (out->fmt == FMT_FOLDED && !out->inline_frames && !out->srcline)
		c->opts.flags &= ~USTACK_SNAPSHOT_LINES;
	open_jit_map(out);
	return -1;
}

/* The result of a live snapshot as the exit status: its error in one
 * line, or (--stats) its totals and each file's debug sources. */
static int live_status(struct snap_cmd *c, int ret, const struct ustack_snapshot_stats *st)
{
	struct snap_out *out = &c->out;

	if (ret == -ESRCH) {
		cli_error("pid %d: no such process", out->pid);
		return 1;
	}
	if (ret == -EPERM || ret == -EACCES) {
		cli_error("pid %d: not permitted to trace it (%s; run as root, or check "
			  "/proc/sys/kernel/yama/ptrace_scope; or it is already traced by a debugger)",
			  out->pid, strerror(-ret));
		return 1;
	}
	if (ret) {
		cli_error("pid %d: snapshot failed: %s", out->pid, strerror(-ret));
		return 1;
	}
	/* a CPython there but not read: the one line saying why */
	if (st->py_status < 0) {
		/* names from the process (its paths): one line whatever they hold */
		fprintf(stderr, "ustack: pid %d: Python frames not read: ", out->pid);
		out_name_put(stderr, OUT_NAME_LINE, st->python);
		fputc('\n', stderr);
	}
	if (out->python_only && st->py_status <= 0) {
		if (st->py_status == 0)
			cli_error("pid %d: --python-only: no CPython in the process", out->pid);
		return 1;
	}
	if (out->stats && st->py_status > 0) {
		fprintf(stderr, "ustack: pid %d: ", out->pid);
		out_name_put(stderr, OUT_NAME_LINE, st->python);
		fprintf(stderr, ": %u threads with Python frames, %u not placed\n", st->py_threads,
			st->py_unplaced);
	}
	if (out->stats) {
		fprintf(stderr, "ustack: pid %d: %u threads, %u unwound, %u vanished; %u without a stop "
				"(blocked in the kernel; %u more blocked but needed one); "
				"longest stop %.1f us, total %.1f us; %llu page reads\n",
			out->pid, st->threads, st->unwound, st->vanished, st->not_stopped,
			st->restopped, st->max_stopped_ns / 1e3, st->total_stopped_ns / 1e3,
			(unsigned long long)st->pages_read);
		stats_debug_sources(out, c->opts.debug_dir,
				    !!(c->opts.flags & USTACK_SNAPSHOT_LINES));
	}
	return 0;
}

/* json: the process's CPython: null (none, or not looked for), or which
 * one and how many threads had frames, or why it was not read */
static void json_python(const struct ustack_snapshot_stats *st)
{
	printf(", \"python\": ");
	if (!st->py_status) {
		printf("null");
		return;
	}
	printf("{\"read\": %s, \"message\": ", st->py_status > 0 ? "true" : "false");
	out_name_json(stdout, st->python);
	printf(", \"threads\": %u, \"unplaced\": %u}", st->py_threads, st->py_unplaced);
}

/* The live snapshot, and what the formats print after the last thread. */
static int snapshot_live(struct snap_cmd *c)
{
	struct ustack_snapshot_stats st;
	struct snap_out *out = &c->out;
	int ret;

	if (out->fmt == FMT_JSON)
		printf("{\"pid\": %d, \"threads\": [", out->pid);
	ret = ustack_snapshot(out->pid, &c->opts, print_thread, out, &st, sizeof(st));
	if (out->fmt == FMT_JSON && !ret) {
		printf("\n  ]");
		json_python(&st);
		printf("}\n");
	}
	ret = print_end(out, ret);
	if (out->pprof && !ret && (ret = snapshot_pprof__write(out->pprof, stdout))) {
		cli_error("%s: cannot write the profile: %s",
			  c->out_path ? c->out_path : "standard output", strerror(-ret));
		snapshot_pprof__free(out->pprof);
		ustack_perfmap__free(out->jit);
		return 1;
	}
	snapshot_pprof__free(out->pprof);
	ustack_perfmap__free(out->jit);
	fflush(stdout);
	return live_status(c, ret, &st);
}

int cmd_snapshot(int argc, char **argv)
{
	/* a Ctrl-C or Ctrl-Z lands between two threads, never during a stop */
	struct snap_cmd c = {
		.opts = { .sz = sizeof(c.opts), .flags = USTACK_SNAPSHOT_HOLD_SIGNALS },
		.out = { .fmt = FMT_TEXT },
	};
	int ret = parse_args(&c, argc, argv);

	if (ret < 0)
		ret = open_output(&c);
	if (ret >= 0)
		return ret;
	if (c.core)
		return snapshot_core(&c.out, c.core, c.exe, &c.opts);
	ret = live_setup(&c);
	if (ret >= 0)
		return ret;
	return snapshot_live(&c);
}
