/* SPDX-License-Identifier: MIT */
/* Numbers written in place, for the output paths that print a line per
 * frame or per event (report, snapshot): printf() costs about a thousand
 * instructions a call, these a few dozen. */
#ifndef USTACK_CLI_FMT_H
#define USTACK_CLI_FMT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* @v in decimal, at least @width (<= 20) digits, zero-padded, written at
 * @p; returns the end. Two digits a step. */
static inline char *fmt_dec(char *p, uint64_t v, int width)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233"
				    "34353637383940414243444546474849505152535455565758596061626364656667"
				    "6869707172737475767778798081828384858687888990919293949596979899";
	int n = 1;
	char *e;

	for (uint64_t x = v; x >= 10 && n < 20; x /= 10)
		n++;
	if (n < width)
		n = width;
	e = p + n;
	for (p = e; v >= 10; v /= 100) {
		p -= 2;
		memcpy(p, pairs + 2 * (v % 100), 2);
	}
	if (v)
		*--p = (char)('0' + v);
	while (p > e - n)
		*--p = '0';
	return e;
}

/* @v in lowercase hex without a prefix ("%llx"), at @p (at most 16
 * bytes); returns the end */
static inline char *fmt_hex(char *p, uint64_t v)
{
	static const char dg[] = "0123456789abcdef";
	int n = v ? (67 - __builtin_clzll(v)) / 4 : 1;

	for (int i = n - 1; i >= 0; i--, v >>= 4)
		p[i] = dg[v & 15];
	return p + n;
}

/* To @f without the stream lock (the CLI writes its output from one
 * thread): the string @s, or the bytes from @b up to @end. */
static inline void put_str(FILE *f, const char *s)
{
	fputs_unlocked(s, f);
}

static inline void put_buf(FILE *f, const char *b, const char *end)
{
	fwrite_unlocked(b, 1, (size_t)(end - b), f);
}

#endif
