/* SPDX-License-Identifier: MIT */
/*
 * Output for outside viewers: the speedscope JSON file format
 * (out_speedscope.c) and `perf script` text (out_perfscript.c), fed by
 * `ustack report` (report_viewers.c, which resolves a trace's stacks into
 * frames) and by `ustack snapshot`. Formats: docs/cli/report.md.
 */
#ifndef USTACK_CLI_OUT_VIEWERS_H
#define USTACK_CLI_OUT_VIEWERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ustack_trace_reader;
struct ustack_symbolizer;
struct ustack_jitsyms;
struct ustack_trace_stitched;

/* One frame as the viewers need it. Strings are borrowed (the symbolizer's
 * or the reader's, valid until they are freed); NULL name: not known. */
struct cli_frame {
	const char *name;  /* function (NULL: unknown) */
	const char *file;  /* source file (DWARF) or NULL */
	uint32_t line;     /* source line, 0 unknown */
	const char *dso;   /* mapped file path, "[kernel.kallsyms]", "[module]", or NULL */
	uint64_t addr;     /* link-time address when known, else file offset / kernel ip */
	uint64_t sym_off;  /* pc - function start (has_off) */
	unsigned kernel : 1, inlined : 1, jit : 1, has_off : 1;
	/* a Python function (name co_qualname, file co_filename): perf-script
	 * prints it "py::NAME" in its file, as perf shows python -X perf's */
	unsigned python : 1;
};

/* ---- speedscope (out_speedscope.c) ---- */

struct cli_speedscope;

/* @name: the file's "name" (what speedscope shows as title) */
struct cli_speedscope *cli_speedscope__new(const char *name);
void cli_speedscope__free(struct cli_speedscope *s);
/* Is the stack of caller key @key already defined? */
int cli_speedscope__has_stack(struct cli_speedscope *s, uint64_t key);
/* Define stack @key from @n frames, innermost first. 0 or -ENOMEM */
int cli_speedscope__add_stack(struct cli_speedscope *s, uint64_t key,
			      const struct cli_frame *frames, size_t n);
/* One sample of stack @key (defined before) in the profile of thread @tid
 * for event @event (one profile per (tid, event); the event goes into the
 * profile's name when the file has several). @unit: "nanoseconds" or "none".
 * 0 or -ENOMEM, -ENOENT (stack not defined) */
int cli_speedscope__add_sample(struct cli_speedscope *s, uint32_t tid, const char *comm,
			       const char *event, const char *unit, uint64_t key, uint64_t weight);
/* Write the whole file (profiles in order of first sample). 0, -ENOMEM or -EIO */
int cli_speedscope__write(struct cli_speedscope *s, FILE *out);

/* ---- perf script (out_perfscript.c) ---- */

struct cli_perfscript;

struct cli_perfscript_sample {
	const char *comm;
	uint32_t pid, tid, cpu;
	uint64_t time;   /* ns */
	uint64_t period; /* perf's period field: the sample's weight */
	const char *event;
	const char *args; /* the event's payload words (report_fmt_args()) or NULL */
};

struct cli_perfscript *cli_perfscript__new(FILE *out);
void cli_perfscript__free(struct cli_perfscript *p);
int cli_perfscript__has_stack(struct cli_perfscript *p, uint64_t key);
/* Define stack @key from @n frames, innermost first (inlined entries are
 * skipped: perf script prints one line per machine frame). 0 or -ENOMEM */
int cli_perfscript__add_stack(struct cli_perfscript *p, uint64_t key,
			      const struct cli_frame *frames, size_t n);
/* Print one sample of stack @key: header line, frame lines, blank line. */
int cli_perfscript__sample(struct cli_perfscript *p, const struct cli_perfscript_sample *smp,
			   uint64_t key);

/* ---- report glue (report_viewers.c) ---- */

enum cli_viewer_format { CLI_VIEWER_SPEEDSCOPE, CLI_VIEWER_PERFSCRIPT };

struct cli_report_viewer;

/* @r, @sym, @jit are borrowed (jit may be NULL); @name titles a speedscope file */
struct cli_report_viewer *cli_report_viewer__new(enum cli_viewer_format fmt,
						 struct ustack_trace_reader *r,
						 struct ustack_symbolizer *sym,
						 struct ustack_jitsyms *jit, const char *name,
						 FILE *out);
void cli_report_viewer__free(struct cli_report_viewer *v);
/* --wall (`ustack report --wall`): every event weighs its wall-clock ns
 * (report_wall_ns()), events without one are left out, and every event
 * is named "wall": speedscope gives each thread one profile "comm (tid)"
 * of all its events, perf-script one event kind for stackcollapse-perf.pl
 * to sum. Before the first event. */
void cli_report_viewer__set_wall(struct cli_report_viewer *v, int wall);
/* Python frames named from @py (report_python.h; borrowed), its rules for
 * which frames show. Before the first event. */
struct report_py;
void cli_report_viewer__set_python(struct cli_report_viewer *v, struct report_py *py);
/* One stitched event of thread name @comm. 0 or -ENOMEM */
int cli_report_viewer__event(struct cli_report_viewer *v, const struct ustack_trace_stitched *s,
			     const char *comm);
/* The same weighing @weight in @unit (speedscope's "bytes", "none"): an
 * allocation in the view `ustack report --view` chose. */
int cli_report_viewer__event_weighed(struct cli_report_viewer *v,
				     const struct ustack_trace_stitched *s, const char *comm,
				     uint64_t weight, const char *unit);
/* After the last event: speedscope writes its file. 0, -ENOMEM, -EIO */
int cli_report_viewer__finish(struct cli_report_viewer *v);

/* ---- snapshot glue (snapshot_viewers.c) ---- */

struct ustack_snapshot_thread;
struct ustack_perfmap;

/* One sample (weight 1, unit "none") of thread @t into @s, its frames from
 * the snapshot (inline chains of USTACK_SNAPSHOT_LINES as frames of their
 * own); JIT frames named from @jit (may be NULL). 0 or -ENOMEM */
int cli_speedscope__add_snapshot_thread(struct cli_speedscope *s,
					const struct ustack_snapshot_thread *t,
					struct ustack_perfmap *jit, const char *jit_path);

#endif
