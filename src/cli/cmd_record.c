// SPDX-License-Identifier: MIT
/* ustack record: events with kernel and (deferred) user stacks to a trace. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ustack/record.h>
#include "cli/cli.h"

#define MAX_EVENTS 16
#define MAX_PIDS 256

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	/* counted: a further signal stops the wait for the capture at the end */
	stop_flag = stop_flag + 1;
}

/*
 * -p opens one event per thread, CPU and event (inherit follows only the
 * threads made later): a process of 2,000 threads on 2 CPUs needs 4,000
 * descriptors, past the usual soft limit of 1,024, and the recording
 * failed ("Too many open files"). Raise the soft limit to the hard one, as
 * perf does. Only for -p: a command run with -- CMD would inherit it.
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ustack record [-o FILE] [-e EVENT]... [-F HZ] [--backend bpf|copy|auto]\n"
		"                     [--stack-size BYTES] [--duration SECONDS]\n"
		"                     [-p PID[,PID...] | -a] [-- CMD [ARGS...]]\n"
		"\n"
		"Record events with their kernel stacks and user stacks, unwound without\n"
		"frame pointers (SFrame, DWARF CFI), each frame stored as file offset + file\n"
		"id, each distinct stack once.\n"
		"\n"
		"  -o, --output FILE     trace file (default ustack.data)\n"
		"  -e, --event EVENT     cpu-clock (default), task-clock, page-faults,\n"
		"                        context-switches, cycles, instructions (need a PMU),\n"
		"                        or any tracepoint SUBSYSTEM:NAME (e.g.\n"
		"                        syscalls:sys_enter_futex), or a probe:\n"
		"                        uprobe:LIB:FUNC[+OFF], uretprobe:LIB:FUNC,\n"
		"                        usdt:LIB:[PROVIDER:]NAME (see 'ustack probe');\n"
		"                        repeat for several\n"
		"      --probe-rate N    probe hits recorded per second and CPU at most\n"
		"                        (default 200000; 0: no limit)\n"
		"      --no-python       do not read CPython's frames (bpf backend: the\n"
		"                        functions of a Python 3.11-3.15 program are recorded\n"
		"                        among its native frames unless this is given)\n"
		"      --alloc           record who allocates memory and who holds it: the\n"
		"                        allocations a byte sampling keeps (event alloc,\n"
		"                        weighing bytes) and their frees (event free)\n"
		"      --alloc-mean SIZE  mean bytes between kept allocations (default 512K;\n"
		"                        1: every allocation)\n"
		"      --alloc-live-max N  kept allocations tracked until freed (default 1Mi)\n"
		"      --alloc-via W     how allocations are seen: preload (a command ustack\n"
		"                        starts gets libustack-alloc.so, which samples in the\n"
		"                        program: a few ns a call), uprobes (the allocator's\n"
		"                        functions probed: microseconds a call; -p, -a),\n"
		"                        auto (default: preload where it can)\n"
		"      --off-cpu         record where threads wait: every interval a thread\n"
		"                        spends switched out asleep (event off-cpu), weighing\n"
		"                        its length in ns, with the stacks it blocked in\n"
		"                        (without -e the only event: add -e cpu-clock for\n"
		"                        CPU samples too)\n"
		"      --off-cpu-preempt  also the time threads wait for a CPU after being\n"
		"                        preempted (event off-cpu-preempt, reported apart)\n"
		"      --off-cpu-min TIME  record only intervals at least TIME long (ns, us,\n"
		"                        ms or s; a bare number is ms, as perf's\n"
		"                        --off-cpu-thresh); shorter ones are counted and\n"
		"                        summed (--stats)\n"
		"  -F, --freq HZ         sampling frequency of non-tracepoint events (default 999)\n"
		"      --backend B       where user stacks are unwound:\n"
		"                        bpf: in the kernel at the event, by a BPF program, from\n"
		"                             the same tables (no stack copies, ~56 bytes/event)\n"
		"                        copy: in user space from a copy of the top of the stack\n"
		"                        auto (default): bpf where it loads, else copy\n"
		"      --stack-size B    copy: user stack bytes copied per sample (default 16384,\n"
		"                        max 65528)\n"
		"  -d, --duration S      stop after S seconds\n"
		"  -p, --pid PIDS        record these processes (and their new threads)\n"
		"  -a, --all-cpus        record every process\n"
		"  -- CMD [ARGS...]      alone: run CMD and record it (and its children);\n"
		"                        with -p or -a: record those while CMD runs (as\n"
		"                        perf does; CMD is recorded only as part of -a)\n"
		"  -q, --quiet           no progress line\n"
		"      --max-tables N    unwind tables of at most N files kept open (default 256;\n"
		"                        more are opened again when needed)\n"
		"      --table-memory MIB  bpf: MiB of unwind rows kept in the kernel (default\n"
		"                        256); when full the oldest tables are evicted\n"
		"      --no-kernel-callchains  copy: do not use the kernel's deferred user\n"
		"                        callchains (Linux 6.19+, frame pointers), which are\n"
		"                        otherwise checked against ustack's tables and used\n"
		"                        where the frames keep frame pointers (method kernel-fp)\n"
		"  -N, --no-buildid-cache  do not capture the files the recorded stacks ran\n"
		"                        through into the build-ID cache (USTACK_CACHE_DIR,\n"
		"                        /var/cache/ustack as root)\n"
		"      --capture-max-size SIZE  larger files are hashed, not copied (K, M, G\n"
		"                        suffixes; default 512M)\n"
		"      --stats           print every counter of the recording (stat NAME VALUE)\n"
		"\n"
		"Ctrl-C, SIGTERM, the end of the command (with or without -p/-a) or of the\n"
		"processes (-p without a command), or --duration finish the file; a command\n"
		"still running then is left to finish.\n"
		"Read it with 'ustack report'. The JIT symbol map /tmp/perf-PID.map of a\n"
		"recorded process (node --perf-basic-prof, python3 -X perf) is copied into\n"
		"the trace when the process exits or the recording ends.\n");
}

static int show_progress;

static void progress(void *ctx, const struct ustack_record_stats *st)
{
	if (!show_progress)
		return;
	fprintf(stderr, "\rustack: recording: %llu events, %llu user stacks (%llu distinct), %.1f KiB, "
			"%llu lost   ",
		(unsigned long long)st->events, (unsigned long long)st->user_stacks,
		(unsigned long long)st->distinct_user_stacks, st->bytes / 1024.0,
		(unsigned long long)st->lost);
}

/* --stats: every counter, one "name value" per line on stderr */
static void print_stats(const struct ustack_record_stats *st)
{
	static const char *const methods[8] = { "regs", "sframe", "cfi", "fp", "signal", "plt",
						"kernel-fp", "7" };
	static const char *const kcc[] = { "not-asked", "unsupported", "used" };
	const struct {
		const char *name;
		uint64_t v;
	} rows[] = {
		{ "samples", st->samples }, { "events", st->events },
		{ "user_stacks", st->user_stacks }, { "unwinds", st->unwinds },
		{ "shared", st->shared }, { "no_user_stack", st->no_user_stack },
		{ "kernel_stacks", st->kernel_stacks },
		{ "not_loaded", st->not_loaded }, { "maps_busy", st->maps_busy },
		{ "copied", st->copied }, { "copies_skipped", st->copies_skipped },
		{ "read_faults", st->read_faults },
		{ "kernel_stacks_whole", st->kernel_stacks_whole },
		{ "kernel_stacks_lost", st->kernel_stacks_lost },
		{ "targets_full", st->targets_full },
		{ "distinct_user_stacks", st->distinct_user_stacks }, { "lost", st->lost },
		{ "bad_records", st->bad_records }, { "bytes", st->bytes },
		{ "kernel_bytes", st->kernel_bytes }, { "frames", st->frames },
		{ "kfp_requests", st->kfp_requests }, { "kfp_entries", st->kfp_entries },
		{ "kfp_cookie_mismatch", st->kfp_cookie_mismatch },
		{ "kfp_records", st->kfp_records }, { "kfp_matched", st->kfp_matched },
		{ "kfp_stacks", st->kfp_stacks }, { "kfp_whole", st->kfp_whole },
		{ "kfp_untrusted", st->kfp_untrusted }, { "kfp_disagree", st->kfp_disagree },
		{ "kfp_missing", st->kfp_missing }, { "kfp_extended", st->kfp_extended },
		{ "kfp_moved", st->kfp_moved },
		{ "capture", st->capture }, { "capture_new", st->capture_new },
		{ "capture_cached", st->capture_cached }, { "capture_bytes", st->capture_bytes },
		{ "capture_too_big", st->capture_too_big },
		{ "capture_conflicts", st->capture_conflicts },
		{ "capture_gone", st->capture_gone }, { "capture_by_path", st->capture_by_path }, { "capture_fd_cap", st->capture_fd_cap },
		{ "capture_errors", st->capture_errors }, { "capture_debug", st->capture_debug },
		{ "offcpu_intervals", st->offcpu_intervals }, { "offcpu_ns", st->offcpu_ns },
		{ "offcpu_short", st->offcpu_short }, { "offcpu_short_ns", st->offcpu_short_ns },
		{ "offcpu_unpaired", st->offcpu_unpaired },
		{ "probe_attached", st->probe_attached }, { "probe_hits", st->probe_hits },
		{ "probe_kept", st->probe_kept }, { "probe_rate_dropped", st->probe_rate_dropped },
		{ "probe_run_ns", st->probe_run_ns }, { "probe_runs", st->probe_runs },
		{ "alloc_calls", st->alloc_calls }, { "alloc_bytes", st->alloc_bytes },
		{ "alloc_sampled", st->alloc_sampled }, { "alloc_frees", st->alloc_frees },
		{ "alloc_live_dropped", st->alloc_live_dropped },
		{ "python_found", st->python_found }, { "python_refused", st->python_refused },
		{ "python_copy", st->python_copy }, { "python_frames", st->python_frames },
		{ "python_code_read", st->python_code_read },
		{ "python_code_unreadable", st->python_code_unreadable },
		{ "python_not_placed", st->python_not_placed },
		{ "python_chains_cut", st->python_chains_cut },
		{ "python_copies", st->python_copies }, { "python_early", st->python_early },
		{ "python_beyond_cut", st->python_beyond_cut },
	};

	fprintf(stderr, "stat backend %s\n", st->backend == USTACK_RECORD_BPF ? "bpf" : "copy");
	fprintf(stderr, "stat kernel_callchains %s\n",
		st->kernel_callchains < 3 ? kcc[st->kernel_callchains] : "?");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		fprintf(stderr, "stat %s %llu\n", rows[i].name, (unsigned long long)rows[i].v);
	for (int m = 0; m < 7; m++)
		fprintf(stderr, "stat frames_%s %llu\n", methods[m],
			(unsigned long long)st->frames_by_method[m]);
	fprintf(stderr, "stat capture_cpu_seconds %.3f\n", st->capture_seconds);
	if (st->python_refused)
		fprintf(stderr, "stat python_refused_why %s\n", st->python_refused_why);
	if (st->alloc_via)
		fprintf(stderr, "stat alloc_via %s\n",
			st->alloc_via == USTACK_ALLOC_VIA_PRELOAD ? "preload" : "uprobes");
	if (st->probe_runs)
		fprintf(stderr, "stat probe_ns_per_hit %.0f\n",
			(double)st->probe_run_ns / (double)st->probe_runs);
}

/* SIZE with an optional K, M or G suffix (powers of 1024) */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end || !v || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* "100us", "1.5ms", "2s", "500ns"; a bare number is ms (perf's
 * --off-cpu-thresh). 0 or -1. */
static int parse_duration_ns(const char *s, uint64_t *out)
{
	static const struct { const char *sfx; double mul; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "", 1e6 },
	};
	char *end;
	double v = strtod(s, &end);

	if (end == s || !(v >= 0) || *s == '-')
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(end, units[i].sfx)) {
			double ns = v * units[i].mul;

			if (ns > 1e18)
				return -1;
			*out = (uint64_t)(ns + 0.5);
			return 0;
		}
	}
	return -1;
}

static const struct option longopts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "event", required_argument, NULL, 'e' },
	{ "freq", required_argument, NULL, 'F' },
	{ "stack-size", required_argument, NULL, 's' },
	{ "duration", required_argument, NULL, 'd' },
	{ "pid", required_argument, NULL, 'p' },
	{ "all-cpus", no_argument, NULL, 'a' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "max-tables", required_argument, NULL, 'T' },
	{ "backend", required_argument, NULL, 'B' },
	{ "table-memory", required_argument, NULL, 'M' },
	{ "no-kernel-callchains", no_argument, NULL, 'K' },
	{ "stats", no_argument, NULL, 'S' },
	{ "no-buildid-cache", no_argument, NULL, 'N' },
	{ "capture-max-size", required_argument, NULL, 'C' },
	{ "off-cpu", no_argument, NULL, 'O' },
	{ "off-cpu-preempt", no_argument, NULL, 'P' },
	{ "off-cpu-min", required_argument, NULL, 'm' },
	{ "alloc", no_argument, NULL, 'A' },
	{ "alloc-mean", required_argument, NULL, 'x' },
	{ "alloc-live-max", required_argument, NULL, 'L' },
	{ "alloc-via", required_argument, NULL, 'W' },
	{ "probe-rate", required_argument, NULL, 'r' },
	{ "no-python", no_argument, NULL, 'Y' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The command line as parsed: the library's opts and what stays in the CLI. */
struct record_cli {
	struct ustack_record_opts o;
	const char *events[MAX_EVENTS];
	int pids[MAX_PIDS];
	int quiet, stats;
	int freq_given; /* -F on the command line */
};

/* The options that take a number or a size; -1: parsed, else the exit status */
static int parse_number_opt(struct record_cli *rc, int c)
{
	struct ustack_record_opts *o = &rc->o;
	unsigned long long v;
	char *end;

	switch (c) {
	case 'F':
		if (cli_parse_u64(optarg, 10, &v) || v == 0 || v > 100000) {
			cli_error("record: -F takes a frequency in Hz (1..100000)");
			return 2;
		}
		o->freq = (uint32_t)v;
		rc->freq_given = 1;
		return -1;
	case 's':
		if (cli_parse_u64(optarg, 10, &v) || v < 8 || v > 65528 || v % 8) {
			cli_error("record: --stack-size takes 8..65528 bytes, a multiple of 8");
			return 2;
		}
		o->stack_size = (uint32_t)v;
		return -1;
	case 'd':
		o->duration = strtod(optarg, &end);
		if (*end || !(o->duration > 0)) {
			cli_error("record: --duration takes seconds > 0");
			return 2;
		}
		return -1;
	case 'T':
		if (cli_parse_u64(optarg, 10, &v) || v == 0 || v > 1000000) {
			cli_error("record: --max-tables takes 1..1000000");
			return 2;
		}
		o->max_tables = (unsigned int)v;
		return -1;
	case 'M':
		if (cli_parse_u64(optarg, 10, &v) || v == 0 || v > 65536) {
			cli_error("record: --table-memory takes 1..65536 (MiB)");
			return 2;
		}
		o->table_memory = v << 20;
		return -1;
	case 'm':
		if (parse_duration_ns(optarg, &o->off_cpu_min_ns)) {
			cli_error("record: --off-cpu-min takes a time: a number with ns, us, ms "
				  "or s (a bare number is ms), e.g. 100us");
			return 2;
		}
		return -1;
	case 'x':
		if (parse_size(optarg, &o->alloc_mean)) {
			cli_error("record: --alloc-mean takes a size in bytes >= 1, with K, M or "
				  "G (e.g. 512K)");
			return 2;
		}
		return -1;
	case 'L':
		if (cli_parse_u64(optarg, 10, &v) || v == 0 || v > (1u << 26)) {
			cli_error("record: --alloc-live-max takes 1..67108864");
			return 2;
		}
		o->alloc_live_max = (uint32_t)v;
		return -1;
	case 'W':
		if (!strcmp(optarg, "auto"))
			o->alloc_via = USTACK_ALLOC_VIA_AUTO;
		else if (!strcmp(optarg, "uprobes"))
			o->alloc_via = USTACK_ALLOC_VIA_UPROBES;
		else if (!strcmp(optarg, "preload"))
			o->alloc_via = USTACK_ALLOC_VIA_PRELOAD;
		else {
			cli_error("record: --alloc-via takes preload, uprobes or auto");
			return 2;
		}
		return -1;
	case 'Y':
		o->no_python = 1;
		return -1;
	case 'r':
		if (cli_parse_u64(optarg, 10, &v) || v >= UINT32_MAX) {
			cli_error("record: --probe-rate takes hits per second and CPU (0: no limit)");
			return 2;
		}
		o->probe_rate_max = v ? (uint32_t)v : UINT32_MAX;
		return -1;
	case 'C':
		if (parse_size(optarg, &o->capture_max_size)) {
			cli_error("record: --capture-max-size takes a size in bytes, with K, M or "
				  "G (e.g. 512M)");
			return 2;
		}
		return -1;
	default:
		usage(stderr);
		return 2;
	}
}

/* One option of getopt_long(); -1: parsed, else the exit status */
static int parse_opt(struct record_cli *rc, int c)
{
	struct ustack_record_opts *o = &rc->o;
	unsigned long long v;

	switch (c) {
	case 'o':
		o->output = optarg;
		return -1;
	case 'e':
		if (o->nr_events == MAX_EVENTS) {
			cli_error("record: at most %d events", MAX_EVENTS);
			return 2;
		}
		rc->events[o->nr_events++] = optarg;
		return -1;
	case 'p':
		for (char *p = strtok(optarg, ","); p; p = strtok(NULL, ",")) {
			if (cli_parse_u64(p, 10, &v) || !v || v > 0x7fffffff || o->nr_pids == MAX_PIDS) {
				cli_error("record: bad pid '%s'", p);
				return 2;
			}
			rc->pids[o->nr_pids++] = (int)v;
		}
		return -1;
	case 'a':
		o->system_wide = 1;
		return -1;
	case 'B':
		if (!strcmp(optarg, "bpf"))
			o->backend = USTACK_RECORD_BPF;
		else if (!strcmp(optarg, "copy"))
			o->backend = USTACK_RECORD_COPY;
		else if (!strcmp(optarg, "auto"))
			o->backend = USTACK_RECORD_AUTO;
		else {
			cli_error("record: --backend takes bpf, copy or auto");
			return 2;
		}
		return -1;
	case 'q':
		rc->quiet = 1;
		return -1;
	case 'K':
		o->no_kernel_callchains = 1;
		return -1;
	case 'S':
		rc->stats = 1;
		return -1;
	case 'N':
		o->no_capture = 1;
		return -1;
	case 'O':
	case 'P':
		if (o->nr_events == MAX_EVENTS) {
			cli_error("record: at most %d events", MAX_EVENTS);
			return 2;
		}
		rc->events[o->nr_events++] = c == 'O' ? "off-cpu" : "off-cpu-preempt";
		return -1;
	case 'A':
		/* its free event is added by the recorder */
		if (o->nr_events == MAX_EVENTS) {
			cli_error("record: at most %d events", MAX_EVENTS);
			return 2;
		}
		rc->events[o->nr_events++] = "alloc";
		return -1;
	case 'h':
		usage(stdout);
		return 0;
	default:
		return parse_number_opt(rc, c);
	}
}

/* -F given, but no event it applies to: --off-cpu and --alloc replace the
 * default cpu-clock (each is the only event without -e), and tracepoints,
 * probes and the kernel's intervals are not sampled at a frequency. Said,
 * not refused: the recording is what was asked, only the -F is idle. */
static void warn_freq_unused(const struct record_cli *rc)
{
	const struct ustack_record_opts *o = &rc->o;
	static const char *const unsampled[] = { "off-cpu", "off-cpu-preempt", "alloc", "free" };

	if (!rc->freq_given)
		return;
	for (int i = 0; i < o->nr_events; i++) {
		int sampled = !strchr(rc->events[i], ':');

		for (size_t k = 0; k < sizeof(unsampled) / sizeof(unsampled[0]); k++)
			if (!strcmp(rc->events[i], unsampled[k]))
				sampled = 0;
		if (sampled)
			return;
	}
	if (!o->nr_events)
		return; /* the default cpu-clock */
	fprintf(stderr, "ustack: warning: -F %u has no event to sample: %s (add -e cpu-clock for "
			"CPU samples too)\n", (unsigned)o->freq,
		o->nr_events == 1 && !strcmp(rc->events[0], "off-cpu")
			? "--off-cpu records only where threads wait"
			: "the events given are not sampled at a frequency");
}

/* The options and the command after them; -1: go on, else the exit status */
static int parse_args(struct record_cli *rc, int argc, char **argv)
{
	struct ustack_record_opts *o = &rc->o;
	int c, ret;

	/* '+': stop at the command's first argument */
	while ((c = getopt_long(argc, argv, "+o:e:F:s:d:p:aqNh", longopts, NULL)) != -1) {
		if ((ret = parse_opt(rc, c)) >= 0)
			return ret;
	}
	/* perf's conventions: -p or -a says what is recorded, a command
	 * beside them only how long */
	if (o->nr_pids > 0 && o->system_wide) {
		cli_error("record: give -p PID or -a, not both");
		usage(stderr);
		return 2;
	}
	if (optind == argc && !o->nr_pids && !o->system_wide) {
		cli_error("record: nothing to record: give -p PID, -a or -- CMD");
		usage(stderr);
		return 2;
	}
	o->events = rc->events;
	o->pids = rc->pids;
	o->argv = optind < argc ? argv + optind : NULL;
	warn_freq_unused(rc);
	return -1;
}

/* The bpf backend's summary line, in parts: each part only when it counted */
static void print_bpf_summary(const struct ustack_record_stats *st)
{
	fprintf(stderr, "ustack: backend bpf: kernel->user %llu bytes (%.1f bytes/event), "
			"%llu tables in the kernel (%.1f MiB, %llu evicted, loaded in %.3f s), %llu walks stopped "
			"at a table not loaded yet and %llu at locked mappings (%llu finished from a stack "
			"copy, %llu kept partial: the ring buffer was filling), "
			"%llu at an unreadable page",
		(unsigned long long)st->kernel_bytes,
		st->events ? (double)st->kernel_bytes / st->events : 0.0,
		(unsigned long long)st->tables_loaded, st->table_bytes / 1048576.0,
		(unsigned long long)st->tables_evicted, st->table_seconds,
		(unsigned long long)st->not_loaded, (unsigned long long)st->maps_busy,
		(unsigned long long)st->copied, (unsigned long long)st->copies_skipped,
		(unsigned long long)st->read_faults);
	if (st->walks_at_once + st->walks_deferred)
		fprintf(stderr, "; samples walked at once %llu, on return to user space %llu",
			(unsigned long long)st->walks_at_once, (unsigned long long)st->walks_deferred);
	if (st->walks_late)
		fprintf(stderr, " (%llu too late: user code ran first, no user stack kept)",
			(unsigned long long)st->walks_late);
	if (st->bpf_skipped)
		fprintf(stderr, "; %llu events not recorded: the kernel skipped the program (another "
			"BPF program, or this one in a preempted task, was running on that CPU)",
			(unsigned long long)st->bpf_skipped);
	if (st->walks_hot)
		fprintf(stderr, "; %llu walks finished from the task's hot stack",
			(unsigned long long)st->walks_hot);
	if (st->kernel_stacks_whole || st->kernel_stacks_lost)
		fprintf(stderr, "; %llu kernel stacks sent whole (the kernel's stack map had "
			"another in their place), %llu lost (events without kernel frames)",
			(unsigned long long)st->kernel_stacks_whole,
			(unsigned long long)st->kernel_stacks_lost);
	fputc('\n', stderr);
}

/* Without -q: what was written, by which backend, and (--stats) the capture */
static void print_summary(const struct record_cli *rc, const struct ustack_record_stats *st)
{
	const struct ustack_record_opts *o = &rc->o;

	fprintf(stderr, "ustack: wrote %s: %llu events, %llu user stacks (%llu distinct), "
			"%llu kernel stacks, %.1f KiB (%.1f bytes/event), %llu lost, %.2f s\n",
		o->output ? o->output : "ustack.data", (unsigned long long)st->events,
		(unsigned long long)st->user_stacks,
		(unsigned long long)st->distinct_user_stacks,
		(unsigned long long)st->kernel_stacks, st->bytes / 1024.0,
		st->events ? (double)st->bytes / st->events : 0.0,
		(unsigned long long)st->lost, st->seconds);
	if (st->backend == USTACK_RECORD_BPF)
		print_bpf_summary(st);
	else
		fprintf(stderr, "ustack: backend copy: kernel->user %llu bytes (%.1f bytes/event)%s%s\n",
			(unsigned long long)st->kernel_bytes,
			st->events ? (double)st->kernel_bytes / st->events : 0.0,
			st->backend_note[0] ? "; bpf not used: " : "", st->backend_note);
	if (st->kernel_callchains == USTACK_KCC_USED)
		fprintf(stderr, "ustack: kernel deferred callchains: %llu records for %llu entries, "
				"%llu user stacks with kernel-fp frames (%llu entirely), %llu cut at a frame "
				"without frame pointers, %llu disagreed, %llu of other registers (exec, signal), "
				"%llu came too late or never: ustack's own unwind used there\n",
			(unsigned long long)st->kfp_records, (unsigned long long)st->kfp_entries,
			(unsigned long long)st->kfp_stacks, (unsigned long long)st->kfp_whole,
			(unsigned long long)st->kfp_untrusted, (unsigned long long)st->kfp_disagree,
			(unsigned long long)st->kfp_moved, (unsigned long long)st->kfp_missing);
	else if (st->kernel_callchains == USTACK_KCC_UNSUPPORTED && rc->stats)
		fprintf(stderr, "ustack: kernel deferred callchains: not available (Linux 6.19+)\n");
	if (rc->stats && st->capture)
		fprintf(stderr, "ustack: capture: %llu files stored (%.1f KiB), %llu in the cache "
				"already, %llu too big (hashed only), %llu conflicts; not captured: %llu "
				"process gone, %llu descriptor cap, %llu errors; capture thread %.3f s CPU\n",
			(unsigned long long)st->capture_new, st->capture_bytes / 1024.0,
			(unsigned long long)st->capture_cached, (unsigned long long)st->capture_too_big,
			(unsigned long long)st->capture_conflicts, (unsigned long long)st->capture_gone,
			(unsigned long long)st->capture_fd_cap, (unsigned long long)st->capture_errors,
			st->capture_seconds);
}

int cmd_record(int argc, char **argv)
{
	struct record_cli rc = { .o = { .sz = sizeof(rc.o) } };
	struct ustack_record_opts *o = &rc.o;
	struct ustack_record_stats st;
	struct sigaction sa = { .sa_handler = on_signal };
	char err[512] = "", cmdline[1024] = "ustack";
	int ret;

	for (int i = 0, n = 6; i < argc && n < (int)sizeof(cmdline) - 2; i++)
		n += snprintf(cmdline + n, sizeof(cmdline) - n, " %s", argv[i]);
	if ((ret = parse_args(&rc, argc, argv)) >= 0)
		return ret;
	o->stop = &stop_flag;
	o->cmdline = cmdline;
	o->errbuf = err;
	o->errbuf_sz = sizeof(err);
	show_progress = !rc.quiet && isatty(STDERR_FILENO);
	o->progress = progress;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (o->nr_pids)
		raise_nofile();

	ret = ustack_record(o, &st, sizeof(st));
	if (show_progress)
		fputc('\n', stderr);
	if (ret) {
		cli_error("%s", err[0] ? err : strerror(-ret));
		return 1;
	}
	if (!rc.quiet)
		print_summary(&rc, &st);
	if (rc.stats)
		print_stats(&st);
	/* a recorded command's failure is the command's, not ours: report it */
	if (o->argv && WIFEXITED(st.child_status) && WEXITSTATUS(st.child_status))
		fprintf(stderr, "ustack: %s exited with status %d\n", o->argv[0],
			WEXITSTATUS(st.child_status));
	return 0;
}
