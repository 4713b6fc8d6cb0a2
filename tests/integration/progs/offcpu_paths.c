// SPDX-License-Identifier: MIT
/*
 * The oracle of the off-CPU tests (tests/integration/offcpu.sh) and of
 * bench/offcpu/run.sh: threads that block in known call paths and log, for
 * every blocking call, when it started and ended and how much CPU the
 * thread used inside it, on the clock the recorder stamps its events with
 * (CLOCK_MONOTONIC). A recorded off-CPU interval of a thread must then lie
 * inside one of that thread's logged calls (causality: the thread was
 * switched out after it read t0 and switched in before it read t1), and
 * the calls' wall time minus their CPU time is the time the thread spent
 * switched out in them, the figure a recorder must account for.
 *
 * Each path is a chain of noinline functions with distinct names,
 * path_<name> -> do_<name>_wait -> the blocking libc call, run by a thread
 * named p-<name>; helper threads (h-*) do the waking and are not measured.
 *
 * Log lines are written at the end (each thread logs into a buffer of its
 * own); READY and Q lines at once.
 *
 * usage: offcpu_paths [-r ROUNDS] [-t MS] [-o LOG] MODE
 *   paths       p-sleep (nanosleep), p-cond (a condition variable h-cond
 *               signals every MS ms), p-pipe (a pipe read h-pipe feeds every
 *               MS ms), p-mutex (a mutex h-mutex holds MS ms): ROUNDS calls each
 *   xcpu        p-xcpu blocks on a pipe pinned to one CPU; h-xcpu moves it to
 *               the other once it is switched out, then wakes it: ROUNDS times
 *   exit        p-exit blocks in a pipe read that never returns; the process
 *               exits MS ms after it is switched out
 *   reuse       ROUNDS short-lived threads (p-reuse) and ROUNDS pairs of
 *               processes with one pid (clone3 set_tid; p-reuse-a, p-reuse-b),
 *               each blocking once for MS ms
 *   pre         p-pre blocks on a pipe until a line arrives on stdin, then
 *               sleeps ROUNDS times MS ms; h-beat sleeps 5 ms in a loop meanwhile
 *   thresh      p-thresh sleeps alternately MS/10 and 3*MS ms, ROUNDS times each
 *   mixed       p-mix computes MS ms of CPU (path_spin -> spin_work) then
 *               sleeps MS ms (path_mixsleep), ROUNDS times
 *   preempt     three p-busy threads pinned to CPU 0 each spin ROUNDS*MS ms of
 *               CPU (path_busy -> busy_loop)
 *   storm       (benchmark) p-ping and p-pong bounce a byte through two pipes
 *               ROUNDS times (path_ping/path_pong -> do_ping_wait/do_pong_wait)
 * Log lines (LOG, default stdout):
 *   T TID NAME                        a thread and its name
 *   B TID PATH T0 T1 CPU_NS           one blocking call (times in ns)
 *   X TID T_S T_W CPU_BEFORE CPU_AFTER  xcpu: it was switched out by T_S,
 *                                     woken after T_W, on these CPUs
 *   Q TID T0 T_EXIT                   exit: blocked since T0, exit at T_EXIT
 *   S PATH CALLS WALL_NS OFF_NS       per path: calls, wall time, wall - CPU
 *   STEAL NS                          steal time of all CPUs during the run
 *   IRQ NS TICK                       irq + softirq time of all CPUs during
 *                                     the run, and /proc/stat's tick in ns
 *   NOREUSE REASON                    reuse: clone3 set_tid refused
 *   R PID T_REAPED                    reuse: the process PID had exited
 *                                     (reaped) by T_REAPED; the next one
 *                                     with its pid starts after it
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
/* keeps a call out of tail position, so the caller's frame stays on the stack */
#define KEEP() __asm__ volatile("" ::: "memory")

static int rounds = 20;
static int ms = 20;
static FILE *logf;

/* Log lines go to a buffer per thread, printed by main at the end: a
 * measured thread must not block outside its measured calls, as it would
 * on a lock or file shared with the others. */
#define NBUF 256
#define BUFSZ (1u << 20)
static char *bufs;
static size_t lens[NBUF];
static atomic_int nbuf;
static __thread int my_buf = -1;

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (my_buf < 0)
		my_buf = atomic_fetch_add(&nbuf, 1);
	if (my_buf >= NBUF)
		abort();
	va_start(ap, fmt);
	n = vsnprintf(bufs + (size_t)my_buf * BUFSZ + lens[my_buf], BUFSZ - lens[my_buf], fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= BUFSZ - lens[my_buf])
		abort();
	lens[my_buf] += (size_t)n;
}

/* every buffer so far (from 0, or only this thread's), then fflush */
static void log_flush(int own)
{
	fflush(logf);
	for (int i = own ? my_buf : 0; i >= 0 && i < (own ? my_buf + 1 : atomic_load(&nbuf)); i++)
		if (lens[i] && write(fileno(logf), bufs + (size_t)i * BUFSZ, lens[i]) != (ssize_t)lens[i])
			abort();
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Per path: totals, for the S lines; quiet: no B line per call (storm) */
struct path_stat {
	const char *name;
	atomic_ullong calls, wall, off;
	int quiet;
};

/* The calling thread's time so far waiting on a run queue, runnable but
 * not running (the second field of /proc/thread-self/schedstat;
 * CONFIG_SCHED_INFO), or 0 where the kernel does not say */
static uint64_t run_delay_ns(void)
{
	char buf[128];
	unsigned long long run, delay;
	int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return sscanf(buf, "%llu %llu", &run, &delay) == 2 ? delay : 0;
}

/* A bracket around one blocking call: the work is done by fn(arg). */
struct bracket {
	uint64_t t0, c0, rd0;
};

static void bracket_start(struct bracket *b, const struct path_stat *ps)
{
	b->rd0 = ps->quiet ? 0 : run_delay_ns();
	b->c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	b->t0 = now_ns(CLOCK_MONOTONIC);
}

static void bracket_end(struct bracket *b, struct path_stat *ps)
{
	uint64_t t1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t cpu = c1 - b->c0, wall = t1 - b->t0;

	/* the CPU clock is read outside the wall clock's reads: its excess
	 * over the wall time is the two reads themselves, never off-CPU time */
	if (cpu > wall)
		cpu = wall;
	/* the run-queue wait over the bracket (a superset of the call): the
	 * time it may have waited preempted, which only an off-cpu-preempt
	 * interval records */
	if (!ps->quiet)
		log_line("B %d %s %llu %llu %llu %llu\n", gettid_(), ps->name, (unsigned long long)b->t0,
			 (unsigned long long)t1, (unsigned long long)cpu,
			 (unsigned long long)(run_delay_ns() - b->rd0));
	atomic_fetch_add(&ps->calls, 1);
	atomic_fetch_add(&ps->wall, wall);
	atomic_fetch_add(&ps->off, wall - cpu);
}

static void name_self(const char *name)
{
	pthread_setname_np(pthread_self(), name);
	log_line("T %d %s\n", gettid_(), name);
}

static void print_stat(struct path_stat *ps)
{
	fprintf(logf, "S %s %llu %llu %llu\n", ps->name, (unsigned long long)atomic_load(&ps->calls),
		(unsigned long long)atomic_load(&ps->wall), (unsigned long long)atomic_load(&ps->off));
}

/* time of all CPUs so far, ns, in /proc/stat's column @col: 5 irq, 6
 * softirq, 7 steal (USER_HZ ticks) */
static uint64_t stat_ns(int col)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return 0;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) != 8)
		v[col] = 0;
	fclose(f);
	return v[col] * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
}

static uint64_t steal_ns(void)
{
	return stat_ns(7);
}

/* interrupt time: with IRQ_TIME_ACCOUNTING it is no task's CPU time, and
 * the thread was not switched out either */
static uint64_t irq_ns(void)
{
	return stat_ns(5) + stat_ns(6);
}

/* ---- paths ------------------------------------------------------------ */

static struct path_stat st_sleep = { .name = "sleep" }, st_cond = { .name = "cond" }, st_pipe = { .name = "pipe" },
			st_mutex = { .name = "mutex" };
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int cond_signaled;
static atomic_int cond_done, pipe_done;
static int pipefd[2];
static pthread_mutex_t mm = PTHREAD_MUTEX_INITIALIZER;
static atomic_int mutex_round, mutex_done;

NOINLINE void do_sleep_wait(void) { sleep_ns((uint64_t)ms * 1000000u); KEEP(); }
NOINLINE void path_sleep(void)
{
	struct bracket b;

	bracket_start(&b, &st_sleep);
	do_sleep_wait();
	bracket_end(&b, &st_sleep);
}

NOINLINE void do_cond_wait(void)
{
	pthread_mutex_lock(&cm);
	while (!cond_signaled)
		pthread_cond_wait(&cv, &cm);
	cond_signaled = 0;
	pthread_mutex_unlock(&cm);
	KEEP();
}
NOINLINE void path_cond(void)
{
	struct bracket b;

	bracket_start(&b, &st_cond);
	do_cond_wait();
	bracket_end(&b, &st_cond);
}

NOINLINE void do_pipe_wait(int fd)
{
	char c;

	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
	KEEP();
}
NOINLINE void path_pipe(void)
{
	struct bracket b;

	bracket_start(&b, &st_pipe);
	do_pipe_wait(pipefd[0]);
	bracket_end(&b, &st_pipe);
}

NOINLINE void do_mutex_wait(void) { pthread_mutex_lock(&mm); KEEP(); }
NOINLINE void path_mutex(void)
{
	struct bracket b;

	bracket_start(&b, &st_mutex);
	do_mutex_wait();
	bracket_end(&b, &st_mutex);
	pthread_mutex_unlock(&mm);
}

static void *p_sleep(void *a)
{
	(void)a;
	name_self("p-sleep");
	for (int i = 0; i < rounds; i++)
		path_sleep();
	return NULL;
}

static void *p_cond(void *a)
{
	(void)a;
	name_self("p-cond");
	for (int i = 0; i < rounds; i++) {
		path_cond();
		atomic_store(&cond_done, i + 1);
	}
	return NULL;
}

/* The helpers spin (sched_yield: never a sleep) until their path thread
 * took the previous round, so that each round is one wake-up. */
static void *h_cond(void *a)
{
	(void)a;
	name_self("h-cond");
	for (int i = 0; i < rounds; i++) {
		while (atomic_load(&cond_done) < i)
			sched_yield();
		sleep_ns((uint64_t)ms * 1000000u);
		pthread_mutex_lock(&cm);
		cond_signaled = 1;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&cm);
	}
	return NULL;
}

static void *p_pipe(void *a)
{
	(void)a;
	name_self("p-pipe");
	for (int i = 0; i < rounds; i++) {
		path_pipe();
		atomic_store(&pipe_done, i + 1);
	}
	return NULL;
}

static void *h_pipe(void *a)
{
	(void)a;
	name_self("h-pipe");
	for (int i = 0; i < rounds; i++) {
		while (atomic_load(&pipe_done) < i)
			sched_yield();
		sleep_ns((uint64_t)ms * 1000000u);
		if (write(pipefd[1], "x", 1) != 1)
			abort();
	}
	return NULL;
}

static void *p_mutex(void *a)
{
	(void)a;
	name_self("p-mutex");
	for (int i = 0; i < rounds; i++) {
		while (atomic_load(&mutex_round) <= i)
			sched_yield();
		path_mutex();
		atomic_store(&mutex_done, i + 1);
	}
	return NULL;
}

static void *h_mutex(void *a)
{
	(void)a;
	name_self("h-mutex");
	for (int i = 0; i < rounds; i++) {
		pthread_mutex_lock(&mm);
		atomic_store(&mutex_round, i + 1);
		sleep_ns((uint64_t)ms * 1000000u);
		pthread_mutex_unlock(&mm);
		while (atomic_load(&mutex_done) <= i)
			sched_yield();
	}
	return NULL;
}

static void run_threads(void *(*const *fns)(void *), int n)
{
	pthread_t t[16];

	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, fns[i], NULL))
			abort();
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static int mode_paths(void)
{
	static void *(*const fns[])(void *) = { p_sleep, p_cond, h_cond, p_pipe, h_pipe, p_mutex, h_mutex };

	if (pipe(pipefd))
		return 1;
	run_threads(fns, 7);
	print_stat(&st_sleep);
	print_stat(&st_cond);
	print_stat(&st_pipe);
	print_stat(&st_mutex);
	return 0;
}

/* ---- xcpu ------------------------------------------------------------- */

static struct path_stat st_xcpu = { .name = "xcpu" };
static atomic_int xcpu_tid, xcpu_armed, xcpu_round;
static atomic_long xcpu_v0;

static void pin(pid_t tid, int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(tid, sizeof(s), &s))
		abort();
}

/* voluntary context switches of a thread of this process, -1 if unknown */
static long vcsw(pid_t tid)
{
	char path[64], line[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

NOINLINE void do_xcpu_wait(int fd) { do_pipe_wait(fd); KEEP(); }
NOINLINE void path_xcpu(int *before, int *after)
{
	struct bracket b;

	*before = sched_getcpu();
	/* the helper waits for this count to go up: nothing below blocks
	 * before the read */
	atomic_store(&xcpu_v0, vcsw(gettid_()));
	bracket_start(&b, &st_xcpu);
	atomic_store(&xcpu_armed, 1);
	do_xcpu_wait(pipefd[0]);
	bracket_end(&b, &st_xcpu);
	*after = sched_getcpu();
}

static void *p_xcpu(void *a)
{
	(void)a;
	name_self("p-xcpu");
	atomic_store(&xcpu_tid, gettid_());
	for (int i = 0; i < rounds; i++) {
		int before, after;

		pin(0, i & 1);
		while (atomic_load(&xcpu_round) <= i)
			sched_yield();
		path_xcpu(&before, &after);
		log_line("X %d %d %d %d\n", gettid_(), i, before, after);
		atomic_store(&xcpu_armed, 0);
		atomic_store(&xcpu_round, -(i + 1)); /* done with round i */
	}
	return NULL;
}

static void *h_xcpu(void *a)
{
	(void)a;
	name_self("h-xcpu");
	while (!atomic_load(&xcpu_tid))
		sched_yield();
	pid_t tid = atomic_load(&xcpu_tid);
	for (int i = 0; i < rounds; i++) {
		atomic_store(&xcpu_round, i + 1);
		while (!atomic_load(&xcpu_armed))
			sched_yield();
		/* switched out: its count of voluntary switches went up (it
		 * blocks nowhere else between arming and the read) */
		while (vcsw(tid) <= atomic_load(&xcpu_v0))
			sched_yield();
		/* setaffinity takes the task's run-queue lock, which its
		 * switch-out holds until after the sched_switch tracepoint:
		 * once it returns, the switch-out was stamped */
		pin(tid, !(i & 1));
		uint64_t t_s = now_ns(CLOCK_MONOTONIC);
		sleep_ns((uint64_t)ms * 1000000u);
		uint64_t t_w = now_ns(CLOCK_MONOTONIC);
		log_line("W %d %d %llu %llu\n", tid, i, (unsigned long long)t_s, (unsigned long long)t_w);
		if (write(pipefd[1], "x", 1) != 1)
			abort();
		while (atomic_load(&xcpu_round) != -(i + 1))
			sched_yield();
	}
	return NULL;
}

static int mode_xcpu(void)
{
	static void *(*const fns[])(void *) = { p_xcpu, h_xcpu };

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(logf, "NOXCPU one CPU\n");
		return 0;
	}
	if (pipe(pipefd))
		return 1;
	run_threads(fns, 2);
	print_stat(&st_xcpu);
	return 0;
}

/* ---- exit ------------------------------------------------------------- */

static atomic_int exit_tid;
static atomic_ullong exit_t0;
static atomic_long exit_v0;

NOINLINE void do_exit_wait(int fd) { do_pipe_wait(fd); KEEP(); }
NOINLINE void path_exit(void)
{
	atomic_store(&exit_v0, vcsw(gettid_()));
	atomic_store(&exit_t0, now_ns(CLOCK_MONOTONIC));
	atomic_store(&exit_tid, gettid_());
	do_exit_wait(pipefd[0]);
	KEEP();
}

static void *p_exit(void *a)
{
	(void)a;
	name_self("p-exit");
	path_exit();
	return NULL;
}

static int mode_exit(void)
{
	pthread_t t;

	if (pipe(pipefd) || pthread_create(&t, NULL, p_exit, NULL))
		return 1;
	while (!atomic_load(&exit_tid))
		sched_yield();
	/* one more voluntary switch than before its read: switched out in it */
	while (vcsw(atomic_load(&exit_tid)) <= atomic_load(&exit_v0))
		sched_yield();
	sleep_ns((uint64_t)ms * 1000000u);
	fprintf(logf, "Q %d %llu %llu\n", atomic_load(&exit_tid), (unsigned long long)atomic_load(&exit_t0),
		(unsigned long long)now_ns(CLOCK_MONOTONIC));
	log_flush(0);
	_exit(0); /* exit_group: the blocked thread is killed in its read */
}

/* ---- reuse ------------------------------------------------------------ */

static struct path_stat st_reuse = { .name = "reuse" }, st_reuse_a = { .name = "reuse-a" }, st_reuse_b = { .name = "reuse-b" };

NOINLINE void do_reuse_wait(void) { sleep_ns((uint64_t)ms * 1000000u); KEEP(); }
NOINLINE void path_reuse(void)
{
	struct bracket b;

	bracket_start(&b, &st_reuse);
	do_reuse_wait();
	bracket_end(&b, &st_reuse);
}
NOINLINE void path_reuse_a(void)
{
	struct bracket b;

	bracket_start(&b, &st_reuse_a);
	do_reuse_wait();
	bracket_end(&b, &st_reuse_a);
}
NOINLINE void path_reuse_b(void)
{
	struct bracket b;

	bracket_start(&b, &st_reuse_b);
	do_reuse_wait();
	bracket_end(&b, &st_reuse_b);
}

static void *p_reuse(void *a)
{
	(void)a;
	name_self("p-reuse");
	path_reuse();
	return NULL;
}

/* a child process with pid @want (0: any) running path a or b, logging to
 * the shared log; returns its pid or -errno */
static pid_t reuse_child(pid_t want, int b)
{
	struct clone_args ca;
	pid_t set = want;
	long pid;

	memset(&ca, 0, sizeof(ca));
	ca.exit_signal = SIGCHLD;
	if (want) {
		ca.set_tid = (uint64_t)(uintptr_t)&set;
		ca.set_tid_size = 1;
	}
	fflush(logf);
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		my_buf = -1; /* a buffer of its own, written before it exits */
		name_self(b ? "p-reuse-b" : "p-reuse-a");
		if (b)
			path_reuse_b();
		else
			path_reuse_a();
		log_flush(1);
		_exit(0);
	}
	return (pid_t)pid;
}

static int mode_reuse(void)
{
	pid_t first = 0;

	for (int i = 0; i < rounds; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, p_reuse, NULL))
			return 1;
		pthread_join(t, NULL);
	}
	/* the log is a file shared with the children: line buffered, each
	 * line one write() in O_APPEND */
	for (int i = 0; i < 2 * rounds; i++) {
		pid_t p = reuse_child(first, i & 1);

		if (p < 0) {
			fprintf(logf, "NOREUSE clone3 set_tid=%d: %s\n", first, strerror(-p));
			break;
		}
		first = p;
		waitpid(p, NULL, 0);
		log_line("R %d %llu\n", p, (unsigned long long)now_ns(CLOCK_MONOTONIC));
	}
	print_stat(&st_reuse);
	return 0;
}

/* ---- pre, thresh, mixed, preempt, storm ------------------------------- */

static struct path_stat st_pre = { .name = "pre" }, st_presleep = { .name = "presleep" }, st_short = { .name = "short" },
			st_long = { .name = "long" }, st_mix = { .name = "mixsleep" }, st_spin = { .name = "spin" },
			st_busy = { .name = "busy" }, st_ping = { .name = "ping" }, st_pong = { .name = "pong" };

static atomic_int pre_done;

NOINLINE void do_pre_wait(int fd) { do_pipe_wait(fd); KEEP(); }
NOINLINE void path_pre(void)
{
	struct bracket b;

	bracket_start(&b, &st_pre);
	do_pre_wait(pipefd[0]);
	bracket_end(&b, &st_pre);
}
NOINLINE void do_presleep_wait(void) { sleep_ns((uint64_t)ms * 1000000u); KEEP(); }
NOINLINE void path_presleep(void)
{
	struct bracket b;

	bracket_start(&b, &st_presleep);
	do_presleep_wait();
	bracket_end(&b, &st_presleep);
}

static void *p_pre(void *a)
{
	(void)a;
	name_self("p-pre");
	path_pre();
	for (int i = 0; i < rounds; i++)
		path_presleep();
	atomic_store(&pre_done, 1);
	return NULL;
}

NOINLINE void beat_wait(void) { sleep_ns(5000000u); KEEP(); }
static void *h_beat(void *a)
{
	(void)a;
	name_self("h-beat");
	while (!atomic_load(&pre_done))
		beat_wait();
	return NULL;
}

static int mode_pre(void)
{
	pthread_t t[2];
	char line[64];

	if (pipe(pipefd) || pthread_create(&t[0], NULL, p_pre, NULL) ||
	    pthread_create(&t[1], NULL, h_beat, NULL))
		return 1;
	fprintf(logf, "READY %d\n", getpid());
	fflush(logf);
	if (!fgets(line, sizeof(line), stdin) || write(pipefd[1], "x", 1) != 1)
		return 1;
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	print_stat(&st_pre);
	print_stat(&st_presleep);
	return 0;
}

NOINLINE void do_short_wait(void) { sleep_ns((uint64_t)ms * 100000u); KEEP(); }
NOINLINE void path_short(void)
{
	struct bracket b;

	bracket_start(&b, &st_short);
	do_short_wait();
	bracket_end(&b, &st_short);
}
NOINLINE void do_long_wait(void) { sleep_ns((uint64_t)ms * 3000000u); KEEP(); }
NOINLINE void path_long(void)
{
	struct bracket b;

	bracket_start(&b, &st_long);
	do_long_wait();
	bracket_end(&b, &st_long);
}

static void *p_thresh(void *a)
{
	(void)a;
	name_self("p-thresh");
	for (int i = 0; i < rounds; i++) {
		path_short();
		path_long();
	}
	return NULL;
}

volatile uint64_t sink;
NOINLINE void spin_work(uint64_t cpu_ns)
{
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + cpu_ns;

	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * 7;
	KEEP();
}
NOINLINE void path_spin(void)
{
	struct bracket b;

	bracket_start(&b, &st_spin);
	spin_work((uint64_t)ms * 1000000u);
	bracket_end(&b, &st_spin);
}
NOINLINE void do_mixsleep_wait(void) { sleep_ns((uint64_t)ms * 1000000u); KEEP(); }
NOINLINE void path_mixsleep(void)
{
	struct bracket b;

	bracket_start(&b, &st_mix);
	do_mixsleep_wait();
	bracket_end(&b, &st_mix);
}

static void *p_mix(void *a)
{
	(void)a;
	name_self("p-mix");
	for (int i = 0; i < rounds; i++) {
		path_spin();
		path_mixsleep();
	}
	return NULL;
}

NOINLINE void busy_loop(uint64_t cpu_ns) { spin_work(cpu_ns); KEEP(); }
NOINLINE void path_busy(void)
{
	struct bracket b;

	bracket_start(&b, &st_busy);
	busy_loop((uint64_t)rounds * (uint64_t)ms * 1000000u);
	bracket_end(&b, &st_busy);
}

static void *p_busy(void *a)
{
	(void)a;
	pin(0, 0);
	name_self("p-busy");
	path_busy();
	return NULL;
}

static int pp_fd[2][2];
NOINLINE void do_ping_wait(void) { do_pipe_wait(pp_fd[1][0]); KEEP(); }
NOINLINE void path_ping(void)
{
	struct bracket b;

	if (write(pp_fd[0][1], "x", 1) != 1)
		abort();
	bracket_start(&b, &st_ping);
	do_ping_wait();
	bracket_end(&b, &st_ping);
}
NOINLINE void do_pong_wait(void) { do_pipe_wait(pp_fd[0][0]); KEEP(); }
NOINLINE void path_pong(void)
{
	struct bracket b;

	bracket_start(&b, &st_pong);
	do_pong_wait();
	bracket_end(&b, &st_pong);
	if (write(pp_fd[1][1], "x", 1) != 1)
		abort();
}

static void *p_ping(void *a)
{
	(void)a;
	name_self("p-ping");
	for (int i = 0; i < rounds; i++)
		path_ping();
	return NULL;
}

static void *p_pong(void *a)
{
	(void)a;
	name_self("p-pong");
	for (int i = 0; i < rounds; i++)
		path_pong();
	return NULL;
}

static int mode_simple(const char *m)
{
	static void *(*const thresh[])(void *) = { p_thresh };
	static void *(*const mixed[])(void *) = { p_mix };
	static void *(*const busy[])(void *) = { p_busy, p_busy, p_busy };
	static void *(*const storm[])(void *) = { p_ping, p_pong };

	if (!strcmp(m, "thresh")) {
		run_threads(thresh, 1);
		print_stat(&st_short);
		print_stat(&st_long);
	} else if (!strcmp(m, "mixed")) {
		run_threads(mixed, 1);
		print_stat(&st_spin);
		print_stat(&st_mix);
	} else if (!strcmp(m, "preempt")) {
		run_threads(busy, 3);
		print_stat(&st_busy);
	} else if (!strcmp(m, "storm")) {
		st_ping.quiet = st_pong.quiet = 1;
		if (pipe(pp_fd[0]) || pipe(pp_fd[1]))
			return 1;
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);
		run_threads(storm, 2);
		uint64_t t1 = now_ns(CLOCK_MONOTONIC);
		print_stat(&st_ping);
		print_stat(&st_pong);
		fprintf(logf, "RATE %.0f\n", 2.0 * rounds / ((double)(t1 - t0) / 1e9));
	} else {
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	int c, rc;

	while ((c = getopt(argc, argv, "r:t:o:")) != -1) {
		if (c == 'r')
			rounds = atoi(optarg);
		else if (c == 't')
			ms = atoi(optarg);
		else if (c == 'o')
			out = optarg;
		else
			return 2;
	}
	if (optind != argc - 1 || rounds < 1 || ms < 1) {
		fprintf(stderr, "usage: offcpu_paths [-r ROUNDS] [-t MS] [-o LOG] "
				"paths|xcpu|exit|reuse|pre|thresh|mixed|preempt|storm\n");
		return 2;
	}
	if (out) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);

		logf = fd < 0 ? NULL : fdopen(fd, "a");
		if (!logf) {
			perror(out);
			return 1;
		}
	} else {
		logf = stdout;
	}
	setvbuf(logf, NULL, _IOLBF, 0);
	bufs = mmap(NULL, (size_t)NBUF * BUFSZ, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (bufs == MAP_FAILED)
		return 1;
	name_self("main");
	uint64_t s0 = steal_ns(), i0 = irq_ns();
	const char *m = argv[optind];
	if (!strcmp(m, "paths"))
		rc = mode_paths();
	else if (!strcmp(m, "xcpu"))
		rc = mode_xcpu();
	else if (!strcmp(m, "exit"))
		rc = mode_exit();
	else if (!strcmp(m, "reuse"))
		rc = mode_reuse();
	else if (!strcmp(m, "pre"))
		rc = mode_pre();
	else
		rc = mode_simple(m);
	if (rc == 2)
		fprintf(stderr, "offcpu_paths: unknown mode %s\n", m);
	fprintf(logf, "STEAL %llu\n", (unsigned long long)(steal_ns() - s0));
	fprintf(logf, "IRQ %llu %llu\n", (unsigned long long)(irq_ns() - i0),
		1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
	log_flush(0);
	return rc;
}
