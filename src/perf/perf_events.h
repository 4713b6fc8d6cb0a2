/* SPDX-License-Identifier: MIT */
/*
 * perf_event_open source: events by name, per-CPU ring buffers, records
 * parsed into plain structs and handed out in time order per poll round.
 * Samples carry the kernel part of the callchain, the user registers and a
 * copy of the top of the user stack; COMM, MMAP2, FORK, EXIT and LOST
 * records keep the consumer's picture of each process current.
 * The ring buffers are untrusted input: every record is bounds-checked.
 */
#ifndef USTACK_PERF_PERF_EVENTS_H
#define USTACK_PERF_PERF_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Events of a recording (-e); a session opens at most
 * USTACK_PERF_MAX_SESSION_EVENTS: a probe event opens one perf event per
 * place it resolves to (the copy backend), beside the recording's others.
 * 64: one bit each in the parser's masks. */
#define USTACK_PERF_MAX_EVENTS 16
#define USTACK_PERF_MAX_SESSION_EVENTS 64

struct ustack_perf_event_spec {
	char name[128];    /* as given: "cpu-clock", "syscalls:sys_enter_futex" */
	uint32_t type;     /* PERF_TYPE_* */
	uint64_t config;
	int is_tracepoint;
	int is_hardware;
	unsigned int flags;  /* USTACK_PERF_EV_* */
	/* a tracepoint's filter (PERF_EVENT_IOC_SET_FILTER), "" for none */
	char filter[128];
	/* perf's uprobe PMU (USTACK_PERF_EV_PROBE, ustack_perf_uprobe()):
	 * config1 the address of the file's path (a string the caller keeps
	 * until the session is open), config2 the file offset */
	uint64_t config1, config2;
	/* opened only for the threads of this -p process (0: for every
	 * target): a probe resolved in that process's mount namespace */
	pid_t pid;
};

/* ustack_perf_event_spec.flags */
#define USTACK_PERF_EV_RAW 0x1u      /* samples carry the tracepoint's fields (PERF_SAMPLE_RAW) */
#define USTACK_PERF_EV_SWITCHES 0x2u /* PERF_RECORD_SWITCH(_CPU_WIDE) records (attr.context_switch) */
#define USTACK_PERF_EV_NO_DEFER 0x4u /* never the kernel's deferred user callchain */
/* a probe: every hit sampled, with every general-purpose user register
 * (ustack_perf_sample.gpregs: USDT operands, a return value) */
#define USTACK_PERF_EV_PROBE 0x8u

/**
 * The perf event of a name of perf's: cpu-clock, task-clock, page-faults,
 * context-switches, cycles, instructions, cache-misses, branch-misses.
 * Sets type, config and is_hardware of @out (name untouched).
 * @return 0, or -ENOENT: not one of these
 */
int ustack_perf_named_event(const char *name, struct ustack_perf_event_spec *out);

/**
 * The tracepoint SUBSYS:NAME: its id read from tracefs at
 * /sys/kernel/tracing or /sys/kernel/debug/tracing (never mounted here).
 * Sets type, config and is_tracepoint of @out (name untouched).
 * @return 0, -ENOENT (a bad name or no such tracepoint; @err says which),
 *         -ENODEV (tracefs not mounted; @err says how to mount it), other
 *         negative errno
 */
int ustack_perf_tracepoint(const char *name, struct ustack_perf_event_spec *out, char *err,
			   size_t errlen);

/**
 * Where the field @field of tracepoint SUBSYS:NAME @tp is in its samples'
 * raw data, from its format file in tracefs.
 * @return 0 with *@off and *@size set, -ENOENT (no such tracepoint or
 *         field; @err says which), -EBADMSG (format file unreadable)
 */
int ustack_perf_tracepoint_field(const char *tp, const char *field, uint32_t *off, uint32_t *size,
				 char *err, size_t errlen);

/**
 * The perf event of a uprobe on the instruction at file offset @offset of
 * @path, through perf's uprobe PMU (/sys/bus/event_source/devices/uprobe:
 * its type, and where its format files put the retprobe bit and the USDT
 * semaphore's offset): no tracefs uprobe_events entry is made, and the
 * kernel removes the probe with the event's last fd, also when the process
 * holding it is killed. Sets type, config, config1, config2 and the
 * USTACK_PERF_EV_PROBE flag of @out (name untouched). @path is read by the
 * kernel when the session opens the event: it must stay valid until then.
 * @param retprobe fire at the function's return instead
 * @param ref_ctr_offset file offset of a USDT semaphore (0: none)
 * @return 0, -ENODEV (no uprobe PMU: @err says so), -EOPNOTSUPP (a format
 *         this code does not know: @err names the file), other -errno
 */
int ustack_perf_uprobe(const char *path, uint64_t offset, int retprobe, uint64_t ref_ctr_offset,
		       struct ustack_perf_event_spec *out, char *err, size_t errlen);

struct ustack_perf_opts {
	size_t sz;
	const struct ustack_perf_event_spec *events;
	int nr_events;
	uint32_t freq;        /* sampling frequency of non-tracepoint events (Hz) */
	uint32_t stack_size;  /* bytes of user stack copied per sample (multiple of 8) */
	const pid_t *pids;    /* processes to follow (threads found in /proc), or */
	int nr_pids;
	int system_wide;      /* every process on every CPU, or */
	pid_t child;          /* a child stopped before exec: enabled on its exec */
	unsigned int pages;   /* data pages per CPU ring buffer (power of 2; 0: 1024, 256 above 16 CPUs) */
	int wake_each;        /* wake the reader at every record (side-band only sessions) */
	int defer_callchain;  /* ask the kernel for deferred user callchains
	                         (PERF_RECORD_CALLCHAIN_DEFERRED; 6.19+) */
};

enum ustack_perf_rec_type {
	USTACK_PREC_SAMPLE = 1,
	USTACK_PREC_COMM,
	USTACK_PREC_MMAP2,
	USTACK_PREC_FORK,
	USTACK_PREC_EXIT,
	USTACK_PREC_LOST,
	USTACK_PREC_DEFERRED, /* PERF_RECORD_CALLCHAIN_DEFERRED (Linux 6.19+) */
	USTACK_PREC_SWITCH,   /* PERF_RECORD_SWITCH, PERF_RECORD_SWITCH_CPU_WIDE */
	USTACK_PREC_THROTTLE, /* PERF_RECORD_THROTTLE, PERF_RECORD_UNTHROTTLE */
};

/* The general-purpose user registers of a USTACK_PERF_EV_PROBE sample, in
 * perf's order (arch/x86/include/uapi/asm/perf_regs.h, without the flags
 * and segment registers). */
enum ustack_perf_gpreg {
	USTACK_PERF_AX, USTACK_PERF_BX, USTACK_PERF_CX, USTACK_PERF_DX, USTACK_PERF_SI,
	USTACK_PERF_DI, USTACK_PERF_BP, USTACK_PERF_SP, USTACK_PERF_IP, USTACK_PERF_R8,
	USTACK_PERF_R9, USTACK_PERF_R10, USTACK_PERF_R11, USTACK_PERF_R12, USTACK_PERF_R13,
	USTACK_PERF_R14, USTACK_PERF_R15,
	USTACK_PERF_NR_GPREGS
};

/* perf's deferred user callchains (Linux 6.19+; not in older uapi headers):
 * attr flag bits (the u64 of bit fields after read_format), the record
 * type, and the callchain marker followed by the entry's cookie */
#define USTACK_PERF_ATTR_DEFER_CALLCHAIN_BIT 38
#define USTACK_PERF_ATTR_DEFER_OUTPUT_BIT 39
#define USTACK_PERF_RECORD_CALLCHAIN_DEFERRED 22
#define USTACK_PERF_CONTEXT_USER_DEFERRED ((uint64_t)-640)

struct ustack_perf_sample {
	int event;              /* index into opts.events */
	uint32_t pid, tid, cpu;
	int kernel_mode;        /* taken while the task ran in the kernel */
	uint64_t ip;
	const uint64_t *kips;   /* kernel callchain, context markers removed */
	uint32_t nr_kips;
	int has_uregs;          /* user registers present (not a kernel thread) */
	uint64_t uip, usp, ubp; /* user ip, sp, bp */
	uint64_t ubx;           /* user rbx */
	const uint8_t *stack;   /* copy of user memory at [usp, usp + stack_size) */
	uint64_t stack_size;    /* valid bytes (the kernel's dyn_size) */
	int has_kcookie;        /* the callchain ended with PERF_CONTEXT_USER_DEFERRED: */
	uint64_t kcookie;       /* the kernel's cookie of its deferred user callchain */
	const uint8_t *raw;     /* USTACK_PERF_EV_RAW: the tracepoint's fields, */
	uint32_t raw_size;      /* raw_size bytes (padding included) */
	int has_gpregs;         /* USTACK_PERF_EV_PROBE with user registers: */
	uint64_t gpregs[USTACK_PERF_NR_GPREGS]; /* enum ustack_perf_gpreg */
};

struct ustack_perf_record {
	enum ustack_perf_rec_type type;
	uint64_t time; /* CLOCK_MONOTONIC ns */
	union {
		struct ustack_perf_sample sample;
		struct {
			uint32_t pid, tid;
			const char *comm;
			int exec;
		} comm;
		struct {
			uint32_t pid, tid;
			uint64_t start, len, pgoff;
			uint32_t maj, min, prot, flags;
			uint64_t ino;
			uint8_t build_id[20];
			uint32_t build_id_size; /* 0 unless the kernel sent one */
			const char *filename;
		} mmap2;
		struct {
			uint32_t pid, ppid, tid, ptid;
		} task; /* FORK and EXIT */
		struct {
			uint32_t cpu;
			uint64_t lost;
		} lost;
		struct {
			uint32_t pid, tid, cpu;
			uint64_t cookie;
			const uint64_t *ips; /* user pcs, innermost first (markers removed) */
			uint32_t nr;
		} deferred;
		struct {
			uint32_t pid, tid, cpu; /* the task switched in or out, where */
			int out;                /* 0: switched in; 1: out */
			int preempt;            /* out while runnable (SWITCH_OUT_PREEMPT) */
		} sw;
		struct {
			int event;      /* index into opts.events, -1: unknown id */
			int on;         /* 1: throttled (samples stop until the next
			                   tick), 0: unthrottled */
		} throttle;
	};
};

typedef void (*ustack_perf_record_fn)(void *ctx, const struct ustack_perf_record *rec);

struct ustack_perf_session;

/**
 * Open the events on every CPU for the target, map the ring buffers.
 * Counting starts at ustack_perf_session__enable() (or at the child's exec).
 * @param err receives a one-line reason on failure
 * @return the session, or NULL with errno (EACCES/EPERM: perf_event_paranoid
 *         or capabilities; ENOENT/EOPNOTSUPP: event not supported; ESRCH:
 *         no such process)
 */
struct ustack_perf_session *ustack_perf_session__open(const struct ustack_perf_opts *opts,
						      char *err, size_t errlen);
int ustack_perf_session__enable(struct ustack_perf_session *s);
int ustack_perf_session__disable(struct ustack_perf_session *s);

/**
 * Wait up to @timeout_ms for data, then read every ring buffer, sort the
 * records by time and pass to @fn those time-stamped before this call
 * began reading (a record written to a ring after it was read, but
 * stamped before a newer one read from another ring, would come after
 * it). The newer ones wait for the next call; at the end,
 * ustack_perf_session__poll_until(UINT64_MAX) delivers what waits.
 * @return records delivered, or negative errno
 */
int ustack_perf_session__poll(struct ustack_perf_session *s, int timeout_ms,
			      ustack_perf_record_fn fn, void *ctx);

/**
 * Call @fn for every perf event fd opened for event index @event (the BPF
 * backend attaches its program to them). Stops at and returns the first
 * non-zero result.
 */
int ustack_perf_session__for_each_fd(struct ustack_perf_session *s, int event,
				     int (*fn)(void *ctx, int fd), void *ctx);

/**
 * The same, delivering only the records with time <= @until; the others
 * wait, in order, for a later call (the BPF backend merges the side-band
 * with its own ring buffer this way).
 */
int ustack_perf_session__poll_until(struct ustack_perf_session *s, int timeout_ms,
				    uint64_t until, ustack_perf_record_fn fn, void *ctx);

/**
 * Non-zero when a ring buffer holds records not read yet, or a record read
 * earlier and held waits with a time <= @until: the BPF backend then
 * delivers the side-band up to its event's time before writing the event.
 * One load per ring.
 */
int ustack_perf_session__has_records(const struct ustack_perf_session *s, uint64_t until);

/** Records the parser rejected as malformed (counted, never passed on). */
uint64_t ustack_perf_session__bad_records(const struct ustack_perf_session *s);

/** Bytes of records read from the ring buffers so far. */
uint64_t ustack_perf_session__bytes(const struct ustack_perf_session *s);
/* Samples the kernel could not write to a full ring that no LOST record
 * reported, once the rings are drained: perf writes a LOST record only at
 * the next record that fits in that ring, so what a burst drops just
 * before the events close is never reported. Read from each event's own
 * count (PERF_FORMAT_LOST, Linux 6.0+; 0 before): their sum less the LOST
 * records delivered, 0 when those say as much or more (they count every
 * kind of record, side-band ones too). An inherited event's children that
 * exited took their counts with them. */
uint64_t ustack_perf_session__unreported_lost(const struct ustack_perf_session *s);

void ustack_perf_session__close(struct ustack_perf_session *s);

/**
 * Whether this kernel accepts perf_event_attr.defer_callchain and
 * defer_output (Linux 6.19+): a cpu-clock event on the calling thread is
 * opened with both bits set and closed again.
 * @return 1 accepted, 0 refused (EINVAL/E2BIG: an older kernel), or a
 *         negative errno when it could not be told (no permission)
 */
int ustack_perf_probe_defer_callchain(void);

#endif
