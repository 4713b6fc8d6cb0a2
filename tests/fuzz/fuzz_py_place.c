// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the placement of a snapshot thread's Python frames
 * under its _PyEval_EvalFrameDefault native frames (src/snapshot/py_place.c),
 * whose Python frame flags come from the target's memory. Input: one byte
 * N (native frames, up to 64), N bytes (bit 0: the frame is in the eval
 * function), then one byte per Python frame (its flags). Checked: placed
 * frames point at eval frames, never backwards (innermost first on both
 * sides), each eval frame gets a run that ends in an entry frame; not
 * placed: every index -1 and a reason.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "snapshot/py_place.h"

#define LO 0x1000u
#define HI 0x2000u

static void check_placed(const struct ustack_frame *nf, int n,
			 const struct ustack_snapshot_pyframe *py, int m)
{
	int evals = 0, used = 0;

	for (int i = 0; i < n; i++)
		evals += nf[i].pc - 1 >= LO && nf[i].pc - 1 < HI;
	for (int j = 0; j < m; j++) {
		int i = py[j].native_index;

		if (i < 0 || i >= n || nf[i].pc - 1 < LO || nf[i].pc - 1 >= HI)
			abort();
		if (j && i < py[j - 1].native_index)
			abort();
		/* a new native frame starts after an entry frame, and only then */
		if (j && (i != py[j - 1].native_index) !=
			 !!(py[j - 1].flags & USTACK_SNAPSHOT_PYFRAME_ENTRY))
			abort();
		used += !j || i != py[j - 1].native_index;
	}
	if (m && (used != evals || !(py[m - 1].flags & USTACK_SNAPSHOT_PYFRAME_ENTRY)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ustack_frame nf[64];
	struct ustack_snapshot_pyframe py[256];
	char why[160] = "";
	int n, m = 0, ret;

	if (!size)
		return 0;
	n = data[0] % 65;
	if ((size_t)n + 1 > size)
		n = (int)size - 1;
	for (int i = 0; i < n; i++)
		/* return addresses: pc - 1 is looked at */
		nf[i] = (struct ustack_frame){ .pc = (data[1 + i] & 1 ? LO : 0x9000u) + 1u + (unsigned)i };
	for (size_t k = (size_t)n + 1; k < size && m < 256; k++)
		py[m++] = (struct ustack_snapshot_pyframe){ .flags = data[k], .native_index = 77 };
	ret = ustack_py_place(nf, n, LO, HI, 0, 0, py, m, why, sizeof(why));
	if (!ret) {
		check_placed(nf, n, py, m);
		return 0;
	}
	if (!why[0])
		abort();
	for (int j = 0; j < m; j++)
		if (py[j].native_index != -1)
			abort();
	return 0;
}
