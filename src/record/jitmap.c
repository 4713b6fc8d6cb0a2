// SPDX-License-Identifier: MIT
/*
 * JIT symbol maps at record time: the /tmp/perf-PID.map of a traced process
 * is copied into the trace as JITSYM records, so that its JIT frames (file
 * id 0: absolute addresses in anonymous memory) can be named after the
 * process is gone and the file deleted.
 *
 * The file is the one the process wrote: in its own root and mount
 * namespace, named by its pid in its own PID namespace (a container's
 * process writes /tmp/perf-1.map in the container's /tmp), read through
 * ustack_perfmap__read_pid().
 *
 * When: at the process's EXIT side-band record (the map is complete then,
 * and the file usually still there), and at the end of the recording for
 * processes that had frames in anonymous memory and are still alive. Both
 * backends go through rec_on_record() for side-band, hence through here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>

#include "common/log.h"
#include "record/rec.h"
#include "symbolize/perfmap_pid.h"
#include <ustack/perfmap.h>

/* jit_pids values: the state in the low byte; JIT_UID_KNOWN and the
 * process's uid (bits 32-63) once learnt */
enum { JIT_SEEN = 1, JIT_WRITTEN = 2, JIT_STATE = 0xff, JIT_UID_KNOWN = 0x100 };

/* Roots held open at once (one fd each; a process's root is learnt at its
 * first frame in anonymous memory). Past that, a map is looked for at the
 * process's exit, which finds it only while the process is not reaped. */
#define JIT_MAX_ROOTS 1024

/* The owner a process's map may have besides root and us: its uid (the
 * owner of /proc/PID), learnt while it runs; (uint32_t)-1 once it is gone. */
static uint32_t proc_uid(uint32_t pid)
{
	char p[32];
	struct stat st;

	snprintf(p, sizeof(p), "/proc/%u", pid);
	return stat(p, &st) ? (uint32_t)-1 : (uint32_t)st.st_uid;
}

int rec_jit_init(struct rec *r)
{
	r->jit_pids = ustack_u64map__new();
	r->jit_roots = r->jit_pids ? ustack_u64map__new() : NULL;
	r->jit_nroots = 0;
	return r->jit_roots ? 0 : -ENOMEM;
}

/* jit_roots values: rootfd | nspid << 32 | host_view << 62 */
static uint64_t where_pack(const struct ustack_perfmap_where *w)
{
	return (uint32_t)w->rootfd | (uint64_t)(uint32_t)w->nspid << 32 | (uint64_t)!!w->host_view << 62;
}

static void where_unpack(uint32_t pid, uint64_t v, struct ustack_perfmap_where *w)
{
	w->pid = (int)pid;
	w->rootfd = (int)(uint32_t)v;
	w->nspid = (int)(v >> 32 & 0x3fffffff);
	w->host_view = (int)(v >> 62 & 1);
}

static void root_forget(struct rec *r, uint32_t pid)
{
	uint64_t v;

	if (r->jit_roots && ustack_u64map__delete(r->jit_roots, pid, &v) == 1) {
		close((int)(uint32_t)v);
		r->jit_nroots--;
	}
}

void rec_jit_free(struct rec *r)
{
	uint64_t pid, v;

	for (size_t it = 0; r->jit_roots && ustack_u64map__next(r->jit_roots, &it, &pid, &v);)
		close((int)(uint32_t)v);
	ustack_u64map__free(r->jit_roots);
	ustack_u64map__free(r->jit_pids);
	r->jit_roots = NULL;
	r->jit_pids = NULL;
	r->jit_nroots = 0;
}

/* While the process runs: where its map will be (its root may be gone by
 * the time its exit is read, and a container's /tmp with it). */
static void root_learn(struct rec *r, uint32_t pid)
{
	struct ustack_perfmap_where w;

	if (r->jit_nroots >= JIT_MAX_ROOTS)
		return;
	if (!ustack_perfmap_where__open((int)pid, &w) &&
	    !ustack_u64map__put(r->jit_roots, pid, where_pack(&w))) {
		r->jit_nroots++;
		return;
	}
	ustack_perfmap_where__close(&w);
}

void rec_jit_learn(struct rec *r, uint32_t pid)
{
	uint64_t v;

	if (r->jit_roots && ustack_u64map__get(r->jit_roots, pid, &v) != 1)
		root_learn(r, pid);
}

void rec_jit_note_anon(struct rec *r, uint32_t pid)
{
	uint64_t *v;
	int isnew;

	if (!r->jit_pids)
		return;
	/* a failed insert only costs the end-of-recording read of this pid */
	v = ustack_u64map__slot(r->jit_pids, pid, &isnew);
	if (v && isnew) {
		uint32_t uid = proc_uid(pid);

		*v = JIT_SEEN;
		if (uid != (uint32_t)-1)
			*v |= JIT_UID_KNOWN | (uint64_t)uid << 32;
		root_learn(r, pid);
	}
}

/* Read @pid's map through the root learnt earlier, else through /proc
 * now. @path gets the map's name. */
static int map_read(struct rec *r, uint32_t pid, uint32_t uid, struct ustack_perfmap *m,
		    char *path, size_t path_sz)
{
	struct ustack_perfmap_where w;
	uint64_t v;

	if (r->jit_roots && ustack_u64map__get(r->jit_roots, pid, &v) == 1) {
		where_unpack(pid, v, &w);
		ustack_perfmap_where__name(&w, path, path_sz);
		return ustack_perfmap__read_where(m, &w, uid);
	}
	return ustack_perfmap__read_pid(m, (int)pid, uid, path, path_sz);
}

/* Copy the map of @pid into the trace. 0, or -errno of the writer. */
static int jit_write(struct rec *r, uint32_t pid, uint64_t state)
{
	char path[128];
	struct ustack_perfmap *m;
	int ret = 0, rd;

	m = ustack_perfmap__new();
	if (!m)
		return 0; /* names lost, the recording goes on */
	/* the map the process wrote in its own /tmp, under its own pid */
	rd = map_read(r, pid, state & JIT_UID_KNOWN ? (uint32_t)(state >> 32) : proc_uid(pid), m,
		      path, sizeof(path));
	/* gone, not a regular file, another owner, a bad status: the library
	 * said why, or there is nothing to say */
	if (rd && rd != -ENOENT && rd != -EINVAL && rd != -EPERM && rd != -ESRCH && rd != -EBADMSG)
		pr_warn("%s: cannot read the JIT map of pid %u: %s\n", path, pid, strerror(-rd));
	for (size_t i = 0; i < ustack_perfmap__count(m) && !ret; i++) {
		const struct ustack_perfmap_entry *e = ustack_perfmap__entry(m, i);
		struct ustack_trace_jitsym j = { .pid = pid, .addr = e->start, .size = e->size,
						 .name = e->name };

		ret = ustack_trace_writer__add_jitsym(r->w, &j);
		if (ret == -EINVAL)
			ret = 0;
	}
	if (ustack_perfmap__count(m))
		r->st.jit_symbols += ustack_perfmap__count(m);
	ustack_perfmap__free(m);
	return ret;
}

void rec_jit_exit(struct rec *r, uint32_t pid)
{
	uint64_t *v;
	int ret;

	if (!r->w)
		return;
	v = r->jit_pids ? ustack_u64map__slot(r->jit_pids, pid, NULL) : NULL;
	if (v && (*v & JIT_STATE) == JIT_WRITTEN)
		return;
	ret = jit_write(r, pid, v ? *v : 0);
	if (ret && !r->werr)
		r->werr = ret;
	if (v)
		*v = (*v & ~(uint64_t)JIT_STATE) | JIT_WRITTEN;
	root_forget(r, pid);
}

void rec_jit_finish(struct rec *r)
{
	uint64_t pid, state;

	if (!r->jit_pids || !r->w)
		return;
	for (size_t it = 0; ustack_u64map__next(r->jit_pids, &it, &pid, &state);) {
		int ret;

		if ((state & JIT_STATE) == JIT_WRITTEN)
			continue;
		ret = jit_write(r, (uint32_t)pid, state);
		if (ret && !r->werr)
			r->werr = ret;
	}
}
