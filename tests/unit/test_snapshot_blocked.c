// SPDX-License-Identifier: MIT
/*
 * Threads blocked in the kernel are read without a stop (snapshot/snapshot.c
 * unwind_blocked()):
 *   - the /proc/PID/task/TID/syscall parser on the kernel's three forms and
 *     on text that is none of them;
 *   - a child whose threads all sleep for good: every worker thread read
 *     without a stop (stopped_ns 0), with the same frames as with
 *     USTACK_SNAPSHOT_STOP_ALL (ptrace registers); the main thread too,
 *     unless its frames need rbp (this file built with frame pointers, as
 *     the sanitizer build is), and then it is stopped after all;
 *   - a thread that runs between its registers and its stack read (the test
 *     hook sends it a signal whose handler runs, and waits until its run
 *     count shows it): the read is dropped and the thread stopped instead,
 *     for every thread, every time.
 * Skipped with a reason where the kernel lacks /proc/PID/syscall or run
 * counts, or ptrace is not allowed.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ustack/snapshot.h>
#include "snapshot/proc.h"
#include "test.h"

#define CHILD_THREADS 4

static void test_parse(void)
{
	uint64_t sp = 1, pc = 2;

	CHECK_EQ(ustack_parse_proc_syscall("202 0x55d0c2a3e068 0x189 0x0 0x0 0x0 0xffffffff "
					   "0x7ffce2f63870 0x7f2853a2cf16\n", &sp, &pc), 0);
	CHECK_EQ_U64(sp, 0x7ffce2f63870ull);
	CHECK_EQ_U64(pc, 0x7f2853a2cf16ull);
	CHECK_EQ(ustack_parse_proc_syscall("-1 0x7ffc00001000 0x401000\n", &sp, &pc), 0);
	CHECK_EQ_U64(sp, 0x7ffc00001000ull);
	CHECK_EQ_U64(pc, 0x401000ull);
	CHECK_EQ(ustack_parse_proc_syscall("-1 0x7ffc00001000 0x401000", &sp, &pc), 0);
	/* none of the forms */
	const char *bad[] = {
		"running\n", "", "\n", "-1 0x0 0x0\n" /* exiting: no user registers */,
		"-1 0x7ffc00001000\n", "202 0x1 0x2 0x3\n", "-1 0x10 0x20 0x30\n",
		"202 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8 0x9\n", "-1 10 0x20\n", "-1 0x 0x20\n",
		"-1 0x10000000000000000 0x20\n" /* 65 bits */, "-1  0x10 0x20\n",
		"x1 0x10 0x20\n", "-1 0x10 0x20 \n", "-1 0x10 0x20\nmore", "- 0x10 0x20\n",
		"-1 0x-10 0x20\n", "-1 0X10 0x20\n", "1234567890123456 0x10 0x20\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (ustack_parse_proc_syscall(bad[i], &sp, &pc) != -1) {
			fprintf(stderr, "accepted: '%s'\n", bad[i]);
			CHECK(0);
		}
	}
}

/* ---- the child: CHILD_THREADS threads and main, all sleeping ----------- */

static void on_usr1(int sig)
{
	(void)sig;
}

/* no frame pointer even in a sanitizer build (-fno-omit-frame-pointer):
 * an rbp-based CFA would need rbp, which /proc does not give */
static __attribute__((optimize("omit-frame-pointer"), noinline)) void *child_sleeper(void *arg)
{
	for (;;)
		pause();
	return arg;
}

static void child(int ready_fd)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	pthread_t t;

	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < CHILD_THREADS; i++)
		pthread_create(&t, NULL, child_sleeper, NULL);
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

static pid_t child_pid;

/* "run-time run-delay run-count" of a child thread */
static int read_schedstat(int tid, char *buf, size_t size)
{
	char path[96];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)child_pid, tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = 0;
	return 0;
}

/* threads of the child blocked in pause() (syscall 34), all of them */
static int child_all_paused(void)
{
	char path[96], buf[256];
	int n = 0;

	for (int tid = child_pid; tid < child_pid + 64; tid++) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)child_pid, tid);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && !strncmp(buf, "34 ", 3))
			n++;
		fclose(f);
	}
	return n == CHILD_THREADS + 1;
}

/* Until every thread of the child is back in pause(), at most 10 s (a
 * loaded machine may take a while to run a thread a stop released). */
static int wait_all_paused(void)
{
	for (int tries = 0; tries < 10000; tries++) {
		struct timespec ts = { 0, 1000000 };

		if (child_all_paused())
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* The hook: make the thread run (a signal whose handler it must run), and
 * wait until its run count shows it did, at most 10 s. */
static unsigned int hook_calls, hook_ran;

static void make_it_run(int tid)
{
	char before[128], now[128];

	hook_calls++;
	if (read_schedstat(tid, before, sizeof(before)))
		return;
	syscall(SYS_tgkill, child_pid, tid, SIGUSR1);
	for (int i = 0; i < 10000; i++) {
		struct timespec ts = { 0, 1000000 };

		if (!read_schedstat(tid, now, sizeof(now)) && strcmp(before, now)) {
			hook_ran++;
			return;
		}
		nanosleep(&ts, NULL);
	}
}

struct seen {
	int n;
	int tids[16];
	unsigned int flags[16];
	uint64_t stopped_ns[16];
	int nr_frames[16];
	uint64_t pcs[16][8];
};

static int collect(const struct ustack_snapshot_thread *t, void *ctx)
{
	struct seen *s = ctx;

	if (s->n < 16) {
		s->tids[s->n] = t->tid;
		s->flags[s->n] = t->thread_flags;
		s->stopped_ns[s->n] = t->stopped_ns;
		s->nr_frames[s->n] = t->nr_frames;
		for (int i = 0; i < 8 && i < t->nr_frames; i++)
			s->pcs[s->n][i] = t->frames[i].pc;
		s->n++;
	}
	return 0;
}

static void test_live(void)
{
	struct ustack_snapshot_opts o = { .sz = sizeof(o), .flags = USTACK_SNAPSHOT_NO_NAMES };
	struct ustack_snapshot_opts all = o;
	struct ustack_snapshot_stats st;
	struct seen a = { 0 }, b = { 0 }, c = { 0 };
	char buf[128];
	int fds[2], ret;

	FILE *f;

	if (access("/proc/self/syscall", R_OK))
		SKIP("no /proc/PID/syscall on this kernel");
	/* of pid 1, which has run and slept (a task still on its first run
	 * may show a run time of 0 either way) */
	f = fopen("/proc/1/schedstat", "re");
	if (!f || !fgets(buf, sizeof(buf), f) || buf[0] == '0') {
		if (f)
			fclose(f);
		SKIP("no run counts in /proc/PID/schedstat (CONFIG_SCHED_INFO)");
	}
	fclose(f);
	CHECK_EQ(pipe(fds), 0);
	child_pid = fork();
	CHECK(child_pid >= 0);
	if (!child_pid) {
		/* gone with the test, whichever way it ends */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[0]);
		child(fds[1]);
	}
	close(fds[1]);
	CHECK_EQ(read(fds[0], buf, 1), 1);
	close(fds[0]);
	CHECK(wait_all_paused());

	/* all blocked: none stopped, the frames of a stopping snapshot */
	ret = ustack_snapshot(child_pid, &o, collect, &a, &st, sizeof(st));
	if (ret == -EPERM) {
		kill(child_pid, SIGKILL);
		waitpid(child_pid, NULL, 0);
		SKIP("ptrace not allowed here");
	}
	CHECK_EQ(ret, 0);
	CHECK_EQ(a.n, CHILD_THREADS + 1);
	CHECK(st.not_stopped >= CHILD_THREADS);
	CHECK_EQ(st.not_stopped + st.restopped, CHILD_THREADS + 1);
	all.flags |= USTACK_SNAPSHOT_STOP_ALL;
	CHECK_EQ(ustack_snapshot(child_pid, &all, collect, &b, &st, sizeof(st)), 0);
	CHECK_EQ(st.not_stopped, 0);
	CHECK_EQ(b.n, a.n);
	for (int i = 0; i < a.n; i++) {
		CHECK_EQ(a.tids[i], b.tids[i]);
		if (a.tids[i] != child_pid || a.flags[i]) {
			CHECK_EQ(a.flags[i], USTACK_SNAPSHOT_THREAD_NOT_STOPPED);
			CHECK_EQ_U64(a.stopped_ns[i], 0);
		}
		CHECK_EQ(b.flags[i], 0);
		CHECK(b.stopped_ns[i] > 0);
		/* pause() <- the thread's function <- ... */
		CHECK(a.nr_frames[i] >= 3);
		CHECK_EQ(a.nr_frames[i], b.nr_frames[i]);
		for (int k = 0; k < a.nr_frames[i] && k < 8; k++)
			CHECK_EQ_U64(a.pcs[i][k], b.pcs[i][k]);
	}

	/* each thread runs between its registers and its stack: every read
	 * is dropped, every thread stopped (first every thread blocked again:
	 * the stops above made each return from pause() and call it anew) */
	CHECK(wait_all_paused());
	ustack_snapshot_blocked_hook = make_it_run;
	ret = ustack_snapshot(child_pid, &o, collect, &c, &st, sizeof(st));
	ustack_snapshot_blocked_hook = NULL;
	CHECK_EQ(ret, 0);
	CHECK_EQ(hook_calls, CHILD_THREADS + 1);
	CHECK_EQ(hook_ran, CHILD_THREADS + 1);
	CHECK_EQ(c.n, CHILD_THREADS + 1);
	CHECK_EQ(st.not_stopped, 0);
	CHECK_EQ(st.restopped, CHILD_THREADS + 1);
	for (int i = 0; i < c.n; i++) {
		CHECK_EQ(c.flags[i], 0);
		CHECK(c.stopped_ns[i] > 0);
		CHECK(c.nr_frames[i] >= 1);
	}
	kill(child_pid, SIGKILL);
	waitpid(child_pid, NULL, 0);
}

int main(void)
{
	RUN(test_parse);
	RUN(test_live);
	TEST_EXIT();
}
