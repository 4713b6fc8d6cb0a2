// SPDX-License-Identifier: MIT
/*
 * User-space probes as events: uprobe:PATH:SYMBOL[+OFF], uprobe:PATH:0xADDR,
 * uretprobe:PATH:SYMBOL, usdt:PATH:PROVIDER:NAME (src/probe/probe.h). The
 * name is only split here; where it is (which files, which offsets) is
 * resolved by the set-up once the targets are known (probes.c), in their
 * mount namespace. Each hit weighs one; its payload (a return value, USDT
 * arguments) goes into the EVENT's args.
 */
#include "probe/probe.h"
#include "record/event.h"

static int probe_parse(const char *spec, struct rec_event *ev, char *err, size_t errlen)
{
	struct ustack_probe_spec ps;
	int ret = ustack_probe_parse(spec, &ps, err, errlen);

	if (ret > 0)
		ev->probe = ps.kind;
	return ret;
}

static void probe_describe(const struct rec_event *ev, const struct ustack_record_opts *o,
			   struct ustack_trace_event_desc *d)
{
	(void)ev;
	(void)o;
	d->type = USTACK_TRACE_EV_PROBE;
	d->flags = USTACK_TRACE_EV_UNIT_COUNT;
}

const struct rec_event_kind rec_event_probe = {
	.name = "probe",
	.help = "uprobe:PATH:SYMBOL, uretprobe:PATH:SYMBOL, usdt:PATH:PROVIDER:NAME",
	.attach = REC_ATTACH_UPROBE,
	.parse = probe_parse,
	.describe = probe_describe,
};
