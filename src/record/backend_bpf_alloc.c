// SPDX-License-Identifier: MIT
/*
 * record --alloc in the BPF backend: the byte sampling and the live map are
 * the kernel program's (src/bpf/alloc.bpf.h); this file attaches it to the
 * allocator functions the resolver found (probes.c), keeps the live map
 * free of processes that exited, and reads the counters into the stats.
 *
 * The live map is keyed by tgid + address. A process that exits frees
 * nothing, so its entries would stay until the map is full; and its tgid
 * may be given to another process, whose free() of an address the dead
 * one had would then send a "free" of an allocation it never made. Their
 * entries are removed after the exit of the process's last thread, by a
 * walk of the map (bpf_map_get_next_key: one system call per entry, so
 * only for processes that had a kept allocation, batched per read).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/hashmap.h>
#include "common/grow.h"
#include "record/backend_bpf_alloc.h"
#include "record/rec.h"

struct rec_bpf_alloc {
	struct ustack_u64map *seen; /* pids with an "alloc" event -> 1 */
	uint32_t *gone;             /* of those, leaders that exited */
	size_t nr_gone, cap_gone;
	uint64_t purged;            /* entries removed */
};

int rec_bpf_alloc_opts(const struct rec *r, struct ustack_bpf_opts *bo, char *err, size_t errlen)
{
	bo->alloc_event = bo->free_event = UB_NO_EVENT;
	bo->alloc_mean = 1;
	bo->alloc_live_max = r->o->alloc_live_max ? r->o->alloc_live_max : REC_ALLOC_LIVE_DEFAULT;
	for (int i = 0; i < r->nr_events; i++) {
		const struct rec_event *ev = &r->events[i];
		uint32_t *idx;

		if (ev->kind->attach != REC_ATTACH_ALLOC)
			continue;
		idx = ev->alloc == REC_ALLOC_ALLOC ? &bo->alloc_event : &bo->free_event;
		if (*idx != UB_NO_EVENT) {
			snprintf(err, errlen, "BPF backend: event %s given twice", ev->perf.name);
			return -EINVAL;
		}
		*idx = (uint32_t)i;
		if (ev->alloc == REC_ALLOC_ALLOC)
			bo->alloc_mean = ev->alloc_mean;
	}
	return 0;
}

static const char *prog_of(const struct rec_probe *p)
{
	if (p->alloc_fn >= REC_AF_HIT)
		return "ustack_alloc_hit"; /* --alloc-via=preload */
	if (p->alloc_fn == REC_AF_FREE)
		return "ustack_alloc_free";
	return p->t.kind == USTACK_PROBE_URETPROBE ? "ustack_alloc_ret" : "ustack_alloc_enter";
}

int rec_bpf_alloc_attach(struct rec *r, struct ustack_bpf *bpf, pid_t child,
			 uint64_t *attached, char *err, size_t errlen)
{
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < r->probes.nr; i++) {
			const struct rec_probe *p = &r->probes.v[i];
			int ret, pid, ret_probe = p->t.kind == USTACK_PROBE_URETPROBE;
			char e[PATH_MAX + 128];

			if (!p->alloc_fn || p->alloc_fn >= REC_AF_NR || ret_probe != !pass)
				continue;
			pid = p->pid > 0 ? p->pid : p->pid < 0 ? -1 : child;
			if (!pid) {
				snprintf(err, errlen, "record --alloc: %s in %s: no process to "
					 "attach it for", p->t.symbol, p->t.shown);
				return -EINVAL;
			}
			ret = ustack_bpf__attach_uprobe(bpf, prog_of(p), ret_probe, pid, p->t.path,
							p->t.offset, 0, p->alloc_fn, e, sizeof(e));
			if (ret) {
				snprintf(err, errlen, "record --alloc: %s (%s of %s)", e, p->t.symbol,
					 p->t.shown);
				return ret;
			}
			(*attached)++;
		}
	}
	return 0;
}

void rec_bpf_alloc_seen(struct rec_bpf_alloc **a, uint32_t pid)
{
	if (!*a) {
		*a = calloc(1, sizeof(**a));
		if (*a && !((*a)->seen = ustack_u64map__new())) {
			free(*a);
			*a = NULL;
		}
		if (!*a)
			return; /* no purge: the map may fill, drops counted */
	}
	ustack_u64map__put((*a)->seen, pid, 1);
}

void rec_bpf_alloc_exit(struct rec_bpf_alloc *a, uint32_t tid)
{
	uint64_t v;

	if (!a || !ustack_u64map__delete(a->seen, tid, &v))
		return;
	if (!ustack_grow((void **)&a->gone, &a->cap_gone, a->nr_gone + 1, sizeof(*a->gone), 16))
		a->gone[a->nr_gone++] = tid;
}

/* Threads of process @pid still running (0: gone or reaped; a process
 * whose leader exited first is a zombie leader and its other threads). */
static unsigned threads_of(uint32_t pid)
{
	char path[64], line[128];
	unsigned n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %u", &n) == 1)
			break;
	fclose(f);
	return n;
}

void rec_bpf_alloc_purge(struct rec_bpf_alloc *a, struct ustack_bpf *bpf)
{
	size_t running = 0, nr_dead = 0;
	uint32_t *dead;

	if (!a || !a->nr_gone || !(dead = malloc(a->nr_gone * sizeof(*dead))))
		return;
	/* the leader left first: purged when the last thread has gone too
	 * (a zombie shows 1 thread); until then kept for the next read */
	for (size_t i = 0; i < a->nr_gone; i++) {
		if (threads_of(a->gone[i]) > 1)
			a->gone[running++] = a->gone[i];
		else
			dead[nr_dead++] = a->gone[i];
	}
	a->nr_gone = running;
	if (nr_dead) {
		int ret = ustack_bpf__alloc_purge(bpf, dead, nr_dead);

		if (ret > 0)
			a->purged += (uint64_t)ret;
	}
	free(dead);
}

void rec_bpf_alloc_stats(const struct ustack_bpf_stats *bs, struct ustack_record_stats *st)
{
	st->alloc_calls = bs->c[UB_C_ALLOC_CALLS];
	st->alloc_bytes = bs->c[UB_C_ALLOC_BYTES];
	st->alloc_live_dropped = bs->c[UB_C_ALLOC_LIVE_DROPPED];
}

void rec_bpf_alloc_free(struct rec_bpf_alloc *a)
{
	if (!a)
		return;
	ustack_u64map__free(a->seen);
	free(a->gone);
	free(a);
}
