/* SPDX-License-Identifier: MIT */
/*
 * Shared harness of the backtrace test programs (bt_*.c): take glibc's
 * backtrace(), ustack_backtrace() and ustack_backtrace_frames() at one and
 * the same call instruction, then compare them frame by frame.
 *
 * Why one call instruction: entry 0 of each is the return address into the
 * caller, so three separate call sites would give three different entry 0s.
 * BT_CAPTURE() loops over a table of function pointers, so all three return
 * to the same address and every outer frame is the same frame.
 *
 * Why glibc's backtrace is looked up inside libc.so.6: the sanitizer
 * runtime linked into the ASan variant interposes backtrace() with a wrapper
 * that adds its own frame; dlsym() on libc's own handle skips it.
 *
 * Frames up to main are compared (glibc's own code has no SFrame); main's
 * extent comes from BT_MAIN_SIZE (hex, from `nm -S`), set by the script.
 */
#ifndef BT_COMMON_H
#define BT_COMMON_H

#include <dlfcn.h>
#include <execinfo.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/ustack.h>

#if defined(__has_attribute)
#if __has_attribute(noipa)
#define NOIPA __attribute__((noipa))
#endif
#endif
#ifndef NOIPA
#define NOIPA __attribute__((noinline))
#endif

/* Keeps @x live in a register after a call, so the call is no tail call
 * and no accumulator transformation folds a recursion into a loop. */
#define BT_KEEP(x) __asm__ volatile("" : "+r"(x))

#define BT_MAX 256

typedef int (*bt_fn)(void *buf, int size, unsigned int *stop);

struct bt_snap {
	void *g[BT_MAX];                /* glibc backtrace() */
	void *u[BT_MAX];                /* ustack_backtrace() */
	struct ustack_frame f[BT_MAX];  /* ustack_backtrace_frames() */
	int n[3];                       /* entries returned by each */
	unsigned int stop;              /* stop reason of _frames() */
};

extern struct bt_snap bt_snap;

/*
 * What BT_CAPTURE() calls, reached through pointers of unknown extent: with
 * arrays of known size the compiler may unroll the loop into several call
 * instructions, which would give each capture its own entry 0.
 */
struct bt_tab {
	int count;
	bt_fn *fn;
	void **buf;
	int *n;
};
extern struct bt_tab *volatile bt_tab;

/*
 * The capture point: one call instruction for all three (no unrolling, see
 * above); the empty asm afterwards keeps the call from being the last thing
 * the function does.
 */
#define BT_CAPTURE() do { \
	struct bt_tab *t_ = bt_tab; \
	for (int i_ = 0; i_ < t_->count; i_++) \
		t_->n[i_] = t_->fn[i_](t_->buf[i_], BT_MAX, &bt_snap.stop); \
	__asm__ volatile("" ::: "memory"); \
} while (0)

/* Set up the function table; 0 or -1 with a message on stdout. */
int bt_init(const char *variant);

/*
 * Compare the last snapshot.
 * @scen: scenario name for the PASS/FAIL line
 * @expect_main: index at which the frame in main must appear in glibc's
 *   array (from the call structure), or -1 when main is not on this stack
 *   segment (signal handler: use @boundary)
 * @boundary: when >= 0, compare indexes 0..boundary (the frame of the
 *   signal trampoline) instead of 0..main
 * @strict_beyond: for @boundary >= 0, whatever ustack returns past the
 *   boundary must equal glibc's entries (it may stop, not be wrong)
 * @quiet: print nothing on success (stress loops)
 * @note: appended to the PASS line (may be NULL)
 * @return 0 on success, 1 on failure (a FAIL line and a diff are printed)
 */
int bt_verify(const char *scen, int expect_main, int boundary, int strict_beyond, int quiet,
	      const char *note);

/* Print "SKIP <variant>/<scen>: <reason>". */
void bt_skip(const char *scen, const char *reason);

/* Address range of main. */
int bt_in_main(const void *pc);

/* Describe @pc as "sym+0xoff (module)" into @buf. */
const char *bt_describe(const void *pc, char *buf, size_t len);

extern const char *bt_variant;

/* Of the last bt_verify(): frames past the compared range that ustack
 * returned, and how many of them (from the start) equal glibc's. */
extern int bt_beyond_ustack, bt_beyond_equal;

#endif
