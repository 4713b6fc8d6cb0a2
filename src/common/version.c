// SPDX-License-Identifier: MIT
/* ustack_version(): the version compiled into the library, so that a
 * program can tell which library it runs with (the header's
 * USTACK_VERSION_STRING is the one it was built against). */
#include <ustack/ustack.h>

USTACK_API const char *ustack_version(void)
{
	return USTACK_VERSION_STRING;
}
