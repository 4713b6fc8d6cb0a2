// SPDX-License-Identifier: MIT
/*
 * ustack_snapshot() leaves the caller's signal mask alone unless asked
 * (USTACK_SNAPSHOT_HOLD_SIGNALS). While a target thread is held stopped
 * (opts.hold_ms), a helper thread reads the calling thread's blocked set
 * from /proc/self/task/TID/status (SigBlk), the kernel's own account.
 * Only readings taken while the child is in its ptrace stop count (state
 * 't'): outside it, glibc itself blocks every signal for a moment (e.g.
 * in pthread_create).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ustack/snapshot.h>
#include "test.h"

static pid_t main_tid, child_pid;
static volatile int watching;
static unsigned long long seen;
static unsigned int in_stop; /* readings taken during the stop */

static char child_state(void)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)child_pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static void *watch(void *arg)
{
	char path[64], line[256];

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)main_tid);
	while (watching) {
		struct timespec ts = { 0, 2000000 };
		unsigned long long v, blk = 0;
		FILE *f;

		if (child_state() != 't') {
			nanosleep(&ts, NULL);
			continue;
		}
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "SigBlk: %llx", &v) == 1)
				blk = v;
		if (f)
			fclose(f);
		/* still stopped: the reading is from inside the stop */
		if (child_state() == 't') {
			seen |= blk;
			in_stop++;
		}
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* Blocked signals seen during a snapshot of @child with @flags, the child
 * held stopped @hold_ms. */
static int blocked_during_hold(pid_t child, unsigned int flags, unsigned int hold_ms,
			       unsigned long long *out)
{
	struct ustack_snapshot_opts o = { .sz = sizeof(o), .hold_ms = hold_ms, .flags = flags };
	pthread_t th;
	int ret;

	seen = 0;
	in_stop = 0;
	watching = 1;
	if (pthread_create(&th, NULL, watch, NULL))
		return -EAGAIN;
	ret = ustack_snapshot(child, &o, NULL, NULL, NULL, 0);
	watching = 0;
	pthread_join(th, NULL);
	*out = seen;
	if (!ret && !in_stop)
		ret = -ETIMEDOUT; /* never saw the stop: nothing measured */
	return ret;
}

/* The same; when the watcher never ran during the stop (a loaded machine
 * may keep it off the CPU for the whole hold), again with a longer hold. */
static int blocked_during(pid_t child, unsigned int flags, unsigned long long *out)
{
	static const unsigned int holds[] = { 200, 1000, 5000 };
	int ret = -ETIMEDOUT;

	for (unsigned int i = 0; i < sizeof(holds) / sizeof(holds[0]) && ret == -ETIMEDOUT; i++) {
		ret = blocked_during_hold(child, flags, holds[i], out);
		if (ret == -ETIMEDOUT)
			printf("# no reading during a %u ms hold: again, longer\n", holds[i]);
	}
	return ret;
}

static void test_mask_untouched_unless_asked(void)
{
	unsigned long long off, on;
	sigset_t none;
	pid_t child;
	int ret;

	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	main_tid = (pid_t)syscall(SYS_gettid);
	child = child_pid = fork();
	CHECK(child >= 0);
	if (child == 0) {
		for (;;)
			pause();
	}
	ret = blocked_during(child, 0, &off);
	if (ret == -EPERM || ret == -EACCES) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		SKIP("ptrace not allowed here (/proc/sys/kernel/yama/ptrace_scope)");
	}
	CHECK_EQ(ret, 0);
	CHECK_EQ(blocked_during(child, USTACK_SNAPSHOT_HOLD_SIGNALS, &on), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	printf("# SigBlk seen: without the flag 0x%llx, with it 0x%llx\n", off, on);
	CHECK_EQ_U64(off, 0);
	/* bit n-1 for signal n */
	CHECK(on & (1ull << (SIGINT - 1)));
	CHECK(on & (1ull << (SIGTSTP - 1)));
	/* and the mask is the caller's again afterwards */
	{
		sigset_t now;

		pthread_sigmask(SIG_SETMASK, NULL, &now);
		CHECK(!sigismember(&now, SIGINT) && !sigismember(&now, SIGTSTP));
	}
}

int main(void)
{
	RUN(test_mask_untouched_unless_asked);
	TEST_EXIT();
}
