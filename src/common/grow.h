/* SPDX-License-Identifier: MIT */
#ifndef USTACK_COMMON_GROW_H
#define USTACK_COMMON_GROW_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Make room for @need elements of @elem bytes in the array *@p of *@cap
 * elements: the capacity doubles from @first. 0, or -ENOMEM (*@p and *@cap
 * unchanged).
 */
static inline int ustack_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t ncap = *cap ? *cap : first;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

#endif
