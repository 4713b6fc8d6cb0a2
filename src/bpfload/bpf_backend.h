/* SPDX-License-Identifier: MIT */
/*
 * The BPF backend's kernel side, seen from user space: loads the recording
 * program (src/bpf/record.bpf.c, built into a libbpf skeleton), keeps its
 * maps (targets, files and their unwind tables), attaches it to the events
 * and hands the ring buffer's records to the recorder. Knows nothing of the
 * trace format; src/record/backend_bpf.c drives it.
 */
#ifndef USTACK_BPFLOAD_BPF_BACKEND_H
#define USTACK_BPFLOAD_BPF_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/record_abi.h"
#include "unwind/modules.h"

struct ustack_bpf;

struct ustack_bpf_opts {
	size_t sz;
	int trace_all;          /* every task but ours (-a) */
	uint32_t self_tgid;
	uint32_t sample_event;  /* event index the perf_event program reports */
	uint64_t table_bytes;   /* budget for rows in the kernel (0: 256 MiB) */
	uint32_t ring_bytes;    /* ring buffer size (power of 2; 0: 16 MiB) */
	/* off-CPU intervals: the event index of "off-cpu" (asleep) and of
	 * "off-cpu-preempt" (preempted), UB_NO_EVENT where not recorded (0
	 * in both, an opts without them: neither); intervals shorter than
	 * offcpu_min_ns are only counted */
	uint32_t offcpu_sleep_event, offcpu_preempt_event;
	uint64_t offcpu_min_ns;
	/* probes: hits unwound per second and CPU at most (0: no limit) */
	uint32_t probe_rate_max;
	/* allocation profiling: the event indexes of "alloc" and "free"
	 * (UB_NO_EVENT: not recorded; 0 in both: neither), the byte
	 * sampling's mean and the live map's size */
	uint32_t alloc_event, free_event;
	uint64_t alloc_mean;
	uint32_t alloc_live_max;
	/* probes: entries of the probes map (one per uprobe link, filled with
	 * ustack_bpf__set_probe() before attaching); 0: the probe programs
	 * are not loaded. Non-zero also turns BPF run-time stats on while the
	 * backend is open (probe_run_ns) */
	uint32_t nr_probes;
	/* programs not loaded (0: loaded): the tracepoint one (and its
	 * system-call kprobe form) where no tracepoint event is recorded, the
	 * perf-event one where there is no sampling event. The kernel verifies
	 * each of them whole (~43 KB of instructions): a third of the start-up */
	uint32_t no_tracepoints, no_sampling;
	/* 1: no event of the recording takes a kernel stack (system-call
	 * tracepoints, probes and allocations only): the kernel stack map,
	 * 16,384 preallocated stacks of 127 frames whose creation is ~35 ms
	 * of a recording's start-up, is made with one */
	uint32_t no_kernel_stacks;
};

/* The one line saying why loading failed with @ret: @has_btf, whether
 * /sys/kernel/btf/vmlinux is readable; @privileged, whether the process has
 * CAP_BPF or CAP_SYS_ADMIN (EACCES is then the verifier's rejection, not a
 * missing permission); @libbpf_msg, libbpf's last failure message or NULL */
void ustack_bpf__load_why(int ret, int has_btf, int privileged, const char *libbpf_msg,
			  char *err, size_t errlen);

/**
 * Load the program. On failure @err says which of: no permission, no BTF,
 * a helper or map type the kernel lacks, a verifier rejection.
 * @return the backend, or NULL with errno
 */
struct ustack_bpf *ustack_bpf__open(const struct ustack_bpf_opts *o, char *err, size_t errlen);
void ustack_bpf__close(struct ustack_bpf *b);

/** Trace process @tgid (armed: only from its next exec on). 0 or -errno */
/* Mark @tgid as a CPython process whose frames the walk reads (@c), or
 * unmark it (@c NULL: its exec replaced the interpreter, or it exited) */
int ustack_bpf__set_python(struct ustack_bpf *b, uint32_t tgid, const struct ub_pyconf *c);
int ustack_bpf__add_target(struct ustack_bpf *b, uint32_t tgid, int armed);
/** Entry @idx (< nr_probes) of the probes map: what a hit of the link
 *  attached with cookie @idx records. 0 or -errno */
int ustack_bpf__set_probe(struct ustack_bpf *b, uint32_t idx, const struct ub_probe *p);
/** Follow forks and execs of the targets (not needed with trace_all). */
int ustack_bpf__attach_follow(struct ustack_bpf *b, char *err, size_t errlen);
/** Run at every hit of tracepoint SYS:NAME, reporting event index @event. */
int ustack_bpf__attach_tracepoint(struct ustack_bpf *b, const char *sys, const char *name,
				  uint32_t event, char *err, size_t errlen);
/** Record off-CPU intervals: attach to sched_switch (opened with an
 *  off-CPU event, else -ENOENT). 0 or -errno with @err */
int ustack_bpf__attach_sched(struct ustack_bpf *b, char *err, size_t errlen);
/** Stop recording off-CPU intervals (the end: its counters stop moving,
 *  and every interval it sent is in the ring). */
void ustack_bpf__detach_sched(struct ustack_bpf *b);
/** Run at every overflow of the perf event @fd (it writes no sample then). */
int ustack_bpf__attach_perf(struct ustack_bpf *b, int fd, char *err, size_t errlen);
/* Attach the program @prog (its name in record.bpf.c) as a uprobe
 * (@retprobe: a uretprobe) at file offset @offset of @path, for process
 * @pid only (-1: every process mapping the file), with the USDT semaphore
 * at file offset @ref_ctr_offset (0: none) and @cookie as its
 * bpf_get_attach_cookie(). Through perf's uprobe PMU (libbpf): the kernel
 * removes the probe when the link's fd closes, also when ustack is killed.
 * 0, or -errno with @err naming the file and offset. */
int ustack_bpf__attach_uprobe(struct ustack_bpf *b, const char *prog, int retprobe, int pid,
			      const char *path, uint64_t offset, uint64_t ref_ctr_offset,
			      uint64_t cookie, char *err, size_t errlen);
/** Remove every uprobe of ustack_bpf__attach_uprobe() (the end of the
 *  recording: the probe counters stop moving, every hit they count is in
 *  the ring or counted as dropped, and the processes run untrapped). */
void ustack_bpf__detach_probes(struct ustack_bpf *b);

/** record --alloc: forget the live allocations of the processes @tgids
 *  (they exited). Entries removed. */
int ustack_bpf__alloc_purge(struct ustack_bpf *b, const uint32_t *tgids, size_t n);

/** What loading a file's table did. */
enum ustack_bpf_load {
	USTACK_BPF_LOADED = 0,   /* rows built, on their way into the kernel */
	USTACK_BPF_NO_TABLE = 1, /* the file has no unwind information: heuristic only */
};

/**
 * Give the kernel side file (dev, ino) (kernel dev encoding) with trace
 * file id @file_id and the tables of @m (NULL: the file has none).
 * Replaces an earlier entry of the same key.
 * @return enum ustack_bpf_load, or -errno (-ENOSPC: budget or map full)
 */
int ustack_bpf__set_file(struct ustack_bpf *b, uint64_t dev, uint64_t ino, uint64_t file_id,
			 struct ustack_modtab *m);
/**
 * The same for the file open at @fd (owned: closed by the call), all of it
 * done by the writer thread: opening, compiling the rows, the maps. The
 * call only queues it (the file is "had" from now on).
 * @return USTACK_BPF_LOADED (queued), or -ENOMEM
 */
int ustack_bpf__set_file_fd(struct ustack_bpf *b, uint64_t dev, uint64_t ino, uint64_t file_id,
			    int fd);
/**
 * Wait until every table given by ustack_bpf__set_file() is in the kernel
 * (they are written by a thread of their own: the kernel waits for an RCU
 * grace period at each).
 */
void ustack_bpf__sync(struct ustack_bpf *b);
/** The file (dev, ino) has an entry (loaded, queued, or known to have no table). */
int ustack_bpf__has_file(struct ustack_bpf *b, uint64_t dev, uint64_t ino);

/**
 * One record of the ring buffer: an event (struct ub_event) or a stack
 * (struct ub_stack + its words). @size is the record's size.
 * Return 0 to go on, non-zero to stop consuming.
 */
typedef int (*ustack_bpf_record_fn)(void *ctx, const void *rec, size_t size);

/**
 * Wait up to @timeout_ms for the ring buffer (woken when an eighth of it
 * is used) or a watched fd, then pass every record in the ring to @fn.
 * Records consumed or -errno.
 */
/** An epoll fd readable when ustack_bpf__poll has something (>= 0) or -errno. */
int ustack_bpf__poll_fd(struct ustack_bpf *b);
/** Also wake ustack_bpf__poll when @fd is readable (the perf side-band). */
int ustack_bpf__watch_fd(struct ustack_bpf *b, int fd);
int ustack_bpf__poll(struct ustack_bpf *b, int timeout_ms, ustack_bpf_record_fn fn, void *ctx);

/** The kernel stack @id of the stack-trace map into @ips (up to 127): count, or -errno. */
int ustack_bpf__kstack(struct ustack_bpf *b, int32_t id, uint64_t *ips, uint32_t max);

struct ustack_bpf_stats {
	uint64_t c[UB_NR_COUNTERS]; /* the program's counters, summed over CPUs */
	uint64_t ring_bytes;        /* bytes read from the ring buffer (with headers) */
	uint64_t kstack_bytes;      /* bytes of kernel stacks read from the map */
	uint64_t tables, rows, table_bytes; /* tables in the kernel now */
	uint64_t tables_evicted, tables_refused;
	uint64_t load_ns;           /* time spent loading tables */
	uint64_t tables_loaded;     /* tables built and given to the kernel */
	uint64_t skipped;           /* runs of the event programs the kernel skipped
				       (another BPF program running on that CPU:
				       the events are not recorded, bpf_prog_info
				       recursion_misses) */
	uint64_t probe_run_ns, probe_runs; /* the probe programs' bpf_prog_info run
					      time and runs (0 without BPF stats) */
	int probe_stats_errno;      /* why BPF stats could not be turned on (0: on) */
};
void ustack_bpf__stats(struct ustack_bpf *b, struct ustack_bpf_stats *st);
/** Processes `targets` has room for (the recorded ones and what they start). */
uint32_t ustack_bpf__targets_max(const struct ustack_bpf *b);
/** One counter (enum ub_counter) summed over CPUs: one map lookup. */
uint64_t ustack_bpf__counter(struct ustack_bpf *b, unsigned int c);

#endif
