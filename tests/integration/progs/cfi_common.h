/* SPDX-License-Identifier: MIT */
/*
 * Harness of the DWARF CFI backtrace programs (cfi_*.c, cfi_*.cc), built
 * -O2 -fomit-frame-pointer WITHOUT SFrame (see backtrace_cfi.sh): glibc's
 * backtrace(), ustack_backtrace() and ustack_backtrace_frames() are taken at
 * one call instruction (cfi_capture()) and compared over the whole stack,
 * down to _start or clone3, through libc, libstdc++, libgcc_s, signal
 * frames and thread start routines.
 *
 * Why one call instruction: entry 0 of each is the return address into the
 * caller, so separate call sites would give separate entry 0s. With one
 * site all three arrays must be identical, entry 0 included, and entry 0
 * must lie inside cfi_capture() itself.
 *
 * Why glibc's backtrace is looked up inside libc.so.6: the sanitizer runtime
 * of the ASan variant interposes backtrace() with a wrapper that adds a
 * frame; dlsym() on libc's own handle skips it.
 *
 * Symbols: functions of the program are named from `nm -S` of the
 * executable (file given in CFI_NM; this names libc's internal functions in
 * the static variant too), everything else with dladdr().
 */
#ifndef CFI_COMMON_H
#define CFI_COMMON_H

#include <stdint.h>

#include <ustack/ustack.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__has_attribute)
#if __has_attribute(noipa)
#define CFI_NOIPA __attribute__((noipa))
#endif
#endif
#ifndef CFI_NOIPA
#define CFI_NOIPA __attribute__((noinline))
#endif

/* Keeps @x live in a register across a call: no tail call, no folding. */
#define CFI_KEEP(x) __asm__ volatile("" : "+r"(x))

#define CFI_MAX 256

struct cfi_snap {
	void *g[CFI_MAX];               /* glibc backtrace() */
	void *u[CFI_MAX];               /* ustack_backtrace() */
	struct ustack_frame f[CFI_MAX]; /* ustack_backtrace_frames() */
	int n[3];                       /* entries returned by each */
	unsigned int stop;              /* stop reason of _frames() */
};

/*
 * Take the three stacks of the calling thread into @s.
 * Async-signal-safe once cfi_init() ran (glibc's backtrace has loaded
 * libgcc_s by then).
 */
void cfi_capture(struct cfi_snap *s);

/* Load the symbol table, find glibc's backtrace; 0, or -1 after a FAIL line. */
int cfi_init(const char *prog, const char *variant);

/*
 * Check the snapshot @s:
 *  - glibc returned >= @min_depth entries and fewer than CFI_MAX (whole stack);
 *  - ustack_backtrace() and ustack_backtrace_frames() returned exactly
 *    glibc's entries, same count, and stopped with "outermost";
 *  - entry 0 lies in cfi_capture();
 *  - frame i > 0 was found with USTACK_METHOD_SIGNAL when frame i-1 is the
 *    signal trampoline, otherwise with SFrame if the module of frame i-1 has
 *    PT_GNU_SFRAME and CFI if not; never by the frame-pointer heuristic;
 *  - glibc's frames follow @pattern (the oracle is checked too): tokens
 *    separated by spaces, matched in order as a subsequence, the first
 *    against entry 0 and the last against the last entry:
 *      name   the frame is in the function `name` ("name*": prefix)
 *      @sys   the frame is outside the test program's code (libc,
 *             libstdc++, libgcc_s, libasan, ld.so; in the static variant
 *             any function whose name has neither "cfi" at its start nor
 *             "Cfi" in it), and not main or _start
 *      @lib   the frame is in the test library (libcfi_*.so, or a
 *             cfilib_* function linked into the static variant)
 *      @libc  the frame is in libc.so.6 (static variant: as @sys)
 *      !sig   the frame is the signal trampoline __restore_rt
 * One exception, where glibc has no answer: an interrupted pc in a PLT
 * stub of the executable with no unwind information (static .plt), where
 * glibc's unwinder ends. ustack must give the same frames and may stop
 * there too (counted in cfi_plt_stops) or go on correctly: its next frame
 * must return right after a `call` to that stub, its whole stack follow
 * @pattern and end outermost (counted in cfi_plt_beyond).
 * Env: CFI_SFRAME lists the executable's SFrame FDEs, CFI_PLT its PLT
 * sections (link-time "0xSTART SIZE" lines, written by the script).
 * On failure prints "FAIL <prog>/<variant>/<scen>: why (iteration @iter)"
 * and the whole stack side by side, and returns 1; else 0, silently.
 */
int cfi_verify(const struct cfi_snap *s, const char *scen, int iter, int min_depth,
	       const char *pattern);

/* Statistics of the last successful cfi_verify(), for the PASS line. */
struct cfi_stats {
	int depth;
	int by_method[5];
	int sys_frames; /* frames matching @sys */
};
extern struct cfi_stats cfi_last;
extern int cfi_plt_stops, cfi_plt_beyond;

/* Print "PASS <prog>/<variant>/<scen>: <iters> iterations, ..." from cfi_last. */
void cfi_pass(const char *scen, int iters, const char *note);

/* Print "SKIP <prog>/<variant>/<scen>: reason". */
void cfi_skip(const char *scen, const char *reason);

/* Print "FAIL <prog>/<variant>/<scen>: reason". */
void cfi_fail(const char *scen, const char *reason);

/* The pc is the signal trampoline (mov $15,%rax; syscall). */
int cfi_is_sigreturn(const void *pc);

/* "sym+0xoff (module)" for a return address (@exact: an exact pc). */
const char *cfi_describe(const void *pc, int exact, char *buf, unsigned long len);

extern const char *cfi_variant;

#ifdef __cplusplus
}
#endif
#endif
