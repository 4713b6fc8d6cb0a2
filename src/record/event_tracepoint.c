// SPDX-License-Identifier: MIT
/*
 * Tracepoints, SUBSYSTEM:NAME: every hit is an event that counts 1. A
 * system call's (syscalls:*) is told to the BPF program (UB_TP_SYSCALL):
 * each such event is an entry of its own, as perf's samples of them carry
 * the user registers.
 */
#include <stdio.h>
#include <string.h>

#include "bpf/record_abi.h"
#include "record/event.h"

static int tracepoint_parse(const char *spec, struct rec_event *ev, char *err, size_t errlen)
{
	int ret;

	if (!strchr(spec, ':'))
		return 0;
	ret = ustack_perf_tracepoint(spec, &ev->perf, err, errlen);
	if (ret)
		return ret;
	if (!strncmp(spec, "syscalls:", 9))
		ev->bpf_flags = UB_TP_SYSCALL;
	snprintf(ev->tracepoint, sizeof(ev->tracepoint), "%s", spec);
	return 1;
}

static void tracepoint_describe(const struct rec_event *ev, const struct ustack_record_opts *o,
				struct ustack_trace_event_desc *d)
{
	d->type = USTACK_TRACE_EV_TRACEPOINT;
	d->flags = 0;
	d->period = 1;
}

const struct rec_event_kind rec_event_tracepoint = {
	.name = "tracepoint",
	.help = "SUBSYSTEM:TRACEPOINT",
	.attach = REC_ATTACH_TRACEPOINT,
	.parse = tracepoint_parse,
	.describe = tracepoint_describe,
};
