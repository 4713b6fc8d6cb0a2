// SPDX-License-Identifier: MIT
/*
 * Raw BTF, as the kernel documents it (Documentation/bpf/btf.rst): a
 * 24-byte header (magic 0xEB9F in the writer's byte order, version 1,
 * flags, hdr_len, then type_off, type_len, str_off, str_len, the offsets
 * counted from the header's end), a type section of records, a string
 * section of NUL-terminated names. A record is a 12-byte struct btf_type
 * (name_off, info, size-or-type) and trailing data whose length its kind
 * and vlen give; type ids are the records' ordinal numbers from 1 (0 is
 * void). Nothing indexes the records, so the walk is sequential and an
 * unknown kind ends it: its length is unknown, and so is every later id.
 *
 * Only what the answers rest on is checked: the header, each record's
 * extent, kind and reserved info bits, each record's name offset, and the
 * type of each FUNC asked about. The trailing data (members, parameters)
 * is never read. A blob in the other byte order is "unknown" too: libbpf,
 * which the caller asks then, swaps it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/compiler.h"
#include "bpfload/btf_scan.h"

#define BTF_MAGIC 0xeb9f
#define BTF_HDR_MIN 24
#define BTF_REC 12
#define KIND_FUNC 12
#define KIND_FUNC_PROTO 13
/* info: vlen in bits 0-15, kind in 24-28, kind_flag in 31; the rest is
 * reserved, and a blob that uses it is of a form not known here */
#define INFO_KNOWN 0x9f00ffffu
#define FILE_MAX (256u << 20)

/* Trailing bytes of a record of each kind: fixed + vlen * each. */
static const struct {
	uint8_t known, fixed, each;
} kinds[] = {
	[1] = { 1, 4, 0 },   /* INT: its encoding */
	[2] = { 1, 0, 0 },   /* PTR */
	[3] = { 1, 12, 0 },  /* ARRAY: struct btf_array */
	[4] = { 1, 0, 12 },  /* STRUCT: struct btf_member each */
	[5] = { 1, 0, 12 },  /* UNION */
	[6] = { 1, 0, 8 },   /* ENUM: struct btf_enum each */
	[7] = { 1, 0, 0 },   /* FWD */
	[8] = { 1, 0, 0 },   /* TYPEDEF */
	[9] = { 1, 0, 0 },   /* VOLATILE */
	[10] = { 1, 0, 0 },  /* CONST */
	[11] = { 1, 0, 0 },  /* RESTRICT */
	[12] = { 1, 0, 0 },  /* FUNC: vlen is its linkage, not a count */
	[13] = { 1, 0, 8 },  /* FUNC_PROTO: struct btf_param each */
	[14] = { 1, 4, 0 },  /* VAR: its linkage */
	[15] = { 1, 0, 12 }, /* DATASEC: struct btf_var_secinfo each */
	[16] = { 1, 0, 0 },  /* FLOAT */
	[17] = { 1, 4, 0 },  /* DECL_TAG: component_idx */
	[18] = { 1, 0, 0 },  /* TYPE_TAG */
	[19] = { 1, 0, 12 }, /* ENUM64: struct btf_enum64 each */
};

struct btf_view {
	const uint8_t *types;
	size_t types_len;
	const char *strs;
	size_t strs_len;
};

struct btf_rec {
	size_t len; /* of the record, trailing data included */
	uint32_t name_off, kind, vlen, type;
};

static int view_of(const void *btf, size_t len, struct btf_view *v)
{
	const uint8_t *p = btf;
	uint32_t hdr_len, type_off, type_len, str_off, str_len;
	size_t body;

	if (len < BTF_HDR_MIN || ld_u16(p) != BTF_MAGIC || p[2] != 1)
		return -EBADMSG;
	hdr_len = ld_u32(p + 4);
	type_off = ld_u32(p + 8);
	type_len = ld_u32(p + 12);
	str_off = ld_u32(p + 16);
	str_len = ld_u32(p + 20);
	if (hdr_len < BTF_HDR_MIN || hdr_len > len)
		return -EBADMSG;
	body = len - hdr_len;
	if (!in_bounds(type_off, type_len, body) || !in_bounds(str_off, str_len, body))
		return -EBADMSG;
	/* the first string is the empty name; the last ends in a NUL, so
	 * every offset inside the section starts a terminated string */
	if (!str_len || p[hdr_len + str_off] || p[hdr_len + str_off + str_len - 1])
		return -EBADMSG;
	v->types = p + hdr_len + type_off;
	v->types_len = type_len;
	v->strs = (const char *)p + hdr_len + str_off;
	v->strs_len = str_len;
	return 0;
}

/* The record at @off of the type section: 0, or -EBADMSG where it is
 * not inside the section or of an unknown kind. */
static int rec_at(const struct btf_view *v, size_t off, struct btf_rec *r)
{
	const uint8_t *t = v->types + off;
	uint32_t info;
	size_t extra;

	if (!in_bounds(off, BTF_REC, v->types_len))
		return -EBADMSG;
	r->name_off = ld_u32(t);
	info = ld_u32(t + 4);
	r->type = ld_u32(t + 8);
	r->kind = info >> 24 & 0x1f;
	r->vlen = info & 0xffff;
	if ((info & ~INFO_KNOWN) || r->kind >= ARRAY_SIZE(kinds) || !kinds[r->kind].known)
		return -EBADMSG;
	extra = kinds[r->kind].fixed + (size_t)r->vlen * kinds[r->kind].each;
	if (!in_bounds(off + BTF_REC, extra, v->types_len) || r->name_off >= v->strs_len)
		return -EBADMSG;
	r->len = BTF_REC + extra;
	return 0;
}

int ustack_btf_scan_funcs(const void *btf, size_t len, struct ustack_btf_func *funcs, size_t n)
{
	struct btf_view v;
	struct btf_rec r;
	uint32_t id, nr_types, last_proto = 0;
	size_t off, left = n;
	int ret = view_of(btf, len, &v);

	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++) {
		funcs[i].found = 0;
		funcs[i].id = funcs[i].proto_id = funcs[i].nr_params = 0;
	}
	/* every record, to know the blob is whole; the FUNCs asked about
	 * (the first of each name) on the way. The id cannot wrap: a
	 * record takes 12 of at most 2^32 - 1 bytes. */
	for (off = 0, id = 1; off < v.types_len; off += r.len, id++) {
		if ((ret = rec_at(&v, off, &r)))
			return ret;
		if (r.kind != KIND_FUNC || !left)
			continue;
		for (size_t i = 0; i < n; i++)
			if (!funcs[i].found && !strcmp(v.strs + r.name_off, funcs[i].name)) {
				funcs[i].found = 1;
				funcs[i].id = id;
				funcs[i].proto_id = r.type;
				left--;
			}
	}
	nr_types = id - 1;
	for (size_t i = 0; i < n; i++) {
		if (!funcs[i].found)
			continue;
		if (!funcs[i].proto_id || funcs[i].proto_id > nr_types)
			return -EBADMSG;
		if (funcs[i].proto_id > last_proto)
			last_proto = funcs[i].proto_id;
	}
	/* the prototypes: a second walk, as far as the last one (every
	 * record in it was checked by the first) */
	for (off = 0, id = 1; id <= last_proto; off += r.len, id++) {
		if ((ret = rec_at(&v, off, &r)))
			return ret;
		for (size_t i = 0; i < n; i++) {
			if (!funcs[i].found || funcs[i].proto_id != id)
				continue;
			if (r.kind != KIND_FUNC_PROTO)
				return -EBADMSG;
			funcs[i].nr_params = r.vlen;
		}
	}
	return 0;
}

/* Into an anonymous mapping, grown by doubling: sysfs gives a bin file
 * 4 KiB per read() and may state a wrong size. @hint: fstat's size. */
static int read_whole(int fd, size_t hint, struct ustack_btf_file *f)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), cap, n = 0;
	uint8_t *p, *q;

	/* room for the size stated and the read that returns 0, faulted in
	 * at once: 1,300 page faults one by one cost more than the reads */
	cap = hint < FILE_MAX ? (hint + page) & ~(page - 1) : FILE_MAX;
	p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		 -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	for (;;) {
		ssize_t got;

		if (n == cap) {
			if (cap >= FILE_MAX) {
				munmap(p, cap);
				return -EFBIG;
			}
			q = mremap(p, cap, cap * 2 < FILE_MAX ? cap * 2 : FILE_MAX, MREMAP_MAYMOVE);
			if (q == MAP_FAILED) {
				int err = errno;

				munmap(p, cap);
				return -err;
			}
			p = q;
			cap = cap * 2 < FILE_MAX ? cap * 2 : FILE_MAX;
		}
		got = read(fd, p + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int err = errno;

			munmap(p, cap);
			return -err;
		}
		if (!got)
			break;
		n += (size_t)got;
	}
	f->data = p;
	f->len = n;
	f->map_len = cap;
	return 0;
}

int ustack_btf_file__open(struct ustack_btf_file *f, const char *path)
{
	struct stat st;
	int fd, ret;

	memset(f, 0, sizeof(*f));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		goto out;
	}
	/* no copy where the file can be mapped; a size stated too small
	 * only cuts the blob short, which the scan then refuses */
	if (st.st_size > 0 && (uint64_t)st.st_size <= FILE_MAX) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (p != MAP_FAILED) {
			f->data = p;
			f->len = f->map_len = (size_t)st.st_size;
			ret = 0;
			goto out;
		}
	}
	ret = read_whole(fd, st.st_size > 0 ? (size_t)st.st_size : 0, f);
out:
	close(fd);
	return ret;
}

void ustack_btf_file__close(struct ustack_btf_file *f)
{
	if (f->map_len)
		munmap((void *)f->data, f->map_len);
	memset(f, 0, sizeof(*f));
}

int ustack_btf_scan_file(const char *path, struct ustack_btf_func *funcs, size_t n)
{
	struct ustack_btf_file f;
	int ret = ustack_btf_file__open(&f, path);

	if (ret)
		return ret;
	ret = ustack_btf_scan_funcs(f.data, f.len, funcs, n);
	ustack_btf_file__close(&f);
	return ret;
}
