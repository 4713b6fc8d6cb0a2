// SPDX-License-Identifier: MIT
/*
 * C++ demangling through the C++ runtime's __cxa_demangle, looked up at run
 * time: linking libstdc++ into a C library would drag it into every program
 * that uses ustack, for a feature only the symbolizer needs. When the
 * running program does not have it loaded, libstdc++.so.6 is dlopen()ed once;
 * without it names simply stay mangled.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/symbolize.h>

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static cxa_demangle_fn demangle_fn;
static pthread_once_t demangle_once = PTHREAD_ONCE_INIT;

static void demangle_init(void)
{
	void *h;

	demangle_fn = (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
	if (demangle_fn)
		return;
	/* the handle is kept for the life of the process on purpose: the
	 * function pointer must stay valid */
	h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (h)
		demangle_fn = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
}

USTACK_API char *ustack_demangle(const char *name)
{
	int status = -1;
	char *out;

	/* Itanium ABI names start with _Z (also ___Z / __Z on some targets:
	 * not on Linux) */
	if (!name || strncmp(name, "_Z", 2))
		return NULL;
	pthread_once(&demangle_once, demangle_init);
	if (!demangle_fn)
		return NULL;
	out = demangle_fn(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}
