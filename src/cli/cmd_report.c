// SPDX-License-Identifier: MIT
/*
 * ustack report: print a recorded trace as seed-style raw records,
 * symbolized text, folded stacks (FlameGraph input), the trace's stack map
 * (text or 'FSMB' binary), or its statistics. Formats: docs/cli/report.md.
 *
 * One pass over the file. Each distinct stack is rendered once (its text is
 * cached per (kind, stack id)) and each distinct frame symbolized once (the
 * symbolizer caches per (file id, offset)), so the cost per event is a few
 * table lookups and one buffered write: that is what keeps report far ahead
 * of `perf script`, which unwinds and symbolizes every sample.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ustack/hashmap.h>
#include <ustack/perfmap.h>
#include <ustack/procmaps.h>
#include <ustack/stackmap.h>
#include <ustack/symbolize.h>
#include <ustack/trace.h>
#include "cli/cli.h"
#include "cli/report_archive.h"
#include "cli/cli_fmt.h"
#include "cli/out_names.h"
#include "cli/report_lookup.h"
#include "cli/out_viewers.h"
#include "cli/out_pprof.h"
#include "cli/report_alloc.h"
#include "cli/report_weight.h"
#include "cli/report_python.h"
#include "common/clock.h"
#include "symbolize/symbolize_internal.h"

/*
 * The symbolizer is left to the process's exit, which frees it at once:
 * freeing it piece by piece is libdw's dwarf_end() walking the trees of
 * every CU it read (libc's DWARF has 2083 CUs): 0.7 ms of an 11 ms text
 * report. Builds with AddressSanitizer free it, so that its leak check
 * keeps covering the symbolizer.
 */
#if defined(__SANITIZE_ADDRESS__)
#define REPORT_FREE_SYMBOLIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPORT_FREE_SYMBOLIZER 1
#endif
#endif

enum report_format {
	FMT_TEXT,
	FMT_RAW,
	FMT_FOLDED,
	FMT_STACKMAP,
	FMT_STACKMAP_BIN,
	FMT_SPEEDSCOPE,  /* out_speedscope.c, via report_viewers.c */
	FMT_PERFSCRIPT,  /* out_perfscript.c, via report_viewers.c */
	FMT_PPROF,
};

/* ---- small containers ----------------------------------------------------- */

/* map key of stack (kind, id) */
static inline uint64_t stack_key(uint32_t kind, uint32_t id)
{
	return (uint64_t)kind << 32 | id;
}

/* growable string */
struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};

static inline void sb_reserve(struct sbuf *b, size_t more)
{
	void *p = b->p;

	if (b->len + more < b->cap)
		return;
	if (cli_grow(&p, &b->cap, b->len + more + 1))
		b->oom = 1;
	b->p = p;
}

static inline void sb_add(struct sbuf *b, const char *s, size_t n)
{
	sb_reserve(b, n);
	if (b->oom)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (int tries = 0; tries < 2; tries++) {
		sb_reserve(b, 64);
		if (b->oom)
			return;
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		sb_reserve(b, (size_t)n);
	}
}

/* v in lowercase hex, no prefix: "%llx" */
static void sb_add_hex(struct sbuf *b, uint64_t v)
{
	char t[16];

	sb_add(b, t, (size_t)(fmt_hex(t, v) - t));
}

/* a name under rule @rule of out_names.h (as it is when it needs nothing) */
static void sb_add_name(struct sbuf *b, enum out_name_fmt rule, const char *s)
{
	size_t clean, n, len;

	if (!s)
		return;
	clean = out_name_clean_str(rule, s);
	if (!s[clean]) {
		sb_add(b, s, clean);
		return;
	}
	n = clean + strlen(s + clean);
	len = out_name_escape(rule, s, n, NULL);
	sb_reserve(b, len);
	if (b->oom)
		return;
	out_name_escape(rule, s, n, b->p + b->len);
	b->len += len;
	b->p[b->len] = 0;
}

/* a name in a text line: no control character, no line break */
static void sb_name(struct sbuf *b, const char *s)
{
	sb_add_name(b, OUT_NAME_LINE, s);
}

/* a folded frame name: ';' separates frames and a newline ends the line */
static void sb_add_folded(struct sbuf *b, const char *s)
{
	sb_add_name(b, OUT_NAME_FOLDED, s);
}

/* ---- report state ------------------------------------------------------------ */

struct rendered {
	char *text;
	size_t len;
};

/* what an event id stands for here: its description, and whether
 * --event keeps it */
struct report_ev {
	int known, keep;
	struct ustack_trace_event_desc d;
	uint64_t wall_left; /* --wall: its events left out (no time meaning) */
};

struct report {
	const char *in_path;
	enum report_format fmt;
	int want_stats, kernel_map;
	int inline_frames, srcline; /* folded: expand inlined functions, add file:line */
	int annotate;               /* folded: inlined frames end in "_[i]" */
	const char *archive_note;   /* --stats: the archive used, or NULL */
	FILE *out;
	struct ustack_trace_reader *r;
	struct ustack_trace_stitcher *st;
	struct ustack_symbolizer *sym;
	struct report_lookup lk; /* --symfs, --buildid-dir, FILE_CONTENT */
	/* JIT symbols by pid (the trace's JITSYM records, read in a first
	 * pass): frames with file id 0 of a process with a map are named
	 * from it, so user stacks render per (map, stack id) */
	struct ustack_jitsyms *jit;
	/* Python frames (report_python.h): PYFUNCs read in a first pass */
	struct report_py py;
	uint64_t py_frames, py_stacks, py_events, py_unknown, py_tramp;
	struct ustack_u64map *py_stack_ids; /* --stats: user stack ids with Python frames */
	uint8_t *py_keep;                   /* report_py__select()'s, one stack */
	size_t py_keep_cap;
	struct report_pprof *pprof; /* --format pprof (out_pprof_report.c) */
	/* folded: user stack "views" (map index << 32 | stack id) numbered
	 * densely, with their stack id and a pid of that map */
	struct ustack_u64map *uview_idx;
	struct { uint32_t id, pid; } *uviews;
	size_t nuviews, uviews_cap;

	struct ustack_u64map *comm_idx; /* tid -> index in comms */
	char (*comms)[32];
	size_t ncomms, comms_cap;

	/* event id -> name (ids are small; others go through the reader) */
	const char *ev_names[256];

	/* --event NAME[,NAME], --wall (docs/cli/report.md, "Weights") */
	char **ev_sel;
	size_t nev_sel;
	int wall;
	struct report_ev evs[256]; /* by event id; larger ids: ev_other */
	struct report_ev ev_other;
	uint32_t *desc_ids; /* the EVENT_DESC ids read, for --event's check */
	size_t ndesc_ids, desc_ids_bytes;
	struct ustack_u64map *desc_seen; /* the same as a set: a hostile trace may
					    hold very many ids */
	int sel_checked;
	/* folded: the units of the events counted (a bit per unit >> 1), the
	 * first event of each (the refusal names them), the one written */
	uint32_t units_seen;
	uint32_t unit_first_ev[5]; /* by unit >> 1; 4: REPORT_UNIT_OBJECTS */
	uint32_t out_unit;
	/* allocation views (report_alloc.h, docs/cli/report.md "Allocations") */
	struct report_alloc *alloc;
	enum report_view view;
	int have_alloc;
	int objects; /* an objects view: folded sums are doubles' bits */
	struct report_at at;
	int refused; /* an error was said: stop reading, exit 2 */
	/* --wall folded: the threads (comm key << 32 | tid), numbered densely */
	struct ustack_u64map *wthread_idx;
	struct { uint32_t comm, tid; } *wthreads;
	size_t nwthreads, wthreads_cap;
	/* --stats: per event id, its events and their weight */
	struct ustack_u64map *ev_count, *ev_weight;

	struct ustack_u64map *rendered_idx; /* stack_key -> index + 1 in rendered */
	struct rendered *rend;
	size_t nrend, rend_cap;

	struct ustack_u64map *files_printed; /* raw: file ids whose file_map line is out */
	/* folded: (kstack, ustack) pairs numbered densely, and the counts */
	struct ustack_u64map *folded_pair_idx; /* kstack << 32 | ustack -> pair index */
	struct ustack_u64map *folded;          /* pair index << 32 | comm key -> count */
	struct ustack_u64map *stack_refs; /* stack_key -> references (stackmap, stats) */
	struct ustack_u64map *file_ids;   /* distinct file ids (stats) */

	struct sbuf line;          /* scratch */
	struct cli_report_viewer *viewer; /* speedscope, perf-script */

	/* statistics */
	uint64_t events, user_stacks, lost, lost_records, file_maps, records, jitsyms;
	uint64_t event_bytes, user_stack_bytes, def_bytes;
	uint64_t ustacks_distinct, kstacks_distinct;
	uint64_t stitched[5];
	uint64_t stops[9]; /* user stacks by stop reason (8: other) */
	uint64_t first_time, last_time;
	uint32_t chunks;
	int have_end;
	struct ustack_trace_stats end;
	int oom;
	/* FILE_CONTENT records (raw prints them, --stats lists them) */
	struct ustack_trace_file_content *contents;
	size_t ncontents, contents_bytes;
};

static const char *stitch_reason(uint32_t result)
{
	switch (result) {
	case USTACK_TRACE_STITCH_MISMATCH: return "its thread delivered another cookie";
	case USTACK_TRACE_STITCH_LOST: return "records were lost before it arrived";
	case USTACK_TRACE_STITCH_END: return "the trace ended (or is damaged) before it";
	default: return "none requested";
	}
}

static const char *comm_of(struct report *rp, uint32_t tid)
{
	uint64_t v;

	return ustack_u64map__get(rp->comm_idx, tid, &v) ? rp->comms[v] : "<...>";
}

/* report_pprof__write(): the name of a comm_key() */
static const char *comm_name_cb(void *ctx, uint32_t key)
{
	const struct report *rp = ctx;

	return key && key <= rp->ncomms ? rp->comms[key - 1] : "<...>";
}

/* A thread's name from now on. A new name (exec, prctl) gets a slot of its
 * own: folded keys of the events before keep the name they had. */
static void set_comm(struct report *rp, uint32_t tid, const char *comm)
{
	int isnew;
	uint64_t *v = ustack_u64map__slot(rp->comm_idx, tid, &isnew);

	if (!comm || !*comm)
		comm = "<...>";
	if (!v) {
		rp->oom = 1;
		return;
	}
	if (!isnew && !strncmp(rp->comms[*v], comm, sizeof(rp->comms[0]) - 1))
		return;
	if (rp->ncomms == rp->comms_cap) {
		size_t ncap = rp->comms_cap ? rp->comms_cap * 2 : 64;
		void *np = realloc(rp->comms, ncap * sizeof(*rp->comms));

		if (!np) {
			rp->oom = 1;
			if (isnew)
				*v = 0;
			return;
		}
		rp->comms = np;
		rp->comms_cap = ncap;
	}
	*v = rp->ncomms++;
	snprintf(rp->comms[*v], sizeof(rp->comms[0]), "%s", comm);
}

/* index of a comm string for folded keys: one per name a thread had */
static uint64_t comm_key(struct report *rp, uint32_t tid)
{
	uint64_t v;

	return ustack_u64map__get(rp->comm_idx, tid, &v) ? v + 1 : 0;
}

static const char *event_name(struct report *rp, uint32_t id)
{
	struct ustack_trace_event_desc d;

	if (id < 256 && rp->ev_names[id])
		return rp->ev_names[id];
	if (ustack_trace_reader__event_desc(rp->r, id, &d))
		return "event";
	if (id < 256)
		rp->ev_names[id] = d.name;
	return d.name;
}

/* is @name one of --event's? */
static int ev_selected(const struct report *rp, const char *name)
{
	for (size_t i = 0; i < rp->nev_sel; i++)
		if (name && !strcmp(rp->ev_sel[i], name))
			return 1;
	return 0;
}

/* Event @id as this report weighs it. A description not read yet (a
 * damaged or hostile trace) is a count named "event", not cached: it may
 * still come. */
static struct report_ev *ev_info(struct report *rp, uint32_t id)
{
	struct report_ev *x = id < 256 ? &rp->evs[id] : &rp->ev_other;

	if (x->known && id < 256)
		return x;
	if (ustack_trace_reader__event_desc(rp->r, id, &x->d)) {
		memset(&x->d, 0, sizeof(x->d));
		x->d.id = id;
		x->d.name = "event";
	} else {
		x->known = 1;
	}
	x->keep = !rp->nev_sel || ev_selected(rp, x->d.name);
	return x;
}

/* --event names that no EVENT_DESC read so far has: said once, with the
 * trace's names, before the first event (descriptions come first in
 * every trace the writer makes) and at the end of an event-less trace */
static void check_selection(struct report *rp)
{
	struct ustack_trace_event_desc d;
	struct sbuf have = { 0 };

	if (rp->sel_checked++)
		return;
	for (size_t i = 0; i < rp->nev_sel; i++) {
		size_t k;

		for (k = 0; k < rp->ndesc_ids; k++)
			if (!ustack_trace_reader__event_desc(rp->r, rp->desc_ids[k], &d) && d.name &&
			    !strcmp(d.name, rp->ev_sel[i]))
				break;
		if (k < rp->ndesc_ids)
			continue;
		for (k = 0; k < rp->ndesc_ids; k++)
			if (!ustack_trace_reader__event_desc(rp->r, rp->desc_ids[k], &d)) {
				sb_puts(&have, k ? ", " : "");
				sb_name(&have, d.name ? d.name : "?");
			}
		cli_error("report: %s: no event '%s' in the trace (its events: %s)", rp->in_path,
			  rp->ev_sel[i], have.p ? have.p : "none");
		free(have.p);
		rp->refused = 1;
		return;
	}
}

/* "secs.usecs" at @p; returns the end (at most 27 bytes) */
static char *fmt_time(char *p, uint64_t t)
{
	p = fmt_dec(p, t / 1000000000u, 1);
	*p++ = '.';
	return fmt_dec(p, t % 1000000000u / 1000u, 6);
}

/* "secs.usecs" */
static void put_time(struct sbuf *b, uint64_t t)
{
	sb_reserve(b, 32);
	if (b->oom)
		return;
	b->len = (size_t)(fmt_time(b->p + b->len, t) - b->p);
	b->p[b->len] = 0;
}

/* "comm-tid [cpu] FLAGS secs.usecs: " as the seed's ftrace lines. Every
 * event line starts so: written in place, not piece by piece (a tenth of
 * a text report's instructions went to the pieces). */
static void put_prefix(struct report *rp, struct sbuf *b, uint32_t tid, uint32_t cpu,
		       const char *flags, uint64_t t)
{
	const char *comm = comm_of(rp, tid);
	size_t cl = out_name_clean_str(OUT_NAME_LINE, comm), fl = strlen(flags);
	size_t el = comm[cl] ? out_name_escape(OUT_NAME_LINE, comm, cl + strlen(comm + cl), NULL) : cl;
	char *p;

	/* comm, flags, 3 separators of up to 2 bytes, tid and cpu (10
	 * digits each), the time (27), ": " and the NUL */
	sb_reserve(b, el + fl + 80);
	if (b->oom)
		return;
	p = b->p + b->len;
	if (comm[cl]) /* a name with control characters: escaped */
		out_name_escape(OUT_NAME_LINE, comm, cl + strlen(comm + cl), p);
	else
		memcpy(p, comm, cl);
	p += el;
	*p++ = '-';
	p = fmt_dec(p, tid, 1);
	*p++ = ' ';
	*p++ = '[';
	p = fmt_dec(p, cpu, 3);
	*p++ = ']';
	*p++ = ' ';
	memcpy(p, flags, fl);
	p += fl;
	*p++ = ' ';
	p = fmt_time(p, t);
	*p++ = ':';
	*p++ = ' ';
	b->len = (size_t)(p - b->p);
	b->p[b->len] = 0;
}

static void out_sb(struct report *rp, struct sbuf *b)
{
	if (b->len)
		fwrite(b->p, 1, b->len, rp->out);
	b->len = 0;
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;

	return s ? s + 1 : (p && *p ? p : "unknown");
}

/* ---- rendering of one stack (cached) ---------------------------------------- */

static void render_kernel_frame(struct report *rp, struct sbuf *b, uint64_t ip, int folded)
{
	struct ustack_trace_ksym ks;

	if (ustack_trace_reader__ksym(rp->r, ip, &ks) ||
	    (ks.size && ip - ks.addr >= ks.size)) {
		if (folded)
			sb_puts(b, "[unknown]");
		else
			sb_printf(b, " => [unknown] 0x%016" PRIx64 " ([kernel.kallsyms])\n", ip);
		return;
	}
	if (folded) {
		sb_add_folded(b, ks.name);
		return;
	}
	sb_puts(b, " => ");
	sb_name(b, ks.name);
	sb_printf(b, "+0x%" PRIx64 " ([", ip - ks.addr);
	sb_name(b, ks.module && *ks.module ? ks.module : "kernel.kallsyms");
	sb_puts(b, "])\n");
}

/* deeper inline chains show their innermost and outermost levels */
#define MAX_CHAIN 64

/* One folded frame: "func", or with --srcline "func file.c:12" (the source
 * file's base name, as perf's srcline); with --annotate an inlined function
 * ends in "_[i]", FlameGraph's mark for inlined frames (flamegraph.pl
 * --colors java paints them aqua; ustack flamegraph labels them). */
static void folded_sym(struct report *rp, struct sbuf *b, const struct ustack_sym *sy)
{
	sb_add_folded(b, sy->name);
	if (rp->srcline && sy->file && sy->line) {
		sb_add(b, " ", 1);
		/* no space in it: "FILE:LINE" stays the frame's last word */
		sb_add_name(b, OUT_NAME_FOLDED_SRC, base_name(sy->file));
		sb_printf(b, ":%u", sy->line);
	}
	if (rp->annotate && sy->inlined)
		sb_puts(b, "_[i]");
}

/* A Python frame: text " => py  QUALNAME (FILE:LINE)", as snapshot's
 * "#N py  ..."; folded "py::QUALNAME (BASE:LINE)", as snapshot's folded */
static void render_py_frame(struct report *rp, struct sbuf *b, const struct ustack_trace_frame *f,
			    int folded)
{
	struct ustack_trace_pyfunc pf;
	uint32_t line = ustack_trace_py_offset_line(f->offset);

	if (report_py__func(&rp->py, f, &pf)) {
		/* no PYFUNC of that id: unknown, and said to be so */
		if (folded)
			sb_puts(b, "py::??");
		else
			sb_printf(b, " => py  ?? (function %" PRIu64 ")\n",
				  ustack_trace_py_offset_func(f->offset));
		return;
	}
	if (folded) {
		sb_puts(b, "py::");
		sb_add_folded(b, pf.name);
		sb_puts(b, " (");
		sb_add_name(b, OUT_NAME_FOLDED_SRC, report_py__base(pf.file));
		if (line)
			sb_printf(b, ":%u", line);
		sb_puts(b, ")");
		return;
	}
	sb_puts(b, " => py  ");
	sb_name(b, pf.name);
	sb_puts(b, " (");
	sb_name(b, pf.file);
	if (line)
		sb_printf(b, ":%u", line);
	sb_puts(b, ")\n");
}

static void render_user_frame(struct report *rp, struct sbuf *b, const struct ustack_trace_frame *f,
			      int folded, uint32_t pid)
{
	struct ustack_sym chain[MAX_CHAIN];
	const struct ustack_sym *outer;
	const struct ustack_perfmap_entry *je;
	int n;

	if (!f->file_id && rp->jit &&
	    (je = ustack_jitsyms__lookup(rp->jit, pid, cli_frame_exact(f) ? f->offset : f->offset - 1))) {
		/* JIT code named by the process's perf map; "_[j]" is the
		 * FlameGraph annotation for JIT frames */
		if (folded) {
			sb_add_folded(b, je->name);
			sb_puts(b, "_[j]");
		} else {
			sb_puts(b, " => ");
			sb_name(b, je->name);
			sb_printf(b, "+0x%" PRIx64 " ([jit] /tmp/perf-%" PRIu32 ".map)\n",
				  f->offset - je->start, pid);
		}
		return;
	}
	n = ustack_symbolizer__symbolize_frames(rp->sym, f->file_id, f->offset,
						cli_frame_exact(f) ? USTACK_SYM_EXACT_PC : 0,
						chain, MAX_CHAIN, sizeof(chain[0]));
	if (n < 0) {
		rp->oom = 1;
		return;
	}
	if (n > MAX_CHAIN)
		n = MAX_CHAIN;
	outer = &chain[n - 1];
	if (folded) {
		if (outer->status == USTACK_SYM_OK) {
			/* root first: the outer function, then what was inlined in it */
			folded_sym(rp, b, outer);
			for (int k = n - 2; rp->inline_frames && k >= 0; k--) {
				sb_add(b, ";", 1);
				folded_sym(rp, b, &chain[k]);
			}
		} else if (outer->status == USTACK_SYM_ANON || outer->status == USTACK_SYM_UNKNOWN_ID) {
			sb_puts(b, "[unknown]");
		} else if (cli_is_bracketed(base_name(outer->path))) {
			sb_add_folded(b, base_name(outer->path)); /* [vdso] */
		} else {
			sb_add(b, "[", 1);
			sb_add_folded(b, base_name(outer->path));
			sb_add(b, "]", 1);
		}
		return;
	}
	switch (outer->status) {
	case USTACK_SYM_OK:
		/* innermost first, as the stack: inlined functions, then the
		 * function whose code it is */
		for (int k = 0; k < n; k++) {
			const struct ustack_sym *sy = &chain[k];

			sb_puts(b, " => ");
			sb_name(b, sy->name);
			if (!sy->inlined)
				sb_printf(b, "+0x%" PRIx64, sy->sym_offset);
			sb_puts(b, " (");
			sb_name(b, sy->path);
			sb_puts(b, ")");
			if (sy->file && sy->line) {
				sb_puts(b, " at ");
				sb_name(b, sy->file);
				sb_printf(b, ":%u", sy->line);
			}
			sb_puts(b, sy->inlined ? " [inlined]\n" : "\n");
		}
		break;
	case USTACK_SYM_ANON:
		sb_printf(b, " => [unknown] 0x%" PRIx64 "\n", f->offset);
		break;
	case USTACK_SYM_UNKNOWN_ID:
		sb_printf(b, " => [unknown] 0x%" PRIx64 " (file id 0x%" PRIx64 ")\n", f->offset,
			  f->file_id);
		break;
	case USTACK_SYM_MISMATCH:
		sb_puts(b, " => ?? (");
		sb_name(b, outer->path);
		sb_printf(b, "+0x%" PRIx64 ") [build ID mismatch]\n", f->offset);
		break;
	default:
		sb_puts(b, " => ?? (");
		sb_name(b, outer->path);
		sb_printf(b, "+0x%" PRIx64 ")", f->offset);
		if (outer->file && outer->line) {
			sb_puts(b, " at ");
			sb_name(b, outer->file);
			sb_printf(b, ":%u", outer->line);
		}
		sb_puts(b, "\n");
		break;
	}
}

/* Which frames of user stack @st show (report_python.h), in a buffer
 * reused from stack to stack; NULL when out of memory */
static const uint8_t *py_keep(struct report *rp, const struct ustack_trace_stack *st, uint32_t pid)
{
	uint32_t npy;

	if (cli_grow((void **)&rp->py_keep, &rp->py_keep_cap, st->nr))
		return NULL;
	report_py__select(&rp->py, st, pid, rp->py_keep, &npy);
	return rp->py_keep;
}

/* Text of stack (kind, id) in the current format, rendered at first use;
 * user stacks of a process with a JIT map render apart (same id, other
 * names for its JIT frames). */
static const struct rendered *rendered_stack(struct report *rp, uint32_t kind, uint32_t id,
					     uint32_t pid)
{
	struct ustack_trace_stack st;
	struct sbuf b = { 0 };
	struct rendered *rd;
	const uint8_t *keep = NULL;
	int isnew, folded = rp->fmt == FMT_FOLDED;
	uint64_t jit = kind == USTACK_TRACE_USTACK ? ustack_jitsyms__map_index(rp->jit, pid) : 0;
	uint64_t *slot = ustack_u64map__slot(rp->rendered_idx, jit << 33 | stack_key(kind, id),
					     &isnew);

	if (!slot) {
		rp->oom = 1;
		return NULL;
	}
	if (!isnew)
		return *slot ? &rp->rend[*slot - 1] : NULL;
	if (ustack_trace_reader__stack(rp->r, kind, id, &st))
		return NULL; /* the reader guarantees definitions; *slot stays 0 */
	if (rp->nrend == rp->rend_cap) {
		size_t ncap = rp->rend_cap ? rp->rend_cap * 2 : 256;
		void *np = realloc(rp->rend, ncap * sizeof(*rp->rend));

		if (!np) {
			rp->oom = 1;
			return NULL;
		}
		rp->rend = np;
		rp->rend_cap = ncap;
	}
	if (kind == USTACK_TRACE_USTACK && rp->fmt != FMT_RAW && st.nr &&
	    !(keep = py_keep(rp, &st, pid))) {
		rp->oom = 1;
		return NULL;
	}
	for (uint32_t k = 0, shown = 0; k < st.nr; k++) {
		/* folded stacks go root first; the trace stores innermost first */
		uint32_t i = folded ? st.nr - 1 - k : k;

		if (keep && !keep[i])
			continue;
		if (folded && shown)
			sb_add(&b, ";", 1);
		shown++;
		if (kind == USTACK_TRACE_KSTACK) {
			if (rp->fmt == FMT_RAW)
				sb_printf(&b, " => <0x%016" PRIx64 ">\n", st.ips[i]);
			else
				render_kernel_frame(rp, &b, st.ips[i], folded);
		} else {
			const struct ustack_trace_frame *f = &st.frames[i];

			if (rp->fmt == FMT_RAW)
				sb_printf(&b, " => <%016" PRIx64 "> : 0x%" PRIx64 "\n", f->offset,
					  f->file_id);
			else if (report_py__is_py(&rp->py, f))
				render_py_frame(rp, &b, f, folded);
			else
				render_user_frame(rp, &b, f, folded, pid);
		}
	}
	if (b.oom) {
		free(b.p);
		rp->oom = 1;
		return NULL;
	}
	rd = &rp->rend[rp->nrend++];
	rd->text = b.p ? b.p : strdup("");
	rd->len = b.len;
	*slot = rp->nrend;
	return rd;
}

/* the text of a stack, after what rp->line holds (written out with it) */
static void out_rendered(struct report *rp, uint32_t kind, uint32_t id, uint32_t pid)
{
	const struct rendered *rd;

	if (id == USTACK_TRACE_NO_STACK)
		return;
	rd = rendered_stack(rp, kind, id, pid);
	if (rd && rd->len)
		sb_add(&rp->line, rd->text, rd->len);
}

/* ---- raw ---------------------------------------------------------------------- */

static void raw_event(struct report *rp, const struct ustack_trace_event *e)
{
	struct sbuf *b = &rp->line;

	struct ustack_trace_event_desc d;
	char args[REPORT_ARGS_MAX];

	put_prefix(rp, b, e->tid, e->cpu, ".....", e->time);
	sb_name(b, event_name(rp, e->event_id));
	sb_printf(b, " cookie=%" PRIx64, e->cookie);
	if (*report_fmt_args(args, ustack_trace_reader__event_desc(rp->r, e->event_id, &d) ? NULL : &d,
			     e))
		sb_printf(b, " %s", args);
	sb_add(b, "\n", 1);
	out_sb(rp, b);
	out_rendered(rp, USTACK_TRACE_KSTACK, e->kstack_id, e->pid);
}

static void build_id_hex(const struct ustack_file_map *fm, char *hex)
{
	static const char dg[] = "0123456789abcdef";
	uint32_t n = fm->build_id_size > USTACK_BUILD_ID_MAX ? USTACK_BUILD_ID_MAX : fm->build_id_size;

	if (!n) {
		strcpy(hex, "-");
		return;
	}
	for (uint32_t k = 0; k < n; k++) {
		hex[2 * k] = dg[fm->build_id[k] >> 4];
		hex[2 * k + 1] = dg[fm->build_id[k] & 15];
	}
	hex[2 * n] = 0;
}

/* file_map lines for the file ids of stack @id not printed yet */
static void raw_file_maps(struct report *rp, const struct ustack_trace_user_stack *u)
{
	struct ustack_trace_stack st;
	struct ustack_file_map fm;
	struct sbuf *b = &rp->line;
	char hex[2 * USTACK_BUILD_ID_MAX + 1];

	if (ustack_trace_reader__stack(rp->r, USTACK_TRACE_USTACK, u->stack_id, &st))
		return;
	for (uint32_t i = 0; i < st.nr; i++) {
		int isnew;
		uint64_t id = st.frames[i].file_id;

		if (!id || !ustack_u64map__slot(rp->files_printed, id, &isnew) || !isnew)
			continue;
		if (ustack_trace_reader__file_map(rp->r, id, &fm))
			continue;
		build_id_hex(&fm, hex);
		put_prefix(rp, b, u->tid, u->cpu, "...1.", u->time);
		/* the fields are words: no space in the path either */
		sb_printf(b, "file_map: id=0x%" PRIx64 " path=", id);
		sb_add_name(b, OUT_NAME_LINE_WORD, fm.path && *fm.path ? fm.path : "?");
		sb_printf(b, " build_id=%s\n", hex);
		out_sb(rp, b);
	}
}

static void raw_user_stack(struct report *rp, const struct ustack_trace_user_stack *u)
{
	struct sbuf *b = &rp->line;

	if (u->stack_id != USTACK_TRACE_NO_STACK &&
	    !ustack_u64map__get(rp->rendered_idx, stack_key(USTACK_TRACE_USTACK, u->stack_id), NULL))
		raw_file_maps(rp, u);
	put_prefix(rp, b, u->tid, u->cpu, ".....", u->time);
	sb_printf(b, "<user stack unwind> cookie=%" PRIx64 "\n", u->cookie);
	out_sb(rp, b);
	out_rendered(rp, USTACK_TRACE_USTACK, u->stack_id, u->pid);
}

static void raw_lost(struct report *rp, const struct ustack_trace_lost *l)
{
	struct sbuf *b = &rp->line;

	if (l->cpu == USTACK_TRACE_NO_CPU)
		sb_puts(b, "<...>-0 [---] ..... ");
	else
		sb_printf(b, "<...>-0 [%03" PRIu32 "] ..... ", l->cpu);
	put_time(b, l->time);
	sb_printf(b, ": lost: what=%s count=%" PRIu64 "\n",
		  l->what == USTACK_TRACE_LOST_KERNEL ? "kernel" :
		  l->what == USTACK_TRACE_LOST_USTACK ? "ustack" : "unknown", l->count);
	out_sb(rp, b);
}

static void content_words(const struct ustack_trace_file_content *c, struct sbuf *b)
{
	sb_puts(b, "sha256:");
	for (int i = 0; i < 32; i++)
		sb_printf(b, "%02x", c->hash[i]);
	sb_printf(b, " size=%" PRIu64 "%s%s%s", c->size,
		  c->flags & USTACK_TRACE_CONTENT_CACHED ? " cached" : "",
		  c->flags & USTACK_TRACE_CONTENT_DEBUG ? " debug" : "",
		  c->flags & USTACK_TRACE_CONTENT_TOO_BIG ? " too-big" : "");
}

static void file_content(struct report *rp, const struct ustack_trace_file_content *c)
{
	struct sbuf *b = &rp->line;

	if (cli_grow((void **)&rp->contents, &rp->contents_bytes,
		     (rp->ncontents + 1) * sizeof(*c))) {
		rp->oom = 1;
		return;
	}
	rp->contents[rp->ncontents++] = *c;
	if (rp->fmt != FMT_RAW || rp->want_stats)
		return;
	sb_printf(b, "file_content: id=0x%" PRIx64 " ", c->file_id);
	content_words(c, b);
	sb_puts(b, "\n");
	out_sb(rp, b);
}

/* ---- stitched output (text, folded) ---------------------------------------------- */

/* one more event of stack pair (kstack << 32 | ustack) in thread name @comm
 * (--wall: the thread, wall_thread()), of weight @w */
static void folded_count(struct report *rp, uint64_t pair, uint64_t comm, uint64_t w, double wd)
{
	int isnew;
	uint64_t *idx = ustack_u64map__slot(rp->folded_pair_idx, pair, &isnew), *v;

	if (!idx) {
		rp->oom = 1;
		return;
	}
	if (isnew) /* pairs are never removed: 0, 1, 2 ... */
		*idx = ustack_u64map__count(rp->folded_pair_idx) - 1;
	v = ustack_u64map__slot(rp->folded, *idx << 32 | comm, NULL);
	if (!v) {
		rp->oom = 1;
	} else if (rp->objects) { /* estimates: summed exactly, rounded at the output */
		double d;

		memcpy(&d, v, sizeof(d));
		d += wd;
		memcpy(v, &d, sizeof(d));
	} else {
		*v += w;
	}
}

/* Folded: the dense number of user stack @id as seen in process @pid (the
 * stack id alone when no JIT map tells processes apart). */
static uint32_t user_view(struct report *rp, uint32_t id, uint32_t pid)
{
	uint64_t jit, *slot;
	int isnew;

	if (id == USTACK_TRACE_NO_STACK)
		return id;
	jit = ustack_jitsyms__map_index(rp->jit, pid);
	slot = ustack_u64map__slot(rp->uview_idx, jit << 32 | id, &isnew);
	if (!slot) {
		rp->oom = 1;
		return USTACK_TRACE_NO_STACK;
	}
	if (isnew) {
		if (rp->nuviews == rp->uviews_cap) {
			size_t ncap = rp->uviews_cap ? 2 * rp->uviews_cap : 256;
			void *np = realloc(rp->uviews, ncap * sizeof(*rp->uviews));

			if (!np) {
				rp->oom = 1;
				return USTACK_TRACE_NO_STACK;
			}
			rp->uviews = np;
			rp->uviews_cap = ncap;
		}
		rp->uviews[rp->nuviews].id = id;
		rp->uviews[rp->nuviews].pid = pid;
		*slot = rp->nuviews++;
	}
	return (uint32_t)*slot;
}

/*
 * Folded output has one number per stack: samples and nanoseconds are not
 * added. The first event of a second unit stops the report with a line
 * naming an event of each and the two ways out.
 */
static void note_unit(struct report *rp, uint32_t unit, uint32_t event_id)
{
	uint32_t bit = 1u << (unit >> 1), first = 0;

	if (rp->units_seen & bit)
		return;
	if (unit == REPORT_UNIT_OBJECTS)
		bit = 1u << 4;
	if (rp->units_seen & bit)
		return;
	if (!rp->units_seen) {
		rp->units_seen = bit;
		rp->unit_first_ev[unit == REPORT_UNIT_OBJECTS ? 4 : unit >> 1] = event_id;
		rp->out_unit = unit;
		return;
	}
	while (!(rp->units_seen & 1u << first))
		first++;
	cli_error("report: %s: events in %s (%s) and in %s (%s): folded stacks carry one number "
		  "each; choose events of one unit with --event NAME[,NAME], or the wall-clock "
		  "time of each thread with --wall", rp->in_path,
		  report_unit_name(first == 4 ? REPORT_UNIT_OBJECTS : first << 1),
		  event_name(rp, rp->unit_first_ev[first]),
		  report_unit_name(unit), event_name(rp, event_id));
	rp->refused = 1;
}

/* An allocation in the report's view: 0 when the view leaves it out (not
 * live at the time of an inuse view, or without its size and address);
 * an objects view weighs its estimated count (*@wd, rounded in *@w) */
static int alloc_weight(struct report *rp, const struct ustack_trace_event *e, uint64_t *w,
			double *wd, uint32_t *unit)
{
	uint64_t size, addr;

	if (report_alloc_args(e, &size, &addr))
		return 0;
	/* pprof carries the four views: it weighs the event itself */
	if (rp->fmt == FMT_PPROF)
		return 1;
	if (report_view_inuse(rp->view) && !report_alloc__live(rp->alloc, e->pid, addr, e->time))
		return 0;
	if (report_view_objects(rp->view)) {
		*wd = report_alloc_objects(e);
		*w = (uint64_t)(*wd + 0.5);
		*unit = REPORT_UNIT_OBJECTS;
	}
	return 1;
}

/* What event @e adds to its stack in this report (--wall: its time), in
 * *@w (*@wd the same as a double, exact for objects) and its unit in
 * *@unit; 0: it is left out (--event, --wall, a free, an allocation out
 * of the view). */
static int event_weight(struct report *rp, const struct ustack_trace_event *e, uint64_t *w,
			double *wd, uint32_t *unit)
{
	struct report_ev *x = ev_info(rp, e->event_id);

	/* a free only ends an allocation: it has no stack and weighs nothing */
	if (!x->keep || x->d.type == USTACK_TRACE_EV_FREE)
		return 0;
	*w = report_weight(&x->d, e->value, rp->wall);
	*wd = (double)*w;
	*unit = rp->wall ? USTACK_TRACE_EV_UNIT_NS : report_unit(&x->d);
	if (x->d.type == USTACK_TRACE_EV_ALLOC && !rp->wall && rp->alloc &&
	    !alloc_weight(rp, e, w, wd, unit))
		return 0;
	/* a 0 ns interval has a time meaning (and adds nothing); a tracepoint none */
	if (rp->wall && !*w && !report_wall_ns(&x->d, 1)) {
		x->wall_left++;
		return 0;
	}
	if (rp->fmt == FMT_FOLDED)
		note_unit(rp, *unit, e->event_id);
	return !rp->refused;
}

/* --wall folded: the dense number (from 1) of thread @tid under the name
 * it has now */
static uint64_t wall_thread(struct report *rp, uint32_t tid)
{
	uint64_t comm = comm_key(rp, tid), *slot;
	int isnew;

	slot = ustack_u64map__slot(rp->wthread_idx, comm << 32 | tid, &isnew);
	if (!slot || (isnew && cli_grow((void **)&rp->wthreads, &rp->wthreads_cap,
					(rp->nwthreads + 1) * sizeof(*rp->wthreads)))) {
		rp->oom = 1;
		return 0;
	}
	if (isnew) {
		rp->wthreads[rp->nwthreads].comm = (uint32_t)comm;
		rp->wthreads[rp->nwthreads].tid = tid;
		*slot = ++rp->nwthreads;
	}
	return *slot;
}

static void emit_stitched(struct report *rp, const struct ustack_trace_stitched *s)
{
	uint64_t w;
	double wd;
	uint32_t unit;
	char wbuf[48], args[REPORT_ARGS_MAX];
	struct report_ev *x;

	const struct ustack_trace_event *e = &s->event;
	struct sbuf *b = &rp->line;

	if (s->result < 5)
		rp->stitched[s->result]++;
	if (rp->fmt == FMT_RAW) {
		/* raw prints records in file order; it only explains events
		 * that asked for a user stack and got none */
		if (s->result == USTACK_TRACE_STITCH_OK || s->result == USTACK_TRACE_STITCH_NO_COOKIE)
			return;
		put_prefix(rp, b, e->tid, e->cpu, ".....", e->time);
		sb_printf(b, "<no user stack> cookie=%" PRIx64 " reason=%s\n", e->cookie,
			  s->result == USTACK_TRACE_STITCH_MISMATCH ? "mismatch" :
			  s->result == USTACK_TRACE_STITCH_LOST ? "lost" : "end");
		out_sb(rp, b);
		return;
	}
	if (rp->refused || !event_weight(rp, e, &w, &wd, &unit))
		return;
	x = ev_info(rp, e->event_id);
	if (rp->fmt == FMT_PPROF) {
		if (report_pprof__event(rp->pprof, s, (uint32_t)comm_key(rp, e->tid)))
			rp->oom = 1;
		return;
	}
	if (rp->viewer) {
		/* integer weights: an objects view rounds each event's estimate */
		if (x->d.type == USTACK_TRACE_EV_ALLOC && !rp->wall
			    ? cli_report_viewer__event_weighed(rp->viewer, s, comm_of(rp, e->tid), w,
							       unit == REPORT_UNIT_OBJECTS ? "none"
											   : "bytes")
			    : cli_report_viewer__event(rp->viewer, s, comm_of(rp, e->tid)))
			rp->oom = 1;
		return;
	}
	if (rp->fmt == FMT_FOLDED) {
		folded_count(rp, ((uint64_t)e->kstack_id << 32) | user_view(rp, s->ustack_id, e->pid),
			     rp->wall ? wall_thread(rp, e->tid) : comm_key(rp, e->tid), w, wd);
		return;
	}
	if (rp->fmt != FMT_TEXT)
		return;
	put_prefix(rp, b, e->tid, e->cpu, ".....", e->time);
	sb_name(b, event_name(rp, e->event_id));
	/* a count says nothing an event line does not: only other units */
	if (unit == REPORT_UNIT_OBJECTS) {
		sb_printf(b, " %.3f objects", wd);
	} else if (rp->wall || unit != USTACK_TRACE_EV_UNIT_COUNT) {
		sb_add(b, " ", 1);
		sb_puts(b, report_fmt_weight(wbuf, sizeof(wbuf), unit, w));
	}
	sb_add(b, " cookie=", 8);
	sb_add_hex(b, e->cookie);
	if (*report_fmt_args(args, x->known ? &x->d : NULL, e)) {
		sb_add(b, " ", 1);
		sb_puts(b, args);
	}
	sb_add(b, "\n", 1);
	out_rendered(rp, USTACK_TRACE_KSTACK, e->kstack_id, e->pid);
	if (s->result == USTACK_TRACE_STITCH_OK) {
		out_rendered(rp, USTACK_TRACE_USTACK, s->ustack_id, e->pid);
		if (s->stop_reason != USTACK_STOP_OUTERMOST)
			sb_printf(b, " -- unwind stopped: %s\n", ustack_stop_reason_name(s->stop_reason));
	} else if (s->result != USTACK_TRACE_STITCH_NO_COOKIE) {
		sb_printf(b, " -- no user stack: %s\n", stitch_reason(s->result));
	}
	sb_add(b, "\n", 1);
	/* events go out in blocks: one fwrite per event line and per stack
	 * was a fifth of a report's own time */
	if (b->len >= 1u << 16)
		out_sb(rp, b);
}

static void drain(struct report *rp)
{
	struct ustack_trace_stitched s;

	while (ustack_trace_stitcher__pop(rp->st, &s) == 1)
		emit_stitched(rp, &s);
}

/* ---- folded ------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* comm index -> name: one slot per name a thread had (set_comm) */
static void folded_finish(struct report *rp)
{
	char **lines;
	size_t n = 0;
	uint64_t key, events, *pairs;
	struct sbuf b = { 0 };

	lines = calloc(ustack_u64map__count(rp->folded) + 1, sizeof(*lines));
	pairs = malloc((ustack_u64map__count(rp->folded_pair_idx) + 1) * sizeof(*pairs));
	if (!lines || !pairs) {
		free(lines);
		free(pairs);
		rp->oom = 1;
		return;
	}
	for (size_t it = 0; ustack_u64map__next(rp->folded_pair_idx, &it, &key, &events);)
		pairs[events] = key;
	for (size_t it = 0; ustack_u64map__next(rp->folded, &it, &key, &events);) {
		uint64_t pair = pairs[key >> 32], comm = key & UINT32_MAX;
		uint32_t kid = (uint32_t)(pair >> 32), uid = (uint32_t)pair;
		const struct rendered *rd;

		b.len = 0;
		if (!events)
			continue; /* no weight (0 ns): nothing a flame graph could draw */
		if (rp->wall) {
			/* the thread as the root: its name and tid, as text's event lines */
			uint32_t c = 0, tid = 0;

			if (comm && comm <= rp->nwthreads) {
				c = rp->wthreads[comm - 1].comm;
				tid = rp->wthreads[comm - 1].tid;
			}
			sb_add_folded(&b, c ? rp->comms[c - 1] : "<...>");
			sb_printf(&b, "-%" PRIu32, tid);
		} else {
			sb_add_folded(&b, comm ? rp->comms[comm - 1] : "<...>");
		}
		if (uid != USTACK_TRACE_NO_STACK && uid < rp->nuviews &&
		    (rd = rendered_stack(rp, USTACK_TRACE_USTACK, rp->uviews[uid].id,
					 rp->uviews[uid].pid)) &&
		    rd->len) {
			sb_add(&b, ";", 1);
			sb_add(&b, rd->text, rd->len);
		}
		if (kid != USTACK_TRACE_NO_STACK && (rd = rendered_stack(rp, USTACK_TRACE_KSTACK, kid, 0)) &&
		    rd->len) {
			sb_add(&b, ";", 1);
			sb_add(&b, rd->text, rd->len);
		}
		/* the count rides behind a tab so that sorting groups equal stacks */
		if (rp->objects) {
			double d;

			memcpy(&d, &events, sizeof(d));
			sb_printf(&b, "\t%.17g", d);
		} else {
			sb_printf(&b, "\t%" PRIu64, events);
		}
		if (b.oom || !(lines[n] = strdup(b.p))) {
			rp->oom = 1;
			break;
		}
		n++;
	}
	qsort(lines, n, sizeof(*lines), cmp_str);
	for (size_t i = 0; i < n;) {
		char *tab = strrchr(lines[i], '\t');
		size_t klen = (size_t)(tab - lines[i]);
		uint64_t count = strtoull(tab + 1, NULL, 10);
		double dcount = strtod(tab + 1, NULL);
		size_t j = i + 1;

		/* different stack ids may name the same functions */
		while (j < n && !strncmp(lines[j], lines[i], klen) && lines[j][klen] == '\t') {
			count += strtoull(lines[j] + klen + 1, NULL, 10);
			dcount += strtod(lines[j] + klen + 1, NULL);
			j++;
		}
		if (rp->objects)
			count = dcount > 0 ? (uint64_t)(dcount + 0.5) : 0;
		if (count || !rp->objects) {
			fwrite(lines[i], 1, klen, rp->out);
			fprintf(rp->out, " %" PRIu64 "\n", count);
		}
		for (; i < j; i++)
			free(lines[i]);
	}
	free(lines);
	free(pairs);
	free(b.p);
}

/* ---- stack map exports ---------------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void put_u32le(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4); /* native order, as the stackmap's own export */
}

/* The words a stack has in ustack's stackmaps (what `ustack record` keys
 * them by): kernel ips, or two per user frame (ustack_trace_pack_frame). */
static uint64_t stack_word(const struct ustack_trace_stack *st, uint32_t w)
{
	uint64_t words[2];

	if (st->kind == USTACK_TRACE_KSTACK)
		return st->ips[w];
	ustack_trace_pack_frame(&st->frames[w / 2], words);
	return words[w & 1];
}

static int stackmap_finish(struct report *rp)
{
	uint32_t kind = rp->kernel_map ? USTACK_TRACE_KSTACK : USTACK_TRACE_USTACK;
	uint32_t *ids, n = 0;
	uint64_t key;
	uint8_t hdr[16];

	ids = malloc((ustack_u64map__count(rp->stack_refs) + 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (size_t it = 0; ustack_u64map__next(rp->stack_refs, &it, &key, NULL);)
		if (key >> 32 == kind)
			ids[n++] = (uint32_t)key;
	qsort(ids, n, sizeof(*ids), cmp_u32);
	if (rp->fmt == FMT_STACKMAP_BIN) {
		put_u32le(hdr, USTACK_STACKMAP_BIN_MAGIC);
		put_u32le(hdr + 4, USTACK_STACKMAP_BIN_VERSION);
		put_u32le(hdr + 8, n);
		put_u32le(hdr + 12, 0);
		fwrite(hdr, 1, sizeof(hdr), rp->out);
	}
	for (uint32_t k = 0; k < n; k++) {
		struct ustack_trace_stack st;
		uint64_t refs = 0;
		uint32_t words;

		ustack_u64map__get(rp->stack_refs, stack_key(kind, ids[k]), &refs);
		if (ustack_trace_reader__stack(rp->r, kind, ids[k], &st))
			continue;
		words = kind == USTACK_TRACE_KSTACK ? st.nr : 2 * st.nr;
		if (rp->fmt == FMT_STACKMAP_BIN) {
			uint8_t eh[16];

			put_u32le(eh, ids[k]);
			put_u32le(eh + 4, words);
			put_u32le(eh + 8, refs > UINT32_MAX ? UINT32_MAX : (uint32_t)refs);
			put_u32le(eh + 12, 0);
			fwrite(eh, 1, sizeof(eh), rp->out);
			for (uint32_t w = 0; w < words; w++) {
				uint64_t v = stack_word(&st, w);

				fwrite(&v, 1, 8, rp->out);
			}
			continue;
		}
		fprintf(rp->out, "stack_id %" PRIu32 " [ref %" PRIu64 ", depth %" PRIu32 "]\n", ids[k],
			refs, words);
		for (uint32_t w = 0; w < words; w++)
			fprintf(rp->out, "  [%" PRIu32 "] 0x%" PRIx64 "\n", w, stack_word(&st, w));
		fputc('\n', rp->out);
	}
	free(ids);
	return 0;
}

/* ---- statistics --------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One line per file id, in id order: recorded path, where its symbols
 * come from (ustack_debug_source_name()) and which file that is. */
static void stats_symbol_sources(struct report *rp)
{
	size_t n = ustack_u64map__count(rp->file_ids), k = 0;
	uint64_t *ids = n ? calloc(n, sizeof(*ids)) : NULL, id, v;

	if (!ids || !rp->sym) {
		free(ids);
		return;
	}
	for (size_t it = 0; k < n && ustack_u64map__next(rp->file_ids, &it, &id, &v);) {
		struct ustack_trace_frame f = { .file_id = id };

		if (!report_py__is_py(&rp->py, &f)) /* no file: "python frames" says what */
			ids[k++] = id;
	}
	qsort(ids, k, sizeof(*ids), cmp_u64);
	for (size_t i = 0; i < k; i++) {
		const char *from = NULL;
		struct ustack_sym s;
		int st = ustack_symbolizer__file_status(rp->sym, ids[i], &from);
		int src = ustack_symbolizer__file_source(rp->sym, ids[i]);

		/* the recorded path: what a frame of this file would show */
		ustack_symbolizer__symbolize(rp->sym, ids[i], 0, USTACK_SYM_EXACT_PC, &s);
		report_lookup__stats(rp->out, &rp->lk, rp->sym, ids[i], s.path && *s.path ? s.path : "?");
		fprintf(rp->out, "symbols: file %" PRIu64 " ", ids[i]);
		out_name_put(rp->out, OUT_NAME_LINE, s.path && *s.path ? s.path : "?");
		fprintf(rp->out, ": %s (", ustack_debug_source_name((unsigned int)src));
		out_name_put(rp->out, OUT_NAME_LINE, from ? from : ustack_sym_status_name((unsigned int)st));
		fputs(")\n", rp->out);
		/* source lines may come from elsewhere than the names */
		src = ustack_symbolizer__file_dwarf_source(rp->sym, ids[i], &from);
		fprintf(rp->out, "dwarf: file %" PRIu64 " ", ids[i]);
		out_name_put(rp->out, OUT_NAME_LINE, s.path && *s.path ? s.path : "?");
		fprintf(rp->out, ": %s%s", ustack_debug_source_name((unsigned int)src), from ? " (" : "");
		out_name_put(rp->out, OUT_NAME_LINE, from);
		fputs(from ? ")\n" : "\n", rp->out);
	}
	free(ids);
}

/* what the recorder read of each file, by hash ("content: file N PATH: sha256:...") */
static void stats_contents(struct report *rp)
{
	struct sbuf *b = &rp->line;

	fprintf(rp->out, "file contents: %zu\n", rp->ncontents);
	for (size_t i = 0; i < rp->ncontents; i++) {
		const struct ustack_trace_file_content *c = &rp->contents[i];
		struct ustack_file_map fm;
		const char *path = "?";

		if (!ustack_trace_reader__file_map(rp->r, c->file_id, &fm) && fm.path && *fm.path)
			path = fm.path;
		fprintf(rp->out, "content: file %" PRIu64 " ", c->file_id);
		out_name_put(rp->out, OUT_NAME_LINE, path);
		fputs(": ", rp->out);
		content_words(c, b);
		sb_puts(b, "\n");
		out_sb(rp, b);
	}
}

/* what one event of a count is: a sample of a sampling event, a hit of a
 * probe, else an event (a tracepoint's, a free's) */
static const char *count_word(const struct ustack_trace_event_desc *d)
{
	switch (d->type) {
	case USTACK_TRACE_EV_SAMPLE:
	case USTACK_TRACE_EV_SNAPSHOT: return "samples";
	case USTACK_TRACE_EV_PROBE: return "hits";
	default: return "events";
	}
}

/* allocations: how the frees paired with them (report_alloc.c) */
static void stats_alloc(struct report *rp)
{
	const struct report_alloc_stats *st;
	char t[32];

	if (!rp->alloc || !rp->have_alloc)
		return;
	st = report_alloc__stats(rp->alloc);
	if (st->time)
		fmt_time(t, st->time)[0] = 0;
	fprintf(rp->out, "allocations: %" PRIu64 " kept, %" PRIu64 " frees, %" PRIu64
		" live at %s%s, %" PRIu64 " without size and address\n",
		st->allocs, st->frees, st->live, st->time ? "" : "the end", st->time ? t : "",
		st->bad);
}

/* per event: "events of off-cpu: 3, weight 4000000 ns (4.000 ms)", in id order */
static void stats_weights(struct report *rp)
{
	size_t n = ustack_u64map__count(rp->ev_count), k = 0;
	uint64_t *ids = calloc(n + 1, sizeof(*ids)), id, count, w;
	char buf[48];

	if (!ids) {
		rp->oom = 1;
		return;
	}
	for (size_t it = 0; k < n && ustack_u64map__next(rp->ev_count, &it, &id, &count);)
		ids[k++] = id;
	qsort(ids, k, sizeof(*ids), cmp_u64);
	for (size_t i = 0; i < k; i++) {
		const struct report_ev *x = ev_info(rp, (uint32_t)ids[i]);
		uint32_t unit = report_unit(&x->d);

		count = w = 0;
		ustack_u64map__get(rp->ev_count, ids[i], &count);
		ustack_u64map__get(rp->ev_weight, ids[i], &w);
		fputs("events of ", rp->out);
		out_name_put(rp->out, OUT_NAME_LINE, x->d.name);
		fprintf(rp->out, ": %" PRIu64 ", weight %" PRIu64 " %s", count, w,
			unit == USTACK_TRACE_EV_UNIT_COUNT ? count_word(&x->d) : report_unit_name(unit));
		if (unit == USTACK_TRACE_EV_UNIT_NS)
			fprintf(rp->out, " (%s)", report_fmt_ns(buf, sizeof(buf), w));
		if (x->d.type == USTACK_TRACE_EV_OFFCPU && x->d.period)
			fprintf(rp->out, ", intervals under %s not recorded",
				report_fmt_ns(buf, sizeof(buf), x->d.period));
		fputc('\n', rp->out);
	}
	free(ids);
}

/* --stats: a new distinct user stack's Python frames, those of a function
 * no PYFUNC read so far names (the PYFUNC may come later: counted again at
 * the end), and the -X perf trampolines beside them */
static void stats_py_stack(struct report *rp, const struct ustack_trace_stack *st)
{
	uint32_t npy = 0;

	for (uint32_t i = 0; i < st->nr; i++)
		npy += report_py__is_py(&rp->py, &st->frames[i]);
	if (!npy)
		return;
	rp->py_stacks++;
	rp->py_frames += npy;
	if (ustack_u64map__put(rp->py_stack_ids, st->id, 1))
		rp->oom = 1;
	for (uint32_t i = 0; i < st->nr; i++)
		if (report_py__is_py(&rp->py, &st->frames[i]) &&
		    !ustack_u64map__get(rp->py_stack_ids,
					1ull << 63 | ustack_trace_py_offset_func(st->frames[i].offset),
					NULL))
			rp->py_unknown++;
}

static void stats_python(struct report *rp)
{
	FILE *o = rp->out;

	fprintf(o, "python functions: %zu\n", ustack_u64map__count(rp->py_stack_ids) - rp->py_stacks);
	fprintf(o, "python frames: %" PRIu64 " in %" PRIu64 " distinct user stacks (%" PRIu64
		   " of a function not defined before its stack)\n", rp->py_frames, rp->py_stacks,
		rp->py_unknown);
	fprintf(o, "user stacks with python frames: %" PRIu64 "\n", rp->py_events);
}

static void stats_finish(struct report *rp, uint64_t file_size, int damaged)
{
	FILE *o = rp->out;
	const struct ustack_trace_header *h = ustack_trace_reader__header(rp->r);

	/* the header's strings are the trace's: one line each whatever they hold */
	fputs("file: ", o);
	out_name_put(o, OUT_NAME_LINE, rp->in_path);
	fprintf(o, "\nbytes: %" PRIu64 "\n", file_size);
	if (h) {
		fputs("host: ", o);
		out_name_put(o, OUT_NAME_LINE, h->hostname ? h->hostname : "");
		fputs("\nkernel: ", o);
		out_name_put(o, OUT_NAME_LINE, h->release ? h->release : "");
		fputs("\ncommand: ", o);
		out_name_put(o, OUT_NAME_LINE, h->cmdline ? h->cmdline : "");
		fputc('\n', o);
	}
	fprintf(o, "chunks: %" PRIu32 "\n", rp->chunks);
	fprintf(o, "records: %" PRIu64 "\n", rp->records);
	fprintf(o, "events: %" PRIu64 "\n", rp->events);
	stats_weights(rp);
	stats_alloc(rp);
	fprintf(o, "user stacks: %" PRIu64 "\n", rp->user_stacks);
	fprintf(o, "distinct user stacks: %" PRIu64 "\n", rp->ustacks_distinct);
	fprintf(o, "user stacks by stop reason:");
	for (unsigned int i = 0; i < 9; i++)
		if (rp->stops[i])
			fprintf(o, " %s %" PRIu64, i < 8 ? ustack_stop_reason_name(i) : "other",
				rp->stops[i]);
	fprintf(o, "\n");
	fprintf(o, "distinct kernel stacks: %" PRIu64 "\n", rp->kstacks_distinct);
	fprintf(o, "distinct stacks: %" PRIu64 "\n", rp->ustacks_distinct + rp->kstacks_distinct);
	fprintf(o, "file ids: %zu\n", ustack_u64map__count(rp->file_ids));
	if (rp->archive_note) {
		fputs("archive: ", o);
		out_name_put(o, OUT_NAME_LINE, rp->archive_note);
		fputc('\n', o);
	}
	stats_symbol_sources(rp);
	stats_contents(rp);
	fprintf(o, "jit symbols: %" PRIu64 "\n", rp->jitsyms);
	stats_python(rp);
	fprintf(o, "lost records: %" PRIu64 " (in %" PRIu64 " LOST records)\n", rp->lost,
		rp->lost_records);
	fprintf(o, "events with user stack: %" PRIu64 "\n", rp->stitched[USTACK_TRACE_STITCH_OK]);
	fprintf(o, "events without user stack: %" PRIu64 " (not requested %" PRIu64
		   ", cookie mismatch %" PRIu64 ", after loss %" PRIu64 ", trace end %" PRIu64 ")\n",
		rp->events - rp->stitched[USTACK_TRACE_STITCH_OK],
		rp->stitched[USTACK_TRACE_STITCH_NO_COOKIE], rp->stitched[USTACK_TRACE_STITCH_MISMATCH],
		rp->stitched[USTACK_TRACE_STITCH_LOST], rp->stitched[USTACK_TRACE_STITCH_END]);
	if (rp->events) {
		fprintf(o, "bytes per event: %.1f (whole file / events)\n",
			(double)file_size / (double)rp->events);
		fprintf(o, "event record bytes per event: %.1f\n",
			(double)rp->event_bytes / (double)rp->events);
		fprintf(o, "user stack record bytes per event: %.1f\n",
			(double)rp->user_stack_bytes / (double)rp->events);
		fprintf(o, "definition bytes per event: %.1f\n",
			(double)rp->def_bytes / (double)rp->events);
	}
	if (rp->last_time >= rp->first_time && rp->events)
		fprintf(o, "duration: %.6f s\n", (double)(rp->last_time - rp->first_time) / 1e9);
	if (rp->have_end)
		fprintf(o, "end record: %s\n",
			rp->end.events == rp->events && rp->end.user_stacks == rp->user_stacks &&
			rp->end.lost == rp->lost ? "consistent" : "DIFFERS");
	else
		fprintf(o, "end record: %s\n", damaged ? "missing (damaged file)" : "missing");
}

/* ---- main loop -------------------------------------------------------------------------------- */

static void note_time(struct report *rp, uint64_t t)
{
	if (!rp->first_time || t < rp->first_time)
		rp->first_time = t;
	if (t > rp->last_time)
		rp->last_time = t;
}

/* an EVENT_DESC id, once (the trace repeats them per chunk) */
static void note_desc(struct report *rp, uint32_t id)
{
	int isnew;

	if (!ustack_u64map__slot(rp->desc_seen, id, &isnew)) {
		rp->oom = 1;
		return;
	}
	if (!isnew)
		return;
	if (cli_grow((void **)&rp->desc_ids, &rp->desc_ids_bytes,
		     (rp->ndesc_ids + 1) * sizeof(*rp->desc_ids))) {
		rp->oom = 1;
		return;
	}
	rp->desc_ids[rp->ndesc_ids++] = id;
}

static void stats_event(struct report *rp, const struct ustack_trace_event *e)
{
	uint64_t *c = ustack_u64map__slot(rp->ev_count, e->event_id, NULL);
	uint64_t *w = ustack_u64map__slot(rp->ev_weight, e->event_id, NULL);

	if (!c || !w) {
		rp->oom = 1;
		return;
	}
	(*c)++;
	*w += e->value;
}

static void handle_record(struct report *rp, const struct ustack_trace_record *rec)
{
	int isnew;
	uint64_t *v;

	rp->records++;
	if (rec->chunk + 1 > rp->chunks)
		rp->chunks = rec->chunk + 1;
	switch (rec->type) {
	case USTACK_TRACE_THREAD:
		set_comm(rp, rec->thread.tid, rec->thread.comm);
		break;
	case USTACK_TRACE_FILE_MAP:
		rp->def_bytes += rec->size;
		rp->file_maps++;
		/* a Python file id's frames are named from PYFUNCs, never from
		 * a file the symbolizer would look for under its path */
		if (!ustack_u64map__slot(rp->file_ids, rec->file_map.file_id, NULL) ||
		    (rp->sym && rec->file_map.kind != USTACK_TRACE_FILE_KIND_PYTHON &&
		     ustack_symbolizer__add_file(rp->sym, &rec->file_map) == -ENOMEM))
			rp->oom = 1;
		break;
	case USTACK_TRACE_FILE_CONTENT:
		rp->def_bytes += rec->size;
		report_lookup__content(&rp->lk, rp->sym, &rec->file_content);
		file_content(rp, &rec->file_content);
		break;
	case USTACK_TRACE_STACK:
		rp->def_bytes += rec->size;
		v = ustack_u64map__slot(rp->stack_refs, stack_key(rec->stack.kind, rec->stack.id), &isnew);
		if (!v)
			rp->oom = 1;
		else if (isnew)
			rec->stack.kind == USTACK_TRACE_KSTACK ? rp->kstacks_distinct++
							       : rp->ustacks_distinct++;
		if (v && isnew && rp->want_stats && rec->stack.kind == USTACK_TRACE_USTACK)
			stats_py_stack(rp, &rec->stack);
		break;
	case USTACK_TRACE_PYFUNC:
		rp->def_bytes += rec->size;
		if (rp->want_stats && ustack_u64map__put(rp->py_stack_ids, 1ull << 63 | rec->pyfunc.id, 1))
			rp->oom = 1;
		break;
	case USTACK_TRACE_JITSYM:
		rp->jitsyms++;
		/* fall through */
	case USTACK_TRACE_KSYM:
		rp->def_bytes += rec->size;
		break;
	case USTACK_TRACE_EVENT_DESC:
		rp->def_bytes += rec->size;
		note_desc(rp, rec->event_desc.id);
		break;
	case USTACK_TRACE_EVENT:
		if (rp->nev_sel && !rp->sel_checked)
			check_selection(rp);
		if (rp->want_stats)
			stats_event(rp, &rec->event);
		rp->events++;
		rp->event_bytes += rec->size;
		note_time(rp, rec->event.time);
		if (rec->event.kstack_id != USTACK_TRACE_NO_STACK &&
		    (v = ustack_u64map__slot(rp->stack_refs,
					      stack_key(USTACK_TRACE_KSTACK, rec->event.kstack_id), NULL)))
			(*v)++;
		if (rp->fmt == FMT_RAW && !rp->want_stats)
			raw_event(rp, &rec->event);
		break;
	case USTACK_TRACE_USER_STACK:
		rp->user_stacks++;
		rp->stops[rec->user_stack.stop_reason < 8 ? rec->user_stack.stop_reason : 8]++;
		rp->user_stack_bytes += rec->size;
		note_time(rp, rec->user_stack.time);
		if (rp->want_stats && rec->user_stack.stack_id != USTACK_TRACE_NO_STACK &&
		    ustack_u64map__get(rp->py_stack_ids, rec->user_stack.stack_id, NULL))
			rp->py_events++;
		if (rec->user_stack.stack_id != USTACK_TRACE_NO_STACK &&
		    (v = ustack_u64map__slot(rp->stack_refs,
					      stack_key(USTACK_TRACE_USTACK, rec->user_stack.stack_id),
					      NULL)))
			(*v)++;
		if (rp->fmt == FMT_RAW && !rp->want_stats)
			raw_user_stack(rp, &rec->user_stack);
		break;
	case USTACK_TRACE_LOST:
		rp->lost += rec->lost.count;
		rp->lost_records++;
		if (rp->pprof)
			report_pprof__lost(rp->pprof, rec->lost.count);
		if (rp->fmt == FMT_RAW && !rp->want_stats)
			raw_lost(rp, &rec->lost);
		break;
	case USTACK_TRACE_END:
		rp->have_end = 1;
		rp->end = rec->end;
		break;
	default:
		break;
	}
	if (ustack_trace_stitcher__push(rp->st, rec))
		rp->oom = 1;
	if (!rp->want_stats)
		drain(rp);
	else {
		struct ustack_trace_stitched s;

		while (ustack_trace_stitcher__pop(rp->st, &s) == 1)
			if (s.result < 5)
				rp->stitched[s.result]++;
	}
}

/* the reader's messages start with "offset N: ", which the CLI states itself */
static const char *strip_offset(const char *msg)
{
	const char *p = msg;

	if (strncmp(p, "offset ", 7))
		return msg;
	p += 7;
	while (*p >= '0' && *p <= '9')
		p++;
	return p[0] == ':' && p[1] == ' ' ? p + 2 : msg;
}

/* The progress line on stderr (docs/cli/report.md): after a second of
 * reading, or from the start with --progress; at most 4 per second. */
struct progress {
	int mode;          /* 0: off, 1: after a second, 2: --progress */
	int shown;
	uint64_t t0, last; /* ns */
};

static void progress_line(struct progress *p, uint64_t off, uint64_t size, uint64_t events,
			  int last)
{
	uint64_t now = ustack_mono_ns();

	if (!p->mode || (!last && now - p->last < 250000000ull) ||
	    (p->mode == 1 && now - p->t0 < 1000000000ull) || (last && !p->shown && p->mode == 1))
		return;
	p->last = now;
	p->shown = 1;
	fprintf(stderr, "\rustack: report: %3u%% of %.1f MB read, %" PRIu64 " events%s",
		size ? (unsigned int)(off >= size ? 100 : off * 100 / size) : 100, size / 1e6,
		events, last ? "\n" : "   ");
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ustack report [[-i] FILE] [--format FORMAT] [-o OUT] [options]\n"
		"\n"
		"Print a trace written by 'ustack record' (default input ustack.data).\n"
		"\n"
		"  -i, --input FILE     trace to read (also: FILE alone)\n"
		"      --progress       a progress line on stderr from the start (default: after\n"
		"                       a second, when stderr is a terminal and the output is not)\n"
		"  -q, --quiet          no progress line (even with --progress)\n"
		"  -o, --output OUT     write to OUT instead of standard output\n"
		"  -f, --format FORMAT  text (default): events with symbolized stacks\n"
		"                       raw: the records as seed-style lines (file offsets, file ids)\n"
		"                       folded: one line per distinct stack and its count (flamegraph.pl)\n"
		"                       stackmap: the trace's user stacks in the stackmap text form\n"
		"                       stackmap-bin: the same in the 'FSMB' v2 binary form\n"
		"                       speedscope: speedscope's JSON file (one profile per thread)\n"
		"                       perf-script: 'perf script' text (stackcollapse-perf.pl,\n"
		"                       Firefox Profiler)\n"
		"                       pprof: gzipped profile.proto (go tool pprof, Pyroscope,\n"
		"                       Parca); needs -o or a pipe, never a terminal\n"
		"      --event NAME[,NAME]  only these events (repeatable; names as --stats\n"
		"                       lists them: cpu-clock, off-cpu, syscalls:sys_enter_futex)\n"
		"      --view VIEW      allocations (record --alloc): alloc_space, alloc_objects,\n"
		"                       inuse_space (default), inuse_objects (pprof's names)\n"
		"      --at TIME        inuse views: live at TIME, SECONDS since the trace's\n"
		"                       first event or @SECS.USECS as event lines print it\n"
		"                       (default: the end of the trace)\n"
		"      --wall           the wall-clock view, each thread's time on\n"
		"                       CPU (cpu-clock/task-clock samples) and off (off-CPU\n"
		"                       intervals) in ns, the thread (NAME-TID) as root frame\n"
		"      --kernel         stackmap formats: export the kernel stacks instead\n"
		"      --stats          print counts and sizes instead of the events\n"
		"      --no-demangle    leave C++ names mangled\n"
		"      --no-lines       text: no source lines and no inlined frames (no DWARF read)\n"
		"      --inline         folded: inlined functions as frames of their own\n"
		"      --srcline        folded: 'func file.c:LINE' frames (source file base name)\n"
		"      --annotate       folded: inlined frames end in '_[i]' (FlameGraph's mark)\n"
		"      --python-only    of a stack that holds Python frames, those alone (a\n"
		"                       stack without any shows its native frames)\n"
		"      --debug-dir DIR  separate debug files (default /usr/lib/debug)\n"
		"      --archive FILE   the trace's archive ('ustack archive'; default: FILE.archive\n"
		"                       beside the trace, when there is one)\n"
		"%s"
		"  -h, --help           this text\n"
		"\n"
		"Weights: folded numbers are each stack's events summed in their unit:\n"
		"samples, or ns for off-CPU time (flamegraph.pl --countname=ns). Events of\n"
		"two units are never added: folded refuses such a trace without --event or\n"
		"--wall. Text shows an off-CPU interval's duration on its event line.\n"
		"\n"
		"Frames in JIT code are named from the perf maps (/tmp/perf-PID.map) the\n"
		"recorder copied into the trace, marked [jit] (folded: NAME_[j]).\n"
		"\n"
		"Python frames (CPython 3.11-3.15, recorded with their functions) show\n"
		"above the interpreter frame that runs them: ' => py  QUALNAME (FILE:LINE)'\n"
		"(folded: 'py::QUALNAME (BASE:LINE)'); in a stack that holds them, the\n"
		"'py::' trampolines of python -X perf are dropped (the same functions).\n"
		"\n"
		"A damaged file is printed up to the damage, then an error naming the byte\n"
		"offset is printed and the exit status is 1.\n", report_lookup_usage);
}

static int viewer_fmt(enum report_format f)
{
	return f == FMT_SPEEDSCOPE || f == FMT_PERFSCRIPT;
}

static int parse_format(const char *s, enum report_format *fmt)
{
	static const struct { const char *name; enum report_format f; } names[] = {
		{ "text", FMT_TEXT }, { "raw", FMT_RAW }, { "folded", FMT_FOLDED },
		{ "stackmap", FMT_STACKMAP }, { "stackmap-bin", FMT_STACKMAP_BIN },
		{ "speedscope", FMT_SPEEDSCOPE }, { "perf-script", FMT_PERFSCRIPT },
		{ "pprof", FMT_PPROF },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i].name)) {
			*fmt = names[i].f;
			return 0;
		}
	return -EINVAL;
}

/* value of option argv[*i] ("--opt VALUE" or "--opt=VALUE") */
static const char *opt_value(int argc, char **argv, int *i, const char *longname,
			     const char *shortname)
{
	const char *a = argv[*i];
	size_t l = strlen(longname);

	if (!strncmp(a, longname, l) && a[l] == '=')
		return a + l + 1;
	if (strcmp(a, longname) && (!shortname || strcmp(a, shortname)))
		return NULL;
	if (*i + 1 >= argc) {
		cli_error("report: %s needs a value", a);
		return "";
	}
	return argv[++*i];
}

/* --event NAME[,NAME]: more names to keep; -1 after saying what is wrong */
static int add_event_names(struct report *rp, const char *list)
{
	size_t bytes = rp->nev_sel * sizeof(*rp->ev_sel);

	for (const char *p = list;; p++) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);

		if (!len) {
			cli_error("report: --event '%s': an empty event name", list);
			return -1;
		}
		if (cli_grow((void **)&rp->ev_sel, &bytes, (rp->nev_sel + 1) * sizeof(*rp->ev_sel)) ||
		    !(rp->ev_sel[rp->nev_sel] = strndup(p, len))) {
			cli_error("report: %s", strerror(ENOMEM));
			return -1;
		}
		rp->nev_sel++;
		if (!c)
			return 0;
		p = c;
	}
}

/* --event and --wall choose and weigh events for the outputs of events:
 * the others print records (raw), stacks (stackmap) or the file (--stats) */
static int check_weight_opts(const struct report *rp)
{
	if (!rp->wall && !rp->nev_sel)
		return 0;
	if (rp->want_stats || rp->fmt == FMT_RAW || rp->fmt == FMT_STACKMAP ||
	    rp->fmt == FMT_STACKMAP_BIN) {
		cli_error("report: %s applies to %s, not to %s",
			  rp->wall ? "--wall" : "--event",
			  "text, folded, pprof, speedscope and perf-script",
			  rp->want_stats ? "--stats" : rp->fmt == FMT_RAW ? "raw" : "the stack maps");
		return -1;
	}
	return 0;
}

/* --view and --at choose allocations for the outputs of events; --at
 * also says when --stats counts them live */
static int check_view_opts(const struct report *rp)
{
	const char *what = rp->view ? "--view" : "--at";

	if (!rp->view && !rp->at.set)
		return 0;
	if (rp->fmt == FMT_RAW || rp->fmt == FMT_STACKMAP || rp->fmt == FMT_STACKMAP_BIN ||
	    (rp->want_stats && rp->view)) {
		cli_error("report: %s applies to %s, not to %s", what,
			  "text, folded, pprof, speedscope and perf-script",
			  rp->want_stats ? "--stats" : rp->fmt == FMT_RAW ? "raw" : "the stack maps");
		return -1;
	}
	if (rp->at.set && rp->view && !report_view_inuse(rp->view)) {
		cli_error("report: --at applies to the inuse views, not to %s",
			  report_view_name(rp->view));
		return -1;
	}
	if (rp->wall) {
		cli_error("report: %s and --wall: allocations have no wall-clock time", what);
		return -1;
	}
	return 0;
}

/* Pair the trace's allocations and frees (a pass of their own: a free may
 * come before its allocation in the file). 0, or the exit status after
 * saying why. */
static int alloc_scan(struct report *rp)
{
	int ret;

	if (!(rp->alloc = report_alloc__new())) {
		cli_error("report: %s", strerror(ENOMEM));
		return 1;
	}
	ret = report_alloc__scan(rp->alloc, rp->in_path, &rp->at);
	if (ret < 0) {
		cli_error("%s: %s", rp->in_path, strerror(-ret));
		return 1;
	}
	rp->have_alloc = ret;
	if (!ret && (rp->view || rp->at.set)) {
		cli_error("report: %s: %s: the trace has no allocation events (record --alloc)",
			  rp->in_path, rp->view ? "--view" : "--at");
		return 2;
	}
	rp->objects = ret && report_view_objects(rp->view);
	return 0;
}

/* --wall: the events left out, on one line ("2 events without a time
 * meaning left out: syscalls:sys_enter_futex 2") */
static void wall_note(struct report *rp)
{
	uint64_t n = rp->ev_other.wall_left;

	for (int i = 0; i < 256; i++)
		n += rp->evs[i].wall_left;
	if (!n)
		return;
	fprintf(stderr, "ustack: report: --wall: %" PRIu64 " event%s without a time meaning left out:",
		n, n == 1 ? "" : "s");
	for (int i = 0; i < 257; i++) {
		const struct report_ev *x = i < 256 ? &rp->evs[i] : &rp->ev_other;

		if (!x->wall_left)
			continue;
		fputc(' ', stderr);
		out_name_put(stderr, OUT_NAME_LINE, i < 256 ? x->d.name : "other");
		fprintf(stderr, " %" PRIu64, x->wall_left);
	}
	fputc('\n', stderr);
}

int cmd_report(int argc, char **argv)
{
	return report_run(argc, argv, NULL);
}

int report_run(int argc, char **argv, struct report_result *res)
{
	struct report rp = { .in_path = "ustack.data", .fmt = FMT_TEXT };
	struct ustack_symbolizer_opts so = { .sz = sizeof(so) };
	/* every type this CLI knows, FILE_CONTENT included */
	struct ustack_trace_reader_opts ro = { .sz = sizeof(ro),
					       .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_trace_record rec;
	const char *out_path = NULL, *v;
	uint64_t file_size = 0;
	struct stat sb;
	int ret, wret, status = 0, no_demangle = 0, have_input = 0, progress_opt = 0, k;
	struct progress pg = { 0 };
	struct report_dirs dirs;
	const char *archive = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (cli_is_help(a)) {
			usage(stdout);
			return 0;
		} else if ((v = opt_value(argc, argv, &i, "--input", "-i")) ||
			   (a[0] != '-' && (v = a))) {
			/* -i FILE, or FILE alone (as perf report does not, but
			 * most tools that read one file do) */
			if (!*v)
				return 2;
			if (have_input++) {
				cli_error("report: one trace at a time ('%s' and '%s')", rp.in_path, v);
				return 2;
			}
			rp.in_path = v;
		} else if ((v = opt_value(argc, argv, &i, "--output", "-o"))) {
			if (!*v)
				return 2;
			out_path = v;
		} else if ((v = opt_value(argc, argv, &i, "--format", "-f"))) {
			if (!*v)
				return 2;
			if (parse_format(v, &rp.fmt)) {
				cli_error("report: unknown format '%s' (text, raw, folded, stackmap, "
					  "stackmap-bin, pprof, speedscope, perf-script)", v);
				return 2;
			}
		} else if ((v = opt_value(argc, argv, &i, "--debug-dir", NULL))) {
			if (!*v)
				return 2;
			so.debug_dir = v;
		} else if ((v = opt_value(argc, argv, &i, "--archive", NULL))) {
			if (!*v)
				return 2;
			archive = v;
		} else if ((v = opt_value(argc, argv, &i, "--event", NULL))) {
			if (argv[i] == a && !strcmp(a, "--event"))
				return 2; /* no value: opt_value() said so */
			if (add_event_names(&rp, v)) {
				status = 2;
				goto out;
			}
		} else if ((v = opt_value(argc, argv, &i, "--view", NULL))) {
			if (!*v)
				return 2;
			if (report_view_parse(v, &rp.view)) {
				cli_error("report: --view '%s': not a view (alloc_space, alloc_objects, "
					  "inuse_space, inuse_objects)", v);
				return 2;
			}
		} else if ((v = opt_value(argc, argv, &i, "--at", NULL))) {
			if (!*v)
				return 2;
			if (report_at_parse(v, &rp.at)) {
				cli_error("report: --at '%s': not a time (SECONDS since the trace's first "
					  "event, or @SECS.USECS as event lines print it)", v);
				return 2;
			}
		} else if (!strcmp(a, "--wall")) {
			rp.wall = 1;
		} else if (!strcmp(a, "--stats")) {
			rp.want_stats = 1;
		} else if (!strcmp(a, "--progress")) {
			if (progress_opt >= 0)
				progress_opt = 2;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			progress_opt = -1; /* over --progress, wherever it is */
		} else if (!strcmp(a, "--kernel")) {
			rp.kernel_map = 1;
		} else if (!strcmp(a, "--no-demangle")) {
			so.flags |= USTACK_SYMBOLIZER_NO_DEMANGLE;
			no_demangle = 1;
		} else if (!strcmp(a, "--no-lines")) {
			so.flags |= USTACK_SYMBOLIZER_NO_LINES;
		} else if (!strcmp(a, "--inline")) {
			rp.inline_frames = 1;
		} else if (!strcmp(a, "--srcline")) {
			rp.srcline = 1;
		} else if (!strcmp(a, "--annotate")) {
			rp.annotate = 1;
		} else if (!strcmp(a, "--python-only")) {
			rp.py.python_only = 1;
		} else if ((k = report_lookup__option(&rp.lk, "report", argc, argv, &i))) {
			if (k < 0)
				return 2;
		} else {
			cli_error("report: unknown argument '%s' (see 'ustack report --help')", a);
			return 2;
		}
	}

	/* the formats that name no frame have no Python frames to keep */
	if (rp.py.python_only && (rp.want_stats || rp.fmt == FMT_RAW || rp.fmt == FMT_STACKMAP ||
				  rp.fmt == FMT_STACKMAP_BIN)) {
		cli_error("report: --python-only is for the formats that name frames (text, folded, "
			  "speedscope, perf-script, pprof), not %s",
			  rp.want_stats ? "--stats" : rp.fmt == FMT_RAW ? "raw" : "the stack maps");
		status = 2;
		goto out;
	}
	if (check_weight_opts(&rp) || check_view_opts(&rp)) {
		status = 2;
		goto out;
	}
	if (report_dirs__build(&dirs, rp.in_path, archive)) {
		status = 1;
		goto out;
	}
	/* the extracted archive goes first in report_lookup's list */
	rp.lk.archive_dir = dirs.archive_dir[0] ? dirs.archive_dir : NULL;
	if (dirs.note[0])
		rp.archive_note = dirs.note;
	rp.r = ustack_trace_reader__open(rp.in_path, &ro);
	if (!rp.r) {
		cli_error("%s: %s", rp.in_path, strerror(errno));
		status = 1;
		goto out;
	}
	if (!stat(rp.in_path, &sb))
		file_size = (uint64_t)sb.st_size;
	if (rp.fmt != FMT_RAW && (status = alloc_scan(&rp)))
		goto out;
	rp.st = ustack_trace_stitcher__new();
	/* plain folded stacks need names only: no DWARF is read for them */
	if (rp.fmt == FMT_FOLDED && !rp.inline_frames && !rp.srcline)
		so.flags |= USTACK_SYMBOLIZER_NO_LINES;
	/* pprof keeps the raw name as system_name and demangles it itself */
	if (rp.fmt == FMT_PPROF)
		so.flags |= USTACK_SYMBOLIZER_NO_DEMANGLE;
	if (rp.fmt == FMT_PPROF && !rp.want_stats && !out_path && isatty(STDOUT_FILENO)) {
		cli_error("report: --format pprof writes a gzipped binary profile: give -o FILE.pb.gz "
			  "or a pipe, not a terminal");
		status = 2;
		goto out;
	}
	/* --stats also says where each file's symbols would come from */
	if ((rp.fmt == FMT_TEXT || rp.fmt == FMT_FOLDED || rp.fmt == FMT_PPROF) || rp.want_stats ||
	    viewer_fmt(rp.fmt)) {
		if (report_lookup__apply(&rp.lk, &so, rp.in_path)) {
			status = 1;
			goto out;
		}
		/* a --buildid-dir or --symfs that cannot be opened is named by
		 * the library's warning */
		if (!(rp.sym = ustack_symbolizer__new(&so)) && errno != ENOMEM) {
			cli_error("report: %s", strerror(errno));
			status = 1;
			goto out;
		}
		if (rp.sym && report_lookup__load(&rp.lk, rp.sym, rp.in_path))
			rp.oom = 1;
	}
	rp.comm_idx = ustack_u64map__new();
	/* the idle tasks (pid 0, one per CPU) have no COMM record: perf's
	 * name for them, until the trace gives one */
	if (rp.comm_idx)
		set_comm(&rp, 0, "swapper");
	rp.rendered_idx = ustack_u64map__new();
	rp.files_printed = ustack_u64map__new();
	rp.folded_pair_idx = ustack_u64map__new();
	rp.folded = ustack_u64map__new();
	rp.stack_refs = ustack_u64map__new();
	rp.file_ids = ustack_u64map__new();
	rp.uview_idx = ustack_u64map__new();
	rp.wthread_idx = ustack_u64map__new();
	rp.ev_count = ustack_u64map__new();
	rp.ev_weight = ustack_u64map__new();
	rp.desc_seen = ustack_u64map__new();
	if (!rp.wthread_idx || !rp.ev_count || !rp.ev_weight || !rp.desc_seen)
		rp.oom = 1;
	if ((rp.fmt == FMT_TEXT || rp.fmt == FMT_FOLDED || rp.fmt == FMT_PPROF || viewer_fmt(rp.fmt)) &&
	    !rp.want_stats &&
	    rp.sym) {
		long nj;

		rp.jit = ustack_jitsyms__new();
		nj = rp.jit ? ustack_jitsyms__load_trace(rp.jit, rp.in_path) : -ENOMEM;
		if (nj == -ENOMEM)
			rp.oom = 1;
		if (report_py__load(&rp.py, rp.in_path) == -ENOMEM)
			rp.oom = 1;
	}
	rp.py.r = rp.r;
	rp.py.jit = rp.jit;
	if (!(rp.py_stack_ids = ustack_u64map__new()))
		rp.oom = 1;
	if (rp.fmt == FMT_PPROF && !rp.want_stats && rp.sym) {
		struct report_pprof_opts po = {
			.r = rp.r, .sym = rp.sym, .jit = rp.jit, .py = &rp.py, .in_path = rp.in_path,
			.demangle = !no_demangle,
			.lines = !(so.flags & USTACK_SYMBOLIZER_NO_LINES), .wall = rp.wall,
			.alloc = rp.alloc,
			.alloc_default = rp.view ? report_view_name(rp.view) : NULL,
		};

		if (!(rp.pprof = report_pprof__new(&po)))
			rp.oom = 1;
	}
	if (!rp.st || !rp.uview_idx || rp.oom ||
	    ((rp.fmt == FMT_TEXT || rp.fmt == FMT_FOLDED || rp.want_stats || viewer_fmt(rp.fmt)) &&
	     !rp.sym) ||
	    !rp.comm_idx || !rp.rendered_idx || !rp.files_printed || !rp.folded_pair_idx ||
	    !rp.folded || !rp.stack_refs || !rp.file_ids) {
		cli_error("report: %s", strerror(ENOMEM));
		status = 1;
		goto out;
	}
	if (out_path) {
		rp.out = fopen(out_path, rp.fmt == FMT_STACKMAP_BIN || rp.fmt == FMT_PPROF ? "wb" : "w");
		if (!rp.out) {
			cli_error("%s: %s", out_path, strerror(errno));
			status = 1;
			goto out;
		}
	} else {
		rp.out = stdout;
	}
	cli_output_buffer(rp.out);
	if (viewer_fmt(rp.fmt) && !rp.want_stats &&
	    !(rp.viewer = cli_report_viewer__new(rp.fmt == FMT_SPEEDSCOPE ? CLI_VIEWER_SPEEDSCOPE
									: CLI_VIEWER_PERFSCRIPT,
						 rp.r, rp.sym, rp.jit, base_name(rp.in_path), rp.out))) {
		cli_error("report: %s", strerror(ENOMEM));
		status = 1;
		goto out;
	}
	if (rp.viewer) {
		cli_report_viewer__set_wall(rp.viewer, rp.wall);
		cli_report_viewer__set_python(rp.viewer, &rp.py);
	}

	/* a progress line only where it does not mix with the output */
	pg.mode = progress_opt == 2 ? 2
		: progress_opt == 0 && isatty(STDERR_FILENO) &&
				  (out_path || !isatty(STDOUT_FILENO)) ? 1 : 0;
	pg.t0 = pg.last = pg.mode ? ustack_mono_ns() : 0;
	if (pg.mode == 2)
		pg.last -= 1000000000ull; /* the first line at the first check */
	while (!rp.refused && (ret = ustack_trace_reader__next(rp.r, &rec, sizeof(rec))) == 1 &&
	       !rp.oom) {
		handle_record(&rp, &rec);
		if (pg.mode && !(rp.records & 4095))
			progress_line(&pg, rec.offset, file_size, rp.events, 0);
	}
	/* read to the end, or to a damage (said below) */
	if (pg.mode)
		progress_line(&pg, ret == 0 ? file_size : ustack_trace_reader__error_offset(rp.r),
			      file_size, rp.events, 1);
	/* at the end or at the damage: events still waiting get no stack */
	ustack_trace_stitcher__push(rp.st, NULL);
	if (rp.want_stats) {
		struct ustack_trace_stitched s;

		while (ustack_trace_stitcher__pop(rp.st, &s) == 1)
			if (s.result < 5)
				rp.stitched[s.result]++;
	} else {
		drain(&rp);
	}
	out_sb(&rp, &rp.line); /* before anything else writes to rp.out */
	report_lookup__finish(&rp.lk);
	if (rp.nev_sel && !rp.refused)
		check_selection(&rp); /* a trace without events */
	if (rp.refused) {
		status = 2;
		goto out;
	}
	wall_note(&rp);

	if (rp.want_stats)
		stats_finish(&rp, file_size, ret < 0);
	else if (rp.fmt == FMT_FOLDED)
		folded_finish(&rp);
	else if (rp.viewer && !rp.oom && cli_report_viewer__finish(rp.viewer) == -ENOMEM)
		rp.oom = 1; /* -EIO: the ferror() check below names the file */
	else if (rp.fmt == FMT_STACKMAP || rp.fmt == FMT_STACKMAP_BIN)
		if (stackmap_finish(&rp))
			rp.oom = 1;
	/* the profile of every event read, also before a damage (reported below) */
	if (rp.pprof && !rp.oom && (wret = report_pprof__write(rp.pprof, rp.out, comm_name_cb, &rp)) < 0) {
		if (wret == -ENOMEM)
			rp.oom = 1;
		else
			cli_error("%s: cannot write the profile: %s", out_path ? out_path : "standard output",
				  strerror(-wret));
		status = 1;
	}
	fflush(rp.out);

	if (rp.oom) {
		cli_error("report: %s: out of memory", rp.in_path);
		status = 1;
	} else if (ret < 0) {
		uint64_t off = ustack_trace_reader__error_offset(rp.r);
		const char *msg = ustack_trace_reader__error(rp.r);

		if (ret == -EBADMSG && !rp.records && off < 32)
			cli_error("%s: not a ustack trace file (%s)", rp.in_path, msg);
		else if (ret == -EBADMSG)
			cli_error("%s: damaged at offset %" PRIu64 ": %s (everything before it was "
				  "printed)", rp.in_path, off, strip_offset(msg));
		else
			cli_error("%s: %s%s%s", rp.in_path, strerror(-ret), *msg ? ": " : "", msg);
		status = 1;
	}
	if (fflush(rp.out) || ferror(rp.out)) {
		cli_error("%s: write error", out_path ? out_path : "standard output");
		status = 1;
	}
	if (res) {
		res->unit = rp.wall ? USTACK_TRACE_EV_UNIT_NS : rp.out_unit;
		res->view = rp.have_alloc ? report_view_name(rp.view) : NULL;
	}
out:
	if (rp.out && rp.out != stdout)
		fclose(rp.out);
	for (size_t i = 0; i < rp.nev_sel; i++)
		free(rp.ev_sel[i]);
	free(rp.ev_sel);
	free(rp.desc_ids);
	ustack_u64map__free(rp.desc_seen);
	free(rp.wthreads);
	ustack_u64map__free(rp.wthread_idx);
	ustack_u64map__free(rp.ev_count);
	ustack_u64map__free(rp.ev_weight);
	for (size_t i = 0; i < rp.nrend; i++)
		free(rp.rend[i].text);
	free(rp.rend);
	free(rp.comms);
	ustack_u64map__free(rp.comm_idx);
	ustack_u64map__free(rp.rendered_idx);
	ustack_u64map__free(rp.files_printed);
	ustack_u64map__free(rp.folded_pair_idx);
	ustack_u64map__free(rp.folded);
	ustack_u64map__free(rp.stack_refs);
	ustack_u64map__free(rp.file_ids);
	free(rp.contents);
	ustack_u64map__free(rp.uview_idx);
	free(rp.uviews);
	cli_report_viewer__free(rp.viewer);
	report_pprof__free(rp.pprof);
	ustack_jitsyms__free(rp.jit);
	report_py__close(&rp.py);
	ustack_u64map__free(rp.py_stack_ids);
	free(rp.py_keep);
	free(rp.line.p);
	/* the symbolizer is left to the exit, but what it read is kept */
	ustack_symbolizer__save_line_caches(rp.sym);
#ifdef REPORT_FREE_SYMBOLIZER
	ustack_symbolizer__free(rp.sym);
#endif
	ustack_trace_stitcher__free(rp.st);
	ustack_trace_reader__close(rp.r);
	report_alloc__free(rp.alloc);
	return status;
}
