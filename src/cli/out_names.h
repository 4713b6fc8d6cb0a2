/* SPDX-License-Identifier: MIT */
/*
 * Names are data, never syntax: every name the CLI prints (thread and
 * process names, function names from ELF symbols, DWARF and perf maps,
 * file paths, event names) passes through one of these rules first, chosen
 * by where it goes. A name may hold any byte but NUL (a thread renames
 * itself with prctl(), a symbol table or a perf map holds what its writer
 * put there, a path may hold newlines and invalid UTF-8), so each output
 * format gets the guarantee its readers need. The rules, and why, are in
 * docs/cli/report.md, "Names in the output".
 *
 * Every rule keeps what needs nothing unchanged, byte for byte: a scan of
 * a byte-class table finds the first byte that needs a look, and most names
 * have none.
 */
#ifndef USTACK_CLI_OUT_NAMES_H
#define USTACK_CLI_OUT_NAMES_H

#include <stddef.h>
#include <stdio.h>

enum out_name_fmt {
	/* a field of a text line (report text/raw, snapshot text/raw,
	 * --stats): C0 controls, DEL, C1 controls, U+2028/U+2029 and bytes
	 * that are not UTF-8 become \xNN, one per byte */
	OUT_NAME_LINE,
	/* raw's "path=" value: LINE, and a space is \x20 (fields are
	 * separated by spaces) */
	OUT_NAME_LINE_WORD,
	/* one folded frame: LINE, and ';' becomes ':' */
	OUT_NAME_FOLDED,
	/* the file base name of a folded --srcline frame: FOLDED, and ' '
	 * becomes '_' (so that "FILE:LINE" stays the frame's last word) */
	OUT_NAME_FOLDED_SRC,
	/* perf-script header's comm: FOLDED; a space that starts the name
	 * or comes before a digit becomes '_' */
	OUT_NAME_PS_COMM,
	/* perf-script header's event: LINE_WORD */
	OUT_NAME_PS_EVENT,
	/* perf-script frame's function: LINE; "->" is "-\x3e", a '(' that
	 * only spaces precede is \x28 */
	OUT_NAME_PS_FUNC,
	/* perf-script frame's module: LINE; '(' and ')' are \x28 and \x29 */
	OUT_NAME_PS_DSO,
	/* the body of a JSON string: '"' '\\' escaped, C0 controls and DEL
	 * as \u00XX, U+2028/U+2029 as \u2028/\u2029, bytes that are not
	 * UTF-8 become U+FFFD */
	OUT_NAME_JSON,
	/* XML 1.0 text or attribute value: < > & " ' as entities; C0
	 * controls (tab, newline, CR too), U+FFFE, U+FFFF and bytes that
	 * are not UTF-8 become U+FFFD */
	OUT_NAME_XML,
	/* valid UTF-8 (protobuf strings): bytes that are not UTF-8 become
	 * U+FFFD, nothing else changes */
	OUT_NAME_UTF8,
	OUT_NAME__COUNT
};

/* The longest output of one input byte (JSON's \u00XX) */
#define OUT_NAME_MAX_GROWTH 6

/* How many leading bytes of @s[0..@n) the rule leaves as they are (@n:
 * the name needs nothing). */
size_t out_name_clean(enum out_name_fmt fmt, const char *s, size_t n);
/* The same for a NUL-terminated @s, up to its end */
size_t out_name_clean_str(enum out_name_fmt fmt, const char *s);

/* @s[0..@n) under the rule, written at @dst (no NUL added) unless @dst is
 * NULL; returns the output's length (at most OUT_NAME_MAX_GROWTH * @n). */
size_t out_name_escape(enum out_name_fmt fmt, const char *s, size_t n, char *dst);

/* @s (NULL: nothing) under the rule, to @f */
void out_name_put(FILE *f, enum out_name_fmt fmt, const char *s);

/* @s under the rule as a C string: @s itself when it needs nothing, else
 * a malloc()ed copy also stored in *@to_free (which the caller frees; it is
 * set to NULL otherwise). NULL when out of memory. */
const char *out_name_str(enum out_name_fmt fmt, const char *s, char **to_free);

/* A JSON string, quotes included ("" for NULL) */
void out_name_json(FILE *f, const char *s);

/*
 * Characters, for the flame graph's labels: one is an ASCII byte, a valid
 * UTF-8 sequence or a byte that is not one (each of those is one U+FFFD in
 * the XML). out_name_chars() counts those of @s; out_name_put_chars()
 * writes the first @max of them under @fmt and returns how many it wrote.
 */
size_t out_name_chars(const char *s);
size_t out_name_put_chars(FILE *f, enum out_name_fmt fmt, const char *s, size_t max);

/* Length of the valid UTF-8 sequence at @s (@n bytes left, n >= 1), 0 when
 * the bytes there are not one (overlong forms, surrogates, beyond
 * U+10FFFF, truncated); the code point in *@cp. */
size_t out_name_utf8(const unsigned char *s, size_t n, unsigned int *cp);

#endif
