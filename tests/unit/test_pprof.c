// SPDX-License-Identifier: MIT
/*
 * The protobuf encoder and profile builder of src/cli/out_pprof.c against
 * bytes computed by hand from the wire-format rules
 * (https://protobuf.dev/programming-guides/encoding/: the 150, "testing"
 * and packed {3, 270, 86942} examples are the ones that page works out),
 * the gzip output against zlib's own inflate, and strings that are not
 * UTF-8 made UTF-8 (U+FFFD) as the format requires.
 */
#include <zlib.h>

#include "cli/out_pprof.h"
#include "test.h"

static int bytes_eq(const struct pb_buf *b, const uint8_t *want, size_t n)
{
	if (b->len != n) {
		printf("# length %zu, want %zu\n", b->len, n);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (b->p[i] != want[i]) {
			printf("# byte %zu: %02x, want %02x\n", i, b->p[i], want[i]);
			return 0;
		}
	return 1;
}

static void test_varint(void)
{
	static const struct { uint64_t v; uint8_t b[10]; size_t n; } cases[] = {
		{ 0, { 0x00 }, 1 },
		{ 1, { 0x01 }, 1 },
		{ 127, { 0x7f }, 1 },
		{ 128, { 0x80, 0x01 }, 2 },
		{ 150, { 0x96, 0x01 }, 2 },
		{ 300, { 0xac, 0x02 }, 2 },
		{ 16384, { 0x80, 0x80, 0x01 }, 3 },
		/* int64 -1: ten bytes, as proto3 encodes a negative int64 */
		{ UINT64_MAX, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pb_buf b = { 0 };

		pb_varint(&b, cases[i].v);
		CHECK(bytes_eq(&b, cases[i].b, cases[i].n));
		pb_buf_free(&b);
	}
}

static void test_fields(void)
{
	static const uint8_t want[] = {
		0x08, 0x96, 0x01,                                     /* 1: 150 */
		0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g',       /* 2: "testing" */
		0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05,       /* 4: packed 3 270 86942 */
		0x1a, 0x00,                                           /* 3: empty bytes */
		0x80, 0x01, 0x05,                                     /* 16: 5 (two-byte tag) */
	};
	static const uint64_t packed[] = { 3, 270, 86942 };
	struct pb_buf b = { 0 };

	pb_field_varint(&b, 1, 150);
	pb_field_bytes(&b, 2, "testing", 7);
	pb_field_packed(&b, 4, packed, 3);
	pb_field_packed(&b, 5, packed, 0); /* nothing for an empty list */
	pb_field_bytes(&b, 3, NULL, 0);
	pb_field_varint(&b, 16, 5);
	CHECK(!b.oom);
	CHECK(bytes_eq(&b, want, sizeof(want)));
	pb_buf_free(&b);
}

/* the smallest profile: one sample type, no sample */
static void test_profile_bytes(void)
{
	static const uint8_t want[] = {
		0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, /* sample_type {type 1, unit 2} */
		0x32, 0x00,                         /* string_table[0] "" */
		0x32, 0x01, 'a',                    /* [1] "a" */
		0x32, 0x01, 'b',                    /* [2] "b" */
	};
	struct pprof *p = pprof__new();
	struct pb_buf b = { 0 };

	CHECK(p);
	CHECK_EQ(pprof__add_sample_type(p, "a", "b"), 0);
	CHECK_EQ(pprof__encode(p, &b), 0);
	CHECK(bytes_eq(&b, want, sizeof(want)));
	pb_buf_free(&b);
	pprof__free(p);
}

/* one sample, one location with two lines (inlined), a mapping and a label */
static void test_profile_sample(void)
{
	static const uint8_t want[] = {
		0x0a, 0x04, 0x08, 0x01, 0x10, 0x02,             /* sample_type {1, 2} */
		/* sample {location_id [1], value [3], label {key 5 ("thread"), num 7}} */
		0x12, 0x0c, 0x0a, 0x01, 0x01, 0x12, 0x01, 0x03, 0x1a, 0x04, 0x08, 0x05, 0x18, 0x07,
		/* mapping {id 1, start 0x1000, limit 0x2000, offset 0x10, filename 3 ("/bin/x"),
		 * build_id 4 ("ab"), has_functions, has_filenames, has_line_numbers,
		 * has_inline_frames} */
		0x1a, 0x16, 0x08, 0x01, 0x10, 0x80, 0x20, 0x18, 0x80, 0x40, 0x20, 0x10, 0x28, 0x03,
		0x30, 0x04, 0x38, 0x01, 0x40, 0x01, 0x48, 0x01, 0x50, 0x01,
		/* location {id 1, mapping 1, address 0x1234, line {fn 1, line 12}, line {fn 2, line 40}} */
		0x22, 0x13, 0x08, 0x01, 0x10, 0x01, 0x18, 0xb4, 0x24,
		0x22, 0x04, 0x08, 0x01, 0x10, 0x0c, 0x22, 0x04, 0x08, 0x02, 0x10, 0x28,
		/* function {id 1, name 6 ("inl"), system_name 6, filename 7 ("x.c")} */
		0x2a, 0x08, 0x08, 0x01, 0x10, 0x06, 0x18, 0x06, 0x20, 0x07,
		/* function {id 2, name 8 ("outer"), system_name 8, filename 7, start_line 38} */
		0x2a, 0x0a, 0x08, 0x02, 0x10, 0x08, 0x18, 0x08, 0x20, 0x07, 0x28, 0x26,
		0x32, 0x00, 0x32, 0x01, 'a', 0x32, 0x01, 'b',
		0x32, 0x06, '/', 'b', 'i', 'n', '/', 'x', 0x32, 0x02, 'a', 'b',
		0x32, 0x06, 't', 'h', 'r', 'e', 'a', 'd', 0x32, 0x03, 'i', 'n', 'l',
		0x32, 0x03, 'x', '.', 'c', 0x32, 0x05, 'o', 'u', 't', 'e', 'r',
		0x50, 0x64,                                     /* duration_nanos 100 */
	};
	struct pprof *p = pprof__new();
	struct pb_buf b = { 0 };
	struct pprof_line lines[2];
	struct pprof_label lab = { .key = "thread", .num = 7 };
	uint64_t m, loc;
	int64_t *v, *v2;

	CHECK(p);
	CHECK_EQ(pprof__add_sample_type(p, "a", "b"), 0);
	m = pprof__mapping(p, 42, 0x1000, 0x2000, 0x10, "/bin/x", "ab", 1, 0);
	CHECK_EQ(m, 1);
	CHECK_EQ(pprof__mapping(p, 42, 0, 0, 0, "ignored", "", 0, 0x1fff), 1);
	CHECK_EQ(pprof__string(p, "thread"), 5);
	lines[0].function_id = pprof__function(p, "inl", "inl", "x.c", 0);
	lines[0].line = 12;
	lines[1].function_id = pprof__function(p, "outer", "outer", "x.c", 38);
	lines[1].line = 40;
	CHECK_EQ(lines[0].function_id, 1);
	CHECK_EQ(lines[1].function_id, 2);
	CHECK_EQ(pprof__function(p, "inl", "inl", "x.c", 0), 1);
	CHECK_EQ(pprof__location_find(p, 42, 0x234), 0);
	loc = pprof__location_add(p, 42, 0x234, m, 0x1234, lines, 2);
	CHECK_EQ(loc, 1);
	CHECK_EQ(pprof__location_find(p, 42, 0x234), 1);
	v = pprof__sample(p, &loc, 1, &lab, 1);
	CHECK(v);
	v[0] += 1;
	v2 = pprof__sample(p, &loc, 1, &lab, 1); /* the same sample: values add */
	CHECK(v2 == v);
	v2[0] += 2;
	CHECK_EQ(pprof__nr_samples(p), 1);
	pprof__set_times(p, 0, 100);
	CHECK_EQ(pprof__encode(p, &b), 0);
	CHECK(bytes_eq(&b, want, sizeof(want)));
	pb_buf_free(&b);
	pprof__free(p);
}

/* the file is gzip: zlib inflates it back to the encoded message */
static void test_gzip(void)
{
	struct pprof *p = pprof__new();
	struct pb_buf b = { 0 };
	char *mem = NULL;
	size_t memlen = 0;
	FILE *f = open_memstream(&mem, &memlen);
	uint8_t out[256];
	z_stream zs = { 0 };

	CHECK(p && f);
	CHECK_EQ(pprof__add_sample_type(p, "samples", "count"), 0);
	CHECK_EQ(pprof__encode(p, &b), 0);
	CHECK_EQ(pprof__write(p, f), 0);
	fclose(f);
	CHECK(memlen > 18);
	CHECK_EQ((uint8_t)mem[0], 0x1f); /* gzip magic */
	CHECK_EQ((uint8_t)mem[1], 0x8b);
	CHECK_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (uint8_t *)mem;
	zs.avail_in = (uInt)memlen;
	zs.next_out = out;
	zs.avail_out = sizeof(out);
	CHECK_EQ(inflate(&zs, Z_FINISH), Z_STREAM_END);
	CHECK_EQ(zs.total_out, b.len);
	CHECK(!memcmp(out, b.p, b.len));
	inflateEnd(&zs);
	free(mem);
	pb_buf_free(&b);
	pprof__free(p);
}

/* protobuf strings must be UTF-8: a name with a byte that is not gets
 * U+FFFD for it, and is then the same string as one written that way */
static void test_string_utf8(void)
{
	static const uint8_t want[] = {
		0x32, 0x00,                                     /* "" */
		0x32, 0x05, 'a', 0xef, 0xbf, 0xbd, 'b',         /* "a\xffb" */
		0x32, 0x03, '<', '\n', '"',                    /* other bytes stay */
	};
	struct pprof *p = pprof__new();
	struct pb_buf b = { 0 };

	CHECK(p);
	CHECK_EQ(pprof__string(p, "a\xff" "b"), 1);
	CHECK_EQ(pprof__string(p, "a\xef\xbf\xbd" "b"), 1);
	CHECK_EQ(pprof__string(p, "<\n\""), 2);
	CHECK_EQ(pprof__encode(p, &b), 0);
	CHECK(bytes_eq(&b, want, sizeof(want)));
	pb_buf_free(&b);
	pprof__free(p);
}

int main(void)
{
	RUN(test_varint);
	RUN(test_fields);
	RUN(test_profile_bytes);
	RUN(test_profile_sample);
	RUN(test_gzip);
	RUN(test_string_utf8);
	TEST_EXIT();
}
