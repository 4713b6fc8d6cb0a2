// SPDX-License-Identifier: MIT
/* The library's single print callback (libbpf's libbpf_set_print model). */
#include <stdarg.h>
#include <stdio.h>

#include "common/log.h"

static int default_print(enum ustack_print_level level, const char *fmt, va_list ap)
{
	if (level > USTACK_WARN)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static ustack_print_fn_t print_fn = default_print;

USTACK_API ustack_print_fn_t ustack_set_print(ustack_print_fn_t fn)
{
	ustack_print_fn_t old = print_fn;

	print_fn = fn;
	return old;
}

void ustack_log(enum ustack_print_level level, const char *fmt, ...)
{
	ustack_print_fn_t fn = print_fn;
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	fn(level, fmt, ap);
	va_end(ap);
}
