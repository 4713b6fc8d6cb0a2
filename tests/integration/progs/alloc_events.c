// SPDX-License-Identifier: MIT
/*
 * The allocation events of a trace, one line each, for
 * tests/integration/alloc.sh (what the report's views add up, seen event
 * by event: each allocation's size, address and weight, each free):
 *   D ID TYPE FLAGS PERIOD NAME      an EVENT_DESC
 *   A PID VALUE HAS SIZE ADDR STACK  an "alloc": VALUE its weight (HAS 1 when
 *                                    stored), SIZE and ADDR its args,
 *                                    STACK its user frames leaf first joined
 *                                    by ';' ("-": none; a frame without a
 *                                    name: [BASENAME])
 *   F PID ADDR NARGS HASSTACK        a "free"
 *   L COUNT                          a LOST record
 * usage: alloc_events TRACE
 */
#include <inttypes.h>
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
	const char *name = ev->event_id < MAX_DESC ? desc_name[ev->event_id] : NULL;
	int has_args = !!(ev->flags & USTACK_TRACE_EVENT_HAS_ARGS);
	int has_stack = e->result == USTACK_TRACE_STITCH_OK && e->ustack_id != USTACK_TRACE_NO_STACK;
	struct ustack_trace_stack st;
	char fn[512];

	if (!name)
		return;
	if (!strcmp(name, "free")) {
		printf("F %u %#" PRIx64 " %u %d\n", ev->pid, has_args ? ev->args[0] : 0,
		       has_args ? ev->nr_args : 0, has_stack);
		return;
	}
	if (strcmp(name, "alloc"))
		return;
	printf("A %u %" PRIu64 " %d %" PRIu64 " %#" PRIx64 " ", ev->pid, ev->value,
	       (ev->flags & USTACK_TRACE_EVENT_HAS_VALUE) ? 1 : 0,
	       has_args && ev->nr_args >= 2 ? ev->args[0] : 0,
	       has_args && ev->nr_args >= 2 ? ev->args[1] : 0);
	if (!has_stack || ustack_trace_reader__stack(r, USTACK_TRACE_USTACK, e->ustack_id, &st) ||
	    !st.nr) {
		printf("-\n");
		return;
	}
	for (uint32_t i = 0; i < st.nr; i++) {
		frame_name(sy, &st.frames[i], fn, sizeof(fn));
		printf("%s%s", fn, i + 1 < st.nr ? ";" : "\n");
	}
}

static int handle(struct ustack_symbolizer *sy, const struct ustack_trace_record *rec)
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
		fprintf(stderr, "usage: alloc_events TRACE\n");
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
		fprintf(stderr, "alloc_events: %s: %s\n", argv[1], ustack_trace_reader__error(r));
		return 1;
	}
	ustack_trace_stitcher__free(s);
	ustack_symbolizer__free(sy);
	ustack_trace_reader__close(r);
	for (int i = 0; i < MAX_DESC; i++)
		free(desc_name[i]);
	return 0;
}
