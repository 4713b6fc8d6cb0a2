// SPDX-License-Identifier: MIT
/*
 * JIT symbol maps at record time: the /tmp/perf-PID.map of a traced process
 * is copied into the trace as JITSYM records, so that its JIT frames (file
 * id 0: absolute addresses in anonymous memory) can be named after the
 * process is gone and the file deleted.
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

#include "common/log.h"
#include "sources/recorder.h"
#include <ustack/perfmap.h>

/* jit_pids values: the state in the low byte; JIT_UID_KNOWN and the
 * process's uid (bits 32-63) once learnt */
enum { JIT_SEEN = 1, JIT_WRITTEN = 2, JIT_STATE = 0xff, JIT_UID_KNOWN = 0x100 };

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
	return r->jit_pids ? 0 : -ENOMEM;
}

void rec_jit_free(struct rec *r)
{
	ustack_u64map__free(r->jit_pids);
	r->jit_pids = NULL;
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
	}
}

/* Copy the map of @pid into the trace. 0, or -errno of the writer. */
static int jit_write(struct rec *r, uint32_t pid, uint64_t state)
{
	char path[64];
	struct ustack_perfmap *m;
	int ret = 0, rd;

	snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
	m = ustack_perfmap__new();
	if (!m)
		return 0; /* names lost, the recording goes on */
	rd = ustack_perfmap__read_file_owned(m, path, state & JIT_UID_KNOWN ? (uint32_t)(state >> 32)
									    : proc_uid(pid));
	/* not a regular file, another owner: the library said why */
	if (rd && rd != -ENOENT && rd != -EINVAL && rd != -EPERM)
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
