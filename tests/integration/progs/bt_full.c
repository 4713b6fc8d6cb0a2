// SPDX-License-Identifier: MIT
/*
 * ustack_backtrace() on whole stacks (leaf to _start, size 256) of distinct
 * paths through 64 generated functions of three frame shapes
 * (bench/backtrace/gen_full.sh), compared call by call with libunwind's
 * unw_backtrace() (built -DBT_UNW, linked -lunwind) or glibc's backtrace()
 * (built without), both called from one call instruction (the same
 * frame 0):
 *
 *   depths   every depth 1..200, distinct paths; the walk must also stop
 *            with USTACK_STOP_OUTERMOST (ustack_backtrace_frames)
 *   signals  (libunwind only) the same loop while a timer interrupts it;
 *            its handler walks through the signal frame, and once through
 *            a frame with an rbx-based CFA (bt_full_drap.S)
 *   threads  four threads at once, each on its own paths
 *   dlopen   paths through a library, dlclose()d and replaced by another
 *            build of different frame sizes (usually at the same address)
 *   libc     paths called back from qsort(): libc's frames in the middle
 *            of the stack, between two runs of the executable's
 *
 *   bt_full MODE LIB1 LIB2     (LIB*: the two builds of bt_full_lib.c)
 * Prints "OK <mode> <calls compared>" or "FAIL <mode>: <what>"; exit 1 on
 * a failure.
 */
#include <dlfcn.h>
#include <execinfo.h>
#ifdef BT_UNW
#include <libunwind.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <ustack/ustack.h>

#include "bench_full.h"

#define MAXD 256

typedef int (*cap_fn)(void **buf, int size);

/*
 * The oracle: libunwind (-DBT_UNW) or glibc's backtrace(), never both in
 * one program: libunwind.so defines backtrace() too, which then takes
 * glibc's place.
 */
#ifdef BT_UNW
static int peer_capture(void **buf, int size)
{
	return unw_backtrace(buf, size);
}
static const char *const names[] = { "ustack", "libunwind" };
#else
#define peer_capture backtrace
static const char *const names[] = { "ustack", "glibc" };
#endif

/* per thread: which methods the leaf runs, into which buffers */
struct leaf_state {
	cap_fn caps[3];
	int ncaps;
	void *bufs[3][MAXD];
	int n[3];
	unsigned int stop;
};
static __thread struct leaf_state *leaf;

FULL_NOIPA int full_leaf(uint32_t s)
{
	struct leaf_state *st = leaf;

	/* one call instruction for every method: the same frame 0 */
	for (int i = 0; i < st->ncaps; i++)
		st->n[i] = st->caps[i](st->bufs[i], MAXD);
	__asm__ volatile("" ::: "memory");
	return (int)(s & 1);
}

/* without its own frame 0 (here): the others' frames from the leaf */
static int frames_capture(void **buf, int size)
{
	struct ustack_frame f[MAXD + 1];
	int n = ustack_backtrace_frames(f, size + 1, &leaf->stop);

	for (int i = 1; i < n; i++)
		buf[i - 1] = (void *)(uintptr_t)f[i].pc;
	return n - 1;
}

static uint32_t seed_of(uint32_t i)
{
	uint32_t x = i * 2654435761u;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	return x ^ x >> 12;
}

/* compare method i with method 0; returns the first differing index or -1 */
static int differs(const struct leaf_state *st, int i)
{
	int k = 0;

	while (k < st->n[0] && k < st->n[i] && st->bufs[0][k] == st->bufs[i][k])
		k++;
	return st->n[0] == st->n[i] && k == st->n[0] ? -1 : k;
}

static int check(const char *mode, struct leaf_state *st, int depth, uint32_t seed)
{
	int bad = 0;

	for (int i = 1; i < st->ncaps; i++) {
		int k = differs(st, i);

		if (k >= 0) {
			bad = -1;
			printf("FAIL %s: depth %d seed %u: %s %d frames, %s %d frames, first difference "
			       "at %d (%p vs %p)\n", mode, depth, seed, names[0], st->n[0],
			       i < 2 ? names[i] : "ustack_backtrace_frames", st->n[i], k,
			       k < st->n[0] ? st->bufs[0][k] : NULL, k < st->n[i] ? st->bufs[i][k] : NULL);
		}
	}
	if (bad)
		return bad;
	/* the leaf, depth generated frames, the caller's frames down to _start */
	if (st->n[0] < depth + 3) {
		printf("FAIL %s: depth %d seed %u: only %d frames\n", mode, depth, seed, st->n[0]);
		return -1;
	}
	return 0;
}

static void use_all(struct leaf_state *st)
{
	st->ncaps = 0;
	st->caps[st->ncaps++] = ustack_backtrace;
	st->caps[st->ncaps++] = peer_capture;
}

static int run_paths(const char *mode, struct leaf_state *st, int depth, uint32_t first, int n)
{
	for (int p = 0; p < n; p++) {
		uint32_t s = seed_of(first + p);

		full_tab[s % FULL_NFN](s, depth);
		if (check(mode, st, depth, s))
			return -1;
	}
	return 0;
}

static int mode_depths(void)
{
	static struct leaf_state st;
	long calls = 0;

	leaf = &st;
	use_all(&st);
	st.caps[st.ncaps++] = frames_capture;
	for (int d = 1; d <= 200; d++) {
		if (run_paths("depths", &st, d, (uint32_t)d * 1000, 8))
			return 1;
		if (st.stop != USTACK_STOP_OUTERMOST) {
			printf("FAIL depths: depth %d: stop reason %s, not outermost\n", d,
			       ustack_stop_reason_name(st.stop));
			return 1;
		}
		calls += 8;
	}
	printf("OK depths %ld\n", calls);
	return 0;
}

/* ---- libc in the middle: paths called back from qsort() ----
 * libc is one of the modules ustack places without asking the loader
 * (it cannot be unloaded while ustack runs: docs/ARCHITECTURE.md); here
 * its rows are used mid-walk, not only at the bottom of the stack. */
static int qs_depth, qs_bad;
static long qs_calls;

static FULL_NOIPA int qs_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (!qs_bad) {
		uint32_t s = seed_of((uint32_t)qs_calls++ + 7000000u);

		full_tab[s % FULL_NFN](s, qs_depth);
		if (check("libc", leaf, qs_depth, s))
			qs_bad = 1;
		else if (leaf->stop != USTACK_STOP_OUTERMOST) {
			printf("FAIL libc: depth %d: stop reason %s, not outermost\n", qs_depth,
			       ustack_stop_reason_name(leaf->stop));
			qs_bad = 1;
		}
	}
	return (x > y) - (x < y);
}

static int mode_libc(void)
{
	static struct leaf_state st;
	int v[16];

	leaf = &st;
	use_all(&st);
	st.caps[st.ncaps++] = frames_capture;
	for (int d = 1; d <= 60 && !qs_bad; d++) {
		for (int i = 0; i < 16; i++)
			v[i] = (int)seed_of((uint32_t)(d * 100 + i));
		qs_depth = d;
		qsort(v, 16, sizeof(v[0]), qs_cmp);
	}
	if (qs_bad)
		return 1;
	printf("OK libc %ld\n", qs_calls);
	return 0;
}

/* ---- signals: a timer interrupts the loop (libunwind as the oracle in
 * the handler: glibc's backtrace() is not async-signal-safe) ---- */
#ifdef BT_UNW
static struct leaf_state sig_st, sig_first_bad;
static volatile int sig_runs, sig_bad, sig_bad_k;

FULL_NOIPA static void sig_walk(void)
{
	struct leaf_state *saved = leaf;

	leaf = &sig_st;
	full_leaf(0);
	leaf = saved;
}

/* SIGPROF's timer: one shot, armed again by the handler as it returns,
 * twice as far off as the handler took (150 us at least). A periodic timer
 * whose period the handler outlasts (libunwind's mincore() and
 * sigprocmask() calls cost more in some VMs, ASan adds to it) fires again
 * before the handler is done, for ever: the loop it interrupts never gets
 * on (the test ran for 5+ minutes on a 2-CPU AMD VM). */
static timer_t prof_timer;

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void prof_arm(uint64_t ns)
{
	struct itimerspec it = { { 0, 0 }, { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) } };

	timer_settime(prof_timer, 0, &it, NULL);
}

static void on_prof(int sig)
{
	uint64_t t0 = mono_ns(), dt;
	int k;

	(void)sig;
	sig_walk();
	k = differs(&sig_st, 1);
	sig_runs++;
	/* the walk goes through the signal frame into the interrupted code:
	 * more than the handler's own few frames */
	if (k >= 0 || sig_st.n[0] < 6) {
		if (!sig_bad) {
			sig_bad_k = k;
			sig_first_bad = sig_st;
		}
		sig_bad++;
	}
	dt = mono_ns() - t0;
	prof_arm(dt > 75000 ? 2 * dt : 150000);
}

/*
 * A frame whose CFA is rbx-based (as in ld.so's _dl_runtime_resolve and
 * gcc's DRAP functions) spinning until the signal handler has walked
 * through it: the caller is found only with rbx from the signal context.
 * In bt_full_drap.S, always assembled without SFrame: gas 2.40 writes an
 * SFrame FDE for it with an sp-based CFA, wrong after the and of rsp.
 */
void bf_drap_spin(volatile int *flag);
extern const char bf_drap_loop[], bf_drap_loop_end[];

static volatile int drap_done;

/* Walks only when the signal came in bf_drap_spin's spin loop, inside the
 * rbx-based frame: the periodic timer may fire before the program is there
 * (a loaded machine: it did), and the next tick comes 1 ms later. */
static void on_drap(int sig, siginfo_t *si, void *uc)
{
	uintptr_t pc = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];

	(void)sig;
	(void)si;
	if (pc < (uintptr_t)bf_drap_loop || pc >= (uintptr_t)bf_drap_loop_end)
		return;
	sig_walk();
	drap_done = 1;
}

FULL_NOIPA static int drap_caller(void)
{
	bf_drap_spin(&drap_done);
	return drap_done;
}

static int drap_check(void)
{
	struct itimerspec it = { { 0, 1000000 }, { 0, 1000000 } };
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
	struct sigaction sa;
	timer_t tm;
	int k, found = 0;

	use_all(&sig_st);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_drap;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	if (timer_create(CLOCK_MONOTONIC, &sev, &tm) || timer_settime(tm, 0, &it, NULL)) {
		printf("FAIL signals: timer_create: %m\n");
		return -1;
	}
	drap_caller();
	timer_delete(tm);
	k = differs(&sig_st, 1);
	for (int i = 0; i < sig_st.n[0]; i++)
		found += (uintptr_t)sig_st.bufs[0][i] - (uintptr_t)drap_caller < 64;
	if (k >= 0 || !found) {
		printf("FAIL signals: through an rbx-based frame: ustack %d frames, libunwind %d, "
		       "first difference at %d; drap_caller %sin ustack's frames\n", sig_st.n[0],
		       sig_st.n[1], k, found ? "" : "not ");
		return -1;
	}
	return 0;
}

static int mode_signals(void)
{
	static struct leaf_state st;
	/* a high-resolution timer: CPU-time timers fire only at the tick */
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGPROF };
	struct sigaction sa;
	long calls = 0;

	use_all(&sig_st);
	leaf = &st;
	use_all(&st);
	if (drap_check())
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	if (timer_create(CLOCK_MONOTONIC, &sev, &prof_timer)) {
		printf("FAIL signals: timer_create: %m\n");
		return 1;
	}
	prof_arm(150000);
	for (int round = 0; round < 400 && (sig_runs < 300 || round < 4); round++)
		for (int d = 1; d <= 100; d += 3) {
			if (run_paths("signals", &st, d, (uint32_t)(round * 1000 + d) * 16, 4))
				return 1;
			calls += 4;
		}
	timer_delete(prof_timer);
	if (sig_bad) {
		printf("FAIL signals: %d of %d backtraces in the handler differ from libunwind's "
		       "(first: %d vs %d frames, first difference at %d)\n", sig_bad, sig_runs,
		       sig_first_bad.n[0], sig_first_bad.n[1], sig_bad_k);
		for (int m = 0; m < 2; m++)
			for (int k = 0; k < sig_first_bad.n[m]; k++) {
				Dl_info di = { 0 };

				dladdr(sig_first_bad.bufs[m][k], &di);
				printf("  %s %d %p %s+%#lx %s\n", names[m], k, sig_first_bad.bufs[m][k],
				       di.dli_sname ? di.dli_sname : "?",
				       (unsigned long)((char *)sig_first_bad.bufs[m][k] - (char *)di.dli_saddr),
				       di.dli_fname ? di.dli_fname : "?");
			}
		return 1;
	}
	if (sig_runs < 20) {
		printf("FAIL signals: the timer fired only %d times\n", sig_runs);
		return 1;
	}
	printf("OK signals %ld calls, %d in the handler\n", calls, sig_runs);
	return 0;
}

#endif

/* ---- threads ---- */
static void *thread_main(void *arg)
{
	static struct leaf_state sts[4];
	int t = (int)(intptr_t)arg;
	struct leaf_state *st = &sts[t];

	leaf = st;
	use_all(st);
	for (int round = 0; round < 20; round++)
		for (int d = 1; d <= 120; d += 7)
			if (run_paths("threads", st, d, (uint32_t)(t * 1000000 + round * 1000 + d) * 8, 4))
				return (void *)1;
	/* a few paths shared by all threads, again and again: the whole-stack
	 * cache records and replays them while other threads do the same */
	for (int round = 0; round < 400; round++)
		if (run_paths("threads", st, 6 + (round + t) % 5 * 7, (uint32_t)((round + t) % 3) * 2, 2))
			return (void *)1;
	return NULL;
}

static int mode_threads(void)
{
	pthread_t th[4];
	int bad = 0;

	for (int t = 0; t < 4; t++)
		if (pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)t)) {
			printf("FAIL threads: pthread_create\n");
			return 1;
		}
	for (int t = 0; t < 4; t++) {
		void *r;

		pthread_join(th[t], &r);
		bad |= r != NULL;
	}
	if (!bad)
		printf("OK threads %d\n", 4 * (20 * 18 * 4 + 400 * 2));
	return bad;
}

/* ---- dlopen/dlclose ----
 * After dlclose() + dlopen() of the other build at the same address,
 * libunwind 1.6 was seen to walk the new library with the old one's rows
 * (Debian 12; glibc's backtrace() got them right): no oracle past the
 * library's frames. Those are checked against the return addresses the
 * library recorded, the rest against the oracle's walk taken in the
 * caller (frames in the main executable and libc only). */
typedef int (*bf_cb)(uint32_t s);
typedef int (*bf_fn)(bf_cb cb, uint32_t s);

static int lib_depth, peers_off;

/* the library calls back into generated paths: frames on both sides */
static int lib_cb(uint32_t s)
{
	int r = full_tab[s % FULL_NFN](s, lib_depth);

	FULL_KEEP(r);
	return r;
}

static int lib_check(const char *mode, const struct leaf_state *st, int d, uint32_t s,
		     uintptr_t inner, uintptr_t ra_inner, uintptr_t ra_outer, void **tail, int nt)
{
	const char *what = NULL;
	uintptr_t in = (uintptr_t)st->bufs[0][d + 2];

	/* frames 0..d+2 (leaf, d generated frames, lib_cb, the return into
	 * the library) are found before any library row is used */
	for (int i = 1; i < st->ncaps; i++)
		if (st->n[i] < d + 3 || memcmp(st->bufs[0], st->bufs[i], (d + 3) * sizeof(void *)))
			what = "a frame before the library's differs from the oracle's";
	if (!what && (in < inner || in - inner > 256))
		what = "frame d+2 is not in bf_lib_inner";
	else if (!what && ((uintptr_t)st->bufs[0][d + 3] != ra_inner ||
			   (uintptr_t)st->bufs[0][d + 4] != ra_outer))
		what = "the frames through the library are not its return addresses";
	else if (!what && (st->n[0] != d + 4 + nt ||
			   memcmp(st->bufs[0] + d + 5, tail + 1, (nt - 1) * sizeof(void *))))
		what = "the frames below the library differ from the oracle's taken there";
	if (what) {
		printf("FAIL %s: depth %d seed %u: %s (%d frames)\n", mode, d, s, what, st->n[0]);
		return -1;
	}
	for (int i = 1; i < st->ncaps; i++)
		peers_off += differs(st, i) >= 0;
	return 0;
}

static int lib_round(const char *lib, struct leaf_state *st, uint32_t first, void **where)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL), *tail[MAXD];
	uintptr_t *ra_inner, *ra_outer;
	bf_fn outer, inner;
	char mode[64];
	int nt, ret = 0;

	if (!h) {
		printf("FAIL dlopen: %s\n", dlerror());
		return -1;
	}
	outer = (bf_fn)dlsym(h, "bf_lib_outer");
	inner = (bf_fn)dlsym(h, "bf_lib_inner");
	ra_inner = dlsym(h, "bf_ra_inner");
	ra_outer = dlsym(h, "bf_ra_outer");
	*where = (void *)outer;
	snprintf(mode, sizeof(mode), "dlopen %s", strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib);
	nt = peer_capture(tail, MAXD);
	for (int p = 0; p < 40 && !ret; p++) {
		uint32_t s = seed_of(first + p);

		lib_depth = 1 + (int)(s % 40);
		outer(lib_cb, s);
		ret = lib_check(mode, st, lib_depth, s, (uintptr_t)inner, *ra_inner, *ra_outer, tail, nt);
	}
	dlclose(h);
	return ret;
}

static int mode_dlopen(const char *lib1, const char *lib2)
{
	static struct leaf_state st;
	void *at1, *at2;
	int same = 0;

	leaf = &st;
	use_all(&st);
	for (int i = 0; i < 10; i++) {
		if (lib_round(lib1, &st, (uint32_t)i * 100, &at1) ||
		    lib_round(lib2, &st, (uint32_t)i * 100 + 50, &at2))
			return 1;
		same += at1 == at2;
	}
#ifndef BT_UNW
	/* glibc's unwinder asks _dl_find_object() each time: it must agree */
	if (peers_off) {
		printf("FAIL dlopen: glibc's backtrace() differs in %d walks\n", peers_off);
		return 1;
	}
#endif
	printf("OK dlopen %d, the second library at the first's address in %d of 10 rounds; "
	       "%s differed (stale rows) in %d walks\n", 10 * 80, same, names[1], peers_off);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "depths";

	if (!strcmp(mode, "depths"))
		return mode_depths();
#ifdef BT_UNW
	if (!strcmp(mode, "signals"))
		return mode_signals();
#endif
	if (!strcmp(mode, "threads"))
		return mode_threads();
	if (!strcmp(mode, "libc"))
		return mode_libc();
	if (!strcmp(mode, "dlopen") && argc > 3)
		return mode_dlopen(argv[2], argv[3]);
	fprintf(stderr, "usage: bt_full depths|signals|threads|libc|dlopen LIB1 LIB2\n");
	return 2;
}
