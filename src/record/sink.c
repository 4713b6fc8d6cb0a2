// SPDX-License-Identifier: MIT
/*
 * The recorder's trace side: THREAD, EVENT, USER_STACK and LOST records,
 * the stacks stored once, the writer's callbacks (stacks, file maps,
 * kernel symbols). Every part of the recorder writes through here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/grow.h"
#include "common/log.h"
#include "record/rec.h"

/* ---- thread names ---------------------------------------------------------- */

static struct tid_comm *comm_slot(struct rec *r, uint32_t tid, int create)
{
	uint64_t i;

	if (ustack_u64map__get(r->comms.of, tid, &i))
		return &r->comms.v[i];
	if (!create)
		return NULL;
	{
		void *n = r->comms.v;
		int gret = ustack_grow(&n, &r->comms.cap, r->comms.nr + 1, sizeof(*r->comms.v), 64);

		r->comms.v = n;
		if (gret)
			return NULL;
	}
	if (ustack_u64map__put(r->comms.of, tid, r->comms.nr))
		return NULL;
	r->comms.v[r->comms.nr].tid = tid;
	r->comms.v[r->comms.nr].comm[0] = 0;
	return &r->comms.v[r->comms.nr++];
}

/* A thread that exited: its name is not needed any more (a thread given
 * its id later gets one at its FORK). Kept, every thread id ever seen cost
 * ~50 bytes for the rest of the recording, up to kernel.pid_max of them
 * (4 M where systemd sets it): record -a grew with the threads that had
 * come and gone. The last slot moves into the hole. */
void rec_forget_thread(struct rec *r, uint32_t tid)
{
	uint64_t i;
	size_t last;

	if (!ustack_u64map__delete(r->comms.of, tid, &i) || i >= r->comms.nr)
		return;
	last = --r->comms.nr;
	if (i != last) {
		r->comms.v[i] = r->comms.v[last];
		/* an overwrite: the key is there, nothing to allocate */
		ustack_u64map__put(r->comms.of, r->comms.v[i].tid, i);
	}
}

int rec_knows_thread(struct rec *r, uint32_t tid)
{
	return comm_slot(r, tid, 0) != NULL;
}

const char *rec_thread_comm(struct rec *r, uint32_t tid)
{
	struct tid_comm *t = comm_slot(r, tid, 0);

	return t ? t->comm : "";
}

void rec_write_thread(struct rec *r, uint64_t time, uint32_t pid, uint32_t tid, uint32_t flags,
			 const char *comm)
{
	struct ustack_trace_thread t = { .time = time, .pid = pid, .tid = tid, .flags = flags };
	struct tid_comm *c;
	char name[sizeof(c->comm)];

	/* comm may point into r->comms.v (a fork passes its parent's name),
	 * which comm_slot() can move: take a copy first */
	snprintf(name, sizeof(name), "%s", comm ? comm : "");
	t.comm = name;
	c = comm_slot(r, tid, 1);
	if (c)
		memcpy(c->comm, name, sizeof(name));
	rec_werr(r, ustack_trace_writer__add_thread(r->w, &t));
}

/* ---- events, stacks, losses ------------------------------------------------ */

void rec_write_event(struct rec *r, const struct ustack_trace_event *ev)
{
	rec_werr(r, ustack_trace_writer__add_event(r->w, ev));
	r->st.events++;
}

void rec_write_lost(struct rec *r, const struct ustack_trace_lost *l)
{
	r->st.lost += l->count;
	rec_werr(r, ustack_trace_writer__add_lost(r->w, l));
}

uint32_t rec_pack_frames(struct rec *r, uint32_t pid, const struct ustack_frame *frames,
			 uint32_t n)
{
	int anon_seen = 0;

	if (n > MAX_USER_FRAMES)
		n = MAX_USER_FRAMES;
	for (uint32_t i = 0; i < n; i++) {
		const struct ustack_frame *f = &frames[i];
		const struct pm_vma *v = ustack_recmaps__find(r->rm, pid, f->pc);
		struct pm_file *file = v ? ustack_recmaps__file(r->rm, v->file) : NULL;
		struct ustack_trace_frame tf = {
			.offset = f->pc, .method = (uint8_t)f->method,
			.flags = (f->flags & USTACK_FRAME_EXACT_PC) ? USTACK_TRACE_FRAME_EXACT_PC : 0,
		};

		if (file) {
			ustack_recmaps__file_info(r->rm, file, pid);
			tf.offset = f->pc - v->start + v->pgoff;
			tf.file_id = file->id;
		}
		else if (!anon_seen) {
			anon_seen = 1;
			rec_jit_note_anon(r, pid);
		}
		ustack_trace_pack_frame(&tf, &r->words[2 * i]);
		r->st.frames++;
		r->st.frames_by_method[f->method & 7]++;
	}
	return n;
}

int rec_store_frames(struct rec *r, uint32_t pid, const struct ustack_frame *frames, uint32_t n,
		     uint32_t *id)
{
	n = rec_pack_frames(r, pid, frames, n);
	*id = USTACK_TRACE_NO_STACK;
	if (!n)
		return 0;
	return ustack_stackmap__insert(r->umap, r->words, 2 * n, id) < 0 ? -ENOMEM : 0;
}

void rec_write_user_stack(struct rec *r, struct ustack_trace_user_stack *u,
			  const struct ustack_frame *frames, uint32_t n, uint32_t nr_requests)
{
	int ret;

	if (rec_store_frames(r, u->pid, frames, n, &u->stack_id)) {
		r->st.no_user_stack += nr_requests;
		return;
	}
	ret = ustack_trace_writer__add_user_stack(r->w, u);
	if (ret && !r->werr)
		r->werr = ret;
	r->st.user_stacks++;
}

/* A change to the mapping picture failed: out of memory ends the
 * recording (later stacks could not be named right); a record the picture
 * refuses (an empty range) is counted as a bad record and said once. */
void rec_map_result(struct rec *r, int ret, uint32_t pid, const char *what)
{
	if (!ret)
		return;
	if (ret == -ENOMEM) {
		if (!r->werr) {
			r->werr = ret;
			snprintf(r->errmsg, sizeof(r->errmsg),
				 "out of memory keeping the mappings of pid %u (%s)", pid, what);
		}
		return;
	}
	if (!r->bad_maps++)
		pr_warn("pid %u: mapping record refused (%s): %s\n", pid, what, strerror(-ret));
}

/* ---- kernel symbols (names for KSYM records) ------------------------------ */

/* The kernel takes a while to format /proc/kallsyms (when the cache
 * misses): load on a thread from the start, so the first kernel stack does
 * not stall the reading of the ring buffers. */
static void *ksyms_load(void *arg)
{
	struct rec *r = arg;

	r->ks.syms = ustack_kallsyms__load(NULL, NULL);
	return NULL;
}

static void ksyms_wait(struct rec *r)
{
	if (r->ks.thread_started && !r->ks.loaded) {
		pthread_join(r->ks.thread, NULL);
		r->ks.loaded = 1;
	}
	if (!r->ks.thread_started && !r->ks.loaded) {
		ksyms_load(r);
		r->ks.loaded = 1;
	}
}

void rec_ksyms_start(struct rec *r)
{
	r->ks.thread_started = !pthread_create(&r->ks.thread, NULL, ksyms_load, r);
}

void rec_ksyms_free(struct rec *r)
{
	ksyms_wait(r);
	ustack_kallsyms__free(r->ks.syms);
	r->ks.syms = NULL;
}

const char *rec_ksym_name(struct rec *r, uint64_t ip)
{
	uint64_t addr, size;
	const char *name = NULL, *mod = NULL;

	ksyms_wait(r);
	if (!r->ks.syms || ustack_kallsyms__find(r->ks.syms, ip, &addr, &size, &name, &mod))
		return NULL;
	return name;
}

static int cb_get_ksym(void *ctx, uint64_t ip, struct ustack_trace_ksym *ks)
{
	struct rec *r = ctx;

	ksyms_wait(r);
	if (!r->ks.syms)
		return -ENOENT;
	return ustack_kallsyms__find(r->ks.syms, ip, &ks->addr, &ks->size, &ks->name, &ks->module);
}

/* ---- writer callbacks -------------------------------------------------------- */

static int cb_get_stack(void *ctx, uint32_t kind, uint32_t id, struct ustack_trace_stack *st)
{
	struct rec *r = ctx;
	const uint64_t *w;
	uint32_t nr;
	int ret;

	ret = ustack_stackmap__lookup(kind == USTACK_TRACE_KSTACK ? r->kmap : r->umap, id, &w, &nr,
				      NULL);
	if (ret)
		return ret;
	st->id = id;
	st->kind = kind;
	if (kind == USTACK_TRACE_KSTACK) {
		st->nr = nr;
		st->ips = w;
		return 0;
	}
	st->nr = nr / 2;
	for (uint32_t i = 0; i < st->nr; i++)
		ustack_trace_unpack_frame(&w[2 * i], &r->frames[i]);
	st->frames = r->frames;
	return 0;
}

static int cb_get_file_map(void *ctx, uint64_t file_id, struct ustack_file_map *fm)
{
	struct rec *r = ctx;
	int ret = ustack_recmaps__file_map(r->rm, file_id, fm);

	/* the files a stack used are the ones captured */
	if (!ret)
		rec_capture_file(r, file_id);
	return ret;
}

void rec_writer_callbacks(struct rec *r, struct ustack_trace_writer_opts *wo)
{
	wo->get_stack = cb_get_stack;
	wo->get_file_map = cb_get_file_map;
	wo->get_ksym = cb_get_ksym;
	wo->ctx = r;
}
