// SPDX-License-Identifier: MIT
/*
 * rec_dl_main N LIB...
 *
 * For each LIB in turn (k = 0, 1, ...): dlopen() it, call
 *     main -> rec_dl_run -> rec_dl_entry (LIB) -> rec_dl_leaf (LIB)
 *          -> getppid() x (N + k)
 * and dlclose() it. LIBs are built from rec_dl_lib.c (one of them maybe
 * with rec_dl_leaf renamed, so that two libraries have different chains).
 * When a library is loaded where the previous one was, the same addresses
 * mean other functions: an unwinder must name each call's frames from the
 * library mapped at the time of the call. Prints where each was loaded,
 * then "rec_dl_main: TOTAL calls" and exits 0.
 *
 * With $REC_GO set (the bpf runs, and `record -p`), the handshake of
 * rec_common.h first (rec_warm: "ready", then getpid() until $REC_GO
 * exists), and after each dlopen() the library's own (rec_dl_warm: until
 * $REC_GO.K exists), so the test knows the recorder has seen the process,
 * then the library's mapping, before the marker calls. No timing is
 * involved: the program waits as long as the recorder needs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "rec_common.h"

REC_FN int rec_dl_run(const char *lib, int n, int k)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	const char *go = getenv("REC_GO");
	void (*entry)(int);
	void (*warm)(const char *, int);

	if (!h) {
		fprintf(stderr, "rec_dl_main: %s\n", dlerror());
		return 1;
	}
	entry = (void (*)(int))dlsym(h, "rec_dl_entry");
	warm = (void (*)(const char *, int))dlsym(h, "rec_dl_warm");
	if (!entry || !warm) {
		fprintf(stderr, "rec_dl_main: %s\n", dlerror());
		return 1;
	}
	printf("%s: rec_dl_entry at %p\n", lib, (void *)entry);
	if (go && *go) {
		char gok[4096];

		snprintf(gok, sizeof(gok), "%s.%d", go, k);
		warm(gok, k);
	}
	entry(n);
	rec_sink++;
	dlclose(h);
	return 0;
}

int main(int argc, char **argv)
{
	int n, total = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: rec_dl_main N LIB...\n");
		return 2;
	}
	rec_warm();
	n = atoi(argv[1]);
	for (int k = 0; k + 2 < argc; k++) {
		if (rec_dl_run(argv[k + 2], n + k, k))
			return 1;
		total += n + k;
	}
	printf("rec_dl_main: %d calls\n", total);
	return 0;
}
