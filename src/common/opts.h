/* SPDX-License-Identifier: MIT */
/*
 * Checking a public opts struct (libbpf's pattern: first field size_t sz).
 * A caller built against an older header passes a smaller sz: the fields
 * it does not have read as their default. A caller built against a newer
 * header passes a larger sz: accepted only if every byte we do not know
 * is zero, since a non-zero one asks for something this library cannot do.
 */
#ifndef USTACK_COMMON_OPTS_H
#define USTACK_COMMON_OPTS_H

#include <stddef.h>

static inline int ustack_opts_valid(const void *opts, size_t user_sz, size_t our_sz)
{
	const unsigned char *p = opts;

	if (!opts)
		return 1;
	if (user_sz < sizeof(size_t))
		return 0;
	for (size_t i = our_sz; i < user_sz; i++)
		if (p[i])
			return 0;
	return 1;
}

/* Non-zero when @opts is NULL or acceptable as a struct of type @type. */
#define OPTS_VALID(opts, type) \
	(!(opts) || ustack_opts_valid((opts), (opts)->sz, sizeof(type)))
/* Non-zero when the caller's struct is long enough to hold @field. */
#define OPTS_HAS(opts, field) \
	((opts) && (opts)->sz >= offsetof(__typeof__(*(opts)), field) + sizeof((opts)->field))
/* @field, or @def when the caller's struct does not have it (or no opts). */
#define OPTS_GET(opts, field, def) (OPTS_HAS(opts, field) ? (opts)->field : (def))

#endif
