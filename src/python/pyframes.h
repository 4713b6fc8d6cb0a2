/* SPDX-License-Identifier: MIT */
/*
 * CPython's interpreted frames, read from outside a process (issue 32):
 * which CPython a process runs, where its runtime is, and for each thread
 * the chain of frames the interpreter is executing, each as (qualified
 * function name, file, line), innermost first, with the marks that say
 * where a C-level _PyEval_EvalFrameDefault entered the chain (so that a
 * caller with the native stack can put each run of Python frames under
 * its own _PyEval_EvalFrameDefault native frame).
 *
 * Everything read from the process is hostile: every pointer is checked
 * by reading through @read (which fails cleanly on unmapped memory), every
 * length and count is bounded, a frame chain that loops or runs past
 * USTACK_PY_MAX_FRAMES stops with a reason, never a hang.
 *
 * Supported: CPython 3.11, 3.12 and 3.13 (3.14 where its debug offsets
 * allow), x86-64, release builds (not --with-pydebug: other layouts).
 * 3.13+ describes its own layout in _PyRuntime.debug_offsets
 * (_Py_DebugOffsets, cookie "xdebugpy"); before that the layout is a table
 * per minor version, checked against the process at find time (the
 * runtime's version word Py_Version, the interpreter list and the first
 * thread state must read as the table says) and refused with one clear
 * line when it does not match, never misread.
 */
#ifndef USTACK_PYTHON_PYFRAMES_H
#define USTACK_PYTHON_PYFRAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define USTACK_PY_MAX_FRAMES 1024   /* per thread */
#define USTACK_PY_MAX_THREADS 4096  /* per interpreter */
#define USTACK_PY_MAX_INTERPS 64
#define USTACK_PY_NAME_MAX 256      /* qualname bytes kept (longer: cut, "..." appended) */
#define USTACK_PY_FILE_MAX 512      /* file name bytes kept */

/* Reads @len bytes at @addr of the process: 0, or a negative errno
 * (-EFAULT: not mapped). The snapshot's reader (process_vm_readv through
 * its page cache) and a test's (a core file, a buffer) fit. */
typedef int (*ustack_py_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* One interpreted frame */
struct ustack_py_frame {
	char func[USTACK_PY_NAME_MAX];   /* co_qualname (3.11+): "Class.method", "<lambda>", "<module>" */
	char file[USTACK_PY_FILE_MAX];   /* co_filename as the interpreter has it */
	int32_t line;                    /* from co_linetable at the frame's instruction; 0: unknown */
	uint32_t flags;                  /* enum ustack_py_frame_flags */
	uint64_t code;                   /* the code object's address (identity, for caches) */
};

enum ustack_py_frame_flags {
	/* the C-level _PyEval_EvalFrameDefault call that runs this frame
	 * started with it: this frame and the newer ones up to the previous
	 * entry frame are one native _PyEval_EvalFrameDefault frame's
	 * (3.11: _PyInterpreterFrame.is_entry; 3.12+: the frame below is
	 * the shim/entry frame, owner FRAME_OWNED_BY_CSTACK) */
	USTACK_PY_FRAME_ENTRY = 1u << 0,
	USTACK_PY_FRAME_LINE_UNKNOWN = 1u << 1, /* the line table could not be read */
};

/* The Python frames of one thread state */
struct ustack_py_thread {
	uint64_t native_tid;  /* PyThreadState.native_thread_id (the kernel tid) */
	uint64_t tstate;      /* the PyThreadState's address */
	int interp;           /* index of its interpreter in the runtime's list
				 (newest first: the main one is the last) */
	/* an address on the C stack of the thread running this chain, where
	 * its innermost C-level eval call keeps its state (3.11, 3.12: the
	 * tstate's cframe; 3.13: the newest entry frame, owner CSTACK); 0:
	 * not known. A thread state's native_thread_id is the thread that
	 * made it, which is not always the one running it (a 3.12
	 * sub-interpreter's first thread state, made by the thread that
	 * created it, runs in any thread that calls into it): this says
	 * whose stack the chain is on, and nested chains' order */
	uint64_t cstack;
	int nr;               /* frames[] entries, innermost first */
	struct ustack_py_frame *frames;
	/* why the chain ended before its outermost frame: 0 (it did not),
	 * -ELOOP (a frame seen twice), -E2BIG (USTACK_PY_MAX_FRAMES),
	 * -EFAULT (a pointer into unmapped memory), -EBADMSG (a field out of
	 * range: a code object that is not one) */
	int stop;
};

struct ustack_py_proc; /* opaque: one process's interpreter, found */

/*
 * Whether @pid runs a supported CPython, and where: its executable or
 * libpython3.X.so mapping (a live process's through
 * /proc/PID/map_files, the file it really mapped, else by path under
 * "/proc/PID/root"; with a @root not "", under @root), _PyRuntime's address (the ELF
 * symbol + the mapping's load bias), its version (Py_Version read through
 * @read) and layout. The address range of _PyEval_EvalFrameDefault in the
 * process is kept for the caller (ustack_py_proc__eval_range()).
 *
 * Returns 0 with *@out set; -ENOENT: no CPython in the process (nothing
 * to say); -ENOTSUP with @err a line naming the file and the version or
 * what did not match ("python3.10: CPython 3.10 is not supported (3.11-
 * 3.13)", "/usr/bin/python3.11: Py_Version 0x30b02f0 but the thread
 * state at 0x... does not read as 3.11's"); other negative errnos with @err.
 */
int ustack_py_proc__find(pid_t pid, const char *root, ustack_py_read_fn read, void *ctx,
			 struct ustack_py_proc **out, char *err, size_t errlen);

/*
 * The same for a process that is not running (a core dump): its mappings
 * as the text of /proc/PID/maps (START-END PERMS OFFSET DEV INODE PATH),
 * its files opened at their paths (under @root when not NULL or ""),
 * @read its memory. Errors name "pid 0".
 */
int ustack_py_proc__find_maps(const char *maps, const char *root, ustack_py_read_fn read,
			      void *ctx, struct ustack_py_proc **out, char *err, size_t errlen);

/* The X of a python3.X executable's or libpython3.X.so's path (the names
 * ustack_py_proc__find() looks for), -1 for any other file */
int ustack_py_path_minor(const char *path);

/* "CPython 3.11.2 (/usr/bin/python3.11)" for messages and --stats */
const char *ustack_py_proc__describe(const struct ustack_py_proc *p);

/* [lo, hi) of _PyEval_EvalFrameDefault in the process (0, 0 if the
 * symbol is not there: a stripped build; its frames can then not be
 * placed, only listed) */
void ustack_py_proc__eval_range(const struct ustack_py_proc *p, uint64_t *lo, uint64_t *hi);

/* [lo, hi) of its cold part, where the compiler split it off (GCC's
 * _PyEval_EvalFrameDefault.cold: Debian's 3.14 runs most opcodes there),
 * found by the .cold symbol or, in a stripped file, by the hot part's
 * jumps into it (pyproc.h); 0, 0: none */
void ustack_py_proc__eval_cold_range(const struct ustack_py_proc *p, uint64_t *lo, uint64_t *hi);

/*
 * Every thread state of every interpreter, with its frames, read now
 * through @read (the caller has the threads stopped, or accepts a chain
 * read while it changes: each frame is checked on its own, a torn chain
 * ends with stop set). *@threads: an array of *@nr, freed with
 * ustack_py_threads_free().
 */
int ustack_py_proc__threads(struct ustack_py_proc *p, ustack_py_read_fn read, void *ctx,
			    struct ustack_py_thread **threads, int *nr, char *err, size_t errlen);

void ustack_py_threads_free(struct ustack_py_thread *threads, int nr);

/* One code object, read on its own (the recorder's: the kernel sent its
 * address, and a fingerprint, with each frame) */
struct ustack_py_code {
	uint64_t addr;     /* 0: empty */
	int err;           /* why it did not read as a code object (0: it did) */
	int firstlineno, firsttraceable;
	int64_t ncode;     /* code units */
	char func[USTACK_PY_NAME_MAX], file[USTACK_PY_FILE_MAX];
	uint8_t *table;    /* the location table, NULL when unreadable */
	size_t table_len;
};

/*
 * Read the code object at @addr of the process (its type checked against
 * the interpreter's PyCode_Type, its strings and location table as the
 * walk reads them) into @c. Returns 0, -EFAULT (not readable), -EBADMSG
 * (not a code object); @c is to be ustack_py_code__release()d either way.
 */
int ustack_py_proc__read_code(const struct ustack_py_proc *p, ustack_py_read_fn read, void *ctx,
			      uint64_t addr, struct ustack_py_code *c);

/*
 * The line of a frame of @c at instruction pointer @instr (the frame's
 * prev_instr/instr_ptr as read from the process): 0 with *@line (0 when
 * the table says no line), -ENOENT when the frame has not started (CPython's
 * own walks skip it; @generator: a generator's frame, which always counts as
 * started), -EBADMSG when the line cannot be read.
 */
int ustack_py_code__line(const struct ustack_py_proc *p, const struct ustack_py_code *c,
			 uint64_t instr, int generator, int *line);

void ustack_py_code__release(struct ustack_py_code *c);
void ustack_py_proc__free(struct ustack_py_proc *p);

#endif
