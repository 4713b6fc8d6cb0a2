// SPDX-License-Identifier: MIT
/*
 * The one-function library that many_libs.c and many_libs_bt.c load many
 * copies of. It writes one line naming its copy, then calls @cb (if any)
 * from inside its own frame.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) void many_lib_fn(int fd, int k, void (*cb)(int k))
{
	char line[32];
	int n = snprintf(line, sizeof(line), "lib%d\n", k);

	if (fd >= 0 && write(fd, line, (size_t)n) < 0)
		line[0] = 0;
	if (cb)
		cb(k);
	__asm__ volatile("" ::: "memory"); /* no tail call: keep this frame */
}
