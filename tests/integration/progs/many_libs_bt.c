// SPDX-License-Identifier: MIT
/*
 * ustack_backtrace() across many libraries with its module cache cut to
 * two slots (so nearly every call evicts a module): loads N copies of
 * many_lib.c (argv[1]: directory with lib0.so .., argv[2]: N), and from
 * inside each copy's many_lib_fn compares ustack_backtrace() with glibc's
 * backtrace() frame for frame; then calls the first copy again.
 * Prints "ok N" (calls whose stacks agreed) or a line per mismatch, and
 * exits non-zero on any mismatch.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/ustack.h>
#include "unwind/unwind.h" /* the test hook ustack_self_module_slots */
#include "many_libs.h"


static int bad, good;
static int (*glibc_backtrace)(void **, int);

__attribute__((noinline)) static void check_stack(int k)
{
	void *ours[64], *glibc[64];
	int n = ustack_backtrace(ours, 64), m = glibc_backtrace(glibc, 64);
	Dl_info di;
	char want[32];

	/* frame 0 is this function in both (ours: the caller of ustack_backtrace) */
	snprintf(want, sizeof(want), "/lib%d.so", k);
	if (n < 3 || !dladdr(ours[1], &di) || !di.dli_sname || strcmp(di.dli_sname, "many_lib_fn") ||
	    !di.dli_fname || strlen(di.dli_fname) < strlen(want) ||
	    strcmp(di.dli_fname + strlen(di.dli_fname) - strlen(want), want)) {
		printf("lib%d: frame 1 is not many_lib_fn in lib%d.so (%d frames)\n", k, k, n);
		bad++;
		return;
	}
	/* frame 0: each call's own return address; the rest must agree */
	if (n != m || memcmp(ours + 1, glibc + 1, (n - 1) * sizeof(*ours))) {
		printf("lib%d: %d frames, glibc %d; first difference at", k, n, m);
		for (int i = 1; i < n && i < m; i++)
			if (ours[i] != glibc[i]) {
				printf(" #%d %p != %p", i, ours[i], glibc[i]);
				break;
			}
		printf("\n");
		bad++;
		return;
	}
	good++;
}

__attribute__((noinline)) static void call_lib(lib_fn f, int k)
{
	f(-1, k, check_stack);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	lib_fn *fns;
	int n;

	if (argc < 3 || (n = atoi(argv[2])) <= 0)
		return 2;
	ustack_self_module_slots = 2;
	/* glibc's own, not a sanitizer's interceptor (which adds a frame) */
	{
		void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);

		glibc_backtrace = libc ? (int (*)(void **, int))dlsym(libc, "backtrace") : NULL;
		if (!glibc_backtrace) {
			fprintf(stderr, "no backtrace in libc.so.6\n");
			return 1;
		}
	}
	fns = many_libs_load(argv[1], n, call_lib);
	if (!fns)
		return 1;
	call_lib(fns[0], 0);
	printf("ok %d\n", good);
	free(fns);
	return bad ? 1 : 0;
}
