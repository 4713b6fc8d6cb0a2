// SPDX-License-Identifier: MIT
/*
 * Loads N distinct copies of a one-function library (argv[1]: directory
 * holding lib0.so .. lib{N-1}.so, argv[2]: N), calls each once, then calls
 * the first one again. Each call makes one write(2) of a line naming the
 * library, so a recorder of syscalls:sys_enter_write sees every call with
 * the stack  write <- many_lib_fn (libK.so) <- call_lib <- main.
 * With more libraries than the unwinder keeps tables for, the last call
 * exercises a table that was evicted and must be opened again.
 * If argv[3] is given, the last call instead creates that file from inside
 * the first copy and waits there in pause() until killed, so a snapshot
 * sees  pause <- wait_inside <- many_lib_fn (lib0.so) <- call_lib <- main
 * while every copy is mapped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "many_libs.h"


static const char *ready_file;

__attribute__((noinline)) static void wait_inside(int k)
{
	FILE *f = fopen(ready_file, "w");

	if (f)
		fclose(f);
	for (;;)
		pause();
}

__attribute__((noinline)) static void call_lib(lib_fn f, int k, void (*cb)(int k))
{
	f(1, k, cb);
	__asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
}

static void call_once(lib_fn f, int k)
{
	call_lib(f, k, NULL);
}

int main(int argc, char **argv)
{
	lib_fn *fns;
	int n;

	if (argc < 3 || (n = atoi(argv[2])) <= 0)
		return 2;
	fns = many_libs_load(argv[1], n, call_once);
	if (!fns)
		return 1;
	ready_file = argc > 3 ? argv[3] : NULL;
	call_lib(fns[0], 0, ready_file ? wait_inside : NULL);
	free(fns);
	return 0;
}
