// SPDX-License-Identifier: MIT
/* TEMPORARY stand-in for ustack_modtab__rows() until wt-rows lands. */
#include <errno.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>
#include "elf/elf_file.h"
#include "unwind/modules.h"

int ustack_modtab__rows(struct ustack_modtab *m, struct ustack_row_span **spans, size_t *nr)
{
	struct ustack_elf *elf = ustack_modtab__elf(m);
	struct ustack_row_span *out = NULL;
	size_t n = 0, cap = 0;

	for (unsigned int i = 0; i < ustack_elf__nr_segments(elf); i++) {
		struct ustack_elf_segment s;

		if (ustack_elf__segment(elf, i, &s) || s.type != PT_LOAD || !(s.flags & PF_X))
			continue;
		for (uint64_t pc = s.vaddr; pc < s.vaddr + s.filesz;) {
			struct ustack_row row;
			unsigned int method = 0;
			int ret = ustack_modtab__find_row(m, pc, &row, &method);

			if (ret == -ENOENT) {
				pc++;
				continue;
			}
			if (n == cap) {
				cap = cap ? 2 * cap : 1024;
				out = realloc(out, cap * sizeof(*out));
				if (!out)
					return -ENOMEM;
			}
			memset(&out[n], 0, sizeof(out[n]));
			if (ret) {
				out[n].bad = 1;
				out[n].row.start = pc;
				out[n].row.end = pc + 1;
			} else {
				out[n].row = row;
				out[n].row.start = pc;
				out[n].method = (uint8_t)method;
			}
			pc = out[n].row.end > pc ? out[n].row.end : pc + 1;
			n++;
		}
	}
	*spans = out;
	*nr = n;
	return 0;
}
