// SPDX-License-Identifier: MIT
/*
 * The wall-clock view of the viewer outputs (pprof, speedscope, perf-script)
 * driven as `ustack report --wall` drives them: report_pprof_opts.wall and
 * cli_report_viewer__set_wall() (src/cli/out_pprof.h, out_viewers.h), fed
 * every stitched event of a trace in order, each with its thread's name at
 * the time. It links the CLI's own objects, so the outputs are checked by
 * their readers (go tool pprof, python) while cmd_report.c's --wall option
 * is written apart (tests/integration/report_weights_viewers.sh).
 * usage: viewers_wall pprof|speedscope|perf-script TRACE OUT
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <ustack/symbolize.h>
#include <ustack/trace.h>
#include "cli/out_pprof.h"
#include "cli/out_viewers.h"

static char comms[64][16]; /* by tid, the test traces' tids are small */

static const char *comm_of(uint32_t tid)
{
	return tid < 64 ? comms[tid] : "";
}

static const char *comm_cb(void *ctx, uint32_t comm)
{
	(void)ctx;
	return comm_of(comm);
}

static int feed(struct ustack_trace_stitcher *st, struct report_pprof *rp,
		struct cli_report_viewer *v)
{
	struct ustack_trace_stitched s;

	while (ustack_trace_stitcher__pop(st, &s) == 1) {
		int ret = rp ? report_pprof__event(rp, &s, s.event.tid)
			     : cli_report_viewer__event(v, &s, comm_of(s.event.tid));

		if (ret)
			return ret;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ustack_trace_reader_opts ro = { .sz = sizeof(ro), .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_symbolizer_opts so = { .sz = sizeof(so) };
	struct ustack_trace_record rec;
	struct ustack_trace_reader *r;
	struct ustack_trace_stitcher *st;
	struct ustack_symbolizer *sym;
	struct report_pprof *rp = NULL;
	struct cli_report_viewer *v = NULL;
	FILE *out;
	int ret, pprof;

	if (argc != 4)
		return 2;
	pprof = !strcmp(argv[1], "pprof");
	r = ustack_trace_reader__open(argv[2], &ro);
	st = ustack_trace_stitcher__new();
	so.flags = pprof ? USTACK_SYMBOLIZER_NO_DEMANGLE : 0;
	sym = ustack_symbolizer__new(&so);
	out = fopen(argv[3], "w");
	if (!r || !st || !sym || !out)
		return 1;
	if (pprof) {
		struct report_pprof_opts po = { .r = r, .sym = sym, .in_path = argv[2], .wall = 1 };

		rp = report_pprof__new(&po);
	} else {
		v = cli_report_viewer__new(strcmp(argv[1], "speedscope") ? CLI_VIEWER_PERFSCRIPT
									 : CLI_VIEWER_SPEEDSCOPE,
					   r, sym, NULL, "wall", out);
		if (v)
			cli_report_viewer__set_wall(v, 1);
	}
	if (!rp && !v)
		return 1;
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		if (rec.type == USTACK_TRACE_THREAD && rec.thread.tid < 64)
			snprintf(comms[rec.thread.tid], sizeof(comms[0]), "%s", rec.thread.comm);
		if (ustack_trace_stitcher__push(st, &rec) || feed(st, rp, v))
			return 1;
	}
	if (ret || ustack_trace_stitcher__push(st, NULL) || feed(st, rp, v))
		return 1;
	ret = rp ? report_pprof__write(rp, out, comm_cb, NULL) : cli_report_viewer__finish(v);
	report_pprof__free(rp);
	cli_report_viewer__free(v);
	ustack_symbolizer__free(sym);
	ustack_trace_stitcher__free(st);
	ustack_trace_reader__close(r);
	return ret || fclose(out) ? 1 : 0;
}
