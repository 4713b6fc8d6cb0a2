// SPDX-License-Identifier: MIT
/* ustack_py_place(): Python frames under their _PyEval_EvalFrameDefault
 * native frames, or nowhere (with the reason) when the counts differ. */
#include <errno.h>

#include "test.h"
#include "snapshot/py_place.h"

#define LO 0x1000u
#define HI 0x2000u
#define E USTACK_SNAPSHOT_PYFRAME_ENTRY

/* native frames innermost first: 'e' in the eval range, 'x' elsewhere; the
 * first one's pc exact, the others return addresses */
static int natives(const char *shape, struct ustack_frame *f)
{
	int n = 0;

	for (; *shape; shape++, n++) {
		f[n] = (struct ustack_frame){ .pc = *shape == 'e' ? LO + 0x10u + (unsigned)n : 0x9000u + (unsigned)n };
		if (n == 0)
			f[n].flags = USTACK_FRAME_EXACT_PC;
	}
	return n;
}

static void pyframes(const uint32_t *flags, int m, struct ustack_snapshot_pyframe *py)
{
	for (int j = 0; j < m; j++)
		py[j] = (struct ustack_snapshot_pyframe){ .func = "f", .flags = flags[j],
							   .native_index = 1234 };
}

/* main -> eval(<module>, f) -> sorted -> eval(key) -> write: the key's
 * run goes to the inner eval frame, <module> and f to the outer one */
static void test_place_two_runs(void)
{
	struct ustack_frame nf[8];
	struct ustack_snapshot_pyframe py[3];
	uint32_t fl[3] = { E, 0, E }; /* key, f, <module> */
	char why[128] = "";
	int n = natives("xexxex", nf);

	pyframes(fl, 3, py);
	CHECK_EQ(ustack_py_place(nf, n, LO, HI, 0, 0, py, 3, why, sizeof(why)), 0);
	CHECK_EQ(py[0].native_index, 1);
	CHECK_EQ(py[1].native_index, 4);
	CHECK_EQ(py[2].native_index, 4);
	CHECK_STR(why, "");
}

/* a return address one past the end of the function is still its call
 * (pc - 1 is looked at); one at its start is not (the previous function's) */
static void test_place_return_address_edges(void)
{
	struct ustack_frame nf[3] = {
		{ .pc = 0x9000, .flags = USTACK_FRAME_EXACT_PC },
		{ .pc = HI },      /* call at HI - 1: inside */
		{ .pc = LO },      /* call at LO - 1: outside */
	};
	struct ustack_snapshot_pyframe py[1];
	uint32_t fl[1] = { E };
	char why[128] = "";

	pyframes(fl, 1, py);
	CHECK_EQ(ustack_py_place(nf, 3, LO, HI, 0, 0, py, 1, why, sizeof(why)), 0);
	CHECK_EQ(py[0].native_index, 1);
	/* frame 0's pc is exact: LO is inside */
	nf[0].pc = LO;
	nf[1].pc = 0x9001;
	pyframes(fl, 1, py);
	CHECK_EQ(ustack_py_place(nf, 3, LO, HI, 0, 0, py, 1, why, sizeof(why)), 0);
	CHECK_EQ(py[0].native_index, 0);
}

/* one run more than eval frames (or one fewer): nothing placed, and why */
static void test_place_mismatch(void)
{
	struct ustack_frame nf[8];
	struct ustack_snapshot_pyframe py[3];
	uint32_t fl[3] = { E, 0, E };
	char why[128] = "";
	int n = natives("xexx", nf);

	pyframes(fl, 3, py);
	CHECK_EQ(ustack_py_place(nf, n, LO, HI, 0, 0, py, 3, why, sizeof(why)), -ERANGE);
	for (int j = 0; j < 3; j++)
		CHECK_EQ(py[j].native_index, -1);
	CHECK_STR(why, "Python frames not placed: 2 runs of Python frames, "
		       "1 _PyEval_EvalFrameDefault frame");
	n = natives("eexeex", nf);
	pyframes(fl, 3, py);
	CHECK_EQ(ustack_py_place(nf, n, LO, HI, 0, 0, py, 3, why, sizeof(why)), -ERANGE);
	CHECK_EQ(py[0].native_index, -1);
	CHECK_STR(why, "Python frames not placed: 2 runs of Python frames, "
		       "4 _PyEval_EvalFrameDefault frames");
}

/* a chain cut before its oldest entry frame: as many runs as eval frames
 * by count, but the oldest run is not whole: not placed */
static void test_place_cut_chain(void)
{
	struct ustack_frame nf[8];
	struct ustack_snapshot_pyframe py[3];
	uint32_t fl[3] = { E, 0, 0 };
	char why[128] = "";
	int n = natives("xexex", nf);

	pyframes(fl, 3, py);
	CHECK_EQ(ustack_py_place(nf, n, LO, HI, 0, 0, py, 3, why, sizeof(why)), -ERANGE);
	CHECK_EQ(py[2].native_index, -1);
	CHECK_STR(why, "Python frames not placed: 2 runs of Python frames (the oldest without "
		       "its entry frame), 2 _PyEval_EvalFrameDefault frames");
}

/* a stripped interpreter: no range */
static void test_place_no_symbol(void)
{
	struct ustack_frame nf[8];
	struct ustack_snapshot_pyframe py[1];
	uint32_t fl[1] = { E };
	char why[128] = "";
	int n = natives("xex", nf);

	pyframes(fl, 1, py);
	CHECK_EQ(ustack_py_place(nf, n, 0, 0, 0, 0, py, 1, why, sizeof(why)), -ENOENT);
	CHECK_EQ(py[0].native_index, -1);
	CHECK(strstr(why, "not among the interpreter's symbols") != NULL);
	/* no Python frames: nothing to place, nothing to say */
	why[0] = 0;
	CHECK_EQ(ustack_py_place(nf, n, LO, HI, 0, 0, py, 0, why, sizeof(why)), 0);
	CHECK_STR(why, "");
}

int main(void)
{
	RUN(test_place_two_runs);
	RUN(test_place_return_address_edges);
	RUN(test_place_mismatch);
	RUN(test_place_cut_chain);
	RUN(test_place_no_symbol);
	TEST_EXIT();
}
