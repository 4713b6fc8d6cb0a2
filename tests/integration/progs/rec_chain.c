// SPDX-License-Identifier: MIT
/*
 * main -> rec_chain_a -> rec_chain_b -> rec_chain_c -> getppid() x N
 * (argv[1], default 7). Built twice by record_bpf_shapes.sh: with
 * -Wa,--gsframe (unwound from .sframe) and without (.eh_frame only).
 */
#include <stdio.h>

#include "rec_common.h"

REC_FN void rec_chain_c(int n)
{
	rec_marker(n);
	rec_sink++;
}

REC_FN void rec_chain_b(int n)
{
	rec_chain_c(n);
	rec_sink++;
}

REC_FN void rec_chain_a(int n)
{
	rec_chain_b(n);
	rec_sink++;
}

int main(int argc, char **argv)
{
	int n = rec_arg(argc, argv, 1, 7);

	rec_warm();
	rec_chain_a(n);
	printf("rec_chain: %d calls\n", n);
	return 0;
}
