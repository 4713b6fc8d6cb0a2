// SPDX-License-Identifier: MIT
/*
 * The BPF backend of ustack_record(): the kernel program unwinds at the
 * event and sends (per event) a 48-byte record and (per distinct stack,
 * once) its frames; this file turns them into the same trace records as
 * the copy backend.
 *
 * - STACK records: frames already normalized to (file id, file offset)
 *   in the kernel; stored once in the user stackmap, kernel id -> trace id.
 * - EVENT records: an EVENT trace record; the first event of a kernel entry
 *   (UB_EV_NEW_ENTRY) opens the tid's entry, whose USER_STACK record is
 *   written when the entry closes (the task's next entry, a user-mode
 *   sample, its exit or the end), after all of its events, as the trace
 *   format's stitching expects (docs/trace-format.md 4.2).
 * - COPY records (rare: a table not in the kernel yet, locked mappings):
 *   unwound here from the copy with the mapping picture, after the perf
 *   side-band records that came before have been applied; kept by cookie
 *   until the event of that cookie comes (an off-CPU interval's event
 *   comes at its switch-in, long after the copy).
 * - Off-CPU events (UB_EV_VALUE): the interval's length is their weight.
 * Side-band (MMAP2, COMM, FORK, EXIT, LOST) still comes from perf through
 * a dummy event; new executable mappings get their tables loaded, a few
 * milliseconds' worth per read (LOAD_BUDGET_NS): a burst of dlopens (a
 * python3 import) must not stall a caller's event loop. The rest waits in
 * a queue while an eventfd keeps the recorder's fd readable; walks that
 * meet a file not loaded yet end in a COPY record, unwound here.
 */
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <errno.h>
#include <time.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include <ustack/procmaps.h>
#include "common/opts.h"
#include "common/clock.h"
#include "common/compiler.h"
#include "common/grow.h"
#include "common/log.h"
#include "elf/elf_file.h"
#include "bpfload/bpf_backend.h"
#include "bpfload/bpf_record.h"
#include "record/backend.h"
#include "record/backend_bpf_alloc.h"
#include "record/python_rec.h"
#include "record/rec.h"

struct entry {
	uint64_t cookie, time;
	uint32_t pid, tid, cpu, stop;
	uint32_t stack_id; /* trace id or USTACK_TRACE_NO_STACK */
	uint32_t open;
};

struct rec_bpf {
	struct ustack_bpf *bpf;
	uint64_t bad_ring; /* malformed ring-buffer records */
	int sampling_idx;  /* the sampling event's index in the perf session (0: none) */
	char attach_err[256];
	struct ustack_u64map *stack_of;  /* kernel stack id (user) -> trace id */
	struct ustack_u64map *kstack_of; /* kernel id in kstacks -> trace id */
	struct ustack_u64map *entry_of;  /* tid -> index in entries */
	struct entry *entries;
	size_t nr_entries, cap_entries;
	/* COPY records unwound, waiting for their event: cookie -> trace
	 * stack id | stop << 32. An off-CPU interval's copy is sent at the
	 * switch-out and its event at the switch-in, with any other records
	 * in between: paired by the cookie, unique per entry. */
	struct ustack_u64map *copy_of;
	uint64_t lost_seen, kernel_bytes;
	uint64_t kips[UB_MAX_FRAMES];
	/* kernel stacks sent whole (UB_REC_KSTACK), interned as they come,
	 * each waiting for its event: tid -> seq << 32 | trace stack id. An
	 * off-CPU interval's comes at the switch-out, its event at the
	 * switch-in: one per thread may wait (a thread pool asleep in one
	 * stack). An event whose tid holds another seq (a newer record: an
	 * interrupt's event came between) goes without kernel frames,
	 * counted in kwhole_lost; past KWHOLE_MAX tids the map starts anew
	 * (those of intervals never sent, too short, pile up) */
	struct ustack_u64map *kwhole;
	uint64_t kwhole_lost;
	struct ustack_frame frames[UB_MAX_FRAMES];
	int failed_load;
	/* USTACK_BPF_HOLD_TABLE (a test knob): the files whose path holds
	 * this string never get a table in the kernel, as if each stayed
	 * "not loaded yet" for the whole run; NULL: none held */
	const char *hold_table;
	/* executable mappings whose tables are still to be loaded */
	struct pending_load { uint32_t pid; uint64_t start; } *pending;
	size_t pending_head, nr_pending, cap_pending;
	int efd; /* readable while pending is not empty */
	/* readable when a process's next look for CPython is due: the ring
	 * wakes the reader only when an eighth of it is used */
	int py_tfd;
	uint32_t nr_uprobes;     /* r->probes entries of uprobe events (the probes map) */
	uint64_t probe_attached; /* their links */
	struct rec_bpf_alloc *alloc; /* record --alloc (backend_bpf_alloc.c) */
	struct rec_py *py;           /* Python frames (python_rec.c); NULL: --no-python */
	uint64_t words[2 * UB_MAX_FRAMES];
};

#define LOAD_BUDGET_NS 15000000ull

static inline struct rec_bpf *B(struct rec *r)
{
	return r->be_state;
}

/* The off-CPU events' indexes (each kind at most once) and threshold. */
static int offcpu_events(struct rec *r, struct ustack_bpf_opts *bo, char *err, size_t errlen)
{
	bo->offcpu_sleep_event = bo->offcpu_preempt_event = UB_NO_EVENT;
	bo->offcpu_min_ns = r->o->off_cpu_min_ns;
	for (int i = 0; i < r->nr_events; i++) {
		uint32_t *idx;

		if (r->events[i].kind->attach != REC_ATTACH_SCHED)
			continue;
		idx = r->events[i].offcpu == REC_OFFCPU_PREEMPT ? &bo->offcpu_preempt_event
								 : &bo->offcpu_sleep_event;
		if (*idx != UB_NO_EVENT) {
			snprintf(err, errlen, "BPF backend: event %s given twice",
				 r->events[i].perf.name);
			return -EINVAL;
		}
		*idx = (uint32_t)i;
	}
	return 0;
}

static int is_uprobe(const struct rec *r, const struct rec_probe *p)
{
	return p->event >= 0 && p->event < r->nr_events &&
	       r->events[p->event].kind->attach == REC_ATTACH_UPROBE;
}

/* The probes map's entry of @p: what its hits record. */
static void probe_entry(const struct rec_probe *p, struct ub_probe *e)
{
	_Static_assert(UB_PROBE_UPROBE == USTACK_PROBE_UPROBE &&
		       UB_PROBE_URETPROBE == USTACK_PROBE_URETPROBE &&
		       UB_PROBE_USDT == USTACK_PROBE_USDT, "probe kinds");
	_Static_assert(UB_USDT_CONST == USTACK_USDT_ARG_CONST &&
		       UB_USDT_REG == USTACK_USDT_ARG_REG &&
		       UB_USDT_DEREF == USTACK_USDT_ARG_DEREF, "USDT argument kinds");
	_Static_assert(USTACK_USDT_MAX_ARGS == UB_MAX_ARGS, "USDT arguments");
	/* the BPF compiler lays it out with no padding of its own either */
	_Static_assert(sizeof(struct ub_usdt_arg) == 16 && sizeof(struct ub_probe) == 208,
		       "struct ub_probe layout");
	memset(e, 0, sizeof(*e));
	e->event = (uint32_t)p->event;
	e->kind = p->t.kind;
	e->nr_args = p->t.kind == USTACK_PROBE_USDT && p->t.nr_args <= UB_MAX_ARGS ? p->t.nr_args
										   : 0;
	for (uint32_t i = 0; i < e->nr_args; i++)
		e->args[i] = (struct ub_usdt_arg){ .kind = p->t.args[i].kind,
						   .size = (uint8_t)p->t.args[i].size,
						   .reg = p->t.args[i].reg,
						   .val = (uint64_t)p->t.args[i].val };
}

/* Every uprobe event's place, attached for its process (a probe's filter
 * is per process: other processes mapping the file are not trapped), its
 * probes map entry first. Any place that cannot be attached is an error:
 * a recording that silently misses part of what was asked for would
 * report wrong counts. */
static int attach_probes(struct rec *r, pid_t child, char *err, size_t errlen)
{
	struct rec_bpf *b = B(r);
	uint32_t k = 0;
	int ret;

	for (size_t i = 0; i < r->probes.nr; i++) {
		const struct rec_probe *p = &r->probes.v[i];
		int retprobe = p->t.kind == USTACK_PROBE_URETPROBE;
		struct ub_probe e;
		int pid = p->pid > 0 ? p->pid : p->pid < 0 ? -1 : child;

		if (!is_uprobe(r, p))
			continue;
		if (p->pid == 0 && child <= 0) {
			snprintf(err, errlen, "BPF backend: %s: probe for a command that was not "
				 "started", p->t.shown);
			return -EINVAL;
		}
		probe_entry(p, &e);
		ret = ustack_bpf__set_probe(b->bpf, k, &e);
		if (ret) {
			snprintf(err, errlen, "BPF backend: probes map: %s", strerror(-ret));
			return ret;
		}
		ret = ustack_bpf__attach_uprobe(b->bpf, retprobe ? "ustack_uretprobe" : "ustack_uprobe",
						retprobe, pid, p->t.path, p->t.offset,
						p->t.ref_ctr_offset, k, err, errlen);
		if (ret)
			return ret;
		pr_debug("BPF backend: %s on %s:%s (%s+%#llx) for %s%d\n",
			 retprobe ? "uretprobe" : p->t.kind == USTACK_PROBE_USDT ? "usdt" : "uprobe",
			 p->t.shown, p->t.symbol, p->t.path, (unsigned long long)p->t.offset,
			 pid < 0 ? "every process " : "pid ", pid);
		b->probe_attached++;
		k++;
	}
	return 0;
}

static int bpf_open(struct rec *r, char *err, size_t errlen)
{
	struct ustack_bpf_opts bo = { .sz = sizeof(bo), .trace_all = r->o->system_wide,
				      .self_tgid = (uint32_t)getpid() };
	const struct ustack_record_opts *o = r->o;
	struct rec_bpf *b;
	int sampling = 0, ret;

	bo.probe_rate_max = OPTS_GET(o, probe_rate_max, 0);
	bo.probe_rate_max = !bo.probe_rate_max ? REC_PROBE_RATE_DEFAULT
			    : bo.probe_rate_max == UINT32_MAX ? 0 : bo.probe_rate_max;
	ret = offcpu_events(r, &bo, err, errlen);
	if (!ret)
		ret = rec_bpf_alloc_opts(r, &bo, err, errlen);
	if (ret)
		return ret;
	bo.no_tracepoints = 1;
	for (int i = 0; i < r->nr_events; i++) {
		if (r->events[i].kind->attach == REC_ATTACH_TRACEPOINT)
			bo.no_tracepoints = 0;
		if (r->events[i].kind->attach != REC_ATTACH_PERF)
			continue;
		if (sampling++) {
			snprintf(err, errlen, "BPF backend: at most one sampling event (%s and %s); "
				 "use --backend copy", r->events[bo.sample_event].perf.name,
				 r->events[i].perf.name);
			return -EINVAL;
		}
		bo.sample_event = (uint32_t)i;
	}
	bo.no_sampling = !sampling;
	/* kernel stacks: samples, off-CPU intervals, tracepoints other than
	 * a system call's (whose kernel part is the call itself) */
	bo.no_kernel_stacks = !sampling && bo.offcpu_sleep_event == UB_NO_EVENT &&
			      bo.offcpu_preempt_event == UB_NO_EVENT;
	for (int i = 0; i < r->nr_events; i++)
		if (r->events[i].kind->attach == REC_ATTACH_TRACEPOINT &&
		    !(r->events[i].bpf_flags & UB_TP_SYSCALL))
			bo.no_kernel_stacks = 0;
	b = r->be_state = calloc(1, sizeof(*b));
	if (b)
		b->efd = b->py_tfd = -1;
	if (!b || !(b->stack_of = ustack_u64map__new()) ||
	    !(b->kstack_of = ustack_u64map__new()) || !(b->entry_of = ustack_u64map__new()) ||
	    !(b->copy_of = ustack_u64map__new()) || !(b->kwhole = ustack_u64map__new())) {
		snprintf(err, errlen, "BPF backend: out of memory");
		return -ENOMEM;
	}
	b->hold_table = getenv("USTACK_BPF_HOLD_TABLE");
	if (b->hold_table && !*b->hold_table)
		b->hold_table = NULL;
	b->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->efd < 0) {
		snprintf(err, errlen, "BPF backend: eventfd: %s", strerror(errno));
		return -errno;
	}
	bo.table_bytes = o->table_memory; /* o: the recorder's full-size copy */
	for (size_t i = 0; i < r->probes.nr; i++)
		b->nr_uprobes += is_uprobe(r, &r->probes.v[i]);
	bo.nr_probes = b->nr_uprobes;
	if (!OPTS_GET(o, no_python, 0) &&
	    (!(b->py = rec_py__new()) ||
	     (b->py_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) < 0)) {
		snprintf(err, errlen, "BPF backend: Python frames: %s", strerror(errno));
		return -errno;
	}
	b->bpf = ustack_bpf__open(&bo, err, errlen);
	return b->bpf ? 0 : -errno;
}

static void bpf_close(struct rec *r)
{
	struct rec_bpf *b = B(r);

	if (!b)
		return;
	ustack_bpf__close(b->bpf);
	rec_py__free(b->py);
	ustack_u64map__free(b->stack_of);
	ustack_u64map__free(b->kstack_of);
	ustack_u64map__free(b->kwhole);
	ustack_u64map__free(b->entry_of);
	ustack_u64map__free(b->copy_of);
	rec_bpf_alloc_free(b->alloc);
	free(b->entries);
	free(b->pending);
	if (b->efd >= 0)
		close(b->efd);
	if (b->py_tfd >= 0)
		close(b->py_tfd);
	free(b);
	r->be_state = NULL;
}

/* perf gives only the side-band (a dummy event) and the sampling event the
 * program runs at; tracepoints run it directly */
static void bpf_perf_opts(struct rec *r, struct ustack_perf_opts *po,
			  struct ustack_perf_event_spec *pev)
{
	pev[0] = (struct ustack_perf_event_spec){ .name = "dummy", .type = PERF_TYPE_SOFTWARE,
						  .config = PERF_COUNT_SW_DUMMY };
	po->nr_events = 1;
	for (int i = 0; i < r->nr_events; i++)
		if (r->events[i].kind->attach == REC_ATTACH_PERF) {
			B(r)->sampling_idx = po->nr_events;
			pev[po->nr_events++] = r->events[i].perf;
		}
	po->events = pev;
	po->stack_size = 8;
	po->pages = 64; /* side-band only */
	/* a new mapping's table is loaded as soon as it is seen */
	po->wake_each = 1;
}

/* ---- tables --------------------------------------------------------------------- */

/* @path is one USTACK_BPF_HOLD_TABLE keeps out of the kernel: its walks
 * stop there (not-loaded) as they do before a table is loaded, in every
 * run, whatever the timing: the tests of what follows such a stop (a
 * stack copy, a partial stack with the Python frames above the cut) do
 * not depend on how soon the recorder loads a new program's tables */
static int held(struct rec *r, const char *path)
{
	return B(r)->hold_table && path && strstr(path, B(r)->hold_table);
}

static void load_vma(struct rec *r, uint32_t pid, const struct pm_vma *v)
{
	struct pm_file *f = v ? ustack_recmaps__file(r->rm, v->file) : NULL;
	uint64_t dev, ino;
	struct ustack_modtab *m;
	int ret, fd;

	if (!f)
		return; /* anonymous code: the heuristic, as in user space */
	if (held(r, f->path))
		return;
	if (f->kind == USTACK_VMA_VDSO) {
		dev = 0;
		ino = 0;
	} else {
		dev = ((uint64_t)f->dev_major << 20) | f->dev_minor;
		ino = f->inode;
	}
	if (ustack_bpf__has_file(B(r)->bpf, dev, ino))
		return;
	ustack_recmaps__file_info(r->rm, f, pid);
	m = ustack_recmaps__tables(r->rm, pid, v);
	/* the rows are compiled by the backend's thread, from the file open
	 * here (the process may be gone by then); the vDSO is an image */
	fd = m && f->kind != USTACK_VMA_VDSO
		     ? open(ustack_elf__path(ustack_modtab__elf(m)), O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		/* that path may be /proc/PID/map_files/START-END, which names
		 * whatever the process maps there by now: the thread must build
		 * the rows of the file @m was read from, or none */
		struct stat st;
		uint64_t mdev, mino;

		ustack_modtab__file(m, &mdev, &mino);
		if (fstat(fd, &st) || (uint64_t)st.st_dev != mdev || (uint64_t)st.st_ino != mino) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		ret = ustack_bpf__set_file_fd(B(r)->bpf, dev, ino, f->id, fd);
	else
		ret = ustack_bpf__set_file(B(r)->bpf, dev, ino, f->id, m);
	ustack_modtab__put(m);
	if (ret < 0 && !B(r)->failed_load++)
		pr_warn("%s: unwind table not given to the kernel: %s (its frames are unwound "
			"from a stack copy instead)\n", f->path, strerror(-ret));
}

/* Queued: loaded by load_pending(), from the picture as it is then (a
 * mapping gone by then needs no table). */
static void bpf_mapped(struct rec *r, uint32_t pid, uint64_t start)
{
	struct rec_bpf *b = B(r);
	uint64_t one = 1;

	if (!B(r)->bpf)
		return;
	rec_py__seen(r, b->py, b->bpf, pid);
	if (ustack_ring_grow((void **)&b->pending, &b->cap_pending, &b->pending_head, b->nr_pending,
			     sizeof(*b->pending), 64)) {
		load_vma(r, pid, ustack_recmaps__find(r->rm, pid, start));
		return;
	}
	b->pending[(b->pending_head + b->nr_pending) % b->cap_pending] =
		(struct pending_load){ .pid = pid, .start = start };
	if (!b->nr_pending++ && write(b->efd, &one, sizeof(one)) < 0)
		pr_debug("BPF tables: eventfd: %s\n", strerror(errno));
}

/* Queued tables, for at most @budget_ns (at least one). */
static void load_pending(struct rec *r, uint64_t budget_ns)
{
	struct rec_bpf *b = B(r);
	uint64_t t0 = ustack_mono_ns(), n;

	while (b->nr_pending) {
		struct pending_load p = b->pending[b->pending_head];

		b->pending_head = (b->pending_head + 1) % b->cap_pending;
		b->nr_pending--;
		load_vma(r, p.pid, ustack_recmaps__find(r->rm, p.pid, p.start));
		if (ustack_mono_ns() - t0 >= budget_ns)
			break;
	}
	if (!b->nr_pending && read(b->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		pr_debug("BPF tables: eventfd: %s\n", strerror(errno));
}

/* Every executable mapping of @pid now (the picture has them: synthesized). */
static void load_pid(struct rec *r, uint32_t pid)
{
	struct ustack_procmaps_opts po = { .sz = sizeof(po),
					   .flags = USTACK_PROCMAPS_NO_KERNEL_BUILD_ID };
	struct ustack_procmaps *pm = ustack_procmaps__open((int)pid, &po);
	struct ustack_vma vma;
	uint64_t addr = 0;

	if (!pm)
		return;
	/* a CPython running now: the kernel knows its frames before the
	 * first event (else they come once the reader has seen one) */
	rec_py__seen(r, B(r)->py, B(r)->bpf, pid);
	while (!ustack_procmaps__next(pm, addr, USTACK_VMA_EXEC, &vma) && vma.end > addr) {
		load_vma(r, pid, ustack_recmaps__find(r->rm, pid, vma.start));
		addr = vma.end;
	}
	ustack_procmaps__close(pm);
}

/* ---- a command's libraries, before its exec ----------------------------------- */

/* One file of the command: its tables into the kernel now. */
static void preload_path(struct rec *r, const char *path)
{
	char real[PATH_MAX];
	struct ustack_modtab *m;
	struct pm_file *f;
	struct stat sb;

	if (!realpath(path, real) || stat(real, &sb) || !S_ISREG(sb.st_mode) || held(r, real))
		return;
	/* the kernel's view of the device is what the program keys on; a
	 * file system whose stat() says otherwise (btrfs subvolumes,
	 * overlayfs) just gets no head start */
	if (ustack_bpf__has_file(B(r)->bpf, ((uint64_t)major(sb.st_dev) << 20) | minor(sb.st_dev),
				 sb.st_ino))
		return;
	f = ustack_recmaps__file_at_path(r->rm, real, major(sb.st_dev), minor(sb.st_dev),
					 sb.st_ino, &m);
	if (!f)
		return;
	ustack_recmaps__file_info(r->rm, f, (uint32_t)getpid());
	ustack_bpf__set_file(B(r)->bpf, ((uint64_t)major(sb.st_dev) << 20) | minor(sb.st_dev),
			     sb.st_ino, f->id, m);
	ustack_modtab__put(m);
}

/* @path starts as an ELF file does (a script, as pyenv's shims are, does
 * not: opening it as ELF only printed a warning about it) */
static int is_elf(const char *path)
{
	char magic[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return 0;
	ok = read(fd, magic, sizeof(magic)) == (ssize_t)sizeof(magic) &&
	     !memcmp(magic, "\x7f" "ELF", 4);
	close(fd);
	return ok;
}

/*
 * The tables of a command's executable, its interpreter and the libraries
 * the interpreter would load (asked with "ld.so --list", which runs none
 * of the command's code), loaded before the command starts: its first
 * events then unwind in the kernel like the rest, instead of waiting for
 * the side-band. Libraries it opens later (dlopen) are loaded when their
 * MMAP2 record arrives.
 */
static void preload_command(struct rec *r, const char *cmd)
{
	char exe[PATH_MAX], interp[PATH_MAX] = "", line[PATH_MAX + 64];
	struct ustack_elf_segment seg;
	struct ustack_elf *elf;
	const uint8_t *data;
	int pfd[2];
	pid_t pid;
	FILE *f;

	if (rec_find_command(cmd, exe, sizeof(exe)) || !is_elf(exe))
		return; /* a script (#!): its program's tables come with its MMAP2s */
	preload_path(r, exe);
	elf = ustack_elf__open(exe);
	if (!elf)
		return;
	if (!ustack_elf__find_segment(elf, PT_INTERP, &seg) &&
	    (data = ustack_elf__segment_data(elf, &seg)) && seg.filesz < sizeof(interp))
		snprintf(interp, sizeof(interp), "%.*s", (int)seg.filesz, (const char *)data);
	ustack_elf__close(elf);
	if (!interp[0] || pipe2(pfd, O_CLOEXEC))
		return; /* static: nothing more */
	preload_path(r, interp);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(pfd[1], 1);
		if (null >= 0)
			dup2(null, 2);
		execl(interp, interp, "--list", exe, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	f = pid > 0 ? fdopen(pfd[0], "r") : NULL;
	if (!f)
		close(pfd[0]);
	/* "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" */
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "=> "), *end;

		p = p ? p + 3 : line + strspn(line, " \t");
		if (*p != '/')
			continue;
		end = strstr(p, " (0x");
		if (end)
			*end = 0;
		p[strcspn(p, "\n")] = 0;
		preload_path(r, p);
	}
	if (f)
		fclose(f);
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static int watch_fd(void *ctx, int fd)
{
	return ustack_bpf__watch_fd(ctx, fd);
}

static int attach_fd(void *ctx, int fd);

/* Targets, tables of every mapping known now, attachments. */
static int bpf_start(struct rec *r, pid_t child, char *err, size_t errlen)
{
	const struct ustack_record_opts *o = r->o;
	int ret = 0;

	if (child > 0) {
		ret = ustack_bpf__add_target(B(r)->bpf, (uint32_t)child, 1);
	} else if (!o->system_wide) {
		for (int i = 0; i < o->nr_pids && !ret; i++)
			ret = ustack_bpf__add_target(B(r)->bpf, (uint32_t)o->pids[i], 0);
	}
	if (ret) {
		snprintf(err, errlen, "BPF backend: adding the targets: %s", strerror(-ret));
		return ret;
	}
	if (!o->system_wide && (ret = ustack_bpf__attach_follow(B(r)->bpf, err, errlen)))
		return ret;
	/* tables of everything mapped now; a command's come with its MMAP2s */
	if (o->system_wide) {
		DIR *d = opendir("/proc");
		struct dirent *de;

		while (d && (de = readdir(d)))
			if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
				load_pid(r, (uint32_t)atoi(de->d_name));
		if (d)
			closedir(d);
	} else if (child <= 0) {
		for (int i = 0; i < o->nr_pids; i++)
			load_pid(r, (uint32_t)o->pids[i]);
	} else {
		preload_command(r, o->argv[0]);
	}
	/* those tables in the kernel before the first event (later ones are
	 * written behind the reader's back: ustack_bpf__set_file()) */
	ustack_bpf__sync(B(r)->bpf);
	for (int i = 0; i < r->nr_events; i++) {
		char sys[128], *name;

		if (r->events[i].kind->attach != REC_ATTACH_TRACEPOINT)
			continue;
		snprintf(sys, sizeof(sys), "%s", r->events[i].tracepoint);
		name = strchr(sys, ':');
		if (!name)
			continue;
		*name++ = 0;
		ret = ustack_bpf__attach_tracepoint(B(r)->bpf, sys, name,
						    (uint32_t)i | r->events[i].bpf_flags, err, errlen);
		if (ret)
			return ret;
	}
	for (int i = 0; i < r->nr_events; i++)
		if (r->events[i].kind->attach == REC_ATTACH_SCHED) {
			ret = ustack_bpf__attach_sched(B(r)->bpf, err, errlen);
			if (ret)
				return ret;
			break; /* one program for both kinds */
		}
	ret = attach_probes(r, child, err, errlen);
	if (ret)
		return ret;
	if ((ret = rec_bpf_alloc_attach(r, B(r)->bpf, child, &B(r)->probe_attached, err, errlen)))
		return ret;
	/* the side-band (event 0, the dummy) wakes the poll too: its MMAP2s
	 * load tables, and the ring wakes the reader only in batches */
	ret = ustack_perf_session__for_each_fd(r->ps, 0, watch_fd, B(r)->bpf);
	if (!ret)
		ret = ustack_bpf__watch_fd(B(r)->bpf, B(r)->efd); /* tables still to load */
	if (!ret && B(r)->py_tfd >= 0)
		ret = ustack_bpf__watch_fd(B(r)->bpf, B(r)->py_tfd);
	if (ret) {
		snprintf(err, errlen, "BPF backend: polling the side-band: %s", strerror(-ret));
		return ret;
	}
	/* the sampling event's perf fds run the program */
	if (B(r)->sampling_idx > 0 &&
	    (ret = ustack_perf_session__for_each_fd(r->ps, B(r)->sampling_idx, attach_fd, r)))
		snprintf(err, errlen, "%s", B(r)->attach_err);
	return ret;
}

static int attach_fd(void *ctx, int fd)
{
	struct rec *r = ctx;
	char err[256];
	int ret = ustack_bpf__attach_perf(B(r)->bpf, fd, err, sizeof(err));

	if (ret)
		snprintf(B(r)->attach_err, sizeof(B(r)->attach_err), "%s", err);
	return ret;
}

/* ---- entries: one USER_STACK per cookie, after its events --------------------- */

static struct entry *entry_of(struct rec *r, uint32_t tid, int create)
{
	struct rec_bpf *b = B(r);
	uint64_t i;

	if (ustack_u64map__get(b->entry_of, tid, &i))
		return &b->entries[i];
	if (!create)
		return NULL;
	{
		void *e = b->entries;
		int gret = ustack_grow(&e, &b->cap_entries, b->nr_entries + 1, sizeof(*b->entries), 64);

		b->entries = e;
		if (gret)
			return NULL;
	}
	if (ustack_u64map__put(b->entry_of, tid, b->nr_entries))
		return NULL;
	memset(&b->entries[b->nr_entries], 0, sizeof(struct entry));
	b->entries[b->nr_entries].tid = tid; /* rec_bpf_exit() moves entries by it */
	return &b->entries[b->nr_entries++];
}

static void close_entry(struct rec *r, struct entry *e)
{
	struct ustack_trace_user_stack u;
	int ret;

	if (!e || !e->open)
		return;
	e->open = 0;
	u = (struct ustack_trace_user_stack){
		.time = e->time, .pid = e->pid, .tid = e->tid, .cpu = e->cpu,
		.stop_reason = e->stop, .cookie = e->cookie, .stack_id = e->stack_id,
	};
	ret = ustack_trace_writer__add_user_stack(r->w, &u);
	if (ret && !r->werr)
		r->werr = ret;
	r->st.user_stacks++;
}

/* Thread @tid exited: its last user stack is complete. The thread's entry is written and dropped: kept, every thread id ever
 * seen cost an entry (~60 bytes) for the rest of the recording, up to
 * kernel.pid_max of them. The last entry moves into the hole. */
static void bpf_exit(struct rec *r, uint32_t tid)
{
	struct rec_bpf *b = B(r);
	uint64_t i;
	size_t last;

	if (!B(r)->bpf)
		return;
	close_entry(r, entry_of(r, tid, 0));
	rec_bpf_alloc_exit(b->alloc, tid);
	if (!ustack_u64map__delete(b->entry_of, tid, &i) || i >= b->nr_entries)
		return;
	last = --b->nr_entries;
	if (i != last) {
		b->entries[i] = b->entries[last];
		ustack_u64map__put(b->entry_of, b->entries[i].tid, i);
	}
}

/* An exec: the process's interpreter, if it had one, is gone */
static void bpf_remap(struct rec *r, uint32_t tid, int exec)
{
	if (exec && B(r) && B(r)->bpf)
		rec_py__exec(B(r)->py, B(r)->bpf, tid);
}

/* ---- records ---------------------------------------------------------------------- */

/* Frames and methods of a stored stack, for the totals. */
/* Count the frames of a stack the kernel walked, and note a process with
 * frames in anonymous memory (file id 0): its JIT map is read at the end. */
static void count_frames(struct rec *r, uint32_t id, uint32_t pid)
{
	const uint64_t *w;
	uint32_t nr;
	int anon = 0;

	if (id == USTACK_TRACE_NO_STACK || ustack_stackmap__lookup(r->umap, id, &w, &nr, NULL))
		return;
	for (uint32_t i = 0; i + 1 < nr; i += 2) {
		r->st.frames++;
		r->st.frames_by_method[(w[i + 1] >> 56) & 7]++;
		anon |= !(w[i + 1] & USTACK_TRACE_WORD_FILE_ID_MASK);
	}
	if (anon)
		rec_jit_note_anon(r, pid);
}

/* @s was checked by ustack_bpf_record__check() */
static void on_stack(struct rec *r, const struct ub_stack *s)
{
	uint32_t id;

	_Static_assert(UB_MAX_FRAMES <= MAX_USER_FRAMES, "r->words holds a checked stack");
	/* the signal trampoline before a frame restored from a signal frame
	 * is named at its pc, as ustack_unwind_mark_trampolines() does for
	 * the copy backend (the kernel walk learns it one frame too late) */
	uint32_t n = s->nr;
	uint64_t *w = s->npy && B(r)->py ? B(r)->words : r->words;

	memcpy(w, s->words, 2u * s->nr * sizeof(uint64_t));
	for (uint32_t k = 1; k < s->nr; k++)
		if (((w[2 * k + 1] >> 56) & 0x3f) == USTACK_METHOD_SIGNAL)
			w[2 * k - 1] |= (uint64_t)USTACK_TRACE_FRAME_EXACT_PC << 62;
	if (s->pystop > UB_PYSTOP_END)
		r->st.python_chains_cut++;
	if (w != r->words) {
		struct rec_py_words pw = { .pid = s->pypid, .npy = s->npy,
					   .words = s->words + 2u * s->nr };

		n = rec_py__frames(r, B(r)->py, &pw, w, n, s->nstop != USTACK_STOP_OUTERMOST,
				   r->words);
	}
	if (ustack_stackmap__insert(r->umap, r->words, 2u * n, &id) < 0)
		return; /* the events naming it get no user stack */
	ustack_u64map__put(B(r)->stack_of, s->id, id);
}

/* The copy's Python frames placed among the @n native frames unwound
 * from it (r->words), into r->words. As in a stack record, the native
 * frames have the room first: a native stack too deep for all of them
 * keeps the innermost Python frames, as the kernel walk cuts its chain. */
static uint32_t copy_python(struct rec *r, const struct ub_copy *c, uint32_t n, uint32_t stop)
{
	struct rec_py_words pw = { .pid = c->pid, .npy = c->npy, .words = c->py };
	uint32_t nw;

	if (c->pystop > UB_PYSTOP_END)
		r->st.python_chains_cut++;
	if (!pw.npy || !B(r)->py)
		return n;
	if (n > UB_MAX_FRAMES)
		n = UB_MAX_FRAMES;
	if (pw.npy > UB_MAX_FRAMES - n) {
		pw.npy = UB_MAX_FRAMES - n;
		if (c->pystop <= UB_PYSTOP_END)
			r->st.python_chains_cut++;
		if (!pw.npy)
			return n;
	}
	memcpy(B(r)->words, r->words, 2u * n * sizeof(uint64_t));
	nw = rec_py__frames(r, B(r)->py, &pw, B(r)->words, n, stop != USTACK_STOP_OUTERMOST,
			    r->words);
	/* counted with the native ones, as count_frames() counts a stack
	 * record's */
	for (uint32_t i = 0; i < nw; i++)
		if ((r->words[2 * i + 1] & USTACK_TRACE_WORD_FILE_ID_MASK) == RECMAPS_PY_FILE_ID) {
			r->st.frames++;
			r->st.frames_by_method[(r->words[2 * i + 1] >> 56) & 7]++;
		}
	return nw;
}

/* @c was checked by ustack_bpf_record__check() */
static void on_copy(struct rec *r, const struct ub_copy *c)
{
	struct rec_bpf *b = B(r);
	uint32_t stop = USTACK_STOP_READ_FAULT, id = USTACK_TRACE_NO_STACK, nw;
	int n;

	/* the mappings that came before this stack's event (perf writes
	 * MMAP2 at the mmap, before anything can run in the new code) */
	ustack_perf_session__poll_until(r->ps, 0, c->time, rec_on_record, r);
	n = rec_unwind_copy(r, c->pid, c->ip, c->sp, c->bp, &c->bx, c->data, c->size, b->frames,
			    UB_MAX_FRAMES, &stop);
	if (n > 0) {
		nw = copy_python(r, c, rec_pack_frames(r, c->pid, b->frames, (uint32_t)n), stop);
		if (ustack_stackmap__insert(r->umap, r->words, 2u * nw, &id) < 0)
			id = USTACK_TRACE_NO_STACK;
	}
	/* no room: its event gets no user stack, as for a lost copy */
	ustack_u64map__put(b->copy_of, c->cookie, id | (uint64_t)stop << 32);
	r->st.copied++;
}

/* A tp_btf program's kernel stack starts inside the tracing machinery: the
 * program's own JIT image (no kallsyms name here) and the kernel's
 * dispatcher (bpf_trace_run4, __bpf_trace_sched_switch), above the function
 * that hit the tracepoint (__schedule). Those leading frames are the
 * recorder's, not the thread's: dropped, by name, so that no kernel build's
 * frame count is assumed; the stack keeps at least its last frame. */
static uint32_t trim_tracing_frames(struct rec *r, uint64_t *ips, uint32_t n)
{
	for (uint32_t k = 0; k + 1 < n && k <= 4; k++) {
		const char *name = rec_ksym_name(r, ips[k]);

		if (!name || !strncmp(name, "bpf_trace_run", 13) ||
		    !strncmp(name, "__bpf_trace_", 12) || !strncmp(name, "bpf_prog_", 9))
			continue;
		/* the first frame kallsyms names that is not the tracing's
		 * (without kallsyms: none, and nothing is dropped) */
		if (k)
			memmove(ips, ips + k, (n - k) * sizeof(*ips));
		return n - k;
	}
	return n;
}

#define KWHOLE_MAX 65536

static void on_kstack(struct rec *r, const struct ub_kstack *k)
{
	struct rec_bpf *b = B(r);
	uint32_t n, id;

	memcpy(b->kips, k->ips, k->nr * sizeof(b->kips[0])); /* checked: 1..UB_MAX_FRAMES */
	n = trim_tracing_frames(r, b->kips, k->nr);
	if (!n || ustack_stackmap__insert(r->kmap, b->kips, n, &id) < 0)
		return; /* its event finds nothing: counted there */
	if (ustack_u64map__count(b->kwhole) >= KWHOLE_MAX)
		ustack_u64map__clear(b->kwhole);
	ustack_u64map__put(b->kwhole, k->tid, (uint64_t)k->seq << 32 | id);
}

/* The event's kernel stack sent whole before it (UB_EV_KSTACK) */
static uint32_t kernel_stack_whole(struct rec *r, const struct ub_event *e)
{
	struct rec_bpf *b = B(r);
	uint64_t v;

	if (!ustack_u64map__get(b->kwhole, e->tid, &v) || (uint32_t)(v >> 32) != e->kseq) {
		b->kwhole_lost++;
		return USTACK_TRACE_NO_STACK;
	}
	ustack_u64map__delete(b->kwhole, e->tid, &v);
	return (uint32_t)v;
}

static uint32_t kernel_stack(struct rec *r, const struct ub_event *e)
{
	struct rec_bpf *b = B(r);
	int32_t kid = e->kstack;
	uint64_t v;
	uint32_t id;
	int n;

	if (e->flags & UB_EV_KSTACK)
		return kernel_stack_whole(r, e);
	if (kid < 0)
		return USTACK_TRACE_NO_STACK;
	if (ustack_u64map__get(b->kstack_of, (uint64_t)kid, &v))
		return (uint32_t)v;
	n = ustack_bpf__kstack(B(r)->bpf, kid, b->kips, UB_MAX_FRAMES);
	if (n > 0)
		n = (int)trim_tracing_frames(r, b->kips, (uint32_t)n);
	if (n <= 0 || ustack_stackmap__insert(r->kmap, b->kips, (uint32_t)n, &id) < 0)
		return USTACK_TRACE_NO_STACK;
	ustack_u64map__put(b->kstack_of, (uint64_t)kid, id);
	return id;
}

/* A weight where the kind has one and nowhere else: the check of the ring
 * record cannot know the kinds. */
static int weight_matches(const struct rec *r, const struct ub_event *e)
{
	const struct rec_event *ev = &r->events[e->event];

	return !!(e->flags & UB_EV_VALUE) ==
	       (ev->kind->attach == REC_ATTACH_SCHED ||
		(ev->kind->attach == REC_ATTACH_ALLOC && ev->alloc == REC_ALLOC_ALLOC));
}

/* The counters of the event's kind. */
static void count_event(struct rec *r, const struct ub_event *e)
{
	const struct rec_event *ev = &r->events[e->event];

	switch (ev->kind->attach) {
	case REC_ATTACH_SCHED:
		r->st.offcpu_intervals++;
		r->st.offcpu_ns += e->value;
		break;
	case REC_ATTACH_UPROBE:
		r->st.probe_kept++;
		break;
	case REC_ATTACH_ALLOC:
		if (ev->alloc == REC_ALLOC_ALLOC) {
			r->st.alloc_sampled++;
			rec_bpf_alloc_seen(&B(r)->alloc, e->pid);
		}
		else
			r->st.alloc_frees++;
		break;
	default:
		break;
	}
}

static void on_event(struct rec *r, const struct ub_event *e)
{
	struct rec_bpf *b = B(r);
	struct ustack_trace_event ev = {
		.time = e->time, .pid = e->pid, .tid = e->tid, .cpu = e->cpu, .event_id = e->event,
		.kstack_id = kernel_stack(r, e),
	};
	struct entry *en;
	uint64_t v;

	r->st.samples++;
	if (b->py)
		rec_py__seen(r, b->py, b->bpf, e->pid);
	/* the side-band up to this event first: a new thread's FORK/COMM, a
	 * rename or an exec (COMM) the thread made before this event, so that
	 * the trace names the event's thread as it was then. The BPF ring
	 * buffer is read apart from the perf rings: without this a batch of
	 * events was written before the side-band of the same moment. */
	if (!rec_knows_thread(r, e->tid) || ustack_perf_session__has_records(r->ps, e->time))
		ustack_perf_session__poll_until(r->ps, 0, e->time, rec_on_record, r);
	if (e->flags & UB_EV_USER)
		ev.cookie = e->cookie;
	if ((e->flags & UB_EV_USER) && (e->flags & UB_EV_NEW_ENTRY)) {
		en = entry_of(r, e->tid, 1);
		close_entry(r, en); /* the task's previous entry */
		if (en) {
			*en = (struct entry){
				.cookie = e->cookie, .time = e->time, .pid = e->pid, .tid = e->tid,
				.cpu = e->cpu, .stop = e->stop, .stack_id = USTACK_TRACE_NO_STACK,
				.open = 1,
			};
			if ((e->flags & UB_EV_COPY) &&
			    ustack_u64map__delete(b->copy_of, e->cookie, &v)) {
				/* frames counted when the copy was unwound */
				en->stack_id = (uint32_t)v;
				en->stop = (uint32_t)(v >> 32);
			} else if (e->ustack && ustack_u64map__get(b->stack_of, e->ustack, &v)) {
				en->stack_id = (uint32_t)v;
				count_frames(r, en->stack_id, e->pid);
			}
		}
		r->st.unwinds++;
		rec_py__event(r, b->py, b->bpf, e->pid, e->time);
	} else if (e->flags & UB_EV_USER) {
		r->st.shared++;
	} else {
		r->st.no_user_stack++;
	}
	count_event(r, e);
	if (e->flags & UB_EV_ARGS) {
		const struct ub_pevent *pe = (const struct ub_pevent *)e;

		ev.nr_args = pe->nr_args; /* checked: 1..UB_MAX_ARGS */
		memcpy(ev.args, pe->args, pe->nr_args * sizeof(ev.args[0]));
		ev.flags |= USTACK_TRACE_EVENT_HAS_ARGS;
	}
	rec_event_weigh(&r->events[e->event], e->value, &ev);
	rec_write_event(r, &ev);
	/* a user-mode sample is its own context: nothing can join it */
	if ((e->flags & UB_EV_USER_MODE) && (e->flags & UB_EV_NEW_ENTRY))
		close_entry(r, entry_of(r, e->tid, 0));
}

static int on_ring_record(void *ctx, const void *data, size_t size)
{
	struct rec *r = ctx;
	struct ustack_bpf_rec rec;
	const char *why = "";

	if (ustack_bpf_record__check(data, size, (uint32_t)r->nr_events, &rec, &why)) {
		if (!B(r)->bad_ring++)
			pr_debug("BPF ring buffer: %s (skipped, counted as malformed)\n", why);
		return 0;
	}
	if (rec.event && !weight_matches(r, rec.event)) {
		if (!B(r)->bad_ring++)
			pr_debug("BPF ring buffer: event record whose value flag does not match "
				 "its event's kind (skipped, counted as malformed)\n");
	} else if (rec.event)
		on_event(r, rec.event);
	else if (rec.stack)
		on_stack(r, rec.stack);
	else if (rec.kstack)
		on_kstack(r, rec.kstack);
	else
		on_copy(r, rec.copy);
	return r->werr ? 1 : 0;
}

/* Events the ring buffer had no room for: LOST records. */
static void lost_check(struct rec *r)
{
	uint64_t lost = ustack_bpf__counter(B(r)->bpf, UB_C_LOST);

	if (lost > B(r)->lost_seen) {
		struct ustack_trace_lost l = { .what = USTACK_TRACE_LOST_KERNEL,
					       .count = lost - B(r)->lost_seen };

		/* noticed now; the events were lost since the last check */
		l.time = ustack_mono_ns();
		rec_write_lost(r, &l);
		B(r)->lost_seen = lost;
	}
}

static int bpf_watch(struct rec *r, int (*add)(void *ctx, int fd), void *ctx)
{
	int fd = ustack_bpf__poll_fd(B(r)->bpf);

	return fd < 0 ? fd : add(ctx, fd);
}

/* Read the ring buffer (waiting up to @timeout_ms): records or -errno. */
static int bpf_poll(struct rec *r, int timeout_ms)
{
	int ret;

	load_pending(r, LOAD_BUDGET_NS);
	ret = ustack_bpf__poll(B(r)->bpf, timeout_ms, on_ring_record, r);

	lost_check(r);
	rec_bpf_alloc_purge(B(r)->alloc, B(r)->bpf);
	return ret;
}

/* The looks for CPython that are due, and the timer set for the next */
static void py_retry(struct rec *r)
{
	struct rec_bpf *b = B(r);
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	uint64_t next, now, n;

	if (!b->py)
		return;
	if (read(b->py_tfd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	next = rec_py__retry(r, b->py, b->bpf);
	if (next) {
		now = ustack_mono_ns();
		next = next > now + 1000000 ? next : now + 1000000;
		its.it_value.tv_sec = (time_t)(next / 1000000000ull);
		its.it_value.tv_nsec = (long)(next % 1000000000ull);
	}
	timerfd_settime(b->py_tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* the ring buffer up to now first, then the side-band up to the same
 * moment: a process's exit or exec is applied after its last event */
static int bpf_read(struct rec *r, char *err, size_t errlen)
{
	uint64_t now = ustack_mono_ns();
	int ret;

	py_retry(r);
	ret = bpf_poll(r, 0);

	if (ret < 0) {
		snprintf(err, errlen, "reading the BPF ring buffer: %s (the trace is readable up "
			 "to the last complete chunk)", strerror(-ret));
		return ret;
	}
	ret = ustack_perf_session__poll_until(r->ps, 0, now, rec_on_record, r);
	if (ret < 0)
		snprintf(err, errlen, "reading the perf ring buffers: %s (the trace is "
			 "readable up to the last complete chunk)", strerror(-ret));
	return ret;
}

/* The program's counters; the kernel's bytes: the ring buffer's, the
 * kernel stacks' and the side-band's (in @st already) */
static void bpf_stats(const struct rec *r, struct ustack_record_stats *st)
{
	const struct rec_bpf *b = r->be_state;
	struct ustack_bpf_stats bs;

	if (!b || !b->bpf)
		return;
	ustack_bpf__stats(b->bpf, &bs);
	st->kernel_bytes += bs.ring_bytes + bs.kstack_bytes;
	st->bad_records += b->bad_ring;
	st->not_loaded = bs.c[UB_C_NOT_LOADED];
	st->read_faults = bs.c[UB_C_READ_FAULT];
	st->walks_at_once = bs.c[UB_C_IRQ_WALKS];
	st->walks_deferred = bs.c[UB_C_DEFERRED];
	st->walks_late = bs.c[UB_C_STALE];
	st->walks_hot = bs.c[UB_C_HOT];
	st->kernel_stacks_lost = bs.c[UB_C_KSTACK_FAIL] + b->kwhole_lost;
	st->kernel_stacks_whole = bs.c[UB_C_KSTACK_INLINE];
	st->targets_full = bs.c[UB_C_TARGETS_FULL];
	st->maps_busy = bs.c[UB_C_MAPS_BUSY];
	st->copies_skipped = bs.c[UB_C_COPY_SKIPPED];
	st->python_copies = bs.c[UB_C_PY_COPIES];
	st->bpf_skipped = bs.skipped;
	st->tables_loaded = bs.tables_loaded;
	st->table_bytes = bs.table_bytes;
	st->tables_evicted = bs.tables_evicted;
	st->table_seconds = bs.load_ns / 1e9;
	st->probe_attached = b->probe_attached;
	st->probe_hits = bs.c[UB_C_PROBE_HITS];
	st->probe_rate_dropped = bs.c[UB_C_PROBE_RATE_DROPPED];
	st->probe_run_ns = bs.probe_run_ns;
	st->probe_runs = bs.probe_runs;
	rec_bpf_alloc_stats(&bs, st);
	st->offcpu_short = bs.c[UB_C_OFFCPU_SHORT];
	st->offcpu_short_ns = bs.c[UB_C_OFFCPU_SHORT_NS];
	/* read one after the other while the program runs: never below 0 */
	st->offcpu_unpaired = bs.c[UB_C_OFFCPU_OUT] > bs.c[UB_C_OFFCPU_IN]
				      ? bs.c[UB_C_OFFCPU_OUT] - bs.c[UB_C_OFFCPU_IN] : 0;
}

/* Everything in the ring buffer now. Off-CPU intervals first stop: the
 * switch-ins after the drain would be paired in the kernel and never
 * read, and the counters would no longer add up. */
static void bpf_drain(struct rec *r)
{
	if (B(r)->bpf) {
		ustack_bpf__detach_sched(B(r)->bpf);
		/* the same for probes: a hit after the drain was counted in
		 * probe_hits and never written (kept < hits - dropped) */
		ustack_bpf__detach_probes(B(r)->bpf);
	}
	while (!r->werr && bpf_poll(r, 0) > 0)
		;
}

/* End: the last user stacks. */
static void bpf_finish(struct rec *r)
{
	struct rec_bpf *b = B(r);
	uint64_t full;

	bpf_drain(r);
	for (size_t i = 0; i < b->nr_entries; i++)
		close_entry(r, &b->entries[i]);
	rec_py__end(r, b->py);
	full = b->bpf ? ustack_bpf__counter(b->bpf, UB_C_TARGETS_FULL) : 0;
	if (full)
		pr_warn("%llu processes started by the recorded ones were not recorded: the "
			"bpf backend's table of recorded processes was full (%u live at once; "
			"stat targets_full)\n", (unsigned long long)full,
			ustack_bpf__targets_max(b->bpf));
}

const struct rec_backend_ops rec_backend_bpf = {
	.name = "bpf",
	.id = USTACK_RECORD_BPF,
	.open = bpf_open,
	.perf_opts = bpf_perf_opts,
	.start = bpf_start,
	.watch = bpf_watch,
	.read = bpf_read,
	.mapped = bpf_mapped,
	.remap = bpf_remap,
	.exit = bpf_exit,
	.drain = bpf_drain,
	.finish = bpf_finish,
	.stats = bpf_stats,
	.close = bpf_close,
};
