// SPDX-License-Identifier: MIT
/*
 * A shared library of its own (librec_lib.so) for record_bpf_shapes.sh:
 * rec_lib_outer -> rec_lib_inner -> getppid() x n. Both are exported with
 * default visibility, so built -fPIC the call between them goes through
 * the library's PLT (or, built -fno-plt, through its GOT).
 */
#include "rec_common.h"

REC_FN void rec_lib_inner(int n)
{
	rec_marker(n);
	rec_sink++;
}

REC_FN void rec_lib_outer(int n)
{
	rec_lib_inner(n);
	rec_sink++;
}
