// SPDX-License-Identifier: MIT
/*
 * A CFI-only library whose FDE of rec_bad_mid record_bpf_shapes.sh
 * corrupts on purpose (lib/corrupt_fde.sh): the call chain is
 *   rec_bad_outer -> rec_bad_mid -> rec_bad_inner -> getppid() x n
 * and an unwinder can step from rec_bad_inner to rec_bad_mid but not past
 * rec_bad_mid. rec_bad_mid clears %rbp right before its call, so that the
 * frame-pointer heuristic cannot invent frames below it either: a correct
 * stack stops at rec_bad_mid.
 */
#include "rec_common.h"

REC_FN void rec_bad_inner(int n)
{
	rec_marker(n);
	rec_sink++;
}

REC_FN void rec_bad_mid(int n)
{
	__asm__ volatile("xorl %%ebp, %%ebp" ::: "rbp");
	rec_bad_inner(n);
	__asm__ volatile("" ::: "memory");
}

REC_FN void rec_bad_outer(int n)
{
	rec_bad_mid(n);
	rec_sink++;
}
