// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/cache_dir.h"

const char *ustack_cache_dir(char *buf, size_t size)
{
	const char *env = getenv("USTACK_CACHE_DIR"), *home = getenv("HOME");

	if (env)
		return env;
	if (geteuid() == 0)
		return "/var/cache/ustack";
	if (!home || !*home)
		return "";
	snprintf(buf, size, "%s/.cache/ustack", home);
	return buf;
}
