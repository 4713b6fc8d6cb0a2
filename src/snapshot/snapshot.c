// SPDX-License-Identifier: MIT
/*
 * ustack_snapshot(): stacks of every thread of a live process.
 *
 * One thread at a time. A thread blocked in the kernel (a futex, a read,
 * a sleep: most threads of most processes) is not stopped at all: the sp
 * and pc it entered the kernel with come from /proc/PID/task/TID/syscall,
 * its stack is read while it stays blocked, and its schedstat, read before
 * and after, proves it did not run in between (unwind_blocked()). Any
 * other thread, or one whose read cannot be trusted, is stopped:
 * PTRACE_SEIZE + PTRACE_INTERRUPT, wait for the stop, read registers,
 * unwind (memory read lazily with process_vm_readv, one page per miss),
 * PTRACE_DETACH. Names are looked up after the thread runs again: only the
 * unwind itself happens while it is stopped.
 *
 * Never leaving the target stopped: the signals that would end ustack
 * (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP) are blocked for the
 * short stop window, so they act only after the detach; on SIGKILL the
 * kernel detaches (a PTRACE_INTERRUPT stop is not a group stop, so the
 * thread runs on). A signal that arrived for the target while we held it
 * is handed back to it on detach.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ustack/procmaps.h>
#include <ustack/snapshot.h>
#include <ustack/symbolize.h>
#include "snapshot/lines.h"
#include "snapshot/proc.h"
#include "snapshot/snapshot_python.h"
#include "common/clock.h"
#include "common/grow.h"
#include "common/log.h"
#include "common/opts.h"
#include "elf/elf_file.h"
#include "symbolize/symbolize_internal.h"
#include "unwind/remote.h"

#define PAGE 4096u
#define READER_PAGES 8

/* ---- process_vm_readv reader with a few pages cached ------------------- */

struct vm_reader {
	int pid;
	uint64_t reads;
	unsigned int next;
	struct {
		uint64_t addr; /* page address; 0: empty */
		uint8_t data[PAGE];
	} pages[READER_PAGES];
};

static int vm_read_direct(struct vm_reader *r, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };

	r->reads++;
	return process_vm_readv(r->pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static int vm_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct vm_reader *r = ctx;
	uint8_t *out = buf;

	if (len > PAGE)
		return vm_read_direct(r, addr, buf, len);
	while (len) {
		uint64_t page = addr & ~(uint64_t)(PAGE - 1), in = addr - page;
		size_t n = len < PAGE - in ? len : PAGE - in;
		int slot = -1;

		if (!page)
			return -EFAULT;
		for (int i = 0; i < READER_PAGES; i++)
			if (r->pages[i].addr == page)
				slot = i;
		if (slot < 0) {
			slot = r->next++ % READER_PAGES;
			r->pages[slot].addr = 0;
			if (vm_read_direct(r, page, r->pages[slot].data, PAGE))
				return -EFAULT;
			r->pages[slot].addr = page;
		}
		memcpy(out, r->pages[slot].data + in, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

static void vm_reader_flush(struct vm_reader *r)
{
	for (int i = 0; i < READER_PAGES; i++)
		r->pages[i].addr = 0;
}

/* ---- the snapshot ------------------------------------------------------- */

/* Threads unwound before their frames are named (a group ends at this many
 * threads, or once its frames reach SNAP_GROUP_FRAMES): a group's names are
 * looked up together. */
#define SNAP_GROUP_THREADS 256
#define SNAP_GROUP_FRAMES 8192
/* After this many blocked threads in a row needed a stop after all, the
 * rest are stopped without reading /proc first (about 9 us a thread) */
#define SNAP_DROPS_BEFORE_STOPPING 8

/* A thread unwound and waiting for names: its frames are gframes[first..] */
struct snap_pending {
	struct ustack_snapshot_thread t;
	int n;          /* frames, or -errno */
	size_t first;
	/* its Python frames, read with its native stack */
	struct snap_py_thread py;
};

struct snap {
	int pid;
	int task_dir; /* /proc/PID/task, -1 when not open */
	int *tids;    /* the threads, in /proc order */
	unsigned int nr_tids;
	struct ustack_procmaps *pm;
	struct ustack_modcache *mc;
	struct ustack_remote remote;
	struct vm_reader reader;
	struct ustack_frame *frames;
	struct ustack_snapshot_frame *named;
	int max_depth;
	unsigned int hold_ms;
	int hold_signals;
	/* USTACK_SNAPSHOT_STOP_ALL (or hold_ms): no thread read unstopped */
	int stop_all;
	/* a thread's registers were read from /proc: permission to read the
	 * process, so a thread that cannot be stopped (EPERM: traced by a
	 * debugger) fails alone, not the snapshot */
	int proc_regs_ok;
	/* blocked threads in a row whose read without a stop was dropped */
	unsigned int dropped_in_row;
	/* every file's tables opened (before the first stop: a thread read
	 * without one opens the tables its frames reach as it goes) */
	int preloaded;
	/* names: the symbolizer (debug files by build ID), one file id per
	 * module tables seen */
	struct ustack_symbolizer *sym;
	struct ustack_modtab **sym_mods; /* references: a pointer is never reused */
	unsigned int nr_sym_mods, cap_sym_mods;
	/* the tables the named frames of the current thread point into
	 * (symbol names), held until its callback returns */
	struct ustack_modtab **pins;
	unsigned int nr_pins;
	/* USTACK_SNAPSHOT_NO_NAMES: addresses only */
	int no_names;
	/* USTACK_SNAPSHOT_LINES: the inline chains of the current thread */
	int want_lines;
	struct ustack_snapshot_line *lines;
	uint32_t *decls; /* the thread's line_decls[]: parallel to lines[] */
	int nr_lines;
	size_t cap_lines, cap_decls;
	/* the group of threads being unwound (s->pend) and their frames, one
	 * thread after another (gframes[pend[i].first..]) */
	struct snap_pending *pend;
	struct ustack_frame *gframes;
	size_t gcap;
	/* CPython, when the process runs one (and USTACK_SNAPSHOT_NO_PYTHON
	 * is not set) */
	struct snap_py py;
	int no_python;
};

/* /proc/PID/task/TID/NAME, opened relative to /proc/PID/task (@task_dir,
 * or by its whole path when that is not open): fewer path steps per thread */
static int open_task_file(int task_dir, int pid, int tid, const char *name)
{
	char path[64];

	if (task_dir >= 0) {
		snprintf(path, sizeof(path), "%d/%s", tid, name);
		return openat(task_dir, path, O_RDONLY | O_CLOEXEC);
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", pid, tid, name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* The thread's name: the file holds it as it is (any bytes but NUL, a
 * newline too: prctl(PR_SET_NAME) takes anything) and one '\n' after it,
 * the only one dropped here. */
static void read_comm(int task_dir, int pid, int tid, char comm[16])
{
	char buf[17];
	ssize_t n;
	int fd;

	comm[0] = 0;
	fd = open_task_file(task_dir, pid, tid, "comm");
	if (fd < 0)
		return;
	n = read(fd, buf, 16);
	close(fd);
	if (n <= 0)
		return;
	if (buf[n - 1] == '\n')
		n--;
	if (n > 15)
		n = 15;
	memcpy(comm, buf, (size_t)n);
	comm[n] = 0;
}

/* State letter of a thread ('R', 'S', 'Z', ...), 0 when it is gone. */
static char thread_state(int task_dir, int pid, int tid)
{
	char buf[512], *p;
	ssize_t n;
	int fd;

	fd = open_task_file(task_dir, pid, tid, "stat");
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "tid (comm) S ...": comm may hold spaces and parentheses */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Thread ids of @pid, in /proc order. */
static int list_tids(int pid, int **out, unsigned int *nr)
{
	char path[64];
	struct dirent *de;
	unsigned int cap = 64, n = 0;
	int *tids = malloc(cap * sizeof(*tids));
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d || !tids) {
		int err = d ? ENOMEM : errno;

		free(tids);
		if (d)
			closedir(d);
		return -(err == ENOENT ? ESRCH : err);
	}
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name);

		if (tid <= 0)
			continue;
		if (n == cap) {
			int *grown = realloc(tids, (cap *= 2) * sizeof(*tids));

			if (!grown) {
				free(tids);
				closedir(d);
				return -ENOMEM;
			}
			tids = grown;
		}
		tids[n++] = tid;
	}
	closedir(d);
	*out = tids;
	*nr = n;
	return 0;
}

/* The unwinder reads the process through the snapshot's remote reader. */
static struct ustack_unwind_ops remote_ops(struct snap *s)
{
	return (struct ustack_unwind_ops){
		.find_row = ustack_remote__find_row,
		.read = ustack_remote__read,
		.is_code = ustack_remote__is_code,
		.ctx = &s->remote,
	};
}

/* The Python frames of @tid, if it runs Python, into @py: called while
 * the thread is stopped or known not to run, after its native unwind */
static void read_python(struct snap *s, int tid, int n, struct snap_py_thread *py)
{
	if (s->py.proc)
		snap_py_read(&s->py, tid, s->frames, n < 0 ? 0 : n, vm_read, &s->reader, py);
}

/*
 * Stop @tid, unwind it (and read its Python frames into @py), resume it.
 * Returns the number of frames, or a negative errno when the thread could
 * not be stopped.
 */
static int unwind_thread(struct snap *s, int tid, unsigned int *stop, uint64_t *stopped_ns,
			 struct snap_py_thread *py)
{
	struct ustack_unwind_ops ops = remote_ops(s);
	struct ustack_walk_opts uopts = { .sz = sizeof(uopts), .max_depth = s->max_depth,
					  .ra_in_code = 1 };
	struct user_regs_struct regs;
	struct ustack_regs uregs;
	sigset_t hold, old;
	int status, sig = 0, n = 0, ret;
	uint64_t t0;

	/* asked for (USTACK_SNAPSHOT_HOLD_SIGNALS): not interrupted between
	 * SEIZE and DETACH by these */
	if (s->hold_signals) {
		sigemptyset(&hold);
		sigaddset(&hold, SIGINT);
		sigaddset(&hold, SIGTERM);
		sigaddset(&hold, SIGHUP);
		sigaddset(&hold, SIGQUIT);
		sigaddset(&hold, SIGPIPE);
		sigaddset(&hold, SIGTSTP);
		pthread_sigmask(SIG_BLOCK, &hold, &old);
	}

	t0 = ustack_mono_ns();
	if (ptrace(PTRACE_SEIZE, tid, 0, 0)) {
		ret = -errno;
		goto out_unblock;
	}
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0)) {
		ret = -errno;
		goto out_detach;
	}
	for (;;) {
		if (waitpid(tid, &status, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto out_detach;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			ret = -ESRCH; /* gone: nothing to detach */
			goto out_unblock;
		}
		if (WIFSTOPPED(status))
			break;
	}
	/* A signal-delivery stop instead of our event stop: hand the signal
	 * back on detach. */
	if ((status >> 16) != PTRACE_EVENT_STOP)
		sig = WSTOPSIG(status);
	if (ptrace(PTRACE_GETREGS, tid, 0, &regs)) {
		ret = -errno;
		goto out_detach;
	}
	uregs.pc = regs.rip;
	uregs.sp = regs.rsp;
	uregs.fp = regs.rbp;
	uopts.bx = regs.rbx; /* for the rare rbx-based CFA (CFI) */
	uopts.has_bx = 1;
	n = ustack_unwind(&ops, &uregs, &uopts, s->frames, s->max_depth, stop);
	read_python(s, tid, n, py);
	if (s->hold_ms) {
		struct timespec ts = { s->hold_ms / 1000, (s->hold_ms % 1000) * 1000000l };

		nanosleep(&ts, NULL);
	}
	ret = n;
out_detach:
	ptrace(PTRACE_DETACH, tid, 0, (void *)(uintptr_t)sig);
out_unblock:
	*stopped_ns = ustack_mono_ns() - t0;
	if (s->hold_signals)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* it runs again: cached stack pages are stale */
	vm_reader_flush(&s->reader);
	/* frames past the end of the thread's stack are another stack's
	 * (see ustack_unwind_clip_to_stack()); its mapping is asked for
	 * now, not while the thread was stopped */
	if (ret > 0)
		ret = ustack_unwind_clip_to_stack(s->frames, ret, ustack_remote__stack_range,
						  &s->remote, stop);
	return ret;
}

/* ---- threads blocked in the kernel: unwound without a stop ------------ */

/* /proc/PID/task/TID/schedstat ("run time, run delay, run count"), read
 * whole through @fd into @buf (NUL-terminated): its length, or -1. */
static int read_schedstat(int fd, char *buf, size_t size)
{
	ssize_t n = pread(fd, buf, size - 1, 0);

	if (n <= 0 || (size_t)n >= size - 1)
		return -1;
	buf[n] = 0;
	return (int)n;
}

/* "0x" and at least one hex digit at @p: the value, the end in *@end */
static int proc_hex(const char *p, uint64_t *v, const char **end)
{
	uint64_t x = 0;
	int digits = 0;

	if (p[0] != '0' || p[1] != 'x')
		return -1;
	for (p += 2;; p++, digits++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;

		if (d < 0)
			break;
		if (digits == 16)
			return -1; /* more than 64 bits */
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	*end = p;
	return digits ? 0 : -1;
}

int ustack_parse_proc_syscall(const char *text, uint64_t *sp, uint64_t *pc)
{
	uint64_t v[8];
	const char *p = text;
	int n = 0;

	/* the system call number, or -1 */
	if (*p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9' && p - text < 12)
		p++;
	while (*p == ' ' && n < 8) {
		if (proc_hex(p + 1, &v[n++], &p))
			return -1;
	}
	if (*p == '\n')
		p++;
	if (*p || (n != 2 && n != 8))
		return -1;
	*sp = v[n - 2];
	*pc = v[n - 1];
	return *sp && *pc ? 0 : -1;
}

void (*ustack_snapshot_blocked_hook)(int tid);

/*
 * Unwind @tid without stopping it, if it is blocked in the kernel: its
 * schedstat is read, then its sp and pc (/proc/.../syscall), then its stack
 * is walked, then its schedstat again. The kernel reads syscall only while
 * the thread is off every CPU, and schedstat's run count grows each time the
 * thread is put on one (its run time with each run): equal before and after,
 * the thread did not run between the registers and the last stack read, so
 * they are the same as a stop would have given. Frames whose CFA needs rbp
 * (or rbx), which /proc does not give, end the walk; such a walk, or any
 * walk that ends other than at the outermost frame or the depth limit, is
 * dropped too, and the thread is stopped instead, so that a thread is never
 * worse off than when every thread was stopped.
 * Its Python frames are read into @py in the same window.
 * Returns the number of frames, or -EAGAIN (not blocked: stop it) or
 * -ESTALE (blocked, but the walk was dropped: stop it).
 */
static int unwind_blocked(struct snap *s, int tid, unsigned int *stop, struct snap_py_thread *py)
{
	struct ustack_unwind_ops ops = remote_ops(s);
	struct ustack_walk_opts uopts = { .sz = sizeof(uopts), .max_depth = s->max_depth,
					  .fp_unknown = 1, .ra_in_code = 1 };
	struct ustack_regs uregs = { 0 };
	char before[128], after[128], text[256], path[32];
	int fd, sfd, n, len;
	unsigned int why;

	if (s->stop_all || s->task_dir < 0)
		return -EAGAIN;
	snprintf(path, sizeof(path), "%d/schedstat", tid);
	sfd = openat(s->task_dir, path, O_RDONLY | O_CLOEXEC);
	if (sfd < 0)
		return -EAGAIN;
	n = -EAGAIN;
	len = read_schedstat(sfd, before, sizeof(before));
	/* "0 0 0": the kernel keeps no counts (no CONFIG_SCHED_INFO) */
	if (len < 0 || before[0] == '0')
		goto out;
	snprintf(path, sizeof(path), "%d/syscall", tid);
	fd = openat(s->task_dir, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto out;
	len = (int)read(fd, text, sizeof(text) - 1);
	close(fd);
	if (len <= 0)
		goto out;
	text[len] = 0;
	s->proc_regs_ok = 1;
	if (ustack_parse_proc_syscall(text, &uregs.sp, &uregs.pc))
		goto out; /* "running", or no user registers */
	if (ustack_snapshot_blocked_hook)
		ustack_snapshot_blocked_hook(tid);
	n = ustack_unwind(&ops, &uregs, &uopts, s->frames, s->max_depth, &why);
	/* before schedstat is read again: the chain is then proven of the
	 * same moment as the stack */
	read_python(s, tid, n, py);
	if ((why != USTACK_STOP_OUTERMOST && why != USTACK_STOP_DEPTH) ||
	    read_schedstat(sfd, after, sizeof(after)) < 0 || strcmp(before, after))
		n = -ESTALE;
	else if (n > 0 && ustack_unwind_clip_to_stack(s->frames, n, ustack_remote__stack_range,
						      &s->remote, &why) < n)
		n = -ESTALE; /* ends early after all: as any such read, done with a stop */
	else
		*stop = why;
out:
	close(sfd);
	/* the thread may run from here on: cached stack pages are stale */
	vm_reader_flush(&s->reader);
	return n;
}

/* File id of @m for the symbolizer, registering the file on first sight
 * (0: none). The path is the one the tables were opened through
 * (/proc/PID/map_files/..., which works for deleted files and containers). */
static uint64_t sym_file_id(struct snap *s, struct ustack_modtab *m)
{
	struct ustack_file_map fm = { 0 };
	struct ustack_elf *elf;
	int n;

	for (unsigned int i = 0; i < s->nr_sym_mods; i++)
		if (s->sym_mods[i] == m)
			return i + 1;
	if (s->nr_sym_mods == s->cap_sym_mods) {
		unsigned int cap = s->cap_sym_mods ? 2 * s->cap_sym_mods : 16;
		struct ustack_modtab **g = realloc(s->sym_mods, cap * sizeof(*g));

		if (!g)
			return 0;
		s->sym_mods = g;
		s->cap_sym_mods = cap;
	}
	elf = ustack_modtab__elf(m);
	fm.file_id = s->nr_sym_mods + 1;
	fm.kind = USTACK_VMA_FILE;
	fm.path = ustack_elf__path(elf);
	n = ustack_elf__build_id(elf, fm.build_id, sizeof(fm.build_id));
	if (n > 0) {
		fm.build_id_size = n < USTACK_BUILD_ID_MAX ? n : USTACK_BUILD_ID_MAX;
		fm.build_id_source = USTACK_BUILD_ID_ELF;
	}
	/* the symbolizer reads the tables' own mapping of the file instead
	 * of opening it again (the reference is held until after it is freed) */
	if (ustack_symbolizer__add_file_elf(s->sym, &fm, elf))
		return 0;
	s->sym_mods[s->nr_sym_mods++] = ustack_modtab__get(m);
	return fm.file_id;
}

static void unpin_frames(struct snap *s)
{
	while (s->nr_pins)
		ustack_modtab__put(s->pins[--s->nr_pins]);
}

static int grow_lines(struct snap *s, int more)
{
	return ustack_snapshot_lines_grow(&s->lines, &s->decls, &s->cap_lines, &s->cap_decls,
					  (size_t)s->nr_lines + more);
}

/* The inline chain of frame @i (file offset @off in file @fid). */
static void add_lines(struct snap *s, int i, uint64_t fid, uint64_t off, int exact)
{
	struct ustack_sym chain[64];
	int n = ustack_symbolizer__symbolize_frames(s->sym, fid, off, exact ? USTACK_SYM_EXACT_PC : 0,
						    chain, 64, sizeof(chain[0]));

	if (n <= 0)
		return;
	if (n > 64)
		n = 64;
	if (grow_lines(s, n))
		return;
	for (int k = 0; k < n; k++) {
		s->decls[s->nr_lines] = chain[k].decl_line;
		s->lines[s->nr_lines++] = (struct ustack_snapshot_line){
			.frame = i, .inlined = chain[k].inlined,
			.function = chain[k].status == USTACK_SYM_OK ? chain[k].name : NULL,
			.file = chain[k].file, .line = chain[k].line, .column = chain[k].column };
	}
}

/* Where frame @f's lookup address (pc - 1 for a return address) lies: a
 * reference to its module in *@m (NULL: none; the caller keeps or puts
 * it), its mapping, the file offset looked up, and the symbolizer's file id
 * (0: none, or no names wanted). Returns -1 when no mapping holds it. */
static int frame_where(struct snap *s, const struct ustack_frame *f, struct ustack_modtab **m,
		       const struct ustack_vma **vma, uint64_t *off, uint64_t *fid)
{
	uint64_t lookup = f->pc - (f->flags & USTACK_FRAME_EXACT_PC ? 0 : 1);

	*fid = 0;
	*m = ustack_remote__module(&s->remote, lookup);
	if (ustack_remote__describe(&s->remote, lookup, vma, NULL, NULL, off))
		return -1;
	if (*m && s->sym && (*vma)->kind == USTACK_VMA_FILE)
		*fid = sym_file_id(s, *m);
	return 0;
}

/* Before a group of threads is named: each file is told which offsets its
 * frames will look up, and answers them all in one pass over its symbols
 * (ustack_symbolizer__expect()) instead of a scan, or an index, each. */
static int cmp_fid_off(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

static void expect_names(struct snap *s, const struct ustack_frame *fr, size_t n)
{
	uint64_t (*want)[2], *looks;
	size_t m = 0;

	if (!s->sym || n < 2)
		return;
	want = malloc(n * sizeof(*want));
	looks = malloc(n * sizeof(*looks));
	if (!want || !looks)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct ustack_vma *vma;
		struct ustack_modtab *mod;
		uint64_t fo, fid;

		if (frame_where(s, &fr[i], &mod, &vma, &fo, &fid))
			fid = 0;
		ustack_modtab__put(mod);
		if (fid) {
			want[m][0] = fid;
			want[m++][1] = fo; /* the offset the lookup asks for */
		}
	}
	qsort(want, m, sizeof(*want), cmp_fid_off);
	for (size_t i = 0, j; i < m; i = j) {
		size_t k = 0;

		for (j = i; j < m && want[j][0] == want[i][0]; j++)
			if (j == i || want[j][1] != want[j - 1][1])
				looks[k++] = want[j][1];
		ustack_symbolizer__expect(s->sym, want[i][0], looks, k);
	}
out:
	free(want);
	free(looks);
}

static void name_frames(struct snap *s, const struct ustack_frame *frames, int n)
{
	s->nr_lines = 0;
	for (int i = 0; i < n; i++) {
		const struct ustack_frame *f = &frames[i];
		struct ustack_snapshot_frame *o = &s->named[i];
		const struct ustack_vma *vma;
		int exact = !!(f->flags & USTACK_FRAME_EXACT_PC);
		uint64_t lookup = f->pc - (exact ? 0 : 1), fid;
		struct ustack_modtab *m;
		struct ustack_sym sym;
		int err;

		*o = (struct ustack_snapshot_frame){ .pc = f->pc, .method = f->method,
						     .flags = f->flags };
		/* the module held: the names describe() gives point into it */
		err = frame_where(s, f, &m, &vma, &o->file_offset, &fid);
		if (m)
			s->pins[s->nr_pins++] = m;
		if (err)
			continue;
		o->path = vma->name;
		if (s->no_names)
			continue;
		/* the symbolizer first: a separate debug file (by build ID)
		 * names what .dynsym does not (start_thread, clone3, static
		 * functions), and its answers are cached per frame */
		sym.status = USTACK_SYM_NO_FILE;
		if (fid && !ustack_symbolizer__symbolize(s->sym, fid, f->pc - vma->start + vma->pgoff,
							exact ? USTACK_SYM_EXACT_PC : 0, &sym) &&
		    sym.status == USTACK_SYM_OK) {
			o->symbol = sym.name;
			o->symbol_off = sym.sym_offset;
		} else if (sym.status == USTACK_SYM_NO_SYMBOL) {
			/* the symbolizer read this file's symbols (and its
			 * debug file's) and none covers the pc: asking the
			 * mapped file again, uncached, would scan the same
			 * tables for each such frame of each thread */
		} else if (!ustack_remote__describe(&s->remote, lookup, &vma, &o->symbol,
						    &o->symbol_off, &o->file_offset) && o->symbol) {
			/* the mapped file's own symbols (the vDSO, no symbolizer) */
			o->symbol_off += f->pc - lookup;
		}
		if (s->want_lines && fid)
			add_lines(s, i, fid, f->pc - vma->start + vma->pgoff, exact);
	}
	if (s->want_lines) {
		/* frames without a chain get one entry with their name */
		int k = 0;

		for (int i = 0; i < n; i++) {
			while (k < s->nr_lines && s->lines[k].frame < i)
				k++;
			if (k < s->nr_lines && s->lines[k].frame == i)
				continue;
			if (grow_lines(s, 1))
				return;
			memmove(&s->lines[k + 1], &s->lines[k], (size_t)(s->nr_lines - k) * sizeof(*s->lines));
			memmove(&s->decls[k + 1], &s->decls[k], (size_t)(s->nr_lines - k) * sizeof(*s->decls));
			s->decls[k] = 0;
			s->lines[k] = (struct ustack_snapshot_line){ .frame = i,
								    .function = s->named[i].symbol };
			s->nr_lines++;
		}
	}
}

/* The caller's options into @s (nothing here can fail). */
static void snap_set_opts(struct snap *s, int pid, const struct ustack_snapshot_opts *opts)
{
	int depth = OPTS_GET(opts, max_depth, 0);
	unsigned int flags = OPTS_GET(opts, flags, 0);

	s->pid = pid;
	s->task_dir = -1;
	s->max_depth = depth <= 0 ? 256 : depth < USTACK_MAX_DEPTH ? depth : USTACK_MAX_DEPTH;
	s->hold_ms = OPTS_GET(opts, hold_ms, 0);
	s->hold_signals = !!(flags & USTACK_SNAPSHOT_HOLD_SIGNALS);
	/* holding a thread stopped (tests) needs it stopped */
	s->stop_all = (flags & USTACK_SNAPSHOT_STOP_ALL) || s->hold_ms;
	s->want_lines = !!(flags & USTACK_SNAPSHOT_LINES);
	s->no_names = (flags & USTACK_SNAPSHOT_NO_NAMES) && !s->want_lines;
	s->no_python = !!(flags & USTACK_SNAPSHOT_NO_PYTHON);
}

/* The address space is read through a live thread: a leader that
 * called pthread_exit() is a zombie with an empty /proc/PID/maps. */
static void snap_pick_reader(struct snap *s)
{
	char path[64];

	s->reader.pid = s->pid;
	snprintf(path, sizeof(path), "/proc/%d/task", s->pid);
	s->task_dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (unsigned int i = 0; i < s->nr_tids; i++) {
		char state = thread_state(s->task_dir, s->pid, s->tids[i]);

		if (state && state != 'Z' && state != 'X') {
			s->reader.pid = s->tids[i];
			break;
		}
	}
}

/* What the snapshot needs before its first thread: the thread list, the
 * mappings, the tables' cache, the symbolizer, one thread's buffers.
 * 0 or -errno (the message in @opts, but for -ENOMEM). */
static int snap_open(struct snap *s, const struct ustack_snapshot_opts *opts)
{
	int ret = list_tids(s->pid, &s->tids, &s->nr_tids);

	if (ret) {
		OPTS_SET_ERR(opts, "pid %d: %s", s->pid,
			     ret == -ESRCH ? "no such process" : strerror(-ret));
		return ret;
	}
	snap_pick_reader(s);
	s->pm = ustack_procmaps__open(s->reader.pid, NULL);
	if (!s->pm) {
		ret = -(errno == ENOENT ? ESRCH : errno);
		OPTS_SET_ERR(opts, "pid %d: cannot read its mappings: %s", s->pid, strerror(-ret));
		return ret;
	}
	s->mc = ustack_modcache__new(OPTS_GET(opts, max_tables, 0), 0);
	if (!s->no_names) {
		/* names (and lines when asked): may be NULL */
		struct ustack_symbolizer_opts so = {
			.sz = sizeof(so), .flags = s->want_lines ? 0 : USTACK_SYMBOLIZER_NO_LINES,
			.debug_dir = OPTS_GET(opts, debug_dir, NULL),
		};

		s->sym = ustack_symbolizer__new(&so);
	}
	s->frames = calloc(s->max_depth, sizeof(*s->frames));
	s->named = calloc(s->max_depth, sizeof(*s->named));
	s->pins = calloc(s->max_depth, sizeof(*s->pins));
	if (!s->mc || !s->frames || !s->named || !s->pins)
		return -ENOMEM;
	ustack_remote__init(&s->remote, s->pm, s->mc, vm_read, &s->reader);
	return 0;
}

/* Room for a group's threads, and for its frames: grown as threads are
 * unwound, up to SNAP_GROUP_FRAMES plus one thread's worth. */
static int snap_alloc_group(struct snap *s)
{
	unsigned int nr = s->nr_tids;

	s->gcap = 1024;
	s->gframes = malloc(s->gcap * sizeof(*s->gframes));
	s->pend = calloc(nr < SNAP_GROUP_THREADS ? (nr ? nr : 1) : SNAP_GROUP_THREADS,
			 sizeof(*s->pend));
	return s->gframes && s->pend ? 0 : -ENOMEM;
}

/* Thread @p (its tid set) into s->frames: without a stop when it is
 * blocked in the kernel, else stopped (unwind_thread()). The number of
 * frames, or -errno; -ESRCH for a thread that has exited. */
static int snap_unwind_one(struct snap *s, struct snap_pending *p,
			   struct ustack_snapshot_stats *st)
{
	int tid = p->t.tid;
	int n = unwind_blocked(s, tid, &p->t.stop_reason, &p->py);

	if (n >= 0) {
		p->t.thread_flags = USTACK_SNAPSHOT_THREAD_NOT_STOPPED;
		st->not_stopped++;
		s->dropped_in_row = 0;
	} else {
		int dropped = n == -ESTALE;

		/* read in a window that did not hold: read again stopped */
		snap_py_thread_free(&p->py);
		st->restopped += dropped;
		if (!s->preloaded) {
			/* open every file's tables before any
			 * thread is stopped */
			ustack_remote__preload(&s->remote);
			s->preloaded = 1;
		}
		n = unwind_thread(s, tid, &p->t.stop_reason, &p->t.stopped_ns, &p->py);
		/* many such in a row, and stopping works (not a
		 * process another tracer holds): most likely code
		 * whose frames all need rbp (built with frame
		 * pointers); stop the rest without reading /proc
		 * for each first */
		if (dropped && n >= 0 &&
		    ++s->dropped_in_row >= SNAP_DROPS_BEFORE_STOPPING)
			s->stop_all = 1;
	}
	if (n < 0)
		snap_py_thread_free(&p->py);
	if (n == -EPERM || n == -ESRCH) {
		/* a zombie thread (exited, not yet reaped) has no stack,
		 * and ptrace refuses it with EPERM: it has exited */
		char state = thread_state(s->task_dir, s->pid, tid);

		if (!state || state == 'Z' || state == 'X')
			n = -ESRCH;
	}
	return n;
}

/* Thread @p's outcome (@n frames in s->frames, or -errno) into the group:
 * its frames appended to s->gframes from *@nf on, the counts in @st. */
static void group_add(struct snap *s, struct snap_pending *p, int n, size_t *nf,
		      struct ustack_snapshot_stats *st)
{
	p->n = n;
	if (n < 0) {
		p->t.error = n;
		if (n == -ESRCH)
			st->vanished++;
		return;
	}
	if (*nf + (size_t)n > s->gcap) {
		size_t cap = s->gcap;
		struct ustack_frame *g;

		while (cap < *nf + (size_t)n)
			cap *= 2;
		g = realloc(s->gframes, cap * sizeof(*g));
		if (!g) {
			/* not named, not lost: reported with -ENOMEM */
			p->n = p->t.error = -ENOMEM;
			if (p->t.thread_flags & USTACK_SNAPSHOT_THREAD_NOT_STOPPED)
				st->not_stopped--;
			return;
		}
		s->gframes = g;
		s->gcap = cap;
	}
	st->unwound++;
	if (p->t.stopped_ns > st->max_stopped_ns)
		st->max_stopped_ns = p->t.stopped_ns;
	st->total_stopped_ns += p->t.stopped_ns;
	memcpy(s->gframes + *nf, s->frames, (size_t)n * sizeof(*s->gframes));
	p->first = *nf;
	*nf += (size_t)n;
}

/* Unwinds the threads from s->tids[*@i] on into a group (s->pend[0..*@ng),
 * their frames *@nf in s->gframes) until it is full or all are done.
 * 0, or -EPERM (the message in @opts) when the first thread cannot be
 * traced and /proc gave none of its registers: the snapshot ends. */
static int snap_unwind_group(struct snap *s, const struct ustack_snapshot_opts *opts,
			     unsigned int *i, unsigned int *ng, size_t *nf,
			     struct ustack_snapshot_stats *st)
{
	*ng = 0;
	*nf = 0;
	for (; *i < s->nr_tids && *ng < SNAP_GROUP_THREADS && *nf < SNAP_GROUP_FRAMES; (*i)++) {
		struct snap_pending *p = &s->pend[(*ng)++];
		int tid = s->tids[*i], n;

		p->t = (struct ustack_snapshot_thread){ .tid = tid };
		read_comm(s->task_dir, s->pid, tid, p->t.comm);
		n = snap_unwind_one(s, p, st);
		if (n == -EPERM && st->unwound == 0 && !s->proc_regs_ok) {
			OPTS_SET_ERR(opts, "pid %d: not allowed to trace it (ptrace permission, "
				     "see /proc/sys/kernel/yama/ptrace_scope)", s->pid);
			return -EPERM;
		}
		group_add(s, p, n, nf, st);
	}
	return 0;
}

/* The group's @ng threads named (their @nf frames announced to the
 * symbolizer first) and handed to @fn, every thread running again by
 * now. 1 when @fn asked to stop, else 0. */
static int snap_name_group(struct snap *s, unsigned int ng, size_t nf, ustack_snapshot_fn fn,
			   void *ctx, struct ustack_snapshot_stats *st)
{
	int stopped = 0;

	if (!s->no_names)
		expect_names(s, s->gframes, nf);
	for (unsigned int g = 0; g < ng; g++) {
		struct snap_pending *p = &s->pend[g];
		int ret;

		if (stopped) {
			/* the rest of the group is not reported: only freed */
			snap_py_thread_free(&p->py);
			continue;
		}
		if (p->n >= 0) {
			name_frames(s, s->gframes + p->first, p->n);
			p->t.nr_frames = p->n;
			p->t.frames = s->named;
			if (s->want_lines) {
				p->t.nr_lines = s->nr_lines;
				p->t.lines = s->lines;
				p->t.line_decls = s->decls;
			}
			snap_py_name(&s->py, &p->py, s->gframes + p->first, p->n, &p->t, st);
		}
		ret = fn ? fn(&p->t, ctx) : 0;
		unpin_frames(s);
		snap_py_thread_free(&p->py);
		stopped = ret != 0;
	}
	return stopped;
}

/* Threads are unwound in groups, then named and handed to @fn: the names
 * of a group's frames are looked up together, in one pass over each
 * file's symbols (expect_names()). A thread that is stopped is still
 * stopped only for its own unwind. */
static int snap_run(struct snap *s, const struct ustack_snapshot_opts *opts,
		    ustack_snapshot_fn fn, void *ctx, struct ustack_snapshot_stats *st)
{
	int ret = 0;

	for (unsigned int i = 0; i < s->nr_tids;) {
		unsigned int ng;
		size_t nf;

		ret = snap_unwind_group(s, opts, &i, &ng, &nf, st);
		if (ret)
			return ret;
		if (snap_name_group(s, ng, nf, fn, ctx, st))
			break;
	}
	if (st->unwound == 0 && st->vanished == s->nr_tids) {
		ret = -ESRCH;
		OPTS_SET_ERR(opts, "pid %d: no such process", s->pid);
	}
	st->pages_read = s->reader.reads;
	return ret;
}

/* The symbolizer goes first: it reads the tables' own mappings of the
 * files (sym_file_id()), whose references are put after it. */
static void snap_free(struct snap *s)
{
	ustack_symbolizer__free(s->sym);
	snap_py_close(&s->py);
	unpin_frames(s);
	for (unsigned int i = 0; i < s->nr_sym_mods; i++)
		ustack_modtab__put(s->sym_mods[i]);
	free(s->sym_mods);
	free(s->pins);
	ustack_remote__fini(&s->remote);
	ustack_modcache__free(s->mc);
	ustack_procmaps__close(s->pm);
	if (s->task_dir >= 0)
		close(s->task_dir);
	free(s->gframes);
	free(s->pend);
	free(s->frames);
	free(s->named);
	free(s->lines);
	free(s->decls);
	free(s->tids);
	free(s);
}

USTACK_API int ustack_snapshot(int pid, const struct ustack_snapshot_opts *opts,
			       ustack_snapshot_fn fn, void *ctx,
			       struct ustack_snapshot_stats *stats, size_t stats_sz)
{
	struct ustack_snapshot_stats st = { 0 };
	struct snap *s;
	int ret;

	if (!OPTS_VALID(opts, struct ustack_snapshot_opts))
		return -EINVAL;
	if (pid <= 0) {
		OPTS_SET_ERR(opts, "pid %d: not a process id", pid);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	snap_set_opts(s, pid, opts);
	ret = snap_open(s, opts);
	if (!ret) {
		st.threads = s->nr_tids;
		ret = snap_alloc_group(s);
	}
	if (!ret && !s->no_python) {
		ret = snap_py_open(&s->py, s->reader.pid, vm_read, &s->reader, &st);
		/* what it read is of before the first thread's stop */
		vm_reader_flush(&s->reader);
	}
	if (!ret)
		ret = snap_run(s, opts, fn, ctx, &st);
	/* only the bytes the caller's (maybe older, shorter) struct has */
	if (stats)
		ustack_copy_out(stats, stats_sz, &st, sizeof(st));
	snap_free(s);
	return ret;
}
