// SPDX-License-Identifier: MIT
/*
 * Trace writer (docs/trace-format.md). Records are encoded into the current
 * chunk's payload buffer; the chunk goes out with one writev() once it
 * reaches the configured size, so an I/O error or a crash leaves at most one
 * partial chunk at the end of the file.
 *
 * Self-containment: per chunk, sets of the (kind, stack id), file ids and
 * kernel symbols already defined in it. A record that refers to something
 * not yet in the sets first gets the definition (asked from the caller's
 * callbacks) emitted in front of it. A "group" (definitions + the record)
 * never straddles chunks: the chunk is closed only between groups.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/log.h"
#include "common/crc32.h"
#include "common/opts.h"
#include "trace/trace.h"

struct tbuf {
	uint8_t *p;
	size_t len, cap;
};

struct wdesc {
	struct ustack_trace_event_desc d;
	char *name;
};

struct ustack_trace_writer {
	int fd, own_fd;
	int err;            /* sticky: first error */
	uint32_t flags;
	uint32_t chunk_size;
	ustack_trace_get_stack_fn get_stack;
	ustack_trace_get_file_map_fn get_file_map;
	ustack_trace_get_ksym_fn get_ksym;
	void *ctx;

	struct tbuf chunk;  /* payload of the current chunk */
	struct tbuf rec;    /* body of the record being encoded */
	struct tbuf stk;    /* body of a STACK being encoded */
	uint32_t nrec, seq;
	int started;        /* the current chunk has begun (EVENT_DESCs written) */
	uint64_t prev_time;

	struct ustack_u64map *chunk_stacks, *chunk_files, *chunk_ksyms;
	struct ustack_u64map *all_stacks, *all_files, *desc_idx;
	uint64_t *pend_files;   /* file ids to define before the STACK in stk */
	size_t npend, pend_cap;
	uint64_t *ips;
	size_t ips_cap;

	struct wdesc *descs;
	size_t ndescs;

	struct ustack_trace_stats st;
	int have_time;
};

/* ---- byte buffers ------------------------------------------------------ */

static int tb_reserve(struct tbuf *b, size_t n)
{
	size_t ncap;
	uint8_t *np;

	if (n <= b->cap - b->len)
		return 0;
	ncap = b->cap ? b->cap : 256;
	while (ncap - b->len < n) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	np = realloc(b->p, ncap);
	if (!np)
		return -ENOMEM;
	b->p = np;
	b->cap = ncap;
	return 0;
}

/* The put helpers reserve first; a failed reservation is recorded in the
 * writer by the caller checking tb_ok(). To keep encoders linear we reserve
 * generously per field and let the final check catch OOM. */
struct enc {
	struct tbuf *b;
	int err;
};

static void put_u8(struct enc *e, uint8_t v)
{
	if (e->err || (e->err = tb_reserve(e->b, 1)))
		return;
	e->b->p[e->b->len++] = v;
}

static void put_var(struct enc *e, uint64_t v)
{
	if (e->err || (e->err = tb_reserve(e->b, TRACE_VARINT_MAX)))
		return;
	e->b->len += trace_put_varint(e->b->p + e->b->len, v);
}

static void put_zz(struct enc *e, int64_t v)
{
	put_var(e, trace_zigzag(v));
}

static void put_raw(struct enc *e, const void *p, size_t n)
{
	put_var(e, n);
	if (e->err || (e->err = tb_reserve(e->b, n)))
		return;
	if (n)
		memcpy(e->b->p + e->b->len, p, n);
	e->b->len += n;
}

static void put_str(struct enc *e, const char *s)
{
	put_raw(e, s ? s : "", s ? strlen(s) : 0);
}

static void put_time(struct ustack_trace_writer *w, struct enc *e, uint64_t t)
{
	put_zz(e, (int64_t)(t - w->prev_time));
	w->prev_time = t;
	if (!w->have_time || t < w->st.first_time)
		w->st.first_time = t;
	if (!w->have_time || t > w->st.last_time)
		w->st.last_time = t;
	w->have_time = 1;
}

static void put_ids(struct enc *e, uint32_t pid, uint32_t tid)
{
	put_var(e, pid);
	put_zz(e, (int64_t)tid - (int64_t)pid);
}

/* ---- chunks ------------------------------------------------------------ */

static int set_err(struct ustack_trace_writer *w, int err)
{
	if (!w->err)
		w->err = err;
	return err;
}

static int write_all(int fd, struct iovec *iov, int cnt)
{
	while (cnt) {
		ssize_t n = writev(fd, iov, cnt);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		while (cnt && (size_t)n >= iov->iov_len) {
			n -= iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= n;
		}
	}
	return 0;
}

static void st_u32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static int flush_chunk(struct ustack_trace_writer *w)
{
	uint8_t hdr[TRACE_CHUNK_HDR_SIZE];
	struct iovec iov[2];
	uint32_t crc;
	int err;

	if (w->err)
		return w->err;
	if (!w->nrec)
		return 0;
	memcpy(hdr, TRACE_CHUNK_MAGIC, 4);
	st_u32(hdr + 4, w->seq);
	st_u32(hdr + 8, (uint32_t)w->chunk.len);
	st_u32(hdr + 12, w->nrec);
	crc = ustack_crc32(0, hdr, 16);
	crc = ustack_crc32(crc, w->chunk.p, w->chunk.len);
	st_u32(hdr + 16, crc);
	iov[0] = (struct iovec){ hdr, sizeof(hdr) };
	iov[1] = (struct iovec){ w->chunk.p, w->chunk.len };
	err = write_all(w->fd, iov, 2);
	if (err)
		return set_err(w, err);
	w->st.bytes += sizeof(hdr) + w->chunk.len;
	w->st.chunks++;
	w->seq++;
	w->chunk.len = 0;
	w->nrec = 0;
	w->started = 0;
	return 0;
}

/* Append the record whose body is in @body to the chunk. */
static int emit(struct ustack_trace_writer *w, uint8_t type, const struct tbuf *body)
{
	struct enc e = { &w->chunk, 0 };
	size_t before = w->chunk.len;

	if (w->err)
		return w->err;
	put_u8(&e, type);
	put_var(&e, body->len);
	if (!e.err && !(e.err = tb_reserve(&w->chunk, body->len))) {
		memcpy(w->chunk.p + w->chunk.len, body->p, body->len);
		w->chunk.len += body->len;
	}
	if (e.err)
		return set_err(w, e.err);
	w->nrec++;
	switch (type) {
	case USTACK_TRACE_EVENT:
		w->st.event_bytes += w->chunk.len - before;
		break;
	case USTACK_TRACE_USER_STACK:
		w->st.user_stack_bytes += w->chunk.len - before;
		break;
	case USTACK_TRACE_STACK: case USTACK_TRACE_FILE_MAP:
	case USTACK_TRACE_KSYM: case USTACK_TRACE_EVENT_DESC: case USTACK_TRACE_JITSYM:
	case USTACK_TRACE_FILE_CONTENT: case USTACK_TRACE_PYFUNC:
		w->st.def_bytes += w->chunk.len - before;
		break;
	}
	return 0;
}

static struct enc rec_begin(struct ustack_trace_writer *w)
{
	w->rec.len = 0;
	return (struct enc){ &w->rec, 0 };
}

static int rec_end(struct ustack_trace_writer *w, struct enc *e, uint8_t type)
{
	if (e->err)
		return set_err(w, e->err);
	return emit(w, type, &w->rec);
}

static int emit_desc(struct ustack_trace_writer *w, const struct ustack_trace_event_desc *d)
{
	struct enc e = rec_begin(w);

	put_var(&e, d->id);
	put_var(&e, d->type);
	put_var(&e, d->flags);
	put_var(&e, d->period);
	put_str(&e, d->name);
	return rec_end(w, &e, USTACK_TRACE_EVENT_DESC);
}

/* Start of a group of records: begin a chunk if none is open. */
static int group_begin(struct ustack_trace_writer *w)
{
	if (w->err)
		return w->err;
	if (w->started)
		return 0;
	w->started = 1;
	w->prev_time = 0;
	ustack_u64map__clear(w->chunk_stacks);
	ustack_u64map__clear(w->chunk_files);
	ustack_u64map__clear(w->chunk_ksyms);
	for (size_t i = 0; i < w->ndescs; i++) {
		int err = emit_desc(w, &w->descs[i].d);

		if (err)
			return err;
	}
	return 0;
}

static int group_end(struct ustack_trace_writer *w, int err)
{
	if (err)
		return err;
	if (w->chunk.len >= w->chunk_size)
		return flush_chunk(w);
	return 0;
}

/* ---- definitions ------------------------------------------------------- */

static int emit_file_map(struct ustack_trace_writer *w, uint64_t file_id)
{
	struct ustack_file_map fm;
	struct enc e;
	int err;

	if (!w->get_file_map)
		return -EINVAL;
	memset(&fm, 0, sizeof(fm));
	err = w->get_file_map(w->ctx, file_id, &fm);
	if (err)
		return err < 0 ? err : -EINVAL;
	if (fm.build_id_size > TRACE_MAX_BUILD_ID)
		return -EINVAL;
	e = rec_begin(w);
	put_var(&e, file_id);
	put_var(&e, fm.kind);
	put_var(&e, fm.flags);
	put_var(&e, fm.build_id_source);
	put_raw(&e, fm.build_id, fm.build_id_size);
	put_var(&e, fm.dev_major);
	put_var(&e, fm.dev_minor);
	put_var(&e, fm.inode);
	put_var(&e, fm.map_start);
	put_str(&e, fm.path);
	put_str(&e, fm.debuglink);
	put_var(&e, fm.debuglink ? fm.debuglink_crc : 0);
	err = rec_end(w, &e, USTACK_TRACE_FILE_MAP);
	if (err)
		return err;
	if (ustack_u64map__put(w->chunk_files, file_id, 1))
		return set_err(w, -ENOMEM);
	if (!ustack_u64map__get(w->all_files, file_id, NULL)) {
		if (ustack_u64map__put(w->all_files, file_id, 1))
			return set_err(w, -ENOMEM);
		w->st.file_maps++;
	}
	return 0;
}

static int emit_ksym(struct ustack_trace_writer *w, const struct ustack_trace_ksym *k)
{
	struct enc e = rec_begin(w);
	int err;

	put_var(&e, k->addr);
	put_var(&e, k->size);
	put_str(&e, k->name);
	put_str(&e, k->module);
	err = rec_end(w, &e, USTACK_TRACE_KSYM);
	if (!err && ustack_u64map__put(w->chunk_ksyms, k->addr, 1))
		err = set_err(w, -ENOMEM);
	return err;
}

static int pend_file(struct ustack_trace_writer *w, uint64_t id)
{
	for (size_t i = 0; i < w->npend; i++)
		if (w->pend_files[i] == id)
			return 0;
	if (w->npend == w->pend_cap) {
		size_t ncap = w->pend_cap ? w->pend_cap * 2 : 16;
		uint64_t *np = realloc(w->pend_files, ncap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		w->pend_files = np;
		w->pend_cap = ncap;
	}
	w->pend_files[w->npend++] = id;
	return 0;
}

static uint64_t stack_key(uint32_t kind, uint32_t id)
{
	return (uint64_t)kind << 32 | id;
}

/* Emit STACK (kind, id) and what it needs, unless this chunk has it. */
static int need_stack(struct ustack_trace_writer *w, uint32_t kind, uint32_t id)
{
	struct ustack_trace_stack st;
	struct enc e = { &w->stk, 0 };
	uint64_t key = stack_key(kind, id);
	size_t nips = 0;
	int err;

	if (ustack_u64map__get(w->chunk_stacks, key, NULL))
		return 0;
	if (!w->get_stack)
		return -EINVAL;
	memset(&st, 0, sizeof(st));
	err = w->get_stack(w->ctx, kind, id, &st);
	if (err)
		return err < 0 ? err : -EINVAL;
	if (st.nr > USTACK_TRACE_MAX_FRAMES ||
	    (st.nr && (kind == USTACK_TRACE_KSTACK ? !st.ips : !st.frames)))
		return -EINVAL;

	w->stk.len = 0;
	w->npend = 0;
	put_var(&e, id);
	put_var(&e, kind);
	put_var(&e, st.nr);
	if (kind == USTACK_TRACE_KSTACK) {
		uint64_t prev = 0;

		if (w->get_ksym && st.nr > w->ips_cap) {
			uint64_t *np = realloc(w->ips, st.nr * sizeof(*np));

			if (!np)
				return set_err(w, -ENOMEM);
			w->ips = np;
			w->ips_cap = st.nr;
		}
		for (uint32_t i = 0; i < st.nr; i++) {
			put_zz(&e, (int64_t)(st.ips[i] - prev));
			prev = st.ips[i];
			if (w->get_ksym)
				w->ips[nips++] = st.ips[i];
		}
	} else {
		uint64_t prev_file = 0;

		for (uint32_t i = 0; i < st.nr; i++) {
			const struct ustack_trace_frame *f = &st.frames[i];
			uint8_t info = (f->method & TRACE_FR_METHOD_MASK) |
				       (f->flags & USTACK_TRACE_FRAME_EXACT_PC ? TRACE_FR_EXACT_PC : 0);

			if (i && f->file_id == prev_file)
				info |= TRACE_FR_SAME_FILE;
			put_u8(&e, info);
			if (!(info & TRACE_FR_SAME_FILE)) {
				put_var(&e, f->file_id);
				if (f->file_id && !ustack_u64map__get(w->chunk_files, f->file_id, NULL) &&
				    pend_file(w, f->file_id))
					return set_err(w, -ENOMEM);
			}
			put_var(&e, f->offset);
			prev_file = f->file_id;
		}
	}
	if (e.err)
		return set_err(w, e.err);

	/* The stack's own pointers may be dead now: only copies are used. */
	for (size_t i = 0; i < w->npend; i++) {
		err = emit_file_map(w, w->pend_files[i]);
		if (err)
			return err;
	}
	for (size_t i = 0; i < nips; i++) {
		struct ustack_trace_ksym ks;

		memset(&ks, 0, sizeof(ks));
		if (w->get_ksym(w->ctx, w->ips[i], &ks))
			continue;
		if (ustack_u64map__get(w->chunk_ksyms, ks.addr, NULL))
			continue;
		err = emit_ksym(w, &ks);
		if (err)
			return err;
	}
	err = emit(w, USTACK_TRACE_STACK, &w->stk);
	if (err)
		return err;
	if (ustack_u64map__put(w->chunk_stacks, key, 1))
		return set_err(w, -ENOMEM);
	if (!ustack_u64map__get(w->all_stacks, key, NULL)) {
		if (ustack_u64map__put(w->all_stacks, key, 1))
			return set_err(w, -ENOMEM);
		w->st.stacks++;
	}
	return 0;
}

/* ---- public API -------------------------------------------------------- */

static int emit_header(struct ustack_trace_writer *w, const struct ustack_trace_header *h)
{
	struct enc e = rec_begin(w);

	put_var(&e, h->clock_id);
	put_var(&e, h->realtime_ns);
	put_var(&e, h->clock_ns);
	put_str(&e, h->hostname);
	put_str(&e, h->release);
	put_str(&e, h->machine);
	put_str(&e, h->cmdline);
	put_str(&e, h->version);
	return rec_end(w, &e, USTACK_TRACE_HEADER);
}

static void writer_free(struct ustack_trace_writer *w)
{
	if (w->own_fd && w->fd >= 0)
		close(w->fd);
	free(w->chunk.p);
	free(w->rec.p);
	free(w->stk.p);
	free(w->pend_files);
	free(w->ips);
	for (size_t i = 0; i < w->ndescs; i++)
		free(w->descs[i].name);
	free(w->descs);
	ustack_u64map__free(w->chunk_stacks);
	ustack_u64map__free(w->chunk_files);
	ustack_u64map__free(w->chunk_ksyms);
	ustack_u64map__free(w->all_stacks);
	ustack_u64map__free(w->all_files);
	ustack_u64map__free(w->desc_idx);
	free(w);
}

static struct ustack_trace_writer *writer_new(int fd, int own, const struct ustack_trace_header *hdr,
					      const struct ustack_trace_writer_opts *opts)
{
	struct ustack_trace_writer *w;
	uint8_t fh[TRACE_FILE_HDR_SIZE];
	struct iovec iov;
	int err;

	if (!hdr || !OPTS_VALID(opts, struct ustack_trace_writer_opts)) {
		if (own)
			close(fd);
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		if (own)
			close(fd);
		errno = ENOMEM;
		return NULL;
	}
	w->fd = fd;
	w->own_fd = own;
	if (!(w->chunk_stacks = ustack_u64map__new()) || !(w->chunk_files = ustack_u64map__new()) ||
	    !(w->chunk_ksyms = ustack_u64map__new()) || !(w->all_stacks = ustack_u64map__new()) ||
	    !(w->all_files = ustack_u64map__new()) || !(w->desc_idx = ustack_u64map__new())) {
		writer_free(w);
		errno = ENOMEM;
		return NULL;
	}
	w->chunk_size = USTACK_TRACE_DEF_CHUNK_SIZE;
	if (OPTS_GET(opts, chunk_size, 0))
		w->chunk_size = opts->chunk_size;
	w->flags = OPTS_GET(opts, flags, 0);
	w->get_stack = OPTS_GET(opts, get_stack, NULL);
	w->get_file_map = OPTS_GET(opts, get_file_map, NULL);
	w->get_ksym = OPTS_GET(opts, get_ksym, NULL);
	w->ctx = OPTS_GET(opts, ctx, NULL);
	/* Leave room for one oversized group (a deep STACK and its FILE_MAPs)
	 * on top of a full chunk, under the reader's limit. */
	if (w->chunk_size < TRACE_MIN_CHUNK_SIZE)
		w->chunk_size = TRACE_MIN_CHUNK_SIZE;
	if (w->chunk_size > USTACK_TRACE_MAX_CHUNK_SIZE / 2)
		w->chunk_size = USTACK_TRACE_MAX_CHUNK_SIZE / 2;

	memset(fh, 0, sizeof(fh));
	memcpy(fh, TRACE_FILE_MAGIC, 8);
	fh[8] = USTACK_TRACE_VERSION_MAJOR;
	fh[10] = USTACK_TRACE_VERSION_MINOR;
	st_u32(fh + 12, TRACE_BYTE_ORDER);
	fh[16] = TRACE_WORD_SIZE;
	fh[17] = TRACE_FILE_HDR_SIZE;
	st_u32(fh + 28, ustack_crc32(0, fh, 28));
	iov = (struct iovec){ fh, sizeof(fh) };
	err = write_all(fd, &iov, 1);
	if (!err) {
		w->st.bytes = sizeof(fh);
		w->started = 1; /* HEADER first, then the EVENT_DESCs as they come */
		err = emit_header(w, hdr);
	}
	if (err) {
		writer_free(w);
		errno = -err;
		return NULL;
	}
	return w;
}

struct ustack_trace_writer *ustack_trace_writer__open(const char *path,
						      const struct ustack_trace_header *hdr,
						      const struct ustack_trace_writer_opts *opts)
{
	int fd;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return NULL;
	return writer_new(fd, 1, hdr, opts);
}

struct ustack_trace_writer *ustack_trace_writer__open_fd(int fd, const struct ustack_trace_header *hdr,
							 const struct ustack_trace_writer_opts *opts)
{
	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	return writer_new(fd, 0, hdr, opts);
}

static int same_str(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

int ustack_trace_writer__add_event_desc(struct ustack_trace_writer *w,
					const struct ustack_trace_event_desc *d)
{
	struct wdesc *nd;
	uint64_t idx;
	int err, fresh;

	if (w->err)
		return w->err;
	if (ustack_u64map__get(w->desc_idx, d->id, &idx)) {
		const struct ustack_trace_event_desc *o = &w->descs[idx].d;

		if (o->type == d->type && o->flags == d->flags && o->period == d->period &&
		    same_str(o->name, d->name))
			return 0;
		return -EEXIST;
	}
	nd = realloc(w->descs, (w->ndescs + 1) * sizeof(*nd));
	if (!nd)
		return -ENOMEM;
	w->descs = nd;
	nd = &w->descs[w->ndescs];
	nd->d = *d;
	nd->name = strdup(d->name ? d->name : "");
	if (!nd->name || ustack_u64map__put(w->desc_idx, d->id, w->ndescs)) {
		free(nd->name);
		return -ENOMEM;
	}
	nd->d.name = nd->name;
	w->ndescs++;
	fresh = !w->started;
	err = group_begin(w);
	if (!err && !fresh) /* a fresh chunk already got it from group_begin() */
		err = emit_desc(w, &nd->d);
	return group_end(w, err);
}

int ustack_trace_writer__add_thread(struct ustack_trace_writer *w, const struct ustack_trace_thread *t)
{
	struct enc e;
	int err = group_begin(w);

	if (err)
		return err;
	e = rec_begin(w);
	put_var(&e, t->flags & TRACE_THREAD_FLAGS);
	put_time(w, &e, t->time);
	put_ids(&e, t->pid, t->tid);
	put_str(&e, t->comm);
	return group_end(w, rec_end(w, &e, USTACK_TRACE_THREAD));
}

int ustack_trace_writer__add_event(struct ustack_trace_writer *w, const struct ustack_trace_event *ev)
{
	uint32_t flags = 0;
	struct enc e;
	int err;

	if (w->err)
		return w->err;
	if (!ustack_u64map__get(w->desc_idx, ev->event_id, NULL))
		return -EINVAL;
	err = group_begin(w);
	if (!err && ev->kstack_id != USTACK_TRACE_NO_STACK)
		err = need_stack(w, USTACK_TRACE_KSTACK, ev->kstack_id);
	if (err)
		return err;
	if (ev->kstack_id != USTACK_TRACE_NO_STACK)
		flags |= TRACE_EV_KSTACK;
	if (ev->cookie)
		flags |= TRACE_EV_COOKIE;
	if (ev->flags & USTACK_TRACE_EVENT_HAS_VALUE)
		flags |= TRACE_EV_VALUE;
	if (ev->flags & USTACK_TRACE_EVENT_HAS_ARGS) {
		if (!ev->nr_args || ev->nr_args > USTACK_TRACE_MAX_ARGS)
			return -EINVAL;
		flags |= TRACE_EV_ARGS;
	}
	e = rec_begin(w);
	put_var(&e, flags);
	put_time(w, &e, ev->time);
	put_ids(&e, ev->pid, ev->tid);
	put_var(&e, ev->cpu);
	put_var(&e, ev->event_id);
	if (flags & TRACE_EV_KSTACK)
		put_var(&e, ev->kstack_id);
	if (flags & TRACE_EV_COOKIE) {
		put_var(&e, (uint32_t)ev->cookie);
		put_var(&e, ev->cookie >> 32);
	}
	if (flags & TRACE_EV_VALUE)
		put_var(&e, ev->value);
	if (flags & TRACE_EV_ARGS) {
		put_var(&e, ev->nr_args);
		for (uint32_t i = 0; i < ev->nr_args; i++)
			put_var(&e, ev->args[i]);
	}
	err = rec_end(w, &e, USTACK_TRACE_EVENT);
	if (!err)
		w->st.events++;
	return group_end(w, err);
}

int ustack_trace_writer__add_user_stack(struct ustack_trace_writer *w,
					const struct ustack_trace_user_stack *u)
{
	uint32_t flags = u->stack_id != USTACK_TRACE_NO_STACK ? TRACE_US_STACK : 0;
	struct enc e;
	int err;

	if (w->err)
		return w->err;
	if (!u->cookie)
		return -EINVAL;
	err = group_begin(w);
	if (!err && (flags & TRACE_US_STACK))
		err = need_stack(w, USTACK_TRACE_USTACK, u->stack_id);
	if (err)
		return err;
	e = rec_begin(w);
	put_var(&e, flags);
	put_time(w, &e, u->time);
	put_ids(&e, u->pid, u->tid);
	put_var(&e, u->cpu);
	put_var(&e, (uint32_t)u->cookie);
	put_var(&e, u->cookie >> 32);
	put_var(&e, u->stop_reason);
	if (flags & TRACE_US_STACK)
		put_var(&e, u->stack_id);
	err = rec_end(w, &e, USTACK_TRACE_USER_STACK);
	if (!err)
		w->st.user_stacks++;
	return group_end(w, err);
}

int ustack_trace_writer__add_lost(struct ustack_trace_writer *w, const struct ustack_trace_lost *l)
{
	struct enc e;
	int err = group_begin(w);

	if (err)
		return err;
	e = rec_begin(w);
	put_var(&e, l->what);
	put_time(w, &e, l->time);
	put_var(&e, l->cpu);
	put_var(&e, l->count);
	err = rec_end(w, &e, USTACK_TRACE_LOST);
	if (!err)
		w->st.lost += l->count;
	return group_end(w, err);
}

int ustack_trace_writer__add_ksym(struct ustack_trace_writer *w, const struct ustack_trace_ksym *k)
{
	int err = group_begin(w);

	if (err)
		return err;
	return group_end(w, emit_ksym(w, k));
}

int ustack_trace_writer__add_jitsym(struct ustack_trace_writer *w,
				   const struct ustack_trace_jitsym *j)
{
	struct enc e;
	int err;

	/* the reader stops at a record it finds invalid (trace-format.md,
	 * JITSYM): one such symbol would hide the rest of the trace */
	if (!j || !j->size || j->addr + j->size < j->addr || !j->name || !*j->name)
		return -EINVAL;
	err = group_begin(w);
	if (err)
		return err;
	e = rec_begin(w);
	put_var(&e, j->pid);
	put_var(&e, j->addr);
	put_var(&e, j->size);
	put_str(&e, j->name);
	return group_end(w, rec_end(w, &e, USTACK_TRACE_JITSYM));
}

int ustack_trace_writer__add_pyfunc(struct ustack_trace_writer *w,
				   const struct ustack_trace_pyfunc *f)
{
	struct enc e;
	int err;

	/* as JITSYM: a record the reader refuses would hide the rest */
	if (!w || !f || !f->id || f->id >> (64 - USTACK_TRACE_PY_LINE_BITS) || !f->name ||
	    !*f->name || !f->file || !*f->file)
		return -EINVAL;
	err = group_begin(w);
	if (err)
		return err;
	e = rec_begin(w);
	put_var(&e, f->id);
	put_var(&e, f->pid);
	put_var(&e, f->first_line);
	put_str(&e, f->name);
	put_str(&e, f->file);
	return group_end(w, rec_end(w, &e, USTACK_TRACE_PYFUNC));
}

int ustack_trace_writer__add_file_content(struct ustack_trace_writer *w,
					  const struct ustack_trace_file_content *c)
{
	const uint32_t known = USTACK_TRACE_CONTENT_CACHED | USTACK_TRACE_CONTENT_DEBUG |
			       USTACK_TRACE_CONTENT_TOO_BIG;
	struct enc e;
	int err;

	if (!w || !c || !c->file_id || c->algo != USTACK_TRACE_HASH_SHA256 || (c->flags & ~known))
		return -EINVAL;
	if (w->err)
		return w->err;
	/* a reader refuses content for a file id no FILE_MAP defined before */
	if (!ustack_u64map__get(w->all_files, c->file_id, NULL))
		return -EINVAL;
	err = group_begin(w);
	/* the FILE_MAP in the same chunk too, so that an extract of this
	 * chunk alone still says which file the hash is of */
	if (!err && !ustack_u64map__get(w->chunk_files, c->file_id, NULL))
		err = emit_file_map(w, c->file_id);
	if (err)
		return err;
	e = rec_begin(w);
	put_var(&e, c->file_id);
	put_var(&e, c->flags);
	put_var(&e, c->algo);
	put_raw(&e, c->hash, sizeof(c->hash));
	put_var(&e, c->size);
	return group_end(w, rec_end(w, &e, USTACK_TRACE_FILE_CONTENT));
}

int ustack_trace_writer__flush(struct ustack_trace_writer *w)
{
	return flush_chunk(w);
}

int ustack_trace_writer__stats(const struct ustack_trace_writer *w, struct ustack_trace_stats *st,
			       size_t sz)
{
	if (!w || !st)
		return -EINVAL;
	ustack_copy_out(st, sz, &w->st, sizeof(w->st));
	return 0;
}

int ustack_trace_writer__close(struct ustack_trace_writer *w)
{
	int err;

	if (!w)
		return 0;
	err = group_begin(w);
	if (!err) {
		struct enc e = rec_begin(w);

		put_var(&e, w->st.events);
		put_var(&e, w->st.user_stacks);
		put_var(&e, w->st.stacks);
		put_var(&e, w->st.file_maps);
		put_var(&e, w->st.lost);
		put_var(&e, w->st.chunks + 1);
		put_var(&e, w->st.first_time);
		put_var(&e, w->st.last_time);
		err = rec_end(w, &e, USTACK_TRACE_END);
	}
	if (!err)
		err = flush_chunk(w);
	if (!err && (w->flags & USTACK_TRACE_WRITER_FSYNC) && fsync(w->fd))
		err = -errno;
	if (!err && w->own_fd) {
		int fd = w->fd;

		w->fd = -1;
		if (close(fd))
			err = -errno;
	}
	if (!err)
		err = w->err;
	writer_free(w);
	return err;
}
