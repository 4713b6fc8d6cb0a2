/* SPDX-License-Identifier: MIT */
/*
 * Recording: perf events with their kernel stacks and deferred user stacks
 * (unwound from a copy of the top of the user stack with SFrame, DWARF CFI
 * or frame pointers, normalized to file offset + file id, deduplicated),
 * written to a compact trace file (docs/trace-format.md).
 */
#ifndef USTACK_RECORD_H
#define USTACK_RECORD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <ustack/ustack.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Where user stacks are unwound. */
enum ustack_record_backend {
	/** bpf where its program loads, else copy (the stats say which and why) */
	USTACK_RECORD_AUTO = 0,
	/** in the kernel, by a BPF program, at the event: no stack copies */
	USTACK_RECORD_BPF = 1,
	/** in user space, from 16 KiB of stack copied per event (perf's way) */
	USTACK_RECORD_COPY = 2,
};

/** Totals of a recording (also passed to the progress callback). */
struct ustack_record_stats {
	uint64_t samples;       /**< perf samples received */
	uint64_t events;        /**< EVENT records written */
	uint64_t user_stacks;   /**< USER_STACK records written (one per cookie) */
	uint64_t unwinds;       /**< user stacks unwound */
	uint64_t shared;        /**< samples that shared an unwind (same kernel entry) */
	uint64_t no_user_stack; /**< events without a user stack (kernel threads,
	                             withheld after lost records, unwind errors) */
	uint64_t kernel_stacks; /**< distinct kernel stacks */
	uint64_t distinct_user_stacks; /**< distinct user stacks */
	uint64_t lost;          /**< perf records lost in the ring buffers */
	uint64_t bad_records;   /**< malformed ring-buffer records skipped */
	uint64_t bytes;         /**< bytes written to the trace so far */
	uint64_t frames;        /**< user frames unwound, by method: */
	uint64_t frames_by_method[8]; /**< indexed by enum ustack_method */
	double seconds;         /**< recording time */
	int child_status;       /**< wait status of the recorded command (-- CMD) */
	uint32_t backend;       /**< enum ustack_record_backend used (BPF or COPY) */
	char backend_note[200]; /**< auto: why bpf was not used ("" otherwise) */
	uint64_t kernel_bytes;  /**< bytes the kernel handed to the recorder (ring
	                             buffers, kernel stacks read from a map) */
	uint64_t not_loaded;    /**< bpf: walks stopped at a file whose table was
	                             not in the kernel yet */
	uint64_t copied;        /**< bpf: of those (and of walks that found the
	                             mappings locked), stacks finished in user space
	                             from a copy of the stack */
	uint64_t read_faults;   /**< bpf: walks stopped at a page that could not
	                             be read without faulting */
	uint64_t tables_loaded; /**< bpf: unwind tables put into the kernel */
	uint64_t table_bytes;   /**< bpf: their bytes in the kernel now */
	uint64_t tables_evicted; /**< bpf: tables dropped for the memory budget */
	double table_seconds;   /**< bpf: time spent building and loading tables */
	uint64_t walks_at_once; /**< bpf: samples walked in the interrupt (every
	                             mapping in the task's VMA cache) */
	uint64_t walks_deferred; /**< bpf: samples walked on the way back to user
	                              space (a mapping not cached yet) */
	uint64_t walks_late;    /**< bpf: of those, user code had run before the
	                             walk: kept without a user stack */
	uint64_t jit_symbols;   /**< JIT symbols copied from /tmp/perf-PID.map files */
	uint64_t maps_busy;     /**< bpf: walks stopped at mappings locked by
	                             another thread (finished from a copy) */
	uint64_t copies_skipped; /**< bpf: walks that stopped (not-loaded,
	                              maps-busy) while the ring buffer was
	                              half full: no copy, the partial stack kept */
	/** the kernel's deferred user callchains (Linux 6.19+): enum
	 *  ustack_record_kernel_callchains */
	uint32_t kernel_callchains;
	uint64_t kfp_requests;  /**< samples whose user callchain the kernel deferred */
	uint64_t kfp_entries;   /**< of those, distinct kernel entries (one cookie each) */
	uint64_t kfp_cookie_mismatch; /**< samples of one entry with another kernel cookie */
	uint64_t kfp_records;   /**< PERF_RECORD_CALLCHAIN_DEFERRED records read */
	uint64_t kfp_matched;   /**< of those, matched to an entry by tid, then cookie */
	uint64_t kfp_stacks;    /**< user stacks written with frames from the kernel
	                             (method kernel-fp) */
	uint64_t kfp_whole;     /**< of those, every frame from the kernel */
	uint64_t kfp_untrusted; /**< stacks whose kernel frames end at a frame that
	                             keeps no frame pointer (ustack's frames used
	                             beyond it) */
	uint64_t kfp_disagree;  /**< kernel callchains whose trusted frames differ from
	                             ustack's unwind (ustack's stack kept) */
	uint64_t kfp_missing;   /**< entries whose kernel callchain never came (ustack's
	                             own stack written) */
	uint64_t kfp_extended;  /**< stacks the kernel's frames continued past the end
	                             of ustack's unwind (stack copy too short) */
	uint64_t kfp_moved;     /**< kernel callchains not starting at the sample's user
	                             pc (it went back to user space elsewhere: a sample
	                             inside execve(), a signal): ustack's stack kept */
	uint64_t walks_hot;     /**< bpf: walks finished from the task's hot stack (the
	                             frames above the leaf's caller, kept from its last
	                             walk and checked word by word against the stack) */
	uint64_t bpf_skipped;   /**< bpf: events the kernel did not run the program for
	                             (another BPF program was running on that CPU:
	                             bpf_prog_info.recursion_misses); not recorded */
	/* Capture of the files the stacks ran through into the build-ID cache
	 * (FILE_CONTENT records; since 0.3): */
	uint32_t capture;          /**< 1: on (not no_capture, and the cache opened) */
	uint64_t capture_new;      /**< files stored now */
	uint64_t capture_cached;   /**< files the cache held already */
	uint64_t capture_bytes;    /**< bytes of the files stored now */
	uint64_t capture_too_big;  /**< larger than capture_max_size: hashed only */
	uint64_t capture_conflicts; /**< stored, but the cache's first file of that
	                                 build ID holds other content */
	uint64_t capture_gone;     /**< not captured: the process was gone before its
	                                mapping could be opened */
	uint64_t capture_fd_cap;   /**< not captured: the cap on kept descriptors */
	uint64_t capture_errors;   /**< not captured: read or store errors, and files
	                                left when the wait at the end was stopped */
	uint64_t capture_debug;    /**< separate debug files stored (containers) */
	double capture_seconds;    /**< CPU time of the capture thread */
	uint64_t capture_by_path;  /**< of the captured: opened at the recorded path, the
	                                process gone, its device and inode those of
	                                the mapping (since 0.3) */
	/* Off-CPU intervals (events "off-cpu", "off-cpu-preempt"; since 0.3): */
	uint64_t offcpu_intervals; /**< intervals recorded (EVENT records) */
	uint64_t offcpu_ns;        /**< their total time blocked */
	uint64_t offcpu_short;     /**< intervals below off_cpu_min_ns: not recorded */
	uint64_t offcpu_short_ns;  /**< their total time */
	uint64_t offcpu_unpaired;  /**< switch-outs never followed by a switch-in the
	                                recorder saw (the thread exited, the recording
	                                ended, a record was lost): not recorded */
	/* Probes (uprobe:, uretprobe:, usdt: events and --alloc's allocator
	 * functions; since 0.3): */
	uint64_t probe_attached;   /**< places a probe was attached to (file, offset) */
	uint64_t probe_hits;       /**< hits of the recorded processes */
	uint64_t probe_kept;       /**< of those, written as EVENTs (uprobe events), or
	                                (allocator functions) handled */
	uint64_t probe_rate_dropped; /**< hits above probe_rate_max: not recorded */
	uint64_t probe_run_ns;     /**< bpf: ns the probe programs ran in the kernel
	                                (kernel.bpf_stats_enabled; 0: not measured) */
	uint64_t probe_runs;       /**< bpf: their runs (probe_run_ns / probe_runs is
	                                the in-kernel cost per hit) */
	/* Allocation profiling (record --alloc; since 0.3): */
	uint64_t alloc_calls;      /**< allocations seen (every call, sampled or not) */
	uint64_t alloc_bytes;      /**< their bytes */
	uint64_t alloc_sampled;    /**< kept by the byte sampling (EVENT "alloc") */
	uint64_t alloc_frees;      /**< frees of kept allocations (EVENT "free") */
	uint64_t alloc_live_dropped; /**< kept allocations not tracked (the live map was
	                                  full): their frees are not seen */
	uint64_t alloc_via;        /**< how allocations were seen: enum
	                                ustack_record_alloc_via, _UPROBES or _PRELOAD
	                                (0: no allocation profiling) */
	/* Python frames (CPython 3.11-3.13, bpf backend; since 0.3): */
	uint64_t python_found;     /**< CPython processes whose frames were read */
	uint64_t python_refused;   /**< CPython processes refused (version, build):
	                                python_refused_why says the last one */
	uint64_t python_copy;      /**< CPython processes recorded by the copy backend,
	                                whose Python frames cannot be read there */
	uint64_t python_frames;    /**< Python frames in the stacks written */
	uint64_t python_code_read; /**< code objects read (once per process, address,
	                                fingerprint) */
	uint64_t python_code_unreadable; /**< of those, unreadable or not matching
	                                the kernel's fingerprint: their frames are
	                                Python frames of an unknown function */
	uint64_t python_not_placed; /**< stacks whose Python frames could not be
	                                placed among the native ones: written native-only */
	uint64_t python_chains_cut; /**< chains the kernel stopped early (room, a
	                                read fault, a thread state not found) */
	char python_refused_why[200]; /**< the find's line for the last refusal */
	/* Python, more (since 0.3): */
	uint64_t python_copies;    /**< stack copies sent with their thread's Python
	                                frames (the native walk could not finish) */
	uint64_t python_early;     /**< user stacks of a process mapping CPython walked
	                                before the kernel knew its interpreter (still
	                                starting, or found after): native frames only */
	uint64_t python_beyond_cut; /**< stacks whose native walk stopped early with
	                                older Python frames than its eval frames run:
	                                those written after its last native frame */
	/* Kernel stacks the bpf backend's stack map could not store, its
	 * bucket holding another stack (since 0.3): */
	uint64_t kernel_stacks_whole; /**< sent whole in the ring buffer instead */
	uint64_t kernel_stacks_lost;  /**< events recorded without their kernel
	                                  stack: not sent either (the ring buffer
	                                  full) */
	/* bpf backend, -p / a command (since 0.3): */
	uint64_t targets_full;     /**< processes started by recorded ones that were
	                                not recorded: the table of recorded
	                                processes (65,536 live at once) was full */
};

/** ustack_record_opts.alloc_via, ustack_record_stats.alloc_via (since 0.3) */
enum ustack_record_alloc_via {
	/** a command ustack starts: _PRELOAD when its executable is dynamically
	 *  linked and libustack-alloc.so is found, else _UPROBES; -p, -a:
	 *  _UPROBES */
	USTACK_ALLOC_VIA_AUTO = 0,
	/** uprobes on the allocator's functions: every call traps into the
	 *  kernel (microseconds each), whatever the sampling keeps */
	USTACK_ALLOC_VIA_UPROBES = 1,
	/** libustack-alloc.so LD_PRELOADed into the command: the sampling runs
	 *  in the program, only kept allocations and their frees trap (a
	 *  command ustack starts, dynamically linked) */
	USTACK_ALLOC_VIA_PRELOAD = 2,
};

/** ustack_record_stats.kernel_callchains */
enum ustack_record_kernel_callchains {
	USTACK_KCC_NOT_ASKED = 0,   /**< bpf backend, or turned off (kernel_callchains opt) */
	USTACK_KCC_UNSUPPORTED = 1, /**< the kernel refused defer_callchain (before 6.19) */
	USTACK_KCC_USED = 2,        /**< asked for, consumed (copy backend) */
};

/** Progress callback. @st is the library's own full struct (read-only;
 *  fields are only ever appended): an older caller reads those it knows. */
typedef void (*ustack_record_progress_fn)(void *ctx, const struct ustack_record_stats *st);

struct ustack_record_opts {
	size_t sz;                 /**< sizeof(struct ustack_record_opts) */
	const char *output;        /**< trace file; NULL: "ustack.data" */
	const char *const *events; /**< event names; NULL/0: "cpu-clock" */
	int nr_events;
	uint32_t freq;             /**< Hz for sampling events; 0: 999 */
	uint32_t stack_size;       /**< user stack bytes per sample; 0: 16384 */
	const int *pids;           /**< processes to record, or */
	int nr_pids;
	int system_wide;           /**< every process, or */
	/** a command to run: recorded when alone; with pids or system_wide
	 *  only run, the recording ending when it exits (perf's "record
	 *  while CMD runs"; with system_wide it is recorded as part of the
	 *  machine) */
	char *const *argv;
	double duration;           /**< seconds; 0: until the command/processes end or *stop */
	volatile sig_atomic_t *stop; /**< set non-zero (e.g. by SIGINT) to finish */
	ustack_record_progress_fn progress; /**< called about once a second */
	void *progress_ctx;
	const char *cmdline;       /**< stored in the trace header */
	char *errbuf;              /**< receives a one-line message on failure */
	union {
		size_t errbuf_sz;  /**< size of errbuf (the name every opts uses) */
		/** the 0.1 name of errbuf_sz, same field: deprecated */
		size_t errlen __attribute__((deprecated("use errbuf_sz")));
	};
	/** files whose unwind tables stay open at once (0: 256); more are
	 *  opened again when needed. Bounds memory on machines with many
	 *  mapped files (-a) */
	unsigned int max_tables;
	/** enum ustack_record_backend (0: auto) */
	unsigned int backend;
	/** bpf: bytes of unwind rows the kernel may hold (0: 256 MiB); when
	 *  full, the oldest tables are evicted (their frames then end the
	 *  walk as not-loaded, finished from a stack copy) */
	uint64_t table_memory;
	/** 1: do not ask the kernel for its deferred user callchains even
	 *  where it has them (0: ask, copy backend, Linux 6.19+) */
	unsigned int no_kernel_callchains;
	/** capture: larger files are hashed, not stored (0: 512 MiB; since
	 *  0.3). Before no_capture: a field in the 0.2 struct's tail padding
	 *  would be read from an older caller's uninitialized bytes. */
	uint64_t capture_max_size;
	/** 1: do not capture the files the stacks ran through into the
	 *  build-ID cache (since 0.3) */
	unsigned int no_capture;
	/** events "off-cpu" and "off-cpu-preempt": intervals shorter than this
	 *  many ns are not recorded, only counted and summed (stats
	 *  offcpu_short, offcpu_short_ns; since 0.3) */
	uint64_t off_cpu_min_ns;
	/** allocation profiling (the events "alloc" and "free", record
	 *  --alloc): the mean of the byte sampling, a Poisson process over
	 *  the bytes allocated (0: 524288; 1: every allocation; since 0.3) */
	uint64_t alloc_mean;
	/** kept allocations tracked until freed at once (0: 1048576); more
	 *  are counted in alloc_live_dropped (since 0.3) */
	uint32_t alloc_live_max;
	/** probe hits recorded per second and CPU at most (0: 200000;
	 *  UINT32_MAX: no limit); above it hits are counted in
	 *  probe_rate_dropped, not unwound (since 0.3) */
	uint32_t probe_rate_max;
	/** how --alloc sees allocations: enum ustack_record_alloc_via (since
	 *  0.3) */
	unsigned int alloc_via;
	/** libustack-alloc.so for USTACK_ALLOC_VIA_PRELOAD (NULL: beside the
	 *  running program, then in ../lib/ustack/ from it; since 0.3) */
	const char *alloc_preload;
	/** 1: do not look for CPython, no Python frames (since 0.3) */
	int no_python;
};

/**
 * A recording in progress, for callers with their own event loop: it reads
 * only when asked (ustack_recorder__poll/__read), and ustack_recorder__fd
 * says when there is something to read. ustack_record() is the same, in a
 * loop. Not thread-safe; one thread drives one recorder.
 */
struct ustack_recorder;

/**
 * Start recording: the events are open and running (a command given in
 * argv has been started) when this returns.
 * @param opts as for ustack_record() (a target is required: NULL gives
 *        EINVAL). Copied, but what its
 *        pointers point to (output, events, pids, argv, stop, errbuf)
 *        must stay valid until ustack_recorder__free()
 * @return the recorder, or NULL with errno set and opts->errbuf filled
 *         (EINVAL: opts from a newer header asking for something unknown)
 */
USTACK_API struct ustack_recorder *ustack_recorder__new(const struct ustack_record_opts *opts);

/**
 * An fd to poll for reading (epoll, poll, select): readable when the
 * kernel has events for the recorder, the command exited, or at least
 * every 100 ms (duration, processes gone, the once-a-second flush).
 * Owned by the recorder: do not close it.
 * @return the fd, or -EINVAL
 */
USTACK_API int ustack_recorder__fd(const struct ustack_recorder *rec);

/**
 * Wait up to @timeout_ms (0: not at all, -1: until the fd is readable),
 * then read and write to the trace everything available.
 * @return 0: recording goes on; 1: it is over (the command ended, the
 *         processes are gone, the duration passed, opts->stop was set):
 *         call ustack_recorder__stop(); negative errno on failure (the
 *         message in opts->errbuf; ustack_recorder__stop() still closes a
 *         readable trace)
 */
USTACK_API int ustack_recorder__poll(struct ustack_recorder *rec, int timeout_ms);

/** ustack_recorder__poll(rec, 0): read what is there, never wait. */
USTACK_API int ustack_recorder__read(struct ustack_recorder *rec);

/**
 * Finish: stop the events, read what is left, write the open user stacks
 * and the end of the trace, close it. A command still running goes on
 * running (as with perf). A second call returns the first one's result.
 * @return 0, or negative errno as ustack_record() returns it
 */
USTACK_API int ustack_recorder__stop(struct ustack_recorder *rec);

/**
 * The totals so far (final after ustack_recorder__stop()).
 * @param st receives them
 * @param sz sizeof(*st) as the caller knows it: a smaller, older struct
 *        gets the fields it has; a larger, newer one gets its unknown
 *        fields zeroed
 * @return 0 or -EINVAL
 */
USTACK_API int ustack_recorder__stats(const struct ustack_recorder *rec,
				      struct ustack_record_stats *st, size_t sz);

/** Free the recorder (stopping it first if needed). NULL is a no-op. */
USTACK_API void ustack_recorder__free(struct ustack_recorder *rec);

/**
 * Record until the command exits, the processes are gone, the duration
 * passes or *stop is set. Whatever was recorded before a failure stays
 * readable (the trace is written in checksummed chunks).
 * @param opts options; a target (pids, system_wide or argv) is required,
 *        so NULL fails with -EINVAL ("nothing to record")
 * @param stats receives the totals (may be NULL)
 * @param stats_sz sizeof(*stats) as the caller was built with (since 0.2):
 *        an older, shorter struct gets the fields it has
 * @return 0; negative errno on failure with errbuf filled (EINVAL: opts
 *         from a newer header asking for something unknown; EACCES/EPERM:
 *         not permitted; ENOENT: unknown event; ESRCH: no such process;
 *         ENOSPC/EFBIG/EIO: writing the trace failed)
 */
USTACK_API int ustack_record(const struct ustack_record_opts *opts,
			     struct ustack_record_stats *stats, size_t stats_sz);

#ifdef __cplusplus
}
#endif
#endif
