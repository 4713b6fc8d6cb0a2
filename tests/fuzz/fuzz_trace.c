// SPDX-License-Identifier: MIT
/* Fuzz target: the trace reader over arbitrary bytes (file header
 * included), strict and extract modes, with the stitcher fed. Whatever the
 * input: no crash, records lie inside the input, every stack id a record
 * refers to can be looked up, and an error names an offset inside it.
 * Each input is also read with its checksums fixed up, or the fuzzer would
 * rarely get past the CRC into the record decoders. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/trace.h>
#include "common/crc32.h"
#include "trace/trace.h"

static int quiet(enum ustack_print_level l, const char *fmt, va_list ap)
{
	(void)l; (void)fmt; (void)ap;
	return 0;
}

static void run(const uint8_t *data, size_t size, uint32_t flags)
{
	struct ustack_trace_reader_opts o = { .sz = sizeof(o), .flags = flags,
					      .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_trace_reader *r = ustack_trace_reader__open_mem(data, size, &o);
	struct ustack_trace_stitcher *s = ustack_trace_stitcher__new();
	struct ustack_trace_record rec;
	struct ustack_trace_stitched out;
	uint64_t sum = 0;
	int ret;

	if (!r || !s)
		abort();
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		struct ustack_trace_stack st;
		struct ustack_file_map fm;
		struct ustack_trace_ksym ks;

		if (rec.offset + rec.size > size || rec.size < 2)
			abort();
		switch (rec.type) {
		case USTACK_TRACE_EVENT:
			if (rec.event.kstack_id != USTACK_TRACE_NO_STACK) {
				if (ustack_trace_reader__stack(r, USTACK_TRACE_KSTACK, rec.event.kstack_id, &st))
					abort();
				for (uint32_t i = 0; i < st.nr; i++)
					if (!ustack_trace_reader__ksym(r, st.ips[i], &ks))
						sum += strlen(ks.name);
			}
			break;
		case USTACK_TRACE_USER_STACK:
			if (rec.user_stack.stack_id != USTACK_TRACE_NO_STACK) {
				if (ustack_trace_reader__stack(r, USTACK_TRACE_USTACK, rec.user_stack.stack_id, &st))
					abort();
				for (uint32_t i = 0; i < st.nr; i++)
					if (st.frames[i].file_id &&
					    ustack_trace_reader__file_map(r, st.frames[i].file_id, &fm))
						abort();
			}
			break;
		case USTACK_TRACE_FILE_MAP:
			sum += strlen(rec.file_map.path) + rec.file_map.build_id_size;
			break;
		case USTACK_TRACE_THREAD:
			sum += strlen(rec.thread.comm);
			break;
		case USTACK_TRACE_PYFUNC: {
			struct ustack_trace_pyfunc pf;

			/* handed out only valid, and known to the lookup as read */
			if (!rec.pyfunc.id || rec.pyfunc.id >> (64 - USTACK_TRACE_PY_LINE_BITS) ||
			    !*rec.pyfunc.name || !*rec.pyfunc.file ||
			    ustack_trace_reader__pyfunc(r, rec.pyfunc.id, &pf) ||
			    strcmp(pf.name, rec.pyfunc.name) || strcmp(pf.file, rec.pyfunc.file))
				abort();
			sum += strlen(pf.name) + strlen(pf.file);
			break;
		}
		case USTACK_TRACE_FILE_CONTENT:
			/* only SHA-256 is handed out, and only for a defined file */
			if (rec.file_content.algo != USTACK_TRACE_HASH_SHA256 ||
			    ustack_trace_reader__file_map(r, rec.file_content.file_id, &fm))
				abort();
			sum += rec.file_content.hash[0];
			break;
		}
		if (ustack_trace_stitcher__push(s, &rec))
			abort();
	}
	if (ret < 0) {
		if (ustack_trace_reader__error_offset(r) > size || !ustack_trace_reader__error(r)[0])
			abort();
		if (ustack_trace_reader__next(r, &rec, sizeof(rec)) != ret)
			abort();
	}
	ustack_trace_stitcher__push(s, NULL);
	while (ustack_trace_stitcher__pop(s, &out))
		sum += out.result;
	ustack_trace_stitcher__free(s);
	ustack_trace_reader__close(r);
	(void)sum;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* Recompute the file header's and every chunk's CRC, as far as the chunk
 * headers lead. */
static void fix_crcs(uint8_t *d, size_t size)
{
	size_t pos;

	if (size < 32)
		return;
	put32(d + 28, ustack_crc32(0, d, 28));
	pos = d[17] >= 32 ? d[17] : 32;
	while (pos + 20 <= size) {
		uint32_t plen;

		memcpy(&plen, d + pos + 8, 4);
		if (plen > size - pos - 20)
			break;
		put32(d + pos + 16, ustack_crc32(ustack_crc32(0, d + pos, 16), d + pos + 20, plen));
		pos += 20 + (size_t)plen;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed = malloc(size ? size : 1);

	ustack_set_print(quiet);
	run(data, size, 0);
	run(data, size, USTACK_TRACE_READER_EXTRACT);
	if (!fixed)
		return 0;
	memcpy(fixed, data, size);
	fix_crcs(fixed, size);
	run(fixed, size, 0);
	run(fixed, size, USTACK_TRACE_READER_EXTRACT);
	free(fixed);
	return 0;
}
