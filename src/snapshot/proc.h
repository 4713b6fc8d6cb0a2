/* SPDX-License-Identifier: MIT */
/*
 * What the snapshot reads of /proc besides the mappings: the registers a
 * thread blocked in the kernel entered it with (snapshot.c).
 */
#ifndef USTACK_SNAPSHOT_PROC_H
#define USTACK_SNAPSHOT_PROC_H

#include <stdint.h>

/*
 * The user sp and pc of a blocked thread, from the NUL-terminated text of
 * its /proc/PID/task/TID/syscall: "NR ARG0 .. ARG5 SP PC" (in a system
 * call) or "-1 SP PC" (blocked otherwise, e.g. on a page fault), values in
 * 0x-prefixed hex; "running" when the thread is on a CPU.
 * @return 0, or -1 when the text is none of these, or sp or pc is 0 (no
 *         user registers: a thread that is exiting)
 */
int ustack_parse_proc_syscall(const char *text, uint64_t *sp, uint64_t *pc);

/* Tests only: called by a snapshot between reading the registers of a
 * thread blocked in the kernel and walking its stack (NULL: nothing), so
 * that a test can make the thread run there. */
extern void (*ustack_snapshot_blocked_hook)(int tid);

#endif
