/* SPDX-License-Identifier: MIT */
/*
 * Libraries that only some commands need (libdw for source lines, libbpf
 * for the BPF backend) are opened with dlopen() at first use, so that a
 * process that never needs them (a snapshot, a report without lines) does
 * not load them and what they load in turn (libelf, liblzma, libbz2, with
 * their relocations and CPU-feature probes) at every start.
 *
 * Usage, after the library's own header:
 *   #define FOO_FNS(X) X(foo_open) X(foo_close)
 *   DL_SYMS_STRUCT(foo_dl, FOO_FNS)   -> static struct { typeof(&foo_open) foo_open; ... } foo_dl;
 *   DL_SYMS_LOAD(foo_dl_load, foo_dl, FOO_FNS, "libfoo.so.1")
 *   #define foo_open (foo_dl.foo_open) ...   (calls then go through the table)
 */
#ifndef USTACK_COMMON_DL_SYMS_H
#define USTACK_COMMON_DL_SYMS_H

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#define DL_SYMS_MEMBER_(f) __typeof__(&f) f;
#define DL_SYMS_NAME_(f) #f,

#define DL_SYMS_STRUCT(var, LIST) static struct { LIST(DL_SYMS_MEMBER_) } var;

/* int fn(void): 0 once every symbol of @lib is resolved into @var, else
 * -ENOSYS (the library or one of its functions is missing); tried once,
 * under pthread_once: a thread that calls fn() while another is loading
 * waits for it, and never sees the table half filled (the library is
 * thread-safe, and two threads may symbolize or load BPF at once). */
#define DL_SYMS_LOAD(fn, var, LIST, lib)                                                      \
	static int fn##_state_; /* 1 loaded, -1 missing */                                     \
	static void fn##_once_(void)                                                           \
	{                                                                                      \
		static const char *const names[] = { LIST(DL_SYMS_NAME_) };                    \
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);                                  \
		void **fns = (void **)&var;                                                    \
		int st = h ? 1 : -1;                                                           \
		_Static_assert(sizeof(var) == sizeof(names) / sizeof(names[0]) * sizeof(void *), \
			       "symbol list");                                                 \
		for (size_t i = 0; h && i < sizeof(names) / sizeof(names[0]); i++)             \
			if (!(fns[i] = dlsym(h, names[i])))                                    \
				st = -1;                                                       \
		fn##_state_ = st;                                                              \
	}                                                                                      \
	static int fn(void)                                                                    \
	{                                                                                      \
		static pthread_once_t once = PTHREAD_ONCE_INIT;                                \
                                                                                               \
		pthread_once(&once, fn##_once_);                                               \
		return fn##_state_ > 0 ? 0 : -ENOSYS;                                          \
	}

#endif
