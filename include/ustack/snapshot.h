/* SPDX-License-Identifier: MIT */
/*
 * Snapshot: the user stacks of every thread of a running process, right
 * now. Each thread is stopped on its own (PTRACE_SEIZE + PTRACE_INTERRUPT),
 * its registers read, its stack unwound while it waits (memory read lazily
 * with process_vm_readv, a page at a time), and resumed at once. The target
 * is never left stopped: signals that would end ustack are held during each
 * short stop, and the kernel detaches the tracee if ustack dies anyway.
 */
#ifndef USTACK_SNAPSHOT_H
#define USTACK_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/ustack.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One frame of a snapshot, with its name. */
struct ustack_snapshot_frame {
	uint64_t pc;          /**< exact pc (frame 0) or return address */
	uint32_t method;      /**< enum ustack_method */
	uint32_t flags;       /**< enum ustack_frame_flags */
	uint64_t file_offset; /**< offset of pc (pc - 1 for return addresses) in its file */
	const char *path;     /**< mapping name: file path, "[vdso]", ... or NULL if unmapped */
	const char *symbol;   /**< function name or NULL */
	uint64_t symbol_off;  /**< pc - symbol start */
};

/** The stack of one thread, passed to the callback. */
struct ustack_snapshot_thread {
	int tid;
	char comm[16];
	int error;               /**< 0, or negative errno: the thread could not be
	                              stopped (-ESRCH: it exited; -EPERM) */
	unsigned int stop_reason;/**< enum ustack_stop_reason */
	uint64_t stopped_ns;     /**< how long the thread was stopped */
	int nr_frames;
	const struct ustack_snapshot_frame *frames;
};

/** Called once per thread; a non-zero return ends the snapshot. */
typedef int (*ustack_snapshot_fn)(const struct ustack_snapshot_thread *t, void *ctx);

enum ustack_snapshot_flags {
	/**
	 * Block SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE and SIGTSTP in the
	 * calling thread while each target thread is stopped (a few hundred
	 * microseconds), restoring the caller's mask after each: a Ctrl-C or
	 * Ctrl-Z then lands between two threads, never during a stop. Off by
	 * default: the library does not touch the caller's signal mask unless
	 * asked. (Even without it a target is never left stopped: the kernel
	 * resumes it if the caller dies.)
	 */
	USTACK_SNAPSHOT_HOLD_SIGNALS = 1u << 0,
};

struct ustack_snapshot_opts {
	size_t sz;        /**< sizeof(struct ustack_snapshot_opts) */
	int max_depth;    /**< frames per thread (0: 256) */
	/** for tests: hold each thread stopped this long (ms) after unwinding */
	unsigned int hold_ms;
	/** files whose unwind tables stay open at once (0: 256); more are
	 *  opened again when needed (a thread may then stay stopped longer) */
	unsigned int max_tables;
	/** enum ustack_snapshot_flags */
	unsigned int flags;
	/** root of separate debug files for the names (NULL: /usr/lib/debug);
	 *  see ustack/symbolize.h for every place debug information is looked for */
	const char *debug_dir;
};

/** Totals of one snapshot. */
struct ustack_snapshot_stats {
	unsigned int threads;      /**< threads found */
	unsigned int unwound;      /**< threads stopped and unwound */
	unsigned int vanished;     /**< threads that exited before they could be stopped */
	uint64_t max_stopped_ns;   /**< longest time one thread was stopped */
	uint64_t total_stopped_ns; /**< sum over threads */
	uint64_t pages_read;       /**< process_vm_readv calls */
};

/**
 * Take a snapshot of process @pid.
 * @param pid process id (thread group id)
 * @param opts NULL for defaults
 * @param fn called for each thread, in /proc/PID/task order
 * @param ctx passed to @fn
 * @param stats receives totals (may be NULL)
 * @return 0; -ESRCH when the process does not exist; -EPERM when it cannot
 *         be traced (ptrace permission, Yama ptrace_scope); other negative
 *         errno
 */
USTACK_API int ustack_snapshot(int pid, const struct ustack_snapshot_opts *opts,
			       ustack_snapshot_fn fn, void *ctx,
			       struct ustack_snapshot_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
