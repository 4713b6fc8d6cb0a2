// SPDX-License-Identifier: MIT
/*
 * Every EVENT of a trace with its args, for probes_copy.sh (the report's
 * outputs aggregate them away), read with the library's trace reader,
 * stitcher and symbolizer:
 *   E NAME TID ARGS STACK   ARGS: the args as signed decimals joined by
 *                           ',' ("-": none stored); STACK: the user
 *                           frames root first joined by ';' ("-": none)
 *   L COUNT                 a LOST record
 * usage: probe_copy_events TRACE
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/symbolize.h>
#include <ustack/trace.h>

#define MAX_DESC 64

static char *desc_name[MAX_DESC];

static void print_stack(struct ustack_trace_reader *r, struct ustack_symbolizer *sy,
			const struct ustack_trace_stitched *e)
{
	struct ustack_trace_stack st;

	if (e->result != USTACK_TRACE_STITCH_OK || e->ustack_id == USTACK_TRACE_NO_STACK ||
	    ustack_trace_reader__stack(r, USTACK_TRACE_USTACK, e->ustack_id, &st) || !st.nr) {
		printf("-\n");
		return;
	}
	for (uint32_t i = st.nr; i-- > 0;) {
		const struct ustack_trace_frame *f = &st.frames[i];
		struct ustack_sym s;

		memset(&s, 0, sizeof(s));
		if (ustack_symbolizer__symbolize(sy, f->file_id, f->offset,
						 (f->flags & USTACK_TRACE_FRAME_EXACT_PC) ?
						 USTACK_SYM_EXACT_PC : 0, &s) == 0 &&
		    s.status == USTACK_SYM_OK && s.name)
			printf("%s", s.name);
		else
			printf("?");
		printf("%s", i ? ";" : "\n");
	}
}

static void print_event(struct ustack_trace_reader *r, struct ustack_symbolizer *sy,
			const struct ustack_trace_stitched *e)
{
	const struct ustack_trace_event *ev = &e->event;

	printf("E %s %u ", ev->event_id < MAX_DESC && desc_name[ev->event_id] ?
	       desc_name[ev->event_id] : "?", ev->tid);
	if (!(ev->flags & USTACK_TRACE_EVENT_HAS_ARGS) || !ev->nr_args)
		printf("-");
	for (uint32_t i = 0; (ev->flags & USTACK_TRACE_EVENT_HAS_ARGS) && i < ev->nr_args &&
			     i < USTACK_TRACE_MAX_ARGS; i++)
		printf("%s%" PRId64, i ? "," : "", (int64_t)ev->args[i]);
	printf(" ");
	print_stack(r, sy, e);
}

static int handle(struct ustack_symbolizer *sy, const struct ustack_trace_record *rec)
{
	if (rec->type == USTACK_TRACE_EVENT_DESC) {
		const struct ustack_trace_event_desc *d = &rec->event_desc;

		if (d->id < MAX_DESC && !desc_name[d->id])
			desc_name[d->id] = strdup(d->name ? d->name : "?");
	} else if (rec->type == USTACK_TRACE_FILE_MAP) {
		if (ustack_symbolizer__add_file(sy, &rec->file_map) && rec->file_map.file_id)
			return -1;
	} else if (rec->type == USTACK_TRACE_LOST) {
		printf("L %llu\n", (unsigned long long)rec->lost.count);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ustack_trace_reader_opts ro = { .sz = sizeof(ro),
					       .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_symbolizer_opts so = { .sz = sizeof(so), .flags = USTACK_SYMBOLIZER_NO_LINES };
	struct ustack_trace_record rec;
	struct ustack_trace_stitched e;
	struct ustack_trace_reader *r;
	struct ustack_symbolizer *sy;
	struct ustack_trace_stitcher *s;
	int rc, more;

	if (argc != 2) {
		fprintf(stderr, "usage: probe_copy_events TRACE\n");
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
		if (more && handle(sy, &rec))
			return 1;
		if (ustack_trace_stitcher__push(s, more ? &rec : NULL))
			return 1;
		while (ustack_trace_stitcher__pop(s, &e) == 1)
			print_event(r, sy, &e);
	} while (more);
	if (rc < 0) {
		fprintf(stderr, "probe_copy_events: %s: %s\n", argv[1], ustack_trace_reader__error(r));
		return 1;
	}
	ustack_trace_stitcher__free(s);
	ustack_symbolizer__free(sy);
	ustack_trace_reader__close(r);
	for (int i = 0; i < MAX_DESC; i++)
		free(desc_name[i]);
	return 0;
}
