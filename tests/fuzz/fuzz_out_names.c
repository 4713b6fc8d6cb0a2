// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the name rules of the CLI's output formats
 * (src/cli/out_names.c, compiled in here: fuzz targets link only
 * libustack.a). Input: one byte choosing the rule, then the name (any bytes,
 * NUL included). Whatever the name, the output of each rule keeps the
 * promise docs/cli/report.md ("Names in the output") makes for it, checked
 * here by code of its own (not the module's UTF-8 decoder):
 *  - every rule: valid UTF-8, at most 6 bytes per input byte, the length
 *    out_name_escape() announces, unchanged when out_name_clean() says so
 *    (and that prefix unchanged in any case), and out_name_put() writes the
 *    same bytes;
 *  - line rules: no C0 control, DEL, C1 control, U+2028, U+2029; plus no
 *    space (words), no ';' (folded), perf-script's comm/function/module
 *    rules;
 *  - JSON: a valid string body (escapes well-formed, no raw control
 *    character, no raw '"');
 *  - XML: no < > " ', every '&' starts one of the five entities written,
 *    no control character, no U+FFFE/U+FFFF;
 *  - UTF-8: a valid input comes back unchanged.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/out_names.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* strict UTF-8 (RFC 3629): the code point at o[*i], advancing *i; -1 if
 * the bytes are not UTF-8 */
static long next_cp(const unsigned char *o, size_t n, size_t *i)
{
	unsigned char b = o[*i];
	size_t len = b < 0x80 ? 1 : (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 :
		     (b & 0xf8) == 0xf0 ? 4 : 0;
	long cp = len == 1 ? b : len == 2 ? b & 0x1f : len == 3 ? b & 0x0f : b & 0x07;
	static const long min[5] = { 0, 0, 0x80, 0x800, 0x10000 };

	if (!len || *i + len > n)
		return -1;
	for (size_t k = 1; k < len; k++) {
		if ((o[*i + k] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (o[*i + k] & 0x3f);
	}
	if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*i += len;
	return cp;
}

static int js_white(long cp)
{
	return cp == ' ' || (cp >= 9 && cp <= 13) || cp == 0xa0 || cp == 0x1680 ||
	       (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
	       cp == 0x205f || cp == 0x3000 || cp == 0xfeff;
}

static int is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static void check_json(const unsigned char *o, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (o[i] < 0x20 || o[i] == '"')
			abort();
		if (o[i] != '\\')
			continue;
		if (++i >= n)
			abort();
		if (o[i] == 'u') {
			if (n - i < 5)
				abort();
			for (int k = 1; k <= 4; k++)
				if (!is_hex(o[i + k]))
					abort();
			i += 4;
		} else if (!o[i] || !strchr("\"\\/bfnrt", o[i])) {
			abort();
		}
	}
}

static void check_xml(const unsigned char *o, size_t n)
{
	static const char *const ent[] = { "&lt;", "&gt;", "&amp;", "&quot;", "&#39;" };

	for (size_t i = 0; i < n; i++) {
		if (o[i] == '<' || o[i] == '>' || o[i] == '"' || o[i] == '\'' || o[i] < 0x20)
			abort();
		if (o[i] == '&') {
			size_t k;

			for (k = 0; k < 5; k++)
				if (n - i >= strlen(ent[k]) && !memcmp(o + i, ent[k], strlen(ent[k])))
					break;
			if (k == 5)
				abort();
		}
		/* U+FFFE, U+FFFF */
		if (o[i] == 0xef && i + 2 < n && o[i + 1] == 0xbf && (o[i + 2] == 0xbe || o[i + 2] == 0xbf))
			abort();
	}
}

static void check_rule(enum out_name_fmt fmt, const unsigned char *s, size_t n)
{
	size_t len = out_name_escape(fmt, (const char *)s, n, NULL);
	size_t clean = out_name_clean(fmt, (const char *)s, n);
	unsigned char *o = malloc(len + 1);
	size_t i = 0;
	int input_utf8 = 1;

	if (!o)
		return;
	if (len > OUT_NAME_MAX_GROWTH * n || clean > n)
		abort();
	if (out_name_escape(fmt, (const char *)s, n, (char *)o) != len)
		abort();
	o[len] = 0;
	/* what needs nothing is written as it is */
	if (len < clean || memcmp(o, s, clean) || (clean == n && (len != n || memcmp(o, s, n))))
		abort();
	for (size_t j = 0; j < n;)
		if (next_cp(s, n, &j) < 0) {
			input_utf8 = 0;
			break;
		}

	/* valid UTF-8, and the code points each rule excludes */
	while (i < len) {
		size_t at = i;
		long cp = next_cp(o, len, &i);

		if (cp < 0)
			abort();
		if (fmt <= OUT_NAME_PS_DSO &&
		    (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == 0x2028 || cp == 0x2029))
			abort();
		switch (fmt) {
		case OUT_NAME_LINE_WORD:
		case OUT_NAME_PS_EVENT:
			if (cp == ' ')
				abort();
			break;
		case OUT_NAME_FOLDED:
			if (cp == ';')
				abort();
			break;
		case OUT_NAME_FOLDED_SRC:
			if (cp == ';' || cp == ' ')
				abort();
			break;
		case OUT_NAME_PS_COMM:
			/* one frame for stackcollapse, a header for both readers */
			if (cp == ';' || (at == 0 && js_white(cp)) ||
			    (cp == ' ' && i < len && o[i] >= '0' && o[i] <= '9'))
				abort();
			break;
		case OUT_NAME_PS_DSO:
			if (cp == '(' || cp == ')')
				abort();
			break;
		case OUT_NAME_PS_FUNC:
			if (cp == '-' && i < len && o[i] == '>')
				abort();
			break;
		default:
			break;
		}
	}
	if (fmt == OUT_NAME_PS_FUNC) {
		/* past the white space the readers skip, no '(' first */
		size_t j = 0;
		long cp = 0;

		while (j < len && js_white(cp = next_cp(o, len, &j)))
			;
		if (cp == '(')
			abort();
	}
	if (fmt == OUT_NAME_JSON)
		check_json(o, len);
	if (fmt == OUT_NAME_XML)
		check_xml(o, len);
	if (fmt == OUT_NAME_UTF8 && input_utf8 && (len != n || memcmp(o, s, n)))
		abort();

	/* the stream writer writes the same (it stops at a NUL) */
	if (!memchr(s, 0, n)) {
		char *buf = NULL;
		size_t blen = 0;
		FILE *m = open_memstream(&buf, &blen);
		const char *str;
		char *copy = malloc(n + 1), *to_free;

		if (m && copy) {
			memcpy(copy, s, n);
			copy[n] = 0;
			out_name_put(m, fmt, copy);
			fclose(m);
			if (blen != len || memcmp(buf, o, len))
				abort();
			if (out_name_clean_str(fmt, copy) != clean)
				abort();
			str = out_name_str(fmt, copy, &to_free);
			if (str && (strlen(str) != len || memcmp(str, o, len) ||
				    (clean == n) != (str == copy)))
				abort();
			free(to_free);
			/* characters: as many as a strict decoder finds, an
			 * invalid byte counting one */
			if (fmt == OUT_NAME_XML) {
				size_t chars = 0;

				for (size_t j = 0; j < n; chars++)
					if (next_cp(s, n, &j) < 0)
						j++;
				if (out_name_chars(copy) != chars)
					abort();
			}
		} else if (m) {
			fclose(m);
		}
		free(buf);
		free(copy);
	}
	free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	/* the first byte picks a rule; its high bit: all of them */
	if (data[0] & 0x80) {
		for (int f = 0; f < OUT_NAME__COUNT; f++)
			check_rule((enum out_name_fmt)f, data + 1, size - 1);
	} else {
		check_rule((enum out_name_fmt)(data[0] % OUT_NAME__COUNT), data + 1, size - 1);
	}
	return 0;
}
