// SPDX-License-Identifier: MIT
/* libFuzzer target for the SFrame decoder: init + validate + lookups at many
 * addresses + iteration over every function and row. The input is a raw
 * .sframe section; the first 8 bytes of a long input also pick sec_addr so
 * PC-relative and section-relative starts both wrap around. */
#include <stdint.h>
#include <string.h>

#include "sframe/sframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ustack_sframe_error err;
	struct ustack_sframe sf;
	struct ustack_row row;
	uint64_t sec_addr = 0x2000;
	uint32_t nr;

	if (ustack_sframe__init_err(&sf, data, size, sec_addr, &err))
		return 0;
	(void)ustack_sframe__validate(&sf, &err);

	nr = ustack_sframe__nr_fdes(&sf);
	for (uint32_t i = 0; i < nr && i < 4096; i++) {
		struct ustack_sframe_fde fde;
		struct ustack_sframe_fre fre;
		uint64_t pos;

		if (ustack_sframe__fde(&sf, i, &fde))
			continue;
		pos = fde.fres;
		for (uint32_t j = 0; j < fde.nr_fres && j < 256; j++)
			if (ustack_sframe__fre_next(&sf, &fde, &pos, &fre))
				break;
		for (uint32_t j = 0; j < fde.nr_fres && j < 16; j++)
			(void)ustack_sframe__fde_row(&sf, &fde, j, &fre);
		/* around each function: start, inside, last byte, end */
		(void)ustack_sframe__find_row(&sf, fde.start, &row);
		(void)ustack_sframe__find_row(&sf, fde.start + fde.size / 2, &row);
		(void)ustack_sframe__find_row(&sf, fde.start + fde.size - 1, &row);
		(void)ustack_sframe__find_row(&sf, fde.start + fde.size, &row);
		(void)ustack_sframe__find_row(&sf, fde.start - 1, &row);
	}
	for (uint64_t a = 0; a < 0x20000; a += 0x3f1)
		(void)ustack_sframe__find_row(&sf, a, &row);
	(void)ustack_sframe__find_row(&sf, UINT64_MAX, &row);
	return 0;
}
