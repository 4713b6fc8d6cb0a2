/* SPDX-License-Identifier: MIT */
#ifndef USTACK_COMMON_GROW_H
#define USTACK_COMMON_GROW_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * Room for one more element in the ring *@p of *@cap elements of @elem
 * bytes holding @len from index *@head (wrapping): when full, a ring of
 * twice the capacity (from @first) with the elements in order from 0.
 * 0, or -ENOMEM (the ring unchanged).
 */
static inline int ustack_ring_grow(void **p, size_t *cap, size_t *head, size_t len, size_t elem,
				   size_t first)
{
	size_t ncap = *cap ? 2 * *cap : first, tail;
	unsigned char *np;

	if (len < *cap)
		return 0;
	if (ncap > SIZE_MAX / elem || !(np = malloc(ncap * elem)))
		return -ENOMEM;
	/* [head, cap) then [0, head) */
	tail = *cap - *head;
	if (len) {
		memcpy(np, (unsigned char *)*p + *head * elem, (tail < len ? tail : len) * elem);
		if (tail < len)
			memcpy(np + tail * elem, *p, (len - tail) * elem);
	}
	free(*p);
	*p = np;
	*cap = ncap;
	*head = 0;
	return 0;
}

#endif
