// SPDX-License-Identifier: MIT
/*
 * main -> rec_lib_caller -> rec_lib_outer (librec_lib.so) -> rec_lib_inner
 * -> getppid() x N (argv[1], default 6). Linked against librec_lib.so:
 * rec_lib_caller reaches rec_lib_outer through a PLT stub (default build)
 * or through the GOT (-fno-plt); record_bpf_shapes.sh checks which with
 * objdump.
 */
#include <stdio.h>

#include "rec_common.h"

void rec_lib_outer(int n);

REC_FN void rec_lib_caller(int n)
{
	rec_lib_outer(n);
	rec_sink++;
}

int main(int argc, char **argv)
{
	int n = rec_arg(argc, argv, 1, 6);

	rec_warm();
	rec_lib_caller(n);
	printf("rec_lib: %d calls\n", n);
	return 0;
}
