// SPDX-License-Identifier: MIT
/* Fuzz target: the 'FSMB' binary export reader (untrusted files). Whatever
 * the input, open either fails cleanly or yields entries that lie inside
 * the input and can all be found by id. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/stackmap.h>

static int quiet(enum ustack_print_level l, const char *fmt, va_list ap)
{
	(void)l; (void)fmt; (void)ap;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[128];
	struct ustack_stackmap_bin_opts o = { .sz = sizeof(o), .errbuf = err,
					      .errbuf_sz = sizeof(err) };
	struct ustack_stackmap_bin *bin;
	uint64_t sum = 0;

	ustack_set_print(quiet);
	bin = ustack_stackmap_bin__open(data, size, &o);
	if (!bin)
		return 0;
	for (size_t i = 0; i < ustack_stackmap_bin__nr_stacks(bin); i++) {
		struct ustack_stackmap_bin_entry e, f;

		if (ustack_stackmap_bin__entry(bin, i, &e))
			abort();
		if (e.offset + 16 + (uint64_t)e.nr * 8 > size)
			abort();
		for (uint32_t k = 0; k < e.nr; k++)
			sum += e.ips[k];
		if (ustack_stackmap_bin__find(bin, e.stack_id, &f) || f.offset != e.offset)
			abort();
	}
	ustack_stackmap_bin__free(bin);
	return (int)(sum & 0);
}
