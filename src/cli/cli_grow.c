// SPDX-License-Identifier: MIT
/* Buffer growth for the CLI's output writers (report text, pprof). */
#include <stdint.h>
#include <stdlib.h>

#include "cli/cli.h"

int cli_grow(void **p, size_t *cap, size_t need)
{
	size_t ncap = *cap ? *cap : 256;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	np = realloc(*p, ncap);
	if (!np)
		return -1;
	*p = np;
	*cap = ncap;
	return 0;
}
