// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the /proc/PID/maps text parser and everything that runs
 * on its output (lookups, batch resolve, file ids, file_map iteration).
 * The corpus holds real /proc/PID/maps captures and edge cases.
 */
#include <stddef.h>
#include <stdint.h>

#include <ustack/procmaps.h>

static int quiet(enum ustack_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ustack_procmaps_opts o = { .sz = sizeof(o), .id_key = { 1, 2 } };
	struct ustack_procmaps *pm;
	struct ustack_resolved r[16];
	struct ustack_file_map fm;
	struct ustack_vma v;
	uint64_t pcs[16], addr = 0;
	size_t it = 0;
	int n = 0;

	ustack_set_print(quiet);
	pm = ustack_procmaps__open_text((const char *)data, size, &o);
	if (!pm)
		return 0;
	/* walk every mapping; probe its edges */
	while (n < 4096 && !ustack_procmaps__next(pm, addr, 0, &v)) {
		pcs[n % 16] = v.start;
		pcs[(n + 1) % 16] = v.end - 1;
		if (v.end <= addr || !v.end)
			break;
		addr = v.end;
		n++;
	}
	for (int i = 0; i < 16; i++)
		if (i >= n + 1)
			pcs[i] = (uint64_t)i * 0x1000;
	ustack_procmaps__resolve(pm, pcs, 16, r);
	for (int i = 0; i < 16; i++)
		ustack_procmaps__query(pm, pcs[i], &v);
	while (!ustack_procmaps__next_file_map(pm, &it, &fm))
		;
	/* parse it again into the same object: ids must survive a reload */
	ustack_procmaps__reload(pm, (const char *)data, size);
	ustack_procmaps__resolve(pm, pcs, 16, r);
	ustack_procmaps__close(pm);
	return 0;
}
