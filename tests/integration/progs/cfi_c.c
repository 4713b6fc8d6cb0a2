// SPDX-License-Identifier: MIT
/*
 * ustack_backtrace() against glibc backtrace() over the whole stack, in C
 * code built -O2 -fomit-frame-pointer without SFrame, where the stack runs
 * through libc: qsort/twalk/dl_iterate_phdr callbacks, signal handlers
 * (raise, sigaltstack, asynchronous SIGPROF and SIGALRM timers), a thread
 * (start_thread, clone3) and library code (dlopen()ed, or linked in the
 * static variant). See backtrace_cfi.sh and cfi_common.h.
 *
 * Usage: cfi_c VARIANT [CASE]   (env: CFI_NM, CFI_DLOPEN_LIB, CFI_ITERS)
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <search.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "cfi_common.h"

static struct cfi_snap snap;
static volatile int sig_sink;
static char case_note[256];
static int iters = 200;

/* ---- qsort comparator ------------------------------------------------------- */
/* [0] cfi_capture [1] cfi_qsort_cmp [2..] libc msort_with_tmp (recursive),
 * qsort_r [.] cfi_qsort_run [.] cfi_run_case [.] main, libc start, _start.
 * (ASan's qsort interceptor first calls the comparator on adjacent pairs
 * itself, then libc's qsort through a wrapper: @sys covers both.) */
static int qs_calls, qs_at;

CFI_NOIPA int cfi_qsort_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (++qs_calls == qs_at)
		cfi_capture(&snap);
	return (x > y) - (x < y);
}

CFI_NOIPA int cfi_qsort_run(int iter)
{
	int v[64];
	unsigned int seed = (unsigned int)iter * 2654435761u + 1;

	for (int i = 0; i < 64; i++) {
		seed = seed * 1103515245u + 12345u;
		v[i] = (int)(seed >> 8);
	}
	memset(&snap, 0, sizeof(snap));
	qs_calls = 0;
	qs_at = 1 + iter % 250; /* 64 elements take > 300 comparisons */
	qsort(v, 64, sizeof(v[0]), cfi_qsort_cmp);
	return cfi_verify(&snap, "qsort-comparator", iter, 8,
			  "cfi_capture cfi_qsort_cmp @sys cfi_qsort_run main @sys _start");
}

/* ---- twalk action (libc recursion) -------------------------------------------- */
static int tw_visits, tw_at;

CFI_NOIPA void cfi_twalk_action(const void *node, VISIT which, int depth)
{
	(void)node;
	(void)depth;
	if (which != leaf && which != postorder)
		return;
	if (++tw_visits == tw_at) {
		cfi_capture(&snap);
		sig_sink = depth; /* no tail call */
	}
}

static void no_free(void *p)
{
	(void)p;
}

static int int_cmp(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

CFI_NOIPA int cfi_twalk_run(int iter)
{
	static int keys[40];
	void *root = NULL;
	int r;

	for (int i = 0; i < 40; i++) {
		keys[i] = (i * 17 + iter) % 97;
		tsearch(&keys[i], &root, int_cmp);
	}
	memset(&snap, 0, sizeof(snap));
	tw_visits = 0;
	tw_at = 1 + iter % 30;
	twalk(root, cfi_twalk_action);
	r = cfi_verify(&snap, "twalk-action", iter, 8,
		       "cfi_capture cfi_twalk_action @libc cfi_twalk_run main @sys _start");
	tdestroy(root, no_free);
	return r;
}

/* ---- dl_iterate_phdr callback ----------------------------------------------- */
static int ph_calls, ph_at;

CFI_NOIPA int cfi_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	(void)arg;
	if (++ph_calls == ph_at)
		cfi_capture(&snap);
	return 0;
}

CFI_NOIPA int cfi_phdr_run(int iter)
{
	memset(&snap, 0, sizeof(snap));
	ph_calls = 0;
	ph_at = 1 + iter % 2;
	dl_iterate_phdr(cfi_phdr_cb, NULL);
	return cfi_verify(&snap, "dl_iterate_phdr-callback", iter, 6,
			  "cfi_capture cfi_phdr_cb @libc cfi_phdr_run main @sys _start");
}

/* ---- signal handler, synchronous (raise), normal and alternate stack ------- */
/* [0] cfi_capture [1] cfi_sig_inner [2] cfi_on_usr1 [3] __restore_rt
 * [4] libc (pthread_kill, interrupted at its syscall) ... raise
 * [.] cfi_sig_raiser [.] cfi_signal_run ... main ... _start */
CFI_NOIPA int cfi_sig_inner(int s)
{
	cfi_capture(&snap);
	return s + 1;
}

CFI_NOIPA void cfi_on_usr1(int s)
{
	int r = cfi_sig_inner(s);

	CFI_KEEP(r);
	sig_sink = r;
}

CFI_NOIPA int cfi_sig_raiser(int s)
{
	int r = raise(s);

	CFI_KEEP(r);
	return r;
}

static char altstack_mem[1 << 16] __attribute__((aligned(16)));

static int signal_common(const char *scen, int iter, int alt)
{
	struct sigaction sa;
	stack_t ss = { .ss_sp = altstack_mem, .ss_size = sizeof(altstack_mem) }, old;
	int r;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = cfi_on_usr1;
	sa.sa_flags = alt ? SA_ONSTACK : 0;
	sigemptyset(&sa.sa_mask);
	if (alt && sigaltstack(&ss, &old)) {
		cfi_fail(scen, "sigaltstack failed");
		return 1;
	}
	sigaction(SIGUSR1, &sa, NULL);
	memset(&snap, 0, sizeof(snap));
	r = cfi_sig_raiser(SIGUSR1);
	CFI_KEEP(r);
	signal(SIGUSR1, SIG_DFL);
	if (alt)
		sigaltstack(&old, NULL);
	if (alt && snap.n[2] > 0 &&
	    ((uintptr_t)snap.f[0].sp >= (uintptr_t)altstack_mem + sizeof(altstack_mem) ||
	     (uintptr_t)snap.f[0].sp < (uintptr_t)altstack_mem)) {
		char why[160];

		snprintf(why, sizeof(why), "handler did not run on the alternate stack "
			 "(frame 0 sp %#llx)", (unsigned long long)snap.f[0].sp);
		cfi_fail(scen, why);
		return 1;
	}
	return cfi_verify(&snap, scen, iter, 10,
			  "cfi_capture cfi_sig_inner cfi_on_usr1 !sig @libc cfi_sig_raiser "
			  "main @sys _start");
}

CFI_NOIPA int cfi_signal_run(int iter)
{
	int r = signal_common("signal-raise", iter, 0);

	CFI_KEEP(r);
	return r;
}

CFI_NOIPA int cfi_signal_alt_run(int iter)
{
	int r = signal_common("signal-raise-sigaltstack", iter, 1);

	CFI_KEEP(r);
	return r;
}

/* ---- signal handler, asynchronous (timers) ------------------------------------ */
/*
 * A timer interrupts computation at arbitrary instructions: in the
 * program's own functions (prologues, epilogues, alloca frames) and in libc
 * (memset, qsort internals and their comparator). In the handler:
 * [0] cfi_capture [1] cfi_on_async [2] __restore_rt [3] the interrupted pc,
 * then its callers down to _start.
 */
static volatile int async_armed, async_done;
static volatile char async_buf[1 << 16];

CFI_NOIPA void cfi_on_async(int s)
{
	(void)s;
	if (!async_armed)
		return;
	cfi_capture(&snap);
	async_armed = 0;
	async_done = 1;
}

CFI_NOIPA int cfi_w_alloca(int n)
{
	volatile char *p = __builtin_alloca(n);

	for (int i = 0; i < n; i++)
		p[i] = (char)i;
	return p[n - 1];
}

CFI_NOIPA long cfi_w_regs(long x)
{
	long a = x, b = x + 1, c = x * 3, d = x ^ 5, e = x >> 1, f = x * 7, g = ~x;

	CFI_KEEP(a); CFI_KEEP(b); CFI_KEEP(c); CFI_KEEP(d); CFI_KEEP(e); CFI_KEEP(f);
	CFI_KEEP(g);
	x = cfi_w_alloca((int)(x & 63) + 8);
	return a + b * c + d * e + f * g + x;
}

CFI_NOIPA int cfi_w_cmp(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

CFI_NOIPA long cfi_w_libc(unsigned long seed)
{
	int v[32];

	memset((void *)async_buf, (int)seed, sizeof(async_buf));
	for (int i = 0; i < 32; i++)
		v[i] = (int)(seed >> (i % 40));
	qsort(v, 32, sizeof(v[0]), cfi_w_cmp);
	return v[0] + async_buf[seed & 0xffff];
}

CFI_NOIPA long cfi_spin(unsigned long seed)
{
	long acc = 0;

	while (!async_done) {
		seed = seed * 6364136223846793005ull + 1;
		switch (seed >> 62) {
		case 0: acc += cfi_w_alloca((int)(seed >> 40 & 127) + 1); break;
		case 1: acc += cfi_w_regs((long)(seed >> 20)); break;
		case 2: acc += cfi_w_libc(seed); break;
		default: acc ^= (long)seed; break;
		}
	}
	return acc;
}

static int async_common(const char *scen, int sig, int which_timer, int alt)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 700 }, { 0, 700 } }, off = { { 0, 0 }, { 0, 0 } };
	stack_t ss = { .ss_sp = altstack_mem, .ss_size = sizeof(altstack_mem) }, old;
	int in_libc = 0, in_prog = 0, fails = 0, i, stops0 = cfi_plt_stops,
	    beyond0 = cfi_plt_beyond;
	long acc = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = cfi_on_async;
	sa.sa_flags = SA_RESTART | (alt ? SA_ONSTACK : 0);
	sigemptyset(&sa.sa_mask);
	if (alt && sigaltstack(&ss, &old)) {
		cfi_fail(scen, "sigaltstack failed");
		return 1;
	}
	sigaction(sig, &sa, NULL);
	setitimer(which_timer, &it, NULL);
	for (i = 0; i < iters && !fails; i++) {
		char where[300];

		memset(&snap, 0, sizeof(snap));
		async_done = 0;
		async_armed = 1;
		acc += cfi_spin(i * 0x9e3779b97f4a7c15ull + 1);
		fails = cfi_verify(&snap, scen, i, 6,
				   "cfi_capture cfi_on_async !sig main @sys _start");
		if (fails)
			break;
		cfi_describe(snap.g[3], 1, where, sizeof(where));
		if (strstr(where, "(exe)") && !strncmp(where, "cfi", 3))
			in_prog++;
		else
			in_libc++;
	}
	setitimer(which_timer, &off, NULL);
	signal(sig, SIG_IGN);
	if (alt)
		sigaltstack(&old, NULL);
	CFI_KEEP(acc);
	snprintf(case_note, sizeof(case_note), "interrupted in the program %d times, "
		 "elsewhere (libc, PLT, runtime) %d times", in_prog, in_libc);
	if (cfi_plt_stops > stops0 || cfi_plt_beyond > beyond0)
		snprintf(case_note + strlen(case_note), sizeof(case_note) - strlen(case_note),
			 "; in a PLT stub without unwind info %d times: glibc stopped there, "
			 "ustack too %d times, went on correctly %d times",
			 cfi_plt_stops - stops0 + cfi_plt_beyond - beyond0, cfi_plt_stops - stops0,
			 cfi_plt_beyond - beyond0);
	return fails;
}

CFI_NOIPA int cfi_async_prof_run(int iter)
{
	(void)iter;
	return async_common("signal-async-sigprof", SIGPROF, ITIMER_PROF, 0);
}

CFI_NOIPA int cfi_async_alrm_alt_run(int iter)
{
	(void)iter;
	return async_common("signal-async-sigalrm-sigaltstack", SIGALRM, ITIMER_REAL, 1);
}

/* ---- a thread: start_thread, clone3 ---------------------------------------------- */
/* [0] cfi_capture [1..3] cfi_thread_rec [4] cfi_thread_main [5] start_thread
 * (ASan: asan_thread_start first) [.] clone3 */
CFI_NOIPA int cfi_thread_rec(int n)
{
	volatile int pad[4];
	int r;

	pad[n & 3] = n;
	if (n == 0) {
		cfi_capture(&snap);
		return pad[0];
	}
	r = cfi_thread_rec(n - 1);
	CFI_KEEP(r);
	return r + 1;
}

CFI_NOIPA void *cfi_thread_main(void *arg)
{
	int r = cfi_thread_rec((int)(intptr_t)arg);

	CFI_KEEP(r);
	return (void *)(intptr_t)r;
}

CFI_NOIPA int cfi_thread_run(int iter)
{
	pthread_t t;
	void *ret;

	memset(&snap, 0, sizeof(snap));
	if (pthread_create(&t, NULL, cfi_thread_main, (void *)(intptr_t)(iter % 4))) {
		cfi_fail("thread", "pthread_create failed");
		return 1;
	}
	pthread_join(t, &ret);
	return cfi_verify(&snap, "thread", iter, 4 + iter % 4,
			  "cfi_capture cfi_thread_rec cfi_thread_main @libc");
}

/* ---- library code (dlopen()ed; linked in the static variant) ---------------- */
typedef int (*cfilib_cb)(int);
static int (*lib_run)(int, cfilib_cb);
static int (*lib_sort)(int, cfilib_cb);

#ifdef CFI_STATIC
int cfilib_run(int n, cfilib_cb cb);
int cfilib_sort(int at, cfilib_cb cb);
#endif

CFI_NOIPA int cfi_lib_cb(int x)
{
	cfi_capture(&snap);
	return x + 1;
}

static int lib_open(void)
{
#ifdef CFI_STATIC
	lib_run = cfilib_run;
	lib_sort = cfilib_sort;
	return 0;
#else
	const char *path = getenv("CFI_DLOPEN_LIB");
	void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;

	if (!h) {
		printf("FAIL cfi_c/%s/library-callback: cannot dlopen CFI_DLOPEN_LIB=%s: %s\n",
		       cfi_variant, path ? path : "(unset)", path ? dlerror() : "");
		return -1;
	}
	lib_run = (int (*)(int, cfilib_cb))dlsym(h, "cfilib_run");
	lib_sort = (int (*)(int, cfilib_cb))dlsym(h, "cfilib_sort");
	if (!lib_run || !lib_sort) {
		printf("FAIL cfi_c/%s/library-callback: symbols missing in %s\n", cfi_variant, path);
		return -1;
	}
	return 0;
#endif
}

CFI_NOIPA int cfi_lib_run(int iter)
{
	int r;

	memset(&snap, 0, sizeof(snap));
	r = lib_run(1 + iter % 5, cfi_lib_cb);
	CFI_KEEP(r);
	/* [0] cfi_capture [1] cfi_lib_cb [2..n+2] cfilib_rec x(n+1) [n+3] cfilib_run
	 * [n+4] cfi_lib_run [n+5] cfi_run_case [n+6] main, 2 in libc, _start */
	return cfi_verify(&snap, "library-callback", iter, 11 + iter % 5,
			  "cfi_capture cfi_lib_cb @lib @lib @lib cfi_lib_run main @sys _start");
}

CFI_NOIPA int cfi_lib_sort_run(int iter)
{
	int r;

	memset(&snap, 0, sizeof(snap));
	r = lib_sort(1 + iter % 150, cfi_lib_cb);
	CFI_KEEP(r);
	if (!snap.n[0]) {
		cfi_fail("library-qsort-callback", "the callback never ran");
		return 1;
	}
	return cfi_verify(&snap, "library-qsort-callback", iter, 10,
			  "cfi_capture cfi_lib_cb @lib @sys @lib cfi_lib_sort_run main @sys _start");
}

/* ---- driver ------------------------------------------------------------------------ */

/* Runs @fn @n times (or once, for cases looping themselves); PASS on success. */
CFI_NOIPA int cfi_run_case(const char *scen, int (*fn)(int), int n, const char *only)
{
	int r = 0;

	if (only && strcmp(only, scen))
		return 0;
	case_note[0] = 0;
	for (int i = 0; i < n && !r; i++)
		r = fn(i);
	if (!r)
		cfi_pass(scen, n == 1 ? iters : n, case_note[0] ? case_note : NULL);
	return r;
}

int main(int argc, char **argv)
{
	const char *only = argc > 2 ? argv[2] : NULL;
	int fails = 0;

	if (cfi_init("backtrace_cfi", argc > 1 ? argv[1] : "?"))
		return 1;
	if (getenv("CFI_ITERS"))
		iters = atoi(getenv("CFI_ITERS"));
	if (iters < 1)
		iters = 1;
	fails += cfi_run_case("qsort-comparator", cfi_qsort_run, iters, only);
	fails += cfi_run_case("twalk-action", cfi_twalk_run, iters, only);
	fails += cfi_run_case("dl_iterate_phdr-callback", cfi_phdr_run, iters, only);
	fails += cfi_run_case("signal-raise", cfi_signal_run, iters, only);
	fails += cfi_run_case("signal-raise-sigaltstack", cfi_signal_alt_run, iters, only);
	fails += cfi_run_case("signal-async-sigprof", cfi_async_prof_run, 1, only);
	fails += cfi_run_case("signal-async-sigalrm-sigaltstack", cfi_async_alrm_alt_run, 1, only);
	fails += cfi_run_case("thread", cfi_thread_run, iters, only);
	if ((!only || !strncmp(only, "library", 7)) && lib_open()) {
		fails++;
	} else {
		fails += cfi_run_case("library-callback", cfi_lib_run, iters, only);
		fails += cfi_run_case("library-qsort-callback", cfi_lib_sort_run, iters, only);
	}
	return fails ? 1 : 0;
}
