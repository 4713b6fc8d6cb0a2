// SPDX-License-Identifier: MIT
/*
 * The FILE_CONTENT records of a trace, read before a report's main pass:
 * the recorder captures files off the event path, so a file's content
 * record comes after the stacks that first use it, and a report that
 * names stacks as it reads them would meet the file before its content.
 */
#include <errno.h>

#include <ustack/symbolize.h>
#include <ustack/trace.h>

#include "symbolize/symbolize_internal.h"
#include "trace/trace.h"

long ustack_symbolizer__load_trace_contents(struct ustack_symbolizer *s, const char *path,
					    uint64_t *conflicts)
{
	struct ustack_trace_reader_opts ro = { .sz = sizeof(ro),
					       .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_trace_reader *r = ustack_trace_reader__open(path, &ro);
	struct ustack_trace_record rec;
	long added = 0;
	int ret;

	if (!r)
		return -errno;
	/* the report's own pass checks the rest */
	ustack_trace_reader__skim(r, 1u << USTACK_TRACE_FILE_MAP | 1u << USTACK_TRACE_FILE_CONTENT);
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		if (rec.type == USTACK_TRACE_FILE_MAP)
			ret = ustack_symbolizer__add_file(s, &rec.file_map);
		else if (rec.type == USTACK_TRACE_FILE_CONTENT &&
			 rec.file_content.algo == USTACK_TRACE_HASH_SHA256)
			ret = ustack_symbolizer__set_file_content(s, rec.file_content.file_id,
								  rec.file_content.hash,
								  rec.file_content.size);
		else
			continue;
		if (ret == -ENOMEM) {
			ustack_trace_reader__close(r);
			return ret;
		}
		if (ret == -EEXIST && conflicts)
			(*conflicts)++;
		added += rec.type == USTACK_TRACE_FILE_CONTENT && !ret;
	}
	ustack_trace_reader__close(r);
	return added;
}
