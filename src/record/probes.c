// SPDX-License-Identifier: MIT
/*
 * Where the probe events attach (rec.h, rec_probes_resolve): each uprobe,
 * uretprobe and usdt event resolved once per process it is for (a -p
 * process inside its own mount namespace; -a and a command in ustack's),
 * and --alloc's malloc family found in the allocator each process maps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe_internal.h"
#include "record/core.h"
#include "record/rec.h"

static const struct {
	const char *name;
	uint32_t fn;
	int ret;      /* a return probe too (the pointer returned) */
	int required; /* an allocator without it is not one */
} alloc_fns[] = {
	{ "malloc", REC_AF_MALLOC, 1, 1 },
	{ "calloc", REC_AF_CALLOC, 1, 0 },
	{ "realloc", REC_AF_REALLOC, 1, 0 },
	{ "free", REC_AF_FREE, 0, 1 },
	{ "posix_memalign", REC_AF_POSIX_MEMALIGN, 1, 0 },
	{ "aligned_alloc", REC_AF_ALIGNED_ALLOC, 1, 0 },
	{ "memalign", REC_AF_MEMALIGN, 1, 0 },
	{ "valloc", REC_AF_VALLOC, 1, 0 },
	{ "pvalloc", REC_AF_PVALLOC, 1, 0 },
};

static int same_place(const struct rec_probe *a, const struct rec_probe *b)
{
	return a->event == b->event && a->pid == b->pid && a->t.kind == b->t.kind &&
	       a->t.dev == b->t.dev && a->t.ino == b->t.ino && a->t.offset == b->t.offset;
}

/* one place more, unless the event has it already for that process (two
 * names of one function: malloc's aliases, a wildcard and an exact name) */
static int add_probe(struct rec *r, const struct ustack_probe_target *t, int event,
		     uint32_t alloc_fn, pid_t pid)
{
	struct rec_probe p = { .t = *t, .event = event, .alloc_fn = alloc_fn, .pid = pid };
	struct rec_probe *v;

	for (size_t i = 0; i < r->probes.nr; i++)
		if (same_place(&r->probes.v[i], &p))
			return 0;
	v = realloc(r->probes.v, (r->probes.nr + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->probes.v = v;
	v[r->probes.nr++] = p;
	return 0;
}

/* the processes probes are resolved for: (resolve pid, rec_probe.pid) */
static int nr_targets(const struct rec *r)
{
	return r->o->nr_pids > 0 ? r->o->nr_pids : 1;
}

static void target(const struct rec *r, int k, pid_t *in, pid_t *for_pid)
{
	if (r->o->nr_pids > 0) {
		*in = *for_pid = r->o->pids[k];
		return;
	}
	*in = 0;
	*for_pid = r->o->system_wide ? -1 : 0;
}

static int resolve_spec(struct rec *r, int event, const struct ustack_probe_spec *spec,
			uint32_t alloc_fn, pid_t in, pid_t for_pid, char *err, size_t errlen)
{
	struct ustack_probe_target *v;
	size_t nr;
	int ret = ustack_probe_resolve(spec, in, &v, &nr, err, errlen);

	for (size_t i = 0; !ret && i < nr; i++)
		ret = add_probe(r, &v[i], event, alloc_fn, for_pid);
	free(v);
	return ret;
}

/* the message: "event NAME (pid N): what" */
static void probe_err(struct rec *r, const char *name, pid_t in, const char *err)
{
	char msg[PATH_MAX + 400], where[32] = "";

	if (in > 0)
		snprintf(where, sizeof(where), " (pid %d)", (int)in);
	snprintf(msg, sizeof(msg), "event %s%s: %s", name, where, err);
	rec_set_err(r, "%s%s", msg, "");
}

static int uprobe_event(struct rec *r, int i)
{
	struct ustack_probe_spec spec;
	char err[PATH_MAX + 256];
	int ret = ustack_probe_parse(r->events[i].perf.name, &spec, err, sizeof(err));

	if (ret <= 0) {
		if (ret)
			rec_set_err(r, "%s%s", err, "");
		else
			rec_set_err(r, "not a probe name: %s%s", r->events[i].perf.name, "");
		return ret ? ret : -EINVAL;
	}
	for (int k = 0; k < nr_targets(r); k++) {
		pid_t in, for_pid;

		target(r, k, &in, &for_pid);
		ret = resolve_spec(r, i, &spec, 0, in, for_pid, err, sizeof(err));
		if (ret) {
			probe_err(r, r->events[i].perf.name, in, err);
			return ret;
		}
	}
	return 0;
}

static int jemalloc_or_tcmalloc(const char *base, const char *unused)
{
	(void)unused;
	return (!strncmp(base, "libjemalloc.so", 14) || !strncmp(base, "libtcmalloc", 11)) &&
	       strstr(base, ".so");
}

/* an allocator LD_PRELOADed into ustack's environment (a command started
 * from here inherits it): its path, else "" */
static void preloaded_allocator(char *out, size_t sz)
{
	const char *pre = getenv("LD_PRELOAD");
	char buf[PATH_MAX * 2];

	out[0] = 0;
	if (!pre || strlen(pre) >= sizeof(buf))
		return;
	strcpy(buf, pre);
	for (char *save, *tok = strtok_r(buf, " :", &save); tok; tok = strtok_r(NULL, " :", &save)) {
		const char *b = strrchr(tok, '/');

		if (tok[0] == '/' && jemalloc_or_tcmalloc(b + 1, NULL) && strlen(tok) < sz) {
			strcpy(out, tok);
			return;
		}
	}
}

/* the allocator of @in (0: a command started from here, or -a) */
static int find_allocator(pid_t in, char *path, size_t sz, char *err, size_t errlen)
{
	char root[32] = "";

	if (in > 0) {
		int ret = ustack_lib_find_mapped("", jemalloc_or_tcmalloc, in, path, sz);

		if (ret != -ENOENT) {
			if (ret)
				snprintf(err, errlen, "/proc/%d/maps: %s", (int)in, strerror(-ret));
			return ret;
		}
		snprintf(root, sizeof(root), "/proc/%d/root", (int)in);
	} else {
		preloaded_allocator(path, sz);
		if (path[0])
			return 0;
	}
	return ustack_lib_find("libc", in, root, path, sz, err, errlen);
}

static int alloc_for(struct rec *r, int i, pid_t in, pid_t for_pid, char *err, size_t errlen)
{
	struct ustack_probe_spec spec = { .kind = USTACK_PROBE_UPROBE };
	int ret = find_allocator(in, spec.path, sizeof(spec.path), err, errlen);

	for (size_t f = 0; !ret && f < sizeof(alloc_fns) / sizeof(alloc_fns[0]); f++) {
		snprintf(spec.symbol, sizeof(spec.symbol), "%s", alloc_fns[f].name);
		for (int ret_probe = 0; !ret && ret_probe <= alloc_fns[f].ret; ret_probe++) {
			spec.kind = ret_probe ? USTACK_PROBE_URETPROBE : USTACK_PROBE_UPROBE;
			ret = resolve_spec(r, i, &spec, alloc_fns[f].fn, in, for_pid, err, errlen);
			/* an allocator may lack the old ones (valloc, pvalloc) */
			if (ret == -ENOENT && !alloc_fns[f].required)
				ret = 0;
		}
	}
	return ret;
}

static int alloc_event(struct rec *r, int i)
{
	char err[PATH_MAX + 256];

	for (int k = 0; k < nr_targets(r); k++) {
		pid_t in, for_pid;
		int ret;

		target(r, k, &in, &for_pid);
		ret = alloc_for(r, i, in, for_pid, err, sizeof(err));
		if (ret) {
			probe_err(r, "alloc", in, err);
			return ret;
		}
	}
	return 0;
}

int rec_probes_resolve(struct rec *r)
{
	for (int i = 0; i < r->nr_events; i++) {
		enum rec_attach a = r->events[i].kind->attach;
		int ret = 0;

		if (a == REC_ATTACH_UPROBE)
			ret = uprobe_event(r, i);
		else if (a == REC_ATTACH_ALLOC && r->events[i].alloc == REC_ALLOC_ALLOC)
			ret = alloc_event(r, i);
		if (ret) {
			rec_probes_free(r);
			return ret;
		}
	}
	return 0;
}

void rec_probes_free(struct rec *r)
{
	free(r->probes.v);
	r->probes.v = NULL;
	r->probes.nr = 0;
}
