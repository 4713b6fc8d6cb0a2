/* SPDX-License-Identifier: MIT */
/*
 * Allocation views of `ustack report` (trace format 1.4): which "alloc"
 * EVENTs are live at a time, and what one weighs in each of pprof's four
 * views. An allocation is live from its time until the first later event
 * of the same pid and address: its "free", or another "alloc" at that
 * address (its free was lost). A free with no allocation before it freed
 * one the sampling did not keep: it changes nothing. Pairing is by time,
 * never by file order: the CPUs' events are not sorted in the file.
 */
#ifndef USTACK_CLI_REPORT_ALLOC_H
#define USTACK_CLI_REPORT_ALLOC_H

#include <stdint.h>

#include <ustack/trace.h>

enum report_view {
	REPORT_VIEW_DEFAULT = 0, /* none given: inuse_space */
	REPORT_VIEW_ALLOC_SPACE,
	REPORT_VIEW_ALLOC_OBJECTS,
	REPORT_VIEW_INUSE_SPACE,
	REPORT_VIEW_INUSE_OBJECTS,
};

/* "alloc_space" ... "inuse_objects"; 0 or -EINVAL */
int report_view_parse(const char *s, enum report_view *v);
const char *report_view_name(enum report_view v);

static inline int report_view_inuse(enum report_view v)
{
	return v == REPORT_VIEW_INUSE_SPACE || v == REPORT_VIEW_INUSE_OBJECTS ||
	       v == REPORT_VIEW_DEFAULT;
}

static inline int report_view_objects(enum report_view v)
{
	return v == REPORT_VIEW_ALLOC_OBJECTS || v == REPORT_VIEW_INUSE_OBJECTS;
}

/* an "alloc" EVENT's size and address (args[0], args[1]); 0, or -EINVAL
 * when it does not carry them (a damaged or hostile trace) */
int report_alloc_args(const struct ustack_trace_event *e, uint64_t *size, uint64_t *addr);

/* the estimated number of allocations an "alloc" EVENT stands for: its
 * unbiased bytes over its size (0 for a size of 0) */
double report_alloc_objects(const struct ustack_trace_event *e);

/*
 * --at: "SECONDS" since the trace's first event, or "@SECS.FRACTION" an
 * absolute time as text and raw lines print them. 0 or -EINVAL.
 */
struct report_at {
	int set, absolute;
	uint64_t ns;
};
int report_at_parse(const char *s, struct report_at *at);

struct report_alloc;

struct report_alloc_stats {
	uint64_t allocs, frees;  /* "alloc" and "free" EVENTs up to the time */
	uint64_t live;           /* allocations live at the time */
	uint64_t bad;            /* alloc/free EVENTs without their args */
	uint64_t time;           /* the time live is at (absolute ns) */
};

struct report_alloc *report_alloc__new(void);
void report_alloc__free(struct report_alloc *a);

/* Read trace @path for its "alloc" and "free" EVENTs and pair them as of
 * @at (not set: the end of the trace). 1: the trace has allocation
 * events, 0: none (its event descriptions come before its events), or
 * -errno (-ENOMEM, the reader's open error). A damaged file is read up to
 * the damage: the report's own pass says where. */
int report_alloc__scan(struct report_alloc *a, const char *path, const struct report_at *at);

/* One event in any order, at most at the time of the views: 0 or -ENOMEM */
int report_alloc__add(struct report_alloc *a, int is_free, uint32_t pid, uint64_t addr,
		      uint64_t time);

/* Is the "alloc" EVENT of @pid, @addr at @time live at the views' time? */
int report_alloc__live(const struct report_alloc *a, uint32_t pid, uint64_t addr, uint64_t time);

const struct report_alloc_stats *report_alloc__stats(const struct report_alloc *a);

#endif
