/* SPDX-License-Identifier: MIT */
/*
 * ustack trace files: writer (used by `ustack record`) and reader (used by
 * `ustack report` and other tools). The format is specified in
 * docs/trace-format.md.
 *
 * Writer: records are buffered into a chunk; a full chunk is written with
 * one write(). Each chunk is self-contained: before the first record of a
 * chunk that refers to a stack id or a file id, the writer asks the caller
 * for its contents (callbacks given at open) and emits the STACK / FILE_MAP
 * (and KSYM) definitions itself. EVENT_DESC records are repeated at the
 * start of each chunk. An I/O error (full disk: -ENOSPC, file size limit:
 * -EFBIG) is sticky and returned by every later call; chunks written before
 * it stay readable.
 *
 * Reader: chunk by chunk, each checksum verified before its records are
 * handed out. A damaged or truncated file yields every record before the
 * damage, then -EBADMSG with a message naming the byte offset.
 *
 * Objects are not thread-safe.
 */
#ifndef USTACK_TRACE_H
#define USTACK_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/ustack.h>
#include <ustack/procmaps.h>

#ifdef __cplusplus
extern "C" {
#endif

#define USTACK_TRACE_VERSION_MAJOR 1
#define USTACK_TRACE_VERSION_MINOR 5
/** Default chunk payload size of the writer. */
#define USTACK_TRACE_DEF_CHUNK_SIZE (256u * 1024)
/** Largest chunk payload a reader accepts (and the writer produces). */
#define USTACK_TRACE_MAX_CHUNK_SIZE (64u * 1024 * 1024)
/** Most frames of one STACK record. */
#define USTACK_TRACE_MAX_FRAMES 65535u
/** "No specific CPU" in a LOST record. */
#define USTACK_TRACE_NO_CPU UINT32_MAX

/** Record types (docs/trace-format.md section 2.3). */
enum ustack_trace_record_type {
	USTACK_TRACE_HEADER = 1,
	USTACK_TRACE_EVENT_DESC = 2,
	USTACK_TRACE_THREAD = 3,
	USTACK_TRACE_EVENT = 4,
	USTACK_TRACE_USER_STACK = 5,
	USTACK_TRACE_STACK = 6,
	USTACK_TRACE_FILE_MAP = 7,
	USTACK_TRACE_LOST = 8,
	USTACK_TRACE_KSYM = 9,
	USTACK_TRACE_END = 10,
	USTACK_TRACE_JITSYM = 11, /**< since 1.1 */
	USTACK_TRACE_FILE_CONTENT = 12, /**< since 1.2 */
	USTACK_TRACE_PYFUNC = 13, /**< since 1.5 */
};

/** Stack kinds: kernel and user stacks have separate id spaces. */
enum ustack_trace_stack_kind {
	USTACK_TRACE_KSTACK = 0,
	USTACK_TRACE_USTACK = 1,
};

/** HEADER record. Strings may be NULL in the writer (written empty). */
struct ustack_trace_header {
	uint32_t clock_id;     /**< clockid_t of all times (CLOCK_MONOTONIC = 1) */
	uint64_t realtime_ns;  /**< CLOCK_REALTIME read together with ... */
	uint64_t clock_ns;     /**< ... this value of clock_id */
	const char *hostname;
	const char *release;   /**< kernel release */
	const char *machine;   /**< "x86_64" */
	const char *cmdline;   /**< recording command line */
	const char *version;   /**< "ustack 0.1.0" */
};

/** Kinds of event (EVENT_DESC type). */
enum ustack_trace_event_type {
	USTACK_TRACE_EV_SAMPLE = 0,
	USTACK_TRACE_EV_TRACEPOINT = 1,
	USTACK_TRACE_EV_SNAPSHOT = 2,
	USTACK_TRACE_EV_OFFCPU = 3,   /**< time a thread spent switched out (1.3) */
	USTACK_TRACE_EV_PROBE = 4,    /**< a uprobe, uretprobe or USDT probe hit (1.4);
	                                   its EVENTs' args: the probe's arguments
	                                   (USDT), the return value (uretprobe) */
	USTACK_TRACE_EV_ALLOC = 5,    /**< an allocation kept by the byte sampling (1.4),
	                                   unit bytes: value = its unbiased weight in
	                                   bytes, args[0] = its size, args[1] = its
	                                   address; period: the mean sampling
	                                   interval in bytes (1: every allocation) */
	USTACK_TRACE_EV_FREE = 6,     /**< the free of a kept allocation (1.4): args[0]
	                                   = its address; no stacks, weight 1 */
};

/** EVENT_DESC flags. */
#define USTACK_TRACE_EV_FREQ 0x1u /**< period is a frequency in Hz */
/** EVENT_DESC flags bits 1-2 (1.3): the unit of its EVENTs' values. A
 *  count: each EVENT weighs its value (1 when none is stored) events or
 *  samples. 1.2 and older files have only counts. */
#define USTACK_TRACE_EV_UNIT_MASK 0x6u
#define USTACK_TRACE_EV_UNIT_COUNT 0x0u /**< events, samples */
#define USTACK_TRACE_EV_UNIT_NS 0x2u    /**< nanoseconds (off-CPU time) */
#define USTACK_TRACE_EV_UNIT_BYTES 0x4u /**< bytes (allocations) */

/** EVENT_DESC record: what an event id stands for. */
struct ustack_trace_event_desc {
	uint32_t id;
	uint32_t type;    /**< enum ustack_trace_event_type */
	uint32_t flags;   /**< USTACK_TRACE_EV_FREQ, USTACK_TRACE_EV_UNIT_* */
	uint64_t period;  /**< period or frequency, 0 = n/a; USTACK_TRACE_EV_OFFCPU: the
	                       threshold in ns below which intervals were not recorded */
	const char *name; /**< "cpu-clock", "syscalls:sys_enter_futex" */
};

/** THREAD flags. */
#define USTACK_TRACE_THREAD_EXEC 0x1u
#define USTACK_TRACE_THREAD_EXIT 0x2u
#define USTACK_TRACE_THREAD_FORK 0x4u

/** THREAD record: a thread's name from @time on. */
struct ustack_trace_thread {
	uint64_t time;
	uint32_t pid, tid;
	uint32_t flags;   /**< USTACK_TRACE_THREAD_* */
	const char *comm;
};

/** "No kernel stack" value of ustack_trace_event.kstack_id. */
#define USTACK_TRACE_NO_STACK UINT32_MAX

/** EVENT flags (as stored; the writer derives them from the fields). */
#define USTACK_TRACE_EVENT_HAS_VALUE 0x4u
/** nr_args and args are stored (1.4) */
#define USTACK_TRACE_EVENT_HAS_ARGS 0x8u
/** At most this many args per EVENT (a USDT probe has at most 12). */
#define USTACK_TRACE_MAX_ARGS 12

/** EVENT record. */
struct ustack_trace_event {
	uint64_t time;
	uint32_t pid, tid;
	uint32_t cpu;
	uint32_t event_id;
	uint32_t kstack_id; /**< kernel stack id or USTACK_TRACE_NO_STACK */
	uint64_t cookie;    /**< 0: no user stack */
	uint64_t value;     /**< weight; 1 when not stored */
	uint32_t flags;     /**< writer: USTACK_TRACE_EVENT_HAS_VALUE to store value,
	                         USTACK_TRACE_EVENT_HAS_ARGS to store the args */
	/* since 1.4; read by the writer only with USTACK_TRACE_EVENT_HAS_ARGS */
	uint32_t nr_args;   /**< 1..USTACK_TRACE_MAX_ARGS with HAS_ARGS, else 0 */
	uint64_t args[USTACK_TRACE_MAX_ARGS]; /**< the event's payload (probe arguments,
	                         a return value, an allocation's size and address) */
};

/** USER_STACK record: the user stack of @tid for @cookie. */
struct ustack_trace_user_stack {
	uint64_t time;
	uint32_t pid, tid;
	uint32_t cpu;
	uint32_t stop_reason; /**< enum ustack_stop_reason */
	uint64_t cookie;      /**< never 0 */
	uint32_t stack_id;    /**< user stack id or USTACK_TRACE_NO_STACK (no frame) */
};

/** User frame flags (STACK record). */
#define USTACK_TRACE_FRAME_EXACT_PC 0x1u

/** One user frame. */
struct ustack_trace_frame {
	uint64_t offset;  /**< file offset, or the absolute pc when file_id == 0 */
	uint64_t file_id; /**< 0: no file (anonymous memory, JIT) */
	uint8_t method;   /**< enum ustack_method (0..7) */
	uint8_t flags;    /**< USTACK_TRACE_FRAME_EXACT_PC */
};

/** Bits of the file id that a frame's stackmap words keep. */
#define USTACK_TRACE_WORD_FILE_ID_MASK ((1ull << 56) - 1)

/**
 * The two stackmap words of a user frame: how `ustack record` keys user
 * stacks in its stackmap, and what `ustack report --format stackmap` prints.
 * words[0] is the file offset; words[1] the file id (low 56 bits) | method
 * << 56 (6 bits) | flags << 62 (2 bits).
 * @param f the frame
 * @param words receives its two words
 */
static inline void ustack_trace_pack_frame(const struct ustack_trace_frame *f, uint64_t words[2])
{
	words[0] = f->offset;
	words[1] = (f->file_id & USTACK_TRACE_WORD_FILE_ID_MASK) |
		   ((uint64_t)(f->method & 0x3f) << 56) | ((uint64_t)(f->flags & 3) << 62);
}

/**
 * The user frame of two stackmap words (the inverse of
 * ustack_trace_pack_frame() for file ids below 2^56).
 * @param words the two words
 * @param f receives the frame
 */
static inline void ustack_trace_unpack_frame(const uint64_t words[2], struct ustack_trace_frame *f)
{
	f->offset = words[0];
	f->file_id = words[1] & USTACK_TRACE_WORD_FILE_ID_MASK;
	f->method = (uint8_t)((words[1] >> 56) & 0x3f);
	f->flags = (uint8_t)(words[1] >> 62);
}

/** A stack definition (STACK record, or the writer's get_stack()). */
struct ustack_trace_stack {
	uint32_t id;
	uint32_t kind;  /**< enum ustack_trace_stack_kind */
	uint32_t nr;    /**< number of frames (<= USTACK_TRACE_MAX_FRAMES) */
	const uint64_t *ips;                    /**< KSTACK: nr ips */
	const struct ustack_trace_frame *frames; /**< USTACK: nr frames */
};

/** LOST kinds. */
enum ustack_trace_lost_what {
	USTACK_TRACE_LOST_KERNEL = 0, /**< perf ring-buffer records */
	USTACK_TRACE_LOST_USTACK = 1, /**< samples dropped by ustack */
};

/** LOST record. */
struct ustack_trace_lost {
	uint64_t time;
	uint32_t what;  /**< enum ustack_trace_lost_what */
	uint32_t cpu;   /**< or USTACK_TRACE_NO_CPU */
	uint64_t count;
};

/** KSYM record: a kernel symbol. */
struct ustack_trace_ksym {
	uint64_t addr;
	uint64_t size;      /**< 0: unknown */
	const char *name;
	const char *module; /**< NULL or "" for the kernel itself */
};

/** JITSYM record (since 1.1): a JIT symbol of process @pid, from its
 *  /tmp/perf-PID.map at record time. */
struct ustack_trace_jitsym {
	uint32_t pid;
	uint64_t addr;
	uint64_t size;     /**< not 0 */
	const char *name;  /**< reader: valid until the next __next() call */
};

/** FILE_CONTENT flags */
#define USTACK_TRACE_CONTENT_CACHED      0x1u /**< the file was stored in the recorder's build-ID cache */
#define USTACK_TRACE_CONTENT_DEBUG       0x2u /**< its separate debug file was stored too */
#define USTACK_TRACE_CONTENT_TOO_BIG     0x4u /**< larger than the capture limit: hashed only */
/** FILE_CONTENT hash algorithms */
#define USTACK_TRACE_HASH_SHA256 1u

/** FILE_CONTENT record (since 1.2): what a file id's file held, read by the
 *  recorder through the process that mapped it (/proc/PID/map_files), so
 *  that a report names its frames from that content and no other. Valid
 *  for the whole file; written after the FILE_MAP of @file_id. */
struct ustack_trace_file_content {
	uint64_t file_id;  /**< not 0 */
	uint32_t flags;    /**< USTACK_TRACE_CONTENT_* */
	uint32_t algo;     /**< USTACK_TRACE_HASH_SHA256 */
	uint8_t hash[32];  /**< SHA-256 of the whole file */
	uint64_t size;     /**< the file's size in bytes */
};

/**
 * Python frames (since 1.5). A recorded stack holds a CPython process's
 * interpreted frames among its native ones, each under the
 * _PyEval_EvalFrameDefault frame that ran it. Such a frame is a user frame
 * whose file id has a FILE_MAP of kind USTACK_TRACE_FILE_KIND_PYTHON (path
 * "[python]"; no build ID, dev or inode), its offset
 * ustack_trace_py_offset(): the id of a PYFUNC record (the function) and
 * the line. A reader that knows no kind 10 shows such frames as unknown
 * ones, never as a wrong function.
 */
#define USTACK_TRACE_FILE_KIND_PYTHON 10u
/** Bits of a Python frame's offset that hold the line (0: not known). */
#define USTACK_TRACE_PY_LINE_BITS 24
#define USTACK_TRACE_PY_LINE_MAX ((1u << USTACK_TRACE_PY_LINE_BITS) - 1)

/** The offset of a Python frame: PYFUNC @id (1 .. 2^40-1) at @line
 *  (above USTACK_TRACE_PY_LINE_MAX: written 0, not known). */
static inline uint64_t ustack_trace_py_offset(uint64_t id, uint32_t line)
{
	return (id << USTACK_TRACE_PY_LINE_BITS) | (line > USTACK_TRACE_PY_LINE_MAX ? 0 : line);
}

static inline uint64_t ustack_trace_py_offset_func(uint64_t offset)
{
	return offset >> USTACK_TRACE_PY_LINE_BITS;
}

static inline uint32_t ustack_trace_py_offset_line(uint64_t offset)
{
	return (uint32_t)(offset & USTACK_TRACE_PY_LINE_MAX);
}

/** PYFUNC record (since 1.5): a Python function (one code object of
 *  process @pid), named by the Python frames whose offset holds @id. Valid
 *  for the whole file; a second PYFUNC of the same id must say the same. */
struct ustack_trace_pyfunc {
	uint64_t id;         /**< 1 .. 2^40-1, unique in the file */
	uint32_t pid;        /**< process whose code object it was */
	uint32_t first_line; /**< co_firstlineno (0: not known) */
	const char *name;    /**< co_qualname ("Class.method", "<lambda>"), not empty */
	const char *file;    /**< co_filename as the interpreter had it, not empty */
};

/** END record / writer totals. */
struct ustack_trace_stats {
	uint64_t events;
	uint64_t user_stacks;
	uint64_t stacks;     /**< distinct (kind, id) */
	uint64_t file_maps;  /**< distinct file ids */
	uint64_t lost;       /**< sum of LOST counts */
	uint64_t chunks;
	uint64_t first_time, last_time;
	/* Writer only (not stored): */
	uint64_t bytes;            /**< bytes written to the file so far */
	uint64_t event_bytes;      /**< bytes of EVENT records */
	uint64_t user_stack_bytes; /**< bytes of USER_STACK records */
	uint64_t def_bytes;        /**< bytes of STACK, FILE_MAP, KSYM, EVENT_DESC records */
};

/**
 * One record handed out by the reader. Pointers stay valid until the next
 * ustack_trace_reader__next() call, except stack frames, file_map and
 * ksym strings, which live until the reader is closed.
 *
 * ABI (docs/api.md, "ABI rules"): the caller passes sizeof(struct
 * ustack_trace_record) to ustack_trace_reader__next(), which writes no more
 * than that. @type says which union member is valid; only that member is
 * filled. A member struct only grows at its end, so an older caller's
 * smaller record holds the fields it knows. A record type newer than the
 * caller's header is never handed out unless it asks for it
 * (ustack_trace_reader_opts.max_type), so an unknown type cannot reach a
 * caller whose union is too small for it; callers still skip types they do
 * not know.
 */
struct ustack_trace_record {
	uint32_t type;    /**< enum ustack_trace_record_type */
	uint32_t chunk;   /**< index of the chunk holding it */
	uint64_t offset;  /**< file offset of the record */
	uint64_t size;    /**< its size in bytes (type, length, body) */
	union {
		struct ustack_trace_header header;
		struct ustack_trace_event_desc event_desc;
		struct ustack_trace_thread thread;
		struct ustack_trace_event event;
		struct ustack_trace_user_stack user_stack;
		struct ustack_trace_stack stack;
		struct ustack_file_map file_map;
		struct ustack_trace_lost lost;
		struct ustack_trace_ksym ksym;
		struct ustack_trace_stats end;
		struct ustack_trace_jitsym jitsym;
		struct ustack_trace_file_content file_content; /**< since 0.3 */
		struct ustack_trace_pyfunc pyfunc; /**< since 0.3 (strings valid until the reader is closed) */
	};
};

/* ---- writer ------------------------------------------------------------ */

struct ustack_trace_writer;

/**
 * Writer callback: the frames of stack (@kind, @id). Pointers in @st must
 * stay valid until the writer call that asked returns.
 * @return 0, or a negative errno (the record referring to it is refused)
 */
typedef int (*ustack_trace_get_stack_fn)(void *ctx, uint32_t kind, uint32_t id,
					 struct ustack_trace_stack *st);
/** Writer callback: the file_map of @file_id. @return 0 or negative errno */
typedef int (*ustack_trace_get_file_map_fn)(void *ctx, uint64_t file_id,
					    struct ustack_file_map *fm);
/** Writer callback (optional): the kernel symbol holding @ip.
 *  @return 0, -ENOENT (none: no KSYM is written) */
typedef int (*ustack_trace_get_ksym_fn)(void *ctx, uint64_t ip, struct ustack_trace_ksym *ks);

/** Writer flags. */
#define USTACK_TRACE_WRITER_FSYNC 0x1u /**< fsync() at close */

/** Writer options (set sz = sizeof(opts); NULL: defaults, no callbacks). */
struct ustack_trace_writer_opts {
	size_t sz;
	uint32_t chunk_size;  /**< payload bytes per chunk; 0: 256 KiB; clamped to 64 B .. 32 MiB */
	uint32_t flags;       /**< USTACK_TRACE_WRITER_* */
	ustack_trace_get_stack_fn get_stack;        /**< required for stack ids */
	ustack_trace_get_file_map_fn get_file_map;  /**< required for file ids */
	ustack_trace_get_ksym_fn get_ksym;          /**< optional */
	void *ctx;            /**< passed to the callbacks */
};

/**
 * Create (truncate) @path and write the file header and HEADER record.
 * @param path output file
 * @param hdr HEADER record contents
 * @param opts options or NULL
 * @return the writer, or NULL with errno
 */
USTACK_API struct ustack_trace_writer *
ustack_trace_writer__open(const char *path, const struct ustack_trace_header *hdr,
			  const struct ustack_trace_writer_opts *opts);

/**
 * Like ustack_trace_writer__open() over an open file descriptor, written at
 * its current position. The descriptor is not closed by the writer.
 * @param fd writable descriptor
 * @param hdr HEADER record contents
 * @param opts options or NULL
 * @return the writer, or NULL with errno
 */
USTACK_API struct ustack_trace_writer *
ustack_trace_writer__open_fd(int fd, const struct ustack_trace_header *hdr,
			     const struct ustack_trace_writer_opts *opts);

/**
 * Define an event id (repeated by the writer at the start of every chunk).
 * @param w the writer
 * @param d the description (copied)
 * @return 0, -EEXIST (id defined differently), sticky I/O error
 */
USTACK_API int ustack_trace_writer__add_event_desc(struct ustack_trace_writer *w,
						   const struct ustack_trace_event_desc *d);

/**
 * Write a THREAD record.
 * @param w the writer
 * @param t the record
 * @return 0 or negative errno
 */
USTACK_API int ustack_trace_writer__add_thread(struct ustack_trace_writer *w,
					       const struct ustack_trace_thread *t);

/**
 * Write an EVENT record, preceded by the definitions of its kernel stack
 * (and the KSYMs of its ips) when this chunk does not hold them yet.
 * @param w the writer
 * @param e the record (kstack_id USTACK_TRACE_NO_STACK: none; cookie 0: none)
 * @return 0, -EINVAL (event id not defined by __add_event_desc), the
 *         get_stack() error, or a sticky I/O error
 */
USTACK_API int ustack_trace_writer__add_event(struct ustack_trace_writer *w,
					      const struct ustack_trace_event *e);

/**
 * Write a USER_STACK record, preceded by its STACK and FILE_MAP definitions
 * when this chunk does not hold them yet.
 * @param w the writer
 * @param u the record (cookie must not be 0)
 * @return 0, -EINVAL, a callback's error, or a sticky I/O error
 */
USTACK_API int ustack_trace_writer__add_user_stack(struct ustack_trace_writer *w,
						   const struct ustack_trace_user_stack *u);

/**
 * Write a LOST record.
 * @param w the writer
 * @param l the record
 * @return 0 or negative errno
 */
USTACK_API int ustack_trace_writer__add_lost(struct ustack_trace_writer *w,
					     const struct ustack_trace_lost *l);

/**
 * Write a KSYM record now (in addition to those the get_ksym callback
 * yields automatically).
 * @param w the writer
 * @param k the symbol
 * @return 0 or negative errno
 */
USTACK_API int ustack_trace_writer__add_ksym(struct ustack_trace_writer *w,
					     const struct ustack_trace_ksym *k);

/**
 * Write a JITSYM record (a symbol of a perf map; later records for the same
 * pid win where they overlap earlier ones).
 * @param w the writer
 * @param j the symbol (size not 0, addr + size not past 2^64, a name not
 *        empty: what a reader takes as damage is refused)
 * @return 0, -EINVAL, or a sticky I/O error
 */
USTACK_API int ustack_trace_writer__add_jitsym(struct ustack_trace_writer *w,
					       const struct ustack_trace_jitsym *j);

/**
 * Write a FILE_CONTENT record (since 0.3).
 * @param w the writer
 * @param c the content (file_id not 0 and already given to the writer's
 *        get_file_map, algo USTACK_TRACE_HASH_SHA256)
 * @return 0, -EINVAL, or a sticky I/O error
 */
USTACK_API int ustack_trace_writer__add_file_content(struct ustack_trace_writer *w,
						     const struct ustack_trace_file_content *c);

/**
 * Write a PYFUNC record (since 0.3): the Python function of @f->id, before
 * the first stack that names it is written (the recorder's way; a reader
 * takes it from anywhere in the file).
 * @param w the writer
 * @param f the function (id 1 .. 2^40-1, name and file not empty)
 * @return 0, -EINVAL, or a sticky I/O error
 */
USTACK_API int ustack_trace_writer__add_pyfunc(struct ustack_trace_writer *w,
					       const struct ustack_trace_pyfunc *f);

/**
 * End the current chunk now (write it out). A no-op when it is empty.
 * @param w the writer
 * @return 0 or negative errno (-ENOSPC, -EFBIG, -EIO ...)
 */
USTACK_API int ustack_trace_writer__flush(struct ustack_trace_writer *w);

/**
 * Totals so far (what END will hold, plus byte counts).
 * @param w the writer
 * @param st receives the totals
 * @param sz sizeof(*st) as the caller was built with (since 0.2): an older,
 *        shorter struct gets the fields it has, a newer one's unknown
 *        fields are zeroed
 * @return 0 or -EINVAL
 */
USTACK_API int ustack_trace_writer__stats(const struct ustack_trace_writer *w,
					  struct ustack_trace_stats *st, size_t sz);

/**
 * Write END, flush, fsync (USTACK_TRACE_WRITER_FSYNC), close the file (if
 * opened by path) and free the writer. NULL is a no-op.
 * @param w the writer
 * @return 0, or the first error met by this writer (negative errno)
 */
USTACK_API int ustack_trace_writer__close(struct ustack_trace_writer *w);

/* ---- reader ------------------------------------------------------------ */

struct ustack_trace_reader;

/** Reader flags. */
/** The input is an extract: a file header followed by any subset of chunks
 *  (no HEADER, END, sequence or totals checks). */
#define USTACK_TRACE_READER_EXTRACT 0x1u

/** Highest record type of this header (what max_type asks for). */
#define USTACK_TRACE_RECORD_TYPE_MAX USTACK_TRACE_PYFUNC

/** Reader options (set sz = sizeof(opts)). */
struct ustack_trace_reader_opts {
	size_t sz;
	uint32_t flags; /**< USTACK_TRACE_READER_* */
	/** highest record type to hand out (since 0.2). 0: those of the 0.2
	 *  header (up to USTACK_TRACE_JITSYM). A caller that handles types
	 *  added later sets USTACK_TRACE_RECORD_TYPE_MAX of its header. Types
	 *  above it are still read and checked, only not handed out. */
	uint32_t max_type;
};

/**
 * Open a trace file. Format errors are reported by
 * ustack_trace_reader__next(), not here: the reader is an object that
 * meets them later, so its message is ustack_trace_reader__error() rather
 * than an errbuf in opts.
 * @param path the file
 * @param opts options or NULL
 * @return the reader, or NULL with errno (ENOENT, EACCES, ENOMEM ...)
 */
USTACK_API struct ustack_trace_reader *
ustack_trace_reader__open(const char *path, const struct ustack_trace_reader_opts *opts);

/**
 * Read a trace held in memory (not copied: keep @buf alive).
 * @param buf the bytes
 * @param size their number
 * @param opts options or NULL
 * @return the reader, or NULL with errno ENOMEM
 */
USTACK_API struct ustack_trace_reader *
ustack_trace_reader__open_mem(const void *buf, size_t size,
			      const struct ustack_trace_reader_opts *opts);

/**
 * Next record. Record types unknown to the library, and those above
 * opts->max_type, are skipped.
 * @param r the reader
 * @param rec receives the record (only the union member of its type)
 * @param rec_sz sizeof(*rec) as the caller was built with (since 0.2); at
 *        least offsetof(struct ustack_trace_record, header)
 * @return 1 (a record), 0 (clean end after END), -EBADMSG (damaged or
 *         truncated: see ustack_trace_reader__error()), -ENOTSUP (major
 *         version), -EIO, -ENOMEM, -EINVAL (rec_sz too small). An error
 *         repeats on later calls.
 */
USTACK_API int ustack_trace_reader__next(struct ustack_trace_reader *r,
					 struct ustack_trace_record *rec, size_t rec_sz);

/**
 * Message of the last error: "offset 12345: chunk 3: checksum mismatch".
 * @param r the reader
 * @return the message ("" when there was none)
 */
USTACK_API const char *ustack_trace_reader__error(const struct ustack_trace_reader *r);

/**
 * File offset where the damage starts (valid after an error).
 * @param r the reader
 * @return the offset
 */
USTACK_API uint64_t ustack_trace_reader__error_offset(const struct ustack_trace_reader *r);

/**
 * The HEADER record (strings live until close).
 * @param r the reader
 * @return the header, or NULL when none has been read
 */
USTACK_API const struct ustack_trace_header *
ustack_trace_reader__header(const struct ustack_trace_reader *r);

/**
 * A stack defined anywhere in what was read so far.
 * @param r the reader
 * @param kind enum ustack_trace_stack_kind
 * @param id stack id
 * @param st receives it (pointers valid until close)
 * @return 0 or -ENOENT
 */
USTACK_API int ustack_trace_reader__stack(const struct ustack_trace_reader *r, uint32_t kind,
					  uint32_t id, struct ustack_trace_stack *st);

/**
 * The file_map of @file_id, from what was read so far.
 * @param r the reader
 * @param file_id file id
 * @param fm receives it (strings valid until close)
 * @return 0 or -ENOENT
 */
USTACK_API int ustack_trace_reader__file_map(const struct ustack_trace_reader *r,
					     uint64_t file_id, struct ustack_file_map *fm);

/**
 * The event description of @id, from what was read so far.
 * @param r the reader
 * @param id event id
 * @param d receives it (name valid until close)
 * @return 0 or -ENOENT
 */
USTACK_API int ustack_trace_reader__event_desc(const struct ustack_trace_reader *r,
					       uint32_t id, struct ustack_trace_event_desc *d);

/**
 * The Python function of PYFUNC @id (since 0.3), from the records read so
 * far: a Python frame's ustack_trace_py_offset_func(offset). A PYFUNC may
 * come after the stacks that name it; a reader that needs them all first
 * reads the file once with ustack_trace_reader__skim() (see
 * ustack_pyfuncs__load_trace()).
 * @param r the reader
 * @param id function id
 * @param f receives it (strings valid until close)
 * @return 0, -ENOENT, -EINVAL
 */
USTACK_API int ustack_trace_reader__pyfunc(const struct ustack_trace_reader *r, uint64_t id,
					   struct ustack_trace_pyfunc *f);

/**
 * The kernel symbol holding @ip, from the KSYM records read so far.
 * @param r the reader
 * @param ip kernel address
 * @param ks receives it (strings valid until close)
 * @return 0 or -ENOENT
 */
USTACK_API int ustack_trace_reader__ksym(struct ustack_trace_reader *r, uint64_t ip,
					 struct ustack_trace_ksym *ks);

/**
 * Current file offset (bytes consumed), and the input size.
 * @param r the reader
 * @param size receives the input size (may be NULL)
 * @return the offset
 */
USTACK_API uint64_t ustack_trace_reader__offset(const struct ustack_trace_reader *r,
						uint64_t *size);

/** Close the reader; NULL is a no-op. @param r the reader */
USTACK_API void ustack_trace_reader__close(struct ustack_trace_reader *r);

/* ---- stitching events to user stacks (docs/trace-format.md 4.2) -------- */

struct ustack_trace_stitcher;

/** Why a stitched event has no user stack. */
enum ustack_trace_stitch_result {
	USTACK_TRACE_STITCH_OK = 0,        /**< user stack attached */
	USTACK_TRACE_STITCH_NO_COOKIE = 1, /**< the event asked for none */
	USTACK_TRACE_STITCH_MISMATCH = 2,  /**< the thread's next stack had another cookie */
	USTACK_TRACE_STITCH_LOST = 3,      /**< a LOST record came in between */
	USTACK_TRACE_STITCH_END = 4,       /**< the trace ended first */
};

/** An event with its user stack. */
struct ustack_trace_stitched {
	struct ustack_trace_event event;
	uint32_t result;      /**< enum ustack_trace_stitch_result */
	uint32_t ustack_id;   /**< user stack id (OK and a stack), else USTACK_TRACE_NO_STACK */
	uint32_t stop_reason; /**< of the user stack (OK) */
	uint64_t ustack_time; /**< time of the USER_STACK record (OK) */
};

/** @return a new stitcher, or NULL with errno ENOMEM */
USTACK_API struct ustack_trace_stitcher *ustack_trace_stitcher__new(void);

/**
 * Feed the next record of the trace (all types may be fed; only EVENT,
 * USER_STACK and LOST matter). Pass NULL at the end of the trace.
 * @param s the stitcher
 * @param rec the record, or NULL at the end
 * @return 0 or -ENOMEM
 */
USTACK_API int ustack_trace_stitcher__push(struct ustack_trace_stitcher *s,
					   const struct ustack_trace_record *rec);

/**
 * Next resolved event, in the order they were resolved.
 * @param s the stitcher
 * @param out receives it
 * @return 1 (an event), 0 (none ready)
 */
USTACK_API int ustack_trace_stitcher__pop(struct ustack_trace_stitcher *s,
					  struct ustack_trace_stitched *out);

/** Free; NULL is a no-op. @param s the stitcher */
USTACK_API void ustack_trace_stitcher__free(struct ustack_trace_stitcher *s);

/** Name of a record type ("EVENT"), never NULL. @param type record type @return name */
USTACK_API const char *ustack_trace_record_name(unsigned int type);

#ifdef __cplusplus
}
#endif
#endif /* USTACK_TRACE_H */
