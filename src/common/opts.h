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

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

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

/*
 * Fill a caller's output struct of @dst_sz bytes (the size it was built
 * with) from ours of @src_sz bytes: the fields both know are copied, the
 * fields only a newer caller knows are zeroed ("not counted"), and an
 * older caller's shorter struct is never written past its end.
 */
static inline void ustack_copy_out(void *dst, size_t dst_sz, const void *src, size_t src_sz)
{
	if (dst_sz <= src_sz) {
		memcpy(dst, src, dst_sz);
	} else {
		memcpy(dst, src, src_sz);
		memset((char *)dst + src_sz, 0, dst_sz - src_sz);
	}
}

/*
 * The error message of a public call (docs/api.md, "Errors"): every opts
 * struct of a call that can fail for a reason errno does not tell carries
 * char *errbuf; size_t errbuf_sz; (in that order, same names). NULL errbuf
 * or errbuf_sz 0: no message. The message is one line without '\n', cut to
 * fit and always NUL-terminated.
 */
__attribute__((format(printf, 3, 4)))
static inline void ustack_errbuf_set(char *buf, size_t sz, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !sz)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sz, fmt, ap);
	va_end(ap);
}

/* Put a message in @opts->errbuf when the caller's struct has one. */
#define OPTS_SET_ERR(opts, ...) \
	ustack_errbuf_set(OPTS_GET(opts, errbuf, (char *)NULL), OPTS_GET(opts, errbuf_sz, 0), __VA_ARGS__)

#endif
