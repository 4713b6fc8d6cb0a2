// SPDX-License-Identifier: MIT
/*
 * ustack_record(): perf samples -> deferred engine -> unwind -> normalize
 * -> stackmaps -> trace writer.
 *
 * Each sample becomes an EVENT at once, carrying its kernel stack id and
 * the cookie the deferred engine gave it. The engine unwinds the user stack
 * once per kernel entry (from the sample that opened it) and, when the
 * entry closes, calls our consumer, which normalizes the frames to (file
 * offset, file id), stores the stack once and writes one USER_STACK record
 * per cookie. Readers stitch events to user stacks by tid and cookie.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <ctype.h>
#include <linux/perf_event.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>

#include <ustack/procmaps.h>
#include <ustack/record.h>
#include <ustack/stackmap.h>
#include <ustack/trace.h>
#include <ustack/ustack.h>
#include "common/compiler.h"
#include "common/grow.h"
#include "common/log.h"
#include "common/opts.h"
#include <ustack/hashmap.h>
#include "deferred/deferred.h"
#include "perf/kallsyms.h"
#include "perf/perf_events.h"
#include "record/recmaps.h"
#include "unwind/unwind.h"

#include "common/clock.h"
#include "record/rec.h"

static void set_err(struct rec *r, const char *fmt, const char *a, const char *b)
{
	if (r->o->errbuf && r->o->errbuf_sz)
		snprintf(r->o->errbuf, r->o->errbuf_sz, fmt, a, b);
}

/* ---- thread names ---------------------------------------------------------- */

static struct tid_comm *comm_slot(struct rec *r, uint32_t tid, int create)
{
	uint64_t i;

	if (ustack_u64map__get(r->comm_of, tid, &i))
		return &r->comms[i];
	if (!create)
		return NULL;
	{
		void *n = r->comms;
		int gret = ustack_grow(&n, &r->cap_comms, r->nr_comms + 1, sizeof(*r->comms), 64);

		r->comms = n;
		if (gret)
			return NULL;
	}
	if (ustack_u64map__put(r->comm_of, tid, r->nr_comms))
		return NULL;
	r->comms[r->nr_comms].tid = tid;
	r->comms[r->nr_comms].comm[0] = 0;
	return &r->comms[r->nr_comms++];
}

/* A thread that exited: its name is not needed any more (a thread given
 * its id later gets one at its FORK). Kept, every thread id ever seen cost
 * ~50 bytes for the rest of the recording, up to kernel.pid_max of them
 * (4 M where systemd sets it): record -a grew with the threads that had
 * come and gone. The last slot moves into the hole. */
static void comm_drop(struct rec *r, uint32_t tid)
{
	uint64_t i;
	size_t last;

	if (!ustack_u64map__delete(r->comm_of, tid, &i) || i >= r->nr_comms)
		return;
	last = --r->nr_comms;
	if (i != last) {
		r->comms[i] = r->comms[last];
		/* an overwrite: the key is there, nothing to allocate */
		ustack_u64map__put(r->comm_of, r->comms[i].tid, i);
	}
}

int rec_knows_thread(struct rec *r, uint32_t tid)
{
	return comm_slot(r, tid, 0) != NULL;
}

void rec_write_thread(struct rec *r, uint64_t time, uint32_t pid, uint32_t tid, uint32_t flags,
			 const char *comm)
{
	struct ustack_trace_thread t = { .time = time, .pid = pid, .tid = tid, .flags = flags };
	struct tid_comm *c;
	char name[sizeof(c->comm)];
	int ret;

	/* comm may point into r->comms (a fork passes its parent's name),
	 * which comm_slot() can move: take a copy first */
	snprintf(name, sizeof(name), "%s", comm ? comm : "");
	t.comm = name;
	c = comm_slot(r, tid, 1);
	if (c)
		memcpy(c->comm, name, sizeof(name));
	ret = ustack_trace_writer__add_thread(r->w, &t);
	if (ret && !r->werr)
		r->werr = ret;
}

/* ---- kernel symbols (names for KSYM records) ------------------------------ */

/* The kernel takes a while to format /proc/kallsyms (when the cache
 * misses): load on a thread from the start, so the first kernel stack does
 * not stall the reading of the ring buffers. */
static void *ksyms_load(void *arg)
{
	struct rec *r = arg;

	r->ksyms = ustack_kallsyms__load(NULL, NULL);
	return NULL;
}

static void ksyms_wait(struct rec *r)
{
	if (r->ksyms_thread_started && !r->ksyms_loaded) {
		pthread_join(r->ksyms_thread, NULL);
		r->ksyms_loaded = 1;
	}
	if (!r->ksyms_thread_started && !r->ksyms_loaded) {
		ksyms_load(r);
		r->ksyms_loaded = 1;
	}
}

static int cb_get_ksym(void *ctx, uint64_t ip, struct ustack_trace_ksym *ks)
{
	struct rec *r = ctx;

	ksyms_wait(r);
	if (!r->ksyms)
		return -ENOENT;
	return ustack_kallsyms__find(r->ksyms, ip, &ks->addr, &ks->size, &ks->name, &ks->module);
}

/* ---- writer callbacks -------------------------------------------------------- */

static int cb_get_stack(void *ctx, uint32_t kind, uint32_t id, struct ustack_trace_stack *st)
{
	struct rec *r = ctx;
	const uint64_t *w;
	uint32_t nr;
	int ret;

	ret = ustack_stackmap__lookup(kind == USTACK_TRACE_KSTACK ? r->kmap : r->umap, id, &w, &nr,
				      NULL);
	if (ret)
		return ret;
	st->id = id;
	st->kind = kind;
	if (kind == USTACK_TRACE_KSTACK) {
		st->nr = nr;
		st->ips = w;
		return 0;
	}
	st->nr = nr / 2;
	for (uint32_t i = 0; i < st->nr; i++)
		ustack_trace_unpack_frame(&w[2 * i], &r->frames[i]);
	st->frames = r->frames;
	return 0;
}

static int cb_get_file_map(void *ctx, uint64_t file_id, struct ustack_file_map *fm)
{
	struct rec *r = ctx;
	int ret = ustack_recmaps__file_map(r->rm, file_id, fm);

	/* the files a stack used are the ones captured */
	if (!ret)
		rec_capture_file(r, file_id);
	return ret;
}

/* ---- unwinding a sample's user stack ---------------------------------------- */

struct stack_copy {
	uint64_t base;
	const uint8_t *data;
	uint64_t size;
	struct ustack_recmaps *rm;
};

static int copy_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct stack_copy *c = ctx;

	if (addr < c->base || addr - c->base > c->size || len > c->size - (addr - c->base))
		return -EFAULT;
	memcpy(buf, c->data + (addr - c->base), len);
	return 0;
}

static int copy_find_row(void *ctx, uint64_t pc, struct ustack_row *row, unsigned int *method)
{
	return ustack_recmaps__find_row(((struct stack_copy *)ctx)->rm, pc, row, method);
}

static int copy_is_code(void *ctx, uint64_t pc)
{
	return ustack_recmaps__is_code(((struct stack_copy *)ctx)->rm, pc);
}

int rec_unwind_copy(struct rec *r, uint32_t pid, uint64_t ip, uint64_t sp, uint64_t bp,
		    const uint64_t *bx, const void *stack, uint64_t size,
		    struct ustack_frame *frames, uint32_t max, uint32_t *stop)
{
	struct stack_copy c = { .base = sp, .data = stack, .size = size, .rm = r->rm };
	struct ustack_unwind_ops ops = {
		.find_row = copy_find_row, .read = copy_read, .is_code = copy_is_code, .ctx = &c,
	};
	struct ustack_regs regs = { .pc = ip, .sp = sp, .fp = bp };
	struct ustack_walk_opts uo = { .sz = sizeof(uo), .stack_lo = sp, .stack_hi = sp + size,
				       .has_bx = !!bx, .bx = bx ? *bx : 0, .hi_is_copy_end = 1 };
	unsigned int why;
	int n;

	ustack_recmaps__set_pid(r->rm, pid);
	n = ustack_unwind(&ops, &regs, &uo, frames, (int)max, &why);
	*stop = why;
	return n;
}

static int unwind_sample(void *ctx, const struct ustack_deferred_sample *s,
			 struct ustack_frame *frames, uint32_t max, uint32_t *stop)
{
	((struct rec *)ctx)->st.unwinds++;
	return rec_unwind_copy(ctx, s->pid, s->ip, s->sp, s->bp, s->has_bx ? &s->bx : NULL,
			       s->stack, s->stack_size, frames, max, stop);
}

int rec_store_frames(struct rec *r, uint32_t pid, const struct ustack_frame *frames, uint32_t n,
		     uint32_t *id)
{
	int anon_seen = 0;

	if (n > MAX_USER_FRAMES)
		n = MAX_USER_FRAMES;
	for (uint32_t i = 0; i < n; i++) {
		const struct ustack_frame *f = &frames[i];
		const struct pm_vma *v = ustack_recmaps__find(r->rm, pid, f->pc);
		struct pm_file *file = v ? ustack_recmaps__file(r->rm, v->file) : NULL;
		struct ustack_trace_frame tf = {
			.offset = f->pc, .method = (uint8_t)f->method,
			.flags = (f->flags & USTACK_FRAME_EXACT_PC) ? USTACK_TRACE_FRAME_EXACT_PC : 0,
		};

		if (file) {
			ustack_recmaps__file_info(r->rm, file, pid);
			tf.offset = f->pc - v->start + v->pgoff;
			tf.file_id = file->id;
		}
		else if (!anon_seen) {
			anon_seen = 1;
			rec_jit_note_anon(r, pid);
		}
		ustack_trace_pack_frame(&tf, &r->words[2 * i]);
		r->st.frames++;
		r->st.frames_by_method[f->method & 7]++;
	}
	*id = USTACK_TRACE_NO_STACK;
	if (!n)
		return 0;
	return ustack_stackmap__insert(r->umap, r->words, 2 * n, id) < 0 ? -ENOMEM : 0;
}

void rec_write_user_stack(struct rec *r, struct ustack_trace_user_stack *u,
			  const struct ustack_frame *frames, uint32_t n, uint32_t nr_requests)
{
	int ret;

	if (rec_store_frames(r, u->pid, frames, n, &u->stack_id)) {
		r->st.no_user_stack += nr_requests;
		return;
	}
	ret = ustack_trace_writer__add_user_stack(r->w, u);
	if (ret && !r->werr)
		r->werr = ret;
	r->st.user_stacks++;
}

/* The deferred engine delivers a cookie's stack: normalize, dedup, write. */
static void on_user_stack(struct ustack_deferred_consumer *c, uint64_t cookie,
			  const struct ustack_deferred_task *task, uint32_t cpu, uint64_t time,
			  const struct ustack_deferred_stack *stack)
{
	struct rec *r = c->ctx;
	struct ustack_trace_user_stack u = {
		.time = time, .pid = task->pid, .tid = task->tid, .cpu = cpu,
		.stop_reason = stack->stop, .cookie = cookie, .stack_id = USTACK_TRACE_NO_STACK,
	};

	if (stack->err) {
		/* withheld (lost records, misordered) or unwind error: the
		 * events with this cookie get no user stack */
		r->st.no_user_stack += stack->nr_requests;
		return;
	}
	/* the kernel deferred this entry's user callchain too: combined there */
	if (r->kfp && rec_kfp_user_stack(r, cookie, task, &u, stack))
		return;
	rec_write_user_stack(r, &u, stack->frames, stack->nr, stack->nr_requests);
}

/* ---- perf records ------------------------------------------------------------- */

static void on_sample(struct rec *r, const struct ustack_perf_record *rec)
{
	const struct ustack_perf_sample *s = &rec->sample;
	struct ustack_trace_event ev = {
		.time = rec->time, .pid = s->pid, .tid = s->tid, .cpu = s->cpu,
		.event_id = (uint32_t)s->event, .kstack_id = USTACK_TRACE_NO_STACK,
	};
	int ret;

	r->st.samples++;
	if (s->nr_kips &&
	    ustack_stackmap__insert(r->kmap, s->kips, s->nr_kips, &ev.kstack_id) < 0)
		ev.kstack_id = USTACK_TRACE_NO_STACK;
	if (s->has_uregs && (s->uip || s->usp)) {
		struct ustack_deferred_sample ds = {
			.pid = s->pid, .tid = s->tid, .cpu = s->cpu,
			.flags = s->kernel_mode ? USTACK_DEFERRED_KERNEL : 0,
			.time = rec->time, .ip = s->uip, .sp = s->usp, .bp = s->ubp,
			.stack = s->stack, .stack_size = s->stack_size, .bx = s->ubx, .has_bx = 1,
		};

		/* the return-address word at sp tells two entries from the
		 * same ip/sp apart when no user-mode sample separated them */
		if (s->stack_size >= 8)
			memcpy(&ds.tag, s->stack, 8);
		/* The kernel's deferred-callchain cookie names the kernel entry
		 * exactly (6.19+): the samples of one entry share it, also
		 * those a system call's tracepoints take with the user
		 * registers (user-mode samples to the engine otherwise), and
		 * two entries from the same registers differ in it. */
		if (r->kfp && s->has_kcookie) {
			ds.flags = USTACK_DEFERRED_KERNEL;
			ds.tag = s->kcookie;
		}
		ret = ustack_deferred__request(r->def, &r->consumer, &ds, &ev.cookie);
		if (ret == 1)
			r->st.shared++;
		else if (ret < 0)
			ev.cookie = 0;
		if (r->kfp && s->has_kcookie && ev.cookie)
			rec_kfp_sample(r, s, ev.cookie);
	}
	if (!ev.cookie)
		r->st.no_user_stack++;
	ret = ustack_trace_writer__add_event(r->w, &ev);
	if (ret && !r->werr)
		r->werr = ret;
	r->st.events++;
}

/* A change to the mapping picture failed: out of memory ends the
 * recording (later stacks could not be named right); a record the picture
 * refuses (an empty range) is counted as a bad record and said once. */
void rec_map_result(struct rec *r, int ret, uint32_t pid, const char *what)
{
	if (!ret)
		return;
	if (ret == -ENOMEM) {
		if (!r->werr) {
			r->werr = ret;
			snprintf(r->errmsg, sizeof(r->errmsg),
				 "out of memory keeping the mappings of pid %u (%s)", pid, what);
		}
		return;
	}
	if (!r->bad_maps++)
		pr_warn("pid %u: mapping record refused (%s): %s\n", pid, what, strerror(-ret));
}

/*
 * An exec or a new executable mapping made by @tid: the stack of an entry
 * @tid still has open was unwound already, but its frames are named (file
 * id, offset) only when the entry closes, from the mapping picture as it
 * is then. Close it now, before the picture changes: the task ran user
 * code since that entry to make this call, so no later sample can join it
 * (the kernel's deferred unwind would have run on that return to user
 * space). Without this the last stack before an exec was named from the
 * new image (file id 0), and a library dlclose()d and replaced at the same
 * address took the frames of the one sampled.
 */
static void end_entry_before_remap(struct rec *r, uint32_t tid)
{
	if (!r->bpf)
		ustack_deferred__task_exit(r->def, tid);
}

/* The mapping picture of @pid, whose main thread exited, is dropped a
 * second from now (struct rec, exits). */
static void exit_later(struct rec *r, uint32_t pid)
{
	if (ustack_grow((void **)&r->exits, &r->cap_exits, r->nr_exits + 1, sizeof(*r->exits),
			16)) {
		ustack_recmaps__exit(r->rm, pid);
		return;
	}
	r->exits[r->nr_exits++] = (struct rec_exit){ .pid = pid, .due = ustack_mono_ns() + 1000000000ull };
}

/* @pid is a new process (a reused pid): its earlier holder's drop is done
 * by the fork itself, a later one would drop the new picture */
static void exits_forget(struct rec *r, uint32_t pid)
{
	size_t j = 0;

	for (size_t i = 0; i < r->nr_exits; i++)
		if (r->exits[i].pid != pid)
			r->exits[j++] = r->exits[i];
	r->nr_exits = j;
}

/* Drop the pictures whose time came (in exit order: due times ascend). */
static void exits_due(struct rec *r, uint64_t now)
{
	size_t i = 0;

	if (!r->nr_exits)
		return;
	while (i < r->nr_exits && r->exits[i].due <= now)
		ustack_recmaps__exit(r->rm, r->exits[i++].pid);
	memmove(r->exits, r->exits + i, (r->nr_exits - i) * sizeof(*r->exits));
	r->nr_exits -= i;
}

void rec_on_record(void *ctx, const struct ustack_perf_record *rec)
{
	struct rec *r = ctx;

	switch (rec->type) {
	case USTACK_PREC_SAMPLE:
		if (!r->bpf)
			on_sample(r, rec);
		break;
	case USTACK_PREC_COMM:
		if (rec->comm.exec) {
			/* both write what waits for this task, named from
			 * the mapping picture before the exec changes it */
			end_entry_before_remap(r, rec->comm.tid);
			rec_kfp_exec(r, rec->comm.tid);
			if (rec->comm.pid == rec->comm.tid)
				ustack_recmaps__exec(r->rm, rec->comm.pid);
		}
		rec_write_thread(r, rec->time, rec->comm.pid, rec->comm.tid,
			     rec->comm.exec ? USTACK_TRACE_THREAD_EXEC : 0, rec->comm.comm);
		break;
	case USTACK_PREC_MMAP2:
		if (rec->mmap2.prot & 4 /* PROT_EXEC */) {
			end_entry_before_remap(r, rec->mmap2.tid);
			rec_map_result(r, ustack_recmaps__mmap(r->rm, rec->mmap2.pid, rec->mmap2.start,
							   rec->mmap2.len, rec->mmap2.pgoff,
							   rec->mmap2.maj, rec->mmap2.min,
							   rec->mmap2.ino, rec->mmap2.build_id,
							   rec->mmap2.build_id_size,
							   rec->mmap2.filename),
				   rec->mmap2.pid, rec->mmap2.filename);
			if (r->bpf)
				rec_bpf_mapped(r, rec->mmap2.pid, rec->mmap2.start);
		}
		break;
	case USTACK_PREC_FORK: {
		struct tid_comm *parent = comm_slot(r, rec->task.ptid, 0);

		if (rec->task.pid != rec->task.ppid) {
			exits_forget(r, rec->task.pid); /* a reused pid */
			rec_map_result(r, ustack_recmaps__fork(r->rm, rec->task.pid, rec->task.ppid),
				   rec->task.pid, "fork");
		}
		rec_write_thread(r, rec->time, rec->task.pid, rec->task.tid, USTACK_TRACE_THREAD_FORK,
			     parent ? parent->comm : "");
		break;
	}
	case USTACK_PREC_EXIT: {
		struct tid_comm *t = comm_slot(r, rec->task.tid, 0);

		ustack_deferred__task_exit(r->def, rec->task.tid);
		rec_kfp_exit(r, rec->task.tid);
		rec_bpf_exit(r, rec->task.tid);
		rec_write_thread(r, rec->time, rec->task.pid, rec->task.tid, USTACK_TRACE_THREAD_EXIT,
			     t ? t->comm : "");
		comm_drop(r, rec->task.tid);
		if (rec->task.pid == rec->task.tid) {
			exit_later(r, rec->task.pid);
			rec_jit_exit(r, rec->task.pid);
		}
		break;
	}
	case USTACK_PREC_DEFERRED:
		if (r->kfp)
			rec_kfp_deferred(r, rec);
		break;
	case USTACK_PREC_LOST: {
		struct ustack_trace_lost l = { .time = rec->time, .what = USTACK_TRACE_LOST_KERNEL,
					       .cpu = rec->lost.cpu, .count = rec->lost.lost };
		int ret;

		ustack_deferred__lost(r->def, rec->lost.cpu, rec->time);
		r->st.lost += rec->lost.lost;
		ret = ustack_trace_writer__add_lost(r->w, &l);
		if (ret && !r->werr)
			r->werr = ret;
		break;
	}
	}
}

/* ---- set-up ------------------------------------------------------------------- */

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

/* The totals now into @st (r->st, or a copy of it for a const caller). */
static void fill_stats(const struct rec *r, struct ustack_record_stats *st)
{
	struct ustack_trace_stats ts;
	struct ustack_stackmap_stats ks, us;

	if (r->w) {
		ustack_trace_writer__stats(r->w, &ts, sizeof(ts));
		st->bytes = ts.bytes;
	}
	if (r->kmap && !ustack_stackmap__stats(r->kmap, &ks, sizeof(ks)))
		st->kernel_stacks = ks.entries;
	if (r->umap && !ustack_stackmap__stats(r->umap, &us, sizeof(us)))
		st->distinct_user_stacks = us.entries;
	st->bad_records = r->bad_maps + r->bad_ring;
	if (r->ps)
		st->bad_records += ustack_perf_session__bad_records(r->ps);
	st->kernel_bytes = r->ps ? ustack_perf_session__bytes(r->ps) : 0;
	if (r->bpf) {
		uint64_t perf_bytes = st->kernel_bytes;

		rec_bpf_stats(r, st);
		st->kernel_bytes += perf_bytes; /* the side-band's too */
	}
	rec_capture_stats(r, st);
	st->seconds = (ustack_mono_ns() - r->t0) / 1e9;
}

/* The command is what is recorded (-- CMD alone), not only the timer of
 * a recording of -a or of pids. */
static int cmd_traced(const struct ustack_record_opts *o)
{
	return o->argv && o->argv[0] && !o->system_wide && o->nr_pids <= 0;
}

/* Fork the command, stopped on a pipe until the events are open. *report_fd
 * reads 0 bytes once exec succeeded (close-on-exec), else the child's errno.
 * Returns the pid, or a negative errno with @err filled. */
static pid_t spawn_child(char *const *argv, int *go_fd, int *report_fd, char *err, size_t errlen)
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
		execvp(argv[0], argv);
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

static int watch(struct rec *r, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int watch_cb(void *ctx, int fd)
{
	return watch(ctx, fd);
}

/* One fd for a poller: every ring buffer (perf's; the BPF one, whose own
 * epoll fd holds the side-band too), the command's exit (a pidfd), and a
 * 100 ms tick for what no fd says (the duration, -p processes gone, the
 * once-a-second flush, the copy backend's data below its wakeup mark). */
static int rec_poll_setup(struct rec *r)
{
	struct itimerspec it = { .it_interval = { 0, 100000000 }, .it_value = { 0, 100000000 } };
	int ret;

	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	r->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (r->epfd < 0 || r->tfd < 0 || timerfd_settime(r->tfd, 0, &it, NULL))
		return -errno;
	if ((ret = watch(r, r->tfd)))
		return ret;
	if (r->child > 0) {
		r->pidfd = (int)syscall(SYS_pidfd_open, r->child, 0);
		if (r->pidfd >= 0 && (ret = watch(r, r->pidfd)))
			return ret; /* without a pidfd (before 5.3) the tick sees the exit */
	}
	if (r->bpf)
		return (ret = rec_bpf_epoll_fd(r)) < 0 ? ret : watch(r, ret);
	for (int i = 0; i < USTACK_PERF_MAX_EVENTS + 1; i++)
		if ((ret = ustack_perf_session__for_each_fd(r->ps, i, watch_cb, r)))
			return ret;
	return 0;
}

/* Everything up to the events running: 0, or -errno with the message set. */
static int rec_setup(struct rec *r)
{
	static const char *const default_events[] = { "cpu-clock" };
	const struct ustack_record_opts *o = r->o;
	const char *const *names = o->nr_events ? o->events : default_events;
	struct ustack_perf_opts po = { .sz = sizeof(po) };
	struct ustack_deferred_opts dopts = { .sz = sizeof(dopts) };
	struct ustack_stackmap_opts smo = { .sz = sizeof(smo) };
	struct ustack_trace_writer_opts wo = { .sz = sizeof(wo) };
	struct ustack_trace_header hdr = { .clock_id = CLOCK_MONOTONIC };
	struct utsname un;
	struct timespec rt;
	char err[512] = "", host[256] = "", version[64];
	struct ustack_perf_event_spec pev[USTACK_PERF_MAX_EVENTS + 1];
	int ret = 0, nr = o->nr_events ? o->nr_events : 1;
	int sampling_idx = -1;
	unsigned int backend;

	r->t0 = ustack_mono_ns();
	if (!(o->argv && o->argv[0]) && !o->system_wide && o->nr_pids <= 0) {
		/* NULL opts land here too: there is no default target */
		set_err(r, "nothing to record: give pids, system_wide or argv%s%s", "", "");
		ret = -EINVAL;
		goto out;
	}
	if (o->system_wide && o->nr_pids > 0) {
		set_err(r, "give pids or system_wide, not both%s%s", "", "");
		ret = -EINVAL;
		goto out;
	}
	if (nr > USTACK_PERF_MAX_EVENTS) {
		set_err(r, "too many events (at most %s)%s", "16", "");
		ret = -E2BIG;
		goto out;
	}
	for (int i = 0; i < nr; i++) {
		ret = ustack_perf_event_parse(names[i], &r->events[i], err, sizeof(err));
		if (ret) {
			set_err(r, "%s%s", err, "");
			goto out;
		}
	}
	r->nr_events = nr;
	backend = OPTS_GET(o, backend, USTACK_RECORD_AUTO);
	if (backend > USTACK_RECORD_COPY) {
		set_err(r, "unknown backend %s%s", "", "");
		ret = -EINVAL;
		goto out;
	}
	if (backend != USTACK_RECORD_COPY) {
		ret = rec_bpf_open(r, err, sizeof(err));
		if (ret && backend == USTACK_RECORD_BPF) {
			set_err(r, "%s%s", err, "");
			goto out;
		}
		if (ret) {
			/* auto: say why in the summary, record with copies */
			snprintf(r->st.backend_note, sizeof(r->st.backend_note), "%s", err);
			rec_bpf_close(r);
			ret = 0;
		}
	}
	r->st.backend = r->bpf ? USTACK_RECORD_BPF : USTACK_RECORD_COPY;
	/* the kernel's deferred user callchains, where it has them (6.19+):
	 * consumed by the copy backend beside its own unwind */
	if (!r->bpf && !OPTS_GET(o, no_kernel_callchains, 0)) {
		int k = ustack_perf_probe_defer_callchain();

		r->st.kernel_callchains = k > 0 ? USTACK_KCC_USED : USTACK_KCC_UNSUPPORTED;
		if (k > 0 && rec_kfp_init(r)) {
			ret = -ENOMEM;
			set_err(r, "setting up the kernel's callchains: %s%s", strerror(-ret), "");
			goto out;
		}
	}
	r->ksyms_thread_started = !pthread_create(&r->ksyms_thread, NULL, ksyms_load, r);

	r->mc = ustack_modcache__new(OPTS_GET(o, max_tables, 0), USTACK_MODCACHE_COMPILE_CFI);
	r->rm = r->mc ? ustack_recmaps__new(r->mc) : NULL;
	r->comm_of = r->rm ? ustack_u64map__new() : NULL;
	if (!r->comm_of || rec_jit_init(r)) {
		ret = -errno;
		set_err(r, "setting up the unwind tables and the mapping picture: %s%s", strerror(-ret), "");
		goto out;
	}
	smo.capacity = 1u << 16;
	smo.max_depth = 2 * MAX_USER_FRAMES;
	r->kmap = ustack_stackmap__new(&smo);
	r->umap = r->kmap ? ustack_stackmap__new(&smo) : NULL;
	if (!r->umap) {
		ret = -errno;
		set_err(r, "allocating the stack maps (2 x 65536 stacks): %s%s", strerror(-ret), "");
		goto out;
	}
	dopts.nr_cpus = (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
	dopts.max_frames = MAX_USER_FRAMES;
	dopts.unwind = unwind_sample;
	dopts.unwind_ctx = r;
	r->def = ustack_deferred__new(&dopts);
	ret = r->def ? ustack_deferred__init_consumer(r->def, &r->consumer, on_user_stack, r)
		     : -errno;
	if (ret) {
		set_err(r, "setting up the deferred unwinder (%s CPUs): %s", "all", strerror(-ret));
		goto out;
	}

	/* the trace file first: an unwritable output fails before anything runs */
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
	wo.get_stack = cb_get_stack;
	wo.get_file_map = cb_get_file_map;
	wo.get_ksym = cb_get_ksym;
	wo.ctx = r;
	r->w = ustack_trace_writer__open(o->output ? o->output : "ustack.data", &hdr, &wo);
	if (!r->w) {
		ret = -errno;
		set_err(r, "%s: %s", o->output ? o->output : "ustack.data", strerror(-ret));
		goto out;
	}
	for (int i = 0; i < nr; i++) {
		struct ustack_trace_event_desc d = {
			.id = (uint32_t)i, .name = r->events[i].name,
			.type = r->events[i].is_tracepoint ? USTACK_TRACE_EV_TRACEPOINT
							   : USTACK_TRACE_EV_SAMPLE,
			.flags = r->events[i].is_tracepoint ? 0 : USTACK_TRACE_EV_FREQ,
			.period = r->events[i].is_tracepoint ? 1 : (o->freq ? o->freq : 999),
		};

		ret = ustack_trace_writer__add_event_desc(r->w, &d);
		if (ret) {
			set_err(r, "%s: %s", o->output ? o->output : "ustack.data", strerror(-ret));
			goto out;
		}
	}

	/* before the targets' mappings are read: their files are kept open
	 * from the first mapping seen */
	rec_capture_setup(r);

	/* with -a or pids the command is only the timer (perf's "record while
	 * CMD runs"): started after the events run, recorded only as part of
	 * the machine (-a) */
	if (o->argv && o->argv[0]) {
		r->child = spawn_child(o->argv, &r->go_fd, &r->report_fd, err, sizeof(err));
		if (r->child < 0) {
			set_err(r, "%s%s", err, "");
			ret = r->child;
			r->child = 0;
			goto out;
		}
	}
	if (cmd_traced(o)) {
		/* its mappings come with its exec's MMAP2s */
		rec_jit_learn(r, (uint32_t)r->child);
	} else if (o->system_wide) {
		ret = synthesize_all(r);
		if (ret) {
			snprintf(err, sizeof(err), "reading the processes' mappings (/proc): %s",
				 strerror(-ret));
			set_err(r, "%s%s", err, "");
			goto out;
		}
	} else {
		for (int i = 0; i < o->nr_pids; i++) {
			ret = synthesize_pid(r, (uint32_t)o->pids[i]);
			if (ret) {
				if (ret == -ESRCH || ret == -ENOENT)
					snprintf(err, sizeof(err), "pid %d: no such process", o->pids[i]);
				else
					snprintf(err, sizeof(err), "pid %d: cannot read its mappings "
						 "(/proc/%d/maps): %s", o->pids[i], o->pids[i],
						 strerror(-ret));
				set_err(r, "%s%s", err, "");
				ret = ret == -ENOENT ? -ESRCH : ret;
				goto out;
			}
			rec_jit_learn(r, (uint32_t)o->pids[i]);
		}
	}

	po.events = r->events;
	po.nr_events = nr;
	po.freq = o->freq ? o->freq : 999;
	po.stack_size = o->stack_size ? o->stack_size : 16384;
	if (r->bpf) {
		/* perf gives only the side-band (a dummy event) and the sampling
		 * event the program runs at; tracepoints run it directly */
		pev[0] = (struct ustack_perf_event_spec){ .name = "dummy", .type = PERF_TYPE_SOFTWARE,
							  .config = PERF_COUNT_SW_DUMMY };
		po.nr_events = 1;
		for (int i = 0; i < nr; i++)
			if (!r->events[i].is_tracepoint) {
				sampling_idx = po.nr_events;
				pev[po.nr_events++] = r->events[i];
			}
		po.events = pev;
		po.stack_size = 8;
		po.pages = 64; /* side-band only */
		/* a new mapping's table is loaded as soon as it is seen */
		po.wake_each = 1;
	}
	po.pids = o->pids;
	po.nr_pids = o->nr_pids;
	po.system_wide = o->system_wide;
	po.child = cmd_traced(o) ? r->child : 0;
	po.defer_callchain = r->kfp != NULL;
	r->ps = ustack_perf_session__open(&po, err, sizeof(err));
	if (!r->ps) {
		ret = -errno;
		set_err(r, "%s%s", err, "");
		goto out;
	}
	if (r->bpf) {
		/* the program is in place before anything runs */
		ret = rec_bpf_start(r, cmd_traced(o) ? r->child : 0, err, sizeof(err));
		if (!ret && sampling_idx > 0 && (ret = rec_bpf_attach_sampling(r, sampling_idx)))
			snprintf(err, sizeof(err), "%s", r->errmsg);
		if (ret) {
			set_err(r, "%s%s", err, "");
			r->errmsg[0] = 0;
			goto out;
		}
	}
	/* what wakes a poller: the ring buffers, the command's exit, a tick */
	ret = rec_poll_setup(r);
	if (ret) {
		set_err(r, "setting up the poll fd: %s%s", strerror(-ret), "");
		goto out;
	}
	if (!cmd_traced(o) && (ret = ustack_perf_session__enable(r->ps))) {
		snprintf(err, sizeof(err), "enabling the perf events: %s", strerror(-ret));
		set_err(r, "%s%s", err, "");
		goto out;
	}
	if (r->child > 0) {
		/* a traced command's events enable themselves at its exec */
		int child_errno = 0;

		if (write(r->go_fd, "g", 1) != 1) {
			ret = -errno;
			snprintf(err, sizeof(err), "%s (pid %d): died before it could be started "
				 "(its start pipe: %s)", o->argv[0], (int)r->child, strerror(-ret));
			set_err(r, "%s%s", err, "");
			goto out;
		}
		close(r->go_fd);
		r->go_fd = -1;
		if (read(r->report_fd, &child_errno, sizeof(child_errno)) == sizeof(child_errno)) {
			snprintf(err, sizeof(err), "%s: %s", o->argv[0], strerror(child_errno));
			set_err(r, "%s%s", err, "");
			waitpid(r->child, NULL, 0);
			r->child = 0;
			ret = -child_errno;
			goto out;
		}
	}
	if (o->duration > 0)
		r->deadline = r->t0 + (uint64_t)(o->duration * 1e9);
	r->last_progress = ustack_mono_ns();
	rec_capture_started(r);
out:
	return ret;
}

/* One round: read what the kernel has, then see whether recording is over.
 * 0: go on; 1: over (the command ended, the processes are gone, the
 * duration passed, a write failed); -errno with the message set. */
static int rec_step(struct rec *r, int timeout_ms)
{
	const struct ustack_record_opts *o = r->o;
	struct epoll_event evs[8];
	char err[512];
	uint64_t ticks;
	int ret, status;

	if (timeout_ms && epoll_wait(r->epfd, evs, 8, timeout_ms) < 0 && errno != EINTR) {
		ret = -errno;
		set_err(r, "waiting for the ring buffers: %s%s", strerror(-ret), "");
		return ret;
	}
	/* re-arm the tick's readiness (EAGAIN: it has not fired since) */
	if (read(r->tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		pr_debug("recorder tick: %s\n", strerror(errno));
	if (r->bpf) {
		/* the ring buffer up to now first, then the side-band up to the
		 * same moment: a process's exit or exec is applied after its
		 * last event */
		uint64_t now = ustack_mono_ns();

		ret = rec_bpf_poll(r, 0);
		if (ret < 0) {
			snprintf(err, sizeof(err), "reading the BPF ring buffer: %s (the "
				 "trace is readable up to the last complete chunk)", strerror(-ret));
			set_err(r, "%s%s", err, "");
			return ret;
		}
		ret = ustack_perf_session__poll_until(r->ps, 0, now, rec_on_record, r);
	} else {
		ret = ustack_perf_session__poll(r->ps, 0, rec_on_record, r);
	}
	if (ret < 0) {
		snprintf(err, sizeof(err), "reading the perf ring buffers: %s (the trace is "
			 "readable up to the last complete chunk)", strerror(-ret));
		set_err(r, "%s%s", err, "");
		return ret;
	}
	exits_due(r, ustack_mono_ns());
	rec_capture_drain(r);
	if (r->werr)
		return 1;
	if (o->stop && *o->stop)
		return 1;
	if (r->deadline && ustack_mono_ns() >= r->deadline)
		return 1;
	if (r->child > 0 && waitpid(r->child, &status, WNOHANG) == r->child) {
		r->st.child_status = status;
		r->child = 0;
		return 1;
	}
	if (!r->o->argv && !o->system_wide && o->nr_pids) {
		int alive = 0;

		for (int i = 0; i < o->nr_pids; i++)
			alive += !(kill(o->pids[i], 0) && errno == ESRCH);
		if (!alive)
			return 1;
	}
	if (ustack_mono_ns() - r->last_progress >= 1000000000ull) {
		/* a chunk a second reaches the disk: a full disk or a killed
		 * recorder loses at most the last second */
		ret = ustack_trace_writer__flush(r->w);
		if (ret && !r->werr)
			r->werr = ret;
		fill_stats(r, &r->st);
		if (o->progress)
			o->progress(o->progress_ctx, &r->st);
		r->last_progress = ustack_mono_ns();
	}
	return 0;
}

static void rec_end_child(struct rec *r);

/* Recording is over: what is still in the buffers, the entries still
 * open, the trace closed. 0 or -errno with the message set. */
static int rec_finish(struct rec *r)
{
	const struct ustack_record_opts *o = r->o;
	int ret = 0;

	ustack_perf_session__disable(r->ps);
	if (r->bpf)
		rec_bpf_drain(r);
	/* what is still in the buffers, and what waited for a later round */
	while (!r->werr && ustack_perf_session__poll_until(r->ps, 0, UINT64_MAX, rec_on_record, r) > 0)
		;
	ustack_deferred__flush(r->def);
	rec_kfp_finish(r);
	if (r->bpf)
		rec_bpf_finish(r);
	rec_end_child(r);
	rec_jit_finish(r);
	rec_capture_finish(r);
	fill_stats(r, &r->st);
	if (r->w) {
		int cret = ustack_trace_writer__close(r->w);
		struct stat sb;

		r->w = NULL;
		if (!r->werr && cret)
			r->werr = cret;
		if (!stat(o->output ? o->output : "ustack.data", &sb))
			r->st.bytes = sb.st_size;
	}
	if (!ret && r->werr) {
		ret = r->werr;
		if (r->errmsg[0])
			set_err(r, "%s%s", r->errmsg, " (the trace is readable up to the last complete chunk)");
		else
			set_err(r, "%s: %s (the trace is readable up to the last complete chunk)",
				o->output ? o->output : "ustack.data", strerror(-ret));
	}
	return ret;
}

/* The command, if it still runs: released if it never was (it exits on
 * the closed pipe), else left to finish on its own, as perf does. */
static void rec_end_child(struct rec *r)
{
	if (r->go_fd >= 0) {
		close(r->go_fd);
		r->go_fd = -1;
		if (r->child > 0) {
			waitpid(r->child, NULL, 0);
			r->child = 0;
		}
	}
	if (r->report_fd >= 0) {
		close(r->report_fd);
		r->report_fd = -1;
	}
	if (r->child > 0) {
		int status;

		if (waitpid(r->child, &status, WNOHANG) == r->child)
			r->st.child_status = status;
	}
}

static void rec_free(struct rec *r)
{
	if (!r)
		return;
	rec_end_child(r);
	if (r->w) { /* never finished: close what was written */
		ustack_trace_writer__close(r->w);
		r->w = NULL;
	}
	if (r->epfd >= 0)
		close(r->epfd);
	if (r->tfd >= 0)
		close(r->tfd);
	if (r->pidfd >= 0)
		close(r->pidfd);
	ustack_perf_session__close(r->ps);
	rec_bpf_close(r);
	rec_kfp_free(r);
	ustack_deferred__free(r->def);
	ustack_stackmap__free(r->kmap);
	ustack_stackmap__free(r->umap);
	rec_capture_free(r);
	ustack_recmaps__free(r->rm);
	free(r->exits);
	ustack_modcache__free(r->mc);
	ksyms_wait(r);
	ustack_kallsyms__free(r->ksyms);
	free(r->comms);
	ustack_u64map__free(r->comm_of);
	rec_jit_free(r);
	free(r);
}

/* ---- the public recorder ------------------------------------------------------------ */

USTACK_API struct ustack_recorder *ustack_recorder__new(const struct ustack_record_opts *opts)
{
	struct rec *r;
	int ret;

	if (!OPTS_VALID(opts, struct ustack_record_opts)) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	/* our full-size copy: a field an older caller's struct lacks reads
	 * as 0 (its default) everywhere after this */
	if (opts)
		memcpy(&r->opts, opts, opts->sz < sizeof(r->opts) ? opts->sz : sizeof(r->opts));
	r->opts.sz = sizeof(r->opts);
	r->o = &r->opts;
	r->go_fd = r->report_fd = r->epfd = r->tfd = r->pidfd = -1;
	ret = rec_setup(r);
	if (ret) {
		rec_free(r);
		errno = -ret;
		return NULL;
	}
	return (struct ustack_recorder *)r;
}

USTACK_API int ustack_recorder__fd(const struct ustack_recorder *rec)
{
	return rec ? ((const struct rec *)rec)->epfd : -EINVAL;
}

USTACK_API int ustack_recorder__poll(struct ustack_recorder *rec, int timeout_ms)
{
	struct rec *r = (struct rec *)rec;
	int ret;

	if (!r)
		return -EINVAL;
	if (r->state != REC_RUNNING)
		return 1;
	ret = rec_step(r, timeout_ms);
	if (ret) {
		r->state = REC_OVER;
		r->result = ret < 0 ? ret : 0;
		return ret < 0 ? ret : 1;
	}
	return 0;
}

USTACK_API int ustack_recorder__read(struct ustack_recorder *rec)
{
	return ustack_recorder__poll(rec, 0);
}

USTACK_API int ustack_recorder__stop(struct ustack_recorder *rec)
{
	struct rec *r = (struct rec *)rec;
	int ret;

	if (!r)
		return -EINVAL;
	if (r->state == REC_FINISHED)
		return r->result;
	ret = rec_finish(r);
	if (!r->result)
		r->result = ret;
	r->state = REC_FINISHED;
	return r->result;
}

USTACK_API int ustack_recorder__stats(const struct ustack_recorder *rec,
				      struct ustack_record_stats *st, size_t sz)
{
	const struct rec *r = (const struct rec *)rec;
	struct ustack_record_stats now;

	if (!r || !st)
		return -EINVAL;
	now = r->st;
	if (r->state != REC_FINISHED)
		fill_stats(r, &now);
	ustack_copy_out(st, sz, &now, sizeof(now));
	return 0;
}

USTACK_API void ustack_recorder__free(struct ustack_recorder *rec)
{
	/* the open user stacks and the end record first, as __stop writes them */
	if (rec)
		ustack_recorder__stop(rec);
	rec_free((struct rec *)rec);
}

USTACK_API int ustack_record(const struct ustack_record_opts *o, struct ustack_record_stats *stats,
			     size_t stats_sz)
{
	struct ustack_recorder *rec;
	int ret;

	rec = ustack_recorder__new(o);
	if (!rec) {
		ret = -errno;
		if (stats)
			memset(stats, 0, stats_sz);
		return ret;
	}
	while (!(ret = ustack_recorder__poll(rec, 100)))
		;
	ret = ustack_recorder__stop(rec);
	if (stats)
		ustack_recorder__stats(rec, stats, stats_sz);
	ustack_recorder__free(rec);
	return ret;
}
