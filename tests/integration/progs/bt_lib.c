// SPDX-License-Identifier: MIT
/*
 * Shared library of the backtrace tests, built with SFrame. The exported
 * names carry BTLIB_NS so that one copy can be linked normally and a second
 * one dlopen()ed without their symbols resolving to each other.
 *
 *   btlib_<ns>_run(n, cb) -> btlib_<ns>_chain(n) (through the PLT: the
 *   symbol is exported, hence interposable) -> ... chain(0) ->
 *   lib_alloca_leaf (CFA from rbp) -> cb (back in the executable)
 * Frames inside this library: run, chain x (n + 1), lib_alloca_leaf.
 */
#include <alloca.h>
#include <string.h>

#define NOIPA __attribute__((noipa))
#define KEEP(x) __asm__ volatile("" : "+r"(x))
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#ifndef BTLIB_NS
#define BTLIB_NS link
#endif
#define BTLIB(x) CAT(CAT(btlib_, BTLIB_NS), CAT(_, x))
#define EXPORT __attribute__((visibility("default")))

typedef int (*btlib_cb)(int);

EXPORT int BTLIB(chain)(int n, btlib_cb cb);
EXPORT int BTLIB(run)(int n, btlib_cb cb);

static NOIPA int lib_alloca_leaf(int n, btlib_cb cb)
{
	char *p = alloca(n + 16);
	int r;

	memset(p, n, n + 16);
	__asm__ volatile("" : : "r"(p) : "memory");
	r = cb(p[n]);
	KEEP(r);
	return r + p[1];
}

EXPORT NOIPA int BTLIB(chain)(int n, btlib_cb cb)
{
	int r;

	if (n == 0) {
		r = lib_alloca_leaf(32, cb);
		KEEP(r);
		return r;
	}
	r = BTLIB(chain)(n - 1, cb);
	KEEP(r);
	return r + n;
}

EXPORT NOIPA int BTLIB(run)(int n, btlib_cb cb)
{
	int r = BTLIB(chain)(n, cb);

	KEEP(r);
	return r;
}
