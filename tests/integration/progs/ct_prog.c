/* The "program built twice" of tests/integration/container_names.sh: every
 * function name ends in CT_TAG (a: the host's build, b: the container's,
 * f: the one linked to the library with a forged build ID), so that build
 * A and build B differ in content, build ID and names, and `nm` of the build
 * tells which file named a frame. Built with -fno-plt: a sample in a PLT
 * stub (which has no symbol) cannot occur in the checked frames.
 * Usage: ct_prog_X SECONDS (0: until killed); prints "ready PID". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CT_CAT2(a, b) a##b
#define CT_CAT(a, b) CT_CAT2(a, b)
#define CT_NAME(x) CT_CAT(x, CT_TAG)

unsigned long CT_NAME(ct_lib_spin_)(unsigned long n);
volatile unsigned long ct_prog_sink;

__attribute__((noinline)) unsigned long CT_NAME(ct_prog_spin_)(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		ct_prog_sink += i ^ (ct_prog_sink >> 3);
	return ct_prog_sink;
}

__attribute__((noinline)) void CT_NAME(ct_prog_outer_)(unsigned long n)
{
	CT_NAME(ct_prog_spin_)(n);
	ct_prog_sink += CT_NAME(ct_lib_spin_)(n);
}

static double ct_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0, end = ct_now() + secs;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (secs <= 0 || ct_now() < end)
		CT_NAME(ct_prog_outer_)(200000);
	return (int)(ct_prog_sink & 0);
}
