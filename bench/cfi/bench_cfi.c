// SPDX-License-Identifier: MIT
/*
 * Cost of compiling .eh_frame into a ustack_cfi_table, per MB of section,
 * and of one lookup (compiled table vs interpreting the FDE through
 * .eh_frame_hdr on every call).
 *   bench_cfi FILE...   prints one line per file:
 *   file eh_frame_MB fdes rows build_ms ms_per_MB table_MB table_ns find_row_ns
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cfi/cfi.h"
#include "elf/elf_file.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	printf("%-48s %8s %7s %8s %9s %8s %8s %9s %11s\n", "file", "MB", "FDEs", "rows",
	       "build_ms", "ms/MB", "table_MB", "table_ns", "find_row_ns");
	for (int i = 1; i < argc; i++) {
		struct ustack_elf *elf = ustack_elf__open(argv[i]);
		struct ustack_cfi cfi;
		struct ustack_cfi_table *t = NULL;
		struct ustack_row row;
		double t0, best = 1e30, mb, tns, fns;
		uint64_t *pcs, lo = ~0ull, hi = 0;
		int reps = 0, npcs = 200000;
		volatile int sink = 0;

		if (!elf || ustack_cfi__init_elf(&cfi, elf, 0)) {
			fprintf(stderr, "%s: no .eh_frame (%s)\n", argv[i], strerror(errno));
			ustack_elf__close(elf);
			continue;
		}
		mb = cfi.sec_size / 1048576.0;
		/* best of several builds: the machine is shared and noisy */
		for (double start = now_ms(); reps < 3 || (now_ms() - start < 2000 && reps < 50); reps++) {
			t0 = now_ms();
			ustack_cfi_table__free(t);
			t = ustack_cfi_table__build(&cfi);
			if (now_ms() - t0 < best)
				best = now_ms() - t0;
		}
		if (!t)
			return 1;
		/* lookups at random pcs inside the covered range */
		{
			uint64_t off = 0, next;
			struct ustack_cfi_fde fde;
			int r;

			while ((r = ustack_cfi__parse_entry(&cfi, off, &fde, &next)) != -ENOENT &&
			       next != ~0ull) {
				if (r == 1 && fde.pc_end > fde.pc_begin) {
					lo = fde.pc_begin < lo ? fde.pc_begin : lo;
					hi = fde.pc_end > hi ? fde.pc_end : hi;
				}
				off = next;
			}
		}
		pcs = malloc(npcs * sizeof(*pcs));
		srand(1);
		for (int k = 0; k < npcs; k++)
			pcs[k] = lo + ((uint64_t)rand() * 65537u + (uint64_t)rand()) % (hi - lo + 1);
		t0 = now_ms();
		for (int k = 0; k < npcs; k++)
			sink += ustack_cfi_table__find_row(t, pcs[k], &row);
		tns = (now_ms() - t0) * 1e6 / npcs;
		t0 = now_ms();
		for (int k = 0; k < npcs; k++)
			sink += ustack_cfi__find_row(&cfi, pcs[k], &row);
		fns = (now_ms() - t0) * 1e6 / npcs;
		printf("%-48s %8.2f %7zu %8zu %9.2f %8.2f %8.2f %9.1f %11.1f\n", argv[i], mb,
		       ustack_cfi_table__nr_fdes(t), ustack_cfi_table__nr_rows(t), best, best / mb,
		       ustack_cfi_table__mem_size(t) / 1048576.0, tns, fns);
		free(pcs);
		ustack_cfi_table__free(t);
		ustack_elf__close(elf);
	}
	return 0;
}
