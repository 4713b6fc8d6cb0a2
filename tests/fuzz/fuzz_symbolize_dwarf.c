// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the symbolizer with source lines and inlined frames (its
 * ELF symbols, and the DWARF read through libdw) over arbitrary bytes.
 *
 * The symbolizer opens files by path, so the input is written to a memfd
 * and handed over as /proc/self/fd/N (no disk, no cleanup). The offsets
 * looked up are spread over the input's .text when its section headers
 * name one (so mutated line programs and DIEs are reached from real code
 * addresses), plus a few fixed ones; each both as an exact pc and as a
 * return address.
 */
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ustack/ustack.h>
#include <ustack/symbolize.h>
#include "elf/elf_file.h"

static int quiet(enum ustack_print_level l, const char *f, va_list ap) { return 0; }

#define NR_TEXT 48

static void lookup(struct ustack_symbolizer *s, uint64_t off)
{
	struct ustack_sym chain[16];

	for (uint32_t fl = 0; fl <= USTACK_SYM_EXACT_PC; fl += USTACK_SYM_EXACT_PC) {
		int n = ustack_symbolizer__symbolize_frames(s, 1, off, fl, chain, 16, sizeof(chain[0]));

		/* touch every string handed out (ASan checks they are live) */
		for (int i = 0; i < n && i < 16; i++) {
			volatile size_t sink = 0;

			if (chain[i].name)
				sink += strlen(chain[i].name);
			if (chain[i].file)
				sink += strlen(chain[i].file);
			(void)sink;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ustack_symbolizer_opts so = { .sz = sizeof(so), .flags = USTACK_SYMBOLIZER_NO_DEBUG_DIR };
	struct ustack_file_map fm = { .file_id = 1, .kind = USTACK_VMA_FILE };
	struct ustack_symbolizer *s;
	struct ustack_elf_section text = { 0 };
	struct ustack_elf *e;
	char path[64];
	int fd;

	ustack_set_print(quiet);
	fd = memfd_create("fuzz_symbolize_dwarf", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	e = ustack_elf__open_mem(data, size, "fuzz");
	if (e) {
		if (ustack_elf__section(e, ".text", &text))
			memset(&text, 0, sizeof(text));
		ustack_elf__close(e);
	}
	fm.path = path;
	s = ustack_symbolizer__new(&so);
	if (s && !ustack_symbolizer__add_file(s, &fm)) {
		if (text.size && text.offset < size) {
			uint64_t end = text.offset + (text.size < size - text.offset ? text.size : size - text.offset);
			uint64_t step = (end - text.offset) / NR_TEXT + 1;

			for (uint64_t off = text.offset; off < end; off += step)
				lookup(s, off + 1);
		}
		for (uint64_t off = 0; off < 0x3000; off += 0x333)
			lookup(s, off);
		/* a second pass is answered from the cache */
		lookup(s, text.offset + 1);
	}
	ustack_symbolizer__free(s);
	close(fd);
	return 0;
}
