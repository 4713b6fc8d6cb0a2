// SPDX-License-Identifier: MIT
/*
 * The name rules of the CLI's output formats (src/cli/out_names.c; the
 * rules: docs/cli/report.md, "Names in the output"), case by case: what
 * each rule writes for hostile names (a thread named "x;y", a newline, an
 * invalid byte, quotes, markup), and that ordinary names, C++ ones
 * included, come out byte for byte. tests/fuzz/fuzz_out_names.c checks the
 * invariants for any input; tests/integration/names_hostile.sh the whole
 * outputs.
 */
#include <stdio.h>

#include "cli/out_names.h"
#include "test.h"

#define FFFD "\xef\xbf\xbd"

struct kase {
	enum out_name_fmt fmt;
	const char *in, *want; /* want NULL: unchanged */
};

static const struct kase cases[] = {
	/* ordinary names: nothing changes, in any rule */
	{ OUT_NAME_LINE, "main", NULL },
	{ OUT_NAME_LINE, "std::vector<int, std::allocator<int> >::push_back(int const&)", NULL },
	{ OUT_NAME_LINE, "caf\xc3\xa9 \xe6\x97\xa5\xf0\x9f\x98\x80", NULL },
	{ OUT_NAME_LINE, "x;y \"q\" \\n <s>", NULL },
	{ OUT_NAME_FOLDED, "foo(int, char) const", NULL },
	{ OUT_NAME_FOLDED, "JS:*hot /tmp/x.js:1:13", NULL },
	{ OUT_NAME_FOLDED, "RegExp:\\d+", NULL },
	{ OUT_NAME_PS_COMM, "V8 WorkerThread", NULL },
	{ OUT_NAME_PS_COMM, "worker1", NULL },
	{ OUT_NAME_PS_FUNC, "f(int) const", NULL },
	{ OUT_NAME_PS_FUNC, "a-b>c", NULL },
	{ OUT_NAME_PS_DSO, "/usr/lib/x86_64-linux-gnu/libc.so.6", NULL },
	{ OUT_NAME_PS_DSO, "[kernel.kallsyms]", NULL },
	{ OUT_NAME_PS_EVENT, "syscalls:sys_enter_futex", NULL },
	{ OUT_NAME_JSON, "std::map<int, char>::find(int const&) caf\xc3\xa9 \xc2\x9b", NULL },
	{ OUT_NAME_XML, "caf\xc3\xa9 \xc2\x85 \x7f", NULL },
	{ OUT_NAME_UTF8, "a\n\t<>\"'\\;\x7f\xc2\x9b", NULL },

	/* line rules: control characters, C1, U+2028/9, invalid bytes */
	{ OUT_NAME_LINE, "a\nb", "a\\x0ab" },
	{ OUT_NAME_LINE, "\r\t\x1b[31m\x7f", "\\x0d\\x09\\x1b[31m\\x7f" },
	{ OUT_NAME_LINE, "\xff\xfe", "\\xff\\xfe" },
	{ OUT_NAME_LINE, "\xc2\x9b" "2J", "\\xc2\\x9b" "2J" },
	{ OUT_NAME_LINE, "a\xe2\x80\xa8" "b\xe2\x80\xa9", "a\\xe2\\x80\\xa8" "b\\xe2\\x80\\xa9" },
	{ OUT_NAME_LINE, "\xed\xa0\x80", "\\xed\\xa0\\x80" },       /* a surrogate */
	{ OUT_NAME_LINE, "\xc0\xaf", "\\xc0\\xaf" },               /* overlong '/' */
	{ OUT_NAME_LINE, "\xe2\x82", "\\xe2\\x82" },               /* cut short */
	{ OUT_NAME_LINE, "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80" }, /* past U+10FFFF */
	{ OUT_NAME_LINE_WORD, "/tmp/a b/p", "/tmp/a\\x20b/p" },
	/* folded: one frame, one line */
	{ OUT_NAME_FOLDED, "x;y", "x:y" },
	{ OUT_NAME_FOLDED, "a\nb;c 1", "a\\x0ab:c 1" },
	{ OUT_NAME_FOLDED_SRC, "my file;.c", "my_file:.c" },
	/* perf-script's header and frame fields */
	{ OUT_NAME_PS_COMM, "x;y", "x:y" },
	{ OUT_NAME_PS_COMM, " lead", "_lead" },
	{ OUT_NAME_PS_COMM, "worker 1", "worker_1" },
	{ OUT_NAME_PS_COMM, "a\tb", "a\\x09b" },
	{ OUT_NAME_PS_COMM, "\xc2\xa0x", "\\xc2\\xa0x" },
	{ OUT_NAME_PS_COMM, "x\xc2\xa0y", NULL },
	{ OUT_NAME_PS_EVENT, "a b", "a\\x20b" },
	{ OUT_NAME_PS_FUNC, "(anonymous namespace)::f(int)", "\\x28anonymous namespace)::f(int)" },
	{ OUT_NAME_PS_FUNC, "  (x", "  \\x28x" },
	{ OUT_NAME_PS_FUNC, "\xc2\xa0(x", "\xc2\xa0\\x28x" },
	{ OUT_NAME_PS_FUNC, "std::unique_ptr<A>::operator->() const",
	  "std::unique_ptr<A>::operator-\\x3e() const" },
	{ OUT_NAME_PS_FUNC, "a\nb", "a\\x0ab" },
	{ OUT_NAME_PS_DSO, "/tmp/a (b)/x", "/tmp/a \\x28b\\x29/x" },
	/* JSON */
	{ OUT_NAME_JSON, "a\"b\\c", "a\\\"b\\\\c" },
	{ OUT_NAME_JSON, "\n\x01\x1f\x7f", "\\u000a\\u0001\\u001f\\u007f" },
	{ OUT_NAME_JSON, "\xff\xfe", FFFD FFFD },
	{ OUT_NAME_JSON, "\xe2\x80\xa8\xe2\x80\xa9", "\\u2028\\u2029" },
	{ OUT_NAME_JSON, "<script>", NULL },
	/* XML */
	{ OUT_NAME_XML, "<script>&\"'", "&lt;script&gt;&amp;&quot;&#39;" },
	{ OUT_NAME_XML, "a\nb\tc\rd\x01", "a" FFFD "b" FFFD "c" FFFD "d" FFFD },
	{ OUT_NAME_XML, "\xef\xbf\xbe\xef\xbf\xbf\xff", FFFD FFFD FFFD },
	{ OUT_NAME_XML, "]]>", "]]&gt;" },
	/* UTF-8 */
	{ OUT_NAME_UTF8, "\xff\xfe", FFFD FFFD },
	{ OUT_NAME_UTF8, "\xed\xa0\x80", FFFD FFFD FFFD },
	{ OUT_NAME_UTF8, "ok\xe2\x82", "ok" FFFD FFFD },
};

static void test_cases(void)
{
	char out[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct kase *c = &cases[i];
		const char *want = c->want ? c->want : c->in;
		size_t n = strlen(c->in), len = out_name_escape(c->fmt, c->in, n, NULL);

		if (len >= sizeof(out) || out_name_escape(c->fmt, c->in, n, out) != len) {
			printf("# case %zu: length %zu\n", i, len);
			CHECK(0);
		}
		out[len] = 0;
		if (strcmp(out, want))
			printf("# case %zu (rule %d): got \"%s\"\n", i, (int)c->fmt, out);
		CHECK_STR(out, want);
		/* the fast check agrees */
		CHECK_EQ(out_name_clean(c->fmt, c->in, n) == n, !c->want);
		CHECK_EQ(out_name_clean_str(c->fmt, c->in) == n, !c->want);
	}
}

/* a NUL inside a counted name is a control character like any other */
static void test_nul(void)
{
	char out[32];
	size_t len;

	len = out_name_escape(OUT_NAME_LINE, "a\0b", 3, out);
	CHECK_EQ(len, 6);
	CHECK(!memcmp(out, "a\\x00b", 6));
	len = out_name_escape(OUT_NAME_JSON, "a\0b", 3, out);
	CHECK_EQ(len, 8);
	CHECK(!memcmp(out, "a\\u0000b", 8));
	CHECK_EQ(out_name_clean(OUT_NAME_UTF8, "a\0b", 3), 3);
}

static void test_str_and_put(void)
{
	const char *plain = "main", *bad = "x;y\n";
	char *to_free = (char *)1, *buf = NULL;
	const char *r;
	size_t blen = 0;
	FILE *m;

	r = out_name_str(OUT_NAME_FOLDED, plain, &to_free);
	CHECK(r == plain && !to_free); /* no copy for a name that needs nothing */
	r = out_name_str(OUT_NAME_FOLDED, bad, &to_free);
	CHECK(to_free && r == to_free);
	CHECK_STR(r, "x:y\\x0a");
	free(to_free);

	m = open_memstream(&buf, &blen);
	CHECK(m);
	out_name_json(m, "a\"\xff");
	out_name_json(m, NULL);
	out_name_put(m, OUT_NAME_LINE, NULL);
	out_name_put(m, OUT_NAME_XML, "<b>");
	fclose(m);
	CHECK_STR(buf, "\"a\\\"" FFFD "\"\"\"&lt;b&gt;");
	free(buf);
}

/* the flame graph's labels count characters: a UTF-8 sequence or one
 * invalid byte each, and a cut never splits one */
static void test_chars(void)
{
	char *buf = NULL;
	size_t blen = 0, n;
	FILE *m;

	CHECK_EQ(out_name_chars("caf\xc3\xa9\xff<"), 6);
	CHECK_EQ(out_name_chars(""), 0);
	m = open_memstream(&buf, &blen);
	CHECK(m);
	n = out_name_put_chars(m, OUT_NAME_XML, "ab\xff\xc3\xa9\n<", 4);
	fclose(m);
	CHECK_EQ(n, 4);
	CHECK_STR(buf, "ab" FFFD "\xc3\xa9");
	free(buf);
}

/* pseudo-random names: every output is valid UTF-8 and free of what its
 * rule excludes (the fuzz target checks much more; this runs in make check
 * with every build) */
static int valid_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned int cp;
		size_t k = out_name_utf8(s + i, n - i, &cp);

		if (!k)
			return 0;
		if (k > 1 && (cp < 0x80 || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000)))
			return 0;
		i += k;
	}
	return 1;
}

static void test_random(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned char in[24], out[24 * OUT_NAME_MAX_GROWTH];

	for (int round = 0; round < 20000; round++) {
		size_t n = round % 24;

		for (size_t i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			/* bias towards the interesting bytes */
			in[i] = (x & 3) ? (unsigned char)(x >> 8) : (unsigned char)";\n (->\"<&\xff\xe2\x80\xa8\xc2"[(x >> 8) % 15];
		}
		for (int f = 0; f < OUT_NAME__COUNT; f++) {
			size_t len = out_name_escape((enum out_name_fmt)f, (const char *)in, n, (char *)out);

			CHECK(len <= sizeof(out));
			CHECK(valid_utf8(out, len));
			for (size_t i = 0; i < len; i++) {
				if (f <= OUT_NAME_PS_DSO)
					CHECK(out[i] >= 0x20 && out[i] != 0x7f);
				if (f == OUT_NAME_FOLDED || f == OUT_NAME_FOLDED_SRC || f == OUT_NAME_PS_COMM)
					CHECK(out[i] != ';');
				if (f == OUT_NAME_JSON)
					CHECK(out[i] >= 0x20);
				if (f == OUT_NAME_XML)
					CHECK(out[i] >= 0x20 && out[i] != '<' && out[i] != '>' && out[i] != '"');
			}
		}
	}
}

/* the rules that look back (perf-script's '(' after white space only)
 * stay linear: a long hostile name costs its length, not its square */
static void test_long_names(void)
{
	size_t n = 200000, len;
	char *s = malloc(2 * n + 1), *out;

	CHECK(s);
	memset(s, ' ', n);
	memset(s + n, '(', n);
	s[2 * n] = 0;
	len = out_name_escape(OUT_NAME_PS_FUNC, s, 2 * n, NULL);
	CHECK_EQ(len, 2 * n + 3); /* only the first '(' is \x28 */
	for (size_t i = 0; i < n; i++)
		s[2 * i] = ' ', s[2 * i + 1] = '(';
	CHECK_EQ(out_name_escape(OUT_NAME_PS_FUNC, s, 2 * n, NULL), 2 * n + 3);
	out = malloc(OUT_NAME_MAX_GROWTH * 2 * n);
	CHECK(out);
	memset(s, '\n', 2 * n);
	CHECK_EQ(out_name_escape(OUT_NAME_JSON, s, 2 * n, out), 12 * n);
	free(out);
	free(s);
}

int main(void)
{
	RUN(test_cases);
	RUN(test_nul);
	RUN(test_str_and_put);
	RUN(test_chars);
	RUN(test_random);
	RUN(test_long_names);
	TEST_EXIT();
}
