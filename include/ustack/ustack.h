/* SPDX-License-Identifier: MIT */
/*
 * ustack - user-space stack traces without frame pointers.
 *
 * Core public API: logging, frames, in-process backtraces.
 * Functions returning int return 0 (or a count) on success and a negative
 * errno on failure; functions returning pointers return NULL and set errno.
 *
 * ABI (docs/api.md, "ABI rules" and "Errors"): every opts struct starts
 * with size_t sz = sizeof(struct); NULL opts mean defaults; a shorter
 * (older) struct is accepted, a longer (newer) one only if its unknown
 * tail is zero, else EINVAL. Output structs are written up to the size the
 * caller passes. A failure's message, where errno is not enough, goes to
 * the opts' char *errbuf / size_t errbuf_sz.
 */
#ifndef USTACK_USTACK_H
#define USTACK_USTACK_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef USTACK_API
#define USTACK_API __attribute__((visibility("default")))
#endif

/*
 * The version of ustack: the one place it is written. The Makefile reads
 * these three lines (library file name libustack.so.MAJOR.MINOR.PATCH,
 * ustack.pc), the library returns them from ustack_version().
 */
#define USTACK_VERSION_MAJOR 0
#define USTACK_VERSION_MINOR 2
#define USTACK_VERSION_PATCH 0

#define USTACK__STR(x) #x
#define USTACK__XSTR(x) USTACK__STR(x)
/** The version of these headers as a string, "MAJOR.MINOR.PATCH". */
#define USTACK_VERSION_STRING                                                 \
	USTACK__XSTR(USTACK_VERSION_MAJOR) "." USTACK__XSTR(USTACK_VERSION_MINOR) \
	"." USTACK__XSTR(USTACK_VERSION_PATCH)

/**
 * The version of the library the program runs with, "MAJOR.MINOR.PATCH"
 * (e.g. "0.1.0"). It can differ from USTACK_VERSION_STRING, the version of
 * the headers the program was compiled with, when a newer shared library
 * is installed under the same soname.
 * @return a static string, never NULL
 */
USTACK_API const char *ustack_version(void);

/** Severity of a library message passed to the print callback. */
enum ustack_print_level {
	USTACK_WARN = 0,
	USTACK_INFO = 1,
	USTACK_DEBUG = 2,
};

/** Print callback; receives a printf format and its arguments. */
typedef int (*ustack_print_fn_t)(enum ustack_print_level level,
				 const char *fmt, va_list ap);

/**
 * Set the callback through which the library reports problems
 * (corrupt tables, unreadable files). The library never writes to
 * stdout/stderr itself. The default callback prints warnings to stderr;
 * NULL silences everything.
 * @param fn new callback or NULL
 * @return the previous callback
 */
USTACK_API ustack_print_fn_t ustack_set_print(ustack_print_fn_t fn);

/** How a frame was recovered from the one below it. */
enum ustack_method {
	USTACK_METHOD_REGS = 0,   /**< frame 0: taken from the registers */
	USTACK_METHOD_SFRAME = 1, /**< caller found with an SFrame row */
	USTACK_METHOD_CFI = 2,    /**< caller found with a DWARF CFI row */
	USTACK_METHOD_FP = 3,     /**< caller found by the frame-pointer heuristic */
	USTACK_METHOD_SIGNAL = 4, /**< caller restored from a signal frame */
	USTACK_METHOD_PLT = 5,    /**< PLT stub without unwind info: the x86-64 PLT rule */
	USTACK_METHOD_KERNEL_FP = 6, /**< record: from the kernel's deferred user callchain
	                                  (its frame-pointer walk, Linux 6.19+), trusted
	                                  where ustack's tables say the frame keeps rbp */
};

/** Flags of a frame. */
enum ustack_frame_flags {
	/** pc is an exact instruction address (frame 0, the interrupted pc
	 *  restored from a signal frame, or the signal trampoline the handler
	 *  returns to, glibc's __restore_rt), not a return address */
	USTACK_FRAME_EXACT_PC = 1u << 0,
};

/** One frame of a user stack. */
struct ustack_frame {
	uint64_t pc;     /**< return address (or exact pc, see flags) */
	uint64_t sp;     /**< stack pointer in this frame */
	uint32_t method; /**< enum ustack_method */
	uint32_t flags;  /**< enum ustack_frame_flags */
};

/** Why an unwind stopped. */
enum ustack_stop_reason {
	USTACK_STOP_OUTERMOST = 0,  /**< reached the outermost frame (_start, clone) */
	USTACK_STOP_DEPTH = 1,      /**< buffer full / depth limit */
	USTACK_STOP_NO_INFO = 2,    /**< no table and frame-pointer check failed */
	USTACK_STOP_BAD_STEP = 3,   /**< a safety check failed (CFA did not move up,
	                                 misaligned, outside the stack, loop) */
	USTACK_STOP_READ_FAULT = 4, /**< stack memory could not be read */
	USTACK_STOP_BAD_TABLE = 5,  /**< an unwind table was corrupt */
	USTACK_STOP_NOT_LOADED = 6, /**< record --backend bpf: the frame's file had no
	                                 table in the kernel yet */
	USTACK_STOP_MAPS_BUSY = 7,  /**< record --backend bpf: the process's mappings
	                                 were locked (only when no copy could be sent) */
};

/** Name of a method ("sframe", "cfi", "fp", ...). Never NULL. */
USTACK_API const char *ustack_method_name(unsigned int method);
/** Name of a stop reason. Never NULL. */
USTACK_API const char *ustack_stop_reason_name(unsigned int reason);

/**
 * Take the calling thread's stack, with exactly the contract of glibc's
 * backtrace(3): buffer[0] is the return address into the caller of
 * ustack_backtrace(), each further entry the return address of the next
 * outer frame. Works without frame pointers (SFrame, then the frame-pointer
 * heuristic). Async-signal-safe: no allocation, no locks.
 * @param buffer receives up to @size addresses
 * @param size capacity of @buffer
 * @return number of entries stored (0 if size <= 0)
 */
USTACK_API int ustack_backtrace(void **buffer, int size);

/**
 * Like ustack_backtrace() but with the method and flags of every frame.
 * frames[0] is the caller of ustack_backtrace_frames().
 * @param frames receives up to @size frames
 * @param size capacity of @frames
 * @param stop if not NULL, receives the enum ustack_stop_reason
 * @return number of frames stored
 */
USTACK_API int ustack_backtrace_frames(struct ustack_frame *frames, int size,
				       unsigned int *stop);

#ifdef __cplusplus
}
#endif
#endif /* USTACK_USTACK_H */
