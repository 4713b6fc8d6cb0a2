// SPDX-License-Identifier: MIT
/*
 * The table of event kinds (event.h) and what the recorder asks of it:
 * a -e name to an event, an event to its EVENT_DESC.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "record/event.h"

const struct rec_event_kind *const rec_event_kinds[] = {
	&rec_event_sampling,
	&rec_event_offcpu,
	&rec_event_alloc,
	/* "uprobe:", "uretprobe:", "usdt:" before the tracepoint's "A:B" */
	&rec_event_probe,
	/* claims every "A:B": after any kind with a prefix of its own */
	&rec_event_tracepoint,
	NULL,
};

/* "unknown event 'X' (HELP1, HELP2, or HELPn)" */
static void unknown(const char *spec, char *err, size_t errlen)
{
	size_t n = (size_t)snprintf(err, errlen, "unknown event '%s' (", spec);

	for (int i = 0; rec_event_kinds[i] && n < errlen; i++)
		n += (size_t)snprintf(err + n, errlen - n, "%s%s", i ? (rec_event_kinds[i + 1] ?
						", " : ", or ") : "", rec_event_kinds[i]->help);
	if (n < errlen)
		snprintf(err + n, errlen - n, ")");
}

int rec_event_parse(const char *spec, struct rec_event *ev, char *err, size_t errlen)
{
	memset(ev, 0, sizeof(*ev));
	if (strlen(spec) >= sizeof(ev->perf.name)) {
		snprintf(err, errlen, "event name too long: '%.40s...'", spec);
		return -ENAMETOOLONG;
	}
	for (int i = 0; rec_event_kinds[i]; i++) {
		int ret;

		strcpy(ev->perf.name, spec);
		ret = rec_event_kinds[i]->parse(spec, ev, err, errlen);
		if (ret < 0)
			return ret;
		if (ret) {
			ev->kind = rec_event_kinds[i];
			return 0;
		}
		memset(ev, 0, sizeof(*ev));
	}
	unknown(spec, err, errlen);
	return -ENOENT;
}

void rec_event_describe(const struct rec_event *ev, uint32_t id, const struct ustack_record_opts *o,
			struct ustack_trace_event_desc *d)
{
	*d = (struct ustack_trace_event_desc){ .id = id, .name = ev->perf.name };
	ev->kind->describe(ev, o, d);
}
