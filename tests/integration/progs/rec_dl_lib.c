// SPDX-License-Identifier: MIT
/*
 * The library rec_dl_main dlopen()s: rec_dl_entry -> rec_dl_leaf ->
 * getppid() x n. Built a second time with -Drec_dl_leaf=rec_dlb_leaf for a
 * library with another chain at the same entry point.
 *
 * rec_dl_warm(GO, K) is the bpf runs' handshake for the K-th library
 * loaded (see rec_common.h): getpid() calls from inside this library, in
 * rec_dl_warm_K (a name per load, K = 0..3), until the file GO exists.
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

#define REC_DL_WARM(k)                                                                         \
	REC_FN void rec_dl_warm_##k(const char *go)                                            \
	{                                                                                      \
		rec_wait_for(go);                                                              \
		rec_sink++;                                                                    \
	}
REC_DL_WARM(0)
REC_DL_WARM(1)
REC_DL_WARM(2)
REC_DL_WARM(3)

REC_FN void rec_dl_warm(const char *go, int k)
{
	switch (k & 3) {
	case 0: rec_dl_warm_0(go); break;
	case 1: rec_dl_warm_1(go); break;
	case 2: rec_dl_warm_2(go); break;
	default: rec_dl_warm_3(go); break;
	}
	rec_sink++;
}
