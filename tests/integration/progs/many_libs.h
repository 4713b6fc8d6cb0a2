/* SPDX-License-Identifier: MIT */
/* Loading the copies of many_lib.c: shared by many_libs.c and many_libs_bt.c. */
#ifndef MANY_LIBS_H
#define MANY_LIBS_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*lib_fn)(int fd, int k, void (*cb)(int k));

/*
 * dlopen DIR/lib0.so .. DIR/lib{n-1}.so, calling @each(fn, k) right after
 * loading copy k. Returns the n functions (free() them), or NULL after
 * saying why on stderr.
 */
static lib_fn *many_libs_load(const char *dir, int n, void (*each)(lib_fn f, int k))
{
	lib_fn *fns = calloc(n, sizeof(*fns));
	char path[4096];

	for (int k = 0; fns && k < n; k++) {
		void *h;

		snprintf(path, sizeof(path), "%s/lib%d.so", dir, k);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h || !(fns[k] = (lib_fn)dlsym(h, "many_lib_fn"))) {
			fprintf(stderr, "%s: %s\n", path, dlerror());
			free(fns);
			return NULL;
		}
		each(fns[k], k);
	}
	return fns;
}

#endif
