// SPDX-License-Identifier: MIT
/*
 * src/common/dl_syms.h: a library loaded at first use (libdw, libelf,
 * libbpf) is loaded once for all threads, and no thread sees its function
 * table half filled. The loader's dlsym is slowed down here (this file's
 * own, through the macro) so that a second thread surely calls the load
 * function while the first is between two symbols.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "test.h"

static atomic_int dlsym_calls, loading;

/* dlsym, but the second symbol waits 300 ms, long enough for the other
 * thread to call the load function meanwhile */
static void *test_slow_dlsym(void *h, const char *name)
{
	if (atomic_fetch_add(&dlsym_calls, 1) == 1) {
		atomic_store(&loading, 1);
		usleep(300 * 1000);
	}
	return dlsym(h, name);
}

#include "common/dl_syms.h"

/* the macro's body is expanded here: its dlsym is ours */
#define dlsym test_slow_dlsym
#define M_FNS(X) X(cos) X(sin) X(tan)
DL_SYMS_STRUCT(m_dl, M_FNS)
DL_SYMS_LOAD(m_load, m_dl, M_FNS, "libm.so.6")

#define MISSING_FNS(X) X(cos) X(sin)
DL_SYMS_STRUCT(missing_dl, MISSING_FNS)
DL_SYMS_LOAD(missing_load, missing_dl, MISSING_FNS, "libustack-no-such-library.so.9")
#undef dlsym

static void *first_loader(void *arg)
{
	*(int *)arg = m_load();
	return NULL;
}

static void test_load_once_for_all_threads(void)
{
	pthread_t t;
	int first = -1, second;

	CHECK_EQ(pthread_create(&t, NULL, first_loader, &first), 0);
	for (int i = 0; i < 10000 && !atomic_load(&loading); i++)
		usleep(1000);
	CHECK(atomic_load(&loading));
	/* the first thread has resolved cos and waits before sin */
	second = m_load();
	/* whatever this thread saw as loaded must be whole */
	CHECK_EQ(second, 0);
	CHECK(m_dl.cos && m_dl.sin && m_dl.tan);
	CHECK(m_dl.sin(0.0) == 0.0 && m_dl.cos(0.0) == 1.0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(first, 0);
	/* loaded once: three symbols, and a later call resolves nothing */
	CHECK_EQ(atomic_load(&dlsym_calls), 3);
	CHECK_EQ(m_load(), 0);
	CHECK_EQ(atomic_load(&dlsym_calls), 3);
}

static void test_missing_library(void)
{
	CHECK_EQ(missing_load(), -ENOSYS);
	CHECK_EQ(missing_load(), -ENOSYS);
	CHECK(!missing_dl.cos);
}

int main(void)
{
	RUN(test_load_once_for_all_threads);
	RUN(test_missing_library);
	return tests_failed_total_ ? 1 : 0;
}
