// SPDX-License-Identifier: MIT
/*
 * ustack report --format pprof: the stitched events of a trace as one
 * profile (docs/cli/report.md, "pprof").
 *
 * Events are counted per (kernel stack, user stack, JIT map, thread,
 * process, the thread's name at the event, as `folded` names threads) and
 * event id while the trace is read; the profile is built at the end, so
 * each sample is one such combination with one value per sample type.
 * Events whose unit is not a count (off-CPU intervals in ns, trace format
 * 1.3) also sum their weights; with --wall each row sums its events'
 * wall-clock ns (report_wall_ns(), as folded --wall weighs them).
 *
 * Addresses. The trace keeps user frames as (file id, file offset), not as
 * the addresses they had in some process. Each file id gets a mapping of its
 * own at a synthetic, non-canonical base (1 << 47 + n << 40, never a user or
 * kernel address on x86-64) with file_offset 0, so address - memory_start is
 * the frame's file offset: what a consumer needs to symbolize again by build
 * ID. Kernel frames keep their ips, in a [kernel.kallsyms] mapping starting
 * at the bottom of the kernel half. Frames in anonymous memory (JIT code)
 * keep their absolute pc and have no mapping.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/hashmap.h>
#include "cli/cli.h"
#include "cli/out_pprof.h"
#include "cli/report_alloc.h"
#include "cli/report_weight.h"
#include "cli/report_python.h"

#define MAX_CHAIN 64
#define SYNTH_BASE (1ull << 47)
#define SYNTH_SHIFT 40
#define SYNTH_MAX_FILES (1u << 22) /* keeps every base below the kernel half */
#define KERNEL_BASE 0xffff800000000000ull

/* location keys (k1): file ids are < 2^56 (ustack_trace_pack_frame) */
#define LOC_KERNEL (1ull << 63)
#define LOC_JIT (1ull << 62)  /* | JIT map index */
#define LOC_ANON (1ull << 61)

struct row_key {
	uint32_t kid, uid, jit, tid, pid;
	uint32_t comm; /* the thread's name at the event (the caller's key) */
};

struct report_pprof {
	struct report_pprof_opts o;
	struct pprof *pp;
	uint8_t *keep; /* report_py__select()'s, one stack */
	size_t keep_cap;
	/* rows: distinct row_key, numbered; counts by row << 32 | event id */
	struct row_key *rows;
	size_t nrows, rows_cap;
	struct ustack_u64map *row_idx;   /* hash of row_key (probed) -> row + 1 */
	struct ustack_u64map *counts;
	struct ustack_u64map *weights;   /* as counts: the sum of the values (units but count) */
	struct ustack_u64map *walls;     /* --wall: row -> wall-clock ns */
	/* allocation events, as weights: row << 32 | id -> alloc_objects and
	 * inuse_objects (doubles' bits: rounded per sample at the end),
	 * inuse_space (alloc_space is weights) */
	struct ustack_u64map *aobj, *iobj, *ispace;
	struct { int known, ok; struct ustack_trace_event_desc d; } desc[256];
	struct ustack_trace_event_desc desc_other; /* ids from 256 up: read each time */
	struct ustack_u64map *event_ids; /* event ids seen */
	struct ustack_u64map *file_idx;  /* file id -> synthetic base number */
	struct ustack_u64map *demangled; /* name pointer -> malloc'd name */
	uint64_t first_time, last_time, events, lost, no_ustack;
	int oom;
};

struct report_pprof *report_pprof__new(const struct report_pprof_opts *o)
{
	struct report_pprof *rp = calloc(1, sizeof(*rp));

	if (!rp)
		return NULL;
	rp->o = *o;
	rp->pp = pprof__new();
	rp->row_idx = ustack_u64map__new();
	rp->counts = ustack_u64map__new();
	rp->weights = ustack_u64map__new();
	rp->walls = ustack_u64map__new();
	rp->aobj = ustack_u64map__new();
	rp->iobj = ustack_u64map__new();
	rp->ispace = ustack_u64map__new();
	rp->event_ids = ustack_u64map__new();
	rp->file_idx = ustack_u64map__new();
	rp->demangled = ustack_u64map__new();
	if (!rp->pp || !rp->row_idx || !rp->counts || !rp->weights || !rp->walls ||
	    !rp->aobj || !rp->iobj || !rp->ispace || !rp->event_ids || !rp->file_idx || !rp->demangled) {
		report_pprof__free(rp);
		errno = ENOMEM;
		return NULL;
	}
	return rp;
}

void report_pprof__free(struct report_pprof *rp)
{
	uint64_t k, v;

	if (!rp)
		return;
	for (size_t it = 0; rp->demangled && ustack_u64map__next(rp->demangled, &it, &k, &v);)
		if (v != k)
			free((void *)(uintptr_t)v);
	ustack_u64map__free(rp->demangled);
	free(rp->keep);
	ustack_u64map__free(rp->row_idx);
	ustack_u64map__free(rp->counts);
	ustack_u64map__free(rp->weights);
	ustack_u64map__free(rp->walls);
	ustack_u64map__free(rp->aobj);
	ustack_u64map__free(rp->iobj);
	ustack_u64map__free(rp->ispace);
	ustack_u64map__free(rp->event_ids);
	ustack_u64map__free(rp->file_idx);
	pprof__free(rp->pp);
	free(rp->rows);
	free(rp);
}

static uint64_t row_hash(const struct row_key *k)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;
	const uint32_t w[6] = { k->kid, k->uid, k->jit, k->tid, k->pid, k->comm };

	for (int i = 0; i < 6; i++)
		h = (h ^ w[i]) * 0xff51afd7ed558ccdull;
	return h ^ h >> 29;
}

static long row_of(struct report_pprof *rp, const struct row_key *k)
{
	uint64_t h = row_hash(k), v;

	for (;; h++) {
		if (!ustack_u64map__get(rp->row_idx, h, &v))
			break;
		if (!memcmp(&rp->rows[v - 1], k, sizeof(*k)))
			return (long)(v - 1);
	}
	if (rp->nrows == rp->rows_cap) {
		size_t ncap = rp->rows_cap ? 2 * rp->rows_cap : 256;
		void *np = realloc(rp->rows, ncap * sizeof(*rp->rows));

		if (!np)
			return -1;
		rp->rows = np;
		rp->rows_cap = ncap;
	}
	if (ustack_u64map__put(rp->row_idx, h, rp->nrows + 1))
		return -1;
	rp->rows[rp->nrows] = *k;
	return (long)rp->nrows++;
}

/* the description of event @id, NULL when the trace has none */
static const struct ustack_trace_event_desc *event_desc(struct report_pprof *rp, uint32_t id)
{
	if (id >= 256)
		return ustack_trace_reader__event_desc(rp->o.r, id, &rp->desc_other) ? NULL
										      : &rp->desc_other;
	/* an EVENT_DESC comes before the events it describes: once read, kept */
	if (!rp->desc[id].known) {
		rp->desc[id].ok = !ustack_trace_reader__event_desc(rp->o.r, id, &rp->desc[id].d);
		rp->desc[id].known = rp->desc[id].ok;
	}
	return rp->desc[id].ok ? &rp->desc[id].d : NULL;
}

/* add @v to the u64 of @key in @m; -ENOMEM */
static int map_add(struct ustack_u64map *m, uint64_t key, uint64_t v)
{
	uint64_t *slot = ustack_u64map__slot(m, key, NULL);

	if (!slot)
		return -ENOMEM;
	*slot += v;
	return 0;
}

/* add @v to the double stored (as its bits) at @key in @m; -ENOMEM */
static int map_add_double(struct ustack_u64map *m, uint64_t key, double v)
{
	uint64_t *slot = ustack_u64map__slot(m, key, NULL);
	double d;

	if (!slot)
		return -ENOMEM;
	memcpy(&d, slot, sizeof(d)); /* a new slot's 0 is +0.0 */
	d += v;
	memcpy(slot, &d, sizeof(d));
	return 0;
}

static int64_t map_get_rounded(const struct ustack_u64map *m, uint64_t key)
{
	uint64_t bits = 0;
	double d;

	ustack_u64map__get(m, key, &bits);
	memcpy(&d, &bits, sizeof(d));
	return d > 0 ? (int64_t)(d + 0.5) : 0;
}

/* an allocation: its objects (unbiased bytes / size) in both views, its
 * bytes and objects again in the inuse ones when it is live at the
 * report's time */
static int weigh_alloc(struct report_pprof *rp, const struct ustack_trace_event *e, uint64_t key)
{
	uint64_t size, addr;
	double obj = report_alloc_objects(e);

	if (report_alloc_args(e, &size, &addr))
		return 0;
	if (map_add_double(rp->aobj, key, obj))
		return -ENOMEM;
	if (!rp->o.alloc || !report_alloc__live(rp->o.alloc, e->pid, addr, e->time))
		return 0;
	return map_add(rp->ispace, key, e->value) || map_add_double(rp->iobj, key, obj) ? -ENOMEM : 0;
}

/* what event @e weighs besides its count: its value in its unit (when that
 * is not a count) and, with --wall, its wall-clock ns */
static int weigh(struct report_pprof *rp, const struct ustack_trace_event *e, uint64_t row)
{
	const struct ustack_trace_event_desc *d = event_desc(rp, e->event_id);
	uint64_t w;

	if (!d)
		return 0;
	if (report_unit(d) != USTACK_TRACE_EV_UNIT_COUNT &&
	    map_add(rp->weights, row << 32 | e->event_id, e->value))
		return -ENOMEM;
	if (d->type == USTACK_TRACE_EV_ALLOC && weigh_alloc(rp, e, row << 32 | e->event_id))
		return -ENOMEM;
	if (rp->o.wall && (w = report_wall_ns(d, e->value)) && map_add(rp->walls, row, w))
		return -ENOMEM;
	return 0;
}

int report_pprof__event(struct report_pprof *rp, const struct ustack_trace_stitched *s,
			uint32_t comm)
{
	const struct ustack_trace_event *e = &s->event;
	struct row_key k = {
		.kid = e->kstack_id,
		.uid = s->result == USTACK_TRACE_STITCH_OK ? s->ustack_id : USTACK_TRACE_NO_STACK,
		.tid = e->tid,
		.pid = e->pid,
		.comm = comm,
	};
	uint64_t *c;
	long row;

	/* JIT names differ per process: the same stack id is another stack */
	if (k.uid != USTACK_TRACE_NO_STACK)
		k.jit = ustack_jitsyms__map_index(rp->o.jit, e->pid);
	if (s->result != USTACK_TRACE_STITCH_OK && s->result != USTACK_TRACE_STITCH_NO_COOKIE)
		rp->no_ustack++;
	if (!rp->events || e->time < rp->first_time)
		rp->first_time = e->time;
	if (e->time > rp->last_time)
		rp->last_time = e->time;
	rp->events++;
	row = row_of(rp, &k);
	if (row < 0 || !(c = ustack_u64map__slot(rp->counts, (uint64_t)row << 32 | e->event_id, NULL)) ||
	    ustack_u64map__put(rp->event_ids, e->event_id, 1)) {
		rp->oom = 1;
		return -ENOMEM;
	}
	/* one per event, as `folded` counts (a count's value is 1) */
	(*c)++;
	if (weigh(rp, e, (uint64_t)row)) {
		rp->oom = 1;
		return -ENOMEM;
	}
	return 0;
}

void report_pprof__lost(struct report_pprof *rp, uint64_t count)
{
	rp->lost += count;
}

/* ---- locations ----------------------------------------------------------------- */

static const char *display(struct report_pprof *rp, const char *raw)
{
	uint64_t v;
	char *d;

	if (!rp->o.demangle || !raw || raw[0] != '_' || raw[1] != 'Z')
		return raw;
	if (ustack_u64map__get(rp->demangled, (uintptr_t)raw, &v))
		return (const char *)(uintptr_t)v;
	d = ustack_demangle(raw);
	if (ustack_u64map__put(rp->demangled, (uintptr_t)raw, d ? (uintptr_t)d : (uintptr_t)raw)) {
		free(d);
		rp->oom = 1;
		return raw;
	}
	return d ? d : raw;
}

static uint64_t kernel_location(struct report_pprof *rp, uint64_t ip)
{
	struct ustack_trace_ksym ks;
	struct pprof_line ln = { 0 };
	uint64_t id = pprof__location_find(rp->pp, LOC_KERNEL, ip), map;

	if (id)
		return id;
	map = pprof__mapping(rp->pp, LOC_KERNEL, KERNEL_BASE, ip + 1, 0, "[kernel.kallsyms]", "", 0,
			     ip >= KERNEL_BASE ? ip : 0);
	if (!ustack_trace_reader__ksym(rp->o.r, ip, &ks) && (!ks.size || ip - ks.addr < ks.size))
		ln.function_id = pprof__function(rp->pp, ks.name, ks.name, "", 0);
	return pprof__location_add(rp->pp, LOC_KERNEL, ip, ip >= KERNEL_BASE ? map : 0, ip, &ln,
				   ln.function_id ? 1 : 0);
}

static void build_id_hex(const struct ustack_file_map *fm, char *hex)
{
	static const char dg[] = "0123456789abcdef";
	uint32_t n = fm->build_id_size > USTACK_BUILD_ID_MAX ? USTACK_BUILD_ID_MAX : fm->build_id_size;

	for (uint32_t k = 0; k < n; k++) {
		hex[2 * k] = dg[fm->build_id[k] >> 4];
		hex[2 * k + 1] = dg[fm->build_id[k] & 15];
	}
	hex[2 * n] = 0;
}

/* the mapping of file @file_id and its synthetic base; 0 when unknown */
static uint64_t file_mapping(struct report_pprof *rp, uint64_t file_id, uint64_t look,
			     uint64_t *base)
{
	struct ustack_file_map fm;
	char hex[2 * USTACK_BUILD_ID_MAX + 1];
	int isnew;
	uint64_t *n;

	if (ustack_trace_reader__file_map(rp->o.r, file_id, &fm))
		return 0;
	n = ustack_u64map__slot(rp->file_idx, file_id, &isnew);
	if (!n) {
		rp->oom = 1;
		return 0;
	}
	if (isnew)
		*n = ustack_u64map__count(rp->file_idx) - 1;
	if (*n >= SYNTH_MAX_FILES || look >= 1ull << SYNTH_SHIFT)
		return 0;
	*base = SYNTH_BASE + (*n << SYNTH_SHIFT);
	build_id_hex(&fm, hex);
	return pprof__mapping(rp->pp, file_id, *base, *base + look + 1, 0,
			      fm.path && *fm.path ? fm.path : "?", hex, rp->o.lines, *base + look);
}

static uint64_t user_location(struct report_pprof *rp, const struct ustack_trace_frame *f,
			      uint32_t pid)
{
	struct ustack_sym chain[MAX_CHAIN];
	struct pprof_line lines[MAX_CHAIN];
	int exact = cli_frame_exact(f), n;
	/* a return address is the instruction after the call: the location
	 * is the call (pprof: "a non-leaf address may be in the middle of a
	 * call instruction"), where the symbolizer looks too */
	uint64_t look = exact || !f->offset ? f->offset : f->offset - 1, id, map, base = 0;

	if (!f->file_id) {
		const struct ustack_perfmap_entry *je =
			rp->o.jit ? ustack_jitsyms__lookup(rp->o.jit, pid, look) : NULL;
		uint64_t k1 = je ? LOC_JIT | ustack_jitsyms__map_index(rp->o.jit, pid) : LOC_ANON;

		if ((id = pprof__location_find(rp->pp, k1, look)))
			return id;
		lines[0].function_id = je ? pprof__function(rp->pp, je->name, je->name, "", 0) : 0;
		lines[0].line = 0;
		return pprof__location_add(rp->pp, k1, look, 0, look, lines, je ? 1 : 0);
	}
	if ((id = pprof__location_find(rp->pp, f->file_id, look)))
		return id;
	map = file_mapping(rp, f->file_id, look, &base);
	n = ustack_symbolizer__symbolize_frames(rp->o.sym, f->file_id, f->offset,
						exact ? USTACK_SYM_EXACT_PC : 0, chain, MAX_CHAIN,
						sizeof(chain[0]));
	if (n < 0) {
		rp->oom = 1;
		return 0;
	}
	if (n > MAX_CHAIN)
		n = MAX_CHAIN;
	if (chain[n - 1].status != USTACK_SYM_OK)
		n = 0; /* no name: an address in its mapping, for others to symbolize */
	/* innermost first, the function holding the code last: pprof's order */
	for (int k = 0; k < n; k++) {
		const char *raw = chain[k].name ? chain[k].name : "??";

		lines[k].function_id = pprof__function(rp->pp, display(rp, raw), raw,
						       chain[k].file ? chain[k].file : "",
						       chain[k].decl_line);
		lines[k].line = chain[k].line;
	}
	return pprof__location_add(rp->pp, f->file_id, look, map, map ? base + look : look, lines,
				   (size_t)n);
}

/* A Python frame's location: its function (qualname, file, first line),
 * one line, no mapping (out_pprof.c, as snapshot's) */
static uint64_t py_location(struct report_pprof *rp, const struct ustack_trace_frame *f)
{
	struct ustack_trace_pyfunc pf;

	if (report_py__func(rp->o.py, f, &pf))
		/* no PYFUNC of its id: an unknown function, not another */
		return pprof__py_location(rp->pp, "??", "[python]", 0, 0);
	return pprof__py_location(rp->pp, pf.name, pf.file, pf.first_line,
				  ustack_trace_py_offset_line(f->offset));
}

/* The locations of user stack @st from @locs[n] on (the frames that show:
 * report_python.h); the new count */
static size_t user_locations(struct report_pprof *rp, const struct ustack_trace_stack *st,
			     uint32_t pid, uint64_t *locs, size_t n)
{
	uint32_t npy = 0;

	if (rp->o.py && st->nr) {
		if (cli_grow((void **)&rp->keep, &rp->keep_cap, st->nr)) {
			rp->oom = 1;
			return n;
		}
		report_py__select(rp->o.py, st, pid, rp->keep, &npy);
	}
	for (uint32_t i = 0; i < st->nr; i++) {
		if (npy && !rp->keep[i])
			continue;
		locs[n++] = npy && report_py__is_py(rp->o.py, &st->frames[i])
				    ? py_location(rp, &st->frames[i])
				    : user_location(rp, &st->frames[i], pid);
	}
	return n;
}

/* ---- the profile ---------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int is_clock(const struct ustack_trace_event_desc *d)
{
	return d->type == USTACK_TRACE_EV_SAMPLE &&
	       (!strcmp(d->name, "cpu-clock") || !strcmp(d->name, "task-clock"));
}

/* "-F N" / "--freq N" / "-FN" of the recording command line, else 0 */
static uint64_t cmdline_freq(const char *cmd)
{
	const char *p = cmd;

	while (p && (p = strstr(p, "-F"))) {
		p += 2;
		while (*p == ' ' || *p == '=')
			p++;
		if (*p >= '1' && *p <= '9')
			return strtoull(p, NULL, 10);
	}
	return 0;
}

/* per event column: first sample type index and how many (1 or 2) */
struct column {
	uint32_t id;
	size_t first, n;
	int64_t ns;   /* clock events: nanoseconds per sample */
	int weighted; /* the second type sums the events' values (not a count) */
	int alloc;    /* the four types of allocations */
};

/* What the sample types of a weighted trace need: the type shown first
 * (the first one in time or bytes) and whether any event is weighted. */
struct layout {
	int have_period, weighted;
	char deflt[300]; /* "" until the first type of a time or a size */
};

/* @name as a sample type name: what -sample_index takes on a command line
 * ("off-cpu" -> "off_cpu") */
static void type_name(char *out, size_t size, const char *name)
{
	size_t i = 0;

	for (; name && name[i] && i + 1 < size; i++) {
		char ch = name[i];

		out[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
				 (ch >= '0' && ch <= '9') ? ch : '_';
	}
	out[i] = 0;
	if (!i)
		snprintf(out, size, "events");
}

/*
 * An event whose unit is not a count (off-CPU intervals in ns): two types,
 * its count and its summed weight, as Go's block and mutex profiles pair
 * contentions/count with delay/nanoseconds ("off_cpu_intervals"/"count",
 * "off_cpu"/"nanoseconds"). Nothing is sampled: the period is 1 event.
 */
static void weighted_types(struct report_pprof *rp, const struct ustack_trace_event_desc *d,
			   struct column *c, struct layout *lo)
{
	uint32_t unit = report_unit(d);
	char base[256], name[300];

	type_name(base, sizeof(base), d->name);
	snprintf(name, sizeof(name), "%s_%s", base,
		 d->type == USTACK_TRACE_EV_OFFCPU ? "intervals" : "events");
	pprof__add_sample_type(rp->pp, name, "count");
	pprof__add_sample_type(rp->pp, base,
			       unit == USTACK_TRACE_EV_UNIT_NS	  ? "nanoseconds"
			       : unit == USTACK_TRACE_EV_UNIT_BYTES ? "bytes"
								      : report_unit_name(unit));
	c->n = 2;
	c->weighted = 1;
	lo->weighted = 1;
	if (!lo->deflt[0])
		snprintf(lo->deflt, sizeof(lo->deflt), "%s", base);
	if (!lo->have_period++)
		pprof__set_period(rp->pp, name, "count", 1);
}

/*
 * Allocations: the four sample types of Go's heap profiles, in their
 * order (alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes), the period the sampling's mean in bytes
 * (space/bytes, as Go's MemProfileRate), inuse_space the default unless
 * --view chose another.
 */
static void alloc_types(struct report_pprof *rp, const struct ustack_trace_event_desc *d,
			struct column *c, struct layout *lo)
{
	pprof__add_sample_type(rp->pp, "alloc_objects", "count");
	pprof__add_sample_type(rp->pp, "alloc_space", "bytes");
	pprof__add_sample_type(rp->pp, "inuse_objects", "count");
	pprof__add_sample_type(rp->pp, "inuse_space", "bytes");
	c->n = 4;
	c->alloc = 1;
	lo->weighted = 1;
	snprintf(lo->deflt, sizeof(lo->deflt), "%s",
		 rp->o.alloc_default ? rp->o.alloc_default : "inuse_space");
	if (!lo->have_period++)
		pprof__set_period(rp->pp, "space", "bytes", (int64_t)(d->period ? d->period : 1));
}

/* a row's values of allocation column @c */
static void alloc_values(struct report_pprof *rp, const struct column *c, size_t row, int64_t *vals)
{
	uint64_t key = (uint64_t)row << 32 | c->id, w = 0;

	vals[c->first] += map_get_rounded(rp->aobj, key);
	ustack_u64map__get(rp->weights, key, &w);
	vals[c->first + 1] += (int64_t)w;
	vals[c->first + 2] += map_get_rounded(rp->iobj, key);
	w = 0;
	ustack_u64map__get(rp->ispace, key, &w);
	vals[c->first + 3] += (int64_t)w;
}

/*
 * The main executable: the file of the outermost user frame of main
 * threads (tid == pid: _start is in the executable; other threads start in
 * libc's clone), the one under the most events. 0 when no main thread has
 * a user stack.
 */
static uint64_t main_file(struct report_pprof *rp, const struct column *cols, size_t ncols)
{
	struct ustack_u64map *w = ustack_u64map__new();
	uint64_t best = 0, best_w = 0, key, v;

	if (!w)
		return 0;
	for (size_t row = 0; row < rp->nrows; row++) {
		const struct row_key *rk = &rp->rows[row];
		struct ustack_trace_stack us;
		uint64_t fid, cnt, sum = 0, *slot;

		if (rk->tid != rk->pid || rk->uid == USTACK_TRACE_NO_STACK ||
		    ustack_trace_reader__stack(rp->o.r, USTACK_TRACE_USTACK, rk->uid, &us) || !us.nr)
			continue;
		fid = us.frames[us.nr - 1].file_id;
		if (!fid)
			continue;
		for (size_t i = 0; i < ncols; i++)
			if (ustack_u64map__get(rp->counts, (uint64_t)row << 32 | cols[i].id, &cnt))
				sum += cnt;
		slot = ustack_u64map__slot(w, fid, NULL);
		if (!slot)
			break;
		*slot += sum;
	}
	for (size_t it = 0; ustack_u64map__next(w, &it, &key, &v);)
		if (v > best_w || (v == best_w && key < best)) {
			best = key;
			best_w = v;
		}
	ustack_u64map__free(w);
	return best;
}

int report_pprof__write(struct report_pprof *rp, FILE *out,
			const char *(*comm_name)(void *ctx, uint32_t comm), void *ctx)
{
	const struct ustack_trace_header *h = ustack_trace_reader__header(rp->o.r);
	size_t ncols, k = 0;
	struct column *cols = NULL;
	uint64_t *ids = NULL, *locs = NULL, key, v;
	size_t locs_cap = 0, wall_idx = 0;
	int clocks = 0, ret;
	struct layout lo = { 0 };
	char text[512];

	if (!rp->oom) {
		/* event kinds described but never seen still get their sample
		 * types (an empty trace says what it recorded); the recorder
		 * numbers them from 0 */
		for (uint32_t id = 0; id < 4096; id++) {
			struct ustack_trace_event_desc d;

			if (!ustack_trace_reader__event_desc(rp->o.r, id, &d) &&
			    ustack_u64map__put(rp->event_ids, id, 1))
				rp->oom = 1;
		}
		ncols = ustack_u64map__count(rp->event_ids);
		cols = calloc(ncols + 1, sizeof(*cols));
		ids = calloc(ncols + 1, sizeof(*ids));
	}
	if (!cols || !ids || rp->oom) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t it = 0; ustack_u64map__next(rp->event_ids, &it, &key, &v);)
		ids[k++] = key;
	qsort(ids, k, sizeof(*ids), cmp_u64);
	for (size_t i = 0; i < k; i++) {
		struct ustack_trace_event_desc d;
		struct column *c = &cols[i];
		char name[300];

		c->id = (uint32_t)ids[i];
		c->first = pprof__nr_sample_types(rp->pp);
		if (ustack_trace_reader__event_desc(rp->o.r, c->id, &d)) {
			memset(&d, 0, sizeof(d));
			d.name = "event";
			d.type = USTACK_TRACE_EV_TRACEPOINT;
		}
		if (d.type == USTACK_TRACE_EV_FREE) {
			continue; /* ends an allocation: no sample, no type */
		} else if (d.type == USTACK_TRACE_EV_ALLOC) {
			alloc_types(rp, &d, c, &lo);
		} else if (is_clock(&d)) {
			uint64_t hz = (d.flags & USTACK_TRACE_EV_FREQ) ? d.period : 0;

			/* the trace stores the frequency (EVENT_DESC, FREQ flag);
			 * older writers left it 0: the command line's -F, else
			 * record's default of 999 Hz */
			if (!(d.flags & USTACK_TRACE_EV_FREQ) && d.period)
				c->ns = (int64_t)d.period;
			else {
				if (!hz)
					hz = h ? cmdline_freq(h->cmdline) : 0;
				c->ns = (int64_t)(1000000000ull / (hz ? hz : 999));
			}
			/* the first clock is "samples"/"cpu", as Go's CPU
			 * profiles; another one is told apart by its name */
			if (!clocks++) {
				pprof__add_sample_type(rp->pp, "samples", "count");
				pprof__add_sample_type(rp->pp, "cpu", "nanoseconds");
			} else {
				snprintf(name, sizeof(name), "%s:samples", d.name);
				pprof__add_sample_type(rp->pp, name, "count");
				snprintf(name, sizeof(name), "%s:cpu", d.name);
				pprof__add_sample_type(rp->pp, name, "nanoseconds");
			}
			c->n = 2;
			if (!lo.deflt[0])
				snprintf(lo.deflt, sizeof(lo.deflt), "%s",
					 clocks > 1 ? name : "cpu");
			if (!lo.have_period++)
				pprof__set_period(rp->pp, "cpu", "nanoseconds", c->ns);
		} else if (report_unit(&d) != USTACK_TRACE_EV_UNIT_COUNT) {
			weighted_types(rp, &d, c, &lo);
		} else {
			/* a tracepoint (or another event): its count, under its
			 * own name so that several kinds stay apart */
			pprof__add_sample_type(rp->pp, d.name && *d.name ? d.name : "events", "count");
			c->n = 1;
			if (!lo.have_period++)
				pprof__set_period(rp->pp, d.name && *d.name ? d.name : "events",
						  "count", 1);
		}
	}
	/* nothing describes an event (a trace damaged in its first chunk):
	 * still a profile pprof reads, of no sample */
	if (!pprof__nr_sample_types(rp->pp))
		pprof__add_sample_type(rp->pp, "events", "count");
	/* a trace of counts only keeps the profile it always had (no default:
	 * the last type); otherwise the time (or size) readers expect first */
	if (rp->o.wall) {
		wall_idx = pprof__nr_sample_types(rp->pp);
		pprof__add_sample_type(rp->pp, "wall", "nanoseconds");
		pprof__set_default_type(rp->pp, "wall");
	} else if (lo.weighted) {
		pprof__set_default_type(rp->pp, lo.deflt);
	}
	if (h && h->realtime_ns && rp->events)
		pprof__set_times(rp->pp, (int64_t)(h->realtime_ns - h->clock_ns + rp->first_time),
				 (int64_t)(rp->last_time - rp->first_time));
	snprintf(text, sizeof(text), "ustack report of %s", rp->o.in_path);
	pprof__add_comment(rp->pp, text);
	if (h && h->cmdline && *h->cmdline) {
		snprintf(text, sizeof(text), "recorded with: %s", h->cmdline);
		pprof__add_comment(rp->pp, text);
	}
	snprintf(text, sizeof(text), "events: %" PRIu64 "; lost records: %" PRIu64
		 "; events without their user stack: %" PRIu64, rp->events, rp->lost, rp->no_ustack);
	pprof__add_comment(rp->pp, text);

	/* pprof takes the first mapping for the main binary ("File:" of
	 * `go tool pprof`): the executable's comes before any other */
	key = main_file(rp, cols, k);
	if (key) {
		uint64_t base;

		file_mapping(rp, key, 0, &base);
	}
	for (size_t row = 0; row < rp->nrows && !rp->oom; row++) {
		const struct row_key *rk = &rp->rows[row];
		struct ustack_trace_stack st;
		size_t n = 0;
		char comm[64];
		struct pprof_label labels[3] = {
			{ .key = "thread", .num = rk->tid },
			{ .key = "pid", .num = rk->pid },
			{ .key = "comm", .str = comm },
		};
		int64_t *vals;
		uint32_t nk = 0, nu = 0;

		snprintf(comm, sizeof(comm), "%s", comm_name(ctx, rk->comm));
		if (rk->kid != USTACK_TRACE_NO_STACK &&
		    !ustack_trace_reader__stack(rp->o.r, USTACK_TRACE_KSTACK, rk->kid, &st))
			nk = st.nr;
		if (rk->uid != USTACK_TRACE_NO_STACK) {
			struct ustack_trace_stack us;

			if (!ustack_trace_reader__stack(rp->o.r, USTACK_TRACE_USTACK, rk->uid, &us))
				nu = us.nr;
		}
		if (nk + nu > locs_cap) {
			void *np = realloc(locs, (nk + nu) * sizeof(*locs));

			if (!np) {
				rp->oom = 1;
				break;
			}
			locs = np;
			locs_cap = nk + nu;
		}
		/* leaf first: the kernel part (innermost first, as stored),
		 * then the user part, as `folded` stacks them root first */
		if (nk) {
			ustack_trace_reader__stack(rp->o.r, USTACK_TRACE_KSTACK, rk->kid, &st);
			for (uint32_t i = 0; i < nk; i++)
				locs[n++] = kernel_location(rp, st.ips[i]);
		}
		if (nu) {
			ustack_trace_reader__stack(rp->o.r, USTACK_TRACE_USTACK, rk->uid, &st);
			n = user_locations(rp, &st, rk->pid, locs, n);
		}
		for (size_t i = 0; i < n; i++)
			if (!locs[i])
				rp->oom = 1;
		if (rp->oom)
			break;
		vals = pprof__sample(rp->pp, locs, n, labels, 3);
		if (!vals) {
			rp->oom = 1;
			break;
		}
		for (size_t i = 0; i < k; i++) {
			uint64_t cnt = 0;

			if (!cols[i].n)
				continue;
			if (cols[i].alloc) {
				alloc_values(rp, &cols[i], row, vals);
				continue;
			}
			ustack_u64map__get(rp->counts, (uint64_t)row << 32 | cols[i].id, &cnt);
			vals[cols[i].first] += (int64_t)cnt;
			if (cols[i].weighted) {
				uint64_t w = 0;

				ustack_u64map__get(rp->weights, (uint64_t)row << 32 | cols[i].id, &w);
				vals[cols[i].first + 1] += (int64_t)w;
			} else if (cols[i].n == 2) {
				vals[cols[i].first + 1] += (int64_t)cnt * cols[i].ns;
			}
		}
		if (rp->o.wall) {
			uint64_t w = 0;

			ustack_u64map__get(rp->walls, (uint64_t)row, &w);
			vals[wall_idx] += (int64_t)w;
		}
	}
	ret = rp->oom ? -ENOMEM : pprof__write(rp->pp, out);
out:
	free(cols);
	free(ids);
	free(locs);
	return ret;
}
