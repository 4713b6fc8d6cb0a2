// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the raw BTF scan (src/bpfload/btf_scan.c) over any bytes.
 * It returns 0 or -EBADMSG, nothing else; its answers are consistent: a
 * FUNC found has an id and a prototype id, both at least 1 and distinct, a
 * parameter count a vlen can hold, and each name asked alone gets the same
 * answer as asked with the others (in any order); a blob refused with
 * nothing asked is refused whatever is asked.
 * The corpus (tests/fuzz/corpus/btf_scan) is written by
 * `build/check/tests/test_btf_scan --seeds DIR`: a hand-built blob with a
 * record of every kind and FUNCs "f" and "g", the same with a kind not
 * known, and the running kernel's first records.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "bpfload/btf_scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = {
	"f", "g", "", "int", "bpf_task_work_schedule_resume", "trace_call_bpf_faultable",
};
#define NR (sizeof(names) / sizeof(names[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ustack_btf_func fn[NR], rev[NR];
	int ret, none = ustack_btf_scan_funcs(data, size, NULL, 0);

	if (none != 0 && none != -EBADMSG)
		abort();
	for (size_t i = 0; i < NR; i++) {
		fn[i].name = names[i];
		rev[i].name = names[NR - 1 - i];
	}
	ret = ustack_btf_scan_funcs(data, size, fn, NR);
	if ((ret != 0 && ret != -EBADMSG) || (none && !ret))
		abort();
	if (ret != ustack_btf_scan_funcs(data, size, rev, NR))
		abort();
	if (ret)
		return 0;
	for (size_t i = 0; i < NR; i++) {
		const struct ustack_btf_func *r = &rev[NR - 1 - i];
		struct ustack_btf_func one = { .name = names[i] };
		int ret1 = ustack_btf_scan_funcs(data, size, &one, 1);

		if (fn[i].found && (!fn[i].id || !fn[i].proto_id || fn[i].id == fn[i].proto_id ||
				    fn[i].nr_params > 0xffff))
			abort();
		if (!fn[i].found && (fn[i].id || fn[i].proto_id || fn[i].nr_params))
			abort();
		if (r->found != fn[i].found || r->id != fn[i].id || r->proto_id != fn[i].proto_id ||
		    r->nr_params != fn[i].nr_params)
			abort();
		/* alone, only its own prototype is checked: the others' may be bad */
		if (ret1 != 0 || one.found != fn[i].found || one.id != fn[i].id ||
		    one.proto_id != fn[i].proto_id || one.nr_params != fn[i].nr_params)
			abort();
	}
	return 0;
}
