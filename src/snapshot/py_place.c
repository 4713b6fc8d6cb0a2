// SPDX-License-Identifier: MIT
/*
 * The snapshot's side of the placement (the rule: python/pyplace.c):
 * which native frames are in _PyEval_EvalFrameDefault, which Python
 * frames are entries.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "python/pyplace.h"

#include "snapshot/py_place.h"

static int in_eval(const struct ustack_frame *f, uint64_t lo, uint64_t hi, uint64_t clo,
		   uint64_t chi)
{
	/* a return address is past its call: the call's own pc is before it */
	uint64_t pc = f->pc - (f->flags & USTACK_FRAME_EXACT_PC ? 0 : 1);

	return (pc >= lo && pc < hi) || (pc >= clo && pc < chi);
}

int ustack_py_place(const struct ustack_frame *native, int n, uint64_t lo, uint64_t hi,
		    uint64_t clo, uint64_t chi, struct ustack_snapshot_pyframe *py, int m, char *why, size_t whylen)
{
	uint8_t *is_eval, *entry;
	int *idx, ret;

	for (int j = 0; j < m; j++)
		py[j].native_index = -1;
	if (m <= 0)
		return 0;
	if (lo >= hi) {
		snprintf(why, whylen, "Python frames not placed: _PyEval_EvalFrameDefault is not "
			 "among the interpreter's symbols");
		return -ENOENT;
	}
	is_eval = malloc(n > 0 ? n : 1);
	entry = malloc(m);
	idx = malloc(m * sizeof(*idx));
	if (!is_eval || !entry || !idx) {
		snprintf(why, whylen, "Python frames not placed: out of memory");
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++)
		is_eval[i] = in_eval(&native[i], lo, hi, clo, chi);
	for (int j = 0; j < m; j++)
		entry[j] = !!(py[j].flags & USTACK_SNAPSHOT_PYFRAME_ENTRY);
	/* a snapshot's walk is never cut for the placement: counts must match */
	ret = ustack_py_place_runs(is_eval, n, entry, m, 0, idx, why, whylen);
	for (int j = 0; !ret && j < m; j++)
		py[j].native_index = idx[j];
out:
	free(is_eval);
	free(entry);
	free(idx);
	return ret;
}
