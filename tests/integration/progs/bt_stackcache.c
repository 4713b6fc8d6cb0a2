// SPDX-License-Identifier: MIT
/*
 * The in-process backtrace's whole-stack cache must never serve a stale
 * frame (backtrace_stackcache.sh). Each check compares ustack_backtrace()
 * (cache on, after warm-up calls from the same pc) with glibc's
 * backtrace() frame for frame, and ustack_backtrace_frames() with the cache
 * on and off (pc, sp and method of every frame).
 *
 *   same-pcs-other-frames  a recursion whose frames have alloca()s of a
 *                          new random size per call: the same pcs, other
 *                          CFAs (the replay must take them from the live
 *                          registers, not from the recorded walk)
 *   same-pc-other-callers  one capture site reached through two call
 *                          paths in turn: the recorded return addresses
 *                          stop matching part-way up
 *   dlclose-dlopen         argv[1], argv[2]: two builds of
 *                          bt_stackcache_lib.c with different frame sizes,
 *                          loaded in turn, dlclose()d in between (the
 *                          loader maps the second at the first's address,
 *                          often with the same link map); the line says
 *                          whether it did
 * Prints PASS/FAIL lines; exits non-zero on a failure.
 */
#include <alloca.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/ustack.h>
#include "unwind/unwind.h" /* the test hook ustack_self_stack_cache */

#define MAXF 64

static int (*glibc_backtrace)(void **, int);
static int failed, checks;
static char why[256];

/* Compare what the cache gives with glibc and with the uncached walk. */
__attribute__((noinline)) static void check_here(void)
{
	void *ours[MAXF], *glibc[MAXF];
	struct ustack_frame a[MAXF], b[MAXF];
	unsigned int sa, sb;
	int n, m, na, nb;

	/* same call instruction for ours and glibc's: one call site each
	 * would differ in frame 0 only, which is skipped below */
	n = ustack_backtrace(ours, MAXF);
	m = glibc_backtrace(glibc, MAXF);
	ustack_self_stack_cache = 1;
	na = ustack_backtrace_frames(a, MAXF, &sa);
	ustack_self_stack_cache = 0;
	nb = ustack_backtrace_frames(b, MAXF, &sb);
	ustack_self_stack_cache = 1;
	checks++;
	if (n != m || memcmp(ours + 1, glibc + 1, (n - 1) * sizeof(void *))) {
		int i = 1;

		while (i < n && i < m && ours[i] == glibc[i])
			i++;
		snprintf(why, sizeof(why), "%d frames, glibc %d, first difference at #%d", n, m, i);
		failed++;
		return;
	}
	for (int i = 1; i < na && i < nb; i++)
		if (a[i].pc != b[i].pc || a[i].sp != b[i].sp || a[i].method != b[i].method) {
			snprintf(why, sizeof(why), "frame #%d cached pc %#lx sp %#lx method %u, uncached "
				 "pc %#lx sp %#lx method %u", i, (unsigned long)a[i].pc,
				 (unsigned long)a[i].sp, a[i].method, (unsigned long)b[i].pc,
				 (unsigned long)b[i].sp, b[i].method);
			failed++;
			return;
		}
	if (na != nb || sa != sb) {
		snprintf(why, sizeof(why), "cached %d frames (stop %u), uncached %d (stop %u)", na, sa,
			 nb, sb);
		failed++;
	}
}

static void result(const char *name, const char *extra)
{
	if (failed)
		printf("FAIL bt_stackcache/%s: %d of %d checks: %s\n", name, failed, checks, why);
	else
		printf("PASS bt_stackcache/%s: %d checks%s\n", name, checks, extra);
}

/* ---- same pcs, other frame sizes ---- */

static uint32_t rng = 0x5eed;

static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

__attribute__((noinline)) static int recurse(int d)
{
	volatile char *p = alloca(16 + (next_rand() & 511));
	int r;

	p[0] = (char)d;
	if (d == 0) {
		/* several captures from the same pc: warm, then checked */
		check_here();
		check_here();
		r = 0;
	} else {
		r = recurse(d - 1);
	}
	__asm__ volatile("" ::: "memory");
	return r + p[0];
}

/* ---- same capture pc, other callers ---- */

__attribute__((noinline)) static void leaf(void)
{
	check_here();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void path_a2(void) { leaf(); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) static void path_a1(void) { path_a2(); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) static void path_b2(void) { leaf(); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) static void path_b1(void) { path_b2(); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) static void path_c1(void) { path_a2(); __asm__ volatile("" ::: "memory"); }

/* ---- dlclose + dlopen at the same address ---- */

typedef void (*sc_cb)(int k);
typedef int (*sc_fn_t)(sc_cb cb, int k);

static void lib_cb(int k)
{
	(void)k;
	check_here();
}

__attribute__((noinline)) static int call_lib(sc_fn_t f, int k)
{
	int r = f(lib_cb, k);

	__asm__ volatile("" ::: "memory");
	return r;
}

int main(int argc, char **argv)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *addr[2] = { 0 }, *lm[2] = { 0 };
	int bad = 0, reused = 1;
	char extra[160];

	if (argc < 3) {
		fprintf(stderr, "usage: %s LIB_A LIB_B\n", argv[0]);
		return 2;
	}
	/* glibc's own, not a sanitizer's interceptor (which adds a frame) */
	glibc_backtrace = libc ? (int (*)(void **, int))dlsym(libc, "backtrace") : NULL;
	if (!glibc_backtrace) {
		printf("FAIL bt_stackcache: no backtrace in libc.so.6\n");
		return 1;
	}

	for (int i = 0; i < 300; i++)
		recurse(1 + (int)(next_rand() % 12));
	result("same-pcs-other-frames", "");
	bad |= failed;
	failed = checks = 0;

	for (int i = 0; i < 300; i++) {
		switch (next_rand() % 3) {
		case 0: path_a1(); break;
		case 1: path_b1(); break;
		default: path_c1(); break;
		}
	}
	result("same-pc-other-callers", "");
	bad |= failed;
	failed = checks = 0;

	for (int r = 0; r < 8; r++) {
		void *h = dlopen(argv[1 + (r & 1)], RTLD_NOW | RTLD_LOCAL);
		sc_fn_t f = h ? (sc_fn_t)dlsym(h, "sc_fn") : NULL;

		if (!f) {
			printf("FAIL bt_stackcache/dlclose-dlopen: %s: %s\n", argv[1 + (r & 1)], dlerror());
			return 1;
		}
		if (r < 2) {
			addr[r] = (void *)f;
			lm[r] = h;
		} else if ((void *)f != addr[r & 1] || h != lm[r & 1]) {
			reused = 0;
		}
		for (int i = 0; i < 4; i++)
			call_lib(f, i);
		dlclose(h);
	}
	snprintf(extra, sizeof(extra), "; the second library %s the first's address%s",
		 addr[0] == addr[1] ? "got" : "did not get",
		 addr[0] == addr[1] && lm[0] == lm[1] && reused ? " and link map, every time" : "");
	result("dlclose-dlopen", extra);
	bad |= failed;
	return bad ? 1 : 0;
}
