// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the /proc/PID/task/TID/syscall parser of the snapshot
 * (a thread blocked in the kernel is unwound from the sp and pc it gives).
 * The input is the file's text, cut to what the snapshot reads (255
 * bytes). An accepted text gives a non-zero sp and pc. The corpus holds
 * the kernel's three forms, captured here.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[256];
	uint64_t sp = 0, pc = 0;

	if (size > sizeof(text) - 1)
		size = sizeof(text) - 1;
	memcpy(text, data, size);
	text[size] = 0;
	if (!ustack_parse_proc_syscall(text, &sp, &pc) && (!sp || !pc))
		abort();
	return 0;
}
