// SPDX-License-Identifier: MIT
/*
 * rec_dl_main [-w GOFILE] N LIB...
 *
 * For each LIB in turn (i = 0, 1, ...): dlopen() it, call
 *     main -> rec_dl_run -> rec_dl_entry (LIB) -> rec_dl_leaf (LIB)
 *          -> getppid() x (N + i)
 * and dlclose() it. LIBs are built from rec_dl_lib.c (one of them maybe
 * with rec_dl_leaf renamed, so that two libraries have different chains).
 * When a library is loaded where the previous one was, the same addresses
 * mean other functions: an unwinder must name each call's frames from the
 * library mapped at the time of the call. Prints where each was loaded,
 * then "rec_dl_main: TOTAL calls" and exits 0.
 *
 * With -w GOFILE, first the handshake for `ustack record -p`: print
 * "ready", then call getpid() every 5 ms (rec_dl_wait, the recorder's sign
 * of life, recorded as syscalls:sys_enter_getpid) until GOFILE exists. The
 * test creates GOFILE only once the trace shows one of those getpid()
 * calls, so the libraries are mapped strictly after the recorder saw the
 * process: their mappings can only be known from the recording itself. No
 * timing is involved: the program waits as long as the recorder needs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "rec_common.h"

REC_FN void rec_dl_wait(const char *gofile)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	printf("ready\n");
	fflush(stdout);
	while (access(gofile, F_OK) != 0) {
		rec_sink += syscall(SYS_getpid);
		nanosleep(&ts, NULL);
	}
}

REC_FN int rec_dl_run(const char *lib, int n)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	void (*entry)(int);

	if (!h) {
		fprintf(stderr, "rec_dl_main: %s\n", dlerror());
		return 1;
	}
	entry = (void (*)(int))dlsym(h, "rec_dl_entry");
	if (!entry) {
		fprintf(stderr, "rec_dl_main: %s\n", dlerror());
		return 1;
	}
	printf("%s: rec_dl_entry at %p\n", lib, (void *)entry);
	entry(n);
	rec_sink++;
	dlclose(h);
	return 0;
}

int main(int argc, char **argv)
{
	int i = 1, n, total = 0;

	if (argc > 2 && !strcmp(argv[1], "-w")) {
		rec_dl_wait(argv[2]);
		i = 3;
	}
	if (argc - i < 2) {
		fprintf(stderr, "usage: rec_dl_main [-w GOFILE] N LIB...\n");
		return 2;
	}
	n = atoi(argv[i++]);
	for (int k = 0; i < argc; i++, k++) {
		if (rec_dl_run(argv[i], n + k))
			return 1;
		total += n + k;
	}
	printf("rec_dl_main: %d calls\n", total);
	return 0;
}
