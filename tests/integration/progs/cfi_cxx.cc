// SPDX-License-Identifier: MIT
/*
 * ustack_backtrace() against glibc backtrace() over the whole stack, in C++
 * built -O2 -fomit-frame-pointer without SFrame (see backtrace_cfi.sh and
 * cfi_common.h), where the stack runs through libstdc++ and libgcc_s:
 *   cxx-terminate-noexcept  a throw through a noexcept function: libstdc++'s
 *       personality routine calls std::terminate from inside libgcc_s's
 *       _Unwind_RaiseException, so the terminate handler sits on top of
 *       __cxa_call_terminate, __gxx_personality_v0, _Unwind_RaiseException,
 *       __cxa_throw and the throwing code (one forked child per iteration:
 *       a terminate handler must not return);
 *   cxx-dtor-during-unwind  a destructor run by a landing pad (in the
 *       function's .cold part) while an exception propagates;
 *   cxx-streambuf-virtual   a streambuf override called by libstdc++'s
 *       ostream inserter;
 *   cxx-call-once           std::call_once: through pthread_once (libc);
 *   cxx-std-sort            std::sort with a comparator (template code);
 *   cxx-std-thread          std::thread: execute_native_thread_routine,
 *       start_thread, clone3.
 *
 * Usage: cfi_cxx VARIANT [CASE]   (env: CFI_NM, CFI_ITERS)
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfi_common.h"

static struct cfi_snap snap;
static volatile int sink;
static int iters = 200;
static char case_note[256];

/* ---- a throw through noexcept: std::terminate from inside the unwinder ---- */

extern "C" CFI_NOIPA void cfi_cxx_throw(int v)
{
	throw v;
}

extern "C" CFI_NOIPA void cfi_cxx_noexcept(int v) noexcept
{
	cfi_cxx_throw(v);
	sink = v;
}

static int term_iter;
static struct cfi_stats *term_stats; /* shared with the forked children */

extern "C" CFI_NOIPA void cfi_on_terminate()
{
	int r;

	cfi_capture(&snap);
	/* [0] cfi_capture [1] cfi_on_terminate [2] __cxxabiv1::__terminate
	 * [3] __cxa_call_terminate [4] __gxx_personality_v0
	 * [5] _Unwind_RaiseException (libgcc_s) [6] __cxa_throw (ASan: its
	 * interceptor too) [7] cfi_cxx_throw [8] cfi_cxx_noexcept
	 * [9] cfi_cxx_terminate_child ... main, libc, _start */
	r = cfi_verify(&snap, "cxx-terminate-noexcept", term_iter, 13,
		       "cfi_capture cfi_on_terminate @sys @sys @sys @sys cfi_cxx_throw "
		       "cfi_cxx_noexcept cfi_cxx_terminate_child main @sys _start");
	if (!r)
		*term_stats = cfi_last;
	fflush(stdout);
	_exit(r ? 1 : 0);
}

extern "C" CFI_NOIPA void cfi_cxx_terminate_child(int iter)
{
	std::set_terminate(cfi_on_terminate);
	term_iter = iter;
	cfi_cxx_noexcept(iter);
	sink = iter;
}

extern "C" CFI_NOIPA int cfi_cxx_terminate_run(int iter)
{
	int status;
	pid_t pid;

	if (!term_stats) {
		void *p = mmap(NULL, sizeof(*term_stats), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			cfi_fail("cxx-terminate-noexcept", "mmap failed");
			return 1;
		}
		term_stats = (struct cfi_stats *)p;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		cfi_fail("cxx-terminate-noexcept", "fork failed");
		return 1;
	}
	if (pid == 0) {
		cfi_cxx_terminate_child(iter);
		printf("FAIL backtrace_cfi/%s/cxx-terminate-noexcept: std::terminate was not "
		       "called (iteration %d)\n", cfi_variant, iter);
		fflush(stdout);
		_exit(1);
	}
	if (waitpid(pid, &status, 0) != pid) {
		cfi_fail("cxx-terminate-noexcept", "waitpid failed");
		return 1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFSIGNALED(status))
		printf("FAIL backtrace_cfi/%s/cxx-terminate-noexcept: child killed by signal %d "
		       "(iteration %d)\n", cfi_variant, WTERMSIG(status), iter);
	/* otherwise the child printed its FAIL line */
	return 1;
}

/* ---- a destructor run while an exception propagates ------------------------- */

struct CfiGuard {
	int v;
	~CfiGuard();
};

extern "C" CFI_NOIPA void cfi_cxx_in_dtor(int v)
{
	cfi_capture(&snap);
	sink = v;
}

CFI_NOIPA CfiGuard::~CfiGuard()
{
	cfi_cxx_in_dtor(v);
	sink = v;
}

extern "C" CFI_NOIPA int cfi_cxx_guarded(int v)
{
	CfiGuard g{ v };

	cfi_cxx_throw(v);
	return g.v;
}

extern "C" CFI_NOIPA int cfi_cxx_dtor_run(int iter)
{
	int caught = -1;

	memset(&snap, 0, sizeof(snap));
	try {
		sink = cfi_cxx_guarded(iter);
	} catch (int v) {
		caught = v;
	}
	if (caught != iter) {
		cfi_fail("cxx-dtor-during-unwind", "the exception was not caught");
		return 1;
	}
	/* [0] cfi_capture [1] cfi_cxx_in_dtor [2] CfiGuard::~CfiGuard
	 * [3] landing pad of cfi_cxx_guarded [4] cfi_cxx_dtor_run ... _start */
	return cfi_verify(&snap, "cxx-dtor-during-unwind", iter, 9,
			  "cfi_capture cfi_cxx_in_dtor _ZN8CfiGuardD* cfi_cxx_guarded* "
			  "cfi_cxx_dtor_run main @sys _start");
}

/* ---- a streambuf override called from libstdc++'s inserter -------------- */

extern "C" CFI_NOIPA void cfi_buf_body(long n)
{
	cfi_capture(&snap);
	sink = (int)n;
}

struct CfiBuf : std::streambuf {
	long total = 0;
	std::streamsize xsputn(const char *s, std::streamsize n) override;
	int overflow(int c) override
	{
		total++;
		return c;
	}
};

CFI_NOIPA std::streamsize CfiBuf::xsputn(const char *s, std::streamsize n)
{
	(void)s;
	cfi_buf_body(n);
	total += n;
	return n;
}

extern "C" CFI_NOIPA int cfi_stream_run(int iter)
{
	static const char text[] = "unwound by dwarf call frame information";
	CfiBuf buf;
	std::ostream os(&buf);

	memset(&snap, 0, sizeof(snap));
	os << (text + iter % 20);
	if (buf.total != (long)strlen(text + iter % 20)) {
		cfi_fail("cxx-streambuf-virtual", "the stream did not write through xsputn");
		return 1;
	}
	/* [0] cfi_capture [1] cfi_buf_body [2] CfiBuf::xsputn
	 * [3] std::__ostream_insert [4] operator<< (libstdc++) [5] us ... */
	return cfi_verify(&snap, "cxx-streambuf-virtual", iter, 10,
			  "cfi_capture cfi_buf_body _ZN6CfiBuf6xsputn* @sys cfi_stream_run main "
			  "@sys _start");
}

/* ---- std::call_once ----------------------------------------------------------- */

extern "C" CFI_NOIPA void cfi_once_body(int v)
{
	cfi_capture(&snap);
	sink = v;
}

extern "C" CFI_NOIPA int cfi_once_run(int iter)
{
	std::once_flag *flag = new std::once_flag;

	memset(&snap, 0, sizeof(snap));
	std::call_once(*flag, cfi_once_body, iter);
	delete flag;
	/* [0] cfi_capture [1] cfi_once_body [2] __pthread_once_slow (libc; the
	 * call_once thunk and libstdc++'s __once_proxy end in tail calls)
	 * [3] us ... _start */
	return cfi_verify(&snap, "cxx-call-once", iter, 9,
			  "cfi_capture cfi_once_body @sys cfi_once_run main @sys _start");
}

/* ---- std::sort with a comparator ------------------------------------------------ */

static int sort_calls, sort_at, sort_std_frames_max;

extern "C" CFI_NOIPA bool cfi_sort_cmp(int a, int b)
{
	if (++sort_calls == sort_at) {
		cfi_capture(&snap);
		sink = a;
	}
	return a < b;
}

extern "C" CFI_NOIPA int cfi_sort_run(int iter)
{
	std::vector<int> v(300);
	unsigned int seed = (unsigned int)iter * 2654435761u + 7;
	int std_frames = 0;

	for (int &x : v) {
		seed = seed * 1103515245u + 12345u;
		x = (int)(seed >> 8);
	}
	memset(&snap, 0, sizeof(snap));
	sort_calls = 0;
	sort_at = 1 + iter * 13 % 2000;
	std::sort(v.begin(), v.end(), cfi_sort_cmp);
	if (!snap.n[0]) {
		cfi_fail("cxx-std-sort", "the comparator was called fewer times than expected");
		return 1;
	}
	for (int i = 2; i < snap.n[0]; i++) {
		char d[300];

		if (!strncmp(cfi_describe(snap.g[i], 0, d, sizeof(d)), "_ZSt", 4))
			std_frames++;
	}
	if (std_frames > sort_std_frames_max)
		sort_std_frames_max = std_frames;
	/* [0] cfi_capture [1] cfi_sort_cmp [2..] std::__introsort_loop (recursive),
	 * __insertion_sort, __adjust_heap ... (some inlined) [.] us ... _start */
	return cfi_verify(&snap, "cxx-std-sort", iter, 7,
			  "cfi_capture cfi_sort_cmp cfi_sort_run main @sys _start");
}

/* ---- std::thread ----------------------------------------------------------------- */

extern "C" CFI_NOIPA int cfi_cxx_thread_rec(int n)
{
	volatile int pad[4];
	int r;

	pad[n & 3] = n;
	if (n == 0) {
		cfi_capture(&snap);
		return pad[0];
	}
	r = cfi_cxx_thread_rec(n - 1);
	CFI_KEEP(r);
	return r + 1;
}

extern "C" CFI_NOIPA void cfi_cxx_thread_body(int n)
{
	sink = cfi_cxx_thread_rec(n);
}

extern "C" CFI_NOIPA int cfi_cxx_thread_run(int iter)
{
	memset(&snap, 0, sizeof(snap));
	std::thread t(cfi_cxx_thread_body, iter % 3);
	t.join();
	/* [0] cfi_capture [1..n+1] cfi_cxx_thread_rec [.] cfi_cxx_thread_body
	 * [.] execute_native_thread_routine (libstdc++; _State_impl::_M_run
	 * tail-calls the body) [.] start_thread [.] clone3 */
	return cfi_verify(&snap, "cxx-std-thread", iter, 6 + iter % 3,
			  "cfi_capture cfi_cxx_thread_rec cfi_cxx_thread_body @sys @libc");
}

/* ---- driver --------------------------------------------------------------------------- */

extern "C" CFI_NOIPA int cfi_run_case(const char *scen, int (*fn)(int), int n, const char *only)
{
	int r = 0;

	if (only && strcmp(only, scen))
		return 0;
	case_note[0] = 0;
	for (int i = 0; i < n && !r; i++)
		r = fn(i);
	if (r)
		return r;
	if (fn == cfi_cxx_terminate_run) {
		/* the stacks were checked in the children */
		cfi_last = *term_stats;
		snprintf(case_note, sizeof(case_note), "one forked child per iteration");
	}
	if (fn == cfi_sort_run) {
		if (!sort_std_frames_max) {
			cfi_fail(scen, "no stack went through a std:: template frame");
			return 1;
		}
		snprintf(case_note, sizeof(case_note), "up to %d std:: template frames",
			 sort_std_frames_max);
	}
	cfi_pass(scen, n, case_note[0] ? case_note : NULL);
	return 0;
}

int main(int argc, char **argv)
{
	const char *only = argc > 2 ? argv[2] : NULL;
	int fails = 0;

	if (cfi_init("backtrace_cfi", argc > 1 ? argv[1] : "?"))
		return 1;
	if (getenv("CFI_ITERS"))
		iters = atoi(getenv("CFI_ITERS"));
	if (iters < 1)
		iters = 1;
	fails += cfi_run_case("cxx-terminate-noexcept", cfi_cxx_terminate_run, iters, only);
	fails += cfi_run_case("cxx-dtor-during-unwind", cfi_cxx_dtor_run, iters, only);
	fails += cfi_run_case("cxx-streambuf-virtual", cfi_stream_run, iters, only);
	fails += cfi_run_case("cxx-call-once", cfi_once_run, iters, only);
	fails += cfi_run_case("cxx-std-sort", cfi_sort_run, iters, only);
	fails += cfi_run_case("cxx-std-thread", cfi_cxx_thread_run, iters, only);
	return fails ? 1 : 0;
}
