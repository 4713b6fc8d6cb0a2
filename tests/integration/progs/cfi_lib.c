// SPDX-License-Identifier: MIT
/*
 * Library code for backtrace_cfi.sh, built -O2 -fomit-frame-pointer
 * without SFrame: dlopen()ed as libcfi_dl.so in the dynamic variants,
 * linked in the static one. It calls back into the program directly
 * (through a recursion of its own) and through libc's qsort(), so a stack
 * taken in the callback crosses program -> library -> libc -> library ->
 * program, all of it by CFI.
 * Every function is global with the cfilib_ prefix so that dladdr() (and
 * the harness) can name it.
 */
#include <stdlib.h>

typedef int (*cfilib_cb)(int);

#if defined(__has_attribute)
#if __has_attribute(noipa)
#define NOIPA __attribute__((noipa))
#endif
#endif
#ifndef NOIPA
#define NOIPA __attribute__((noinline))
#endif
#define KEEP(x) __asm__ volatile("" : "+r"(x))

static cfilib_cb sort_cb;
static int sort_calls, sort_at;

/* Recursion with a frame of its own at each level. */
NOIPA int cfilib_rec(int n, cfilib_cb cb)
{
	volatile int pad[6];
	int r;

	pad[n % 6] = n;
	if (n == 0) {
		r = cb(pad[0]);
		KEEP(r); /* no tail call: this frame stays */
		return r + pad[1];
	}
	r = cfilib_rec(n - 1, cb);
	KEEP(r);
	return r + 1;
}

NOIPA int cfilib_run(int n, cfilib_cb cb)
{
	int r = cfilib_rec(n, cb);

	KEEP(r);
	return r;
}

NOIPA int cfilib_sort_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (++sort_calls == sort_at)
		sort_cb(x);
	return (x > y) - (x < y);
}

/* qsort() from library code, the callback from its comparator on the
 * @at'th comparison. */
NOIPA int cfilib_sort(int at, cfilib_cb cb)
{
	int v[48];
	unsigned int seed = (unsigned int)at * 2654435761u;

	for (int i = 0; i < 48; i++) {
		seed = seed * 1103515245u + 12345u;
		v[i] = (int)(seed >> 8);
	}
	sort_cb = cb;
	sort_calls = 0;
	sort_at = at;
	qsort(v, 48, sizeof(v[0]), cfilib_sort_cmp);
	return v[0];
}
