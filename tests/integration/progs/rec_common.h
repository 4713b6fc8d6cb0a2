/* SPDX-License-Identifier: MIT */
/*
 * Shared by the rec_*.c programs of tests/integration/record_bpf_shapes.sh:
 * each makes a known number of getppid() calls (the marker system call,
 * recorded with -e syscalls:sys_enter_getppid) from a known chain of its
 * own functions, so that a recording has an exact expected folded stack.
 *
 * rec_warm() is the handshake of the bpf runs: the bpf backend unwinds in
 * the kernel only with the file's tables loaded there, which the recorder
 * does when it has read the mapping's record; until then it sends a stack
 * copy and unwinds in user space, as the copy backend does. So the program
 * first makes getpid() calls (recorded as syscalls:sys_enter_getpid) until
 * the test, having seen one of them in the trace, creates the file named
 * by $REC_GO: every mapping made before them is known to the recorder by
 * then. Without $REC_GO (the copy runs) it returns at once.
 *
 * REC_FN keeps a function a frame of its own with its own name: no
 * inlining, no .isra/.constprop clones, no interprocedural register
 * allocation. Tail calls are avoided in the code itself: every call in a
 * chain is followed by an update of rec_sink.
 */
#ifndef REC_COMMON_H
#define REC_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
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

/* getpid() every 2 ms until FILE exists; nothing without FILE */
static inline __attribute__((always_inline)) void rec_wait_for(const char *file)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };

	if (!file || !*file)
		return;
	while (access(file, F_OK) != 0) {
		rec_sink += syscall(SYS_getpid);
		nanosleep(&ts, NULL);
	}
}

/* the handshake: "ready" on stdout, then wait for $REC_GO */
REC_FN static void rec_warm(void)
{
	const char *go = getenv("REC_GO");

	if (!go || !*go)
		return;
	printf("ready\n");
	fflush(stdout);
	rec_wait_for(go);
	rec_sink++;
}

static inline int rec_arg(int argc, char **argv, int i, int def)
{
	return argc > i ? atoi(argv[i]) : def;
}

#endif
