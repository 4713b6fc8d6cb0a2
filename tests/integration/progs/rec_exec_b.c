// SPDX-License-Identifier: MIT
/*
 * The image rec_exec_a execs: main -> rec_exec_b_outer -> rec_exec_b_work
 * -> getppid() x N (argv[1], default 6).
 */
#include <stdio.h>

#include "rec_common.h"

REC_FN void rec_exec_b_work(int n)
{
	rec_marker(n);
	rec_sink++;
}

REC_FN void rec_exec_b_outer(int n)
{
	rec_exec_b_work(n);
	rec_sink++;
}

int main(int argc, char **argv)
{
	int n = rec_arg(argc, argv, 1, 6);

	rec_exec_b_outer(n);
	printf("rec_exec_b: %d calls\n", n);
	return 0;
}
