// SPDX-License-Identifier: MIT
/* Fuzz target: src/elf over arbitrary bytes, and what reads an ELF's
 * .eh_frame_hdr table for the CPython eval function's cold part
 * (ustack_py_fde_starts, then ustack_py_eval_cold over the file's bytes). */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/ustack.h>
#include "elf/elf_file.h"
#include "python/pyproc.h"

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
	/* a caller that announces its lookups (snapshot groups): 0-7 of
	 * them, so the index is built before any lookup in some runs, after
	 * the scans in others */
	ustack_elf__expect_lookups(e, size & 7);
	ustack_elf__find_segment(e, 0x6474e550, &seg);
	ustack_elf__offset_to_vaddr(e, 0x1000, &v);
	ustack_elf__vaddr_to_offset(e, 0x1000, &v);
	for (uint64_t a = 0; a < 0x3000; a += 0x101)
		ustack_elf__symbolize(e, a, &name, &start);
	/* the index (built after the first lookups) answers as the scan of
	 * a fresh open does */
	for (uint64_t a = 0; a < 0x3000; a += 0x301) {
		struct ustack_elf *f = ustack_elf__open_mem(data, size, "fuzz");
		const char *n1 = NULL, *n2 = NULL;
		uint64_t s1 = 0, s2 = 0;
		int r1 = f ? ustack_elf__symbolize_sized(f, a, &n1, &s1) : -1;
		int r2 = ustack_elf__symbolize_sized(e, a, &n2, &s2);

		if (f && (r1 != r2 || (!r1 && (s1 != s2 || strcmp(n1, n2)))))
			__builtin_trap();
		ustack_elf__close(f);
	}
	/* addresses announced ahead (one pass) answer as the scan does */
	{
		struct ustack_elf *f = ustack_elf__open_mem(data, size, "fuzz");
		struct ustack_elf *g = ustack_elf__open_mem(data, size, "fuzz");
		uint64_t want[16];

		for (int i = 0; i < 16; i++)
			want[i] = (uint64_t)i * 0x2f1 + (size & 0xff);
		if (f && g) {
			ustack_elf__expect_addrs(f, want, 16);
			for (int i = 0; i < 16; i++) {
				const char *n1 = NULL, *n2 = NULL;
				uint64_t s1 = 0, s2 = 0;
				int r1 = ustack_elf__symbolize_sized(f, want[i], &n1, &s1);
				int r2 = ustack_elf__symbolize_sized(g, want[i], &n2, &s2);

				if (r1 != r2 || (!r1 && (s1 != s2 || strcmp(n1, n2))))
					__builtin_trap();
			}
		}
		ustack_elf__close(f);
		ustack_elf__close(g);
	}
	/* the search table: every start read from inside the section */
	{
		struct ustack_elf_section h;
		uint64_t *starts = NULL, lo, hi;
		size_t n = 0;

		if (!ustack_py_fde_starts(e, &starts, &n)) {
			if (ustack_elf__section(e, ".eh_frame_hdr", &h) || !n || n > (h.size - 12) / 8)
				__builtin_trap();
			if (!ustack_py_eval_cold(data, size < 4096 ? size : 4096, 0x1000, starts, n,
						 &lo, &hi) && !(lo < hi))
				__builtin_trap();
			free(starts);
		}
	}
	ustack_elf__close(e);
	return 0;
}
