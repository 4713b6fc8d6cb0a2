// SPDX-License-Identifier: MIT
/*
 * src/cli/report_weight.c: the durations every output prints (three
 * decimals, the unit chosen by size, rounding that carries into the next
 * unit) and the ns --wall gives an event (a clock sample at a frequency or
 * a period, an off-CPU interval, an event with no time meaning).
 */
#include <stdint.h>
#include <string.h>

#include "cli/report_weight.h"
#include "test.h"

static void test_fmt_ns(void)
{
	static const struct { uint64_t ns; const char *want; } cases[] = {
		{ 0, "0 ns" }, { 999, "999 ns" }, { 1000, "1.000 us" }, { 2500, "2.500 us" },
		{ 999999, "999.999 us" }, { 1000000, "1.000 ms" }, { 2500000, "2.500 ms" },
		{ 1234567, "1.235 ms" }, { 1234499, "1.234 ms" },
		{ 999999500, "1.000 s" }, /* rounds into the next unit */
		{ 999999499, "999.999 ms" }, { 1999999999, "2.000 s" },
		{ UINT64_MAX, "18446744073.710 s" },
	};
	char buf[48];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK_STR(report_fmt_ns(buf, sizeof(buf), cases[i].ns), cases[i].want);
	CHECK_STR(report_fmt_weight(buf, sizeof(buf), USTACK_TRACE_EV_UNIT_COUNT, 7), "7 samples");
	CHECK_STR(report_fmt_weight(buf, sizeof(buf), USTACK_TRACE_EV_UNIT_BYTES, 4096), "4096 bytes");
	CHECK_STR(report_fmt_weight(buf, sizeof(buf), USTACK_TRACE_EV_UNIT_NS, 1500), "1.500 us");
}

static void test_wall_ns(void)
{
	struct ustack_trace_event_desc d = { .type = USTACK_TRACE_EV_SAMPLE,
					     .flags = USTACK_TRACE_EV_FREQ, .period = 999,
					     .name = "cpu-clock" };

	CHECK(report_wall_ns(&d, 1) == 1001001); /* 1e9 / 999, rounded */
	CHECK(report_wall_ns(&d, 3) == 3003003);
	d.flags = 0;
	d.period = 250000;
	d.name = "task-clock";
	CHECK(report_wall_ns(&d, 2) == 500000); /* a period is ns already */
	d.name = "cycles";
	CHECK(report_wall_ns(&d, 1) == 0);
	d.type = USTACK_TRACE_EV_TRACEPOINT;
	d.name = "syscalls:sys_enter_futex";
	CHECK(report_wall_ns(&d, 1) == 0);
	d.type = USTACK_TRACE_EV_OFFCPU;
	d.flags = USTACK_TRACE_EV_UNIT_NS;
	d.name = "off-cpu";
	CHECK(report_wall_ns(&d, 1234) == 1234);
	CHECK(report_weight(&d, 1234, 0) == 1234);
	d.type = USTACK_TRACE_EV_TRACEPOINT;
	d.flags = 0;
	CHECK(report_weight(&d, 5, 0) == 5 && report_weight(&d, 5, 1) == 0);
}

int main(void)
{
	RUN(test_fmt_ns);
	RUN(test_wall_ns);
	TEST_EXIT();
}
