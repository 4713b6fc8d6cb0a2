// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the ELF core reader (src/snapshot/core_file.c) over arbitrary
 * bytes. Whatever the input: no crash, no read outside the input; a core
 * that parses has threads, sorted non-overlapping PT_LOADs and sorted
 * mappings, and reads of its memory (each thread's sp and pc, each
 * mapping's start) stay inside the input. Mapped files are never opened
 * here: the paths come from the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/ustack.h>
#include "snapshot/core_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct ustack_core *c;
	uint8_t buf[64];

	ustack_set_print(NULL);
	c = ustack_core__parse(data, size, "fuzz", "/exe", err, sizeof(err));
	if (!c) {
		if (!memchr(err, 0, sizeof(err)) || strncmp(err, "fuzz", 4))
			abort(); /* every refusal says why, naming the input */
		return 0;
	}
	if (!c->nr_threads)
		abort();
	for (size_t i = 0; i < c->nr_maps; i++)
		c->maps[i].fd = -2; /* no file reads */
	for (size_t i = 1; i < c->nr_loads; i++)
		if (c->loads[i].vaddr - c->loads[i - 1].vaddr < c->loads[i - 1].memsz)
			abort();
	for (size_t i = 1; i < c->nr_maps; i++)
		if (c->maps[i].start < c->maps[i - 1].start)
			abort();
	for (size_t i = 0; i < c->nr_threads; i++) {
		ustack_core__read(c, c->threads[i].regs.sp, buf, sizeof(buf));
		ustack_core__read(c, c->threads[i].regs.pc, buf, 1);
	}
	for (size_t i = 0; i < c->nr_maps; i++)
		ustack_core__read(c, c->maps[i].start, buf, sizeof(buf));
	ustack_core__close(c);
	return 0;
}
