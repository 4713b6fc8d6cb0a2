/* SPDX-License-Identifier: MIT */
/*
 * Snapshot: the user stacks of every thread of a running process, right
 * now, one thread at a time. A thread blocked in the kernel (futex, read,
 * poll, sleep: most threads of most processes) is not stopped at all
 * (since 0.3): the sp and pc it entered the kernel with are read from
 * /proc/PID/task/TID/syscall and its stack while it stays blocked, and its
 * run count (/proc/PID/task/TID/schedstat), equal before and after, shows
 * it did not run in between; otherwise, or when its walk needs rbp or rbx
 * (which /proc does not give), it is stopped as every other thread is
 * (after 8 such in a row, the rest are stopped without trying /proc). A
 * thread is stopped on its own (PTRACE_SEIZE + PTRACE_INTERRUPT), its
 * registers read, its stack unwound while it waits (memory read lazily
 * with process_vm_readv, a page at a time), and resumed at once. The target
 * is never left stopped: signals that would end ustack are held during each
 * short stop, and the kernel detaches the tracee if ustack dies anyway.
 *
 * A process that runs CPython 3.11-3.13 also gets each thread's Python
 * frames (since 0.3; USTACK_SNAPSHOT_NO_PYTHON turns them off), read from
 * the interpreter's memory in the same stop or blocked window as the
 * thread's native stack, and placed under the _PyEval_EvalFrameDefault
 * native frame that runs them (py_frames[].native_index). A CPython that
 * is not read says why in the stats (py_status, python).
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

/**
 * One function of a frame's inline chain (USTACK_SNAPSHOT_LINES). A frame
 * whose pc is in inlined code has several, innermost first; the last one of
 * each frame is the function that holds the code (inlined 0).
 */
struct ustack_snapshot_line {
	int frame;            /**< index in frames[] */
	uint32_t inlined;     /**< 1: inlined into the next entry of the frame */
	const char *function; /**< name, or NULL when unknown */
	const char *file;     /**< source file (DWARF), NULL when unknown */
	uint32_t line;        /**< source line, 0 when unknown: of the pc for the
	                           first entry of a frame, else of the call site of
	                           the entry before */
	uint32_t column;      /**< 0 when unknown */
};

/**
 * One interpreted frame of a CPython thread (since 0.3): an element of
 * ustack_snapshot_thread.py_frames[], so frozen like the other arrays'.
 */
struct ustack_snapshot_pyframe {
	const char *func;     /**< co_qualname: "Class.method", "<lambda>", "<module>" */
	const char *file;     /**< co_filename, as the interpreter has it */
	uint32_t line;        /**< from the code's location table; 0 when unknown */
	uint32_t flags;       /**< enum ustack_snapshot_pyframe_flags */
	/** index in frames[] of the _PyEval_EvalFrameDefault native frame that
	 *  runs it, -1 when it cannot be placed (py_note says why) */
	int32_t native_index;
};

/** Marks of a Python frame. */
enum ustack_snapshot_pyframe_flags {
	/** the first frame its C-level _PyEval_EvalFrameDefault call ran: it
	 *  and the newer frames up to the previous such one are that native
	 *  frame's */
	USTACK_SNAPSHOT_PYFRAME_ENTRY = 1u << 0,
	/** the line could not be read (line is 0) */
	USTACK_SNAPSHOT_PYFRAME_LINE_UNKNOWN = 1u << 1,
};

/** The stack of one thread, passed to the callback. */
struct ustack_snapshot_thread {
	int tid;
	char comm[16];
	int error;               /**< 0, or negative errno: the thread could not be
	                              stopped (-ESRCH: it exited; -EPERM) */
	unsigned int stop_reason;/**< enum ustack_stop_reason */
	uint64_t stopped_ns;     /**< how long the thread was stopped (0: it was not,
	                              USTACK_SNAPSHOT_THREAD_NOT_STOPPED) */
	int nr_frames;
	const struct ustack_snapshot_frame *frames;
	/* appended in 0.2: */
	int nr_lines;         /**< entries of lines[] (0 without USTACK_SNAPSHOT_LINES) */
	/** every frame's inline chain, frame after frame (each frame has at
	 *  least one entry); NULL without USTACK_SNAPSHOT_LINES */
	const struct ustack_snapshot_line *lines;
	/* appended in 0.3: */
	/** parallel to lines[] (nr_lines entries): the line where each entry's
	 *  function is declared (DW_AT_decl_line), 0 when unknown; NULL
	 *  without USTACK_SNAPSHOT_LINES. An array of its own because
	 *  struct ustack_snapshot_line, an array element, is frozen. */
	const uint32_t *line_decls;
	/** enum ustack_snapshot_thread_flags (since 0.3) */
	unsigned int thread_flags;
	/* appended in 0.3, with Python frames (pointers first: the old
	 * struct's tail padding stays padding): */
	/** the thread's CPython frames, innermost first, read while the thread
	 *  was stopped or known not to run (as its frames[] were); nr_py_frames
	 *  entries */
	const struct ustack_snapshot_pyframe *py_frames;
	/** one line when py_frames[] is not the whole chain or could not be
	 *  placed ("Python frames not placed: 3 runs of Python frames, 2
	 *  _PyEval_EvalFrameDefault frames"), NULL when all is well */
	const char *py_note;
	/** entries of py_frames[] (0: not a thread of a supported CPython, or
	 *  USTACK_SNAPSHOT_NO_PYTHON) */
	int nr_py_frames;
};

/** How a thread of a snapshot was read. */
enum ustack_snapshot_thread_flags {
	/** blocked in the kernel: unwound from the registers it entered the
	 *  kernel with, without being stopped (stopped_ns is 0) */
	USTACK_SNAPSHOT_THREAD_NOT_STOPPED = 1u << 0,
};

/** Called once per thread; a non-zero return ends the snapshot. The
 *  thread is the library's (read-only, grows only at its end): a caller
 *  built against an older header reads the fields it knows. */
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
	/**
	 * Source lines and inlined functions of every frame (the
	 * ustack_snapshot_thread lines[]), from the DWARF of each file or of
	 * its separate debug file. Read after each thread is resumed, never
	 * while it is stopped; costs the DWARF reading of each file.
	 */
	USTACK_SNAPSHOT_LINES = 1u << 1,
	/**
	 * No function names: frames get pc, method, flags, path and
	 * file_offset, and symbol stays NULL. No symbol table and no debug
	 * file is read, for callers that print addresses only (since 0.2;
	 * ignored with USTACK_SNAPSHOT_LINES).
	 */
	USTACK_SNAPSHOT_NO_NAMES = 1u << 2,
	/**
	 * Stop every thread, also those blocked in the kernel, which are
	 * otherwise read without a stop (since 0.3; before, every thread was
	 * stopped). Every thread's registers then come from ptrace, rbp and
	 * rbx included. hold_ms implies it.
	 */
	USTACK_SNAPSHOT_STOP_ALL = 1u << 3,
	/**
	 * Do not look for CPython (since 0.3). Without it, a process that runs
	 * a supported CPython (3.11-3.13) gets each thread's Python frames
	 * (py_frames[]), read while the thread is stopped or blocked, as its
	 * native stack; the stats say which CPython, or why it was not read.
	 */
	USTACK_SNAPSHOT_NO_PYTHON = 1u << 4,
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
	/** if not NULL, receives a one-line reason when the snapshot fails
	 *  ("pid 123: no such process"); since 0.2 */
	char *errbuf;
	size_t errbuf_sz;
};

/** Totals of one snapshot. */
struct ustack_snapshot_stats {
	unsigned int threads;      /**< threads found */
	unsigned int unwound;      /**< threads unwound (stopped or not) */
	unsigned int vanished;     /**< threads that exited before they could be stopped */
	uint64_t max_stopped_ns;   /**< longest time one thread was stopped */
	uint64_t total_stopped_ns; /**< sum over threads */
	uint64_t pages_read;       /**< process_vm_readv calls */
	/* since 0.3: */
	/** threads unwound without a stop (blocked in the kernel) */
	unsigned int not_stopped;
	/** threads found blocked whose walk without a stop was dropped (the
	 *  thread ran meanwhile, or the walk needed rbp/rbx or ended early),
	 *  then stopped and unwound as the others (or, when ptrace is refused,
	 *  reported with error -EPERM: another tracer holds the thread) */
	unsigned int restopped;
	/* since 0.3 (Python frames): */
	/** 1: the process runs a supported CPython, read (python says
	 *  which); 0: no CPython in it, or not looked for
	 *  (USTACK_SNAPSHOT_NO_PYTHON, a core); a negative errno: a CPython
	 *  not read, python says why (-ENOTSUP: "CPython 3.10 is not
	 *  supported (3.11-3.13)"; others: finding it or its threads failed) */
	int py_status;
	/** threads given Python frames */
	unsigned int py_threads;
	/** of those, threads whose Python frames could not be placed among
	 *  their native frames (native_index -1, py_note says why) */
	unsigned int py_unplaced;
	/** "CPython 3.11.2 (/usr/bin/python3.11)", or why it was not read;
	 *  empty when py_status is 0 */
	char python[256];
	/* new fields are appended here; callers pass sizeof(struct ...) */
};

/**
 * Take a snapshot of process @pid.
 * @param pid process id (thread group id)
 * @param opts NULL for defaults
 * @param fn called for each thread, in /proc/PID/task order (may be NULL:
 *        only the stats). Threads are unwound in groups of up to 256 (each
 *        stopped, when it must be, only for its own unwind), then named
 *        and passed to @fn:
 *        when @fn ends the snapshot, the rest of its group has been
 *        unwound (not reported) already.
 * @param ctx passed to @fn
 * @param stats receives totals (may be NULL)
 * @param stats_sz sizeof(*stats) as the caller was built with: an older,
 *        shorter struct gets the fields it has, a newer one's unknown
 *        fields are zeroed (since 0.2)
 * @return 0; -EINVAL (bad opts, pid <= 0); -ESRCH when
 *         the process does not exist; -EPERM when it cannot be traced
 *         (ptrace permission, Yama ptrace_scope); other negative errno.
 *         opts->errbuf says why.
 */
USTACK_API int ustack_snapshot(int pid, const struct ustack_snapshot_opts *opts,
			       ustack_snapshot_fn fn, void *ctx,
			       struct ustack_snapshot_stats *stats, size_t stats_sz);

/** Options of ustack_snapshot_core(). */
struct ustack_snapshot_core_opts {
	size_t sz;           /**< sizeof(struct ustack_snapshot_core_opts) */
	/** the executable's path on this machine, when the core's NT_FILE
	 *  path is not it (moved, rebuilt elsewhere); NULL: as the core says */
	const char *exe;
	int max_depth;       /**< frames per thread (0: 256) */
	unsigned int flags;  /**< USTACK_SNAPSHOT_LINES (the others do not apply) */
	const char *debug_dir; /**< as in struct ustack_snapshot_opts */
	/** receives a one-line reason when the core cannot be read
	 *  ("core: offset 0x1a0: note runs past its segment's end") */
	char *errbuf;
	size_t errbuf_sz;
};

/**
 * The stacks of every thread of an ELF core dump (x86-64), unwound from
 * the registers each NT_PRSTATUS note saved, through the public unwinder
 * (ustack/unwind.h). Mappings come from the NT_FILE note; memory from the
 * core, or from the mapped files for the parts the core left out. A file
 * whose build ID differs from the one the core recorded gives no table and
 * no names (a warning says so). Thread order is the core's; comm is the
 * process name (cores keep no per-thread names); stopped_ns is 0.
 * @param path the core file
 * @param opts NULL for defaults
 * @param fn called for each thread
 * @param ctx passed to @fn
 * @param stats receives totals (threads, unwound; may be NULL)
 * @param stats_sz sizeof(*stats), as for ustack_snapshot()
 * @return 0; -ENOEXEC when @path is not an x86-64 core; -EBADMSG when it is
 *         truncated or malformed (opts->errbuf says where); other negative errno
 */
USTACK_API int ustack_snapshot_core(const char *path, const struct ustack_snapshot_core_opts *opts,
				    ustack_snapshot_fn fn, void *ctx,
				    struct ustack_snapshot_stats *stats, size_t stats_sz);

#ifdef __cplusplus
}
#endif
#endif
