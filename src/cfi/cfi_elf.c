// SPDX-License-Identifier: MIT
/*
 * Find the CFI of an ELF file: .eh_frame with its search table, else
 * .debug_frame. Everything is expressed in the file's vaddr space, which
 * is what .eh_frame's pcrel pointers and the table's datarel pointers are
 * relative to (p_vaddr and p_offset differ in most PIE/DSO files, so file
 * offsets would be wrong).
 */
#include <elf.h>
#include <errno.h>

#include "cfi/cfi.h"
#include "elf/elf_file.h"

/* .eh_frame through PT_GNU_EH_FRAME alone (a file without section
 * headers): bound it by the end of the PT_LOAD that holds it. */
static int eh_frame_from_hdr(const struct ustack_elf *elf, uint64_t addr,
			     const uint8_t **data, uint64_t *size)
{
	unsigned int n = ustack_elf__nr_segments(elf);
	size_t fsize;
	const uint8_t *file = ustack_elf__data(elf, &fsize);

	for (unsigned int i = 0; i < n; i++) {
		struct ustack_elf_segment s;

		if (ustack_elf__segment(elf, i, &s) || s.type != PT_LOAD)
			continue;
		if (addr < s.vaddr || addr - s.vaddr >= s.filesz)
			continue;
		if (s.offset > fsize || s.filesz > fsize - s.offset)
			return -EBADMSG;
		*data = file + s.offset + (addr - s.vaddr);
		*size = s.filesz - (addr - s.vaddr);
		return 0;
	}
	return -ENOENT;
}

static int init_elf(struct ustack_cfi *cfi, const struct ustack_elf *elf, int allow_debug_frame)
{
	struct ustack_elf_section eh, sec;
	struct ustack_elf_segment seg;
	const uint8_t *hdr = NULL;
	uint64_t hdr_size = 0, hdr_addr = 0;
	int err;

	if (!ustack_elf__find_segment(elf, PT_GNU_EH_FRAME, &seg)) {
		hdr = ustack_elf__segment_data(elf, &seg);
		hdr_size = hdr ? seg.filesz : 0;
		hdr_addr = seg.vaddr;
	} else if (!ustack_elf__section(elf, ".eh_frame_hdr", &sec) && sec.data) {
		/* a relocatable or odd file: the section alone */
		hdr = sec.data;
		hdr_size = sec.size;
		hdr_addr = sec.addr;
	}

	err = ustack_elf__section(elf, ".eh_frame", &eh);
	if (err == -EBADMSG)
		return err;
	if (!err && eh.data && eh.size)
		return ustack_cfi__init_eh_frame(cfi, eh.data, eh.size, eh.addr,
						 hdr, hdr_size, hdr_addr);
	if (err == -ENOENT && hdr) {
		uint64_t addr, size;
		const uint8_t *data;

		if (!ustack_cfi__hdr_eh_frame_addr(hdr, hdr_size, hdr_addr, &addr) &&
		    !eh_frame_from_hdr(elf, addr, &data, &size))
			return ustack_cfi__init_eh_frame(cfi, data, size, addr,
							 hdr, hdr_size, hdr_addr);
	}
	if (allow_debug_frame) {
		err = ustack_elf__section(elf, ".debug_frame", &sec);
		if (err == -EBADMSG)
			return err;
		if (!err && sec.data && sec.size)
			return ustack_cfi__init_debug_frame(cfi, sec.data, sec.size);
	}
	return -ENOENT;
}

int ustack_cfi__init_elf(struct ustack_cfi *cfi, const struct ustack_elf *elf,
			 int allow_debug_frame)
{
	int err = init_elf(cfi, elf, allow_debug_frame);

	if (!err)
		cfi->file = ustack_elf__path(elf);
	return err;
}
