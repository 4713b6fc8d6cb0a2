// SPDX-License-Identifier: MIT
/*
 * The library rec_dl_main dlopen()s: rec_dl_entry -> rec_dl_leaf ->
 * getppid() x n.
 */
#include "rec_common.h"

REC_FN void rec_dl_leaf(int n)
{
	rec_marker(n);
	rec_sink++;
}

REC_FN void rec_dl_entry(int n)
{
	rec_dl_leaf(n);
	rec_sink++;
}
