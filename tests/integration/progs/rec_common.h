/* SPDX-License-Identifier: MIT */
/*
 * Shared by the rec_*.c programs of tests/integration/record_bpf_shapes.sh:
 * each makes a known number of getppid() calls (the marker system call,
 * recorded with -e syscalls:sys_enter_getppid) from a known chain of its
 * own functions, so that a recording has an exact expected folded stack.
 *
 * REC_FN keeps a function a frame of its own with its own name: no
 * inlining, no .isra/.constprop clones, no interprocedural register
 * allocation. Tail calls are avoided in the code itself: every call in a
 * chain is followed by an update of rec_sink.
 */
#ifndef REC_COMMON_H
#define REC_COMMON_H

#include <stdlib.h>
#include <unistd.h>

#if defined(__has_attribute)
#if __has_attribute(noipa)
#define REC_FN __attribute__((noipa, used))
#endif
#endif
#ifndef REC_FN
#define REC_FN __attribute__((noinline, noclone, used))
#endif

static volatile long rec_sink;

/* n marker calls; inlined, so the caller is the frame below getppid */
static inline __attribute__((always_inline)) void rec_marker(int n)
{
	for (int i = 0; i < n; i++)
		rec_sink += getppid();
}

static inline int rec_arg(int argc, char **argv, int i, int def)
{
	return argc > i ? atoi(argv[i]) : def;
}

#endif
