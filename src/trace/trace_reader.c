// SPDX-License-Identifier: MIT
/*
 * Trace reader (docs/trace-format.md, section 4.1 lists what makes a file
 * invalid). Chunk by chunk: the whole chunk is read and its CRC checked
 * before its first record is decoded, so damage is reported at the chunk
 * that holds it and nothing from a bad chunk is ever handed out.
 *
 * Definitions (STACK, FILE_MAP, EVENT_DESC, KSYM) are kept for the life of
 * the reader in an arena that never moves, so lookups and the pointers in
 * returned records stay valid until close. The reader also keeps, per chunk,
 * which definitions the chunk itself holds, to enforce self-containment.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/crc32.h"
#include "common/opts.h"
#include "trace/trace.h"

struct arena_blk {
	struct arena_blk *next;
	size_t used, cap;
	max_align_t data[];
};

struct rstack {
	uint32_t id, kind, nr;
	void *frames; /* uint64_t[] or struct ustack_trace_frame[] in the arena */
};

struct rksym {
	uint64_t addr, size;
	const char *name, *module;
};

/* The widest PYFUNC id: the rest of a Python frame's offset is its line */
#define PYFUNC_ID_MAX ((UINT64_C(1) << (64 - USTACK_TRACE_PY_LINE_BITS)) - 1)

struct ustack_trace_reader {
	const uint8_t *mem;   /* memory input, or NULL for fd */
	int fd;
	uint64_t size;        /* input size (fd: refreshed at each chunk) */
	uint32_t flags;
	uint32_t max_type;    /* record types above it are skipped (opts) */
	uint32_t skim;        /* nonzero: only these types decoded (ustack_trace_reader__skim()) */

	int err;              /* sticky negative errno */
	char msg[256];
	uint64_t err_off;
	int hdr_read, done, end_seen, header_seen;
	uint64_t pos;         /* file offset of the next chunk header */

	/* current chunk */
	int in_chunk;
	uint8_t *cbuf;
	size_t ccap;
	const uint8_t *payload;
	uint32_t plen, nrec, seen_rec, seq, chunk_idx;
	uint64_t chunk_off;
	size_t ppos;
	uint64_t prev_time;
	struct ustack_u64map *chunk_stacks, *chunk_files, *chunk_descs;

	/* totals for the END check */
	uint64_t events, user_stacks;

	/* definitions kept across chunks */
	struct arena_blk *arena;
	struct ustack_u64map *stacks, *files, *descs, *ksym_idx;
	struct rstack *stk;
	size_t nstk, stk_cap;
	struct ustack_file_map *fms;
	size_t nfms, fms_cap;
	struct ustack_trace_event_desc *dsc;
	size_t ndsc, dsc_cap;
	struct rksym *ksyms;
	size_t nksyms, ksyms_cap;
	int ksym_dirty;
	struct ustack_u64map *content_idx;  /* file id -> index in contents */
	struct ustack_trace_file_content *contents;
	size_t ncontents, contents_cap;
	struct ustack_u64map *pyfunc_idx;  /* PYFUNC id -> index in pyfuncs */
	struct ustack_trace_pyfunc *pyfuncs;
	size_t npyfuncs, pyfuncs_cap;
	struct ustack_trace_header header;

	/* per-record scratch */
	char *scratch;
	size_t scratch_cap, scratch_used;
	void *tmp;
	size_t tmp_cap;
};

/* ---- errors ------------------------------------------------------------ */

__attribute__((format(printf, 4, 5)))
static int fail(struct ustack_trace_reader *r, int err, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int n;

	r->err = err;
	r->err_off = off;
	n = snprintf(r->msg, sizeof(r->msg), "offset %" PRIu64 ": ", off);
	va_start(ap, fmt);
	vsnprintf(r->msg + n, sizeof(r->msg) - n, fmt, ap);
	va_end(ap);
	return err;
}

/* ---- memory ------------------------------------------------------------ */

static void *arena_alloc(struct ustack_trace_reader *r, size_t n)
{
	struct arena_blk *b = r->arena;
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > 65536 ? n : 65536;

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->used = 0;
		b->cap = cap;
		b->next = r->arena;
		r->arena = b;
	}
	p = (char *)b->data + b->used;
	b->used += n;
	return p;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

/* A NUL-terminated copy of a string field: in the arena when it must
 * outlive the record, else in the per-record scratch. NULL on a bad field
 * (cursor marked bad) or out of memory (*oom set). */
static const char *get_str(struct ustack_trace_reader *r, struct trace_cur *c, int keep, int *oom)
{
	size_t n;
	const uint8_t *p = trace_get_bytes(c, &n);
	char *s;

	if (c->bad)
		return NULL;
	if (n && memchr(p, 0, n)) {
		c->bad = 1;
		return NULL;
	}
	if (keep) {
		s = arena_alloc(r, n + 1);
	} else {
		/* scratch is sized for the whole record body at its start */
		s = r->scratch + r->scratch_used;
		r->scratch_used += n + 1;
	}
	if (!s) {
		*oom = 1;
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

/* ---- open / close ------------------------------------------------------ */

static struct ustack_trace_reader *reader_new(const struct ustack_trace_reader_opts *opts)
{
	struct ustack_trace_reader *r = calloc(1, sizeof(*r));

	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->fd = -1;
	if (!(r->chunk_stacks = ustack_u64map__new()) || !(r->chunk_files = ustack_u64map__new()) ||
	    !(r->chunk_descs = ustack_u64map__new()) || !(r->stacks = ustack_u64map__new()) ||
	    !(r->files = ustack_u64map__new()) || !(r->descs = ustack_u64map__new()) ||
	    !(r->ksym_idx = ustack_u64map__new()) || !(r->content_idx = ustack_u64map__new()) ||
	    !(r->pyfunc_idx = ustack_u64map__new())) {
		ustack_trace_reader__close(r);
		errno = ENOMEM;
		return NULL;
	}
	r->flags = OPTS_GET(opts, flags, 0);
	/* 0 (or an older caller without the field): the types of 0.2's
	 * header. Stays USTACK_TRACE_JITSYM when types are added: a caller
	 * that did not ask cannot know them (docs/api.md, ABI rules). */
	r->max_type = OPTS_GET(opts, max_type, 0) ?: USTACK_TRACE_JITSYM;
	return r;
}

struct ustack_trace_reader *ustack_trace_reader__open(const char *path,
						      const struct ustack_trace_reader_opts *opts)
{
	struct ustack_trace_reader *r;
	struct stat st;
	int fd;

	if (!OPTS_VALID(opts, struct ustack_trace_reader_opts)) {
		errno = EINVAL;
		return NULL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		errno = e;
		return NULL;
	}
	r = reader_new(opts);
	if (!r) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	r->fd = fd;
	r->size = st.st_size;
	return r;
}

struct ustack_trace_reader *ustack_trace_reader__open_mem(const void *buf, size_t size,
							  const struct ustack_trace_reader_opts *opts)
{
	static const uint8_t empty[1];
	struct ustack_trace_reader *r;

	if (!OPTS_VALID(opts, struct ustack_trace_reader_opts)) {
		errno = EINVAL;
		return NULL;
	}
	r = reader_new(opts);
	if (!r)
		return NULL;
	r->mem = buf ? buf : empty;
	r->size = buf ? size : 0;
	return r;
}

void ustack_trace_reader__close(struct ustack_trace_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	while (r->arena) {
		struct arena_blk *n = r->arena->next;

		free(r->arena);
		r->arena = n;
	}
	ustack_u64map__free(r->chunk_stacks);
	ustack_u64map__free(r->chunk_files);
	ustack_u64map__free(r->chunk_descs);
	ustack_u64map__free(r->stacks);
	ustack_u64map__free(r->files);
	ustack_u64map__free(r->descs);
	ustack_u64map__free(r->ksym_idx);
	ustack_u64map__free(r->content_idx);
	ustack_u64map__free(r->pyfunc_idx);
	free(r->pyfuncs);
	free(r->stk);
	free(r->fms);
	free(r->dsc);
	free(r->ksyms);
	free(r->contents);
	free(r->cbuf);
	free(r->scratch);
	free(r->tmp);
	free(r);
}

const char *ustack_trace_reader__error(const struct ustack_trace_reader *r)
{
	return r->msg;
}

uint64_t ustack_trace_reader__error_offset(const struct ustack_trace_reader *r)
{
	return r->err_off;
}

uint64_t ustack_trace_reader__offset(const struct ustack_trace_reader *r, uint64_t *size)
{
	if (size)
		*size = r->size;
	return r->in_chunk ? r->chunk_off + TRACE_CHUNK_HDR_SIZE + r->ppos : r->pos;
}

const struct ustack_trace_header *ustack_trace_reader__header(const struct ustack_trace_reader *r)
{
	return r->header_seen ? &r->header : NULL;
}

/* ---- input ------------------------------------------------------------- */

/* Up to @len bytes at @off: returns how many are available (short at EOF),
 * or a negative errno. *p points at them (valid until the next call). */
static ssize_t input_at(struct ustack_trace_reader *r, uint64_t off, size_t len, const uint8_t **p)
{
	size_t got = 0;

	if (r->mem) {
		if (off >= r->size)
			return 0;
		*p = r->mem + off;
		return (ssize_t)(len < r->size - off ? len : r->size - off);
	}
	if (grow((void **)&r->cbuf, &r->ccap, len ? len : 1, 1))
		return -ENOMEM;
	while (got < len) {
		ssize_t n = pread(r->fd, r->cbuf + got, len - got, (off_t)(off + got));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += n;
	}
	*p = r->cbuf;
	return (ssize_t)got;
}

static int read_file_header(struct ustack_trace_reader *r)
{
	const uint8_t *h;
	ssize_t n = input_at(r, 0, TRACE_FILE_HDR_SIZE, &h);

	if (n < 0)
		return fail(r, (int)n, 0, "file header: read error: %s", strerror((int)-n));
	if (n < (ssize_t)TRACE_FILE_HDR_SIZE)
		return fail(r, -EBADMSG, 0, "file header: truncated (%zd of %u bytes)", n,
			    TRACE_FILE_HDR_SIZE);
	if (memcmp(h, TRACE_FILE_MAGIC, 8))
		return fail(r, -EBADMSG, 0, "file header: bad magic (not a ustack trace)");
	if (ld_u32(h + 28) != ustack_crc32(0, h, 28))
		return fail(r, -EBADMSG, 28, "file header: checksum mismatch");
	if (ld_u32(h + 12) != TRACE_BYTE_ORDER)
		return fail(r, -EBADMSG, 12, "file header: bad byte-order mark 0x%08x", ld_u32(h + 12));
	if (ld_u16(h + 8) != USTACK_TRACE_VERSION_MAJOR)
		return fail(r, -ENOTSUP, 8, "file header: format version %u.%u not supported",
			    ld_u16(h + 8), ld_u16(h + 10));
	if (h[16] != TRACE_WORD_SIZE)
		return fail(r, -EBADMSG, 16, "file header: word size %u not supported", h[16]);
	if (h[17] < TRACE_FILE_HDR_SIZE)
		return fail(r, -EBADMSG, 17, "file header: header size %u < %u", h[17],
			    TRACE_FILE_HDR_SIZE);
	r->pos = h[17];
	r->hdr_read = 1;
	return 0;
}

/* Load and verify the chunk at r->pos. 1: loaded, 0: clean end of input. */
static int load_chunk(struct ustack_trace_reader *r)
{
	const uint8_t *h, *p;
	uint32_t plen, crc;
	uint64_t off = r->pos, idx = r->chunk_idx;
	ssize_t n;

	if (r->fd >= 0) {
		struct stat st;

		if (!fstat(r->fd, &st))
			r->size = st.st_size;
	}
	if (off > r->size)
		return fail(r, -EBADMSG, r->size, "truncated: file header size past the end");
	n = input_at(r, off, TRACE_CHUNK_HDR_SIZE, &h);
	if (n < 0)
		return fail(r, (int)n, off, "chunk %" PRIu64 ": read error: %s", idx, strerror((int)-n));
	if (n == 0) {
		if (r->flags & USTACK_TRACE_READER_EXTRACT)
			return 0;
		return fail(r, -EBADMSG, off, "file ends without an END record (truncated after chunk %"
			    PRIu64 ")", idx ? idx - 1 : 0);
	}
	if (n < (ssize_t)TRACE_CHUNK_HDR_SIZE)
		return fail(r, -EBADMSG, off, "chunk %" PRIu64 ": truncated header (%zd of %u bytes)",
			    idx, n, TRACE_CHUNK_HDR_SIZE);
	if (memcmp(h, TRACE_CHUNK_MAGIC, 4))
		return fail(r, -EBADMSG, off, "chunk %" PRIu64 ": bad chunk magic", idx);
	/* keep the header: in fd mode the payload read reuses the buffer */
	uint8_t hdr[TRACE_CHUNK_HDR_SIZE];

	memcpy(hdr, h, sizeof(hdr));
	plen = ld_u32(hdr + 8);
	if (!(r->flags & USTACK_TRACE_READER_EXTRACT) && ld_u32(hdr + 4) != idx)
		return fail(r, -EBADMSG, off, "chunk %" PRIu64 ": sequence number %u (chunk missing or damaged)",
			    idx, ld_u32(hdr + 4));
	if (plen == 0 || plen > USTACK_TRACE_MAX_CHUNK_SIZE)
		return fail(r, -EBADMSG, off, "chunk %" PRIu64 ": bad payload length %u", idx, plen);
	if (!in_bounds(off + TRACE_CHUNK_HDR_SIZE, plen, r->size))
		return fail(r, -EBADMSG, off, "chunk %" PRIu64 ": truncated (payload of %u bytes, %"
			    PRIu64 " left)", idx, plen, r->size - off - TRACE_CHUNK_HDR_SIZE);
	n = input_at(r, off + TRACE_CHUNK_HDR_SIZE, plen, &p);
	if (n < 0)
		return fail(r, (int)n, off, "chunk %" PRIu64 ": read error: %s", idx, strerror((int)-n));
	if (n < (ssize_t)plen)
		return fail(r, -EBADMSG, off, "chunk %" PRIu64 ": truncated (payload of %u bytes, %zd read)",
			    idx, plen, n);
	crc = ustack_crc32(0, hdr, 16);
	crc = ustack_crc32(crc, p, plen);
	if (crc != ld_u32(hdr + 16))
		return fail(r, -EBADMSG, off, "chunk %" PRIu64 ": checksum mismatch", idx);
	if (!ld_u32(hdr + 12))
		return fail(r, -EBADMSG, off, "chunk %" PRIu64 ": no records", idx);

	r->payload = p;
	r->plen = plen;
	r->nrec = ld_u32(hdr + 12);
	r->seq = ld_u32(hdr + 4);
	r->seen_rec = 0;
	r->chunk_off = off;
	r->ppos = 0;
	r->prev_time = 0;
	r->in_chunk = 1;
	ustack_u64map__clear(r->chunk_stacks);
	ustack_u64map__clear(r->chunk_files);
	ustack_u64map__clear(r->chunk_descs);
	return 1;
}

/* ---- record decoders: 0, or a short reason in *why ------------------- */

static uint64_t get_time(struct ustack_trace_reader *r, struct trace_cur *c)
{
	r->prev_time += (uint64_t)trace_unzigzag(trace_get_varint(c));
	return r->prev_time;
}

static void get_ids(struct trace_cur *c, uint32_t *pid, uint32_t *tid)
{
	int64_t t;

	*pid = trace_get_u32v(c);
	t = (int64_t)*pid + trace_unzigzag(trace_get_varint(c));
	if (t < 0 || t > UINT32_MAX)
		c->bad = 1;
	*tid = (uint32_t)t;
}

static uint64_t stack_key(uint32_t kind, uint32_t id)
{
	return (uint64_t)kind << 32 | id;
}

static const char *dec_header(struct ustack_trace_reader *r, struct trace_cur *c,
			      struct ustack_trace_record *rec, int *oom)
{
	struct ustack_trace_header *h = &rec->header;

	h->clock_id = trace_get_u32v(c);
	h->realtime_ns = trace_get_varint(c);
	h->clock_ns = trace_get_varint(c);
	h->hostname = get_str(r, c, 1, oom);
	h->release = get_str(r, c, 1, oom);
	h->machine = get_str(r, c, 1, oom);
	h->cmdline = get_str(r, c, 1, oom);
	h->version = get_str(r, c, 1, oom);
	if (c->bad || *oom)
		return "bad field";
	r->header = *h;
	r->header_seen = 1;
	return NULL;
}

static const char *dec_event_desc(struct ustack_trace_reader *r, struct trace_cur *c,
				  struct ustack_trace_record *rec, int *oom)
{
	struct ustack_trace_event_desc *d = &rec->event_desc;
	uint64_t idx;

	d->id = trace_get_u32v(c);
	d->type = trace_get_u32v(c);
	d->flags = trace_get_u32v(c);
	d->period = trace_get_varint(c);
	d->name = get_str(r, c, 0, oom);
	if (c->bad || *oom)
		return "bad field";
	if (ustack_u64map__get(r->descs, d->id, &idx)) {
		const struct ustack_trace_event_desc *o = &r->dsc[idx];

		if (o->type != d->type || o->flags != d->flags || o->period != d->period ||
		    strcmp(o->name, d->name))
			return "event id redefined differently";
		*d = *o;
	} else {
		char *name = arena_alloc(r, strlen(d->name) + 1);

		if (!name || grow((void **)&r->dsc, &r->dsc_cap, r->ndsc + 1, sizeof(*r->dsc)) ||
		    ustack_u64map__put(r->descs, d->id, r->ndsc)) {
			*oom = 1;
			return "out of memory";
		}
		strcpy(name, d->name);
		d->name = name;
		r->dsc[r->ndsc++] = *d;
	}
	if (ustack_u64map__put(r->chunk_descs, d->id, 1)) {
		*oom = 1;
		return "out of memory";
	}
	return NULL;
}

static const char *dec_thread(struct ustack_trace_reader *r, struct trace_cur *c,
			      struct ustack_trace_record *rec, int *oom)
{
	struct ustack_trace_thread *t = &rec->thread;
	uint64_t flags = trace_get_varint(c);

	t->time = get_time(r, c);
	get_ids(c, &t->pid, &t->tid);
	t->comm = get_str(r, c, 0, oom);
	if (c->bad || *oom)
		return "bad field";
	if (flags & ~(uint64_t)TRACE_THREAD_FLAGS)
		return "reserved flag bits set";
	t->flags = (uint32_t)flags;
	return NULL;
}

static const char *dec_event(struct ustack_trace_reader *r, struct trace_cur *c,
			     struct ustack_trace_record *rec)
{
	struct ustack_trace_event *e = &rec->event;
	uint64_t flags = trace_get_varint(c);

	if (flags & ~(uint64_t)(TRACE_EV_KSTACK | TRACE_EV_COOKIE | TRACE_EV_VALUE | TRACE_EV_ARGS))
		return "reserved flag bits set";
	e->time = get_time(r, c);
	get_ids(c, &e->pid, &e->tid);
	e->cpu = trace_get_u32v(c);
	e->event_id = trace_get_u32v(c);
	e->kstack_id = USTACK_TRACE_NO_STACK;
	e->cookie = 0;
	e->value = 1;
	e->flags = 0;
	e->nr_args = 0;
	if (flags & TRACE_EV_KSTACK)
		e->kstack_id = trace_get_u32v(c);
	if (flags & TRACE_EV_COOKIE) {
		uint64_t lo = trace_get_u32v(c);

		e->cookie = lo | (uint64_t)trace_get_u32v(c) << 32;
	}
	if (flags & TRACE_EV_VALUE) {
		e->value = trace_get_varint(c);
		e->flags |= USTACK_TRACE_EVENT_HAS_VALUE;
	}
	if (flags & TRACE_EV_ARGS) {
		uint64_t n = trace_get_varint(c);

		if (!n || n > USTACK_TRACE_MAX_ARGS)
			return "bad number of args";
		for (uint64_t i = 0; i < n && !c->bad; i++)
			e->args[i] = trace_get_varint(c);
		e->nr_args = (uint32_t)n;
		e->flags |= USTACK_TRACE_EVENT_HAS_ARGS;
	}
	if (c->bad)
		return "bad field";
	if ((flags & TRACE_EV_COOKIE) && !e->cookie)
		return "cookie 0";
	if (!ustack_u64map__get(r->chunk_descs, e->event_id, NULL))
		return "event id not defined in this chunk";
	if ((flags & TRACE_EV_KSTACK) &&
	    !ustack_u64map__get(r->chunk_stacks, stack_key(USTACK_TRACE_KSTACK, e->kstack_id), NULL))
		return "kernel stack not defined in this chunk";
	r->events++;
	return NULL;
}

static const char *dec_user_stack(struct ustack_trace_reader *r, struct trace_cur *c,
				  struct ustack_trace_record *rec)
{
	struct ustack_trace_user_stack *u = &rec->user_stack;
	uint64_t flags = trace_get_varint(c), lo;

	if (flags & ~(uint64_t)TRACE_US_STACK)
		return "reserved flag bits set";
	u->time = get_time(r, c);
	get_ids(c, &u->pid, &u->tid);
	u->cpu = trace_get_u32v(c);
	lo = trace_get_u32v(c);
	u->cookie = lo | (uint64_t)trace_get_u32v(c) << 32;
	u->stop_reason = trace_get_u32v(c);
	u->stack_id = USTACK_TRACE_NO_STACK;
	if (flags & TRACE_US_STACK)
		u->stack_id = trace_get_u32v(c);
	if (c->bad)
		return "bad field";
	if (!u->cookie)
		return "cookie 0";
	if ((flags & TRACE_US_STACK) &&
	    !ustack_u64map__get(r->chunk_stacks, stack_key(USTACK_TRACE_USTACK, u->stack_id), NULL))
		return "user stack not defined in this chunk";
	r->user_stacks++;
	return NULL;
}

static const char *dec_stack(struct ustack_trace_reader *r, struct trace_cur *c,
			     struct ustack_trace_record *rec, int *oom)
{
	struct ustack_trace_stack *s = &rec->stack;
	uint64_t nr, kind, idx, key;
	size_t esz;

	s->id = trace_get_u32v(c);
	kind = trace_get_varint(c);
	nr = trace_get_varint(c);
	if (c->bad)
		return "bad field";
	if (kind > USTACK_TRACE_USTACK)
		return "unknown stack kind";
	if (nr > USTACK_TRACE_MAX_FRAMES)
		return "too many frames";
	/* each frame takes at least 1 (kernel) or 2 (user) bytes */
	if (nr * (kind == USTACK_TRACE_KSTACK ? 1 : 2) > c->len - c->pos)
		return "frames past the end of the record";
	s->kind = (uint32_t)kind;
	s->nr = (uint32_t)nr;
	esz = kind == USTACK_TRACE_KSTACK ? sizeof(uint64_t) : sizeof(struct ustack_trace_frame);
	/* tmp_cap counts bytes: kernel and user frames differ in size */
	if (grow(&r->tmp, &r->tmp_cap, nr ? nr * esz : 1, 1)) {
		*oom = 1;
		return "out of memory";
	}
	/* zeroed so that struct padding compares equal in redefinition checks */
	memset(r->tmp, 0, nr * esz);
	if (kind == USTACK_TRACE_KSTACK) {
		uint64_t *ips = r->tmp, prev = 0;

		for (uint64_t i = 0; i < nr; i++) {
			prev += (uint64_t)trace_unzigzag(trace_get_varint(c));
			ips[i] = prev;
		}
	} else {
		struct ustack_trace_frame *f = r->tmp;
		uint64_t prev_file = 0;

		for (uint64_t i = 0; i < nr; i++) {
			uint8_t info = trace_get_u8(c);

			if (info & TRACE_FR_RESERVED)
				return "reserved frame bits set";
			if (info & TRACE_FR_SAME_FILE) {
				if (!i)
					return "SAME_FILE on the first frame";
				f[i].file_id = prev_file;
			} else {
				f[i].file_id = trace_get_varint(c);
				if (!c->bad && f[i].file_id &&
				    !ustack_u64map__get(r->chunk_files, f[i].file_id, NULL))
					return "file id not defined in this chunk";
			}
			f[i].offset = trace_get_varint(c);
			f[i].method = info & TRACE_FR_METHOD_MASK;
			f[i].flags = info & TRACE_FR_EXACT_PC ? USTACK_TRACE_FRAME_EXACT_PC : 0;
			prev_file = f[i].file_id;
			if (c->bad)
				break;
		}
	}
	if (c->bad)
		return "bad field";
	key = stack_key(s->kind, s->id);
	if (ustack_u64map__get(r->stacks, key, &idx)) {
		const struct rstack *o = &r->stk[idx];

		if (o->nr != s->nr || (nr && memcmp(o->frames, r->tmp, nr * esz)))
			return "stack id redefined differently";
		s->frames = o->frames;
	} else {
		void *copy = arena_alloc(r, nr * esz);

		if (!copy || grow((void **)&r->stk, &r->stk_cap, r->nstk + 1, sizeof(*r->stk)) ||
		    ustack_u64map__put(r->stacks, key, r->nstk)) {
			*oom = 1;
			return "out of memory";
		}
		if (nr)
			memcpy(copy, r->tmp, nr * esz);
		r->stk[r->nstk++] = (struct rstack){ s->id, s->kind, s->nr, copy };
		s->frames = copy;
	}
	s->ips = s->kind == USTACK_TRACE_KSTACK ? (const uint64_t *)s->frames : NULL;
	if (s->kind == USTACK_TRACE_KSTACK)
		s->frames = NULL;
	if (ustack_u64map__put(r->chunk_stacks, key, 1)) {
		*oom = 1;
		return "out of memory";
	}
	return NULL;
}

static const char *dec_file_map(struct ustack_trace_reader *r, struct trace_cur *c,
				struct ustack_trace_record *rec, int *oom)
{
	struct ustack_file_map *fm = &rec->file_map;
	const uint8_t *bid;
	size_t nbid;
	uint64_t idx;

	memset(fm, 0, sizeof(*fm));
	fm->file_id = trace_get_varint(c);
	fm->kind = trace_get_u32v(c);
	fm->flags = trace_get_u32v(c);
	fm->build_id_source = trace_get_u32v(c);
	bid = trace_get_bytes(c, &nbid);
	if (!c->bad && nbid > TRACE_MAX_BUILD_ID)
		return "build ID longer than 32 bytes";
	if (!c->bad && nbid)
		memcpy(fm->build_id, bid, nbid);
	fm->build_id_size = (uint32_t)nbid;
	fm->dev_major = trace_get_u32v(c);
	fm->dev_minor = trace_get_u32v(c);
	fm->inode = trace_get_varint(c);
	fm->map_start = trace_get_varint(c);
	fm->path = get_str(r, c, 0, oom);
	fm->debuglink = get_str(r, c, 0, oom);
	fm->debuglink_crc = trace_get_u32v(c);
	if (c->bad || *oom)
		return "bad field";
	if (!fm->file_id)
		return "file id 0";
	if (!*fm->debuglink)
		fm->debuglink = NULL;
	/* a Python frame's offset names a PYFUNC, not a place in a file: a
	 * build ID or inode here would send a symbolizer to an ELF file */
	if (fm->kind == USTACK_TRACE_FILE_KIND_PYTHON &&
	    (fm->build_id_size || fm->inode || fm->dev_major || fm->dev_minor || fm->debuglink))
		return "Python file map (kind 10) with a build ID, device, inode or debuglink";
	if (ustack_u64map__get(r->files, fm->file_id, &idx)) {
		const struct ustack_file_map *o = &r->fms[idx];

		if (o->kind != fm->kind || strcmp(o->path, fm->path) ||
		    o->build_id_size != fm->build_id_size ||
		    memcmp(o->build_id, fm->build_id, fm->build_id_size) ||
		    o->dev_major != fm->dev_major || o->dev_minor != fm->dev_minor ||
		    o->inode != fm->inode)
			return "file id redefined differently";
		*fm = *o;
	} else {
		char *path = arena_alloc(r, strlen(fm->path) + 1);
		char *dl = fm->debuglink ? arena_alloc(r, strlen(fm->debuglink) + 1) : NULL;

		if (!path || (fm->debuglink && !dl) ||
		    grow((void **)&r->fms, &r->fms_cap, r->nfms + 1, sizeof(*r->fms)) ||
		    ustack_u64map__put(r->files, fm->file_id, r->nfms)) {
			*oom = 1;
			return "out of memory";
		}
		strcpy(path, fm->path);
		fm->path = path;
		if (dl) {
			strcpy(dl, fm->debuglink);
			fm->debuglink = dl;
		}
		r->fms[r->nfms++] = *fm;
	}
	if (ustack_u64map__put(r->chunk_files, fm->file_id, 1)) {
		*oom = 1;
		return "out of memory";
	}
	return NULL;
}

static const char *dec_lost(struct ustack_trace_reader *r, struct trace_cur *c,
			    struct ustack_trace_record *rec)
{
	struct ustack_trace_lost *l = &rec->lost;

	l->what = trace_get_u32v(c);
	l->time = get_time(r, c);
	l->cpu = trace_get_u32v(c);
	l->count = trace_get_varint(c);
	return c->bad ? "bad field" : NULL;
}

static const char *dec_ksym(struct ustack_trace_reader *r, struct trace_cur *c,
			    struct ustack_trace_record *rec, int *oom)
{
	struct ustack_trace_ksym *k = &rec->ksym;
	uint64_t idx;

	k->addr = trace_get_varint(c);
	k->size = trace_get_varint(c);
	k->name = get_str(r, c, 1, oom);
	k->module = get_str(r, c, 1, oom);
	if (c->bad || *oom)
		return "bad field";
	if (ustack_u64map__get(r->ksym_idx, k->addr, &idx)) {
		r->ksyms[idx] = (struct rksym){ k->addr, k->size, k->name, k->module };
		return NULL;
	}
	if (grow((void **)&r->ksyms, &r->ksyms_cap, r->nksyms + 1, sizeof(*r->ksyms)) ||
	    ustack_u64map__put(r->ksym_idx, k->addr, r->nksyms)) {
		*oom = 1;
		return "out of memory";
	}
	r->ksyms[r->nksyms++] = (struct rksym){ k->addr, k->size, k->name, k->module };
	r->ksym_dirty = 1;
	return NULL;
}

static const char *dec_jitsym(struct ustack_trace_reader *r, struct trace_cur *c,
			      struct ustack_trace_record *rec, int *oom)
{
	struct ustack_trace_jitsym *j = &rec->jitsym;

	j->pid = trace_get_u32v(c);
	j->addr = trace_get_varint(c);
	j->size = trace_get_varint(c);
	j->name = get_str(r, c, 0, oom);
	if (c->bad || *oom)
		return "bad field";
	if (!j->size)
		return "size 0";
	if (j->addr + j->size < j->addr)
		return "symbol past the end of the address space";
	if (!*j->name)
		return "empty name";
	return NULL;
}

/* A function is valid for the whole file: the format lets a writer put it
 * anywhere, even after the stacks that name it. Kept so that a second record of one id is checked
 * against the first and ustack_trace_reader__pyfunc() can answer. */
static const char *dec_pyfunc(struct ustack_trace_reader *r, struct trace_cur *c,
			      struct ustack_trace_record *rec, int *oom)
{
	struct ustack_trace_pyfunc *f = &rec->pyfunc;
	uint64_t idx;

	f->id = trace_get_varint(c);
	f->pid = trace_get_u32v(c);
	f->first_line = trace_get_u32v(c);
	f->name = get_str(r, c, 0, oom);
	f->file = get_str(r, c, 0, oom);
	if (c->bad || *oom)
		return "bad field";
	if (!f->id || f->id > PYFUNC_ID_MAX)
		return "id not in 1 .. 2^40-1";
	if (!*f->name)
		return "empty name";
	if (!*f->file)
		return "empty file";
	if (ustack_u64map__get(r->pyfunc_idx, f->id, &idx)) {
		const struct ustack_trace_pyfunc *o = &r->pyfuncs[idx];

		if (o->pid != f->pid || o->first_line != f->first_line || strcmp(o->name, f->name) ||
		    strcmp(o->file, f->file))
			return "function id redefined differently";
		*f = *o;
		return NULL;
	}
	{
		size_t nn = strlen(f->name) + 1, nf = strlen(f->file) + 1;
		char *s = arena_alloc(r, nn + nf);

		if (!s || grow((void **)&r->pyfuncs, &r->pyfuncs_cap, r->npyfuncs + 1,
			       sizeof(*r->pyfuncs)) ||
		    ustack_u64map__put(r->pyfunc_idx, f->id, r->npyfuncs)) {
			*oom = 1;
			return "out of memory";
		}
		memcpy(s, f->name, nn);
		memcpy(s + nn, f->file, nf);
		f->name = s;
		f->file = s + nn;
	}
	r->pyfuncs[r->npyfuncs++] = *f;
	return NULL;
}

/* Content is valid for the whole file, like the FILE_MAP it describes; the
 * recorder hashes a file long after the chunk that first used it, so the
 * FILE_MAP only has to be earlier in the file, not in this chunk. */
static const char *dec_file_content(struct ustack_trace_reader *r, struct trace_cur *c,
				    struct ustack_trace_record *rec, int *oom, int *skip)
{
	const uint32_t known = USTACK_TRACE_CONTENT_CACHED | USTACK_TRACE_CONTENT_DEBUG |
			       USTACK_TRACE_CONTENT_TOO_BIG;
	struct ustack_trace_file_content *fc = &rec->file_content;
	const uint8_t *hash;
	size_t nhash;
	uint64_t idx;

	memset(fc, 0, sizeof(*fc));
	fc->file_id = trace_get_varint(c);
	fc->flags = trace_get_u32v(c);
	fc->algo = trace_get_u32v(c);
	hash = trace_get_bytes(c, &nhash);
	fc->size = trace_get_varint(c);
	if (c->bad)
		return "bad field";
	if (!fc->file_id)
		return "file id 0";
	if (fc->flags & ~known)
		return "reserved flag bits set";
	if (!ustack_u64map__get(r->files, fc->file_id, NULL))
		return "file id not defined by an earlier FILE_MAP";
	if (fc->algo != USTACK_TRACE_HASH_SHA256) {
		*skip = 1; /* a later minor's hash: not ours to check or hand out */
		return NULL;
	}
	if (nhash != sizeof(fc->hash))
		return "SHA-256 hash not 32 bytes";
	memcpy(fc->hash, hash, nhash);
	if (ustack_u64map__get(r->content_idx, fc->file_id, &idx)) {
		const struct ustack_trace_file_content *o = &r->contents[idx];

		if (o->size != fc->size || memcmp(o->hash, fc->hash, sizeof(fc->hash)))
			return "file content redefined differently";
		return NULL;
	}
	if (grow((void **)&r->contents, &r->contents_cap, r->ncontents + 1, sizeof(*r->contents)) ||
	    ustack_u64map__put(r->content_idx, fc->file_id, r->ncontents)) {
		*oom = 1;
		return "out of memory";
	}
	r->contents[r->ncontents++] = *fc;
	return NULL;
}

static const char *dec_end(struct ustack_trace_reader *r, struct trace_cur *c,
			   struct ustack_trace_record *rec)
{
	struct ustack_trace_stats *s = &rec->end;

	memset(s, 0, sizeof(*s));
	s->events = trace_get_varint(c);
	s->user_stacks = trace_get_varint(c);
	s->stacks = trace_get_varint(c);
	s->file_maps = trace_get_varint(c);
	s->lost = trace_get_varint(c);
	s->chunks = trace_get_varint(c);
	s->first_time = trace_get_varint(c);
	s->last_time = trace_get_varint(c);
	if (c->bad)
		return "bad field";
	if (!(r->flags & USTACK_TRACE_READER_EXTRACT)) {
		if (s->events != r->events)
			return "END: event count disagrees with the file";
		if (s->user_stacks != r->user_stacks)
			return "END: user stack count disagrees with the file";
		if (s->chunks != (uint64_t)r->chunk_idx + 1)
			return "END: chunk count disagrees with the file";
	}
	return NULL;
}

/* ---- next -------------------------------------------------------------- */

static int reader_next(struct ustack_trace_reader *r, struct ustack_trace_record *rec);

int ustack_trace_reader__next(struct ustack_trace_reader *r, struct ustack_trace_record *out,
			      size_t rec_sz)
{
	struct ustack_trace_record full;
	int ret;

	if (!r || !out || rec_sz < offsetof(struct ustack_trace_record, header))
		return -EINVAL;
	if (rec_sz >= sizeof(full)) {
		/* a newer caller's tail: members of types this library does
		 * not know, never handed out; zeroed all the same */
		memset((char *)out + sizeof(full), 0, rec_sz - sizeof(full));
		return reader_next(r, out);
	}
	/* an older caller's smaller record: decode into ours, hand out the
	 * bytes its struct has (members only ever grow at their end) */
	ret = reader_next(r, &full);
	if (ret == 1)
		memcpy(out, &full, rec_sz);
	return ret;
}

static int reader_next(struct ustack_trace_reader *r, struct ustack_trace_record *rec)
{
	for (;;) {
		struct trace_cur c;
		uint64_t len, rec_off;
		const char *why = NULL;
		uint8_t type;
		int oom = 0, skip = 0, err;

		if (r->err)
			return r->err;
		if (r->done)
			return 0;
		if (!r->hdr_read && (err = read_file_header(r)))
			return err;
		if (!r->in_chunk) {
			if (r->end_seen) {
				if (r->pos < r->size)
					return fail(r, -EBADMSG, r->pos, "data after the END record");
				r->done = 1;
				return 0;
			}
			err = load_chunk(r);
			if (err < 0)
				return err;
			if (err == 0) {
				r->done = 1;
				return 0;
			}
		}
		if (r->ppos == r->plen) {
			if (r->seen_rec != r->nrec)
				return fail(r, -EBADMSG, r->chunk_off,
					    "chunk %u: %u records, header says %u", r->chunk_idx,
					    r->seen_rec, r->nrec);
			r->in_chunk = 0;
			r->pos = r->chunk_off + TRACE_CHUNK_HDR_SIZE + r->plen;
			r->chunk_idx++;
			continue;
		}
		rec_off = r->chunk_off + TRACE_CHUNK_HDR_SIZE + r->ppos;
		if (r->end_seen)
			return fail(r, -EBADMSG, rec_off, "chunk %u: record after END", r->chunk_idx);
		if (r->seen_rec == r->nrec)
			return fail(r, -EBADMSG, rec_off, "chunk %u: more records than the header's %u",
				    r->chunk_idx, r->nrec);
		c = (struct trace_cur){ r->payload, r->plen, r->ppos, 0 };
		type = trace_get_u8(&c);
		len = trace_get_varint(&c);
		if (c.bad || len > c.len - c.pos)
			return fail(r, -EBADMSG, rec_off, "chunk %u: truncated record", r->chunk_idx);
		if (type == 0)
			return fail(r, -EBADMSG, rec_off, "chunk %u: record type 0", r->chunk_idx);
		r->ppos = c.pos + len;

		c.len = c.pos + len; /* the body is the cursor's world now */
		r->seen_rec++;
		if (!(r->flags & USTACK_TRACE_READER_EXTRACT) && r->seq == 0 && r->chunk_idx == 0 &&
		    r->seen_rec == 1 && type != USTACK_TRACE_HEADER)
			return fail(r, -EBADMSG, rec_off, "chunk 0: first record is %s, not HEADER",
				    ustack_trace_record_name(type));
		if (type == USTACK_TRACE_HEADER && (r->header_seen || r->seen_rec != 1 || r->seq != 0))
			return fail(r, -EBADMSG, rec_off, "chunk %u: misplaced HEADER record",
				    r->chunk_idx);
		/* skimming: the other types are stepped over by their length */
		if (r->skim && type != USTACK_TRACE_HEADER && (type >= 32 || !(r->skim & (1u << type)))) {
			if (type == USTACK_TRACE_END)
				r->end_seen = 1;
			continue;
		}
		/* strings of one record fit in its body plus one NUL each */
		if (grow((void **)&r->scratch, &r->scratch_cap, 2 * len + 1, 1))
			return fail(r, -ENOMEM, rec_off, "out of memory");
		r->scratch_used = 0;

		memset(rec, 0, sizeof(*rec));
		rec->type = type;
		rec->chunk = r->chunk_idx;
		rec->offset = rec_off;
		rec->size = r->ppos - (rec_off - r->chunk_off - TRACE_CHUNK_HDR_SIZE);
		switch (type) {
		case USTACK_TRACE_HEADER: why = dec_header(r, &c, rec, &oom); break;
		case USTACK_TRACE_EVENT_DESC: why = dec_event_desc(r, &c, rec, &oom); break;
		case USTACK_TRACE_THREAD: why = dec_thread(r, &c, rec, &oom); break;
		case USTACK_TRACE_EVENT: why = dec_event(r, &c, rec); break;
		case USTACK_TRACE_USER_STACK: why = dec_user_stack(r, &c, rec); break;
		case USTACK_TRACE_STACK: why = dec_stack(r, &c, rec, &oom); break;
		case USTACK_TRACE_FILE_MAP: why = dec_file_map(r, &c, rec, &oom); break;
		case USTACK_TRACE_LOST: why = dec_lost(r, &c, rec); break;
		case USTACK_TRACE_KSYM: why = dec_ksym(r, &c, rec, &oom); break;
		case USTACK_TRACE_JITSYM: why = dec_jitsym(r, &c, rec, &oom); break;
		case USTACK_TRACE_PYFUNC: why = dec_pyfunc(r, &c, rec, &oom); break;
		case USTACK_TRACE_FILE_CONTENT:
			why = dec_file_content(r, &c, rec, &oom, &skip);
			break;
		case USTACK_TRACE_END:
			why = dec_end(r, &c, rec);
			if (!why)
				r->end_seen = 1;
			break;
		default:
			continue; /* unknown type: skipped by length (forward compatibility) */
		}
		if (oom)
			return fail(r, -ENOMEM, rec_off, "out of memory");
		if (why)
			return fail(r, -EBADMSG, rec_off, "chunk %u: %s record: %s", r->chunk_idx,
				    ustack_trace_record_name(type), why);
		/* decoded (the reader's tables know it) but not handed out: a
		 * caller built before this type cannot hold or read it */
		if (type > r->max_type || skip)
			continue;
		return 1;
	}
}

void ustack_trace_reader__skim(struct ustack_trace_reader *r, uint32_t types)
{
	r->skim = types;
}

/* ---- lookups ----------------------------------------------------------- */

int ustack_trace_reader__stack(const struct ustack_trace_reader *r, uint32_t kind, uint32_t id,
			       struct ustack_trace_stack *st)
{
	uint64_t idx;
	const struct rstack *s;

	if (!ustack_u64map__get(r->stacks, stack_key(kind, id), &idx))
		return -ENOENT;
	s = &r->stk[idx];
	st->id = s->id;
	st->kind = s->kind;
	st->nr = s->nr;
	st->ips = s->kind == USTACK_TRACE_KSTACK ? s->frames : NULL;
	st->frames = s->kind == USTACK_TRACE_USTACK ? s->frames : NULL;
	return 0;
}

int ustack_trace_reader__file_map(const struct ustack_trace_reader *r, uint64_t file_id,
				  struct ustack_file_map *fm)
{
	uint64_t idx;

	if (!ustack_u64map__get(r->files, file_id, &idx))
		return -ENOENT;
	*fm = r->fms[idx];
	return 0;
}

int ustack_trace_reader__pyfunc(const struct ustack_trace_reader *r, uint64_t id,
				struct ustack_trace_pyfunc *f)
{
	uint64_t idx;

	if (!r || !f)
		return -EINVAL;
	if (!ustack_u64map__get(r->pyfunc_idx, id, &idx))
		return -ENOENT;
	*f = r->pyfuncs[idx];
	return 0;
}

int ustack_trace_reader__event_desc(const struct ustack_trace_reader *r, uint32_t id,
				    struct ustack_trace_event_desc *d)
{
	uint64_t idx;

	if (!ustack_u64map__get(r->descs, id, &idx))
		return -ENOENT;
	*d = r->dsc[idx];
	return 0;
}

static int ksym_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct rksym *)a)->addr, y = ((const struct rksym *)b)->addr;

	return x < y ? -1 : x > y;
}

int ustack_trace_reader__ksym(struct ustack_trace_reader *r, uint64_t ip, struct ustack_trace_ksym *ks)
{
	size_t lo;
	const struct rksym *k;

	if (!r->nksyms)
		return -ENOENT;
	if (r->ksym_dirty) {
		/* addresses are unique (a duplicate replaces in place), so the
		 * index is rebuilt from scratch after sorting */
		qsort(r->ksyms, r->nksyms, sizeof(*r->ksyms), ksym_cmp);
		ustack_u64map__clear(r->ksym_idx);
		for (size_t i = 0; i < r->nksyms; i++)
			if (ustack_u64map__put(r->ksym_idx, r->ksyms[i].addr, i))
				return -ENOMEM;
		r->ksym_dirty = 0;
	}
	/* last symbol with addr <= ip */
	lo = ustack_count_le_u64(r->ksyms, r->nksyms, sizeof(*r->ksyms),
				 offsetof(struct rksym, addr), ip);
	if (!lo)
		return -ENOENT;
	k = &r->ksyms[lo - 1];
	if (k->size && ip - k->addr >= k->size)
		return -ENOENT;
	ks->addr = k->addr;
	ks->size = k->size;
	ks->name = k->name;
	ks->module = k->module;
	return 0;
}
