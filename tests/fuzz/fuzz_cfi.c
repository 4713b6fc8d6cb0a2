// SPDX-License-Identifier: MIT
/*
 * Fuzz the CFI parser, interpreter and table compiler.
 * Input: u8 mode (bit 0: .debug_frame), u64 section address, u64 header
 * address, u32 header length, header bytes, section bytes (all little
 * endian). tests/data/cfi/make_fuzz_corpus.sh writes real sections in
 * this layout.
 * Invariants checked: no crash/UB; a returned row contains the pc asked
 * for; the table never finds a row where no FDE exists; without search
 * table, the FDE index gives the walk's answer (error and row).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/cfi.h"
#include "common/compiler.h"
#include "common/log.h"

static void check_row(int err, uint64_t pc, const struct ustack_row *r)
{
	if (err == 0 && (pc < r->start || pc >= r->end))
		abort();
	if (err && err != -ENOENT && err != -EBADMSG)
		abort();
}

/* the FDE index (no search table): exactly the walk's answer */
static struct ustack_cfi_index *ix;

static void probe(const struct ustack_cfi *cfi, const struct ustack_cfi_table *t, uint64_t pc)
{
	struct ustack_row r, tr, ir;
	int e1, e2, e3;

	memset(&r, 0, sizeof(r));
	e1 = ustack_cfi__find_row(cfi, pc, &r);
	check_row(e1, pc, &r);
	e2 = ustack_cfi_table__find_row(t, pc, &tr);
	check_row(e2, pc, &tr);
	if (e2 && e2 != -ENOENT)
		abort();
	if (ix) {
		memset(&ir, 0, sizeof(ir));
		e3 = ustack_cfi_index__find_row(cfi, ix, pc, &ir);
		if (e3 != e1 || (!e1 && memcmp(&r, &ir, sizeof(r))))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ustack_cfi cfi;
	struct ustack_cfi_table *t;
	uint64_t sec_addr, hdr_addr, off = 0, next;
	uint32_t hdr_len;
	const uint8_t *hdr, *sec;
	size_t sec_len;
	int mode, n = 0;

	if (size < 21)
		return 0;
	mode = data[0];
	sec_addr = ld_u64(data + 1);
	hdr_addr = ld_u64(data + 9);
	hdr_len = ld_u32(data + 17);
	data += 21;
	size -= 21;
	if (hdr_len > size)
		hdr_len = (uint32_t)size;
	hdr = data;
	sec = data + hdr_len;
	sec_len = size - hdr_len;

	ustack_set_print(NULL);
	if (mode & 1) {
		ustack_cfi__init_debug_frame(&cfi, sec, sec_len);
	} else if (ustack_cfi__init_eh_frame(&cfi, sec, sec_len, sec_addr,
					     hdr_len ? hdr : NULL, hdr_len, hdr_addr)) {
		/* corrupt header: the section alone must still be safe */
		ustack_cfi__init_eh_frame(&cfi, sec, sec_len, sec_addr, NULL, 0, 0);
	}
	t = ustack_cfi_table__build(&cfi);
	if (!t)
		return 0;
	ix = cfi.hdr_count ? NULL : ustack_cfi_index__build(&cfi);
	if (!cfi.hdr_count && !ix && errno != ENOTUNIQ && errno != ENOMEM)
		abort();

	/* probe around every FDE (bounded) and a few fixed pcs */
	while (n < 200) {
		struct ustack_cfi_fde fde;
		int r = ustack_cfi__parse_entry(&cfi, off, &fde, &next);

		if (r == -ENOENT || next == ~(uint64_t)0)
			break;
		if (r == 1) {
			uint64_t len = fde.pc_end - fde.pc_begin;

			probe(&cfi, t, fde.pc_begin);
			probe(&cfi, t, fde.pc_begin + len / 2);
			probe(&cfi, t, fde.pc_begin + (len > 0 ? len - 1 : 0));
			probe(&cfi, t, fde.pc_end);
			probe(&cfi, t, fde.pc_begin - 1);
			for (uint64_t k = 0; k < 16 && k < len; k++)
				probe(&cfi, t, fde.pc_begin + k * (len / 16 + 1));
			n++;
		}
		off = next;
	}
	probe(&cfi, t, 0);
	probe(&cfi, t, sec_addr);
	probe(&cfi, t, ~(uint64_t)0);
	ustack_cfi_table__free(t);
	ustack_cfi_index__free(ix);
	ix = NULL;
	return 0;
}
