// SPDX-License-Identifier: MIT
/*
 * Every event of a trace with its args, one line each, for the probe tests
 * (tests/integration/probes_more.sh, lib/probe_check.py), read with the
 * library's trace reader, stitcher and symbolizer: what `report` does not
 * print (each probe hit's arguments):
 *   D ID TYPE FLAGS PERIOD NAME          an EVENT_DESC
 *   V EVENT TID VALUE ARGS STACK         an EVENT: VALUE its weight, ARGS its
 *                                       args as signed decimals joined by ','
 *                                       ("-": no args), STACK its user frames
 *                                       root first joined by ';' ("-": no
 *                                       user stack; a frame without a name:
 *                                       [BASENAME])
 *   L COUNT                              a LOST record
 * usage: probes_more_events TRACE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/symbolize.h>
#include <ustack/trace.h>

#define MAX_DESC 64

static char *desc_name[MAX_DESC];

static void frame_name(struct ustack_symbolizer *sy, const struct ustack_trace_frame *f,
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

static void print_event(struct ustack_trace_reader *r, struct ustack_symbolizer *sy,
			const struct ustack_trace_stitched *e)
{
	const struct ustack_trace_event *ev = &e->event;
	struct ustack_trace_stack st;
	char name[512];

	printf("V %s %u %llu ",
	       ev->event_id < MAX_DESC && desc_name[ev->event_id] ? desc_name[ev->event_id] : "?",
	       ev->tid, (unsigned long long)ev->value);
	if (!(ev->flags & USTACK_TRACE_EVENT_HAS_ARGS) || !ev->nr_args || ev->nr_args > USTACK_TRACE_MAX_ARGS)
		printf("- ");
	for (uint32_t i = 0; (ev->flags & USTACK_TRACE_EVENT_HAS_ARGS) && i < ev->nr_args &&
			     i < USTACK_TRACE_MAX_ARGS; i++)
		printf("%lld%s", (long long)ev->args[i], i + 1 < ev->nr_args ? "," : " ");
	if (e->result != USTACK_TRACE_STITCH_OK || e->ustack_id == USTACK_TRACE_NO_STACK ||
	    ustack_trace_reader__stack(r, USTACK_TRACE_USTACK, e->ustack_id, &st) || !st.nr) {
		printf("-\n");
		return;
	}
	for (uint32_t i = st.nr; i-- > 0;) {
		frame_name(sy, &st.frames[i], name, sizeof(name));
		printf("%s%s", name, i ? ";" : "\n");
	}
}

static int handle(struct ustack_trace_reader *r, struct ustack_symbolizer *sy,
		  const struct ustack_trace_record *rec)
{
	switch (rec->type) {
	case USTACK_TRACE_EVENT_DESC: {
		const struct ustack_trace_event_desc *d = &rec->event_desc;

		if (d->id < MAX_DESC && !desc_name[d->id]) {
			desc_name[d->id] = strdup(d->name ? d->name : "?");
			printf("D %u %u %u %llu %s\n", d->id, d->type, d->flags,
			       (unsigned long long)d->period, desc_name[d->id]);
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
	(void)r;
	return 0;
}

int main(int argc, char **argv)
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
		fprintf(stderr, "usage: probes_more_events TRACE\n");
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
		if (more && handle(r, sy, &rec))
			return 1;
		if (ustack_trace_stitcher__push(s, more ? &rec : NULL))
			return 1;
		while (ustack_trace_stitcher__pop(s, &e) == 1)
			print_event(r, sy, &e);
	} while (more);
	if (rc < 0) {
		fprintf(stderr, "probes_more_events: %s: %s\n", argv[1], ustack_trace_reader__error(r));
		return 1;
	}
	ustack_trace_stitcher__free(s);
	ustack_symbolizer__free(sy);
	ustack_trace_reader__close(r);
	for (int i = 0; i < MAX_DESC; i++)
		free(desc_name[i]);
	return 0;
}
