// SPDX-License-Identifier: MIT
/*
 * rec_exec_a B: main -> rec_exec_a_work -> getppid() x 4, then
 * main -> rec_exec_a_go -> execv(B, { B, "6" }): the same process goes on
 * as rec_exec_b (another image, other functions).
 */
#include <stdio.h>

#include "rec_common.h"

REC_FN void rec_exec_a_work(int n)
{
	rec_marker(n);
	rec_sink++;
}

REC_FN void rec_exec_a_go(char *b)
{
	char *args[] = { b, "6", NULL };

	fflush(stdout);
	execv(b, args);
	perror("execv");
	rec_sink++;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rec_exec_a PROGRAM\n");
		return 2;
	}
	rec_warm();
	rec_exec_a_work(4);
	rec_exec_a_go(argv[1]);
	return 1;
}
