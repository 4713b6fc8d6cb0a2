/* SPDX-License-Identifier: MIT */
/*
 * record --alloc in the BPF backend (backend_bpf_alloc.c): the allocator
 * probes attached, the live map kept clear of dead processes, the alloc_*
 * stats. Called from backend_bpf.c at its open, start, events, exits,
 * reads and stats.
 */
#ifndef USTACK_RECORD_BACKEND_BPF_ALLOC_H
#define USTACK_RECORD_BACKEND_BPF_ALLOC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ustack/record.h>
#include "bpfload/bpf_backend.h"

struct rec;
struct rec_bpf_alloc;

/* The "alloc" and "free" events' indexes (UB_NO_EVENT: not recorded),
 * the sampling mean and the live map's size into @bo. 0 or -EINVAL. */
int rec_bpf_alloc_opts(const struct rec *r, struct ustack_bpf_opts *bo, char *err, size_t errlen);
/* Attach the allocator functions of r->probes (returns before entries:
 * every entry seen then has its return). @child: the command's pid. */
int rec_bpf_alloc_attach(struct rec *r, struct ustack_bpf *bpf, pid_t child, char *err,
			 size_t errlen);
/* An "alloc" event of process @pid was read (its live entries to purge at
 * its exit). *@a created at the first. */
void rec_bpf_alloc_seen(struct rec_bpf_alloc **a, uint32_t pid);
/* Thread @tid exited: where it was a process's leader, that process's
 * live entries are purged once its last thread is gone. */
void rec_bpf_alloc_exit(struct rec_bpf_alloc *a, uint32_t tid);
/* The purge of the processes gone (at each read). */
void rec_bpf_alloc_purge(struct rec_bpf_alloc *a, struct ustack_bpf *bpf);
void rec_bpf_alloc_stats(const struct ustack_bpf_stats *bs, struct ustack_record_stats *st);
void rec_bpf_alloc_free(struct rec_bpf_alloc *a);

#endif
