/* SPDX-License-Identifier: MIT */
/* The monotonic clock in nanoseconds: the recorder's deadlines and trace
 * times, the snapshot's stop lengths, perf record ordering, report's
 * progress line. */
#ifndef USTACK_COMMON_CLOCK_H
#define USTACK_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ustack_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
