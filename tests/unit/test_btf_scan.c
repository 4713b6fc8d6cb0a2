// SPDX-License-Identifier: MIT
/*
 * The raw BTF scan (src/bpfload/btf_scan.c) against libbpf, the oracle:
 * on the running kernel's /sys/kernel/btf/vmlinux, the FUNCs it finds (the
 * lowest id of a name, as btf__find_by_name_kind()) and their prototypes'
 * parameter counts are libbpf's. A damaged blob, of a hand-built one with a
 * record of every kind or of the kernel's, gives -EBADMSG, never a crash
 * nor an answer libbpf would not give.
 *
 * `test_btf_scan --seeds DIR` writes the fuzz corpus
 * (tests/fuzz/corpus/btf_scan) instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpfload/btf_scan.h"
#include "test.h"

#define VMLINUX "/sys/kernel/btf/vmlinux"

/* ---- a tiny BTF blob, built by hand ---------------------------------- */

struct blob {
	uint8_t types[2048];
	char strs[512];
	size_t types_len, strs_len;
	uint32_t nr;
};

static uint32_t str_add(struct blob *b, const char *s)
{
	uint32_t off = b->strs_len;

	if (!*s)
		return 0;
	memcpy(b->strs + off, s, strlen(s) + 1);
	b->strs_len += strlen(s) + 1;
	return off;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* A record: its header, then @n_extra words of trailing data (each
 * @fill: a valid type id or count, so libbpf takes the blob too).
 * Returns its id. */
static uint32_t type_add(struct blob *b, const char *name, uint32_t kind, uint32_t vlen,
			 uint32_t size_type, size_t n_extra, uint32_t fill)
{
	uint8_t *p = b->types + b->types_len;

	put32(p, str_add(b, name));
	put32(p + 4, kind << 24 | vlen);
	put32(p + 8, size_type);
	for (size_t i = 0; i < n_extra; i++)
		put32(p + 12 + 4 * i, fill);
	b->types_len += 12 + 4 * n_extra;
	return ++b->nr;
}

/* Offsets of fields in the blob, for the damage tests */
struct tiny {
	uint8_t *data;
	size_t len;
	size_t rec_f, rec_proto4; /* offsets of FUNC "f"'s record and of id 21's */
	size_t strs;            /* of the string section */
	uint32_t strs_len;
};

/* Every kind once; FUNC "f" -> 2-parameter proto before it, FUNC "g" ->
 * 4-parameter proto after it, a second FUNC "f" (not the one answered) */
static void tiny_build(struct tiny *t)
{
	struct blob b = { .strs_len = 1 };
	uint32_t h[6];

	type_add(&b, "int", 1, 0, 4, 1, 32);               /* 1 INT: 32 bits */
	type_add(&b, "", 2, 0, 1, 0, 0);                   /* 2 PTR -> int */
	type_add(&b, "", 3, 0, 0, 3, 1);                   /* 3 ARRAY: int[1] */
	type_add(&b, "s", 4, 2, 8, 6, 1);                  /* 4 STRUCT: 2 members */
	type_add(&b, "u", 5, 1, 4, 3, 1);                  /* 5 UNION: 1 member */
	type_add(&b, "e", 6, 2, 4, 4, 1);                  /* 6 ENUM: 2 values */
	type_add(&b, "fw", 7, 0, 0, 0, 0);                 /* 7 FWD */
	type_add(&b, "td", 8, 0, 1, 0, 0);                 /* 8 TYPEDEF */
	type_add(&b, "", 9, 0, 1, 0, 0);                   /* 9 VOLATILE */
	type_add(&b, "", 10, 0, 1, 0, 0);                  /* 10 CONST */
	type_add(&b, "", 11, 0, 2, 0, 0);                  /* 11 RESTRICT */
	type_add(&b, "", 13, 2, 1, 4, 1);                  /* 12 FUNC_PROTO: 2 params */
	t->rec_f = b.types_len;
	type_add(&b, "f", 12, 1, 12, 0, 0);                /* 13 FUNC f */
	type_add(&b, "g", 12, 1, 21, 0, 0);                /* 14 FUNC g, proto after it */
	type_add(&b, "v", 14, 0, 1, 1, 1);                 /* 15 VAR */
	type_add(&b, ".data", 15, 1, 4, 3, 0);             /* 16 DATASEC */
	put32(b.types + b.types_len - 12, 15);             /*    its VAR, offset 0, size 4 */
	put32(b.types + b.types_len - 8, 0);
	put32(b.types + b.types_len - 4, 4);
	type_add(&b, "float", 16, 0, 4, 0, 0);             /* 17 FLOAT */
	type_add(&b, "tag", 17, 0, 13, 1, 0xffffffff);     /* 18 DECL_TAG on f */
	type_add(&b, "tt", 18, 0, 1, 0, 0);                /* 19 TYPE_TAG */
	type_add(&b, "e64", 19, 1, 8, 3, 1);               /* 20 ENUM64 */
	t->rec_proto4 = b.types_len;
	type_add(&b, "", 13, 4, 1, 8, 1);                  /* 21 FUNC_PROTO: 4 params */
	type_add(&b, "f", 12, 1, 21, 0, 0);                /* 22 FUNC f again */

	/* header: magic, version 1, flags 0, hdr_len, then the sections */
	t->len = 24 + b.types_len + b.strs_len;
	t->data = malloc(t->len);
	h[0] = 0xeb9f | 1 << 16;
	h[1] = 24;
	h[2] = 0;
	h[3] = b.types_len;
	h[4] = b.types_len;
	h[5] = b.strs_len;
	memcpy(t->data, h, 24);
	memcpy(t->data + 24, b.types, b.types_len);
	memcpy(t->data + 24 + b.types_len, b.strs, b.strs_len);
	t->rec_f += 24;
	t->rec_proto4 += 24;
	t->strs = 24 + b.types_len;
	t->strs_len = b.strs_len;
}

static const char *const tiny_names[] = { "f", "g", "int", "s", "nope", "" };
#define NR_TINY (sizeof(tiny_names) / sizeof(tiny_names[0]))

/* The scan of a copy of @len bytes (its own allocation: ASan sees a read
 * past the end) */
static int scan_copy(const uint8_t *data, size_t len, struct ustack_btf_func *fn, size_t n)
{
	uint8_t *copy = malloc(len ? len : 1);
	int ret;

	memcpy(copy, data, len);
	ret = ustack_btf_scan_funcs(copy, len, fn, n);
	free(copy);
	return ret;
}

static int scan_tiny(const uint8_t *data, size_t len, struct ustack_btf_func *fn)
{
	for (size_t i = 0; i < NR_TINY; i++)
		fn[i].name = tiny_names[i];
	return scan_copy(data, len, fn, NR_TINY);
}

/* libbpf's answers for @fn[i].name, where it takes the blob; -1 where not */
static int libbpf_agrees(struct btf *btf, const struct ustack_btf_func *fn, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int id = btf__find_by_name_kind(btf, fn[i].name, BTF_KIND_FUNC);
		const struct btf_type *t, *p;

		if (!fn[i].found) {
			if (id > 0)
				return 0;
			continue;
		}
		if (id != (int)fn[i].id || !(t = btf__type_by_id(btf, id)) || t->type != fn[i].proto_id ||
		    !(p = btf__type_by_id(btf, t->type)) || !btf_is_func_proto(p) ||
		    btf_vlen(p) != fn[i].nr_params)
			return 0;
	}
	return 1;
}

static void test_tiny(void)
{
	struct ustack_btf_func fn[NR_TINY];
	struct tiny t;
	struct btf *btf;

	tiny_build(&t);
	CHECK_EQ(scan_tiny(t.data, t.len, fn), 0);
	CHECK(fn[0].found);
	CHECK_EQ(fn[0].id, 13);
	CHECK_EQ(fn[0].proto_id, 12);
	CHECK_EQ(fn[0].nr_params, 2);
	CHECK(fn[1].found);
	CHECK_EQ(fn[1].id, 14);
	CHECK_EQ(fn[1].proto_id, 21);
	CHECK_EQ(fn[1].nr_params, 4);
	CHECK(!fn[2].found); /* an INT, not a FUNC */
	CHECK(!fn[3].found); /* a STRUCT */
	CHECK(!fn[4].found);
	CHECK(!fn[5].found); /* no FUNC without a name */
	/* the same answers one at a time, and none asked */
	for (size_t i = 0; i < NR_TINY; i++) {
		struct ustack_btf_func one = { .name = tiny_names[i] };

		CHECK_EQ(ustack_btf_scan_funcs(t.data, t.len, &one, 1), 0);
		CHECK_EQ(one.found, fn[i].found);
		CHECK_EQ(one.id, fn[i].id);
		CHECK_EQ(one.nr_params, fn[i].nr_params);
	}
	CHECK_EQ(ustack_btf_scan_funcs(t.data, t.len, NULL, 0), 0);
	/* libbpf reads the blob the same way */
	btf = btf__new(t.data, t.len);
	CHECK(btf);
	CHECK_EQ(btf__type_cnt(btf), 23);
	CHECK(libbpf_agrees(btf, fn, NR_TINY));
	btf__free(btf);
	free(t.data);
}

static void test_tiny_truncated(void)
{
	struct ustack_btf_func fn[NR_TINY];
	struct tiny t;

	tiny_build(&t);
	for (size_t len = 0; len < t.len; len++)
		CHECK_EQ(scan_tiny(t.data, len, fn), -EBADMSG);
	/* bytes after the sections are not the scan's business */
	{
		uint8_t *longer = calloc(1, t.len + 7);

		memcpy(longer, t.data, t.len);
		CHECK_EQ(scan_tiny(longer, t.len + 7, fn), 0);
		CHECK_EQ(fn[1].nr_params, 4);
		free(longer);
	}
	free(t.data);
}

/* @t's blob with the @size-byte field at @off set to @v; the scan's result */
static int damaged(const struct tiny *t, size_t off, size_t size, uint32_t v)
{
	struct ustack_btf_func fn[NR_TINY];
	uint8_t *copy = malloc(t->len);
	int ret;

	memcpy(copy, t->data, t->len);
	if (size == 4)
		put32(copy + off, v);
	else
		copy[off] = v;
	ret = scan_tiny(copy, t->len, fn);
	free(copy);
	return ret;
}

static void test_tiny_header(void)
{
	struct tiny t;
	uint32_t types_len, strs_len, body;

	tiny_build(&t);
	types_len = t.strs - 24;
	strs_len = t.strs_len;
	body = t.len - 24;
	CHECK_EQ(damaged(&t, 0, 4, 0x9feb | 1 << 16), -EBADMSG); /* the other byte order */
	CHECK_EQ(damaged(&t, 0, 1, 0), -EBADMSG);
	CHECK_EQ(damaged(&t, 2, 1, 0), -EBADMSG);                 /* version */
	CHECK_EQ(damaged(&t, 2, 1, 2), -EBADMSG);
	CHECK_EQ(damaged(&t, 3, 1, 0xff), 0);                     /* flags: none known, none needed */
	/* hdr_len */
	CHECK_EQ(damaged(&t, 4, 4, 0), -EBADMSG);
	CHECK_EQ(damaged(&t, 4, 4, 23), -EBADMSG);
	CHECK_EQ(damaged(&t, 4, 4, 25), -EBADMSG);
	CHECK_EQ(damaged(&t, 4, 4, t.len + 1), -EBADMSG);
	CHECK_EQ(damaged(&t, 4, 4, UINT32_MAX), -EBADMSG);
	/* type_off, type_len */
	CHECK_EQ(damaged(&t, 8, 4, body), -EBADMSG);
	CHECK_EQ(damaged(&t, 8, 4, UINT32_MAX), -EBADMSG);
	CHECK_EQ(damaged(&t, 12, 4, types_len - 1), -EBADMSG);
	CHECK_EQ(damaged(&t, 12, 4, types_len - 4), -EBADMSG);
	CHECK_EQ(damaged(&t, 12, 4, types_len + 4), -EBADMSG);
	CHECK_EQ(damaged(&t, 12, 4, body + 1), -EBADMSG);
	CHECK_EQ(damaged(&t, 12, 4, UINT32_MAX), -EBADMSG);
	CHECK_EQ(damaged(&t, 12, 4, types_len - 12), 0);          /* a whole record less */
	/* str_off, str_len */
	CHECK_EQ(damaged(&t, 16, 4, types_len - 1), -EBADMSG);
	CHECK_EQ(damaged(&t, 16, 4, types_len + 1), -EBADMSG);
	CHECK_EQ(damaged(&t, 16, 4, UINT32_MAX), -EBADMSG);
	CHECK_EQ(damaged(&t, 20, 4, 0), -EBADMSG);
	CHECK_EQ(damaged(&t, 20, 4, strs_len - 1), -EBADMSG);
	CHECK_EQ(damaged(&t, 20, 4, strs_len + 1), -EBADMSG);
	CHECK_EQ(damaged(&t, 20, 4, UINT32_MAX), -EBADMSG);
	/* strings: the first is empty, the last ends in a NUL */
	CHECK_EQ(damaged(&t, t.strs, 1, 'x'), -EBADMSG);
	CHECK_EQ(damaged(&t, t.len - 1, 1, 'x'), -EBADMSG);
	free(t.data);
}

static void test_tiny_records(void)
{
	struct ustack_btf_func fn[NR_TINY];
	struct ustack_btf_func g = { .name = "g" };
	uint8_t *copy;
	struct tiny t;

	tiny_build(&t);
	/* a vlen that runs past the section */
	CHECK_EQ(damaged(&t, t.rec_proto4 + 4, 4, 13u << 24 | 0xffff), -EBADMSG);
	CHECK_EQ(damaged(&t, t.rec_proto4 + 4, 4, 13u << 24 | 5), -EBADMSG);
	CHECK_EQ(damaged(&t, t.rec_proto4 + 4, 4, 13u << 24 | 6), -EBADMSG);
	/* a kind not known, reserved info bits, kind_flag (known) */
	CHECK_EQ(damaged(&t, t.rec_f + 4, 4, 0), -EBADMSG);
	CHECK_EQ(damaged(&t, t.rec_f + 4, 4, 20u << 24), -EBADMSG);
	CHECK_EQ(damaged(&t, t.rec_f + 4, 4, 31u << 24), -EBADMSG);
	CHECK_EQ(damaged(&t, t.rec_f + 4, 4, 12u << 24 | 1 << 16), -EBADMSG);
	CHECK_EQ(damaged(&t, t.rec_f + 4, 4, 12u << 24 | 1 << 29), -EBADMSG);
	CHECK_EQ(damaged(&t, t.rec_f + 4, 4, 12u << 24 | 1u << 31), 0);
	/* a name past the strings */
	CHECK_EQ(damaged(&t, t.rec_f, 4, t.strs_len), -EBADMSG);
	CHECK_EQ(damaged(&t, t.rec_f, 4, t.strs_len + 1000), -EBADMSG);
	CHECK_EQ(damaged(&t, t.rec_f, 4, UINT32_MAX), -EBADMSG);
	/* the last byte, the empty name: the second "f" is found */
	copy = malloc(t.len);
	memcpy(copy, t.data, t.len);
	put32(copy + t.rec_f, t.strs_len - 1);
	CHECK_EQ(scan_tiny(copy, t.len, fn), 0);
	CHECK_EQ(fn[0].id, 22);
	CHECK_EQ(fn[0].nr_params, 4);
	CHECK_EQ(fn[5].id, 13); /* and "" finds the FUNC without a name */
	/* a FUNC asked about whose type is void, past the last id, or no
	 * FUNC_PROTO; a FUNC not asked about is not looked at */
	put32(copy + t.rec_f + 8, 0);
	CHECK_EQ(scan_tiny(copy, t.len, fn), -EBADMSG);
	CHECK_EQ(ustack_btf_scan_funcs(copy, t.len, &g, 1), 0);
	CHECK_EQ(g.nr_params, 4);
	put32(copy + t.rec_f, 1); /* named "int" again */
	CHECK_EQ(scan_tiny(copy, t.len, fn), -EBADMSG);
	put32(copy + t.rec_f + 8, 23);
	CHECK_EQ(scan_tiny(copy, t.len, fn), -EBADMSG);
	put32(copy + t.rec_f + 8, 1);
	CHECK_EQ(scan_tiny(copy, t.len, fn), -EBADMSG);
	put32(copy + t.rec_f + 8, 21);
	CHECK_EQ(scan_tiny(copy, t.len, fn), 0);
	CHECK_EQ(fn[2].id, 13); /* "int": the INT is no FUNC, this one is */
	CHECK_EQ(fn[2].nr_params, 4);
	free(copy);
	free(t.data);
}

/* Every byte of the blob changed a few ways: no crash (ASan), and where
 * both the scan and libbpf take the result, the same answers */
static void test_tiny_mutations(void)
{
	static const uint8_t masks[] = { 0x01, 0x02, 0x10, 0x80, 0xff };
	struct ustack_btf_func fn[NR_TINY];
	int taken = 0, compared = 0;
	struct tiny t;

	tiny_build(&t);
	for (size_t i = 0; i < t.len; i++)
		for (size_t m = 0; m < sizeof(masks); m++) {
			uint8_t *copy = malloc(t.len);
			struct btf *btf;
			int ret;

			memcpy(copy, t.data, t.len);
			copy[i] ^= masks[m];
			ret = scan_tiny(copy, t.len, fn);
			CHECK(ret == 0 || ret == -EBADMSG);
			if (!ret) {
				taken++;
				btf = btf__new(copy, t.len);
				if (btf) {
					compared++;
					if (!libbpf_agrees(btf, fn, NR_TINY))
						printf("# byte %zu ^ 0x%02x: libbpf answers otherwise\n", i,
						       masks[m]);
					CHECK(libbpf_agrees(btf, fn, NR_TINY));
					btf__free(btf);
				}
			}
			free(copy);
		}
	printf("# %d of %zu changed blobs taken, %d of them compared with libbpf\n", taken,
	       t.len * sizeof(masks), compared);
	CHECK(compared > 50);
	free(t.data);
}

/* ---- the running kernel's BTF ------------------------------------------ */

static const char *const kernel_names[] = {
	"bpf_task_work_schedule_resume", "bpf_task_work_schedule_resume_impl",
	"trace_call_bpf_faultable", "vfs_read", "do_sys_openat2", "schedule", "do_exit",
	"kernel_clone", "ustack_no_such_function",
};
#define NR_KERNEL (sizeof(kernel_names) / sizeof(kernel_names[0]))

static struct btf *kernel_btf(void)
{
	struct btf *btf;

	if (access(VMLINUX, R_OK))
		SKIP("%s: %s (a kernel without CONFIG_DEBUG_INFO_BTF)", VMLINUX, strerror(errno));
	btf = btf__load_vmlinux_btf();
	CHECK(btf);
	return btf;
}

static void test_vmlinux(void)
{
	struct btf *btf = kernel_btf();
	struct ustack_btf_func fn[NR_KERNEL];

	for (size_t i = 0; i < NR_KERNEL; i++)
		fn[i].name = kernel_names[i];
	CHECK_EQ(ustack_btf_scan_file(VMLINUX, fn, NR_KERNEL), 0);
	CHECK(libbpf_agrees(btf, fn, NR_KERNEL));
	for (size_t i = 0; i < NR_KERNEL; i++)
		printf("# %s: %s, id %u, %u parameters\n", fn[i].name,
		       fn[i].found ? "found" : "not found", fn[i].id, fn[i].nr_params);
	CHECK(fn[3].found && fn[4].found && fn[5].found); /* vfs_read, do_sys_openat2, schedule */
	CHECK(fn[3].nr_params > 0);
	CHECK(!fn[NR_KERNEL - 1].found);
	btf__free(btf);
}

/* ~400 FUNCs spread over the whole id range, 50 at a time */
static void test_vmlinux_sweep(void)
{
	struct btf *btf = kernel_btf();
	struct ustack_btf_func fn[50];
	struct ustack_btf_file f;
	uint32_t nr = btf__type_cnt(btf), funcs = 0, step, id = 1;
	size_t n = 0, asked = 0;

	for (uint32_t i = 1; i < nr; i++)
		funcs += btf_is_func(btf__type_by_id(btf, i));
	CHECK(funcs > 1000);
	step = funcs / 400;
	CHECK_EQ(ustack_btf_file__open(&f, VMLINUX), 0);
	for (uint32_t k = 0; id < nr; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);

		if (!btf_is_func(t) || k++ % step)
			continue;
		fn[n++].name = btf__name_by_offset(btf, t->name_off);
		if (n == 50 || id == nr - 1) {
			CHECK_EQ(ustack_btf_scan_funcs(f.data, f.len, fn, n), 0);
			for (size_t i = 0; i < n; i++)
				CHECK(fn[i].found);
			CHECK(libbpf_agrees(btf, fn, n));
			asked += n;
			n = 0;
		}
	}
	if (n) {
		CHECK_EQ(ustack_btf_scan_funcs(f.data, f.len, fn, n), 0);
		CHECK(libbpf_agrees(btf, fn, n));
		asked += n;
	}
	printf("# %zu of %u FUNCs asked\n", asked, funcs);
	CHECK(asked >= 390);
	ustack_btf_file__close(&f);
	btf__free(btf);
}

/* The file's bytes, as read(): the same as the mapping gives */
static void test_vmlinux_file(void)
{
	struct ustack_btf_file f;
	FILE *fp;
	uint8_t *buf;
	size_t n = 0, got, cap = 1 << 20;

	if (access(VMLINUX, R_OK))
		SKIP("%s: %s (a kernel without CONFIG_DEBUG_INFO_BTF)", VMLINUX, strerror(errno));
	fp = fopen(VMLINUX, "rb");
	CHECK(fp);
	buf = malloc(cap);
	while ((got = fread(buf + n, 1, cap - n, fp)) > 0)
		if ((n += got) == cap)
			buf = realloc(buf, cap *= 2);
	fclose(fp);
	CHECK_EQ(ustack_btf_file__open(&f, VMLINUX), 0);
	CHECK_EQ(f.len, n);
	CHECK(!memcmp(f.data, buf, n));
	ustack_btf_file__close(&f);
	ustack_btf_file__close(&f); /* zeroed: a no-op */
	free(buf);
}

/* A file that cannot be mapped and states no size: a pipe, read into a
 * mapping grown 4 KiB -> 32 KiB on the way */
static void test_file_pipe(void)
{
	struct ustack_btf_file f;
	uint8_t data[20000];
	char path[64];
	int fds[2];

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = i * 7 + (i >> 8);
	CHECK(!pipe(fds));
	CHECK_EQ(write(fds[1], data, sizeof(data)), sizeof(data));
	close(fds[1]);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
	CHECK_EQ(ustack_btf_file__open(&f, path), 0);
	close(fds[0]);
	CHECK_EQ(f.len, sizeof(data));
	CHECK(f.map_len >= f.len);
	CHECK(!memcmp(f.data, data, sizeof(data)));
	ustack_btf_file__close(&f);
	CHECK_EQ(ustack_btf_file__open(&f, "/nonexistent/btf"), -ENOENT);
	CHECK(!f.data && !f.map_len);
	CHECK_EQ(ustack_btf_scan_file("/nonexistent/btf", NULL, 0), -ENOENT);
	CHECK_EQ(ustack_btf_scan_file("/dev/null", NULL, 0), -EBADMSG);
}

/* The offset in @f of the record of FUNC @name (found by its 12 bytes) */
static size_t record_of(struct btf *btf, const struct ustack_btf_file *f, const char *name)
{
	int id = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC);
	const uint8_t *p;

	CHECK(id > 0);
	p = memmem(f->data, f->len, btf__type_by_id(btf, id), 12);
	CHECK(p);
	return p - (const uint8_t *)f->data;
}

static int kernel_damaged(const struct ustack_btf_file *f, size_t len, size_t off, uint32_t v)
{
	struct ustack_btf_func fn[NR_KERNEL];
	uint8_t *copy = malloc(len);
	int ret;

	memcpy(copy, f->data, len);
	if (off != SIZE_MAX)
		put32(copy + off, v);
	for (size_t i = 0; i < NR_KERNEL; i++)
		fn[i].name = kernel_names[i];
	ret = ustack_btf_scan_funcs(copy, len, fn, NR_KERNEL);
	free(copy);
	return ret;
}

static void test_vmlinux_damaged(void)
{
	struct btf *btf = kernel_btf();
	struct ustack_btf_file f;
	uint32_t hdr_len, type_end, str_len;
	size_t rec;

	CHECK_EQ(ustack_btf_file__open(&f, VMLINUX), 0);
	memcpy(&hdr_len, (const uint8_t *)f.data + 4, 4);
	type_end = hdr_len + ((const uint32_t *)f.data)[2] + ((const uint32_t *)f.data)[3];
	str_len = ((const uint32_t *)f.data)[5];
	CHECK_EQ(kernel_damaged(&f, f.len, SIZE_MAX, 0), 0);
	/* cut short */
	CHECK_EQ(kernel_damaged(&f, f.len - 1, SIZE_MAX, 0), -EBADMSG);
	CHECK_EQ(kernel_damaged(&f, f.len / 2, SIZE_MAX, 0), -EBADMSG);
	CHECK_EQ(kernel_damaged(&f, type_end, SIZE_MAX, 0), -EBADMSG);
	CHECK_EQ(kernel_damaged(&f, 4096, SIZE_MAX, 0), -EBADMSG);
	CHECK_EQ(kernel_damaged(&f, 24, SIZE_MAX, 0), -EBADMSG);
	CHECK_EQ(kernel_damaged(&f, 23, SIZE_MAX, 0), -EBADMSG);
	/* header fields */
	CHECK_EQ(kernel_damaged(&f, f.len, 0, 0x9feb | 1 << 16), -EBADMSG);
	CHECK_EQ(kernel_damaged(&f, f.len, 0, 0xeb9f | 2 << 16), -EBADMSG);
	CHECK_EQ(kernel_damaged(&f, f.len, 4, UINT32_MAX), -EBADMSG);
	CHECK_EQ(kernel_damaged(&f, f.len, 8, f.len), -EBADMSG);
	CHECK_EQ(kernel_damaged(&f, f.len, 12, ((const uint32_t *)f.data)[3] + 1), -EBADMSG);
	CHECK_EQ(kernel_damaged(&f, f.len, 16, UINT32_MAX - 3), -EBADMSG);
	CHECK_EQ(kernel_damaged(&f, f.len, 20, str_len + 1), -EBADMSG);
	/* the first record, and vfs_read's, of a kind not known */
	CHECK_EQ(kernel_damaged(&f, f.len, type_end - ((const uint32_t *)f.data)[3] + 4, 0),
		 -EBADMSG);
	rec = record_of(btf, &f, "vfs_read");
	CHECK_EQ(kernel_damaged(&f, f.len, rec + 4, 20u << 24), -EBADMSG);
	/* its name past the strings, its type void or past the last id */
	CHECK_EQ(kernel_damaged(&f, f.len, rec, str_len), -EBADMSG);
	CHECK_EQ(kernel_damaged(&f, f.len, rec + 8, 0), -EBADMSG);
	CHECK_EQ(kernel_damaged(&f, f.len, rec + 8, btf__type_cnt(btf)), -EBADMSG);
	/* the strings' last NUL */
	CHECK_EQ(kernel_damaged(&f, f.len, hdr_len + ((const uint32_t *)f.data)[4] + str_len - 4,
				0x78787878), -EBADMSG);
	ustack_btf_file__close(&f);
	btf__free(btf);
}

/* ---- the fuzz corpus ----------------------------------------------------- */

static int write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4096];
	FILE *fp;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "wb");
	if (!fp) {
		perror(path);
		return -1;
	}
	ok = fwrite(data, 1, len, fp) == len;
	return fclose(fp) || !ok ? -1 : 0;
}

/* tiny.btf; tiny-bad-kind.btf; vmlinux-head.btf, the file's first 4 KiB;
 * vmlinux-first.btf, its first records (<= 3 KiB) with the string section
 * cut to the names they need (<= 1 KiB) */
static int write_seeds(const char *dir)
{
	struct ustack_btf_file f;
	struct tiny t;
	struct btf *btf;
	uint8_t blob[24 + 3072 + 1024];
	const uint8_t *first, *end;
	uint32_t h[6], strs_len = 1, nr;
	int ret;

	tiny_build(&t);
	ret = write_file(dir, "tiny.btf", t.data, t.len);
	put32(t.data + t.rec_f + 4, 20u << 24);
	ret = ret ?: write_file(dir, "tiny-bad-kind.btf", t.data, t.len);
	free(t.data);
	if (ret || ustack_btf_file__open(&f, VMLINUX) || !(btf = btf__load_vmlinux_btf()))
		return 1;
	ret = write_file(dir, "vmlinux-head.btf", f.data, 4096);
	/* libbpf holds the records one after the other, as the file does */
	first = (const uint8_t *)btf__type_by_id(btf, 1);
	nr = 1;
	for (;;) {
		const struct btf_type *t1 = btf__type_by_id(btf, nr);
		const char *name = btf__name_by_offset(btf, t1->name_off);
		uint32_t need = t1->name_off + strlen(name) + 1;

		end = nr + 1 < btf__type_cnt(btf) ? (const uint8_t *)btf__type_by_id(btf, nr + 1) : NULL;
		if (!end || end - first > 3072 || need > 1024)
			break;
		strs_len = need > strs_len ? need : strs_len;
		nr++;
	}
	end = (const uint8_t *)btf__type_by_id(btf, nr);
	h[0] = 0xeb9f | 1 << 16;
	h[1] = 24;
	h[2] = 0;
	h[3] = end - first;
	h[4] = h[3];
	h[5] = strs_len;
	memcpy(blob, h, 24);
	memcpy(blob + 24, first, h[3]);
	memcpy(blob + 24 + h[3], btf__name_by_offset(btf, 0), strs_len);
	ret = ret ?: write_file(dir, "vmlinux-first.btf", blob, 24 + h[3] + strs_len);
	printf("vmlinux-first.btf: %u records, %u bytes of strings\n", nr - 1, strs_len);
	btf__free(btf);
	ustack_btf_file__close(&f);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	libbpf_set_print(NULL); /* its warnings about the damaged blobs */
	if (argc == 3 && !strcmp(argv[1], "--seeds"))
		return write_seeds(argv[2]);
	RUN(test_tiny);
	RUN(test_tiny_truncated);
	RUN(test_tiny_header);
	RUN(test_tiny_records);
	RUN(test_tiny_mutations);
	RUN(test_vmlinux);
	RUN(test_vmlinux_sweep);
	RUN(test_vmlinux_file);
	RUN(test_file_pipe);
	RUN(test_vmlinux_damaged);
	TEST_EXIT();
}
