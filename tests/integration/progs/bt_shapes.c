// SPDX-License-Identifier: MIT
/*
 * ustack_backtrace() against glibc backtrace() over frame shapes, built
 * -O2 -fomit-frame-pointer -Wa,--gsframe (see backtrace_glibc.sh).
 * One PASS/FAIL line per scenario. Every scenario states the index at which
 * main must appear (counted from the call structure below), so a short or
 * empty result cannot pass, and the oracle's own result is checked too.
 *
 * Usage: bt_shapes VARIANT   (env: BT_MAIN_SIZE, BT_DLOPEN_LIB, BT_SEED)
 */
#include <alloca.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include "bt_common.h"

typedef int (*btlib_cb)(int);
int btlib_link_run(int n, btlib_cb cb);

/* A capture point in a frame of its own, reached by a call. */
NOIPA void capture(void)
{
	BT_CAPTURE();
}

/* ---- leaf: the capture in the function main calls ----------------------- */
/* [0] scen_leaf [1] main */
NOIPA int scen_leaf(void)
{
	BT_CAPTURE();
	return bt_verify("leaf", 1, -1, 0, 0, NULL);
}

/* ---- deep recursion --------------------------------------------------------- */
NOIPA int rec(int n)
{
	volatile char pad[24];
	int r;

	pad[n % 24] = (char)n;
	if (n == 0) {
		capture();
		return pad[0];
	}
	r = rec(n - 1);
	BT_KEEP(r); /* no tail call, no accumulator loop */
	return r + n;
}

/* [0] capture [1..51] rec(0..50) [52] scen_recursion [53] main */
NOIPA int scen_recursion(void)
{
	int r = rec(50);

	BT_KEEP(r);
	return bt_verify("recursion-50", 53, -1, 0, 0, NULL);
}

/* ---- many callee-saved registers ------------------------------------------ */
/* Seven values live across the call: rbx, rbp, r12-r15 all get used and
 * saved, so rbp of the caller is only found through this frame's save slot. */
NOIPA long regs_heavy(const volatile char *p)
{
	long a = p[0], b = p[1], c = p[2], d = p[3], e = p[4], f = p[5], g = p[6], h = p[7];

	BT_KEEP(a); BT_KEEP(b); BT_KEEP(c); BT_KEEP(d);
	BT_KEEP(e); BT_KEEP(f); BT_KEEP(g); BT_KEEP(h);
	capture();
	return a * b + c * d + e * f + g * h + (a ^ h) * (b ^ g);
}

/* [0] capture [1] regs_heavy [2] scen_regs [3] main */
NOIPA int scen_regs(void)
{
	volatile char v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	long r = regs_heavy(v);

	BT_KEEP(r);
	return bt_verify("callee-saved-regs", 3, -1, 0, 0, NULL);
}

/* ---- alloca / VLA: CFA from rbp --------------------------------------------- */
/* [0] alloca_leaf [1] scen_alloca [2] main */
NOIPA int alloca_leaf(int n)
{
	volatile char *p = alloca(n);

	for (int i = 0; i < n; i++)
		p[i] = (char)i;
	BT_CAPTURE();
	return p[n - 1];
}

NOIPA int scen_alloca(void)
{
	int r = alloca_leaf(100 + bt_tab->count);

	BT_KEEP(r);
	return bt_verify("alloca-leaf", 2, -1, 0, 0, NULL);
}

/* An rbp-based frame whose callee uses rbp as a general register:
 * [0] capture [1] regs_heavy [2] alloca_mid [3] scen_alloca_regs [4] main */
NOIPA int alloca_mid(int n)
{
	volatile char *p = alloca(n);
	long r;

	for (int i = 0; i < n; i++)
		p[i] = (char)(i + 1);
	r = regs_heavy(p);
	BT_KEEP(r);
	return (int)r + p[0];
}

NOIPA int scen_alloca_regs(void)
{
	int r = alloca_mid(64 + bt_tab->count);

	BT_KEEP(r);
	return bt_verify("alloca-then-callee-saved", 4, -1, 0, 0, NULL);
}

/* [0] capture [1] vla_mid [2] scen_vla [3] main */
NOIPA int vla_mid(int n)
{
	volatile char v[n];

	for (int i = 0; i < n; i++)
		v[i] = (char)(i * 3);
	capture();
	return v[n / 2];
}

NOIPA int scen_vla(void)
{
	int r = vla_mid(200 + bt_tab->count);

	BT_KEEP(r);
	return bt_verify("vla", 3, -1, 0, 0, NULL);
}

/* ---- large frames (> 64 KiB: 4-byte SFrame offsets) ---------------------- */
/* [0] capture [1] big_mid [2] scen_big [3] main */
NOIPA int big_mid(int k)
{
	volatile char big[70000];

	big[k] = 1;
	big[69999 - k] = 2;
	capture();
	return big[k] + big[69999 - k];
}

NOIPA int scen_big(void)
{
	int r = big_mid(bt_tab->count);

	BT_KEEP(r);
	return bt_verify("large-frame-70000", 3, -1, 0, 0, NULL);
}

/* [0] big_leaf [1] scen_big_leaf [2] main */
NOIPA int big_leaf(int k)
{
	volatile char big[100000];

	big[k] = 1;
	big[99999 - k] = 2;
	BT_CAPTURE();
	return big[k] + big[99999 - k];
}

NOIPA int scen_big_leaf(void)
{
	int r = big_leaf(bt_tab->count);

	BT_KEEP(r);
	return bt_verify("large-frame-leaf-100000", 2, -1, 0, 0, NULL);
}

/* ---- tail call ------------------------------------------------------------------ */
/*
 * tc_outer ends in a sibling call (jmp) to tc_inner, so tc_outer has no
 * frame left when the stack is taken: glibc shows tc_inner returning
 * straight into scen_tailcall, and so must ustack.
 * [0] capture [1] tc_inner [2] scen_tailcall [3] main
 */
NOIPA int tc_inner(int x)
{
	capture();
	return x + 1;
}

NOIPA int tc_outer(int x)
{
	return tc_inner(x * 3);
}

NOIPA int scen_tailcall(void)
{
	int r = tc_outer(bt_tab->count);

	BT_KEEP(r);
	return bt_verify("tail-call", 3, -1, 0, 0, "tc_outer absent in both (sibling call)");
}

/* ---- call to a noreturn function as the last instruction ------------------- */
/*
 * nr_caller's last instruction is the call, so the return address is one
 * past its end (the next function or padding): only a pc - 1 lookup finds
 * nr_caller's row.
 * [0] nr_fn [1] nr_caller [2] scen_noreturn [3] main
 */
static jmp_buf nr_jb;
static volatile int nr_sink;

NOIPA __attribute__((noreturn)) void nr_fn(int x)
{
	BT_CAPTURE();
	nr_sink = x;
	longjmp(nr_jb, 1);
}

NOIPA void nr_caller(int x)
{
	volatile int y = x * 7;

	nr_fn(y + 1);
}

NOIPA int scen_noreturn(void)
{
	char note[160] = "";

	if (!setjmp(nr_jb))
		nr_caller(bt_tab->count);
#ifndef BT_STATIC
	{
		Dl_info di;
		const ElfW(Sym) *sym = NULL;

		if (dladdr1((char *)bt_snap.g[1] - 1, &di, (void **)&sym, RTLD_DL_SYMENT) && sym)
			snprintf(note, sizeof(note), "return address %s the end of nr_caller",
				 (char *)di.dli_saddr + sym->st_size == (char *)bt_snap.g[1] ?
				 "is exactly" : "is not");
	}
#endif
	return bt_verify("noreturn-call-at-end", 3, -1, 0, 0, note[0] ? note : NULL);
}

/* ---- shared library (PLT) and dlopen ---------------------------------------- */
/* [0] capture [1] lib_cb [2] lib_alloca_leaf [3..6] chain(0..3) [7] run
 * [8] scen_lib [9] main */
NOIPA int lib_cb(int x)
{
	capture();
	return x + 1;
}

NOIPA int scen_lib(void)
{
	int r = btlib_link_run(3, lib_cb);

	BT_KEEP(r);
	return bt_verify("shared-lib-plt", 9, -1, 0, 0, NULL);
}

#ifndef BT_STATIC
NOIPA int scen_dlopen(void)
{
	const char *path = getenv("BT_DLOPEN_LIB");
	int (*run)(int, btlib_cb);
	void *h;
	int r;

	if (!path || !*path) {
		bt_skip("dlopen", "BT_DLOPEN_LIB not set");
		return 0;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("FAIL backtrace_glibc/%s/dlopen: %s\n", bt_variant, dlerror());
		return 1;
	}
	run = (int (*)(int, btlib_cb))dlsym(h, "btlib_dl_run");
	if (!run) {
		printf("FAIL backtrace_glibc/%s/dlopen: no btlib_dl_run in %s\n", bt_variant, path);
		return 1;
	}
	r = run(3, lib_cb);
	BT_KEEP(r);
	/* stays loaded: ustack may cache the module, and unloading is a
	 * different test */
	return bt_verify("dlopen-lib", 9, -1, 0, 0, NULL);
}
#endif

/* ---- signal handler, synchronous (raise) ---------------------------------- */
/*
 * In the handler: [0] sig_inner [1] on_usr1 [2] __restore_rt, then the
 * interrupted code in libc (raise), which has no SFrame: identity is
 * required up to index 2, beyond it ustack may stop.
 */
static volatile int sig_sink;
static volatile int sig_bad_trampoline;

static int is_restore_rt(const void *pc)
{
	/* mov $15, %rax; syscall: x86-64 rt_sigreturn trampoline */
	static const unsigned char code[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };

	return !memcmp(pc, code, sizeof(code));
}

NOIPA int sig_inner(int s)
{
	BT_CAPTURE();
	return s + 1;
}

NOIPA void on_usr1(int s)
{
	int r = sig_inner(s);

	BT_KEEP(r);
	sig_sink = r;
}

NOIPA int sig_raiser(int s)
{
	int r = raise(s);

	BT_KEEP(r);
	return r;
}

static int scen_signal_common(const char *name, int altstack)
{
	struct sigaction sa;
	stack_t ss, old_ss;
	static char alt[1 << 16] __attribute__((aligned(16)));
	char note[128];
	int r;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = altstack ? SA_ONSTACK : 0;
	sigemptyset(&sa.sa_mask);
	if (altstack) {
		ss.ss_sp = alt;
		ss.ss_size = sizeof(alt);
		ss.ss_flags = 0;
		if (sigaltstack(&ss, &old_ss)) {
			printf("FAIL backtrace_glibc/%s/%s: sigaltstack: %m\n", bt_variant, name);
			return 1;
		}
	}
	sigaction(SIGUSR1, &sa, NULL);
	memset(&bt_snap, 0, sizeof(bt_snap));
	r = sig_raiser(SIGUSR1);
	BT_KEEP(r);
	signal(SIGUSR1, SIG_DFL);
	if (altstack)
		sigaltstack(&old_ss, NULL);
	if (bt_snap.n[0] < 3 || !is_restore_rt(bt_snap.g[2])) {
		printf("FAIL backtrace_glibc/%s/%s: glibc's entry 2 is not __restore_rt "
		       "(test assumption broken)\n", bt_variant, name);
		return 1;
	}
	if (bt_verify(name, -1, 2, 0, 1, NULL))
		return 1;
	snprintf(note, sizeof(note), "past __restore_rt (in libc, no SFrame) ustack gave %d, "
		 "%d equal to glibc", bt_beyond_ustack, bt_beyond_equal);
	return bt_verify(name, -1, 2, 0, 0, note);
}

NOIPA int scen_signal(void)
{
	int r = scen_signal_common("signal-handler-raise", 0);

	BT_KEEP(r);
	return r;
}

NOIPA int scen_signal_alt(void)
{
	int r = scen_signal_common("signal-handler-sigaltstack", 1);

	BT_KEEP(r);
	return r;
}

/* ---- signal handler, asynchronous (profiling timer) ----------------------- */
/*
 * SIGPROF interrupts spin code at arbitrary instructions (prologues,
 * epilogues, alloca'd frames), all of it with SFrame. In the handler:
 * [0] on_prof [1] __restore_rt [2] interrupted pc [3..] callers up to main.
 * Identity is required up to index 1; past it, whatever ustack returns
 * must equal glibc (it may stop early, it must not be wrong).
 */
static volatile int prof_armed, prof_done;
#define PROF_SAMPLES 200

NOIPA void on_prof(int s)
{
	if (!prof_armed)
		return;
	BT_CAPTURE();
	prof_armed = 0;
	prof_done = 1;
	(void)s;
}

NOIPA int w_alloca(int n)
{
	volatile char *p = alloca(n);

	for (int i = 0; i < n; i++)
		p[i] = (char)i;
	return p[n - 1];
}

NOIPA long w_regs(long x)
{
	long a = x, b = x + 1, c = x * 3, d = x ^ 5, e = x >> 1, f = x * 7, g = ~x;

	BT_KEEP(a); BT_KEEP(b); BT_KEEP(c); BT_KEEP(d); BT_KEEP(e); BT_KEEP(f); BT_KEEP(g);
	x = w_alloca((int)(x & 63) + 8);
	return a + b * c + d * e + f * g + x;
}

NOIPA int w_big(int k)
{
	volatile char big[70000];

	big[k] = (char)k;
	return big[k] + (int)w_regs(k);
}

NOIPA long spin(unsigned long seed)
{
	long acc = 0;

	while (!prof_done) {
		seed = seed * 6364136223846793005ull + 1;
		switch (seed >> 62) {
		case 0: acc += w_alloca((int)(seed >> 40 & 127) + 1); break;
		case 1: acc += w_regs((long)(seed >> 20)); break;
		case 2: acc += w_big((int)(seed >> 48 & 1023)); break;
		default: acc ^= (long)seed; break;
		}
	}
	return acc;
}

NOIPA int scen_async(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 500 }, { 0, 500 } }, off = { { 0, 0 }, { 0, 0 } };
	int full = 0, stopped = 0, fails = 0;
	long acc = 0;
	char note[160];

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	for (int i = 0; i < PROF_SAMPLES && !fails; i++) {
		memset(&bt_snap, 0, sizeof(bt_snap));
		prof_done = 0;
		prof_armed = 1;
		acc += spin(i * 0x9e3779b97f4a7c15ull + 1);
		if (bt_snap.n[0] < 2 || !is_restore_rt(bt_snap.g[1])) {
			printf("FAIL backtrace_glibc/%s/signal-async-sigprof: sample %d: glibc's "
			       "entry 1 is not __restore_rt (test assumption broken)\n", bt_variant, i);
			fails = 1;
			break;
		}
		fails = bt_verify("signal-async-sigprof", -1, 1, 1, 1, NULL);
		if (fails) {
			printf("  (sample %d of %d)\n", i, PROF_SAMPLES);
			break;
		}
		if (bt_beyond_equal > 0 && bt_beyond_equal == bt_snap.n[0] - 2)
			full++;
		else if (bt_beyond_equal < bt_snap.n[0] - 2)
			stopped++;
	}
	setitimer(ITIMER_PROF, &off, NULL);
	signal(SIGPROF, SIG_DFL);
	BT_KEEP(acc);
	if (fails)
		return 1;
	snprintf(note, sizeof(note), "%d samples; past the signal frame ustack matched glibc to "
		 "its end in %d, stopped early (correct so far) in %d", PROF_SAMPLES, full, stopped);
	printf("PASS backtrace_glibc/%s/signal-async-sigprof: %s\n", bt_variant, note);
	return 0;
}

/* ---- stress: 1000 random call paths ------------------------------------------ */
typedef int (*node_fn)(uint64_t s, int d);
extern node_fn const nodes[];
#define NNODES 6
static int stress_extra, stress_tails;

static inline uint64_t next_seed(uint64_t s)
{
	return s * 6364136223846793005ull + 1442695040888963407ull;
}

/* At depth 0 the capture is either inline (frame 0 is the node) or one
 * call further (frame 0 is capture). */
#define NODE_LEAF() do { \
	if (s & 0x400) { stress_extra = 1; capture(); } \
	else { stress_extra = 0; BT_CAPTURE(); } \
} while (0)
#define NODE_NEXT(r) do { \
	uint64_t t_ = next_seed(s); \
	r = nodes[(t_ >> 33) % NNODES](t_, d - 1); \
	BT_KEEP(r); \
} while (0)

NOIPA int node_plain(uint64_t s, int d)
{
	int r = 1;

	if (d == 0)
		NODE_LEAF();
	else
		NODE_NEXT(r);
	return r + 1;
}

NOIPA int node_alloca(uint64_t s, int d)
{
	int n = 8 + (int)(s >> 20 & 255);
	volatile char *p = alloca(n);
	int r = 1;

	p[0] = (char)s;
	p[n - 1] = (char)d;
	if (d == 0)
		NODE_LEAF();
	else
		NODE_NEXT(r);
	return r + p[0] + p[n - 1];
}

NOIPA int node_vla(uint64_t s, int d)
{
	volatile char v[8 + (s >> 24 & 511)];
	int r = 1;

	v[0] = (char)d;
	if (d == 0)
		NODE_LEAF();
	else
		NODE_NEXT(r);
	return r + v[0];
}

NOIPA int node_regs(uint64_t s, int d)
{
	long a = (long)s, b = a >> 3, c = a * 5, e = a ^ 9, f = a >> 11, g = a * 13, h = ~a;
	int r = 1;

	BT_KEEP(a); BT_KEEP(b); BT_KEEP(c); BT_KEEP(e); BT_KEEP(f); BT_KEEP(g); BT_KEEP(h);
	if (d == 0)
		NODE_LEAF();
	else
		NODE_NEXT(r);
	return r + (int)(a * b + c * e + f * g + h);
}

NOIPA int node_big(uint64_t s, int d)
{
	volatile char big[70000];
	int k = (int)(s >> 40) % 70000, r = 1;

	big[k] = (char)d;
	if (d == 0)
		NODE_LEAF();
	else
		NODE_NEXT(r);
	return r + big[k];
}

/* Ends in a sibling call: no frame of its own on the stack. */
NOIPA int node_tail(uint64_t s, int d)
{
	uint64_t t;

	if (d == 0) {
		NODE_LEAF();
		return 3;
	}
	t = next_seed(s);
	stress_tails++;
	return nodes[(t >> 33) % NNODES](t, d - 1);
}

node_fn const nodes[NNODES] = { node_plain, node_alloca, node_vla, node_regs, node_big,
				node_tail };

NOIPA int scen_stress(void)
{
	const char *env = getenv("BT_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0x5eed;
	uint64_t s = seed;
	int iters = 1000, r, maxd = 0;
	char note[128];

	for (int i = 0; i < iters; i++) {
		int d, expect;

		s = next_seed(s);
		d = (int)(s >> 35) % 25;
		stress_tails = 0;
		memset(bt_snap.n, 0, sizeof(bt_snap.n));
		r = nodes[(s >> 29) % NNODES](s, d);
		BT_KEEP(r);
		/* nodes d..0, then scen_stress, then main */
		expect = d + 2 + stress_extra - stress_tails;
		if (bt_verify("stress-1000-random-paths", expect, -1, 0, 1, NULL)) {
			printf("  (iteration %d, depth %d, tail calls %d, seed 0x%" PRIx64
			       "; rerun with BT_SEED=0x%" PRIx64 ")\n", i, d, stress_tails, s, seed);
			return 1;
		}
		if (expect > maxd)
			maxd = expect;
	}
	snprintf(note, sizeof(note), "%d random paths (seed 0x%" PRIx64 "), main at index up "
		 "to %d", iters, seed, maxd);
	printf("PASS backtrace_glibc/%s/stress-1000-random-paths: %s\n", bt_variant, note);
	return 0;
}

int main(int argc, char **argv)
{
	int fails = 0;

	if (bt_init(argc > 1 ? argv[1] : "default"))
		return 1;
	fails += scen_leaf();
	fails += scen_recursion();
	fails += scen_regs();
	fails += scen_alloca();
	fails += scen_alloca_regs();
	fails += scen_vla();
	fails += scen_big();
	fails += scen_big_leaf();
	fails += scen_tailcall();
	fails += scen_noreturn();
	fails += scen_lib();
#ifndef BT_STATIC
	fails += scen_dlopen();
#endif
	fails += scen_signal();
	fails += scen_signal_alt();
	fails += scen_async();
	fails += scen_stress();
	printf("# %s: %d failed\n", bt_variant, fails);
	return fails ? 1 : 0;
}
