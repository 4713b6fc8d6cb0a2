/* SPDX-License-Identifier: MIT */
/*
 * The kernel's deferred user callchains (Linux 6.19+), a part of the copy
 * backend (kfp.c says how they are matched and trusted).
 */
#ifndef USTACK_RECORD_KFP_H
#define USTACK_RECORD_KFP_H

#include <stdint.h>

#include "deferred/deferred.h"
#include "perf/perf_events.h"

struct rec;
struct rec_kfp;
struct ustack_trace_user_stack;

/* NULL: out of memory */
struct rec_kfp *rec_kfp_new(void);
void rec_kfp_free(struct rec_kfp *kfp);
/* a sample with a kernel cookie that got ustack's @cookie */
void rec_kfp_sample(struct rec *r, struct rec_kfp *kfp, const struct ustack_perf_sample *s,
		    uint64_t cookie);
/* a PERF_RECORD_CALLCHAIN_DEFERRED */
void rec_kfp_deferred(struct rec *r, struct rec_kfp *kfp, const struct ustack_perf_record *rec);
/* ustack's own stack of an entry: 1 when written (or kept) here, 0 when
 * the entry had no kernel cookie (the caller writes it) */
int rec_kfp_user_stack(struct rec *r, struct rec_kfp *kfp, uint64_t cookie,
		       const struct ustack_deferred_task *task, struct ustack_trace_user_stack *u,
		       const struct ustack_deferred_stack *stack);
void rec_kfp_exec(struct rec *r, struct rec_kfp *kfp, uint32_t tid);
void rec_kfp_exit(struct rec *r, struct rec_kfp *kfp, uint32_t tid);
/* the end: stacks still waiting for the kernel's are written */
void rec_kfp_finish(struct rec *r, struct rec_kfp *kfp);

#endif
