// SPDX-License-Identifier: MIT
/* The library progs/dlopen_late.c loads late (tests/integration/probes_more.sh). */
volatile long late_sink;

__attribute__((noinline)) long late_work(long v)
{
	late_sink += v;
	return late_sink;
}
