// SPDX-License-Identifier: MIT
/*
 * The image rec_exec_a execs: main -> rec_exec_b_outer -> rec_exec_b_work
 * -> getppid() x N (argv[1], default 6).
 * The bpf runs' handshake again first, for this image (rec_exec_b_warm:
 * getpid() until the file $REC_GO_B exists), since its mappings are new.
 */
#include <stdio.h>

#include "rec_common.h"

REC_FN void rec_exec_b_warm(void)
{
	rec_wait_for(getenv("REC_GO_B"));
	rec_sink++;
}

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

	rec_exec_b_warm();
	rec_exec_b_outer(n);
	printf("rec_exec_b: %d calls\n", n);
	return 0;
}
