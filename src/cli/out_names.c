// SPDX-License-Identifier: MIT
/*
 * The rules of out_names.h. Each byte has a class (a bit); each rule has a
 * mask of the classes it must look at. A name is scanned until the first
 * byte whose class is in the mask (a NUL and every byte >= 0x80 always
 * are: UTF-8 must be checked by every rule); up to there it is written as
 * it is. From there step() decides, one character at a time, what to write:
 * the bytes unchanged, or their replacement.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_fmt.h"
#include "cli/out_names.h"

enum {
	C_END = 1 << 0,    /* NUL */
	C_CTL = 1 << 1,    /* 0x01-0x1f, 0x7f */
	C_HIGH = 1 << 2,   /* 0x80-0xff */
	C_SEMI = 1 << 3,   /* ; */
	C_SPACE = 1 << 4,  /* ' ' */
	C_LPAR = 1 << 5,   /* ( */
	C_RPAR = 1 << 6,   /* ) */
	C_DASH = 1 << 7,   /* - */
	C_QUOTE = 1 << 8,  /* " */
	C_BSLASH = 1 << 9, /* \ */
	C_XML = 1 << 10,   /* < > & ' */
};

#define ALWAYS (C_END | C_HIGH)

static const uint16_t fmt_mask[OUT_NAME__COUNT] = {
	[OUT_NAME_LINE] = ALWAYS | C_CTL,
	[OUT_NAME_LINE_WORD] = ALWAYS | C_CTL | C_SPACE,
	[OUT_NAME_FOLDED] = ALWAYS | C_CTL | C_SEMI,
	[OUT_NAME_FOLDED_SRC] = ALWAYS | C_CTL | C_SEMI | C_SPACE,
	[OUT_NAME_PS_COMM] = ALWAYS | C_CTL | C_SEMI | C_SPACE,
	[OUT_NAME_PS_EVENT] = ALWAYS | C_CTL | C_SPACE,
	[OUT_NAME_PS_FUNC] = ALWAYS | C_CTL | C_LPAR | C_DASH,
	[OUT_NAME_PS_DSO] = ALWAYS | C_CTL | C_LPAR | C_RPAR,
	[OUT_NAME_JSON] = ALWAYS | C_CTL | C_QUOTE | C_BSLASH,
	[OUT_NAME_XML] = ALWAYS | C_CTL | C_QUOTE | C_XML,
	[OUT_NAME_UTF8] = ALWAYS,
};

#define R16(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
static const uint16_t byte_class[256] = {
	/* 0x00 */ C_END, C_CTL, C_CTL, C_CTL, C_CTL, C_CTL, C_CTL, C_CTL,
	C_CTL, C_CTL, C_CTL, C_CTL, C_CTL, C_CTL, C_CTL, C_CTL,
	/* 0x10 */ R16(C_CTL),
	/* 0x20 */ C_SPACE, 0, C_QUOTE, 0, 0, 0, C_XML, C_XML,
	C_LPAR, C_RPAR, 0, 0, 0, C_DASH, 0, 0,
	/* 0x30 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, C_SEMI, C_XML, 0, C_XML, 0,
	/* 0x40 */ R16(0),
	/* 0x50 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, C_BSLASH, 0, 0, 0,
	/* 0x60 */ R16(0),
	/* 0x70 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, C_CTL,
	/* 0x80 */ R16(C_HIGH), R16(C_HIGH), R16(C_HIGH), R16(C_HIGH),
	R16(C_HIGH), R16(C_HIGH), R16(C_HIGH), R16(C_HIGH),
};
#undef R16

/* the rules that write a text line: control characters as \xNN */
static int line_rule(enum out_name_fmt fmt)
{
	return fmt <= OUT_NAME_PS_DSO;
}

size_t out_name_utf8(const unsigned char *s, size_t n, unsigned int *cp)
{
	unsigned int c;
	size_t len;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, UTF-16 surrogates, beyond U+10FFFF */
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) || c > 0x10ffff ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* the white space of JavaScript's \s beyond ASCII (the Firefox Profiler's
 * regular expressions skip it before a function name) */
static int js_space(unsigned int cp)
{
	return cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
	       cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000 || cp == 0xfeff;
}

/* are s[0..i) only white space, as those readers see it? Walked back
 * from @i, so that a name of many '(' costs no more than one of few: the
 * walk ends at the first character that is not white space. (A lead byte
 * is never inside another sequence, so a valid sequence that ends at j
 * starts a character.) */
static int only_space_before(const unsigned char *s, size_t i)
{
	size_t j = i;

	while (j > 0) {
		unsigned int cp;

		if (s[j - 1] == ' ' || s[j - 1] == '\t')
			j--;
		else if (j >= 2 && out_name_utf8(s + j - 2, 2, &cp) == 2 && js_space(cp))
			j -= 2;
		else if (j >= 3 && out_name_utf8(s + j - 3, 3, &cp) == 3 && js_space(cp))
			j -= 3;
		else
			return 0;
	}
	return 1;
}

/* \xNN for each of the @n bytes at @s */
static int hex_bytes(char *out, const unsigned char *s, size_t n)
{
	static const char dg[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[4 * i] = '\\';
		out[4 * i + 1] = 'x';
		out[4 * i + 2] = dg[s[i] >> 4];
		out[4 * i + 3] = dg[s[i] & 15];
	}
	return (int)(4 * n);
}

static int put_lit(char *out, const char *lit)
{
	size_t n = strlen(lit);

	memcpy(out, lit, n);
	return (int)n;
}

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

/*
 * What rule @fmt writes for the character at @s[i] (@n bytes in all): its
 * output at @out (room for 16 bytes) and its length, or -1 when the bytes
 * stay as they are. *@k: how many input bytes it stands for (a valid
 * UTF-8 sequence is one character, an invalid byte another).
 */
static int step(enum out_name_fmt fmt, const unsigned char *s, size_t n, size_t i, char *out,
		size_t *k)
{
	unsigned int c = s[i], cp;
	int line = line_rule(fmt);

	*k = 1;
	if (c >= 0x80) {
		size_t len = out_name_utf8(s + i, n - i, &cp);

		if (!len)
			return line ? hex_bytes(out, s + i, 1) : put_lit(out, REPLACEMENT);
		*k = len;
		/* C1 controls (a terminal obeys U+009B as CSI) and the
		 * line breaks of JavaScript (which the Firefox Profiler's
		 * importer, splitting on \n, then cannot match across) */
		if (line && (cp < 0xa0 || cp == 0x2028 || cp == 0x2029))
			return hex_bytes(out, s + i, len);
		/* a comm that starts with white space is not the start of a
		 * sample for the Firefox Profiler (its "^\S") */
		if (fmt == OUT_NAME_PS_COMM && i == 0 && js_space(cp))
			return hex_bytes(out, s + i, len);
		/* JSON allows both, JavaScript before ES2019 not in a
		 * string literal: a file pasted into a script stays one */
		if (fmt == OUT_NAME_JSON && (cp == 0x2028 || cp == 0x2029))
			return put_lit(out, cp == 0x2028 ? "\\u2028" : "\\u2029");
		/* the two non-characters XML excludes from Char */
		if (fmt == OUT_NAME_XML && (cp == 0xfffe || cp == 0xffff))
			return put_lit(out, REPLACEMENT);
		return -1;
	}
	if (c < 0x20 || c == 0x7f) {
		if (line)
			return hex_bytes(out, s + i, 1);
		if (fmt == OUT_NAME_JSON) {
			memcpy(out, "\\u00", 4);
			out[4] = "0123456789abcdef"[c >> 4];
			out[5] = "0123456789abcdef"[c & 15];
			return 6;
		}
		/* XML 1.0 allows DEL; tab, newline and CR it allows too, but
		 * a newline in a frame's title would start another line of the
		 * tooltip (the script takes the name from the first) and a CR
		 * is read as one */
		if (fmt == OUT_NAME_XML && c != 0x7f)
			return put_lit(out, REPLACEMENT);
		return -1;
	}
	switch (c) {
	case ';':
		if (fmt == OUT_NAME_FOLDED || fmt == OUT_NAME_FOLDED_SRC || fmt == OUT_NAME_PS_COMM)
			return put_lit(out, ":");
		break;
	case ' ':
		if (fmt == OUT_NAME_LINE_WORD || fmt == OUT_NAME_PS_EVENT)
			return put_lit(out, "\\x20");
		if (fmt == OUT_NAME_FOLDED_SRC)
			return put_lit(out, "_");
		/* stackcollapse-perf.pl takes the first " DIGITS" after the
		 * comm for the pid ("worker 1 123/123" is comm "worker", pid 1) */
		if (fmt == OUT_NAME_PS_COMM && (i == 0 || (i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9')))
			return put_lit(out, "_");
		break;
	case '(':
		/* both readers drop a frame whose function starts with '('
		 * (a process name, in some perf versions) */
		if (fmt == OUT_NAME_PS_DSO || (fmt == OUT_NAME_PS_FUNC && only_space_before(s, i)))
			return put_lit(out, "\\x28");
		break;
	case ')':
		if (fmt == OUT_NAME_PS_DSO)
			return put_lit(out, "\\x29");
		break;
	case '-':
		/* stackcollapse-perf.pl splits a function at "->" into frames */
		if (fmt == OUT_NAME_PS_FUNC && i + 1 < n && s[i + 1] == '>') {
			*k = 2;
			return put_lit(out, "-\\x3e");
		}
		break;
	case '"':
		if (fmt == OUT_NAME_JSON)
			return put_lit(out, "\\\"");
		if (fmt == OUT_NAME_XML)
			return put_lit(out, "&quot;");
		break;
	case '\\':
		if (fmt == OUT_NAME_JSON)
			return put_lit(out, "\\\\");
		break;
	case '<':
		if (fmt == OUT_NAME_XML)
			return put_lit(out, "&lt;");
		break;
	case '>':
		if (fmt == OUT_NAME_XML)
			return put_lit(out, "&gt;");
		break;
	case '&':
		if (fmt == OUT_NAME_XML)
			return put_lit(out, "&amp;");
		break;
	case '\'':
		if (fmt == OUT_NAME_XML)
			return put_lit(out, "&#39;");
		break;
	}
	return -1;
}

/* the first byte of @p[from..n) the rule changes (n: none); the rules
 * that look at what comes before see all of @p */
static size_t clean_from(enum out_name_fmt fmt, const unsigned char *p, size_t n, size_t i)
{
	uint16_t mask = fmt_mask[fmt];

	while (i < n) {
		char tmp[16];
		size_t k;

		if (!(byte_class[p[i]] & mask)) {
			i++;
			continue;
		}
		if (step(fmt, p, n, i, tmp, &k) >= 0)
			return i;
		i += k;
	}
	return n;
}

size_t out_name_clean(enum out_name_fmt fmt, const char *s, size_t n)
{
	return clean_from(fmt, (const unsigned char *)s, n, 0);
}

size_t out_name_clean_str(enum out_name_fmt fmt, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint16_t mask = fmt_mask[fmt];
	size_t i = 0;

	while (!(byte_class[p[i]] & mask))
		i++;
	if (!p[i])
		return i;
	/* something to look at: the rest by its length */
	return clean_from(fmt, p, i + strlen(s + i), i);
}

/* @p[from..n) under the rule, at @dst unless NULL; returns the length */
static size_t escape_from(enum out_name_fmt fmt, const unsigned char *p, size_t n, size_t i,
			  char *dst)
{
	uint16_t mask = fmt_mask[fmt];
	size_t o = 0;

	while (i < n) {
		size_t start = i, k;
		char tmp[16];
		int w;

		while (i < n && !(byte_class[p[i]] & mask))
			i++;
		if (i > start) {
			if (dst)
				memcpy(dst + o, p + start, i - start);
			o += i - start;
		}
		if (i == n)
			break;
		w = step(fmt, p, n, i, tmp, &k);
		if (w < 0) {
			if (dst)
				memcpy(dst + o, p + i, k);
			o += k;
		} else {
			if (dst)
				memcpy(dst + o, tmp, (size_t)w);
			o += (size_t)w;
		}
		i += k;
	}
	return o;
}

size_t out_name_escape(enum out_name_fmt fmt, const char *s, size_t n, char *dst)
{
	return escape_from(fmt, (const unsigned char *)s, n, 0, dst);
}

void out_name_put(FILE *f, enum out_name_fmt fmt, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint16_t mask = fmt_mask[fmt];
	size_t i = 0, n;

	if (!s)
		return;
	/* the common case: nothing to change, one pass and one write */
	while (!(byte_class[p[i]] & mask))
		i++;
	if (!p[i]) {
		put_buf(f, s, s + i);
		return;
	}
	put_buf(f, s, s + i);
	n = i + strlen(s + i);
	while (i < n) {
		size_t start = i, k;
		char tmp[16];
		int w;

		while (i < n && !(byte_class[p[i]] & mask))
			i++;
		put_buf(f, s + start, s + i);
		if (i == n)
			break;
		w = step(fmt, p, n, i, tmp, &k);
		if (w < 0)
			put_buf(f, s + i, s + i + k);
		else
			put_buf(f, tmp, tmp + w);
		i += k;
	}
}

const char *out_name_str(enum out_name_fmt fmt, const char *s, char **to_free)
{
	size_t n, clean, len;
	char *d;

	*to_free = NULL;
	if (!s)
		return NULL;
	n = strlen(s);
	clean = out_name_clean(fmt, s, n);
	if (clean == n)
		return s;
	len = clean + escape_from(fmt, (const unsigned char *)s, n, clean, NULL);
	d = malloc(len + 1);
	if (!d)
		return NULL;
	memcpy(d, s, clean);
	escape_from(fmt, (const unsigned char *)s, n, clean, d + clean);
	d[len] = 0;
	*to_free = d;
	return d;
}

void out_name_json(FILE *f, const char *s)
{
	putc_unlocked('"', f);
	out_name_put(f, OUT_NAME_JSON, s);
	putc_unlocked('"', f);
}

size_t out_name_chars(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s), n = 0;

	while (left) {
		unsigned int cp;
		size_t k = out_name_utf8(p, left, &cp);

		k = k ? k : 1;
		p += k, left -= k, n++;
	}
	return n;
}

size_t out_name_put_chars(FILE *f, enum out_name_fmt fmt, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, chars = 0;

	while (i < n && chars < max) {
		unsigned int cp;
		size_t k, len = out_name_utf8(p + i, n - i, &cp);
		char tmp[16];
		int w = step(fmt, p, n, i, tmp, &k);

		if (w < 0)
			put_buf(f, s + i, s + i + k);
		else
			put_buf(f, tmp, tmp + w);
		/* a character is a sequence or a byte; step() may take two
		 * ASCII characters at once ("->") */
		chars += len && k == len ? 1 : k;
		i += k;
	}
	return chars;
}
