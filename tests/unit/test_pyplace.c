// SPDX-License-Identifier: MIT
/* ustack_py_place_runs(): the one placement rule of snapshot and record,
 * over (is-eval per native frame, entry per Python frame). */
#include <errno.h>

#include "test.h"
#include "python/pyplace.h"

/* n: x e x e x (innermost first); py: key(E) f <module>(E) */
static void test_runs_pair_from_inside(void)
{
	const uint8_t ev[] = { 0, 1, 0, 1, 0 }, en[] = { 1, 0, 1 };
	int idx[3];
	char why[160] = "";

	CHECK_EQ(ustack_py_place_runs(ev, 5, en, 3, 0, idx, why, sizeof(why)), 0);
	CHECK_EQ(idx[0], 1);
	CHECK_EQ(idx[1], 3);
	CHECK_EQ(idx[2], 3);
}

/* one eval frame, two runs: not placed, unless the native walk was cut
 * (then the inner run is placed, the outer one is beyond the last frame) */
static void test_runs_cut_native(void)
{
	const uint8_t ev[] = { 0, 1, 0 }, en[] = { 1, 0, 1 };
	int idx[3];
	char why[160] = "";

	CHECK_EQ(ustack_py_place_runs(ev, 3, en, 3, 0, idx, why, sizeof(why)), -ERANGE);
	CHECK_EQ(idx[0], -1);
	CHECK_EQ(idx[2], -1);
	CHECK_STR(why, "Python frames not placed: 2 runs of Python frames, 1 _PyEval_EvalFrameDefault frame");
	CHECK_EQ(ustack_py_place_runs(ev, 3, en, 3, 1, idx, why, sizeof(why)), 0);
	CHECK_EQ(idx[0], 1);
	CHECK_EQ(idx[1], USTACK_PY_PLACE_BEYOND);
	CHECK_EQ(idx[2], USTACK_PY_PLACE_BEYOND);
}

/* more eval frames than runs, even cut: never placed; a chain without its
 * oldest entry: never placed */
static void test_runs_refused(void)
{
	const uint8_t ev[] = { 1, 1 }, en1[] = { 1 }, en2[] = { 1, 0 };
	int idx[2];
	char why[160] = "";

	CHECK_EQ(ustack_py_place_runs(ev, 2, en1, 1, 1, idx, why, sizeof(why)), -ERANGE);
	CHECK_EQ(idx[0], -1);
	CHECK_EQ(ustack_py_place_runs(ev, 1, en2, 2, 0, idx, why, sizeof(why)), -ERANGE);
	CHECK_STR(why, "Python frames not placed: 2 runs of Python frames (the oldest without its "
		       "entry frame), 1 _PyEval_EvalFrameDefault frame");
	CHECK_EQ(ustack_py_place_runs(ev, 2, en1, 0, 0, idx, why, sizeof(why)), 0);
}

int main(void)
{
	RUN(test_runs_pair_from_inside);
	RUN(test_runs_cut_native);
	RUN(test_runs_refused);
	TEST_EXIT();
}
