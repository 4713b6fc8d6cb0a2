// SPDX-License-Identifier: MIT
/*
 * The recorder's set-up, in the order it runs (rec_setup()): the options
 * checked, the events parsed (event.h), the backend opened (backend.h), the
 * tables and maps, the trace file, the targets, the perf session, the
 * poller, and last the events enabled and the command started.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ustack/ustack.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/opts.h"
#include "record/backend.h"
#include "record/core.h"
#include "record/event.h"
#include "record/rec.h"

/* The backends by enum ustack_record_backend, and the order auto tries
 * them in (the first that opens records). */
static const struct rec_backend_ops *const backends[] = {
	[USTACK_RECORD_BPF] = &rec_backend_bpf,
	[USTACK_RECORD_COPY] = &rec_backend_copy,
};
static const struct rec_backend_ops *const auto_order[] = { &rec_backend_bpf, &rec_backend_copy };

/* ---- processes already running ----------------------------------------------- */

/* THREAD records and the mapping picture of a running process.
 * Returns 0 or the negative errno of reading its mappings. */
static int synthesize_pid(struct rec *r, uint32_t pid)
{
	char path[64], comm[32];
	DIR *d;
	struct dirent *de;
	uint64_t now = ustack_mono_ns();
	int ret = ustack_recmaps__synthesize(r->rm, pid);

	if (ret < 0)
		return ret;
	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		FILE *f;
		uint32_t tid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		tid = (uint32_t)atoi(de->d_name);
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
		f = fopen(path, "re");
		comm[0] = 0;
		if (f) {
			/* the name as it is (a newline may be part of it) and
			 * the one '\n' the kernel adds */
			size_t n = fread(comm, 1, sizeof(comm) - 1, f);

			if (n && comm[n - 1] == '\n')
				n--;
			comm[n] = 0;
			fclose(f);
		}
		rec_write_thread(r, now, pid, tid, 0, comm);
	}
	if (d)
		closedir(d);
	return 0;
}

/* Every process: one that exits meanwhile is no loss; any other failure
 * is counted and the first one said (its samples get unnamed frames). */
static int synthesize_all(struct rec *r)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		uint32_t pid;
		int ret;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = (uint32_t)atoi(de->d_name);
		ret = synthesize_pid(r, pid);
		if (ret == -ENOMEM) {
			closedir(d);
			return ret;
		}
		if (ret && ret != -ESRCH && ret != -ENOENT && !r->unreadable++)
			pr_warn("pid %u: cannot read its mappings (/proc/%u/maps): %s\n", pid, pid,
				strerror(-ret));
	}
	closedir(d);
	return 0;
}

/* ---- the command --------------------------------------------------------------- */

/* The file execvp() would run for @cmd. */
int rec_find_command(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH");

	if (strchr(cmd, '/'))
		return snprintf(out, len, "%s", cmd) < (int)len && !access(out, X_OK) ? 0 : -ENOENT;
	for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		if (snprintf(out, len, "%.*s/%s", (int)n, p, cmd) < (int)len && !access(out, X_OK))
			return 0;
		p += n + (p[n] == ':');
	}
	return -ENOENT;
}

/* Fork the command, stopped on a pipe until the events are open. *report_fd
 * reads 0 bytes once exec succeeded (close-on-exec), else the child's errno.
 * Returns the pid, or a negative errno with @err filled. */
static pid_t spawn_child(char *const *argv, char **env, int *go_fd, int *report_fd, char *err,
			 size_t errlen)
{
	int go[2], report[2];
	pid_t pid;
	char c;

	if (pipe2(go, O_CLOEXEC)) {
		snprintf(err, errlen, "%s: pipe: %s", argv[0], strerror(errno));
		return -errno;
	}
	if (pipe2(report, O_CLOEXEC)) {
		int e = errno;

		snprintf(err, errlen, "%s: pipe: %s", argv[0], strerror(e));
		close(go[0]);
		close(go[1]);
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		snprintf(err, errlen, "%s: fork: %s", argv[0], strerror(e));
		close(go[0]);
		close(go[1]);
		close(report[0]);
		close(report[1]);
		return -e;
	}
	if (pid == 0) {
		int e;

		close(go[1]);
		close(report[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvpe(argv[0], argv, env ? env : environ);
		e = errno;
		if (write(report[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(report[1]);
	*go_fd = go[1];
	*report_fd = report[0];
	return pid;
}

/* ---- the steps of rec_setup() ---------------------------------------------------- */

static int check_targets(struct rec *r)
{
	const struct ustack_record_opts *o = r->o;

	if (!(o->argv && o->argv[0]) && !o->system_wide && o->nr_pids <= 0) {
		/* NULL opts land here too: there is no default target */
		rec_set_err(r, "nothing to record: give pids, system_wide or argv%s%s", "", "");
		return -EINVAL;
	}
	if (o->system_wide && o->nr_pids > 0) {
		rec_set_err(r, "give pids or system_wide, not both%s%s", "", "");
		return -EINVAL;
	}
	return 0;
}

/* "alloc" comes with its "free" (added when not given, so that the
 * library's callers name one event), the sampling mean in both. */
static int alloc_events(struct rec *r)
{
	uint64_t mean = OPTS_GET(r->o, alloc_mean, 0);
	int nalloc = 0, nfree = 0;

	for (int i = 0; i < r->nr_events; i++) {
		if (r->events[i].kind->attach != REC_ATTACH_ALLOC)
			continue;
		r->events[i].alloc_mean = mean ? mean : REC_ALLOC_MEAN_DEFAULT;
		*(r->events[i].alloc == REC_ALLOC_ALLOC ? &nalloc : &nfree) += 1;
	}
	if (nalloc > 1 || nfree > 1 || (nfree && !nalloc)) {
		rec_set_err(r, "event alloc (and free) given %s%s",
			    nfree && !nalloc ? "without alloc" : "twice", "");
		return -EINVAL;
	}
	if (!nalloc || nfree)
		return 0;
	if (r->nr_events == USTACK_PERF_MAX_EVENTS) {
		rec_set_err(r, "too many events (at most %s with alloc's free)%s", "15", "");
		return -E2BIG;
	}
	return rec_event_parse("free", &r->events[r->nr_events++], NULL, 0);
}

static int parse_events(struct rec *r)
{
	static const char *const default_events[] = { "cpu-clock" };
	const struct ustack_record_opts *o = r->o;
	const char *const *names = o->nr_events ? o->events : default_events;
	int nr = o->nr_events ? o->nr_events : 1;
	char err[512] = "";
	int ret;

	if (nr > USTACK_PERF_MAX_EVENTS) {
		rec_set_err(r, "too many events (at most %s)%s", "16", "");
		return -E2BIG;
	}
	for (int i = 0; i < nr; i++) {
		ret = rec_event_parse(names[i], &r->events[i], err, sizeof(err));
		if (ret) {
			rec_set_err(r, "%s%s", err, "");
			return ret;
		}
	}
	r->nr_events = nr;
	return alloc_events(r);
}

/* The backend asked for; auto: the first of auto_order that opens, the
 * reason the others did not in the summary. */
static int open_backend(struct rec *r)
{
	unsigned int want = OPTS_GET(r->o, backend, USTACK_RECORD_AUTO);
	const struct rec_backend_ops *const *try = auto_order;
	size_t n = sizeof(auto_order) / sizeof(auto_order[0]);
	char err[512] = "";
	int ret = -EINVAL;

	if (want >= sizeof(backends) / sizeof(backends[0]) || (want && !backends[want])) {
		rec_set_err(r, "unknown backend %s%s", "", "");
		return -EINVAL;
	}
	if (want) {
		try = &backends[want];
		n = 1;
	}
	for (size_t i = 0; i < n; i++) {
		r->be = try[i];
		ret = r->be->open(r, err, sizeof(err));
		if (!ret) {
			r->st.backend = r->be->id;
			return 0;
		}
		r->be->close(r);
		if (i + 1 < n && !r->st.backend_note[0])
			snprintf(r->st.backend_note, sizeof(r->st.backend_note), "%s", err);
	}
	r->be = NULL;
	rec_set_err(r, "%s%s", err, "");
	return ret;
}

/* Unwind tables, the mapping picture, thread names, JIT maps, stack maps. */
static int setup_tables(struct rec *r)
{
	struct ustack_stackmap_opts smo = { .sz = sizeof(smo) };
	int ret;

	r->mc = ustack_modcache__new(OPTS_GET(r->o, max_tables, 0), USTACK_MODCACHE_COMPILE_CFI);
	r->rm = r->mc ? ustack_recmaps__new(r->mc) : NULL;
	r->comms.of = r->rm ? ustack_u64map__new() : NULL;
	if (!r->comms.of || rec_jit_init(r)) {
		ret = -errno;
		rec_set_err(r, "setting up the unwind tables and the mapping picture: %s%s",
			    strerror(-ret), "");
		return ret;
	}
	smo.capacity = 1u << 16;
	smo.max_depth = 2 * MAX_USER_FRAMES;
	r->kmap = ustack_stackmap__new(&smo);
	r->umap = r->kmap ? ustack_stackmap__new(&smo) : NULL;
	if (!r->umap) {
		ret = -errno;
		rec_set_err(r, "allocating the stack maps (2 x 65536 stacks): %s%s", strerror(-ret), "");
		return ret;
	}
	return 0;
}

/* The trace file, its header and the events' descriptions: an unwritable
 * output fails before anything runs. */
static int open_trace(struct rec *r)
{
	const struct ustack_record_opts *o = r->o;
	const char *path = o->output ? o->output : "ustack.data";
	struct ustack_trace_writer_opts wo = { .sz = sizeof(wo) };
	struct ustack_trace_header hdr = { .clock_id = CLOCK_MONOTONIC };
	struct utsname un;
	struct timespec rt;
	char host[256] = "", version[64];
	int ret;

	uname(&un);
	gethostname(host, sizeof(host) - 1);
	clock_gettime(CLOCK_REALTIME, &rt);
	hdr.realtime_ns = (uint64_t)rt.tv_sec * 1000000000ull + rt.tv_nsec;
	hdr.clock_ns = ustack_mono_ns();
	hdr.hostname = host;
	hdr.release = un.release;
	hdr.machine = un.machine;
	hdr.cmdline = o->cmdline;
	/* the program that writes: the library's version (the CLI prints the
	 * same with --version) */
	snprintf(version, sizeof(version), "ustack %s", ustack_version());
	hdr.version = version;
	rec_writer_callbacks(r, &wo);
	r->w = ustack_trace_writer__open(path, &hdr, &wo);
	if (!r->w) {
		ret = -errno;
		rec_set_err(r, "%s: %s", path, strerror(-ret));
		return ret;
	}
	for (int i = 0; i < r->nr_events; i++) {
		struct ustack_trace_event_desc d;

		rec_event_describe(&r->events[i], (uint32_t)i, o, &d);
		ret = ustack_trace_writer__add_event_desc(r->w, &d);
		if (ret) {
			rec_set_err(r, "%s: %s", path, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* The pids given: their threads and mappings now. */
static int synthesize_pids(struct rec *r)
{
	const struct ustack_record_opts *o = r->o;
	char err[512];
	int ret;

	for (int i = 0; i < o->nr_pids; i++) {
		ret = synthesize_pid(r, (uint32_t)o->pids[i]);
		if (ret) {
			if (ret == -ESRCH || ret == -ENOENT)
				snprintf(err, sizeof(err), "pid %d: no such process", o->pids[i]);
			else
				snprintf(err, sizeof(err), "pid %d: cannot read its mappings "
					 "(/proc/%d/maps): %s", o->pids[i], o->pids[i],
					 strerror(-ret));
			rec_set_err(r, "%s%s", err, "");
			return ret == -ENOENT ? -ESRCH : ret;
		}
		rec_jit_learn(r, (uint32_t)o->pids[i]);
	}
	return 0;
}

/* with -a or pids the command is only the timer (perf's "record while
 * CMD runs"): started after the events run, recorded only as part of the
 * machine (-a) */
static int setup_targets(struct rec *r)
{
	const struct ustack_record_opts *o = r->o;
	char err[512];
	int ret;

	if (o->argv && o->argv[0]) {
		r->run.child = spawn_child(o->argv, r->probes.child_env, &r->run.go_fd, &r->run.report_fd, err, sizeof(err));
		if (r->run.child < 0) {
			rec_set_err(r, "%s%s", err, "");
			ret = r->run.child;
			r->run.child = 0;
			return ret;
		}
	}
	if (rec_cmd_traced(o)) {
		/* its mappings come with its exec's MMAP2s */
		rec_jit_learn(r, (uint32_t)r->run.child);
		return 0;
	}
	if (!o->system_wide)
		return synthesize_pids(r);
	ret = synthesize_all(r);
	if (ret) {
		snprintf(err, sizeof(err), "reading the processes' mappings (/proc): %s",
			 strerror(-ret));
		rec_set_err(r, "%s%s", err, "");
	}
	return ret;
}

/* The perf session the backend asks for, then the backend started on it:
 * the program is in place before anything runs. */
static int open_perf(struct rec *r)
{
	const struct ustack_record_opts *o = r->o;
	struct ustack_perf_opts po = { .sz = sizeof(po) };
	struct ustack_perf_event_spec specs[USTACK_PERF_MAX_EVENTS + 1];
	char err[512] = "";
	int ret;

	for (int i = 0; i < r->nr_events; i++)
		specs[i] = r->events[i].perf;
	po.events = specs;
	po.nr_events = r->nr_events;
	po.freq = o->freq ? o->freq : 999;
	po.stack_size = o->stack_size ? o->stack_size : 16384;
	if (r->be->perf_opts)
		r->be->perf_opts(r, &po, specs);
	po.pids = o->pids;
	po.nr_pids = o->nr_pids;
	po.system_wide = o->system_wide;
	po.child = rec_cmd_traced(o) ? r->run.child : 0;
	r->ps = ustack_perf_session__open(&po, err, sizeof(err));
	if (!r->ps) {
		ret = -errno;
		rec_set_err(r, "%s%s", err, "");
		return ret;
	}
	if (r->be->start && (ret = r->be->start(r, po.child, err, sizeof(err)))) {
		rec_set_err(r, "%s%s", err, "");
		return ret;
	}
	return 0;
}

static int watch(void *ctx, int fd)
{
	struct rec *r = ctx;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(r->run.epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* One fd for a poller: the backend's (every perf ring buffer, or the BPF
 * ring buffer whose own epoll fd holds the side-band too), the command's
 * exit (a pidfd), and a 100 ms tick for what no fd says (the duration, -p
 * processes gone, the once-a-second flush, the copy backend's data below
 * its wakeup mark). */
static int setup_poll(struct rec *r)
{
	struct itimerspec it = { .it_interval = { 0, 100000000 }, .it_value = { 0, 100000000 } };
	int ret;

	r->run.epfd = epoll_create1(EPOLL_CLOEXEC);
	r->run.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (r->run.epfd < 0 || r->run.tfd < 0 || timerfd_settime(r->run.tfd, 0, &it, NULL))
		ret = -errno;
	else
		ret = watch(r, r->run.tfd);
	if (!ret && r->run.child > 0) {
		r->run.pidfd = (int)syscall(SYS_pidfd_open, r->run.child, 0);
		/* without a pidfd (before 5.3) the tick sees the exit */
		if (r->run.pidfd >= 0)
			ret = watch(r, r->run.pidfd);
	}
	if (!ret)
		ret = r->be->watch(r, watch, r);
	if (ret)
		rec_set_err(r, "setting up the poll fd: %s%s", strerror(-ret), "");
	return ret;
}

/* A traced command's events enable themselves at its exec: it is let go
 * and its exec checked. */
static int start_child(struct rec *r)
{
	const struct ustack_record_opts *o = r->o;
	int child_errno = 0, ret;
	char err[512];

	if (write(r->run.go_fd, "g", 1) != 1) {
		ret = -errno;
		snprintf(err, sizeof(err), "%s (pid %d): died before it could be started "
			 "(its start pipe: %s)", o->argv[0], (int)r->run.child, strerror(-ret));
		rec_set_err(r, "%s%s", err, "");
		return ret;
	}
	close(r->run.go_fd);
	r->run.go_fd = -1;
	if (read(r->run.report_fd, &child_errno, sizeof(child_errno)) == sizeof(child_errno)) {
		snprintf(err, sizeof(err), "%s: %s", o->argv[0], strerror(child_errno));
		rec_set_err(r, "%s%s", err, "");
		waitpid(r->run.child, NULL, 0);
		r->run.child = 0;
		return -child_errno;
	}
	return 0;
}

int rec_setup(struct rec *r)
{
	const struct ustack_record_opts *o = r->o;
	int ret;

	r->t0 = ustack_mono_ns();
	if ((ret = check_targets(r)) || (ret = parse_events(r)) || (ret = rec_probes_resolve(r)) ||
	    (ret = open_backend(r)))
		return ret;
	rec_ksyms_start(r);
	if ((ret = setup_tables(r)) || (ret = open_trace(r)))
		return ret;
	/* before the targets' mappings are read: their files are kept open
	 * from the first mapping seen */
	rec_capture_setup(r);
	if ((ret = setup_targets(r)) || (ret = open_perf(r)) || (ret = setup_poll(r)))
		return ret;
	if (!rec_cmd_traced(o) && (ret = ustack_perf_session__enable(r->ps))) {
		char err[512];

		snprintf(err, sizeof(err), "enabling the perf events: %s", strerror(-ret));
		rec_set_err(r, "%s%s", err, "");
		return ret;
	}
	if (r->run.child > 0 && (ret = start_child(r)))
		return ret;
	if (o->duration > 0)
		r->run.deadline = r->t0 + (uint64_t)(o->duration * 1e9);
	r->run.last_progress = ustack_mono_ns();
	rec_capture_started(r);
	return 0;
}
