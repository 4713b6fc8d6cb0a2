// SPDX-License-Identifier: MIT
/* Fuzz target: the parts of src/symbolize/debugfind.c that read untrusted
 * bytes. The first byte picks the part, the rest is its input:
 *   0: an ELF file: .gnu_debuglink parsing and name check, then the whole
 *      search with no file system and no network (MiniDebugInfo decoding,
 *      zstd copy of compressed sections included)
 *   1: an xz stream (MiniDebugInfo)
 *   2: a compressed section (Elf64_Chdr + zlib or zstd data) */
#include <stdint.h>
#include <stdlib.h>
#include <stddef.h>

#include <ustack/ustack.h>
#include "elf/elf_file.h"
#include "symbolize/debugfind.h"

static int quiet(enum ustack_print_level l, const char *f, va_list ap) { return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ustack_debugfind_opts o = {
		.sz = sizeof(o),
		.cache_dir = "", /* nothing written */
		.debug_dir = "/nonexistent-ustack-fuzz",
		.flags = USTACK_DEBUGFIND_NO_DEBUG_DIR | USTACK_DEBUGFIND_NO_DEBUGINFOD,
	};
	struct ustack_debug_found f;
	struct ustack_elf *e;
	const char *name;
	uint32_t crc;
	uint8_t *out, id[64];
	size_t n;
	int len;

	ustack_set_print(quiet);
	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
		e = ustack_elf__open_mem(data + 1, size - 1, "fuzz");
		if (!e)
			return 0;
		if (!ustack_elf__debuglink(e, &name, &crc))
			ustack_debuglink_name_check(name);
		len = ustack_elf__build_id(e, id, sizeof(id));
		/* no path: .gnu_debuglink's directories are not searched */
		if (!ustack_debugfind(&o, NULL, e, id, len > 0 ? (size_t)len : 0, &f, NULL, 0) &&
		    f.elf) {
			const char *sn;
			uint64_t start;

			ustack_elf__symbolize(f.elf, 0x1000, &sn, &start);
			ustack_elf__close(f.elf);
		}
		ustack_elf__close(e);
		break;
	case 1:
		if (!ustack_xz_decode(data + 1, size - 1, 1 << 20, &out, &n))
			free(out);
		break;
	case 2:
		if (!ustack_section_decompress(data + 1, size - 1, 1 << 20, &out, &n))
			free(out);
		break;
	}
	return 0;
}
