// SPDX-License-Identifier: MIT
/* Record names shared by the trace writer and reader. */
#include "trace/trace.h"

const char *ustack_trace_record_name(unsigned int type)
{
	static const char *const names[] = {
		[USTACK_TRACE_HEADER] = "HEADER",
		[USTACK_TRACE_EVENT_DESC] = "EVENT_DESC",
		[USTACK_TRACE_THREAD] = "THREAD",
		[USTACK_TRACE_EVENT] = "EVENT",
		[USTACK_TRACE_USER_STACK] = "USER_STACK",
		[USTACK_TRACE_STACK] = "STACK",
		[USTACK_TRACE_FILE_MAP] = "FILE_MAP",
		[USTACK_TRACE_LOST] = "LOST",
		[USTACK_TRACE_KSYM] = "KSYM",
		[USTACK_TRACE_END] = "END",
		[USTACK_TRACE_JITSYM] = "JITSYM",
		[USTACK_TRACE_FILE_CONTENT] = "FILE_CONTENT",
		[USTACK_TRACE_PYFUNC] = "PYFUNC",
	};

	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "unknown";
}
