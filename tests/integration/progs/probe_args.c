// SPDX-License-Identifier: MIT
/*
 * The payload of every EVENT of a trace, read with the library's trace
 * reader, for tests/integration/probes_bpf.sh (what the report's outputs
 * do not show):
 *   A NAME NR ARG...   an EVENT of event NAME with NR args (signed decimal),
 *                      NR 0 when it stored none
 * usage: probe_args TRACE
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/trace.h>

#define MAX_DESC 64

int main(int argc, char **argv)
{
	struct ustack_trace_reader_opts ro = { .sz = sizeof(ro),
					       .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_trace_record rec;
	struct ustack_trace_reader *r;
	char *name[MAX_DESC] = { 0 };
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: probe_args TRACE\n");
		return 2;
	}
	r = ustack_trace_reader__open(argv[1], &ro);
	if (!r) {
		perror(argv[1]);
		return 1;
	}
	while ((rc = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		if (rec.type == USTACK_TRACE_EVENT_DESC && rec.event_desc.id < MAX_DESC &&
		    !name[rec.event_desc.id]) {
			name[rec.event_desc.id] = strdup(rec.event_desc.name ? rec.event_desc.name : "?");
		} else if (rec.type == USTACK_TRACE_EVENT) {
			const struct ustack_trace_event *e = &rec.event;
			uint32_t n = (e->flags & USTACK_TRACE_EVENT_HAS_ARGS) ? e->nr_args : 0;

			printf("A %s %u", e->event_id < MAX_DESC && name[e->event_id]
						  ? name[e->event_id] : "?", n);
			for (uint32_t i = 0; i < n && i < USTACK_TRACE_MAX_ARGS; i++)
				printf(" %" PRId64, (int64_t)e->args[i]);
			printf("\n");
		}
	}
	if (rc < 0) {
		fprintf(stderr, "%s: reading: %d\n", argv[1], rc);
		return 1;
	}
	ustack_trace_reader__close(r);
	for (int i = 0; i < MAX_DESC; i++)
		free(name[i]);
	return 0;
}
