// SPDX-License-Identifier: MIT
/*
 * The recording program: at each event of a traced task, unwind its user
 * stack in the kernel from ustack's own rows (SFrame / compiled DWARF CFI,
 * loaded per file by user space into the tables map), turn every pc into
 * (file id, file offset) from the VMA it lies in, store each distinct stack
 * once and send a small fixed record per event. The design is the one of
 * docs/ARCHITECTURE.md "The BPF backend"; the unwind step mirrors
 * src/unwind/unwind_core.c rule for rule.
 *
 * Built at build time: clang -target bpf -O2 -g, then bpftool gen skeleton.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <asm/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "kernel_types.h"
#include "record_abi.h"
#define UB_ELEM(ctx, i)                                                                        \
	({                                                                                     \
		__u32 __k = (i);                                                               \
		(void *)bpf_map_lookup_elem((ctx), &__k);                                      \
	})
#include "rows_layout.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* as user space lays it out (bpf_record.c asserts the same) */
_Static_assert(sizeof(struct ub_pevent) == 160, "struct ub_pevent: 160 bytes, as user space reads it");
_Static_assert(sizeof(struct ub_event) == 56 && __builtin_offsetof(struct ub_event, value) == 48,
	       "struct ub_event: 56 bytes, value last");
_Static_assert(__builtin_offsetof(struct ub_copy, py) == 72 &&
		       __builtin_offsetof(struct ub_copy, data) == 72 + 16 * UB_MAX_PY_FRAMES,
	       "struct ub_copy: Python words at 72, the stack bytes after them");

/* method numbers of enum ustack_method */
#define M_REGS 0
#define M_FP 3
#define M_SIGNAL 4
#define M_PLT 5
/* stop reasons of enum ustack_stop_reason */
#define S_OUTERMOST 0
#define S_DEPTH 1
#define S_NO_INFO 2
#define S_BAD_STEP 3
#define S_READ_FAULT 4
#define S_BAD_TABLE 5
#define EXACT_PC 1 /* USTACK_TRACE_FRAME_EXACT_PC */
#define FILE_ID_MASK ((1ull << 56) - 1)
#define ENOENT 2
#define EBUSY 16
#define EAGAIN 11

/* set by user space before load */
const volatile __u32 trace_all = 0;     /* -a: every task but ours */
const volatile __u32 self_tgid = 0;
const volatile __u32 max_frames = UB_MAX_FRAMES;
const volatile __u32 sample_event = 0; /* index of the one sampling event */
/* wake the reader only when this much waits in the ring (0: at every
 * record the reader has caught up with); it polls with a timeout too */
const volatile __u64 wake_bytes = 0;
/* no stack copy while this much waits in the ring (0: no limit; 1: no
 * copy at all, a test knob: the partial stacks of a full ring at will) */
const volatile __u64 copy_limit = 0;
/* 0: system-call tracepoint programs run with preemption off on this
 * kernel (no trace_call_bpf_faultable): tp_event() need not hold it off
 * (two kfunc calls an event). 1 unless user space knows better. */
const volatile __u32 tp_preemptible = 1;
/* 0: never walk in the interrupt (USTACK_BPF_NO_VMA_CACHE=1, a test knob) */
const volatile __u32 use_vcache = 1;

__u32 next_stack_id = 0;
/* bumped by user space after every write to `files` (bpf_backend.c,
 * apply_op): a hot stack (below) is valid under one value only */
__u32 files_gen = 0;
/* set by user space before it first fills pyprocs (bpf_backend.c,
 * ustack_bpf__set_python), never cleared: until then no event looks for
 * Python frames, so a recording of native programs does not pay the
 * pyprocs lookup on every event */
__u32 py_any = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* user space may resize */
} rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, UB_TARGETS_MAX);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ub_file_key);
	__type(value, struct ub_file_val);
} files SEC(".maps");

/* keeps struct ub_chunk's full type in the BTF (the inner map's value type
 * is otherwise only a forward declaration) */
struct ub_chunk ub_chunk_btf_anchor;

struct rows_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ub_chunk);
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__array(values, struct rows_inner);
} tables SEC(".maps");

/*
 * The stacks sent so far, by their 128-bit hash: an open-addressing table
 * in an array map, a slot looked up by index (inlined by the JIT, one
 * cache line) where a hash map took a call, a jhash, its bucket and its
 * element, two cache misses on bench/record/kernel_ns.sh's storm (4096
 * distinct stacks: the hash map's lookup was ~15% of the program,
 * docs/PERFORMANCE.md). Slots are never emptied once published (user space
 * never deletes), so a slot holding a key holds it for good.
 *
 * Written from every CPU: a slot is claimed by a compare-and-swap of k1
 * from 0 (empty) to ST_BUSY, then its id and the key's second half are
 * stored, then k1 (x86 keeps stores in order; the compiler is held by
 * barriers). A reader takes a slot only when k1 holds its key, so never a
 * half-written slot.
 */
#define ST_SLOTS 65536 /* power of two */
#define ST_PROBE 8     /* slots tried from the stack's own: two cache lines */
#define ST_BUSY 1ull
struct st_slot {
	__u64 k1;   /* 0 empty, ST_BUSY being written, else the key's first half */
	__u64 k2id; /* the high 32 bits of the key's second half, the id */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ST_SLOTS);
	__type(key, __u32);
	__type(value, struct st_slot);
} stack_ids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, UB_MAX_FRAMES * sizeof(__u64));
} kstacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cookie_ctr SEC(".maps");

/* CPython processes (tgid -> where their frames are), filled by user
 * space once it has found the interpreter; a process not in it pays this
 * one lookup per walk */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct ub_pyconf);
} pyprocs SEC(".maps");

/* tid -> its PyThreadState, found once by the thread-list search in a
 * process with one interpreter (@head), and re-validated at each use by
 * its native_thread_id and by the interpreter list's head: a new
 * (sub-)interpreter is put at the head, and then the thread may have a
 * thread state in each, searched for again */
struct py_ts_memo {
	__u64 ts, head;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct py_ts_memo);
} pytstates SEC(".maps");

/* thread states of one thread read per event: its own interpreter's and
 * those of the sub-interpreters it called into (snapshot takes up to
 * SNAP_PY_MAX_CHAINS) */
#define PY_CHAINS 4

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UB_NR_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* ---- VMA cache ------------------------------------------------------------------- */

struct vma_out {
	__u64 start, end, pgoff, dev, ino;
	__u32 exec, file;
};

/*
 * The VMAs a task's walks used, valid while its mm's mm_lock_seq (bumped by
 * every mmap write unlock: mmap, munmap, mprotect, exec's new mm) does not
 * move. A sample taken in an interrupt, where bpf_find_vma() works once per
 * run, walks right away from this cache; a VMA not in it sends the walk to
 * task context (below). Written by the task's own walks only; @busy keeps
 * an interrupt from reading it half written.
 */
#define VC_N 12
struct vcache {
	__u64 mm;
	__u32 seq, n, next, busy;
	struct vma_out e[VC_N];
};


/* UB_PROF: a build that does one part of the walk twice, or skips one,
 * to see what it costs (bench/record/bpf_breakdown.sh); 0 in every other
 * build */
#ifndef UB_PROF
#define UB_PROF 0
#endif
#ifndef WIN_BYTES
#define WIN_BYTES 4096 /* a page: the rest of addr's page in one read */
#endif
#define FM_N 4        /* power of two */
#define HOT_READS 64  /* power of two */
#define HOT_FRAMES 48 /* frames after the first step a hot stack keeps */

/* What a walk's rest depends on besides the stack words it reads: the
 * registers after its first step, the mm and its mappings' sequence, the
 * generation of `files` (the hot stack, below) */
struct hot_state {
	__u64 pc, sp, fp, hi, bx, mm;
	__u32 is_return, bx_known, gen, seq;
	/* a step after the first took an rbx-based CFA: only then does the
	 * rest of the walk depend on bx (a callee-saved register, which a
	 * caller's loop counter may live in: compared always, the hot stack
	 * of a thread blocking in a loop never matched) */
	__u32 bx_used, pad;
};

/* The walk's state: too big for the 512-byte BPF stack. One per CPU and
 * context, as an interrupt can come in the middle of a task-context walk:
 * tracepoint programs, interrupts (samples) and deferred walks. And one for
 * the switch-outs of off-CPU intervals: sched_switch runs with interrupts
 * off, but an NMI can still come (a hardware event's sample), and the
 * sample's program does not see this one running (a tp_btf program does
 * not take bpf_prog_active), so it may walk in SLOT_IRQ and then SLOT_TP
 * in the middle of a sched_switch walk; nothing else runs on that CPU
 * until sched_switch returns, and sched_switch cannot come in the middle
 * of the others (they run with preemption off). */
enum { SLOT_TP, SLOT_IRQ, SLOT_CB, SLOT_SCHED, NR_SLOTS };
struct walk {
	__u64 words[2 * UB_MAX_FRAMES];
	__u64 pc, sp, fp, lo, hi;
	__u64 bx;       /* rbx, where bx_known (an rbx-based CFA needs it) */
	__u64 h1, h2;
	__u32 n, stop, done, is_return, signals, bx_known;
	/* the last VMA seen (the seeds' "keep the last VMA") */
	__u64 vstart, vend, vpgoff;
	__u32 vexec, vknown;     /* vknown: fv holds the file's entry */
	__u32 vfile;             /* 0 anonymous, 1 file or vDSO */
	__u32 vpad;
	struct ub_file_val fv;
	/* the files entries met lately, by (dev, ino), valid under one
	 * files_gen (as the row cache): most walks go from one file to
	 * another and back (the program, libc), a hash map lookup each */
	struct fmemo {
		__u64 dev, ino;
		__u32 gen, set, known, pad;
		struct ub_file_val fv;
	} fm[FM_N];
	__u32 cache_only; /* in an interrupt: VMAs from vc only */
	__u32 defer;      /* a VMA missing from vc: redo the walk in task context */
	__u32 vc_ok;      /* vc is valid for the mm as it is now */
	__u32 vc_dirty;   /* vc gained entries: write it back */
	struct vcache vc;
	/* user stack memory read so far, one read per window (the rest of
	 * a page): a bpf_probe_read_user() costs about as much for 8 bytes
	 * as for a page (each read ~95 ns, 1 KiB windows 400 ns slower than
	 * pages on kernel_ns.sh's storm: docs/PERFORMANCE.md), and the
	 * frames of a walk are close */
	__u64 win_lo;
	__u32 win_len, win_pad;
	__u8 win[WIN_BYTES];
	/* the hot stack (below): the state after the first step, and the
	 * reads after it (nreads > HOT_READS: too many, or a fault) */
	__u32 rec, nreads;
	__u32 bx_used; /* a step after the first used an rbx-based CFA */
	__u32 bx_pad;
	/* pending uretprobes of the task (uret_init()): the trampoline's
	 * address, the next return_instance (a kernel pointer) and the
	 * newest (a stack copy's, copy_uret()) */
	__u64 utramp, uri, uri0;
	struct hot_state s1; /* after the first step */
	__u64 raddr[HOT_READS], rval[HOT_READS];
	/* the Python walk (py_walk): its process's config, where the thread
	 * search and the frame chain are, the frame read last */
	__u32 npy, pystop, py_tid, py_tgid;
	__u64 py_interp, py_ts, pyf;
	/* the thread states of this thread (one per interpreter it runs
	 * code in), innermost first once ordered, and each one's place on
	 * the C stack (its key: lower is newer) */
	__u64 py_m[PY_CHAINS], py_key[PY_CHAINS];
	__u32 py_nm, py_ninterp;
	__u32 py_c0; /* w->npy where the chain being read began */
	__u32 py_kc; /* the chain whose key py_key_cb looks for */
	__u64 py_lo, py_hi;      /* the thread's stack at the event: [sp, end of its VMA) */
	struct ub_pyconf py;
	__u8 pybuf[UB_PY_FR_SPAN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NR_SLOTS);
	__type(key, __u32);
	__type(value, struct walk);
} walks SEC(".maps");

/* A new stack with Python frames wakes the reader at once (at most once a
 * millisecond per CPU): it reads their code objects from the process, which
 * a short-lived program may not outlive a batch's delay by much. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} py_woken SEC(".maps");

static __always_inline __u64 py_wake_flags(__u64 batched)
{
	__u32 zero = 0;
	__u64 now = bpf_ktime_get_ns(), *last = bpf_map_lookup_elem(&py_woken, &zero);

	if (!last || now - *last < 1000000)
		return batched;
	*last = now;
	return BPF_RB_FORCE_WAKEUP;
}

/* A wakeup per record costs the traced program a context switch of the
 * reader on every event: batch them (the reader polls with a timeout). */
static __always_inline __u64 wake_flags(void)
{
	if (!wake_bytes)
		return 0;
	return bpf_ringbuf_query(&rb, BPF_RB_AVAIL_DATA) >= wake_bytes ? BPF_RB_FORCE_WAKEUP
								      : BPF_RB_NO_WAKEUP;
}

static __always_inline void count(__u32 c, __u64 v)
{
	__u64 *p = bpf_map_lookup_elem(&counters, &c);

	if (p)
		*p += v;
}

/* ---- VMA of a pc ------------------------------------------------------------ */

static long vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct vma_out *o = data;
	struct file *f = BPF_CORE_READ(vma, vm_file);

	o->start = BPF_CORE_READ(vma, vm_start);
	o->end = BPF_CORE_READ(vma, vm_end);
	o->pgoff = BPF_CORE_READ(vma, vm_pgoff);
	o->exec = !!(BPF_CORE_READ(vma, vm_flags) & VM_EXEC);
	if (f) {
		o->file = 1;
		o->ino = BPF_CORE_READ(f, f_inode, i_ino);
		o->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	} else if ((__u64)BPF_CORE_READ(task, mm, context.vdso) == o->start) {
		o->file = 1; /* the vDSO: key (0, 0) */
		o->dev = 0;
		o->ino = 0;
	}
	return 0;
}

/* The mm's write sequence, or 1 (odd: never valid) where it cannot be read. */
static __always_inline __u32 mm_seq(struct mm_struct *mm)
{
	if (!bpf_core_field_exists(((struct mm_struct *)0)->mm_lock_seq))
		return 1;
	/* loads from the BTF pointer (fault-safe, the verifier's): up to
	 * four reads an event, and two bpf_probe_read_kernel() calls each
	 * with BPF_CORE_READ */
	return mm ? mm->mm_lock_seq.sequence : 1;
}

static __always_inline int vc_find(struct walk *w, __u64 pc, struct vma_out *o)
{
	for (int i = 0; i < VC_N; i++) {
		if (i >= w->vc.n)
			break;
		if (pc >= w->vc.e[i].start && pc < w->vc.e[i].end) {
			*o = w->vc.e[i];
			return 1;
		}
	}
	return 0;
}

static __always_inline void vc_add(struct walk *w, const struct vma_out *o)
{
	__u32 i = w->vc.next;

	if (!w->vc_ok || i >= VC_N)
		return;
	w->vc.e[i] = *o;
	w->vc.next = i + 1 < VC_N ? i + 1 : 0;
	if (w->vc.n < VC_N)
		w->vc.n++;
	w->vc_dirty = 1;
}

/* Make w's VMA the one holding @pc. 0, -ENOENT (none), -EBUSY (locked) or
 * -EAGAIN (an interrupt's walk, and not in the cache). */
__noinline int vma_of(struct walk *w, __u64 pc)
{
	struct vma_out o = {};
	struct task_struct *task;
	struct ub_file_key key;
	struct ub_file_val *fv;
	struct fmemo *m;
	long ret;

	if (!w)
		return -ENOENT;
	if (w->vend && pc >= w->vstart && pc < w->vend)
		return 0;
	if (!w->vc_ok || !vc_find(w, pc, &o)) {
		if (w->cache_only) {
			w->defer = 1;
			return -EAGAIN;
		}
		task = bpf_get_current_task_btf();
		ret = bpf_find_vma(task, pc, vma_cb, &o, 0);
		if (ret) {
			w->vend = 0;
			return ret == -EBUSY ? -EBUSY : -ENOENT;
		}
		vc_add(w, &o);
	}
	w->vstart = o.start;
	w->vend = o.end;
	w->vpgoff = o.pgoff;
	w->vexec = o.exec;
	w->vfile = o.file;
	w->vknown = 0;
	if (!o.file)
		return 0;
	m = &w->fm[(o.ino ^ o.dev) & (FM_N - 1)];
	if (m->set && m->gen == w->s1.gen && m->dev == o.dev && m->ino == o.ino) {
		if (m->known) {
			w->fv = m->fv;
			w->vknown = 1;
		}
		return 0;
	}
	key.dev = o.dev;
	key.ino = o.ino;
	fv = bpf_map_lookup_elem(&files, &key);
	if (fv) {
		w->fv = *fv;
		w->vknown = 1;
		m->fv = *fv;
	}
	m->dev = o.dev;
	m->ino = o.ino;
	m->gen = w->s1.gen;
	m->known = !!fv;
	m->set = 1;
	return 0;
}

/* vma_of() without its call where @pc lies in w's VMA already: most frames
 * of a walk (a call is a few dozen instructions of the JIT's, twice a step) */
static __always_inline int vma_at(struct walk *w, __u64 pc)
{
	if (w->vend && pc >= w->vstart && pc < w->vend)
		return 0;
	return vma_of(w, pc);
}

/* ---- rows ---------------------------------------------------------------------- */


enum { R_ROW, R_NONE, R_BAD, R_NOT_LOADED };

/*
 * The rows found lately, per CPU and walk slot (a walk never comes in the
 * middle of another of its own slot: struct walk). A table's rows never
 * change once its id is in `files` (user space fills an inner map before
 * naming it, and ids are not reused), so an answer holds for (table id,
 * offset). files_gen in the key, as in the hot stack's state, ends every
 * answer when `files` changes: nothing then depends on ids staying unique
 * past 2^32 tables (an evicted table answers "not loaded" before the
 * cache is asked: its files entry loses UB_FILE_TABLE). The search over
 * a table's directory and chunk was a quarter of a walk's time on
 * bench/record/kernel_ns.sh's write storm (docs/PERFORMANCE.md), whose
 * walks meet the same few dozen return addresses again and again.
 */
#define RC_N 128 /* power of two */
struct rc_ent {
	__u32 table_id, rel, gen, kind;
	struct ub_row row;
};
struct rcache {
	struct rc_ent e[RC_N];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NR_SLOTS);
	__type(key, __u32);
	__type(value, struct rcache);
} rcaches SEC(".maps");

/* The row of file offset @off in w's current file. A global function: the
 * verifier checks it once, not once per path that reaches it. */
__noinline int find_row(struct walk *w, __u32 slot, __u64 off, struct ub_row *out)
{
	__u32 id, rel, gen = w ? w->s1.gen : 0;
	struct rcache *rc;
	struct rc_ent *c = NULL;
	void *inner;
	int kind;

	if (!w || !out)
		return R_BAD;
	id = w->fv.table_id;
	if (w->fv.flags & UB_FILE_NO_TABLE)
		return R_NONE;
	if (!(w->fv.flags & UB_FILE_TABLE))
		return R_NOT_LOADED;
	if (off < w->fv.base || off >= w->fv.limit || off - w->fv.base > 0xffffffffull)
		return R_NONE;
	rel = (__u32)(off - w->fv.base);
	rc = bpf_map_lookup_elem(&rcaches, &slot);
	if (rc) {
		c = &rc->e[(rel ^ (rel >> 9) ^ (id * 0x9e3779b1u)) & (RC_N - 1)];
		if (c->table_id == id && c->rel == rel && c->gen == gen && id) {
			*out = c->row;
			return c->kind;
		}
	}
	inner = bpf_map_lookup_elem(&tables, &id);
	if (!inner)
		return R_NOT_LOADED; /* evicted meanwhile */
	switch (ub_rows_find(inner, w->fv.nr_rows, w->fv.levels, rel, out)) {
	case UB_FIND_ROW:
		kind = R_ROW;
		break;
	case UB_FIND_NONE:
		kind = R_NONE;
		break;
	default:
		kind = R_BAD;
	}
	if (c) {
		c->table_id = id;
		c->rel = rel;
		c->gen = gen;
		c->kind = kind;
		c->row = *out;
	}
	return kind;
}

/* ---- the walk ------------------------------------------------------------------- */

static __always_inline void hash_word(struct walk *w, __u64 v)
{
	w->h1 = (w->h1 ^ v) * 0x9e3779b97f4a7c15ull;
	w->h1 ^= w->h1 >> 29;
	w->h2 = (w->h2 + v) * 0xc2b2ae3d27d4eb4full;
	w->h2 ^= w->h2 >> 31;
}

static __always_inline long stop(struct walk *w, __u32 why)
{
	w->stop = why;
	w->done = 1;
	return 1;
}

/* Frame n: (file id, file offset) from the VMA of its pc, as the seeds
 * define it, at unwind time. */
static __always_inline void emit(struct walk *w, __u64 pc, __u32 method, __u32 flags)
{
	__u32 n = w->n;
	__u64 off = pc, id = 0;
	int ret;

	if (n >= UB_MAX_FRAMES)
		return;
	ret = vma_at(w, pc);
	if (ret == -EBUSY) {
		/* the mmap lock is held (another thread maps or unmaps): the
		 * frame's file is unknown, and a bare address would make an
		 * unnamed frame in a stack that goes on once the lock is free;
		 * stop as a step that meets the lock does: a stack copy */
		count(UB_C_MAPS_BUSY, 1);
		stop(w, UB_STOP_MAPS_BUSY);
		return;
	}
	if (!ret && w->vknown) {
		off = pc - w->vstart + (w->vpgoff << 12);
		id = w->fv.file_id & FILE_ID_MASK;
	}
	w->words[2 * n] = off;
	w->words[2 * n + 1] = id | ((__u64)(method & 0x3f) << 56) | ((__u64)(flags & 3) << 62);
	hash_word(w, w->words[2 * n]);
	hash_word(w, w->words[2 * n + 1]);
	w->n = n + 1;
}

static __always_inline int in_stack(struct walk *w, __u64 a)
{
	return a >= w->lo && (!w->hi || a < w->hi);
}

static __always_inline int read_user(__u64 addr, __u64 *v)
{
	return bpf_probe_read_user(v, sizeof(*v), (const void *)addr);
}

/* The user word at @addr, through w's window: the rest of addr's page, at
 * most WIN_BYTES, is read at once (a page is readable whole or not at all). */
static __always_inline int read_stack(struct walk *w, __u64 addr, __u64 *v)
{
	__u64 off = addr - w->win_lo, len;

	if (addr >= w->win_lo && off + 8 <= w->win_len && off <= WIN_BYTES - 8) {
		*v = *(__u64 *)(w->win + off);
		return 0;
	}
	len = 4096 - (addr & 4095);
	if (len > WIN_BYTES)
		len = WIN_BYTES;
	if (len < 8)
		return read_user(addr, v); /* a word across two pages */
	if (UB_PROF & 2)
		bpf_probe_read_user(w->win, len, (const void *)addr);
	if (bpf_probe_read_user(w->win, len, (const void *)addr)) {
		w->win_len = 0;
		return -1;
	}
	w->win_lo = addr;
	w->win_len = len;
	*v = *(__u64 *)w->win;
	return 0;
}

/* read_stack, the read kept for the hot stack */
static __always_inline int read_word(struct walk *w, __u64 addr, __u64 *v)
{
	__u32 i;

	if (read_stack(w, addr, v)) {
		w->nreads = HOT_READS + 1; /* a fault: the walk is not kept */
		return -1;
	}
	if (w->rec) {
		i = w->nreads;
		if (i < HOT_READS) {
			w->raddr[i & (HOT_READS - 1)] = addr;
			w->rval[i & (HOT_READS - 1)] = *v;
		}
		if (i <= HOT_READS)
			w->nreads = i + 1;
	}
	return 0;
}

/* One step: find the caller of the current frame and emit it. @ctx: the
 * walk's slot.
 *
 * Over 100 lines on purpose: the verifier checks a global function once
 * (here 976 BPF instructions, about 1,900 processed) and then takes it as
 * "global and assumed valid" wherever it is called: 80 times while loading
 * ustack_sample (bpf_loop's callback is verified again for each state it
 * is reached in), measured with `bpftool -d prog loadall` on 6.18. Split
 * into static __noinline pieces, each piece would be verified again at
 * each of those calls with the caller's state; into global pieces, each
 * would know nothing of the checks made above it (w->n < UB_MAX_FRAMES
 * for emit()'s index, in_stack() before every read) and would have to make
 * them again, and return its six results (pc, sp, fp, rbx, rbx known,
 * method) through memory. __always_inline pieces would leave the
 * verifier the same function, but clang allocates registers across them
 * anew, which is how a bound proven in one register gets lost in a spill:
 * a change to prove on both kernels (make check-kernel, make check
 * ONLY='bpf|record'), not a tidying. */
/* A return address into CPython's perf trampoline (`python -X perf`): the
 * 11 bytes from 6 before it are `sub $8,%rsp; call *%rcx; add $8,%rsp;
 * ret` (ustack_unwind_is_py_trampoline() checks the same) */
static __always_inline int py_trampoline_at(__u64 ra)
{
	__u8 code[11];

	if (ra < 6 || bpf_probe_read_user(code, sizeof(code), (const void *)(ra - 6)))
		return 0;
	return code[0] == 0x48 && code[1] == 0x83 && code[2] == 0xec && code[3] == 0x08 &&
	       code[4] == 0xff && code[5] == 0xd1 && code[6] == 0x48 && code[7] == 0x83 &&
	       code[8] == 0xc4 && code[9] == 0x08 && code[10] == 0xc3;
}

/* The task's pending uretprobes: w->utramp, the trampoline their functions
 * return to (0: none pending), w->uri, the newest return_instance. */
static __always_inline void uret_init(struct walk *w, struct task_struct *task,
				      struct mm_struct *mm)
{
	struct mm_struct___uprobes *um = (void *)mm;
	struct uprobe_task *ut;
	struct xol_area *area;

	w->utramp = 0;
	w->uri = 0;
	w->uri0 = 0;
	if (!bpf_core_field_exists(task->utask) ||
	    !bpf_core_field_exists(((struct return_instance *)0)->stack) ||
	    !bpf_core_field_exists(um->uprobes_state))
		return;
	ut = BPF_CORE_READ(task, utask);
	if (!ut)
		return;
	w->uri = (__u64)BPF_CORE_READ(ut, return_instances);
	area = w->uri ? BPF_CORE_READ(um, uprobes_state.xol_area) : NULL;
	w->utramp = area ? BPF_CORE_READ(area, vaddr) : 0;
	if (!w->utramp)
		w->uri = 0;
	w->uri0 = w->uri;
}

/* A return address read from @slot is the uretprobe trampoline: the real
 * one, from the return_instance that replaced that very slot (stack ==
 * slot; the kernel's own fix of perf's callchains takes them in order
 * instead). Instances of slots below it are of frames gone (a longjmp over
 * them) and skipped; several of one slot (a tail call from one probed
 * function into another: the second found the trampoline there already)
 * share the address and are all taken. 0, or -1 where no instance is of
 * that slot (the trampoline is kept: the walk stops after it). */
static __always_inline int uret_orig(struct walk *w, __u64 slot, __u64 *pc)
{
	struct return_instance *ri = (void *)w->uri;
	__u64 st, orig = 0;
	int found = 0;

	for (int i = 0; i < 16 && ri; i++) {
		st = BPF_CORE_READ(ri, stack);
		if (st > slot)
			break;
		if (st == slot && !found) {
			orig = BPF_CORE_READ(ri, orig_ret_vaddr);
			found = 1;
		}
		ri = BPF_CORE_READ(ri, next);
	}
	if (!found || !orig)
		return -1;
	w->uri = (__u64)ri;
	*pc = orig;
	return 0;
}

__noinline long step_one(__u32 slot)
{
	__u32 method = M_FP, exact = 0, nbx_known = 0;
	__u64 lookup, npc = 0, nsp = 0, nfp = 0, nbx = 0, cfa, base, ra_at = 0;
	struct ub_row row = {};
	struct walk *w;
	int kind;

	w = bpf_map_lookup_elem(&walks, &slot);
	if (!w || w->done || w->defer)
		return 1;
	if (w->n >= max_frames || w->n >= UB_MAX_FRAMES)
		return stop(w, S_DEPTH);

	lookup = w->is_return ? w->pc - 1 : w->pc;
	kind = vma_at(w, lookup);
	if (kind == -EAGAIN)
		return 1;
	if (kind == -EBUSY) {
		count(UB_C_MAPS_BUSY, 1);
		return stop(w, UB_STOP_MAPS_BUSY);
	}
	if (kind || !w->vexec || !w->vfile) {
		kind = R_NONE; /* anonymous or unknown memory: the heuristic */
	} else if (!w->vknown) {
		kind = R_NOT_LOADED;
	} else {
		if (UB_PROF & 1)
			find_row(w, slot, lookup - w->vstart + (w->vpgoff << 12), &row);
		kind = find_row(w, slot, lookup - w->vstart + (w->vpgoff << 12), &row);
	}
	if (kind == R_NOT_LOADED) {
		count(UB_C_NOT_LOADED, 1);
		return stop(w, UB_STOP_NOT_LOADED);
	}
	if (kind == R_BAD)
		return stop(w, S_BAD_TABLE);
	if (kind == R_ROW && (row.flags & UB_RF_OUTERMOST))
		return stop(w, S_OUTERMOST);

	if (kind == R_ROW && (row.flags & UB_RF_SIGNAL)) {
		/* sp points at the ucontext: gregs from byte 40; rbp 10,
		 * rsp 15, rip 16 (src/unwind/unwind_arch_x86_64.c) */
		if (++w->signals > UB_MAX_SIGNAL_FRAMES)
			return stop(w, S_BAD_STEP);
		if (read_word(w, w->sp + 40 + 8 * 10, &nfp) ||
		    read_word(w, w->sp + 40 + 8 * 15, &nsp) ||
		    read_word(w, w->sp + 40 + 8 * 16, &npc)) {
			count(UB_C_READ_FAULT, 1);
			return stop(w, S_BAD_STEP);
		}
		if (!nsp)
			return stop(w, S_BAD_STEP);
		nbx_known = !read_word(w, w->sp + 40 + 8 * 11, &nbx);
		w->lo = nsp;
		w->hi = 0;
		method = M_SIGNAL;
		exact = 1;
	} else if (kind == R_ROW && !(row.flags & UB_RF_FALLBACK) &&
		   (!(row.flags & UB_RF_CFA_BX) || w->bx_known)) {
		base = (row.flags & UB_RF_CFA_FP) ? w->fp : (row.flags & UB_RF_CFA_BX) ? w->bx : w->sp;
		if (row.flags & UB_RF_CFA_BX)
			w->bx_used = 1;
		cfa = base + (__s64)row.cfa_off;
		if (cfa <= w->sp || (cfa & 7) || !in_stack(w, cfa - 1))
			return stop(w, S_BAD_STEP);
		ra_at = cfa - 8;
		if (read_word(w, ra_at, &npc)) {
			count(UB_C_READ_FAULT, 1);
			return stop(w, S_READ_FAULT);
		}
		/* a slot below sp was popped already: as unwind_core.c */
		if ((row.flags & UB_RF_FP_SAVED) && cfa + (__s64)row.fp_off >= w->sp) {
			if (read_word(w, cfa + (__s64)row.fp_off, &nfp)) {
				count(UB_C_READ_FAULT, 1);
				return stop(w, S_READ_FAULT);
			}
		} else {
			nfp = w->fp;
		}
		/* the caller's rbx, as fp; unknown where the row does not say */
		nbx = w->bx;
		nbx_known = w->bx_known && (row.flags & UB_RF_BX_SAME);
		if ((row.flags & UB_RF_BX_SAVED) && cfa + (__s64)row.bx_off >= w->sp) {
			if (read_word(w, cfa + (__s64)row.bx_off, &nbx)) {
				count(UB_C_READ_FAULT, 1);
				return stop(w, S_READ_FAULT);
			}
			nbx_known = 1;
		}
		nsp = cfa;
		method = row.method;
	} else if (kind == R_NONE && w->is_return && py_trampoline_at(w->pc) &&
		   !(w->sp & 7) && in_stack(w, w->sp + 15) && !read_word(w, w->sp + 8, &npc)) {
		/* CPython's perf trampoline (-X perf): src/unwind/unwind_core.c */
		ra_at = w->sp + 8;
		nsp = w->sp + 16;
		nfp = w->fp;
		nbx = w->bx;
		nbx_known = w->bx_known;
		method = M_PLT;
	} else {
		/* the frame-pointer heuristic, accepted only into code */
		__u64 fp = w->fp;

		if (fp < w->sp || (fp & 7) || !in_stack(w, fp) || !in_stack(w, fp + 15))
			return stop(w, S_NO_INFO);
		if (read_word(w, fp, &nfp) || read_word(w, fp + 8, &npc))
			return stop(w, S_NO_INFO);
		if (!npc)
			return stop(w, S_NO_INFO);
		ra_at = fp + 8;
		if (npc == w->utramp)
			uret_orig(w, ra_at, &npc);
		kind = vma_at(w, npc);
		if (kind == -EAGAIN)
			return 1;
		if (kind == -EBUSY) {
			count(UB_C_MAPS_BUSY, 1);
			return stop(w, UB_STOP_MAPS_BUSY);
		}
		if (kind || !w->vexec)
			return stop(w, S_NO_INFO);
		nsp = fp + 16;
	}
	/* a pending uretprobe's trampoline in place of the return address */
	if (npc && npc == w->utramp && !exact && ra_at)
		uret_orig(w, ra_at, &npc);
	if (!npc)
		return stop(w, S_OUTERMOST);
	if (!exact && nsp <= w->sp)
		return stop(w, S_BAD_STEP);
	emit(w, npc, method, exact ? EXACT_PC : 0);
	if (w->defer)
		return 1;
	w->pc = npc;
	w->sp = nsp;
	w->fp = nfp;
	w->bx = nbx;
	w->bx_known = nbx_known;
	w->is_return = !exact;
	return 0;
}

/* bpf_loop's callback; the step itself is a global function, which the
 * verifier checks once */
static long step(__u32 i, void *ctx)
{
	return step_one(*(__u32 *)ctx) ? 1 : 0;
}

/* ---- the hot stack ------------------------------------------------------------------ */

/*
 * A task sampled again and again in the same call path (a CPU-bound loop)
 * has a new leaf each time, and the same frames above it. After the first
 * step, the rest of a walk is a function of the registers that step gave
 * (pc, sp, fp), the stack words it reads, the VMAs (unchanged while the mm's
 * mm_lock_seq is) and the rows (unchanged while files_gen is). So the task
 * keeps its last walk's state after the first step, every (address, word)
 * read after it and the frames it made; a walk whose first step ends in the
 * same state re-reads those addresses, and where every word is the same the
 * frames are the same: they are taken without a table lookup. One word
 * differing, or anything else, and the walk goes on as always.
 *
 * Written by the task's own walks, which an interrupt on its CPU can come
 * in the middle of: @ver is odd while it is written, and a reader that sees
 * it move takes nothing.
 */
struct hot {
	__u32 ver, nreads, n, stop;
	struct hot_state s;
	__u64 raddr[HOT_READS], rval[HOT_READS];
	__u64 words[2 * HOT_FRAMES];
};

/* A task's own state, in one task storage (one lookup an event, where
 * three maps took three): its open kernel entry, its VMA cache, its hot
 * stack */
struct task_all {
	struct ub_task t;
	struct vcache vc;
	struct hot hot;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_all);
} tasks SEC(".maps");

/* 1: w's walk finished from @h (frames, hash, stop). A global function:
 * verified once. */
__noinline int hot_take(struct walk *w, struct hot *h, __u32 seq)
{
	__u64 h1, h2, v, word;
	__u32 ver, nr, n;

	if (!w || !h)
		return 0;
	ver = h->ver;
	asm volatile("" ::: "memory");
	if ((ver & 1) || (seq & 1) || h->s.mm != w->s1.mm || h->s.seq != seq ||
	    h->s.gen != w->s1.gen || h->s.pc != w->pc || h->s.sp != w->sp || h->s.fp != w->fp ||
	    h->s.is_return != w->is_return || h->s.hi != w->hi || h->s.bx_known != w->bx_known ||
	    (w->bx_known && h->s.bx_used && h->s.bx != w->bx) ||
	    w->n != 2 || w->signals)
		return 0;
	nr = h->nreads;
	n = h->n;
	if (nr > HOT_READS || n < 2 || n > 2 + HOT_FRAMES)
		return 0;
	for (__u32 i = 0; i < HOT_READS; i++) {
		if (i >= nr)
			break;
		if (read_stack(w, h->raddr[i], &v) || v != h->rval[i])
			return 0;
	}
	h1 = w->h1;
	h2 = w->h2;
	for (__u32 i = 0; i < 2 * HOT_FRAMES; i++) {
		if (4 + i >= 2 * n)
			break;
		word = h->words[i];
		w->words[4 + i] = word;
		h1 = (h1 ^ word) * 0x9e3779b97f4a7c15ull;
		h1 ^= h1 >> 29;
		h2 = (h2 + word) * 0xc2b2ae3d27d4eb4full;
		h2 ^= h2 >> 31;
	}
	asm volatile("" ::: "memory");
	if (h->ver != ver)
		return 0; /* written meanwhile (the words may be torn) */
	w->h1 = h1;
	w->h2 = h2;
	w->stop = h->stop;
	w->n = n;
	w->done = 1;
	return 1;
}

/* 1: the task's last walk began as w's (the state after the first step),
 * so this one is worth keeping. 0: w's state is noted for the next walk,
 * and nothing is kept. Recording a walk's reads and keeping them cost
 * ~440 ns of a 4.0 us event on bench/record/kernel_ns.sh's write storm, whose
 * threads draw one of 4096 call paths per event and so never took one
 * (docs/PERFORMANCE.md); a loop sampled in one call path takes its hot
 * stack from its third walk on instead of its second. A global function:
 * verified once. */
__noinline int hot_again(struct walk *w, struct hot *h, __u32 seq)
{
	__u32 ver;

	if (!w || !h)
		return 0;
	ver = h->ver;
	if ((ver & 1) || (seq & 1))
		return 0; /* this interrupts a write */
	if (h->s.mm == w->s1.mm && h->s.seq == seq && h->s.gen == w->s1.gen &&
	    h->s.pc == w->s1.pc && h->s.sp == w->s1.sp && h->s.fp == w->s1.fp &&
	    h->s.is_return == w->s1.is_return && h->s.hi == w->s1.hi &&
	    h->s.bx_known == w->s1.bx_known &&
	    (!w->s1.bx_known || !h->s.bx_used || h->s.bx == w->s1.bx))
		return 1;
	h->ver = ver + 1;
	asm volatile("" ::: "memory");
	h->s = w->s1;
	h->s.seq = seq;
	h->n = 0; /* nothing to take: hot_take wants n >= 2 */
	h->nreads = 0;
	asm volatile("" ::: "memory");
	h->ver = ver + 2;
	return 0;
}

/* Keep w's finished walk in @h, if it can be taken again. */
__noinline int hot_keep(struct walk *w, struct hot *h, __u32 seq)
{
	__u32 ver, nr, n;

	if (!w || !h)
		return 0;
	nr = w->nreads;
	n = w->n;
	if (!w->rec || nr > HOT_READS || n < 2 || n > 2 + HOT_FRAMES || w->defer ||
	    w->stop == S_READ_FAULT || w->stop == UB_STOP_NOT_LOADED ||
	    w->stop == UB_STOP_MAPS_BUSY)
		return 0;
	ver = h->ver;
	if ((ver & 1) || (seq & 1))
		return 0; /* this interrupts a write */
	h->ver = ver + 1;
	asm volatile("" ::: "memory");
	h->s = w->s1;
	h->s.seq = seq;
	h->s.bx_used = w->bx_used;
	h->nreads = nr;
	h->n = n;
	h->stop = w->stop;
	for (__u32 i = 0; i < HOT_READS; i++) {
		if (i >= nr)
			break;
		h->raddr[i] = w->raddr[i];
		h->rval[i] = w->rval[i];
	}
	for (__u32 i = 0; i < 2 * HOT_FRAMES; i++) {
		if (4 + i >= 2 * n)
			break;
		h->words[i] = w->words[4 + i];
	}
	asm volatile("" ::: "memory");
	h->ver = ver + 2;
	return 1;
}

/* ---- Python frames ---------------------------------------------------------------- */

/*
 * A CPython thread's interpreted frames (issue 32), read at the event with
 * the native walk and sent in its stack record: the interpreter keeps them
 * on the heap, where no stack copy reaches, and they change as soon as the
 * thread runs. Every address comes from the process: a read that faults
 * ends the chain with its reason, and every loop is bounded.
 */
#define PY_FIND_STEPS 256 /* interpreters + thread states visited per search */

/* Whether thread state @ts runs on this thread (@tid): where it has a
 * cframe (3.11, 3.12), a local of the innermost C-level eval call that
 * runs it, that cframe lies on this thread's stack; its native id is the
 * thread that made it, not always the one running it (3.11/3.12's
 * _xxsubinterpreters runs a sub-interpreter's code in any thread on the
 * thread state the main thread made). 3.13 (no cframe) binds a thread
 * state to the thread that runs it: the id. *@key: the cframe. */
static __always_inline int py_ts_mine(struct walk *w, __u64 ts, __u32 tid, __u64 *key)
{
	__u64 v;

	*key = 0;
	if (!(w->py.flags & UB_PYC_CFRAME))
		return !read_user(ts + w->py.ts_native_tid, &v) && v == tid;
	if (read_user(ts + w->py.ts_cframe, key))
		return 0;
	return *key >= w->py_lo && (!w->py_hi || *key < w->py_hi);
}

/* One step of the search for this thread's thread states: every
 * interpreter's list, each match kept (up to PY_CHAINS) */
static long py_find_cb(__u32 i, void *ctx)
{
	__u32 slot = *(__u32 *)ctx, k;
	struct walk *w = bpf_map_lookup_elem(&walks, &slot);
	__u64 cf = 0;

	if (!w)
		return 1;
	if (!w->py_ts) {
		/* the interpreter's threads, then the next interpreter */
		if (!w->py_interp || read_user(w->py_interp + w->py.is_threads_head, &w->py_ts))
			return 1;
		w->py_ninterp++;
		if (read_user(w->py_interp + w->py.is_next, &w->py_interp))
			w->py_interp = 0;
		return 0;
	}
	if (py_ts_mine(w, w->py_ts, w->py_tid, &cf)) {
		k = w->py_nm;
		if (k >= PY_CHAINS)
			return 1;
		w->py_m[k] = w->py_ts;
		w->py_key[k] = cf;
		w->py_nm = k + 1;
	}
	if (read_user(w->py_ts + w->py.ts_next, &w->py_ts))
		return 1;
	return 0;
}

/* 3.12+ without a cframe: a chain's key is its newest entry shim, a local
 * of the innermost C-level eval call that runs it (on the C stack of the
 * thread that runs it); w->pyf from the chain's newest frame */
static long py_key_cb(__u32 i, void *ctx)
{
	__u32 slot = *(__u32 *)ctx, k;
	struct walk *w = bpf_map_lookup_elem(&walks, &slot);
	__u8 owner = 0;

	if (!w || !w->pyf)
		return 1;
	if (bpf_probe_read_user(&owner, 1, (const void *)(w->pyf + w->py.fr_owner)))
		return 1;
	if (owner == w->py.owner_cstack) {
		k = w->py_kc;
		if (k < PY_CHAINS)
			w->py_key[k] = w->pyf;
		return 1;
	}
	if (read_user(w->pyf + w->py.fr_previous, &w->pyf))
		return 1;
	return 0;
}

/* The newest frame of thread state @ts into w->pyf; 0, or 1 on a fault */
static __always_inline int py_chain_start(struct walk *w, __u64 ts)
{
	__u64 cf;

	w->pyf = 0;
	if (w->py.flags & UB_PYC_CFRAME)
		return read_user(ts + w->py.ts_cframe, &cf) ||
		       (cf && read_user(cf + w->py.cf_current, &w->pyf));
	return read_user(ts + w->py.ts_current_frame, &w->pyf);
}

/* A thread with thread states in several interpreters (it called into a
 * sub-interpreter): the chains on its C stack, ordered by their key, the
 * newest (lowest address) first, as snapshot orders them */
static __always_inline void py_order(struct walk *w, __u32 *slot)
{
	__u64 m, k;
	__u32 n = 0;

	for (__u32 c = 0; c < PY_CHAINS; c++) {
		if (c >= w->py_nm)
			break;
		if (!(w->py.flags & UB_PYC_CFRAME)) {
			w->py_key[c] = 0;
			w->py_kc = c;
			if (!py_chain_start(w, w->py_m[c]) && (w->py.flags & UB_PYC_CSTACK))
				bpf_loop(UB_MAX_PY_FRAMES, py_key_cb, slot, 0);
		}
		k = w->py_key[c];
		if (k < w->py_lo || (w->py_hi && k >= w->py_hi))
			continue; /* not on this stack (or not found) */
		if (n < PY_CHAINS) {
			w->py_m[n] = w->py_m[c];
			w->py_key[n] = k;
			n++;
		}
	}
	/* insertion sort of up to PY_CHAINS */
	for (__u32 a = 1; a < PY_CHAINS; a++) {
		if (a >= n)
			break;
		for (__u32 b = a; b > 0 && b < PY_CHAINS; b--) {
			if (w->py_key[b - 1] <= w->py_key[b])
				break;
			k = w->py_key[b - 1];
			m = w->py_m[b - 1];
			w->py_key[b - 1] = w->py_key[b];
			w->py_m[b - 1] = w->py_m[b];
			w->py_key[b] = k;
			w->py_m[b] = m;
		}
	}
	w->py_nm = n;
}

static __always_inline __u64 pybuf_u64(struct walk *w, __u32 off)
{
	__u64 v;

	off &= UB_PY_FR_SPAN - 1;
	if (off > UB_PY_FR_SPAN - 8)
		return 0;
	__builtin_memcpy(&v, &w->pybuf[off], 8);
	return v;
}

static __always_inline long py_stop(struct walk *w, __u32 why)
{
	w->pystop = why;
	return 1;
}

/* One frame of the chain: a Python frame appended after the native ones,
 * or an entry shim (3.12+), which marks the frame above it */
static long py_frame_cb(__u32 i, void *ctx)
{
	__u32 slot = *(__u32 *)ctx;
	struct walk *w = bpf_map_lookup_elem(&walks, &slot);
	__u64 code, instr, prev, fp = 0, entry = 0;
	__u32 span, k, j;
	__u8 owner;

	if (!w)
		return 1;
	if (!w->pyf)
		return py_stop(w, UB_PYSTOP_END);
	span = w->py.fr_span;
	if (span < 8 || span > UB_PY_FR_SPAN)
		return py_stop(w, UB_PYSTOP_BAD);
	if (bpf_probe_read_user(w->pybuf, span, (const void *)w->pyf))
		return py_stop(w, UB_PYSTOP_FAULT);
	owner = w->pybuf[w->py.fr_owner & (UB_PY_FR_SPAN - 1)];
	prev = pybuf_u64(w, w->py.fr_previous);
	if ((w->py.flags & UB_PYC_CSTACK) && owner == w->py.owner_cstack) {
		k = w->n + w->npy;
		if (w->npy > w->py_c0 && k >= 1 && k <= UB_MAX_FRAMES) {
			j = k - 1;
			if (j < UB_MAX_FRAMES) {
				w->words[2 * j + 1] |= UB_PY_ENTRY;
				hash_word(w, 0xe000000000000000ull | j);
			}
		}
		w->pyf = prev;
		return 0;
	}
	if (owner > 3)
		return py_stop(w, UB_PYSTOP_BAD);
	k = w->n + w->npy;
	if (k >= UB_MAX_FRAMES || w->npy >= UB_MAX_PY_FRAMES)
		return py_stop(w, UB_PYSTOP_DEPTH);
	code = pybuf_u64(w, w->py.fr_code);
	if (w->py.flags & UB_PYC_TAGGED)
		code &= ~3ull; /* the code object itself, as user space reads it */
	instr = pybuf_u64(w, w->py.fr_instr);
	if ((w->py.flags & UB_PYC_IS_ENTRY) && w->pybuf[w->py.fr_is_entry & (UB_PY_FR_SPAN - 1)])
		entry = UB_PY_ENTRY;
	if (bpf_probe_read_user(&fp, 4, (const void *)(code + w->py.co_firstlineno)))
		return py_stop(w, UB_PYSTOP_FAULT);
	w->words[2 * k] = (code & UB_PY_ADDR_MASK) | (fp & 0xffff) << UB_PY_FP_SHIFT;
	w->words[2 * k + 1] = (instr & UB_PY_ADDR_MASK) | (__u64)owner << UB_PY_OWNER_SHIFT | entry;
	hash_word(w, w->words[2 * k]);
	hash_word(w, w->words[2 * k + 1]);
	w->npy++;
	w->pyf = prev;
	return 0;
}

/* The thread's PyThreadStates into w->py_m (w->py_nm of them): the
 * cached one while it still says this thread and the process still has
 * one interpreter, else a search of every interpreter's thread list */
static __always_inline void py_tstates(struct walk *w, __u32 *slot, __u32 tid)
{
	struct py_ts_memo *cached = bpf_map_lookup_elem(&pytstates, &tid), memo;
	__u64 head, key;

	w->py_nm = 0;
	if (read_user(w->py.runtime + w->py.rt_interp_head, &head))
		return;
	if (cached && cached->head == head) {
		memo = *cached;
		if (py_ts_mine(w, memo.ts, tid, &key)) {
			count(UB_C_PY_TS_CACHED, 1);
			w->py_m[0] = memo.ts;
			w->py_nm = 1;
			return;
		}
	}
	w->py_tid = tid;
	w->py_ts = 0;
	w->py_ninterp = 0;
	w->py_interp = head;
	bpf_loop(PY_FIND_STEPS, py_find_cb, slot, 0);
	if (w->py_nm == 1 && w->py_ninterp == 1) {
		memo.ts = w->py_m[0];
		memo.head = head;
		bpf_map_update_elem(&pytstates, &tid, &memo, BPF_ANY);
	} else if (w->py_nm > 1) {
		py_order(w, slot);
	}
}

/* The Python frames of the current thread into w->words after its native
 * frames (w->npy, w->pystop), when its process is in pyprocs */
__noinline int py_walk(struct walk *w, __u32 slot, __u32 tgid, __u32 tid)
{
	const struct ub_pyconf *c;

	if (!w)
		return 0;
	w->npy = 0;
	w->py_c0 = 0;
	w->pystop = UB_PYSTOP_NONE;
	if (!py_any)
		return 0;
	c = bpf_map_lookup_elem(&pyprocs, &tgid);
	if (!c)
		return 0;
	w->py = *c;
	w->py_tgid = tgid;
	count(UB_C_PY_WALKS, 1);
	py_tstates(w, &slot, tid);
	if (!w->py_nm) {
		count(UB_C_PY_NO_THREAD, 1);
		w->pystop = UB_PYSTOP_NO_THREAD;
	}
	/* each chain after the one before, innermost first; the run of
	 * Python frames an eval call runs never spans two chains */
	for (__u32 c = 0; c < PY_CHAINS; c++) {
		if (c >= w->py_nm)
			break;
		w->py_c0 = w->npy;
		if (py_chain_start(w, w->py_m[c])) {
			w->pystop = UB_PYSTOP_FAULT;
			break;
		}
		w->pystop = UB_PYSTOP_DEPTH; /* unless the chain ends first */
		bpf_loop(2 * UB_MAX_PY_FRAMES, py_frame_cb, &slot, 0);
		if (w->pystop != UB_PYSTOP_END)
			break;
	}
	if (w->pystop == UB_PYSTOP_DEPTH)
		count(UB_C_PY_STOP_DEPTH, 1);
	else if (w->pystop == UB_PYSTOP_FAULT)
		count(UB_C_PY_STOP_FAULT, 1);
	else if (w->pystop == UB_PYSTOP_BAD)
		count(UB_C_PY_STOP_BAD, 1);
	count(UB_C_PY_FRAMES, w->npy);
	/* code addresses are the process's own: its stacks are its own; a
	 * cut native walk places them otherwise (its stop is in the record) */
	hash_word(w, w->pystop | (__u64)(w->stop != S_OUTERMOST) << 32);
	if (w->npy)
		hash_word(w, tgid);
	return 0;
}

/* ---- stacks, stored once ----------------------------------------------------------- */

#define SEND_CLASS(CAP)                                                                        \
	do {                                                                                   \
		struct ub_stack *s = bpf_ringbuf_reserve(&rb, 16 + 16 * (CAP), 0);              \
		if (!s) {                                                                      \
			count(UB_C_STACK_LOST, 1);                                             \
			if (slot)                                                              \
				slot->k1 = 0; /* ours since the claim: free again */            \
			return 0;                                                              \
		}                                                                              \
		id = __sync_fetch_and_add(&next_stack_id, 1) + 1;                              \
		s->type = UB_REC_STACK;                                                        \
		s->npy = (__u8)w->npy;                                                         \
		s->nr = (__u16)(n - w->npy);                                                   \
		s->id = id;                                                                    \
		s->pystop = (__u8)w->pystop;                                                   \
		s->nstop = (__u8)w->stop;                                                      \
		__builtin_memset(s->pad1, 0, sizeof(s->pad1));                                 \
		s->pypid = w->npy ? w->py_tgid : 0;                                            \
		bpf_probe_read_kernel(s->words, 16 * (CAP), w->words);                         \
		if (slot) {                                                                    \
			slot->k2id = k2 | id;                                                  \
			asm volatile("" ::: "memory");                                         \
			slot->k1 = k1;                                                         \
		}                                                                              \
		bpf_ringbuf_submit(s, w->npy ? py_wake_flags(wake_flags()) : wake_flags());  \
		count(UB_C_STACKS, 1);                                                         \
		count(UB_C_STACK_BYTES, 16 + 16 * (CAP));                                      \
		return id;                                                                     \
	} while (0)

/* The slot of key (k1, k2) in stack_ids: 1 and *id where it is there,
 * else 0 and *free, the first empty slot on its probe sequence (NULL: none) */
static __always_inline int st_find(__u64 k1, __u64 k2, __u32 at, __u32 *id,
				   struct st_slot **free)
{
	struct st_slot *s;
	__u64 v;

	*free = NULL;
	for (__u32 i = 0; i < ST_PROBE; i++) {
		__u32 k = (at + i) & (ST_SLOTS - 1);

		s = bpf_map_lookup_elem(&stack_ids, &k);
		if (!s)
			return 0;
		v = *(volatile __u64 *)&s->k1;
		asm volatile("" ::: "memory");
		if (v == k1) {
			v = s->k2id;
			if ((v & ~0xffffffffull) == k2) {
				*id = (__u32)v;
				return 1;
			}
		} else if (!v) {
			*free = s;
			return 0;
		}
	}
	return 0;
}

/* The id of w's stack; its frames go to user space the first time only.
 * The record is reserved before the id is published, so no event that
 * names the id can come before it in the ring buffer. 0: not sent. A
 * stack with no slot (the table full along its probe sequence, or its
 * slot claimed by another CPU in between) is sent with a new id each
 * time: the same frames under two ids, never an id for other frames. */
__noinline __u32 stack_id(struct walk *w)
{
	struct st_slot *slot;
	__u64 k1, k2;
	__u32 id, n;

	if (!w)
		return 0;
	if (w->npy > UB_MAX_PY_FRAMES)
		return 0;
	n = w->n + w->npy;
	if (!n || n > UB_MAX_FRAMES)
		return 0;
	k1 = w->h1 ^ n ^ ((__u64)w->npy << 32);
	if (k1 <= ST_BUSY)
		k1 = ST_BUSY + 1; /* 0 and 1 are states: their stacks share a key */
	k2 = w->h2 & ~0xffffffffull;
	if ((UB_PROF & 16) && st_find(k1, k2, (__u32)w->h2, &id, &slot))
		id = 0;
	if (st_find(k1, k2, (__u32)w->h2, &id, &slot))
		return id;
	if (!slot)
		count(UB_C_STACKMAP_FULL, 1);
	else if (__sync_val_compare_and_swap(&slot->k1, 0, ST_BUSY) != 0)
		slot = NULL;
	if (n <= 8)
		SEND_CLASS(8);
	if (n <= 24)
		SEND_CLASS(24);
	if (n <= 64)
		SEND_CLASS(64);
	SEND_CLASS(UB_MAX_FRAMES);
}

/* ---- a copy, when the walk could not finish ----------------------------------------- */

/* The event's user registers, the entry tag and the walk's slot (finish()) */
struct regs_in {
	__u64 ip, sp, bp, tag;
	__u32 user_mode, slot;
	__u64 bx; /* rbx: for an rbx-based CFA (CFI rows, rare) */
	__u32 keep; /* 1: @e filled, not sent (an off-CPU interval's switch-out:
		       sent at its switch-in) */
	__u32 pad;
};

/* The top of the stack, page by page up to the first page that cannot be
 * read without faulting. */
static __always_inline __u32 copy_stack(struct ub_copy *c, __u64 sp)
{
	__u32 got = 4096 - (__u32)(sp & 4095), off;

	if (got > 4096 || bpf_probe_read_user(c->data, got, (const void *)sp))
		return 0;
	for (int i = 0; i < 4; i++) {
		off = got;
		if (off >= UB_COPY_BYTES)
			break;
		if (bpf_probe_read_user(c->data + off, 4096, (const void *)(sp + off)))
			break;
		got = off + 4096;
	}
	return got > UB_COPY_BYTES ? UB_COPY_BYTES : got;
}

/* The copy unwound in user space, which has no list of pending uretprobes:
 * each slot of the copy holding the trampoline that a return_instance
 * replaced gets the real return address back, as uret_orig() gives it to
 * the kernel walk. */
static __always_inline void copy_uret(struct ub_copy *c, const struct walk *w, __u64 sp,
				      __u32 size)
{
	struct return_instance *ri = (void *)w->uri0;
	__u64 st, off, word;

	for (int i = 0; i < 16 && ri; i++) {
		st = BPF_CORE_READ(ri, stack);
		off = st - sp;
		if (st >= sp && off + 8 <= size && off <= UB_COPY_BYTES - 8) {
			word = *(__u64 *)(c->data + off);
			if (word == w->utramp)
				*(__u64 *)(c->data + off) = BPF_CORE_READ(ri, orig_ret_vaddr);
		}
		ri = BPF_CORE_READ(ri, next);
	}
}

/* Copies are 22 KiB: while many walks stop at once (a program's tables
 * still loading), they would fill the ring and take the events with them.
 * Past half of the ring, the event keeps the part of its stack the walk
 * made (stop reason not-loaded). */
static __always_inline int copy_room(void)
{
	if (copy_limit &&
	    (copy_limit == 1 || bpf_ringbuf_query(&rb, BPF_RB_AVAIL_DATA) >= copy_limit)) {
		count(UB_C_COPY_SKIPPED, 1);
		return 0;
	}
	return 1;
}

/* The copy of the stack, with the Python frames py_walk() put after w's
 * native ones (which user space makes anew from the copy).
 *
 * send_copy(), py_walk() and stack_id() are global functions: the verifier
 * checks each once, from its arguments' types alone, and takes it as valid
 * at every call. As static __noinline functions each was verified again in
 * every state that reached its call in finish(): 122,705 instructions
 * processed to load ustack_sample on 6.18, 65,367 as global functions
 * (~120 -> ~50 ms; docs/PERFORMANCE.md, USTACK_BPF_VERIFIER_STATS). They
 * check their pointers for NULL and their indexes against their bounds
 * themselves, as a global function must. */
__noinline int send_copy(struct ub_event *e, const struct regs_in *r, struct walk *w)
{
	struct ub_copy *c;
	__u32 n, npy;

	if (!e || !r || !w)
		return 0;
	n = w->n;
	npy = w->npy;
	if (n > UB_MAX_FRAMES || npy > UB_MAX_PY_FRAMES || n + npy > UB_MAX_FRAMES)
		npy = 0;
	c = bpf_ringbuf_reserve(&rb, sizeof(*c), 0);
	if (!c) {
		count(UB_C_COPY_LOST, 1);
		return 0;
	}
	c->type = UB_REC_COPY;
	c->npy = (__u8)npy;
	c->pystop = (__u8)w->pystop;
	c->pad = 0;
	/* the words past npy are not read */
	bpf_probe_read_kernel(c->py, 16 * npy, &w->words[2 * n]);
	c->cpu = e->cpu;
	c->pid = e->pid;
	c->tid = e->tid;
	c->time = e->time;
	c->cookie = e->cookie;
	c->ip = r->ip;
	c->sp = r->sp;
	c->bp = r->bp;
	c->bx = r->bx;
	c->size = copy_stack(c, r->sp);
	/* the size read back from the record: a value the verifier does not
	 * know, so copy_uret() is verified once, not once for each size
	 * copy_stack() can return (56,256 processed instructions, not 65,367) */
	if (w->utramp)
		copy_uret(c, w, r->sp, *(volatile __u32 *)&c->size);
	bpf_ringbuf_submit(c, npy ? py_wake_flags(wake_flags()) : wake_flags());
	count(UB_C_COPIES, 1);
	if (npy)
		count(UB_C_PY_COPIES, 1);
	count(UB_C_COPY_BYTES, sizeof(*c));
	return 1;
}

/* ---- the event ---------------------------------------------------------------------- */

/*
 * The last answer of `targets` on this CPU, valid while targets_gen has
 * not moved: a tracepoint's program runs for every process's events, mostly
 * the same process's one after another, and the hash lookup was ~4% of an
 * event on bench/record/kernel_ns.sh's storm (docs/PERFORMANCE.md). Every
 * writer of `targets` bumps targets_gen after its write (the fork, exec and
 * exit programs below, ustack_bpf__add_target()): an answer read before a
 * write is kept under the generation before it, so no event after the bump
 * takes it. Per CPU and not per slot: an interrupt in the middle of this
 * may write an answer of its own, so the answer is one 8-byte word, read
 * and written whole: tgid << 32 | (generation + 1, 31 bits) << 1 | traced.
 */
__u32 targets_gen = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tmemos SEC(".maps");

static __always_inline void targets_changed(void)
{
	__sync_fetch_and_add(&targets_gen, 1);
}

static __always_inline int traced(__u32 tgid)
{
	__u32 zero = 0, on;
	__u64 *m, key, v;
	__u8 *st;

	if (trace_all)
		return tgid != self_tgid;
	key = (__u64)tgid << 32 | (__u64)((*(volatile __u32 *)&targets_gen + 1) & 0x7fffffff) << 1;
	asm volatile("" ::: "memory");
	m = bpf_map_lookup_elem(&tmemos, &zero);
	if (m) {
		v = *(volatile __u64 *)m;
		if ((v & ~1ull) == key)
			return v & 1;
	}
	st = bpf_map_lookup_elem(&targets, &tgid);
	on = st && *st == UB_TARGET_ACTIVE;
	if (m)
		*(volatile __u64 *)m = key | on;
	return on;
}

/* The kernel's cookie recurrence (docs/deferred.md), on the counter of
 * the CPU this runs on and with that CPU's number: not the event's, as a
 * sample's walk runs later in task work, on whatever CPU the task resumes
 * on (after a preemption at the interrupt's return, often another), and
 * CPU B's counter under CPU A's number repeats a cookie of A's. The add is
 * atomic: an interrupt's walk on this CPU may come between a read and a
 * write of the counter. Either gave two threads' entries one cookie. */
static __always_inline __u64 next_cookie(void)
{
	__u32 zero = 0, *ctr = bpf_map_lookup_elem(&cookie_ctr, &zero), cnt;

	if (!ctr)
		return 0;
	cnt = (__sync_fetch_and_add(ctr, 2) + 2) | 1;
	return ((__u64)cnt << 32) | (bpf_get_smp_processor_id() + 1);
}

struct uctx {
	__u64 ip, sp, bp, bx;
	int have; /* the event's own user registers (a user-mode sample) */
};

/* The unwind of a user context and the event record: at the event for
 * tracepoints, in the interrupt or on the way back to user space for
 * samples (below). @user_mode: the event is its own user context (a
 * sample taken in user mode, or a system-call tracepoint, which perf too
 * reports with the user registers): nothing joins it. @slot: the walk's
 * scratch (SLOT_*); SLOT_IRQ walks only with the VMA cache and returns
 * -EAGAIN, having sent nothing, where that is not enough.
 *
 * A global function (the verifier checks it once, not at each caller);
 * @r: the user registers, the entry tag and the walk's slot.
 *
 * Over 100 lines on purpose: it is most of what the verifier checks of
 * every program that unwinds (888 BPF instructions; about 12,300 of the
 * 30,109 instructions processed to load ustack_sample, 3 s, on 6.18,
 * `bpftool -d prog loadall`), because it holds the task's storage (ts,
 * vc, hot: pointers into task storage, NULL-checked once here) from the
 * shared-entry test through the walk to the record. Split into global
 * functions, each part would get those pointers as plain memory that may
 * be NULL and check them again, and could not be given `task` (a trusted
 * BTF pointer) without asking for it anew; into static __noinline parts,
 * each part is verified again at each of its call sites and for each
 * state (already 4 call sites of finish() in ustack_sample alone). Its
 * stack frame is 144 bytes (the verifier's "stack depth" of ustack_sample:
 * 272 + 144 + 64 + 16 + 80 + 48 + 64 + 0 + 0 + 40 + 40 + 32, for the
 * program, finish, vma_of, vma_cb, step_one, find_row, hot_take, step,
 * hot_keep, send_copy, stack_id, deferred_cb), and every new frame on the
 * path to vma_cb adds its own, rounded up, to the depth the verifier
 * bounds per call chain. As for step_one(), an __always_inline split is
 * a change to prove on both kernels, not a tidying. */
__noinline int finish(struct ub_event *e, struct regs_in *r)
{
	__u64 ip, sp, bp, tag, bx;
	__u32 slot, keep;
	int user_mode;
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm;
	struct ub_event *ev;
	struct task_all *ta;
	struct ub_task *ts;
	struct vcache *vc;
	struct hot *hot;
	struct walk *w;
	__u32 seq, ustack;
	int same, copy;

	if (!e || !r)
		return 0;
	ip = r->ip;
	sp = r->sp;
	bp = r->bp;
	tag = r->tag;
	slot = r->slot;
	user_mode = r->user_mode;
	bx = r->bx;
	keep = r->keep;

	if (!(e->flags & UB_EV_USER))
		goto send;
	ta = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	ts = ta ? &ta->t : NULL;
	/* The registers of the thread's last kernel entry: this may be the
	 * same entry (a second tracepoint, a second sleep in one system call)
	 * or the next one with the same registers and top stack word (a loop
	 * calling one wrapper from two callers at one depth: nothing on a
	 * stock kernel tells the two apart). Walked either way; the entry's
	 * cookie is taken when the stack is the same too (below). */
	same = ts && ts->valid && !user_mode && ts->pid == e->pid && ts->ip == ip && ts->sp == sp &&
	       ts->bp == bp && ts->tag == tag;

	if (UB_PROF & 64)
		goto send;
	w = bpf_map_lookup_elem(&walks, &slot);
	if (!w) {
		if (slot == SLOT_IRQ)
			return -EAGAIN;
		e->flags &= ~UB_EV_USER;
		goto send;
	}
	w->cache_only = slot == SLOT_IRQ;
	w->defer = 0;
	/* loaded once: each load of a pointer through a trusted BTF pointer
	 * makes the verifier look up "<type>__safe_trusted" and its kin by
	 * name, a linear search of the kernel's BTF, in every state that
	 * reaches it (on 6.18, six loads of task->mm here took 40 of the
	 * 120 ms that loading ustack_sample or ustack_offcpu cost) */
	mm = task->mm;
	w->vc_ok = 0;
	w->vc_dirty = 0;
	seq = mm_seq(mm);
	vc = ta ? &ta->vc : NULL;
	if (vc && !vc->busy && !(seq & 1)) {
		if (UB_PROF & 4)
			w->vc = *vc;
		/* the entries in use only: a few of VC_N (the program, libc,
		 * the stack), read from memory the task may have last
		 * written on another CPU */
		w->vc.mm = vc->mm;
		w->vc.seq = vc->seq;
		w->vc.n = vc->n;
		w->vc.next = vc->next;
		for (int i = 0; i < VC_N; i++) {
			if (i >= w->vc.n)
				break;
			w->vc.e[i] = vc->e[i];
		}
		if (w->vc.mm == (__u64)mm && w->vc.seq == seq && w->vc.n <= VC_N) {
			w->vc_ok = 1;
		} else if (!w->cache_only) {
			/* start the cache anew for the mm as it is now */
			w->vc.mm = (__u64)mm;
			w->vc.seq = seq;
			w->vc.n = 0;
			w->vc.next = 0;
			w->vc_ok = 1;
		}
	}
	if (w->cache_only && !w->vc_ok)
		return -EAGAIN;
	w->pc = ip;
	w->sp = sp;
	w->fp = bp;
	w->bx = bx;
	w->bx_known = 1;
	w->lo = sp;
	w->hi = 0;
	w->h1 = 0x243f6a8885a308d3ull;
	w->h2 = 0x13198a2e03707344ull;
	w->n = 0;
	w->stop = S_DEPTH;
	w->done = 0;
	w->is_return = 0;
	w->signals = 0;
	w->win_len = 0;
	w->vend = 0;
	w->s1.gen = files_gen; /* before vma_of(), whose files memo it keys */
	/* the stack's own mapping bounds the walk as the copy does */
	if (!vma_of(w, sp))
		w->hi = w->vend;
	w->py_lo = sp;
	w->py_hi = w->hi;
	w->vend = 0;
	w->rec = 0;
	w->nreads = 0;
	w->s1.mm = (__u64)mm;
	/* with uretprobes pending, a return address can come from the
	 * kernel (uret_orig()) and not from the stack words the hot stack
	 * compares: no hot stack then */
	uret_init(w, task, mm);
	hot = seq & 1 || !ta || w->uri ? NULL : &ta->hot;
	if (UB_PROF & 128)
		hot = NULL;
	if (!w->defer)
		emit(w, ip, M_REGS, EXACT_PC);
	if (!w->defer)
		step_one(slot);
	if ((UB_PROF & 8) && !w->defer && !w->done)
		hot_take(w, hot, seq);
	if (!w->defer && !w->done && !hot_take(w, hot, seq)) {
		w->s1.pc = w->pc;
		w->s1.sp = w->sp;
		w->s1.fp = w->fp;
		w->s1.hi = w->hi;
		w->s1.bx = w->bx;
		w->s1.bx_known = w->bx_known;
		w->s1.is_return = w->is_return;
		w->s1.bx_used = 0; /* not known before the walk: see hot_keep() */
		w->rec = hot && w->n == 2 && !w->signals && hot_again(w, hot, seq);
		w->bx_used = 0; /* the steps after the first */
		bpf_loop(UB_MAX_FRAMES, step, &slot, 0);
	} else if (w->done && !w->defer && w->n > 2) {
		count(UB_C_HOT, 1);
	}
	/* the mappings moved during the walk: done again in task context */
	if (w->cache_only && (w->defer || mm_seq(mm) != seq))
		return -EAGAIN;
	if (w->rec && !w->defer && mm_seq(mm) == seq)
		hot_keep(w, hot, seq);
	if ((UB_PROF & 8) && w->rec && !w->defer && mm_seq(mm) == seq)
		hot_keep(w, hot, seq);
	if (w->vc_dirty && vc && mm_seq(mm) == seq) {
		/* an interrupt on this CPU may read it: never half written */
		w->vc.busy = 1;
		vc->busy = 1;
		asm volatile("" ::: "memory");
		*vc = w->vc;
		asm volatile("" ::: "memory");
		vc->busy = 0;
	}
	count(w->cache_only ? UB_C_IRQ_WALKS : UB_C_UNWINDS, 1);

	if (user_mode)
		e->flags |= UB_EV_USER_MODE; /* its entry closes with it */
	e->stop = (__u8)w->stop;
	e->nr = (__u8)w->n;
	/* the Python frames first, for a copy too: read now, as the
	 * thread's chain changes as soon as it runs, and it needs no unwind
	 * table */
	py_walk(w, slot, e->pid, e->tid);
	copy = (w->stop == UB_STOP_NOT_LOADED || w->stop == UB_STOP_MAPS_BUSY) && copy_room();
	ustack = copy ? 0 : stack_id(w);
	if (same && !copy && ts && ustack == ts->ustack && e->stop == ts->stop && e->nr == ts->nr) {
		/* the entry's registers and its stack: its cookie. Two entries
		 * whose stacks are the same may share one too, rightly so:
		 * each event's stack is the cookie's. (A copy is unwound in
		 * user space: it opens an entry of its own.) */
		e->cookie = ts->cookie;
		e->ustack = ustack;
		count(UB_C_SHARED, 1);
		goto send;
	}
	e->cookie = next_cookie();
	e->flags |= UB_EV_NEW_ENTRY;
	if (copy && send_copy(e, r, w))
		e->flags |= UB_EV_COPY;
	else
		e->ustack = copy ? stack_id(w) : ustack;
	if (ts) {
		ts->ip = ip;
		ts->sp = sp;
		ts->bp = bp;
		ts->tag = tag;
		ts->pid = e->pid;
		ts->cookie = e->cookie;
		ts->ustack = e->ustack;
		ts->stop = e->stop;
		ts->nr = e->nr;
		/* a user-mode sample is its own context: nothing joins it */
		ts->valid = !user_mode;
	}
send:
	if (keep)
		return 0;
	ev = bpf_ringbuf_reserve(&rb, sizeof(*ev), 0);
	if (!ev) {
		count(UB_C_LOST, 1);
		return 0;
	}
	*ev = *e;
	bpf_ringbuf_submit(ev, wake_flags());
	return 0;
}

__u32 next_kstack_seq = 0;

/* The event's kernel stack sent whole, kstacks having no room for it (its
 * bucket holds another stack): UB_EV_KSTACK, or 0 where the ring buffer is
 * full too (counted: the event goes without its kernel frames). The same
 * callchain bpf_get_stackid() takes. No wakeup: the event follows. */
static __always_inline __u8 kstack_whole(void *ctx, struct ub_event *e)
{
	struct ub_kstack *k = bpf_ringbuf_reserve(&rb, sizeof(*k), 0);
	long n;

	if (!k) {
		count(UB_C_KSTACK_FAIL, 1);
		return 0;
	}
	n = bpf_get_stack(ctx, k->ips, sizeof(k->ips), 0);
	if (n < (long)sizeof(k->ips[0])) {
		bpf_ringbuf_discard(k, BPF_RB_NO_WAKEUP);
		count(UB_C_KSTACK_FAIL, 1);
		return 0;
	}
	k->type = UB_REC_KSTACK;
	k->pad[0] = k->pad[1] = k->pad[2] = 0;
	k->nr = (__u32)(n / sizeof(k->ips[0]));
	k->tid = e->tid;
	k->seq = __sync_fetch_and_add(&next_kstack_seq, 1) + 1;
	e->kseq = k->seq;
	bpf_ringbuf_submit(k, BPF_RB_NO_WAKEUP);
	count(UB_C_KSTACK_INLINE, 1);
	return UB_EV_KSTACK;
}

/* The event's record without its user stack, and the user registers.
 * 0: not traced. */
static __always_inline int collect(void *ctx, const struct uctx *u, __u32 event, int kstack,
				   struct ub_event *e, struct regs_in *r)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u8 kflag = 0;
	long kst;

	if (!traced(tgid))
		return 0;
	/* stamped before the kernel stack walk: the event's time is when it
	 * happened, not when its kernel stack was taken */
	e->time = bpf_ktime_get_ns();
	count(UB_C_EVENTS, 1);
	kst = !kstack || u->have ? -1 : bpf_get_stackid(ctx, &kstacks, 0);
	e->type = UB_REC_EVENT;
	e->cpu = bpf_get_smp_processor_id();
	e->pid = tgid;
	e->tid = (__u32)id;
	e->event = event;
	e->kstack = (__s32)kst;
	if (kstack && !u->have && kst < 0)
		kflag = kstack_whole(ctx, e);
	e->flags = kflag;
	if (!task->mm)
		return 1; /* a kernel thread: no user stack */
	if (u->have) {
		r->ip = u->ip;
		r->sp = u->sp;
		r->bp = u->bp;
		r->bx = u->bx;
	} else {
		/* the user registers saved at kernel entry; uapi names, the
		 * kernel's struct pt_regs has the same layout. Loads from the
		 * helper's BTF pointer, which the verifier checks against the
		 * kernel's type and makes fault-safe: four helper calls cost
		 * ~100 ns an event (docs/PERFORMANCE.md) */
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

		r->ip = regs->rip;
		r->sp = regs->rsp;
		r->bp = regs->rbp;
		r->bx = regs->rbx;
	}
	if (!r->ip && !r->sp)
		return 1;
	/* the tag is for the entry test, which a user-mode sample skips */
	if (!u->have && !r->user_mode)
		read_user(r->sp, &r->tag);
	e->flags = UB_EV_USER | kflag;
	return 1;
}

extern void bpf_preempt_disable(void) __ksym __weak;
extern void bpf_preempt_enable(void) __ksym __weak;

/* A tracepoint's or a system call's event: cookie = event index, with
 * UB_TP_SYSCALL for a system call. A system-call event has no kernel stack,
 * as in perf (whose sample carries the user registers): only the entry path
 * that leads to the tracepoint would be there. */
static __always_inline void tp_event(void *ctx, __u64 cookie)
{
	struct regs_in r = { .slot = SLOT_TP, .user_mode = !!(cookie & UB_TP_SYSCALL) };
	struct ub_event e = {};
	struct uctx u = {};

	if (!collect(ctx, &u, (__u32)cookie & ~UB_TP_SYSCALL, !(cookie & UB_TP_SYSCALL), &e, &r))
		return;
	/* SLOT_TP is this CPU's. Where the program runs preemptibly (system
	 * call tracepoints on 7.x), a clock sample of another task could take
	 * the slot in between; held off for the walk */
	if (tp_preemptible && bpf_preempt_disable)
		bpf_preempt_disable();
	finish(&e, &r);
	if (tp_preemptible && bpf_preempt_enable)
		bpf_preempt_enable();
}

/* A recorded command's exec: its tgid, armed since the fork, recorded
 * from here on (ustack_exec, and ustack_tp at sched_process_exec) */
static __always_inline void exec_arm(__u32 tgid)
{
	__u8 on = UB_TARGET_ACTIVE, *st = bpf_map_lookup_elem(&targets, &tgid);

	if (st && *st == UB_TARGET_ARMED && !bpf_map_update_elem(&targets, &tgid, &on, BPF_ANY))
		targets_changed();
}

/* sched:sched_process_exec and sched:sched_process_exit recorded. A
 * tracepoint's probes run in the order they were registered, and a perf
 * event's probe is registered once for all perf events on it, by the
 * first perf user: ustack's own programs on these tracepoints (ustack_exec,
 * ustack_exit) may run before ustack_tp or after it (after, where perf,
 * bpftrace or another ustack had the tracepoint on first). The command's
 * own exec event found it still armed, or a process's last exit event
 * found it already removed, and was left out without a word. So while
 * ustack_tp is on them, it does that work itself at the hit (its attach
 * cookie says which: UB_TPC_EXEC, UB_TPC_EXIT): arms before recording,
 * ends after; ustack_exit leaves the end to it (exit_by_tp, set once the
 * exit's ustack_tp is attached: until then ustack_exit ends processes as
 * before, and both may, which is harmless). */
__u32 exit_by_tp = 0;

/* The end of a recorded process at its last thread's exit */
static __always_inline void exit_done(struct task_struct *p)
{
	__u32 tgid = p->tgid;

	if (!BPF_CORE_READ(p, signal, live.counter) && !bpf_map_delete_elem(&targets, &tgid))
		targets_changed();
}

SEC("tracepoint")
int ustack_tp(void *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);

	if (cookie & UB_TPC_EXEC)
		exec_arm(bpf_get_current_pid_tgid() >> 32);
	tp_event(ctx, cookie);
	if (cookie & UB_TPC_EXIT)
		exit_done(bpf_get_current_task_btf());
	/* 1: the tracepoint's programs are shared by every perf event on it,
	 * and 0 would take their samples away from other perf users (perf
	 * record, another ustack) while we run; our own attachment event has
	 * no ring buffer, its sample costs nothing */
	return 1;
}

/* A system call's event through a kprobe (or kretprobe) on its function,
 * where the kernel runs system-call tracepoint programs preemptibly (7.x,
 * trace_call_bpf_faultable): there, while one task is preempted inside
 * the program, the kernel skips it for every other task on that CPU. A
 * kprobe's program runs with preemption off. Loaded only on such kernels
 * (bpf_backend.c, syscall_route). */
SEC("kprobe")
int ustack_kp(struct pt_regs *ctx)
{
	tp_event(ctx, bpf_get_attach_cookie(ctx));
	return 0;
}

/*
 * Samples of clock events arrive in a hard interrupt, where bpf_find_vma()
 * can be used once per program run (the mmap lock is released by an
 * irq_work). The walk runs there at once when every VMA it meets is in the
 * task's VMA cache and the mm did not change (most samples of a running
 * program). Otherwise it is deferred as the seeds defer it: the sample is
 * kept per thread and the walk runs in task context when the thread goes
 * back to user space (bpf_task_work, Linux 6.18+), before any of its user
 * code runs, so the stack is the sample's; that walk fills the cache.
 * Where that kfunc is missing or busy, the walk runs at once with one
 * mapping lookup (and ends in a copy when it needs a second).
 */
struct bpf_task_work {
	__u64 opaque;
} __attribute__((aligned(8)));

struct deferred {
	struct bpf_task_work tw;
	struct ub_event e;
	struct regs_in r;
	__u32 busy, pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct deferred);
} deferreds SEC(".maps");

struct bpf_map {
	int unused;
};
typedef int (*bpf_task_work_callback_t)(struct bpf_map *map, void *key, void *value);
/* 6.18: the program's aux is an argument (NULL: the verifier fills it in) */
extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
					      void *map__map, bpf_task_work_callback_t callback,
					      void *aux__prog) __ksym __weak;
/* 7.x: implicit (KF_IMPLICIT_ARGS). The _impl name stays in its BTF without
 * an address the verifier could call: on such a kernel the loader renames
 * that extern in its copy of this object, so that it resolves to nothing
 * and its call is dead code (bpf_backend.c, skel_open) */
extern int bpf_task_work_schedule_resume(struct task_struct *task, struct bpf_task_work *tw,
					 void *map__map, bpf_task_work_callback_t callback) __ksym __weak;

static int deferred_cb(struct bpf_map *map, void *key, void *value)
{
	struct deferred *d = value;
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u64 ip = 0, sp = 0, bp = 0;

	/* The registers user space resumes with must be the sample's: if
	 * user code ran in between (the work came late), the stack is no
	 * longer the sample's and the event keeps no user stack */
	bpf_probe_read_kernel(&ip, 8, &regs->rip);
	bpf_probe_read_kernel(&sp, 8, &regs->rsp);
	bpf_probe_read_kernel(&bp, 8, &regs->rbp);
	if (ip != d->r.ip || sp != d->r.sp || bp != d->r.bp) {
		count(UB_C_STALE, 1);
		d->e.flags &= ~UB_EV_USER;
	}
	/* SLOT_CB is this CPU's: no other task's walk may come in between */
	if (bpf_preempt_disable)
		bpf_preempt_disable();
	d->r.slot = SLOT_CB;
	finish(&d->e, &d->r);
	if (bpf_preempt_enable)
		bpf_preempt_enable();
	d->busy = 0;
	return 0;
}

/* cpu-clock and other sampling events, attached to the recorder's perf
 * events; returning 0 keeps the kernel from writing a perf sample. */
SEC("perf_event")
int ustack_sample(struct bpf_perf_event_data *ctx)
{
	int user = (ctx->regs.cs & 3) == 3;
	struct regs_in r = { .user_mode = user };
	struct ub_event e = {};
	struct uctx u = {};
	struct deferred *d, nd = {};
	__u32 tid;
	int ret;

	if (user) {
		u.ip = ctx->regs.rip;
		u.sp = ctx->regs.rsp;
		u.bp = ctx->regs.rbp;
		u.bx = ctx->regs.rbx;
		u.have = 1;
	}
	/* the event's index comes from rodata: the attach cookie is not
	 * copied into the events a task's children inherit */
	if (!collect(ctx, &u, sample_event, 1, &e, &r))
		return 0;
	if (!(e.flags & UB_EV_USER))
		goto now;
	r.slot = SLOT_IRQ;
	if (use_vcache && !finish(&e, &r))
		return 0;
	tid = e.tid;
	d = bpf_map_lookup_elem(&deferreds, &tid);
	if (!d) {
		bpf_map_update_elem(&deferreds, &tid, &nd, BPF_NOEXIST);
		d = bpf_map_lookup_elem(&deferreds, &tid);
	}
	if (!d || d->busy)
		goto now;
	d->e = e;
	d->r = r;
	d->busy = 1;
	/* one test per symbol and branch: the verifier removes the call of
	 * the one that did not resolve only when its test stands alone */
	if (bpf_task_work_schedule_resume)
		ret = bpf_task_work_schedule_resume(bpf_get_current_task_btf(), &d->tw, &deferreds,
						    deferred_cb);
	else if (bpf_task_work_schedule_resume_impl)
		ret = bpf_task_work_schedule_resume_impl(bpf_get_current_task_btf(), &d->tw,
							 &deferreds, deferred_cb, NULL);
	else
		ret = -1; /* neither (before 6.18): walked in the interrupt */
	if (!ret) {
		count(UB_C_DEFERRED, 1);
		return 0;
	}
	d->busy = 0;
now:
	/* the one bpf_find_vma() an interrupt may do (SLOT_TP: tracepoint
	 * programs cannot run while this one does) */
	r.slot = SLOT_TP;
	finish(&e, &r);
	return 0;
}

/* ---- off-CPU intervals ----------------------------------------------------------- */

/*
 * One event per interval a traced thread spends switched out: its stacks
 * are taken at the switch-out, in its own context (the user registers saved
 * at its last kernel entry; the walk, or the shared-entry test, is
 * finish()'s), the event is kept in the thread's task storage and sent at
 * its switch-in, weighing the interval's length. Task storage, not a map
 * keyed by tid: the switch-in may come on another CPU, and a tid can be
 * reused by a thread that never switched out under us.
 *
 * sched_switch runs with interrupts off: bpf_find_vma() can be used once
 * per run (the mmap lock is released by an irq_work), so the walk takes
 * its VMAs from the task's VMA cache and meets at most one missing VMA;
 * at a second it stops (maps-busy) and the stack goes as a copy, sent now,
 * which user space pairs with the event by its cookie.
 */
const volatile __u32 offcpu_sleep_event = UB_NO_EVENT;   /* "off-cpu" */
const volatile __u32 offcpu_preempt_event = UB_NO_EVENT; /* "off-cpu-preempt" */
const volatile __u64 offcpu_min_ns = 0;

struct offcpu {
	__u64 out;         /* switch-out time; 0: no interval open */
	struct ub_event e; /* the event as the switch-out made it */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu);
} offcpus SEC(".maps");

/* The kept event of @t, which opened its kernel entry (NEW_ENTRY), is
 * dropped (short, its switch-in unseen, no room in the ring): user space
 * never learns that entry's cookie, so the thread's next event of the same
 * entry must not share it: it walks again and opens an entry of its own
 * (shared, it was written with a cookie no USER_STACK ever answers: a
 * whole run of a preempted thread's intervals came out "mismatch"). */
static __always_inline void offcpu_dropped(struct task_struct *t, const struct offcpu *oc)
{
	struct task_all *ta;
	struct ub_task *ts;

	if (!(oc->e.flags & UB_EV_NEW_ENTRY))
		return;
	ta = bpf_task_storage_get(&tasks, t, 0, 0);
	ts = ta ? &ta->t : NULL;
	if (ts && ts->cookie == oc->e.cookie)
		ts->valid = 0;
}

/* @prev leaves the CPU (current is still @prev). Asleep: @state is not
 * TASK_RUNNING and the switch is not a preemption (a thread preempted
 * while it was setting itself up to sleep is still runnable: the kernel's
 * own sched_switch output says R+ for it). */
static __always_inline void offcpu_out(void *ctx, int preempt, struct task_struct *prev,
				       unsigned int state, __u64 now)
{
	struct regs_in r = { .slot = SLOT_SCHED, .keep = 1 };
	struct ub_event e = {};
	struct uctx u = {};
	struct offcpu *oc;
	__u32 event;

	/* kernel threads have no user stack (and, with -a, would record the
	 * kernel's own waiting); a dying thread's last switch has no end */
	if ((prev->flags & PF_KTHREAD) || (state & TASK_DEAD))
		return;
	event = !preempt && state ? offcpu_sleep_event : offcpu_preempt_event;
	if (event == UB_NO_EVENT)
		return;
	if (!collect(ctx, &u, event, 1, &e, &r))
		return;
	oc = bpf_task_storage_get(&offcpus, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!oc) {
		count(UB_C_LOST, 1); /* no storage: the interval cannot be kept */
		return;
	}
	if (oc->out) /* the last switch-in was not seen: that interval is gone */
		offcpu_dropped(prev, oc);
	finish(&e, &r);
	e.flags |= UB_EV_VALUE;
	oc->e = e;
	/* the tracepoint's own time, taken before anything else ran in it:
	 * the thread's CPU time was accounted before this tracepoint, so the
	 * kernel stack and user walks are already time it spends switched out
	 * (stamped after the walk, every interval was short by it, 10-40 us,
	 * against the thread's own wall - CPU time) */
	oc->out = now;
	count(UB_C_OFFCPU_OUT, 1);
}

/* @next comes back: the interval its switch-out opened, if any, ends. */
static __always_inline void offcpu_in(struct task_struct *next, __u64 now)
{
	struct offcpu *oc = bpf_task_storage_get(&offcpus, next, 0, 0);
	struct ub_event *ev;
	__u64 delta;

	if (!oc || !oc->out)
		return;
	delta = now > oc->out ? now - oc->out : 0;
	oc->out = 0;
	count(UB_C_OFFCPU_IN, 1);
	if (delta < offcpu_min_ns) {
		count(UB_C_OFFCPU_SHORT, 1);
		count(UB_C_OFFCPU_SHORT_NS, delta);
		offcpu_dropped(next, oc);
		return;
	}
	ev = bpf_ringbuf_reserve(&rb, sizeof(*ev), 0);
	if (!ev) {
		count(UB_C_LOST, 1);
		offcpu_dropped(next, oc);
		return;
	}
	*ev = oc->e;
	ev->time = now;
	ev->cpu = bpf_get_smp_processor_id();
	ev->value = delta;
	bpf_ringbuf_submit(ev, wake_flags());
}

/* Loaded and attached only when an off-CPU event is recorded
 * (bpf_backend.c): it runs at every context switch of the machine. */
SEC("tp_btf/sched_switch")
int BPF_PROG(ustack_offcpu, _Bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	/* one time for both: @prev leaves and @next comes back at this
	 * instant. Read after @prev's walk, every interval of @next was
	 * longer by it (the two threads of one traced process) */
	__u64 now = bpf_ktime_get_ns();

	offcpu_out(ctx, preempt, prev, prev_state, now);
	offcpu_in(next, now);
	return 0;
}

/* ---- probes: what every probe program shares ------------------------------- */

/* probe hits unwound per second and CPU at most (0: no limit) */
const volatile __u32 probe_rate_max = 0;

struct prate {
	__u64 window; /* start of the current second (ns) */
	__u64 n;      /* hits admitted in it */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct prate);
} prates SEC(".maps");

/* A probe hit of a traced process at @now: counted, and admitted (1)
 * unless this CPU admitted probe_rate_max in the current second (0:
 * counted as dropped, nothing else done: no walk, no record). A fixed
 * one-second window per CPU, from its first hit: the bound holds whatever
 * the hit rate, at two map lookups a hit. The hit's event carries @now
 * as its time, so that a trace shows each window as the limit saw it
 * (a time taken later, after a preemption, once put an event of one
 * window after the start of the next). */
static __always_inline __attribute__((unused)) int probe_admit(__u64 now)
{
	__u32 zero = 0;
	struct prate *p;

	count(UB_C_PROBE_HITS, 1);
	if (!probe_rate_max)
		return 1;
	p = bpf_map_lookup_elem(&prates, &zero);
	if (!p)
		return 1;
	if (now - p->window >= 1000000000ull) {
		p->window = now;
		p->n = 0;
	}
	if (p->n >= probe_rate_max) {
		count(UB_C_PROBE_RATE_DROPPED, 1);
		return 0;
	}
	p->n++;
	return 1;
}

/* Send @e (filled by collect() and finish() with regs_in.keep) with @n
 * args (1..UB_MAX_ARGS) as a struct ub_pevent. */
static __always_inline __attribute__((unused)) void send_pevent(const struct ub_event *e,
							    const __u64 *args, __u32 n)
{
	struct ub_pevent *pe = bpf_ringbuf_reserve(&rb, sizeof(*pe), 0);

	if (!pe) {
		count(UB_C_LOST, 1);
		return;
	}
	pe->e = *e;
	pe->e.flags |= UB_EV_ARGS;
	pe->nr_args = n > UB_MAX_ARGS ? UB_MAX_ARGS : n;
	pe->pad = 0;
	for (int i = 0; i < UB_MAX_ARGS; i++)
		pe->args[i] = i < pe->nr_args ? args[i] : 0;
	bpf_ringbuf_submit(pe, wake_flags());
}

/* ---- probes: uprobes, uretprobes and USDT probes ------------------------------- */

/* Filled by user space before the links are made (bpf_backend.c), one
 * entry per link; sized to the probes recorded (1 when none). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ub_probe);
} probes SEC(".maps");

/* @v's low |size| bytes, sign-extended when size is negative. */
static __always_inline __u64 usdt_extend(__u64 v, __s8 size)
{
	switch (size) {
	case -1: return (__u64)(__s64)(__s8)v;
	case 1: return (__u8)v;
	case -2: return (__u64)(__s64)(__s16)v;
	case 2: return (__u16)v;
	case -4: return (__u64)(__s64)(__s32)v;
	case 4: return (__u32)v;
	default: return v;
	}
}

/* One USDT argument from the probed thread's registers @ctx (the user
 * registers: a uprobe runs at the user instruction) and its memory. 0
 * where the spec is out of bounds or the memory cannot be read (the event
 * is still recorded: its stack does not depend on the argument). */
static __always_inline __u64 usdt_arg(struct pt_regs *ctx, const struct ub_usdt_arg *a)
{
	__u64 v = 0, reg = 0, n;
	__u32 off = a->reg;
	__s8 size = (__s8)a->size;

	if (a->kind == UB_USDT_CONST)
		return a->val;
	if (off > UB_PT_REGS_SIZE - 8 || (off & 7))
		return 0;
	bpf_probe_read_kernel(&reg, 8, (void *)ctx + off);
	if (a->kind == UB_USDT_REG)
		return usdt_extend(reg, size);
	if (a->kind != UB_USDT_DEREF)
		return 0;
	n = size < 0 ? -size : size;
	if (n == 0 || n > 8)
		return 0;
	if (bpf_probe_read_user(&v, n, (void *)(reg + a->val)))
		return 0;
	return usdt_extend(v, size);
}

/* A hit of probe @cookie: the event with the stack of the probed thread
 * at the probed instruction (for a uretprobe: at the caller's instruction
 * after the call), and its payload. */
static __always_inline void probe_hit(struct pt_regs *ctx, __u64 cookie)
{
	struct regs_in r = { .slot = SLOT_TP, .user_mode = 1, .keep = 1 };
	__u32 key = (__u32)cookie, tgid = bpf_get_current_pid_tgid() >> 32, n = 0;
	struct ub_event e = {};
	struct uctx u = {};
	struct ub_probe *p;
	__u64 args[UB_MAX_ARGS];

	__u64 now = bpf_ktime_get_ns();

	if (!traced(tgid) || !probe_admit(now))
		return;
	p = bpf_map_lookup_elem(&probes, &key);
	if (!p)
		return;
	/* the event is its own user context: the probed instruction, nothing
	 * of a kernel entry; no kernel stack */
	u.ip = ctx->rip;
	u.sp = ctx->rsp;
	u.bp = ctx->rbp;
	u.bx = ctx->rbx;
	u.have = 1;
	if (!collect(ctx, &u, p->event, 0, &e, &r))
		return;
	e.time = now; /* the hit's, as probe_admit() saw it */
	/* SLOT_TP is this CPU's: uprobe programs run with migration off only
	 * on recent kernels, as system-call tracepoints on 7.x (tp_event) */
	if (bpf_preempt_disable)
		bpf_preempt_disable();
	finish(&e, &r);
	if (bpf_preempt_enable)
		bpf_preempt_enable();
	if (p->kind == UB_PROBE_URETPROBE) {
		args[0] = ctx->rax;
		n = 1;
	} else if (p->kind == UB_PROBE_USDT) {
		n = p->nr_args < UB_MAX_ARGS ? p->nr_args : UB_MAX_ARGS;
		for (__u32 i = 0; i < UB_MAX_ARGS; i++) {
			if (i >= n)
				break;
			args[i] = usdt_arg(ctx, &p->args[i]);
		}
	}
	if (n) {
		send_pevent(&e, args, n);
		return;
	}
	/* no payload: the plain 56-byte record */
	{
		struct ub_event *ev = bpf_ringbuf_reserve(&rb, sizeof(*ev), 0);

		if (!ev) {
			count(UB_C_LOST, 1);
			return;
		}
		*ev = e;
		bpf_ringbuf_submit(ev, wake_flags());
	}
}

/* Loaded only when a probe event is recorded (bpf_backend.c); the attach
 * cookie is the probe's index in the probes map. */
SEC("uprobe")
int ustack_uprobe(struct pt_regs *ctx)
{
	probe_hit(ctx, bpf_get_attach_cookie(ctx));
	return 0;
}

SEC("uretprobe")
int ustack_uretprobe(struct pt_regs *ctx)
{
	probe_hit(ctx, bpf_get_attach_cookie(ctx));
	return 0;
}

/* Following the targets: children of a traced process, and a command
 * armed until its exec. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(ustack_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 on = UB_TARGET_ACTIVE, *st;

	if (ptgid == ctgid)
		return 0;
	st = bpf_map_lookup_elem(&targets, &ptgid);
	if (!st || *st != UB_TARGET_ACTIVE)
		return 0;
	if (!bpf_map_update_elem(&targets, &ctgid, &on, BPF_ANY))
		targets_changed();
	else /* full (-E2BIG): the child and its own children go unrecorded */
		count(UB_C_TARGETS_FULL, 1);
	return 0;
}

/* The last thread of a target exits: forget its tgid, which the kernel
 * may give to an unrelated process next (pid_max is often 32768). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(ustack_exit, struct task_struct *p)
{
	/* ustack_tp's to do while the exit event is recorded (exit_by_tp) */
	if (!exit_by_tp)
		exit_done(p);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(ustack_exec, struct task_struct *p)
{
	exec_arm(p->tgid);
	return 0;
}

#include "alloc.bpf.h"
