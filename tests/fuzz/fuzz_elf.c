// SPDX-License-Identifier: MIT
/* Fuzz target: src/elf over arbitrary bytes. */
#include <stdint.h>
#include <stddef.h>

#include <ustack/ustack.h>
#include "elf/elf_file.h"

static int quiet(enum ustack_print_level l, const char *f, va_list ap) { return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ustack_elf *e;
	struct ustack_elf_section s;
	struct ustack_elf_segment seg;
	const char *name;
	uint8_t id[64];
	uint32_t crc;
	uint64_t v, start;

	ustack_set_print(quiet);
	e = ustack_elf__open_mem(data, size, "fuzz");
	if (!e)
		return 0;
	ustack_elf__section(e, ".text", &s);
	ustack_elf__section(e, ".sframe", &s);
	ustack_elf__build_id(e, id, sizeof(id));
	ustack_elf__debuglink(e, &name, &crc);
	for (unsigned int i = 0; i < ustack_elf__nr_segments(e); i++)
		if (!ustack_elf__segment(e, i, &seg))
			ustack_elf__segment_data(e, &seg);
	ustack_elf__find_segment(e, 0x6474e550, &seg);
	ustack_elf__offset_to_vaddr(e, 0x1000, &v);
	ustack_elf__vaddr_to_offset(e, 0x1000, &v);
	for (uint64_t a = 0; a < 0x3000; a += 0x101)
		ustack_elf__symbolize(e, a, &name, &start);
	ustack_elf__close(e);
	return 0;
}
