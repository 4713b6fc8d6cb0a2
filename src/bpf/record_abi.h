/* SPDX-License-Identifier: MIT */
/*
 * What the recording BPF program and its user-space loader share: the
 * records of the ring buffer, the keys and values of the maps, the row form
 * of the unwind tables in the kernel and the counters. Included by
 * src/bpf/record.bpf.c (clang -target bpf) and src/bpfload/bpf_backend.c,
 * so only fixed-width types and no padding the two compilers could lay out
 * differently.
 */
#ifndef USTACK_BPF_RECORD_ABI_H
#define USTACK_BPF_RECORD_ABI_H

#ifdef __bpf__
typedef __u8 ub_u8;
typedef __u16 ub_u16;
typedef __u32 ub_u32;
typedef __s32 ub_s32;
typedef __s16 ub_s16;
typedef __u64 ub_u64;
#else
#include <stdint.h>
typedef uint8_t ub_u8;
typedef uint16_t ub_u16;
typedef uint32_t ub_u32;
typedef int32_t ub_s32;
typedef int16_t ub_s16;
typedef uint64_t ub_u64;
#endif

#define UB_MAX_FRAMES 127
/* binary search steps over a table: tables hold at most 2^24 rows */
#define UB_MAX_ROWS (1u << 24)
#define UB_MAX_SIGNAL_FRAMES 16

/* USTACK_STOP_NOT_LOADED and USTACK_STOP_MAPS_BUSY of enum ustack_stop_reason. */
#define UB_STOP_NOT_LOADED 6 /* the frame's file has no table in the kernel (yet) */
#define UB_STOP_MAPS_BUSY 7  /* the task's mappings were locked: not walked */

/* Tracepoint attach cookie: event index, | this for a system-call
 * tracepoint (syscalls:*): each event is its own entry, as perf's samples
 * of those tracepoints carry the user registers (PERF_RECORD_MISC_USER). */
#define UB_TP_SYSCALL 0x80000000u
/* and, in its upper 32 bits, which of ustack's own process-following work
 * the tracepoint's program does at that hit (record.bpf.c, ustack_tp):
 * sched:sched_process_exec arms the command, sched:sched_process_exit ends
 * a process at its last thread */
#define UB_TPC_EXEC (1ull << 32)
#define UB_TPC_EXIT (1ull << 33)

/* An event index the recorder did not ask for (rodata of the off-CPU
 * program: an interval kind not recorded). */
#define UB_NO_EVENT 0xffffffffu

/* ---- ring buffer records ---------------------------------------------------- */

enum ub_rec_type {
	UB_REC_EVENT = 1,
	UB_REC_STACK = 2,
	UB_REC_COPY = 3,
	UB_REC_KSTACK = 4,
};

enum ub_event_flags {
	UB_EV_NEW_ENTRY = 1u << 0, /* first event of its cookie: the unwind was made for it */
	UB_EV_USER = 1u << 1,      /* has a user context (cookie valid) */
	UB_EV_USER_MODE = 1u << 2, /* its own user context (taken in user mode, or a
				      system-call tracepoint): nothing joins it */
	UB_EV_COPY = 1u << 3,      /* the kernel walk could not finish (table not
				      loaded yet, mappings locked): a UB_REC_COPY
				      of this tid and cookie came before it
				      (just before, but for an off-CPU
				      interval: at its switch-out) */
	UB_EV_VALUE = 1u << 4,     /* value is what the event's kind weighs (an
				      off-CPU interval: its length in ns; an
				      allocation: its size in bytes) */
	UB_EV_ARGS = 1u << 5,      /* the record is a struct ub_pevent: the
				      event's payload follows (a probe's
				      arguments or return value, an
				      allocation's size and address) */
	UB_EV_KSTACK = 1u << 6,    /* kstack < 0, the kernel stack sent whole: a
				      UB_REC_KSTACK of this tid with seq ==
				      kseq came before it (just before, but for
				      an off-CPU interval: at its switch-out) */
};

/* One per event: 56 bytes (+ 8 of ring-buffer header). */
struct ub_event {
	ub_u8 type;     /* UB_REC_EVENT */
	ub_u8 stop;     /* stop reason of the cookie's unwind */
	ub_u8 flags;    /* enum ub_event_flags */
	ub_u8 nr;       /* frames of the cookie's stack */
	ub_u32 cpu;
	ub_u32 pid, tid;
	ub_u64 time;    /* CLOCK_MONOTONIC ns */
	ub_u64 cookie;  /* 0: no user stack */
	ub_u32 event;   /* index of the event in the recorder's list */
	ub_s32 kstack;  /* id in the kstacks map, < 0: none */
	ub_u32 ustack;  /* stack id (1, 2, ...), 0: none */
	ub_u32 kseq;    /* UB_EV_KSTACK: its UB_REC_KSTACK's seq; else 0 */
	ub_u64 value;   /* UB_EV_VALUE: the weight; else 0 */
};

/* An event with its payload (UB_EV_ARGS set in e.flags, e.type
 * UB_REC_EVENT): 160 bytes. Probe events: USDT arguments in order, a
 * uretprobe's return value in args[0]; "alloc": args[0] size, args[1]
 * address; "free": args[0] address (no user stack, no kernel stack). */
#define UB_MAX_ARGS 12
struct ub_pevent {
	struct ub_event e;
	ub_u32 nr_args; /* 1..UB_MAX_ARGS */
	ub_u32 pad;
	ub_u64 args[UB_MAX_ARGS];
};

/* The probes map (array, key: a uprobe link's attach cookie): what a hit
 * of that link records. kind as enum ustack_probe_kind (src/probe/probe.h),
 * args as struct ustack_usdt_arg (kind CONST 1 / REG 2 / DEREF 3; size 1, 2,
 * 4, 8, negative: signed; reg: byte offset in the uapi struct pt_regs). */
#define UB_PROBE_UPROBE 1
#define UB_PROBE_URETPROBE 2
#define UB_PROBE_USDT 3
#define UB_USDT_CONST 1
#define UB_USDT_REG 2
#define UB_USDT_DEREF 3
#define UB_PT_REGS_SIZE 168 /* uapi x86-64 struct pt_regs: 21 registers */
struct ub_usdt_arg {
	ub_u8 kind;
	ub_u8 size;     /* as a signed byte: negative, sign-extended */
	ub_u16 reg;
	ub_u32 pad;
	ub_u64 val;     /* CONST: the value; DEREF: the displacement */
};
struct ub_probe {
	ub_u32 event;   /* index in the recorder's list */
	ub_u32 kind;    /* UB_PROBE_* */
	ub_u32 nr_args; /* USDT: 0..UB_MAX_ARGS */
	ub_u32 pad;
	struct ub_usdt_arg args[UB_MAX_ARGS];
};

/* A stack's frames, sent once, before the first event that names it:
 * 16 + 16 * capacity bytes, capacity one of UB_STACK_CLASSES. words[2i],
 * words[2i+1] (i < nr) are ustack_trace_pack_frame()'s two words; then,
 * for a process marked as CPython (pyprocs), npy Python frames, innermost
 * first, two words each (UB_PY_*): nr + npy <= UB_MAX_FRAMES. */
struct ub_stack {
	ub_u8 type;     /* UB_REC_STACK */
	ub_u8 npy;      /* Python frames after the native ones */
	ub_u16 nr;      /* native frames */
	ub_u32 id;
	ub_u8 pystop;   /* why the Python chain ended: UB_PYSTOP_* */
	ub_u8 nstop;    /* why the native walk ended (enum ustack_stop_reason): user
			   space places Python frames above a cut walk */
	ub_u8 pad1[2];
	ub_u32 pypid;   /* the process whose code objects the Python frames name
			   (part of the stack's identity then; else 0) */
	ub_u64 words[];
};

/* An event's kernel stack, sent whole (UB_REC_KSTACK) where kstacks could
 * not store it: bpf_get_stackid() finds the stack's bucket holding another
 * stack (the map keeps the first stack of a hash; a recording of a few
 * hundred distinct kernel stacks has such collisions). The event that
 * follows has UB_EV_KSTACK and kseq = seq. Reserved whole (1,032 bytes),
 * nr ips used: it is rare. */
struct ub_kstack {
	ub_u8 type;     /* UB_REC_KSTACK */
	ub_u8 pad[3];
	ub_u32 nr;      /* ips, 1..UB_MAX_FRAMES */
	ub_u32 tid;
	ub_u32 seq;     /* 1, 2, ...: the recording's inline stacks in turn */
	ub_u64 ips[UB_MAX_FRAMES];
};

/* A Python frame's two words. word0: the code object's address, and a
 * fingerprint read from it (co_firstlineno's low 16 bits) above bit 48,
 * so that user space, reading the code object later, can tell that the
 * address still holds the same function; word1: the frame's instruction
 * pointer, its owner (FRAME_OWNED_BY_*: a generator's frame counts as
 * started wherever its instruction is) above bit 48, UB_PY_ENTRY when a C-level call of _PyEval_EvalFrameDefault
 * started with this frame (3.11: its is_entry; 3.12+: the entry shim
 * below it). User addresses are below 2^47. */
#define UB_PY_ADDR_MASK ((1ull << 48) - 1)
#define UB_PY_FP_SHIFT 48
#define UB_PY_OWNER_SHIFT 48
#define UB_PY_ENTRY (1ull << 63)
#define UB_MAX_PY_FRAMES 96

enum ub_pystop {
	UB_PYSTOP_NONE = 0,     /* not a CPython process (or no Python walk) */
	UB_PYSTOP_END = 1,      /* the chain's oldest frame reached */
	UB_PYSTOP_DEPTH = 2,    /* no room left in the stack (UB_MAX_FRAMES, UB_MAX_PY_FRAMES) */
	UB_PYSTOP_FAULT = 3,    /* a frame, thread state or code object not readable */
	UB_PYSTOP_BAD = 4,      /* a frame's owner out of range: not a frame */
	UB_PYSTOP_NO_THREAD = 5,/* no thread state with this thread's native id */
};

/* pyprocs: tgid -> where a CPython process keeps its frames (user space
 * fills it from ustack_py_proc__find(): struct ustack_py_layout's offsets
 * that the walk needs, each below UB_PY_OFF_MAX) */
#define UB_PY_OFF_MAX 4096
#define UB_PY_FR_SPAN 128 /* bytes of a frame read at once (fr_span <= this) */
enum ub_pyconf_flags {
	UB_PYC_CFRAME = 1u << 0,   /* current frame = tstate->cframe->current_frame (3.11, 3.12) */
	UB_PYC_IS_ENTRY = 1u << 1, /* fr_is_entry holds 3.11's is_entry byte */
	UB_PYC_CSTACK = 1u << 2,   /* owner_cstack marks an entry shim (3.12+) */
	UB_PYC_TAGGED = 1u << 3,   /* f_executable is a _PyStackRef: its low 2 bits are
				      tags, masked off (3.14+) */
};
struct ub_pyconf {
	ub_u64 runtime;        /* &_PyRuntime in the process */
	ub_u32 flags;          /* enum ub_pyconf_flags */
	ub_u32 owner_cstack;
	ub_u32 rt_interp_head, is_next, is_threads_head, ts_next, ts_native_tid;
	ub_u32 ts_cframe, cf_current, ts_current_frame;
	ub_u32 fr_code, fr_previous, fr_instr, fr_owner, fr_is_entry, fr_span;
	ub_u32 co_firstlineno, pad;
};

/* The top of a user stack, sent only when the kernel walk cannot finish
 * for want of a table (the file was mapped a moment ago and user space has
 * not loaded it yet) or because the task's mappings were locked: user space
 * then unwinds it as the copy backend does, with the whole picture. The
 * thread's Python frames (a process in pyprocs) come with it, read at the
 * event like a stack record's: the interpreter's frames are on the heap,
 * out of the copy's reach, and their chain needs no unwind table. */
#define UB_COPY_BYTES 16384
struct ub_copy {
	ub_u8 type;     /* UB_REC_COPY */
	ub_u8 npy;      /* Python frames in py[] (of process pid), innermost first */
	ub_u8 pystop;   /* why the Python chain ended: UB_PYSTOP_* */
	ub_u8 pad;
	ub_u32 cpu;
	ub_u32 pid, tid;
	ub_u64 time;
	ub_u64 cookie;
	ub_u64 ip, sp, bp, bx;
	ub_u32 size;    /* valid bytes of data, from sp up */
	ub_u32 pad2;
	ub_u64 py[2 * UB_MAX_PY_FRAMES]; /* two words a frame, as in struct ub_stack */
	ub_u8 data[UB_COPY_BYTES + 4096]; /* room the verifier can prove */
};

/* ---- maps ------------------------------------------------------------------------ */

/* files: (dev, inode) of a mapped file as the kernel sees it (s_dev in the
 * kernel's encoding, major << 20 | minor) -> its id and table. The vDSO
 * has dev = 0, ino = 0. */
struct ub_file_key {
	ub_u64 dev;
	ub_u64 ino;
};

enum ub_file_flags {
	UB_FILE_TABLE = 1u << 0,    /* table_id names a loaded table */
	UB_FILE_NO_TABLE = 1u << 1, /* the file has no unwind information at all */
};

struct ub_file_val {
	ub_u64 file_id;   /* the trace's file id */
	ub_u64 base;      /* file offset of row 0's start (rows hold start - base) */
	ub_u64 limit;     /* file offset one past the last row's end */
	ub_u32 table_id;  /* key in the tables map */
	ub_u32 nr_rows;
	ub_u32 flags;     /* enum ub_file_flags */
	ub_u32 levels;    /* directory levels of the table (rows_layout.h) */
};

/* Row kinds (ub_row.method): what find_row answers from start up to the
 * next row's start. */
#define UB_ROW_GAP 0      /* no information (-ENOENT) */
#define UB_ROW_BAD 0xff   /* corrupt table (-EBADMSG) */
/* 1, 2, 5: USTACK_METHOD_SFRAME, _CFI, _PLT */

enum ub_row_flags {
	UB_RF_CFA_FP = 1u << 0,    /* CFA = fp + cfa_off (else sp + cfa_off) */
	UB_RF_FP_SAVED = 1u << 1,  /* caller's fp at CFA + fp_off (else unchanged) */
	UB_RF_OUTERMOST = 1u << 2,
	UB_RF_FALLBACK = 1u << 3,  /* use the frame-pointer heuristic */
	UB_RF_SIGNAL = 1u << 4,
	UB_RF_CFA_BX = 1u << 5,    /* CFA = rbx + cfa_off (rbx must be known) */
	UB_RF_BX_SAVED = 1u << 6,  /* caller's rbx at CFA + bx_off */
	UB_RF_BX_SAME = 1u << 7,   /* caller's rbx unchanged (neither: not known) */
};

/* 16 bytes (an array map's element stride is a multiple of 8); the return
 * address is always at CFA - 8 (x86-64), else FALLBACK. */
struct ub_row {
	ub_u32 start;   /* file offset - base */
	ub_s32 cfa_off;
	ub_s32 fp_off;
	ub_u8 method;
	ub_u8 flags;
	ub_s16 bx_off;
};

/* Per-task state: the user context of the task's open kernel entry. */
struct ub_task {
	ub_u64 ip, sp, bp, tag;
	ub_u64 cookie;
	ub_u32 pid;
	ub_u32 ustack;
	ub_u8 stop, nr, valid, pad[5];
};

/* targets: tgid -> state */
#define UB_TARGET_ACTIVE 1
#define UB_TARGET_ARMED 2  /* a child before its exec */
/* its entries: the recorded processes and those they start, live at once */
#define UB_TARGETS_MAX 65536

/* Counters (per CPU, summed by user space). */
enum ub_counter {
	UB_C_EVENTS,        /* events of the targets seen */
	UB_C_LOST,          /* event records the ring buffer had no room for */
	UB_C_STACK_LOST,    /* stack records the ring buffer had no room for */
	UB_C_STACKMAP_FULL, /* new stacks sent without an entry in stack_ids */
	UB_C_KSTACK_FAIL,   /* kernel stacks lost: not stored (bucket taken) and
			       not sent whole either (ring buffer full), or none */
	UB_C_UNWINDS,
	UB_C_SHARED,
	UB_C_NOT_LOADED,
	UB_C_MAPS_BUSY,
	UB_C_READ_FAULT,
	UB_C_STACKS,        /* stack records sent */
	UB_C_STACK_BYTES,   /* their bytes */
	UB_C_COPIES,        /* walks finished in user space from a UB_REC_COPY */
	UB_C_COPY_BYTES,
	UB_C_COPY_LOST,     /* copies the ring buffer had no room for */
	UB_C_IRQ_WALKS,     /* samples walked in the interrupt from the VMA cache */
	UB_C_DEFERRED,      /* samples whose walk went to task context */
	UB_C_STALE,         /* of those, user code had run before the walk: no user stack */
	UB_C_COPY_SKIPPED,  /* copies not sent: the ring was half full (partial stack kept) */
	UB_C_HOT,           /* walks finished from the task's hot stack */
	/* off-CPU intervals: OUT - IN switch-outs were never paired (the
	 * thread still off CPU at the end, exited, or a switch the program
	 * missed); of the IN, SHORT were below the threshold, the others sent
	 * (or, the ring full, counted in UB_C_LOST) */
	UB_C_OFFCPU_OUT,      /* switch-outs of traced threads stored */
	UB_C_OFFCPU_IN,       /* switch-ins that closed one */
	UB_C_OFFCPU_SHORT,    /* of those, below offcpu_min_ns: not sent */
	UB_C_OFFCPU_SHORT_NS, /* their total ns */
	/* probes (uprobe, uretprobe, USDT programs, and the allocator's) */
	UB_C_PROBE_HITS,      /* hits of traced processes */
	UB_C_PROBE_RATE_DROPPED, /* of those, above the rate limit: not unwound */
	/* allocation profiling */
	UB_C_ALLOC_CALLS,     /* allocations returned (sampled or not) */
	UB_C_ALLOC_BYTES,     /* their bytes */
	UB_C_ALLOC_LIVE_DROPPED, /* sampled allocations the live map had no room for */
	/* Python frames (processes in pyprocs) */
	UB_C_PY_WALKS,        /* walks of a CPython thread's chain */
	UB_C_PY_FRAMES,       /* Python frames sent in stacks */
	UB_C_PY_TS_CACHED,    /* thread states taken from pytstates, re-validated */
	UB_C_PY_NO_THREAD,    /* threads whose thread state was not found */
	UB_C_PY_STOP_DEPTH,   /* chains cut for room */
	UB_C_PY_STOP_FAULT,   /* chains that stopped at a read fault */
	UB_C_PY_STOP_BAD,     /* chains that stopped at a frame that is not one */
	UB_C_PY_COPIES,       /* copies sent with their thread's Python frames (npy > 0) */
	UB_C_KSTACK_INLINE,   /* kernel stacks sent whole (UB_REC_KSTACK): kstacks had
				 another stack in their bucket */
	UB_C_TARGETS_FULL,    /* processes a target forked that `targets` had no
				 room for: not recorded */
	UB_NR_COUNTERS
};

/* alloc_live (record --alloc): a kept allocation not freed yet -> its size */
struct ub_alloc_key {
	ub_u32 tgid, pad;
	ub_u64 addr;
};

#endif
