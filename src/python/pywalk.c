// SPDX-License-Identifier: MIT
/*
 * The walk: runtime -> interpreters -> thread states -> current frame ->
 * previous ..., each frame's code object -> qualname, file, line. Every
 * word comes through the caller's read callback from a process that may
 * be changing or hostile: each list is bounded and checked for loops, each
 * object's type pointer must be the interpreter's own type object, each
 * length is bounded before anything is read with it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/pyproc.h"

/* Frames visited by one ustack_py_proc__threads() call, all threads
 * together: a process of 4096 threads 64 deep; what is past it is
 * reported (stop = -E2BIG), so a hostile image of many threads sharing
 * one long chain cannot make a call slow */
#define PY_WALK_BUDGET (1u << 18)
#define PY_LINETABLE_MAX (1u << 20)
#define PY_SET_SLOTS 8192 /* > USTACK_PY_MAX_THREADS and 2 * USTACK_PY_MAX_FRAMES */
#define PY_CODE_CACHE 64

#define py_code ustack_py_code /* the public struct: one reader for walk and recorder */

/* A set of addresses, emptied in O(1) by a generation count: loops in the
 * thread and frame lists */
struct py_set {
	uint64_t key[PY_SET_SLOTS];
	uint32_t gen[PY_SET_SLOTS];
	uint32_t cur;
	unsigned int n;
};

struct py_walk {
	const struct ustack_py_proc *p;
	ustack_py_read_fn read;
	void *ctx;
	struct py_code *codes;
	struct py_set seen;
	unsigned int budget;
};

static void set_clear(struct py_set *s)
{
	s->cur++;
	s->n = 0;
}

/* 1: added, 0: present already, -E2BIG: full */
static int set_add(struct py_set *s, uint64_t key)
{
	unsigned int i = (unsigned int)((key * 0x9e3779b97f4a7c15ULL) >> 51) % PY_SET_SLOTS;

	if (s->n >= PY_SET_SLOTS / 2)
		return -E2BIG;
	for (;; i = (i + 1) % PY_SET_SLOTS) {
		if (s->gen[i] != s->cur) {
			s->gen[i] = s->cur;
			s->key[i] = key;
			s->n++;
			return 1;
		}
		if (s->key[i] == key)
			return 0;
	}
}

static uint64_t u64_at(const uint8_t *buf, uint64_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

static int rd(struct py_walk *w, uint64_t addr, void *buf, size_t len)
{
	if (!addr || addr + len < addr)
		return -EFAULT;
	return w->read(w->ctx, addr, buf, len) ? -EFAULT : 0;
}

static int rd_u64(struct py_walk *w, uint64_t addr, uint64_t *v)
{
	return rd(w, addr, v, sizeof(*v));
}

static size_t put_utf8(char *out, size_t room, uint32_t c)
{
	uint8_t b[4];
	size_t n;

	if (c == 0 || c > 0x10ffff)
		c = '?'; /* a NUL would end the name early; past Unicode: not a char */
	if (c < 0x80) { b[0] = c; n = 1; }
	else if (c < 0x800) { b[0] = 0xc0 | c >> 6; b[1] = 0x80 | (c & 0x3f); n = 2; }
	else if (c < 0x10000) { b[0] = 0xe0 | c >> 12; b[1] = 0x80 | (c >> 6 & 0x3f); b[2] = 0x80 | (c & 0x3f); n = 3; }
	else { b[0] = 0xf0 | c >> 18; b[1] = 0x80 | (c >> 12 & 0x3f); b[2] = 0x80 | (c >> 6 & 0x3f); b[3] = 0x80 | (c & 0x3f); n = 4; }
	if (n > room)
		return 0;
	memcpy(out, b, n);
	return n;
}

/* A str object (compact: every name and file name of a code object is)
 * into @out as UTF-8, cut with "..." when longer than @cap - 1 bytes */
static int read_str(struct py_walk *w, uint64_t addr, char *out, size_t cap)
{
	const struct ustack_py_layout *l = &w->p->lay;
	uint8_t hdr[128], data[4 * USTACK_PY_FILE_MAX];
	uint32_t state, kind;
	int64_t length;
	size_t n, o = 0, i;

	if (l->str_ascii_size > sizeof(hdr) || rd(w, addr, hdr, l->str_ascii_size))
		return -EFAULT;
	if (w->p->str_type && u64_at(hdr, l->ob_type) != w->p->str_type)
		return -EBADMSG;
	memcpy(&length, hdr + l->str_length, sizeof(length));
	memcpy(&state, hdr + l->str_state, sizeof(state));
	kind = state >> 2 & 7;
	if (length < 0 || !(state & 1u << 5) || (kind != 1 && kind != 2 && kind != 4) ||
	    ((state & 1u << 6) && kind != 1))
		return -EBADMSG; /* not compact, or no such kind: not a name */
	n = (uint64_t)length < cap - 1 ? (size_t)length : cap - 1;
	if (rd(w, addr + ((state & 1u << 6) ? l->str_ascii_size : l->str_compact_size), data, n * kind))
		return -EFAULT;
	for (i = 0; i < n; i++) {
		uint32_t c = kind == 1 ? data[i] : kind == 2 ? (uint32_t)data[2 * i] | data[2 * i + 1] << 8 :
			     (uint32_t)data[4 * i] | data[4 * i + 1] << 8 | data[4 * i + 2] << 16 |
			     (uint32_t)data[4 * i + 3] << 24;
		size_t k = put_utf8(out + o, cap - 4 - o, c);

		if (!k)
			break;
		o += k;
	}
	if (i < (uint64_t)length) { /* o <= cap - 4: "..." and the NUL fit */
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = 0;
	return 0;
}

static void read_linetable(struct py_walk *w, uint64_t addr, struct py_code *c)
{
	const struct ustack_py_layout *l = &w->p->lay;
	uint8_t hdr[64];
	int64_t size;

	if (l->bytes_sval > sizeof(hdr) || rd(w, addr, hdr, l->bytes_sval))
		return;
	if (w->p->bytes_type && u64_at(hdr, l->ob_type) != w->p->bytes_type)
		return;
	memcpy(&size, hdr + l->var_ob_size, sizeof(size));
	if (size <= 0 || size > PY_LINETABLE_MAX)
		return;
	c->table = malloc(size);
	if (c->table && rd(w, addr + l->bytes_sval, c->table, size)) {
		free(c->table);
		c->table = NULL;
	}
	if (c->table)
		c->table_len = size;
}

static int load_code(struct py_walk *w, uint64_t addr, struct py_code *c)
{
	const struct ustack_py_layout *l = &w->p->lay;
	uint8_t buf[256];
	int32_t i32;
	int err;

	if (l->co_span > sizeof(buf) || rd(w, addr, buf, l->co_span))
		return -EFAULT;
	if (w->p->code_type && u64_at(buf, l->ob_type) != w->p->code_type)
		return -EBADMSG;
	memcpy(&c->ncode, buf + l->var_ob_size, sizeof(c->ncode));
	memcpy(&i32, buf + l->co_firstlineno, sizeof(i32));
	c->firstlineno = i32;
	c->firsttraceable = 0;
	if (l->co_firsttraceable != USTACK_PY_NO_FIELD) {
		memcpy(&i32, buf + l->co_firsttraceable, sizeof(i32));
		c->firsttraceable = i32;
	}
	if (c->ncode < 0 || c->ncode > (1 << 28) || c->firsttraceable < 0 ||
	    c->firsttraceable > c->ncode)
		return -EBADMSG;
	err = read_str(w, u64_at(buf, l->co_qualname), c->func, sizeof(c->func));
	if (!err)
		err = read_str(w, u64_at(buf, l->co_filename), c->file, sizeof(c->file));
	if (err)
		return err;
	read_linetable(w, u64_at(buf, l->co_linetable), c);
	return 0;
}

static struct py_code *code_of(struct py_walk *w, uint64_t addr)
{
	struct py_code *c = &w->codes[(addr >> 4) % PY_CODE_CACHE];

	if (c->addr == addr)
		return c;
	free(c->table);
	memset(c, 0, sizeof(*c));
	c->addr = addr;
	c->err = load_code(w, addr, c);
	return c;
}

static uint64_t svarint(uint64_t v)
{
	return (v & 1) ? -(v >> 1) : v >> 1;
}

int ustack_py_line_of(const uint8_t *tab, size_t len, int firstlineno, int64_t addrq, int *line)
{
	int64_t ln = firstlineno, addr = 0;
	size_t p = 0;

	if (addrq < 0) { /* a frame not started yet: CPython says its first line */
		*line = firstlineno;
		return 0;
	}
	while (p < len) {
		uint8_t b = tab[p];
		unsigned int code = b >> 3 & 15;
		size_t next = p + 1;
		int64_t delta = 0;

		if (!(b & 0x80))
			return -EBADMSG;
		while (next < len && !(tab[next] & 0x80))
			next++;
		if (code == 13 || code == 14) { /* no columns, long form: svarint line delta first */
			uint64_t v = 0;
			size_t q = p + 1;
			unsigned int shift = 0;

			do {
				if (q >= next || shift > 30)
					return -EBADMSG;
				v |= (uint64_t)(tab[q] & 63) << shift;
				shift += 6;
			} while (tab[q++] & 64);
			delta = (int64_t)svarint(v);
		} else if (code >= 10 && code <= 12) {
			delta = code - 10;
		}
		ln += delta;
		if (ln < -(1LL << 31) || ln > (1LL << 31) - 1)
			return -EBADMSG;
		addr += ((b & 7) + 1) * 2;
		if (addrq < addr) {
			*line = code == 15 ? 0 : (int)ln;
			return 0;
		}
		p = next;
	}
	return -ENOENT;
}

static void frame_line(const struct py_code *c, uint64_t code, uint64_t instr,
		       const struct ustack_py_layout *l, struct ustack_py_frame *f)
{
	int64_t addrq = (int64_t)(instr - (code + l->co_code_adaptive));
	int line = 0;

	if ((addrq & 1) || addrq < -2 || addrq >= c->ncode * 2 || !c->table ||
	    ustack_py_line_of(c->table, c->table_len, c->firstlineno, addrq, &line)) {
		f->flags |= USTACK_PY_FRAME_LINE_UNKNOWN;
		line = 0;
	}
	f->line = line;
}

static int push_frame(struct ustack_py_thread *t, int *cap)
{
	if (t->nr == *cap) {
		int ncap = *cap ? *cap * 2 : 16;
		void *nf;

		if (ncap > USTACK_PY_MAX_FRAMES)
			ncap = USTACK_PY_MAX_FRAMES;
		nf = realloc(t->frames, ncap * sizeof(*t->frames));
		if (!nf)
			return -ENOMEM;
		t->frames = nf;
		*cap = ncap;
	}
	memset(&t->frames[t->nr], 0, sizeof(t->frames[0]));
	return 0;
}

/* One frame at @f: appended to @t, skipped (a shim, not started yet) or
 * the reason the chain stops; *@prev: the next older one */
static int walk_one(struct py_walk *w, struct ustack_py_thread *t, int *cap, uint64_t f,
		    uint64_t *prev)
{
	const struct ustack_py_layout *l = &w->p->lay;
	uint8_t buf[256];
	uint64_t code, instr;
	struct py_code *c;
	int owner, err;

	if (l->fr_span > sizeof(buf) || rd(w, f, buf, l->fr_span))
		return -EFAULT;
	*prev = u64_at(buf, l->fr_previous);
	owner = (signed char)buf[l->fr_owner];
	if (l->owner_cstack >= 0 && owner == l->owner_cstack) {
		/* the entry frame a C-level eval call pushes under the first
		 * frame it runs (3.12+) */
		if (t->nr)
			t->frames[t->nr - 1].flags |= USTACK_PY_FRAME_ENTRY;
		if (!t->cstack)
			t->cstack = f; /* a local of that C-level call */
		return 0;
	}
	if (owner < 0 || owner > 3)
		return -EBADMSG;
	code = u64_at(buf, l->fr_code) & l->fr_code_mask;
	instr = u64_at(buf, l->fr_instr);
	c = code_of(w, code);
	if (c->err)
		return c->err;
	/* pushed but not started: CPython's own frame walks skip it too */
	if (owner != l->owner_generator &&
	    (int64_t)(instr - (code + l->co_code_adaptive)) < 2 * (int64_t)c->firsttraceable)
		return 0;
	if (t->nr >= USTACK_PY_MAX_FRAMES)
		return -E2BIG;
	err = push_frame(t, cap);
	if (err)
		return err;
	struct ustack_py_frame *fr = &t->frames[t->nr++];

	memcpy(fr->func, c->func, sizeof(fr->func));
	memcpy(fr->file, c->file, sizeof(fr->file));
	fr->code = code;
	if (l->fr_is_entry != USTACK_PY_NO_FIELD && buf[l->fr_is_entry])
		fr->flags |= USTACK_PY_FRAME_ENTRY;
	frame_line(c, code, instr, l, fr);
	return 0;
}

static void walk_frames(struct py_walk *w, struct ustack_py_thread *t, uint64_t f)
{
	int cap = 0, err = 0;

	set_clear(&w->seen);
	while (f && !err) {
		uint64_t prev = 0;

		if (!w->budget) {
			err = -E2BIG;
			break;
		}
		w->budget--;
		err = set_add(&w->seen, f);
		if (err <= 0) {
			err = err ? err : -ELOOP;
			break;
		}
		err = walk_one(w, t, &cap, f, &prev);
		f = prev;
	}
	t->stop = err;
}

/* The frames of the thread state at @ts into @t */
static int read_thread(struct py_walk *w, uint64_t ts, uint64_t interp, struct ustack_py_thread *t,
		       uint64_t *next)
{
	const struct ustack_py_layout *l = &w->p->lay;
	uint8_t buf[512];
	uint64_t f;

	t->tstate = ts;
	*next = 0;
	if (l->ts_span > sizeof(buf) || rd(w, ts, buf, l->ts_span))
		return t->stop = -EFAULT;
	*next = u64_at(buf, l->ts_next);
	t->native_tid = u64_at(buf, l->ts_native_tid);
	if (u64_at(buf, l->ts_interp) != interp)
		return t->stop = -EBADMSG; /* not a thread state of this interpreter */
	if (l->ts_cframe == USTACK_PY_NO_FIELD) {
		f = u64_at(buf, l->ts_current_frame);
	} else {
		uint64_t cf = u64_at(buf, l->ts_cframe);

		if (cf && rd_u64(w, cf + l->cf_current, &f))
			return t->stop = -EFAULT;
		if (!cf)
			f = 0;
		/* a local of the innermost eval call (the tstate's own
		 * root_cframe when none runs: then no frame either) */
		t->cstack = cf;
	}
	walk_frames(w, t, f);
	return 0;
}

static int grow_threads(struct ustack_py_thread **th, int nr, int *cap)
{
	if (nr == *cap) {
		int ncap = *cap ? *cap * 2 : 8;
		void *n = realloc(*th, ncap * sizeof(**th));

		if (!n)
			return -ENOMEM;
		*th = n;
		*cap = ncap;
	}
	memset(&(*th)[nr], 0, sizeof((*th)[0]));
	return 0;
}

static int walk_interp(struct py_walk *w, uint64_t interp, int idx, struct ustack_py_thread **th,
		       int *nr, int *cap)
{
	uint64_t ts;
	int n = 0, err;

	if (rd_u64(w, interp + w->p->lay.is_threads_head, &ts))
		return -EFAULT;
	/* the frame walks clear w->seen: the thread list's set is its own */
	struct py_set *threads_seen = calloc(1, sizeof(*threads_seen));

	if (!threads_seen)
		return -ENOMEM;
	threads_seen->cur = 1;
	for (; ts && n < USTACK_PY_MAX_THREADS; n++) {
		uint64_t next;

		if (set_add(threads_seen, ts) <= 0)
			break; /* a loop: each thread state listed once already */
		err = grow_threads(th, *nr, cap);
		if (err) {
			free(threads_seen);
			return err;
		}
		(*th)[*nr].interp = idx;
		read_thread(w, ts, interp, &(*th)[(*nr)++], &next);
		ts = next;
	}
	free(threads_seen);
	if (ts && n == USTACK_PY_MAX_THREADS) {
		/* more thread states than are read: said by one entry without
		 * frames, the first thread state left out, stop -E2BIG */
		err = grow_threads(th, *nr, cap);
		if (err)
			return err;
		(*th)[*nr].interp = idx;
		(*th)[*nr].tstate = ts;
		(*th)[(*nr)++].stop = -E2BIG;
	}
	return 0;
}

int ustack_py_proc__threads(struct ustack_py_proc *p, ustack_py_read_fn read, void *ctx,
			    struct ustack_py_thread **threads, int *nr, char *err, size_t errlen)
{
	struct py_walk *w = calloc(1, sizeof(*w));
	uint64_t interp, seen[USTACK_PY_MAX_INTERPS];
	int cap = 0, e = 0, i;

	*threads = NULL;
	*nr = 0;
	if (!w || !(w->codes = calloc(PY_CODE_CACHE, sizeof(*w->codes)))) {
		free(w);
		snprintf(err, errlen, "%s: out of memory", p->desc);
		return -ENOMEM;
	}
	w->p = p;
	w->read = read;
	w->ctx = ctx;
	w->budget = PY_WALK_BUDGET;
	if (rd_u64(w, p->runtime + p->lay.rt_interp_head, &interp)) {
		snprintf(err, errlen, "%s: _PyRuntime at 0x%llx cannot be read", p->desc,
			 (unsigned long long)p->runtime);
		e = -EFAULT;
	}
	for (i = 0; !e && interp && i < USTACK_PY_MAX_INTERPS; i++) {
		for (int j = 0; j < i; j++)
			if (seen[j] == interp)
				interp = 0; /* the list loops: every interpreter is read */
		if (!interp)
			break;
		seen[i] = interp;
		e = walk_interp(w, interp, i, threads, nr, &cap);
		if (!e && rd_u64(w, interp + p->lay.is_next, &interp))
			break; /* a torn list: the interpreters read so far stand */
	}
	for (i = 0; i < PY_CODE_CACHE; i++)
		free(w->codes[i].table);
	free(w->codes);
	free(w);
	if (e && e != -EFAULT)
		snprintf(err, errlen, "%s: %s", p->desc, strerror(-e));
	if (e) {
		ustack_py_threads_free(*threads, *nr);
		*threads = NULL;
		*nr = 0;
	}
	return e;
}

int ustack_py_proc__read_code(const struct ustack_py_proc *p, ustack_py_read_fn read, void *ctx,
			      uint64_t addr, struct ustack_py_code *c)
{
	/* the walk's loop sets are not used: only its reader */
	struct py_walk *w = malloc(sizeof(*w));

	memset(c, 0, sizeof(*c));
	c->addr = addr;
	if (!w)
		return c->err = -ENOMEM;
	w->p = p;
	w->read = read;
	w->ctx = ctx;
	c->err = load_code(w, addr, c);
	free(w);
	return c->err;
}

int ustack_py_code__line(const struct ustack_py_proc *p, const struct ustack_py_code *c,
			 uint64_t instr, int generator, int *line)
{
	struct ustack_py_frame f = { .flags = 0 };

	*line = 0;
	if (c->err)
		return -EBADMSG;
	if (!generator && (int64_t)(instr - (c->addr + p->lay.co_code_adaptive)) <
				  2 * (int64_t)c->firsttraceable)
		return -ENOENT;
	frame_line(c, c->addr, instr, &p->lay, &f);
	*line = f.line;
	return f.flags & USTACK_PY_FRAME_LINE_UNKNOWN ? -EBADMSG : 0;
}

void ustack_py_code__release(struct ustack_py_code *c)
{
	free(c->table);
	c->table = NULL;
}

void ustack_py_threads_free(struct ustack_py_thread *threads, int nr)
{
	for (int i = 0; threads && i < nr; i++)
		free(threads[i].frames);
	free(threads);
}
