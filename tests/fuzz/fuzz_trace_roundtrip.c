// SPDX-License-Identifier: MIT
/*
 * Fuzz target: trace writer -> reader round trip (src/trace/). The input is
 * a script: a prelude (writer options, HEADER fields, the stacks, file maps
 * and kernel symbols the writer's callbacks hand out) and then writer calls
 * (event descriptions, threads, events, user stacks, lost records, explicit
 * KSYMs, chunk flushes, PYFUNCs). The trace goes to a memfd and is read back (from
 * memory or through the fd path). Any difference from what was written
 * aborts:
 *  - every call's return value is the one the model predicts (-EINVAL for
 *    an undefined event id or cookie 0, -EEXIST for a redefined event id, a
 *    callback's error);
 *  - the records read are, in order, exactly the records of the successful
 *    calls, every field; between them only definitions (STACK, FILE_MAP,
 *    EVENT_DESC, KSYM from the callback), each equal to what the callbacks
 *    gave, a KSYM for each kernel ip with a symbol in the chunk before its
 *    STACK, and the reader reaches a clean end;
 *  - END and the writer's totals agree with the model;
 *  - the stitcher, fed the records read, resolves every event as
 *    docs/trace-format.md 4.2 says (modelled here as a forward scan, not the
 *    stitcher's per-tid lists), at the record that resolves it.
 * tests/fuzz/corpus/trace_roundtrip holds a few scripts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ustack/trace.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OPS 400
#define NSTACKS 8
#define NFILES 7
#define NKSYMS 4
#define MAXF 24

/* ---- input ---------------------------------------------------------------- */

struct in {
	const uint8_t *p;
	size_t n, pos;
};

static uint8_t u8(struct in *in)
{
	return in->pos < in->n ? in->p[in->pos++] : 0;
}

static uint64_t fixed(struct in *in, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)u8(in) << (8 * i);
	return v;
}

/* small numbers are cheap, any number is possible */
static uint64_t num(struct in *in)
{
	uint8_t b = u8(in);

	switch (b >> 6) {
	case 0: return b & 63;
	case 1: return (uint64_t)(b & 63) << 8 | u8(in);
	case 2: return fixed(in, 4);
	default: return fixed(in, 8);
	}
}

/* strings are kept until the end of the run */
static char *strs[4 * MAX_OPS + 64];
static size_t nstrs;

static const char *str(struct in *in)
{
	uint8_t b = u8(in);
	size_t len = b % 48, i;
	char *s;

	if (b == 0xff || nstrs == sizeof(strs) / sizeof(strs[0]))
		return NULL;
	s = malloc(len + 1);
	if (!s)
		abort();
	for (i = 0; i < len && in->pos < in->n && in->p[in->pos]; i++)
		s[i] = (char)in->p[in->pos++];
	s[i] = 0;
	strs[nstrs++] = s;
	return s;
}

static int str_eq(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

/* ---- what the callbacks hand out ---------------------------------------- */

static const uint32_t stack_ids[NSTACKS] = { 0, 1, 2, 3, 4, 5, 1000, 0xfffffffe };
static const uint64_t file_ids[NFILES] = { 1, 2, 3, 42, 1ull << 40, 0xfffffffffffffffe,
					   0xffffffffffffffff };
static const uint32_t event_ids[8] = { 0, 1, 2, 3, 7, 100, 0x80000000, 0xffffffff };

struct mstack {
	int fail;
	uint32_t nr;
	uint64_t ips[MAXF];
	struct ustack_trace_frame fr[MAXF];
};

struct mfile {
	int fail; /* -EIO from the callback, or build ID too long */
	struct ustack_file_map fm;
};

static struct mstack stacks[2][NSTACKS];
static struct mfile files[NFILES];
static struct ustack_trace_ksym ksyms[NKSYMS];
static int use_ksym_cb;

static int stack_idx(uint32_t id)
{
	for (int i = 0; i < NSTACKS; i++)
		if (stack_ids[i] == id)
			return i;
	return -1;
}

static int file_idx(uint64_t id)
{
	for (int i = 0; i < NFILES; i++)
		if (file_ids[i] == id)
			return i;
	return -1;
}

static int get_stack(void *ctx, uint32_t kind, uint32_t id, struct ustack_trace_stack *st)
{
	int i = stack_idx(id);
	const struct mstack *m;

	if (i < 0 || kind > 1)
		abort(); /* the writer asked for a stack nobody referred to */
	m = &stacks[kind][i];
	if (m->fail)
		return -ENOENT;
	st->id = id;
	st->kind = kind;
	st->nr = m->nr;
	st->ips = kind == USTACK_TRACE_KSTACK ? m->ips : NULL;
	st->frames = kind == USTACK_TRACE_USTACK ? m->fr : NULL;
	return 0;
}

static int get_file_map(void *ctx, uint64_t file_id, struct ustack_file_map *fm)
{
	int i = file_idx(file_id);

	if (i < 0)
		abort();
	if (files[i].fail == 1)
		return -EIO;
	*fm = files[i].fm;
	return 0;
}

/* the symbol holding ip: [addr, addr + size), or addr itself when size 0 */
static const struct ustack_trace_ksym *model_ksym(uint64_t ip)
{
	for (int i = 0; i < NKSYMS; i++)
		if (ip == ksyms[i].addr || ip - ksyms[i].addr < ksyms[i].size)
			return &ksyms[i];
	return NULL;
}

static int get_ksym(void *ctx, uint64_t ip, struct ustack_trace_ksym *ks)
{
	const struct ustack_trace_ksym *k = model_ksym(ip);

	if (!k)
		return -ENOENT;
	*ks = *k;
	return 0;
}

static void read_prelude(struct in *in)
{
	for (int kind = 0; kind < 2; kind++)
		for (int i = 0; i < NSTACKS; i++) {
			struct mstack *m = &stacks[kind][i];
			uint8_t b = u8(in);

			memset(m, 0, sizeof(*m));
			m->fail = b >= 0xf8;
			m->nr = m->fail ? 0 : b % MAXF;
			for (uint32_t f = 0; f < m->nr; f++) {
				if (kind == USTACK_TRACE_KSTACK) {
					m->ips[f] = num(in);
					if (f && (u8(in) & 1))
						m->ips[f] += m->ips[f - 1]; /* near the previous one */
				} else {
					uint8_t fi = u8(in);

					m->fr[f].file_id = fi % (NFILES + 1) ? file_ids[fi % (NFILES + 1) - 1] : 0;
					m->fr[f].offset = num(in);
					m->fr[f].method = u8(in);
					m->fr[f].flags = u8(in);
				}
			}
		}
	for (int i = 0; i < NFILES; i++) {
		struct ustack_file_map *fm = &files[i].fm;
		uint8_t b = u8(in);

		memset(&files[i], 0, sizeof(files[i]));
		files[i].fail = b >= 0xf0; /* the callback fails */
		fm->file_id = file_ids[i];
		fm->kind = (uint32_t)num(in);
		fm->flags = (uint32_t)num(in);
		fm->path = str(in);
		fm->dev_major = (uint32_t)num(in);
		fm->dev_minor = (uint32_t)num(in);
		fm->inode = num(in);
		fm->map_start = num(in);
		fm->build_id_size = files[i].fail ? 0 : b % 34;
		if (fm->build_id_size > 32)
			files[i].fail = 2; /* the writer refuses it */
		for (uint32_t k = 0; k < fm->build_id_size && k < 32; k++)
			fm->build_id[k] = u8(in);
		fm->build_id_source = (uint32_t)num(in);
		fm->debuglink = str(in);
		fm->debuglink_crc = (uint32_t)num(in);
		fm->generation = (uint32_t)num(in); /* not stored: read back as 0 */
	}
	for (int i = 0; i < NKSYMS; i++) {
		ksyms[i].addr = num(in);
		ksyms[i].size = num(in);
		ksyms[i].name = str(in);
		ksyms[i].module = str(in);
	}
}

/* ---- the model's view of the written records ------------------------------ */

struct expect {
	struct ustack_trace_record rec; /* type and fields */
};

static struct expect *log_;
static size_t nlog, caplog;

static void log_rec(const struct ustack_trace_record *r)
{
	if (nlog == caplog) {
		caplog = caplog ? 2 * caplog : 64;
		log_ = realloc(log_, caplog * sizeof(*log_));
		if (!log_)
			abort();
	}
	log_[nlog++].rec = *r;
}

struct mdesc {
	int defined;
	struct ustack_trace_event_desc d;
};

static struct mdesc descs[8];

static int event_idx(uint32_t id)
{
	for (int i = 0; i < 8; i++)
		if (event_ids[i] == id)
			return i;
	return -1;
}

/* the writer's totals as the model counts them */
static struct ustack_trace_stats mst;
static int have_time;

static void model_time(uint64_t t)
{
	if (!have_time || t < mst.first_time)
		mst.first_time = t;
	if (!have_time || t > mst.last_time)
		mst.last_time = t;
	have_time = 1;
}

/* 0 or the error the writer must give for stack (kind, id) */
static int stack_err(uint32_t kind, uint32_t id)
{
	const struct mstack *m = &stacks[kind][stack_idx(id)];

	if (m->fail)
		return -ENOENT;
	if (kind == USTACK_TRACE_USTACK)
		for (uint32_t f = 0; f < m->nr; f++) {
			int fi = file_idx(m->fr[f].file_id);

			if (m->fr[f].file_id && files[fi].fail)
				return files[fi].fail == 1 ? -EIO : -EINVAL;
		}
	return 0;
}

static uint32_t pick_stack(struct in *in)
{
	uint8_t b = u8(in) % (NSTACKS + 1);

	return b == NSTACKS ? USTACK_TRACE_NO_STACK : stack_ids[b];
}

static void run_op(struct ustack_trace_writer *w, struct in *in)
{
	struct ustack_trace_record r;
	int ret, want = 0;

	memset(&r, 0, sizeof(r));
	switch (u8(in) % 9) {
	case 0: { /* event description */
		struct ustack_trace_event_desc *d = &r.event_desc;
		struct mdesc *m;

		d->id = event_ids[u8(in) % 8];
		d->type = (uint32_t)num(in);
		d->flags = (uint32_t)num(in);
		d->period = num(in);
		d->name = str(in);
		m = &descs[event_idx(d->id)];
		if (m->defined)
			want = m->d.type == d->type && m->d.flags == d->flags &&
			       m->d.period == d->period && str_eq(m->d.name, d->name) ? 1 : -EEXIST;
		ret = ustack_trace_writer__add_event_desc(w, d);
		if (ret != (want == 1 ? 0 : want))
			abort();
		if (!want) {
			m->defined = 1;
			m->d = *d;
			r.type = USTACK_TRACE_EVENT_DESC;
			log_rec(&r);
		}
		return;
	}
	case 1: { /* thread */
		struct ustack_trace_thread *t = &r.thread;

		t->time = num(in);
		t->pid = (uint32_t)num(in);
		t->tid = (uint32_t)num(in);
		t->flags = (uint32_t)num(in);
		t->comm = str(in);
		if (ustack_trace_writer__add_thread(w, t))
			abort();
		t->flags &= 7; /* only these bits are stored */
		model_time(t->time);
		r.type = USTACK_TRACE_THREAD;
		log_rec(&r);
		return;
	}
	case 2: { /* event */
		struct ustack_trace_event *e = &r.event;
		int ei;

		e->time = num(in);
		e->pid = (uint32_t)num(in);
		e->tid = (uint32_t)num(in);
		e->cpu = (uint32_t)num(in);
		e->event_id = event_ids[u8(in) % 8];
		e->kstack_id = pick_stack(in);
		e->cookie = num(in);
		e->value = num(in);
		e->flags = (uint32_t)num(in);
		ei = event_idx(e->event_id);
		if (!descs[ei].defined)
			want = -EINVAL;
		else if (e->kstack_id != USTACK_TRACE_NO_STACK)
			want = stack_err(USTACK_TRACE_KSTACK, e->kstack_id);
		ret = ustack_trace_writer__add_event(w, e);
		if (ret != want)
			abort();
		if (ret)
			return;
		e->flags &= USTACK_TRACE_EVENT_HAS_VALUE;
		if (!e->flags)
			e->value = 1;
		mst.events++;
		model_time(e->time);
		r.type = USTACK_TRACE_EVENT;
		log_rec(&r);
		return;
	}
	case 3: { /* user stack */
		struct ustack_trace_user_stack *u = &r.user_stack;

		u->time = num(in);
		u->pid = (uint32_t)num(in);
		u->tid = (uint32_t)num(in);
		u->cpu = (uint32_t)num(in);
		u->stop_reason = (uint32_t)num(in);
		u->cookie = num(in);
		u->stack_id = pick_stack(in);
		if (!u->cookie)
			want = -EINVAL;
		else if (u->stack_id != USTACK_TRACE_NO_STACK)
			want = stack_err(USTACK_TRACE_USTACK, u->stack_id);
		ret = ustack_trace_writer__add_user_stack(w, u);
		if (ret != want)
			abort();
		if (ret)
			return;
		mst.user_stacks++;
		model_time(u->time);
		r.type = USTACK_TRACE_USER_STACK;
		log_rec(&r);
		return;
	}
	case 4: { /* lost */
		struct ustack_trace_lost *l = &r.lost;

		l->time = num(in);
		l->what = (uint32_t)num(in);
		l->cpu = (uint32_t)num(in);
		l->count = num(in);
		if (ustack_trace_writer__add_lost(w, l))
			abort();
		mst.lost += l->count;
		model_time(l->time);
		r.type = USTACK_TRACE_LOST;
		log_rec(&r);
		return;
	}
	case 5: { /* explicit kernel symbol */
		struct ustack_trace_ksym *k = &r.ksym;

		k->addr = num(in);
		k->size = num(in);
		k->name = str(in);
		k->module = str(in);
		if (ustack_trace_writer__add_ksym(w, k))
			abort();
		r.type = USTACK_TRACE_KSYM;
		log_rec(&r);
		return;
	}
	case 6:
		if (ustack_trace_writer__flush(w))
			abort();
		return;
	case 8: { /* Python function (1.5): its fields follow from its id, so
		   * that the same id written twice agrees, as the format wants */
		static const char *const names[] = { "f", "Walker.step", "<lambda>" };
		struct ustack_trace_pyfunc *f = &r.pyfunc;
		uint8_t b = u8(in) % 6;

		/* 0 and 2^40: refused ids; 3: refused, an empty name */
		f->id = b == 5 ? UINT64_C(1) << 40 : b == 4 ? (UINT64_C(1) << 40) - 1 : b;
		f->pid = (uint32_t)(f->id * 100003);
		f->first_line = (uint32_t)(f->id % 100000 * 1000 + 7);
		f->name = b == 3 ? "" : names[f->id % 3];
		f->file = "/srv/a.py";
		want = !f->id || f->id >> 40 || !*f->name ? -EINVAL : 0;
		if (ustack_trace_writer__add_pyfunc(w, f) != want)
			abort();
		if (want)
			return;
		r.type = USTACK_TRACE_PYFUNC;
		log_rec(&r);
		return;
	}
	default: {
		struct ustack_trace_stats st;

		ustack_trace_writer__stats(w, &st, sizeof(st));
		if (st.events != mst.events || st.user_stacks != mst.user_stacks ||
		    st.lost != mst.lost || st.first_time != mst.first_time ||
		    st.last_time != mst.last_time)
			abort();
		return;
	}
	}
}

/* ---- comparing --------------------------------------------------------------- */

static int same_stack(const struct ustack_trace_stack *st)
{
	const struct mstack *m;
	int i = stack_idx(st->id);

	if (i < 0 || st->kind > 1)
		return 0;
	m = &stacks[st->kind][i];
	if (m->fail || st->nr != m->nr)
		return 0;
	for (uint32_t f = 0; f < m->nr; f++) {
		if (st->kind == USTACK_TRACE_KSTACK) {
			if (!st->ips || st->frames || st->ips[f] != m->ips[f])
				return 0;
		} else {
			const struct ustack_trace_frame *a = &st->frames[f], *b = &m->fr[f];

			if (st->ips || a->offset != b->offset || a->file_id != b->file_id ||
			    a->method != (b->method & 7) ||
			    a->flags != (b->flags & USTACK_TRACE_FRAME_EXACT_PC))
				return 0;
		}
	}
	return 1;
}

static int same_file_map(const struct ustack_file_map *a)
{
	int i = file_idx(a->file_id);
	const struct ustack_file_map *b;

	if (i < 0 || files[i].fail)
		return 0;
	b = &files[i].fm;
	return a->kind == b->kind && a->flags == b->flags && str_eq(a->path, b->path) &&
	       a->path && a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       a->inode == b->inode && a->map_start == b->map_start &&
	       a->build_id_size == b->build_id_size && a->build_id_source == b->build_id_source &&
	       !memcmp(a->build_id, b->build_id, b->build_id_size) &&
	       (b->debuglink && *b->debuglink ? a->debuglink && !strcmp(a->debuglink, b->debuglink)
					      : !a->debuglink) &&
	       a->debuglink_crc == (b->debuglink ? b->debuglink_crc : 0) && a->generation == 0;
}

static int same_ksym(const struct ustack_trace_ksym *a, const struct ustack_trace_ksym *b)
{
	return a->addr == b->addr && a->size == b->size && a->name && a->module &&
	       str_eq(a->name, b->name) && str_eq(a->module, b->module);
}

static int same_desc(const struct ustack_trace_event_desc *a, const struct ustack_trace_event_desc *b)
{
	return a->id == b->id && a->type == b->type && a->flags == b->flags &&
	       a->period == b->period && a->name && str_eq(a->name, b->name);
}

static int same_event(const struct ustack_trace_event *a, const struct ustack_trace_event *b)
{
	return a->time == b->time && a->pid == b->pid && a->tid == b->tid && a->cpu == b->cpu &&
	       a->event_id == b->event_id && a->kstack_id == b->kstack_id &&
	       a->cookie == b->cookie && a->value == b->value && a->flags == b->flags;
}

static int same_primary(const struct ustack_trace_record *a, const struct ustack_trace_record *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case USTACK_TRACE_HEADER: {
		const struct ustack_trace_header *x = &a->header, *y = &b->header;

		return x->clock_id == y->clock_id && x->realtime_ns == y->realtime_ns &&
		       x->clock_ns == y->clock_ns && x->hostname && str_eq(x->hostname, y->hostname) &&
		       x->release && str_eq(x->release, y->release) && x->machine &&
		       str_eq(x->machine, y->machine) && x->cmdline && str_eq(x->cmdline, y->cmdline) &&
		       x->version && str_eq(x->version, y->version);
	}
	case USTACK_TRACE_EVENT_DESC:
		return same_desc(&a->event_desc, &b->event_desc);
	case USTACK_TRACE_THREAD:
		return a->thread.time == b->thread.time && a->thread.pid == b->thread.pid &&
		       a->thread.tid == b->thread.tid && a->thread.flags == b->thread.flags &&
		       a->thread.comm && str_eq(a->thread.comm, b->thread.comm);
	case USTACK_TRACE_EVENT:
		return same_event(&a->event, &b->event);
	case USTACK_TRACE_USER_STACK: {
		const struct ustack_trace_user_stack *x = &a->user_stack, *y = &b->user_stack;

		return x->time == y->time && x->pid == y->pid && x->tid == y->tid && x->cpu == y->cpu &&
		       x->stop_reason == y->stop_reason && x->cookie == y->cookie &&
		       x->stack_id == y->stack_id;
	}
	case USTACK_TRACE_LOST:
		return a->lost.time == b->lost.time && a->lost.what == b->lost.what &&
		       a->lost.cpu == b->lost.cpu && a->lost.count == b->lost.count;
	case USTACK_TRACE_KSYM:
		return same_ksym(&a->ksym, &b->ksym);
	case USTACK_TRACE_END:
		return !memcmp(&a->end, &b->end, sizeof(a->end));
	case USTACK_TRACE_PYFUNC:
		return a->pyfunc.id == b->pyfunc.id && a->pyfunc.pid == b->pyfunc.pid &&
		       a->pyfunc.first_line == b->pyfunc.first_line &&
		       str_eq(a->pyfunc.name, b->pyfunc.name) && str_eq(a->pyfunc.file, b->pyfunc.file);
	}
	return 0;
}

/* ---- stitching, as docs/trace-format.md 4.2 states it ---------------------- */

struct stitched {
	size_t at; /* index of the primary record whose push resolved it (nlog: the end) */
	struct ustack_trace_stitched s;
};

static struct stitched *want_st, *got_st;
static size_t nwant_st, ngot_st, capwant_st, capgot_st;

static void st_add(struct stitched **a, size_t *n, size_t *cap, size_t at,
		   const struct ustack_trace_stitched *s)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		*a = realloc(*a, *cap * sizeof(**a));
		if (!*a)
			abort();
	}
	(*a)[*n].at = at;
	(*a)[*n].s = *s;
	(*n)++;
}

static void expected_stitching(void)
{
	for (size_t i = 0; i < nlog; i++) {
		const struct ustack_trace_event *e = &log_[i].rec.event;
		struct ustack_trace_stitched s;
		size_t j = i + 1;

		if (log_[i].rec.type != USTACK_TRACE_EVENT)
			continue;
		memset(&s, 0, sizeof(s));
		s.event = *e;
		s.ustack_id = USTACK_TRACE_NO_STACK;
		if (!e->cookie) {
			s.result = USTACK_TRACE_STITCH_NO_COOKIE;
			st_add(&want_st, &nwant_st, &capwant_st, i, &s);
			continue;
		}
		s.result = USTACK_TRACE_STITCH_END;
		for (; j < nlog; j++) {
			const struct ustack_trace_record *r = &log_[j].rec;

			if (r->type == USTACK_TRACE_LOST) {
				s.result = USTACK_TRACE_STITCH_LOST;
				break;
			}
			if (r->type == USTACK_TRACE_EVENT && r->event.tid == e->tid && r->event.cookie &&
			    r->event.cookie != e->cookie) {
				s.result = USTACK_TRACE_STITCH_MISMATCH;
				break;
			}
			if (r->type == USTACK_TRACE_USER_STACK && r->user_stack.tid == e->tid) {
				if (r->user_stack.cookie == e->cookie) {
					s.result = USTACK_TRACE_STITCH_OK;
					s.ustack_id = r->user_stack.stack_id;
					s.stop_reason = r->user_stack.stop_reason;
					s.ustack_time = r->user_stack.time;
				} else {
					s.result = USTACK_TRACE_STITCH_MISMATCH;
				}
				break;
			}
		}
		st_add(&want_st, &nwant_st, &capwant_st, j, &s);
	}
}

#define CMP(x, y) do { if ((x) != (y)) return (x) < (y) ? -1 : 1; } while (0)

static int st_cmp(const void *pa, const void *pb)
{
	const struct stitched *a = pa, *b = pb;

	CMP(a->at, b->at);
	CMP(a->s.event.time, b->s.event.time);
	CMP(a->s.event.pid, b->s.event.pid);
	CMP(a->s.event.tid, b->s.event.tid);
	CMP(a->s.event.cpu, b->s.event.cpu);
	CMP(a->s.event.event_id, b->s.event.event_id);
	CMP(a->s.event.kstack_id, b->s.event.kstack_id);
	CMP(a->s.event.cookie, b->s.event.cookie);
	CMP(a->s.event.value, b->s.event.value);
	CMP(a->s.event.flags, b->s.event.flags);
	CMP(a->s.result, b->s.result);
	CMP(a->s.ustack_id, b->s.ustack_id);
	CMP(a->s.stop_reason, b->s.stop_reason);
	CMP(a->s.ustack_time, b->s.ustack_time);
	return 0;
}

/* ---- reading back ---------------------------------------------------------- */

static uint64_t chunk_ksyms[4 * MAXF + 4 * MAX_OPS];
static size_t nchunk_ksyms;

static int ksym_in_chunk(uint64_t addr)
{
	for (size_t i = 0; i < nchunk_ksyms; i++)
		if (chunk_ksyms[i] == addr)
			return 1;
	return 0;
}

static void read_back(struct ustack_trace_reader *r)
{
	struct ustack_trace_stitcher *sti = ustack_trace_stitcher__new();
	struct ustack_trace_record rec;
	struct ustack_trace_stitched out;
	uint64_t seen_stacks[2][NSTACKS] = { { 0 } }, seen_files[NFILES] = { 0 };
	uint64_t last_off = 0, nstacks = 0, nfiles = 0;
	uint32_t chunk = 0;
	size_t ri = 0;
	int ret;

	if (!sti)
		abort();
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		const struct ustack_trace_record *want = ri < nlog ? &log_[ri].rec : NULL;
		int primary = 0;

		if (rec.chunk < chunk || rec.offset <= last_off)
			abort();
		if (rec.chunk != chunk)
			nchunk_ksyms = 0;
		chunk = rec.chunk;
		last_off = rec.offset;
		switch (rec.type) {
		case USTACK_TRACE_STACK:
			if (!same_stack(&rec.stack))
				abort();
			if (!seen_stacks[rec.stack.kind][stack_idx(rec.stack.id)]++)
				nstacks++;
			/* with the callback, each ip's symbol is in the chunk before the stack */
			if (use_ksym_cb && rec.stack.kind == USTACK_TRACE_KSTACK)
				for (uint32_t f = 0; f < rec.stack.nr; f++) {
					const struct ustack_trace_ksym *k = model_ksym(rec.stack.ips[f]);

					if (k && !ksym_in_chunk(k->addr))
						abort();
				}
			break;
		case USTACK_TRACE_FILE_MAP:
			if (!same_file_map(&rec.file_map))
				abort();
			if (!seen_files[file_idx(rec.file_map.file_id)]++)
				nfiles++;
			break;
		case USTACK_TRACE_EVENT_DESC:
			if (want && want->type == USTACK_TRACE_EVENT_DESC &&
			    want->event_desc.id == rec.event_desc.id)
				primary = 1;
			else if (event_idx(rec.event_desc.id) < 0 ||
				 !descs[event_idx(rec.event_desc.id)].defined ||
				 !same_desc(&rec.event_desc, &descs[event_idx(rec.event_desc.id)].d))
				abort();
			break;
		case USTACK_TRACE_KSYM:
			if (want && want->type == USTACK_TRACE_KSYM) {
				primary = 1;
			} else {
				int known = 0;

				for (int i = 0; i < NKSYMS; i++)
					known |= same_ksym(&rec.ksym, &ksyms[i]);
				if (!use_ksym_cb || !known)
					abort(); /* not one the callback gave */
			}
			if (nchunk_ksyms < sizeof(chunk_ksyms) / sizeof(chunk_ksyms[0]))
				chunk_ksyms[nchunk_ksyms++] = rec.ksym.addr;
			break;
		default:
			primary = 1;
		}
		if (primary) {
			if (!want)
				abort();
			if (rec.type == USTACK_TRACE_END) {
				/* totals only the reader can check against the file */
				log_[ri].rec.end.stacks = nstacks;
				log_[ri].rec.end.file_maps = nfiles;
				log_[ri].rec.end.chunks = (uint64_t)chunk + 1;
			}
			if (!same_primary(&rec, want))
				abort();
			if (rec.type == USTACK_TRACE_EVENT && rec.event.kstack_id != USTACK_TRACE_NO_STACK) {
				struct ustack_trace_stack st;

				if (ustack_trace_reader__stack(r, USTACK_TRACE_KSTACK, rec.event.kstack_id, &st) ||
				    !same_stack(&st))
					abort();
			}
			if (rec.type == USTACK_TRACE_USER_STACK && rec.user_stack.stack_id != USTACK_TRACE_NO_STACK) {
				struct ustack_trace_stack st;

				if (ustack_trace_reader__stack(r, USTACK_TRACE_USTACK, rec.user_stack.stack_id, &st) ||
				    !same_stack(&st))
					abort();
				for (uint32_t f = 0; f < st.nr; f++) {
					struct ustack_file_map fm;

					if (st.frames[f].file_id &&
					    (ustack_trace_reader__file_map(r, st.frames[f].file_id, &fm) ||
					     !same_file_map(&fm)))
						abort();
				}
			}
		}
		if (ustack_trace_stitcher__push(sti, &rec))
			abort();
		while (ustack_trace_stitcher__pop(sti, &out)) {
			if (!primary)
				abort(); /* only EVENT, USER_STACK and LOST resolve events */
			st_add(&got_st, &ngot_st, &capgot_st, ri, &out);
		}
		if (primary)
			ri++;
	}
	if (ret != 0 || ri != nlog)
		abort();
	if (ustack_trace_stitcher__push(sti, NULL))
		abort();
	while (ustack_trace_stitcher__pop(sti, &out))
		st_add(&got_st, &ngot_st, &capgot_st, nlog, &out);
	ustack_trace_stitcher__free(sti);

	/* lookups after the end agree with the definitions */
	for (int i = 0; i < 8; i++) {
		struct ustack_trace_event_desc d;
		int e = ustack_trace_reader__event_desc(r, event_ids[i], &d);

		if (descs[i].defined ? e || !same_desc(&d, &descs[i].d) : e != -ENOENT)
			abort();
	}
	for (int i = 0; i < NFILES; i++) {
		struct ustack_file_map fm;
		int e = ustack_trace_reader__file_map(r, file_ids[i], &fm);

		if (seen_files[i] ? e || !same_file_map(&fm) : e != -ENOENT)
			abort();
	}

	expected_stitching();
	if (nwant_st != ngot_st)
		abort();
	if (nwant_st) {
		qsort(want_st, nwant_st, sizeof(*want_st), st_cmp);
		qsort(got_st, ngot_st, sizeof(*got_st), st_cmp);
	}
	for (size_t i = 0; i < nwant_st; i++)
		if (st_cmp(&want_st[i], &got_st[i]))
			abort();
}

static int quiet(enum ustack_print_level l, const char *fmt, va_list ap)
{
	(void)l; (void)fmt; (void)ap;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size, 0 };
	struct ustack_trace_writer_opts wo = { .sz = sizeof(wo), .get_stack = get_stack,
					       .get_file_map = get_file_map };
	/* every type, PYFUNC included */
	struct ustack_trace_reader_opts ro = { .sz = sizeof(ro),
					       .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_trace_record hrec;
	struct ustack_trace_header *h = &hrec.header;
	struct ustack_trace_writer *w;
	struct ustack_trace_reader *r;
	uint8_t mode;
	off_t len;
	void *map;
	int fd;

	ustack_set_print(quiet);
	nstrs = nlog = nwant_st = ngot_st = nchunk_ksyms = 0;
	memset(descs, 0, sizeof(descs));
	memset(&mst, 0, sizeof(mst));
	have_time = 0;

	mode = u8(&in);
	use_ksym_cb = mode & 1;
	wo.get_ksym = use_ksym_cb ? get_ksym : NULL;
	wo.chunk_size = (uint32_t)fixed(&in, 2);
	memset(&hrec, 0, sizeof(hrec));
	hrec.type = USTACK_TRACE_HEADER;
	h->clock_id = (uint32_t)num(&in);
	h->realtime_ns = num(&in);
	h->clock_ns = num(&in);
	h->hostname = str(&in);
	h->release = str(&in);
	h->machine = str(&in);
	h->cmdline = str(&in);
	h->version = str(&in);
	read_prelude(&in);

	fd = memfd_create("fuzz_trace_roundtrip", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	w = ustack_trace_writer__open_fd(fd, h, &wo);
	if (!w)
		abort();
	log_rec(&hrec);
	for (int op = 0; op < MAX_OPS && in.pos < in.n; op++)
		run_op(w, &in);
	{
		struct ustack_trace_record end;

		memset(&end, 0, sizeof(end));
		end.type = USTACK_TRACE_END;
		end.end = mst; /* stacks, file_maps and chunks are filled in while reading */
		end.end.bytes = end.end.event_bytes = end.end.user_stack_bytes = end.end.def_bytes = 0;
		log_rec(&end);
	}
	if (ustack_trace_writer__close(w))
		abort();

	len = lseek(fd, 0, SEEK_END);
	if (len <= 0)
		abort();
	if (mode & 2) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		r = ustack_trace_reader__open(path, &ro);
		if (!r)
			abort();
		read_back(r);
		ustack_trace_reader__close(r);
	} else {
		map = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			abort();
		r = ustack_trace_reader__open_mem(map, (size_t)len, &ro);
		if (!r)
			abort();
		read_back(r);
		ustack_trace_reader__close(r);
		munmap(map, (size_t)len);
	}
	close(fd);
	for (size_t i = 0; i < nstrs; i++)
		free(strs[i]);
	return 0;
}
