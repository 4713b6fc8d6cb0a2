// SPDX-License-Identifier: MIT
/*
 * perf_event_open source (see perf_events.h).
 *
 * Layout: for each CPU one ring buffer, mapped from the first event opened
 * on that CPU; every other event on that CPU (other event types, other
 * threads of the target) is redirected into it with PERF_EVENT_IOC_SET_OUTPUT.
 * Per-task events use inherit=1 so new threads and children are followed.
 * Each poll round takes every available record of the buffers, sorts the
 * round by time and parses it. A record delivered this round is parsed
 * where it lies in its ring (a sample carries up to 16 KiB of stack:
 * copying it out cost the reader the time the kernel then lacked); the
 * space is given back to the kernel when the round is done. Only records
 * that wrap around a ring's end, and those held for the next round, are
 * copied. Rings are read one after another, so a
 * record written to a ring already read this round comes only next round,
 * after newer records of rings read later. ustack_perf_session__poll()
 * therefore delivers only records time-stamped before the round began
 * (poll_round): whatever a record depends on was written before it was
 * stamped, so it is in the round too. Newer ones wait a round. A record
 * stamped before the round but still being written while its ring was read
 * (a virtual CPU stalled mid-write) comes late; the recorder keeps an
 * exited process's mappings for a second (recorder.c, exit_later) and a
 * deferred callchain that comes before its sample (record/kfp.c) for it.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/compiler.h"
#include "common/log.h"
#include "perf/perf_events.h"
#include "perf/perf_record.h"

/* x86-64 perf register numbers (arch/x86/include/uapi/asm/perf_regs.h) */
#define PERF_REG_X86_BX 1
#define PERF_REG_X86_BP 6
#define PERF_REG_X86_SP 7
#define PERF_REG_X86_IP 8
/* rbx: for the rare rbx-based CFA of DWARF CFI (src/common/unwind_row.h) */
#define UREGS_MASK                                                                        \
	((1ull << PERF_REG_X86_BX) | (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | \
	 (1ull << PERF_REG_X86_IP))

/* A probe's samples: every general-purpose register (ax..ip, r8..r15; not
 * flags, not the segment registers): 17 words where other samples take 4,
 * 104 bytes more per sample beside a stack copy of 16 KiB (< 1%). USDT
 * operands may name any of them, a uretprobe's value is rax. */
#define GPREGS_MASK (((1ull << 9) - 1) | (((1ull << 8) - 1) << 16))
_Static_assert(__builtin_popcountll(GPREGS_MASK) == USTACK_PERF_NR_GPREGS, "gpregs");

#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | \
		     PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)

struct perf_fd {
	int fd;
	uint64_t id; /* PERF_EVENT_IOC_ID */
	int event;
};

struct perf_ring {
	int cpu;
	int fd;
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	uint64_t size; /* data area bytes (power of 2) */
	uint64_t read; /* data_tail to give back when the round is done */
};

/* one record of this round, waiting to be sorted: in bufs[b], or in place
 * in ring b - PEND_RING (off is then the offset in its data area) */
struct pending {
	uint64_t time;
	uint64_t off;
	uint32_t len;
	uint32_t seq; /* stable order for equal times */
	uint32_t b;
};
#define PEND_RING 3u

struct rbuf {
	uint8_t *p;
	uint64_t len, cap;
};

struct ustack_perf_session {
	struct perf_fd *fds;
	int nr_fds, cap_fds;
	struct perf_ring *rings;
	int nr_rings;
	int nr_cpus;
	unsigned int pages;
	uint64_t bad;
	uint64_t bytes; /* read from the ring buffers */
	uint64_t raw_events; /* bit i: event i samples PERF_SAMPLE_RAW */
	uint64_t regs_events; /* bit i: event i samples every general-purpose register */
	/* Records copied out of the rings. Each is copied once: ordered
	 * delivery puts those it holds back straight into the buffer the next
	 * round delivers from (bufs[held]); the other two take this round's
	 * records to deliver and to hold. */
	struct rbuf bufs[3];
	int held;
	struct pending *pend;
	uint64_t nr_pend, cap_pend;
	struct ustack_perf_parser parser; /* set up at the first record */
	/* LOST records delivered, and whether the events count their own
	 * lost samples (PERF_FORMAT_LOST, Linux 6.0+; 0: this kernel refused
	 * it, -1: not tried yet) */
	uint64_t lost_reported;
	int format_lost;
};

/* read_format bit: the event's count of samples it could not write to its
 * ring (a header older than Linux 6.0 does not name it) */
#define USTACK_PERF_FORMAT_LOST (1u << 4)

static int perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			   unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

/* ---- event names --------------------------------------------------------- */

static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
} named_events[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
};

static const char *const tracefs_dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

static int tracepoint_id(const char *sys, const char *name, uint64_t *id, char *err, size_t errlen)
{
	char path[512], buf[32];
	int mounted = 0;

	for (size_t i = 0; i < ARRAY_SIZE(tracefs_dirs); i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/events", tracefs_dirs[i]);
		/* not allowed to look (EACCES) still means it is there */
		if (!access(path, F_OK) || errno != ENOENT)
			mounted = 1;
		snprintf(path, sizeof(path), "%s/events/%s/%s/id", tracefs_dirs[i], sys, name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%llu", (unsigned long long *)id) != 1) {
			fclose(f);
			snprintf(err, errlen, "%s: unreadable tracepoint id", path);
			return -EBADMSG;
		}
		fclose(f);
		return 0;
	}
	/* the library never mounts anything itself: it says what is missing */
	if (!mounted) {
		snprintf(err, errlen,
			 "tracepoint '%s:%s': tracefs is not mounted at %s (as root: mount -t tracefs "
			 "nodev %s)", sys, name, tracefs_dirs[0], tracefs_dirs[0]);
		return -ENODEV;
	}
	snprintf(path, sizeof(path), "%s/events/%s", tracefs_dirs[0], sys);
	if (access(path, F_OK) == 0)
		snprintf(err, errlen, "unknown tracepoint '%s:%s' (no such event in %s)", sys, name, path);
	else if (access(tracefs_dirs[0], R_OK) == 0 && access(path, F_OK) != 0 && errno == ENOENT)
		snprintf(err, errlen, "unknown tracepoint subsystem '%s' (see %s/events)", sys,
			 tracefs_dirs[0]);
	else
		snprintf(err, errlen, "tracepoint '%s:%s': tracefs not readable (%s)", sys, name,
			 strerror(errno));
	return -ENOENT;
}

int ustack_perf_named_event(const char *name, struct ustack_perf_event_spec *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(named_events); i++) {
		if (!strcmp(name, named_events[i].name)) {
			out->type = named_events[i].type;
			out->config = named_events[i].config;
			out->is_hardware = out->type == PERF_TYPE_HARDWARE;
			return 0;
		}
	}
	return -ENOENT;
}

int ustack_perf_tracepoint(const char *name, struct ustack_perf_event_spec *out, char *err,
			   size_t errlen)
{
	const char *colon = strchr(name, ':');
	char sys[128];
	size_t n = colon ? (size_t)(colon - name) : 0;

	if (!colon || !n || n >= sizeof(sys) || !colon[1] || strchr(colon + 1, '/') ||
	    memchr(name, '/', n) || strstr(name, "..")) {
		snprintf(err, errlen, "bad tracepoint name '%s' (want SUBSYSTEM:EVENT)", name);
		return -ENOENT;
	}
	memcpy(sys, name, n);
	sys[n] = 0;
	out->type = PERF_TYPE_TRACEPOINT;
	out->is_tracepoint = 1;
	return tracepoint_id(sys, colon + 1, &out->config, err, errlen);
}

int ustack_perf_tracepoint_field(const char *tp, const char *field, uint32_t *off, uint32_t *size,
				 char *err, size_t errlen)
{
	const char *colon = strchr(tp, ':');
	char path[512], text[8192];
	int ret = -ENOENT;

	for (size_t i = 0; colon && i < ARRAY_SIZE(tracefs_dirs) && ret == -ENOENT; i++) {
		FILE *f;
		size_t n;

		snprintf(path, sizeof(path), "%s/events/%.*s/%s/format", tracefs_dirs[i],
			 (int)(colon - tp), tp, colon + 1);
		if (!(f = fopen(path, "re")))
			continue;
		n = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
		text[n] = 0;
		ret = ustack_perf_format_field(text, field, off, size);
		if (ret == -EBADMSG)
			snprintf(err, errlen, "%s: field '%s' unreadable", path, field);
		else if (ret == -ENOENT)
			snprintf(err, errlen, "%s: no field '%s'", path, field);
		return ret;
	}
	snprintf(err, errlen, "tracepoint '%s': no format file in tracefs (%s/events)", tp,
		 tracefs_dirs[0]);
	return -ENOENT;
}

/* ---- perf's uprobe PMU ------------------------------------------------------ */

#define UPROBE_PMU "/sys/bus/event_source/devices/uprobe"

static int read_small(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "re");
	size_t got;

	if (!f)
		return -errno;
	got = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[got] = 0;
	return 0;
}

/* The bits a format file gives a field: "config:LO" or "config:LO-HI". */
static int pmu_format(const char *field, unsigned int *lo, unsigned int *hi, char *err,
		      size_t errlen)
{
	char path[128], buf[64];
	int ret;

	snprintf(path, sizeof(path), UPROBE_PMU "/format/%s", field);
	if ((ret = read_small(path, buf, sizeof(buf)))) {
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (sscanf(buf, "config:%u-%u", lo, hi) != 2) {
		if (sscanf(buf, "config:%u", lo) != 1) {
			snprintf(err, errlen, "%s: format '%.32s' not known (want config:BITS)", path,
				 buf);
			return -EOPNOTSUPP;
		}
		*hi = *lo;
	}
	if (*lo > *hi || *hi > 63) {
		snprintf(err, errlen, "%s: bits %u-%u out of range", path, *lo, *hi);
		return -EOPNOTSUPP;
	}
	return 0;
}

int ustack_perf_uprobe(const char *path, uint64_t offset, int retprobe, uint64_t ref_ctr_offset,
		       struct ustack_perf_event_spec *out, char *err, size_t errlen)
{
	unsigned int lo, hi, type;
	char buf[32];
	int ret = read_small(UPROBE_PMU "/type", buf, sizeof(buf));

	if (ret || sscanf(buf, "%u", &type) != 1) {
		snprintf(err, errlen, "perf's uprobe PMU is not available (%s: %s; a kernel with "
			 "CONFIG_UPROBE_EVENTS, 4.17+)", UPROBE_PMU "/type",
			 ret ? strerror(-ret) : "unreadable");
		return ret == -ENOENT || !ret ? -ENODEV : ret;
	}
	out->type = type;
	out->config = 0;
	if (retprobe) {
		if ((ret = pmu_format("retprobe", &lo, &hi, err, errlen)))
			return ret;
		out->config |= 1ull << lo;
	}
	if (ref_ctr_offset) {
		if ((ret = pmu_format("ref_ctr_offset", &lo, &hi, err, errlen)))
			return ret;
		if (hi - lo < 63 && ref_ctr_offset >> (hi - lo + 1)) {
			snprintf(err, errlen, "%s: USDT semaphore at file offset 0x%llx does not fit "
				 "the uprobe PMU's %u bits", path, (unsigned long long)ref_ctr_offset,
				 hi - lo + 1);
			return -ERANGE;
		}
		out->config |= ref_ctr_offset << lo;
	}
	out->config1 = (uint64_t)(uintptr_t)path;
	out->config2 = offset;
	out->flags |= USTACK_PERF_EV_PROBE;
	return 0;
}

/* ---- opening -------------------------------------------------------------- */

static int fd_id_cmp(const void *a, const void *b)
{
	const struct perf_fd *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int add_fd(struct ustack_perf_session *s, int fd, int event)
{
	uint64_t id = 0;

	if (s->nr_fds == s->cap_fds) {
		int cap = s->cap_fds ? 2 * s->cap_fds : 16;
		struct perf_fd *n = realloc(s->fds, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->fds = n;
		s->cap_fds = cap;
	}
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id))
		return -errno;
	s->fds[s->nr_fds++] = (struct perf_fd){ .fd = fd, .id = id, .event = event };
	return 0;
}

static int ring_for_cpu(struct ustack_perf_session *s, int cpu, int fd)
{
	struct perf_ring *r = &s->rings[cpu];
	size_t len;
	void *m;

	if (r->fd >= 0) /* the CPU has its ring: send this event there */
		return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) ? -errno : 0;
	len = (size_t)(s->pages + 1) * 4096;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	r->cpu = cpu;
	r->fd = fd;
	r->meta = m;
	r->data = (uint8_t *)m + 4096;
	r->size = (uint64_t)s->pages * 4096;
	return 0;
}

/* Sets bits of the attr's flag word (the u64 of bit fields after
 * read_format) that this system's header may not name yet. memcpy: the
 * bit fields are not to be aliased by a uint64_t lvalue (the compiler
 * would be free to keep its own stores to them in flight). */
static void set_attr_bits(struct perf_event_attr *a, uint64_t bits)
{
	size_t off = offsetof(struct perf_event_attr, read_format) + sizeof(a->read_format);
	uint64_t w;

	memcpy(&w, (char *)a + off, sizeof(w));
	w |= bits;
	memcpy((char *)a + off, &w, sizeof(w));
}

static void fill_attr(struct perf_event_attr *a, const struct ustack_perf_event_spec *ev,
		      const struct ustack_perf_opts *o, int first, int per_task,
		      uint32_t pages_bytes)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = ev->type;
	a->config = ev->config;
	if (ev->flags & USTACK_PERF_EV_PROBE) {
		a->config1 = ev->config1;
		a->config2 = ev->config2;
		a->sample_period = 1;
	} else if (ev->is_tracepoint || ev->config == PERF_COUNT_SW_CONTEXT_SWITCHES) {
		a->sample_period = 1;
	} else {
		a->freq = 1;
		a->sample_freq = o->freq;
	}
	a->sample_type = SAMPLE_TYPE | (ev->flags & USTACK_PERF_EV_RAW ? PERF_SAMPLE_RAW : 0);
	a->context_switch = !!(ev->flags & USTACK_PERF_EV_SWITCHES);
	a->sample_regs_user = ev->flags & USTACK_PERF_EV_PROBE ? GPREGS_MASK : UREGS_MASK;
	a->sample_stack_user = o->stack_size;
	a->exclude_callchain_user = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->disabled = 1;
	a->inherit = per_task;
	a->enable_on_exec = o->child > 0;
	/* wake the reader when a quarter of the ring is used (the poll
	 * timeout covers slow event rates): batches instead of a wakeup per
	 * sample */
	a->watermark = 1;
	a->wakeup_watermark = o->wake_each ? 1 : pages_bytes / 4;
	if (o->defer_callchain && !(ev->flags & USTACK_PERF_EV_NO_DEFER)) {
		/* the user part of the callchain comes deferred, unwound by
		 * the kernel on the way back to user space (frame pointers) */
		a->exclude_callchain_user = 0;
		/* CALLCHAIN_DEFERRED records are side-band: they go to the
		 * events with defer_output, like MMAP2 to those with mmap */
		set_attr_bits(a, (1ull << USTACK_PERF_ATTR_DEFER_CALLCHAIN_BIT) |
				 (first ? 1ull << USTACK_PERF_ATTR_DEFER_OUTPUT_BIT : 0));
	}
	/* Side-band records come from event 0 of every task/CPU: the kernel
	 * delivers them to the events of the task that mapped or forked. */
	if (first) {
		/* both bits: the kernel counts mmap listeners by attr.mmap
		 * (account_event); mmap2 then selects the MMAP2 layout */
		a->mmap = 1;
		a->mmap2 = 1;
		a->comm = 1;
		a->comm_exec = 1;
		a->task = 1;
	}
}

static int open_one(struct ustack_perf_session *s, const struct ustack_perf_opts *o, int event,
		    pid_t pid, int cpu, int first, char *err, size_t errlen)
{
	const struct ustack_perf_event_spec *ev = &o->events[event];
	struct perf_event_attr a;
	int fd, ret;

	fill_attr(&a, ev, o, first, pid != -1, s->pages * 4096u);
	if (s->format_lost)
		a.read_format |= USTACK_PERF_FORMAT_LOST;
	fd = perf_event_open(&a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EINVAL && s->format_lost < 0) {
		/* a kernel before 6.0: its losses are the LOST records alone */
		s->format_lost = 0;
		a.read_format &= ~(uint64_t)USTACK_PERF_FORMAT_LOST;
		fd = perf_event_open(&a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (fd >= 0 && s->format_lost < 0)
		s->format_lost = 1;
	if (fd < 0) {
		ret = -errno;
		if (ret == -EACCES || ret == -EPERM)
			snprintf(err, errlen, "event '%s': permission denied (need root or CAP_PERFMON, "
				 "or kernel.perf_event_paranoid <= 1)", ev->name);
		else if (ret == -ENOENT || ret == -EOPNOTSUPP || ret == -ENODEV)
			snprintf(err, errlen, "event '%s' is not supported on this machine%s", ev->name,
				 ev->is_hardware ? " (no hardware PMU: try cpu-clock)" : "");
		else if (ret == -ESRCH)
			snprintf(err, errlen, "pid %d: no such process", (int)pid);
		else if (ret == -EMFILE || ret == -ENFILE)
			snprintf(err, errlen, "event '%s' on cpu %d: %s after %d events opened "
				 "(one per thread, CPU and event: raise ulimit -n)", ev->name, cpu,
				 strerror(-ret), s->nr_fds);
		else
			snprintf(err, errlen, "event '%s' on cpu %d: perf_event_open: %s", ev->name, cpu,
				 strerror(-ret));
		return ret;
	}
	ret = add_fd(s, fd, event);
	if (!ret && ev->filter[0] && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, ev->filter))
		ret = -errno;
	if (!ret)
		ret = ring_for_cpu(s, cpu, fd);
	if (ret) {
		snprintf(err, errlen, "event '%s' on cpu %d: %s", ev->name, cpu, strerror(-ret));
		if (s->nr_fds && s->fds[s->nr_fds - 1].fd == fd)
			s->nr_fds--;
		close(fd);
	}
	return ret;
}

int ustack_perf_probe_defer_callchain(void)
{
	struct perf_event_attr a;
	int fd, err;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = 1000000;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN;
	a.disabled = 1;
	a.exclude_kernel = 1; /* allowed at perf_event_paranoid 2 */
	a.exclude_hv = 1;
	set_attr_bits(&a, (1ull << USTACK_PERF_ATTR_DEFER_CALLCHAIN_BIT) |
			  (1ull << USTACK_PERF_ATTR_DEFER_OUTPUT_BIT));
	fd = perf_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	err = errno;
	/* an older kernel refuses the reserved bits it does not know */
	return err == EINVAL || err == E2BIG ? 0 : -err;
}

/* Threads of @pid now (new ones are followed through inherit). */
static int tids_of(pid_t pid, pid_t **out, int *nr)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	int n = 0, cap = 16;
	pid_t *t = malloc(cap * sizeof(*t));

	if (!t)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d) {
		int err = errno == ENOENT ? ESRCH : errno;

		free(t);
		return -err;
	}
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (n == cap) {
			pid_t *g = realloc(t, (cap *= 2) * sizeof(*t));

			if (!g) {
				free(t);
				closedir(d);
				return -ENOMEM;
			}
			t = g;
		}
		t[n++] = atoi(de->d_name);
	}
	closedir(d);
	*out = t;
	*nr = n;
	return 0;
}

/* The events of thread @tid of -p process @pid on @cpu: those for every
 * target and those for @pid alone; the first opened carries the side-band.
 * A thread that exited meanwhile (@may_be_gone) is not an error. */
static int open_thread(struct ustack_perf_session *s, const struct ustack_perf_opts *o,
		       pid_t pid, pid_t tid, int cpu, int may_be_gone, char *err, size_t errlen)
{
	int ret = 0, first = 1;

	for (int e = 0; e < o->nr_events && !ret; e++) {
		if (o->events[e].pid && o->events[e].pid != pid)
			continue;
		ret = open_one(s, o, e, tid, cpu, first, err, errlen);
		first = 0;
	}
	if (ret == -ESRCH && may_be_gone) {
		ret = 0;
		err[0] = 0;
	}
	return ret;
}

struct ustack_perf_session *ustack_perf_session__open(const struct ustack_perf_opts *o,
						      char *err, size_t errlen)
{
	struct ustack_perf_session *s = calloc(1, sizeof(*s));
	int ret = 0;

	err[0] = 0;
	if (!s)
		return NULL;
	s->format_lost = -1;
	s->nr_cpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	/* A sample with a 16 KiB stack copy is ~16.5 KiB: 4 MiB per CPU holds
	 * ~250 of them (a quarter second at 999 Hz), enough to ride out the
	 * first loads of unwind tables; fewer pages on big machines. */
	s->pages = o->pages ? o->pages : (s->nr_cpus <= 16 ? 1024 : 256);
	if (s->nr_cpus <= 0 || (s->pages & (s->pages - 1)) || o->nr_events <= 0 ||
	    o->nr_events > USTACK_PERF_MAX_SESSION_EVENTS || o->stack_size % 8 || o->stack_size > 65528) {
		snprintf(err, errlen, "bad recording options");
		ret = -EINVAL;
		goto fail;
	}
	for (int e = 0; e < o->nr_events; e++) {
		if (o->events[e].flags & USTACK_PERF_EV_RAW)
			s->raw_events |= 1ull << e;
		if (o->events[e].flags & USTACK_PERF_EV_PROBE)
			s->regs_events |= 1ull << e;
	}
	s->rings = calloc(s->nr_cpus, sizeof(*s->rings));
	if (!s->rings) {
		ret = -ENOMEM;
		goto fail;
	}
	for (int c = 0; c < s->nr_cpus; c++)
		s->rings[c].fd = -1;
	s->nr_rings = s->nr_cpus;

	for (int c = 0; c < s->nr_cpus && !ret; c++) {
		if (o->system_wide || o->child > 0) {
			pid_t pid = o->system_wide ? -1 : o->child;

			for (int e = 0; e < o->nr_events && !ret; e++)
				ret = open_one(s, o, e, pid, c, e == 0, err, errlen);
			continue;
		}
		for (int p = 0; p < o->nr_pids && !ret; p++) {
			pid_t *tids = NULL;
			int nr = 0;

			ret = tids_of(o->pids[p], &tids, &nr);
			if (ret) {
				snprintf(err, errlen, "pid %d: %s (/proc/%d/task)", (int)o->pids[p],
					 ret == -ESRCH ? "no such process" : strerror(-ret),
					 (int)o->pids[p]);
				break;
			}
			for (int t = 0; t < nr && !ret; t++)
				ret = open_thread(s, o, o->pids[p], tids[t], c, t > 0, err, errlen);
			free(tids);
		}
	}
	if (ret)
		goto fail;
	qsort(s->fds, s->nr_fds, sizeof(*s->fds), fd_id_cmp);
	return s;
fail:
	ustack_perf_session__close(s);
	errno = -ret;
	return NULL;
}

static int ioctl_all(struct ustack_perf_session *s, unsigned long req)
{
	int ret = 0;

	for (int i = 0; i < s->nr_fds; i++)
		if (ioctl(s->fds[i].fd, req, 0) && !ret)
			ret = -errno;
	return ret;
}

int ustack_perf_session__enable(struct ustack_perf_session *s)
{
	return ioctl_all(s, PERF_EVENT_IOC_ENABLE);
}

int ustack_perf_session__disable(struct ustack_perf_session *s)
{
	return ioctl_all(s, PERF_EVENT_IOC_DISABLE);
}

int ustack_perf_session__for_each_fd(struct ustack_perf_session *s, int event,
				     int (*fn)(void *ctx, int fd), void *ctx)
{
	int ret;

	for (int i = 0; i < s->nr_fds; i++)
		if (s->fds[i].event == event && (ret = fn(ctx, s->fds[i].fd)))
			return ret;
	return 0;
}

uint64_t ustack_perf_session__bad_records(const struct ustack_perf_session *s)
{
	return s->bad;
}

uint64_t ustack_perf_session__bytes(const struct ustack_perf_session *s)
{
	return s->bytes;
}

uint64_t ustack_perf_session__unreported_lost(const struct ustack_perf_session *s)
{
	uint64_t lost = 0;

	if (s->format_lost != 1)
		return 0;
	for (int i = 0; i < s->nr_fds; i++) {
		uint64_t v[2]; /* read_format LOST alone: the count, then lost */

		if (read(s->fds[i].fd, v, sizeof(v)) == (ssize_t)sizeof(v))
			lost += v[1];
	}
	ustack_log(USTACK_DEBUG, "ustack: perf: %llu samples lost by the events' own counts, "
		   "%llu records by the LOST records\n", (unsigned long long)lost,
		   (unsigned long long)s->lost_reported);
	return lost > s->lost_reported ? lost - s->lost_reported : 0;
}

void ustack_perf_session__close(struct ustack_perf_session *s)
{
	if (!s)
		return;
	for (int i = 0; s->rings && i < s->nr_rings; i++)
		if (s->rings[i].meta)
			munmap(s->rings[i].meta, (size_t)(s->pages + 1) * 4096);
	for (int i = 0; i < s->nr_fds; i++)
		close(s->fds[i].fd);
	free(s->fds);
	free(s->rings);
	for (int b = 0; b < 3; b++)
		free(s->bufs[b].p);
	free(s->pend);
	ustack_perf_parser__fini(&s->parser);
	free(s);
}

/* ---- reading ---------------------------------------------------------------- */

static int grow(void **p, uint64_t *cap, uint64_t need, size_t elem)
{
	uint64_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* The time of the record of header @h at @off of ring @r (0: none), read
 * in place: it decides where the record is copied to. */
static uint64_t ring_time(const struct perf_ring *r, uint64_t off,
			  const struct perf_event_header *h)
{
	int64_t at = ustack_perf_record__time_offset(h->type, h->size);
	uint64_t v = 0;

	if (at < 0)
		return 0;
	for (unsigned int i = 0; i < 8; i++)
		v |= (uint64_t)r->data[(off + (uint64_t)at + i) & (r->size - 1)] << (8 * i);
	return v;
}

static const uint8_t *pend_data(const struct ustack_perf_session *s, const struct pending *p)
{
	if (p->b >= PEND_RING)
		return s->rings[p->b - PEND_RING].data + p->off;
	return s->bufs[p->b].p + p->off;
}

/* Take every record of @r: those up to @limit stay where they are (copied
 * into bufs[@now] only when they wrap around the ring's end), the later
 * ones are copied into bufs[@later]. The ring's space is given back by
 * release_rings(), after delivery. */
static int drain_ring(struct ustack_perf_session *s, struct perf_ring *r, uint32_t *seq,
		      uint64_t limit, int now, int later)
{
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail;
	uint64_t mask = r->size - 1;

	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail & mask, t;
		struct rbuf *to;
		uint8_t *dst;

		/* the header itself may wrap */
		for (unsigned int i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = r->data[(off + i) & mask];
		if (h.size < sizeof(h) || h.size > head - tail) {
			/* garbage: drop the rest of this ring's data */
			s->bad++;
			break;
		}
		t = ring_time(r, off, &h);
		if (grow((void **)&s->pend, &s->cap_pend, s->nr_pend + 1, sizeof(*s->pend)))
			return -ENOMEM;
		if (t <= limit && off + h.size <= r->size) {
			s->pend[s->nr_pend++] = (struct pending){
				.time = t, .off = off, .len = h.size, .seq = (*seq)++,
				.b = PEND_RING + (uint32_t)(r - s->rings),
			};
			s->bytes += h.size;
			tail += h.size;
			continue;
		}
		to = &s->bufs[t <= limit ? now : later];
		if (grow((void **)&to->p, &to->cap, to->len + h.size, 1))
			return -ENOMEM;
		dst = to->p + to->len;
		if (off + h.size <= r->size) {
			memcpy(dst, r->data + off, h.size);
		} else {
			uint64_t first = r->size - off;

			memcpy(dst, r->data + off, first);
			memcpy(dst + first, r->data, h.size - first);
		}
		s->pend[s->nr_pend++] = (struct pending){
			.time = t, .off = to->len, .len = h.size, .seq = (*seq)++,
			.b = (uint32_t)(to - s->bufs),
		};
		to->len += h.size;
		s->bytes += h.size;
		tail += h.size;
	}
	r->read = tail;
	return 0;
}

/* The round is done with the records in place: their space is the
 * kernel's again. */
static void release_rings(struct ustack_perf_session *s)
{
	for (int k = 0; k < s->nr_rings; k++)
		if (s->rings[k].fd >= 0 && s->rings[k].read != s->rings[k].meta->data_tail)
			__atomic_store_n(&s->rings[k].meta->data_tail, s->rings[k].read,
					 __ATOMIC_RELEASE);
}

static int pend_cmp(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Per sample: fds are sorted by id once the session is open (one fd per
 * thread, CPU and event with -p: a linear scan would grow with them). */
static int event_of_id(void *ctx, uint64_t id)
{
	const struct ustack_perf_session *s = ctx;
	size_t i = ustack_count_le_u64(s->fds, (size_t)s->nr_fds, sizeof(*s->fds),
				       offsetof(struct perf_fd, id), id);

	return i && s->fds[i - 1].id == id ? s->fds[i - 1].event : -1;
}

static int parse_record(struct ustack_perf_session *s, const uint8_t *r, uint32_t len,
			struct ustack_perf_record *out)
{
	if (!s->parser.event_of_id) {
		ustack_perf_parser__init(&s->parser, event_of_id, s);
		s->parser.raw_events = s->raw_events;
		s->parser.regs_events = s->regs_events;
	}
	return ustack_perf_record__parse(&s->parser, r, len, out);
}

/* Keep the undelivered records [from, nr_pend) for the next round, in their
 * (sorted) order: in bufs[@later] already when all of them are there
 * (ordered delivery), else copied there. It becomes bufs[held]. */
static void keep_rest(struct ustack_perf_session *s, uint64_t from, int later)
{
	struct rbuf *to = &s->bufs[later];
	uint64_t i, len = 0;
	int moved = 0;

	for (i = from; i < s->nr_pend && s->pend[i].b == (uint32_t)later; i++)
		;
	if (i < s->nr_pend) {
		/* some in the other buffers (an explicit @until): copied after
		 * what @later holds */
		moved = 1;
		len = to->len;
		for (i = from; i < s->nr_pend; i++)
			if (s->pend[i].b != (uint32_t)later)
				len += s->pend[i].len;
		if (grow((void **)&to->p, &to->cap, len, 1)) {
			/* cannot keep them: deliver-order is lost, drop (counted) */
			s->bad += s->nr_pend - from;
			s->nr_pend = 0;
			return;
		}
	}
	len = to->len;
	for (i = from; i < s->nr_pend; i++) {
		struct pending *p = &s->pend[i];

		if (moved && p->b != (uint32_t)later) {
			memcpy(to->p + len, pend_data(s, p), p->len);
			p->off = len;
			p->b = (uint32_t)later;
			len += p->len;
		}
		s->pend[i - from] = *p;
		s->pend[i - from].seq = (uint32_t)(i - from);
	}
	to->len = len;
	s->nr_pend -= from;
	s->held = later;
}

static int poll_round(struct ustack_perf_session *s, int timeout_ms, uint64_t until, int ordered,
		      ustack_perf_record_fn fn, void *ctx)
{
	struct pollfd pfds[256];
	int np = 0, delivered = 0;
	int now = (s->held + 1) % 3, later = (s->held + 2) % 3;
	uint32_t seq = (uint32_t)s->nr_pend;
	uint64_t i;

	for (int k = 0; k < s->nr_rings && np < (int)ARRAY_SIZE(pfds); k++)
		if (s->rings[k].fd >= 0)
			pfds[np++] = (struct pollfd){ .fd = s->rings[k].fd, .events = POLLIN };
	if (timeout_ms && poll(pfds, np, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	/* ordered: up to the time the rings are read from. A record that
	 * depends on another (a sample after its thread's COMM or its
	 * deferred callchain's sample, a sample in a mapping another thread's
	 * MMAP2 made) is time-stamped after that one was written: if it is not
	 * later than this moment, the one it depends on is in its ring when
	 * that ring is read. What is later waits for the next round (copied
	 * once, into bufs[later]). Rings read one after the other without it
	 * gave a thread's samples its old name now and then. */
	if (ordered) {
		uint64_t t0 = ustack_mono_ns();

		if (until > t0)
			until = t0;
	}
	s->bufs[now].len = 0;
	s->bufs[later].len = 0;

	/* records kept from the last round come first (seq below the new) */
	for (int k = 0; k < s->nr_rings; k++) {
		int ret;

		if (s->rings[k].fd < 0)
			continue;
		ret = drain_ring(s, &s->rings[k], &seq, ordered ? until : UINT64_MAX, now, later);
		if (ret) {
			/* what was taken in place is dropped with the ring space */
			s->bad += s->nr_pend;
			s->nr_pend = 0;
			release_rings(s);
			return ret;
		}
	}
	if (s->nr_pend)
		qsort(s->pend, s->nr_pend, sizeof(*s->pend), pend_cmp);
	for (i = 0; i < s->nr_pend && s->pend[i].time <= until; i++) {
		const uint8_t *r = pend_data(s, &s->pend[i]);
		struct ustack_perf_record rec;
		int ret = parse_record(s, r, s->pend[i].len, &rec);

		if (ret == -ENOENT)
			continue;
		if (ret) {
			const struct perf_event_header *h = (const void *)r;

			if (s->bad++ < 8)
				ustack_log(USTACK_DEBUG, "ustack: perf record type %u misc 0x%x size %u "
					   "refused: %s\n", h->type, h->misc, h->size, strerror(-ret));
			continue;
		}
		if (rec.type == USTACK_PREC_LOST)
			s->lost_reported += rec.lost.lost;
		fn(ctx, &rec);
		delivered++;
	}
	keep_rest(s, i, later);
	release_rings(s);
	return delivered;
}

int ustack_perf_session__has_records(const struct ustack_perf_session *s, uint64_t until)
{
	/* held records are in time order (keep_rest): the first is the oldest */
	if (s->nr_pend && s->pend[0].time <= until)
		return 1;
	for (int k = 0; k < s->nr_rings; k++)
		if (s->rings[k].fd >= 0 &&
		    __atomic_load_n(&s->rings[k].meta->data_head, __ATOMIC_ACQUIRE) !=
			    s->rings[k].meta->data_tail)
			return 1;
	return 0;
}

int ustack_perf_session__poll_until(struct ustack_perf_session *s, int timeout_ms,
				    uint64_t until, ustack_perf_record_fn fn, void *ctx)
{
	return poll_round(s, timeout_ms, until, 0, fn, ctx);
}

int ustack_perf_session__poll(struct ustack_perf_session *s, int timeout_ms,
			      ustack_perf_record_fn fn, void *ctx)
{
	return poll_round(s, timeout_ms, UINT64_MAX, 1, fn, ctx);
}
