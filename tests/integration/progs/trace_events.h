/* SPDX-License-Identifier: MIT */
/*
 * What the tests' event listers share (offcpu_events.c, alloc_events.c,
 * probes_more_events.c, probe_copy_events.c): a trace read with the
 * library's reader, stitcher and symbolizer, one line per EVENT_DESC
 * ("D ID TYPE FLAGS PERIOD NAME") and LOST record ("L COUNT"), and each
 * stitched event handed to the lister's own printer. Header only: each
 * lister is built alone by one compiler command.
 */
#ifndef USTACK_TEST_TRACE_EVENTS_H
#define USTACK_TEST_TRACE_EVENTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/symbolize.h>
#include <ustack/trace.h>

#define EV_MAX_DESC 64

static char *ev_desc_name[EV_MAX_DESC];

/* The name of event @id, NULL when no EVENT_DESC named it. */
static inline const char *ev_name(uint32_t id)
{
	return id < EV_MAX_DESC ? ev_desc_name[id] : NULL;
}

/* A frame's function, or [BASENAME] of its file, or [unknown]. */
static inline void ev_frame_name(struct ustack_symbolizer *sy, const struct ustack_trace_frame *f,
				 char *buf, size_t len)
{
	struct ustack_sym s;
	const char *base;

	memset(&s, 0, sizeof(s));
	if (ustack_symbolizer__symbolize(sy, f->file_id, f->offset,
					 (f->flags & USTACK_TRACE_FRAME_EXACT_PC) ? USTACK_SYM_EXACT_PC : 0,
					 &s) == 0 && s.status == USTACK_SYM_OK && s.name) {
		snprintf(buf, len, "%s", s.name);
		return;
	}
	base = s.path ? strrchr(s.path, '/') : NULL;
	snprintf(buf, len, "[%s]", base ? base + 1 : "unknown");
}

/* The event's user frames joined by ';' (@root_first: from the root,
 * else from the leaf) and a newline; "-" when it has none. */
static inline void ev_print_stack(struct ustack_trace_reader *r, struct ustack_symbolizer *sy,
				  const struct ustack_trace_stitched *e, int root_first)
{
	struct ustack_trace_stack st;
	char name[512];

	if (e->result != USTACK_TRACE_STITCH_OK || e->ustack_id == USTACK_TRACE_NO_STACK ||
	    ustack_trace_reader__stack(r, USTACK_TRACE_USTACK, e->ustack_id, &st) || !st.nr) {
		printf("-\n");
		return;
	}
	for (uint32_t k = 0; k < st.nr; k++) {
		uint32_t i = root_first ? st.nr - 1 - k : k;

		ev_frame_name(sy, &st.frames[i], name, sizeof(name));
		printf("%s%s", name, k + 1 < st.nr ? ";" : "\n");
	}
}

static inline int ev_handle(struct ustack_symbolizer *sy, const struct ustack_trace_record *rec)
{
	switch (rec->type) {
	case USTACK_TRACE_EVENT_DESC: {
		const struct ustack_trace_event_desc *d = &rec->event_desc;

		if (d->id < EV_MAX_DESC && !ev_desc_name[d->id]) {
			ev_desc_name[d->id] = strdup(d->name ? d->name : "?");
			printf("D %u %u %u %llu %s\n", d->id, d->type, d->flags,
			       (unsigned long long)d->period, ev_desc_name[d->id]);
		}
		break;
	}
	case USTACK_TRACE_FILE_MAP:
		if (ustack_symbolizer__add_file(sy, &rec->file_map) && rec->file_map.file_id)
			return -1;
		break;
	case USTACK_TRACE_LOST:
		printf("L %llu\n", (unsigned long long)rec->lost.count);
		break;
	}
	return 0;
}

typedef void (*ev_print_fn)(struct ustack_trace_reader *r, struct ustack_symbolizer *sy,
			    const struct ustack_trace_stitched *e);

/* The lister @prog's main: "usage: PROG TRACE"; 0, 1 on a bad trace, 2 on
 * bad usage. */
static inline int ev_main(int argc, char **argv, const char *prog, ev_print_fn print)
{
	struct ustack_trace_reader_opts ro = { .sz = sizeof(ro), .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_symbolizer_opts so = { .sz = sizeof(so), .flags = USTACK_SYMBOLIZER_NO_LINES };
	struct ustack_trace_record rec;
	struct ustack_trace_stitched e;
	struct ustack_trace_reader *r;
	struct ustack_symbolizer *sy;
	struct ustack_trace_stitcher *s;
	int rc, more;

	if (argc != 2) {
		fprintf(stderr, "usage: %s TRACE\n", prog);
		return 2;
	}
	r = ustack_trace_reader__open(argv[1], &ro);
	sy = ustack_symbolizer__new(&so);
	s = ustack_trace_stitcher__new();
	if (!r || !sy || !s) {
		perror(argv[1]);
		return 1;
	}
	do {
		rc = ustack_trace_reader__next(r, &rec, sizeof(rec));
		more = rc == 1;
		if (more && ev_handle(sy, &rec))
			return 1;
		if (ustack_trace_stitcher__push(s, more ? &rec : NULL))
			return 1;
		while (ustack_trace_stitcher__pop(s, &e) == 1)
			print(r, sy, &e);
	} while (more);
	if (rc < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, argv[1], ustack_trace_reader__error(r));
		return 1;
	}
	ustack_trace_stitcher__free(s);
	ustack_symbolizer__free(sy);
	ustack_trace_reader__close(r);
	for (int i = 0; i < EV_MAX_DESC; i++)
		free(ev_desc_name[i]);
	return 0;
}

#endif
