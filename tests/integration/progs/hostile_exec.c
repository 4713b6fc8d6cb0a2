// SPDX-License-Identifier: MIT
/*
 * hostile_exec CPU_MS [NEXT CPU_MS [NEXT ...]]: a process that execs while
 * it is recorded (tests/integration/record_hostile.sh). Built twice:
 *   hostile_exec_a (default)      main -> exa_outer -> exa_spin, then 72 KiB
 *                                 of code of its own (exa_pad)
 *   hostile_exec_b (-DHOSTILE_B)  main -> exb_outer -> exb_mid -> exb_spin,
 *                                 after 64 KiB of code of its own (exb_pad)
 * so that the functions of each image are where the other has its pad:
 * built non-PIE (one load address), a frame named from the wrong image
 * comes out as exa_pad or exb_pad, never as a right one. Each
 * spins until this image has used CPU_MS ms of CPU time, then, if a NEXT
 * program follows, execs it with the rest of the arguments (through
 * ex*_go: main -> ex*_go -> execv).
 */
#include <stdio.h>
#include <string.h>

#include "rec_common.h"

#ifndef HOSTILE_B
#define OUTER exa_outer
#define SPIN exa_spin
#define GO exa_go
#else
#define OUTER exb_outer
#define SPIN exb_spin
#define GO exb_go
/* code no frame can be in: it moves the other functions' offsets */
__asm__(".pushsection .text.unlikely.exb_pad,\"ax\",@progbits\n"
	".globl exb_pad\n.type exb_pad,@function\nexb_pad:\n"
	".fill 65536,1,0xcc\n.size exb_pad,65536\n.popsection\n");
#endif

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

REC_FN unsigned long SPIN(unsigned long n)
{
	volatile unsigned long x = n;

	for (unsigned long i = 0; i < n; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	return x;
}

#ifdef HOSTILE_B
REC_FN unsigned long exb_mid(unsigned long n)
{
	unsigned long r = SPIN(n);

	rec_sink++;
	return r;
}
#define CALLEE exb_mid
#else
#define CALLEE SPIN
#endif

REC_FN void OUTER(double ms)
{
	double end = cpu_ms() + ms;

	while (cpu_ms() < end)
		rec_sink += CALLEE(100000);
	rec_sink++;
}

REC_FN void GO(char **next)
{
	fflush(stdout);
	execv(next[0], next);
	perror("execv");
	exit(1);
}

#ifndef HOSTILE_B
/* code after this image's functions, where hostile_exec_b has its own:
 * a frame of exec_b named from this image comes out as exa_pad */
__asm__(".pushsection .text.exa_pad,\"ax\",@progbits\n"
	".globl exa_pad\n.type exa_pad,@function\nexa_pad:\n"
	".fill 73728,1,0xcc\n.size exa_pad,73728\n.popsection\n");
#endif

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: hostile_exec CPU_MS [NEXT CPU_MS ...]\n");
		return 2;
	}
	OUTER(atof(argv[1]));
	printf("%s: %s ms\n", argv[0], argv[1]);
	if (argc > 2)
		GO(argv + 2);
	return 0;
}
