// SPDX-License-Identifier: MIT
/*
 * main -> rec_bad_call -> rec_bad_outer (librec_bad.so, its .eh_frame
 * damaged in one FDE) -> ... -> getppid() x N (argv[1], default 4).
 * The damage must not matter to the program: it runs and exits 0.
 */
#include <stdio.h>

#include "rec_common.h"

void rec_bad_outer(int n);

REC_FN void rec_bad_call(int n)
{
	rec_bad_outer(n);
	rec_sink++;
}

int main(int argc, char **argv)
{
	int n = rec_arg(argc, argv, 1, 4);

	rec_warm();
	rec_bad_call(n);
	printf("rec_bad: %d calls\n", n);
	return 0;
}
