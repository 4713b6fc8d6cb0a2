// SPDX-License-Identifier: MIT
/*
 * PYFUNC records and Python frames (trace format 1.5, docs/trace-format.md
 * sections 3.13 and 4.3): what the writer puts down comes back, a reader
 * asks for type 13 to get the records, every invalid form is refused at
 * its offset, and a Python FILE_MAP names no ELF file.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ustack/procmaps.h>
#include <ustack/trace.h>

#include "common/crc32.h"
#include "test.h"

#define FILE_PY 0x77

static const struct ustack_trace_frame py_frames[] = {
	{ 0, FILE_PY, USTACK_METHOD_REGS, USTACK_TRACE_FRAME_EXACT_PC },
	{ 0, FILE_PY, USTACK_METHOD_REGS, USTACK_TRACE_FRAME_EXACT_PC },
};

static int py_stack(void *ctx, uint32_t kind, uint32_t id, struct ustack_trace_stack *st)
{
	static struct ustack_trace_frame f[2];

	(void)ctx;
	if (kind != USTACK_TRACE_USTACK || id != 0)
		return -ENOENT;
	memcpy(f, py_frames, sizeof(f));
	f[0].offset = ustack_trace_py_offset(3, 17);
	f[1].offset = ustack_trace_py_offset((UINT64_C(1) << 40) - 1, USTACK_TRACE_PY_LINE_MAX);
	st->frames = f;
	st->nr = 2;
	return 0;
}

static int py_file_map(void *ctx, uint64_t id, struct ustack_file_map *fm)
{
	(void)ctx;
	if (id != FILE_PY)
		return -ENOENT;
	fm->kind = USTACK_TRACE_FILE_KIND_PYTHON;
	fm->path = "[python]";
	return 0;
}

static const char *tmp_path(void)
{
	static char p[64];

	snprintf(p, sizeof(p), "/tmp/ustack-test-pyfunc-%d.ustack", (int)getpid());
	return p;
}

static struct ustack_trace_reader *open_all(const char *path)
{
	struct ustack_trace_reader_opts o = { .sz = sizeof(o),
					      .max_type = USTACK_TRACE_RECORD_TYPE_MAX };

	return ustack_trace_reader__open(path, &o);
}

static const struct ustack_trace_pyfunc fn3 = { 3, 4242, 12, "Walker.step", "/srv/app/walk.py" };
static const struct ustack_trace_pyfunc fnmax = { (UINT64_C(1) << 40) - 1, 4242, 0, "<lambda>",
						  "<string>" };

/* PYFUNCs before and after the stack that names them, one repeated: each
 * comes back with its fields, the frames' offsets split into id and line,
 * and the lookup answers for both. */
static void test_pyfunc_roundtrip(void)
{
	struct ustack_trace_header h = { .clock_id = 1 };
	struct ustack_trace_writer_opts o = { .sz = sizeof(o), .get_stack = py_stack,
					      .get_file_map = py_file_map };
	struct ustack_trace_user_stack u = { .time = 5, .pid = 4242, .tid = 4242,
					     .cookie = 0x300000001ull, .stack_id = 0 };
	const char *path = tmp_path();
	struct ustack_trace_writer *w = ustack_trace_writer__open(path, &h, &o);
	struct ustack_trace_reader *r;
	struct ustack_trace_record rec;
	struct ustack_trace_pyfunc got, bad;
	struct ustack_trace_stack st;
	struct ustack_file_map fm;
	int ret, npf = 0, nstack = 0;

	CHECK(w);
	CHECK_EQ(ustack_trace_writer__add_pyfunc(w, &fn3), 0);
	CHECK_EQ(ustack_trace_writer__add_user_stack(w, &u), 0);
	CHECK_EQ(ustack_trace_writer__add_pyfunc(w, &fnmax), 0);
	CHECK_EQ(ustack_trace_writer__add_pyfunc(w, &fn3), 0);
	bad = fn3; bad.id = 0;
	CHECK_EQ(ustack_trace_writer__add_pyfunc(w, &bad), -EINVAL);
	bad = fn3; bad.id = UINT64_C(1) << 40;
	CHECK_EQ(ustack_trace_writer__add_pyfunc(w, &bad), -EINVAL);
	bad = fn3; bad.name = "";
	CHECK_EQ(ustack_trace_writer__add_pyfunc(w, &bad), -EINVAL);
	CHECK_EQ(ustack_trace_writer__close(w), 0);

	r = open_all(path);
	CHECK(r);
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		if (rec.type == USTACK_TRACE_PYFUNC) {
			const struct ustack_trace_pyfunc *want = npf == 1 ? &fnmax : &fn3;

			CHECK_EQ_U64(rec.pyfunc.id, want->id);
			CHECK_EQ(rec.pyfunc.pid, want->pid);
			CHECK_EQ(rec.pyfunc.first_line, want->first_line);
			CHECK_STR(rec.pyfunc.name, want->name);
			CHECK_STR(rec.pyfunc.file, want->file);
			npf++;
		} else if (rec.type == USTACK_TRACE_FILE_MAP) {
			CHECK_EQ(rec.file_map.kind, USTACK_TRACE_FILE_KIND_PYTHON);
			CHECK_STR(rec.file_map.path, "[python]");
		} else if (rec.type == USTACK_TRACE_USER_STACK) {
			CHECK_EQ(ustack_trace_reader__stack(r, USTACK_TRACE_USTACK, 0, &st), 0);
			CHECK_EQ(st.nr, 2);
			CHECK_EQ_U64(ustack_trace_py_offset_func(st.frames[0].offset), 3);
			CHECK_EQ(ustack_trace_py_offset_line(st.frames[0].offset), 17);
			CHECK_EQ_U64(ustack_trace_py_offset_func(st.frames[1].offset), fnmax.id);
			CHECK_EQ(ustack_trace_py_offset_line(st.frames[1].offset),
				 USTACK_TRACE_PY_LINE_MAX);
			CHECK_EQ(ustack_trace_reader__file_map(r, FILE_PY, &fm), 0);
			nstack++;
		}
	}
	CHECK_EQ(ret, 0);
	CHECK_EQ(npf, 3);
	CHECK_EQ(nstack, 1);
	CHECK_EQ(ustack_trace_reader__pyfunc(r, 3, &got), 0);
	CHECK_STR(got.name, "Walker.step");
	CHECK_STR(got.file, "/srv/app/walk.py");
	CHECK_EQ(got.first_line, 12);
	CHECK_EQ(ustack_trace_reader__pyfunc(r, fnmax.id, &got), 0);
	CHECK_STR(got.name, "<lambda>");
	CHECK_EQ(ustack_trace_reader__pyfunc(r, 4, &got), -ENOENT);
	ustack_trace_reader__close(r);

	/* a caller built before type 13 does not get the records; they are
	 * checked and known to the lookup all the same */
	r = ustack_trace_reader__open(path, NULL);
	CHECK(r);
	npf = 0;
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1)
		npf += rec.type == USTACK_TRACE_PYFUNC;
	CHECK_EQ(ret, 0);
	CHECK_EQ(npf, 0);
	CHECK_EQ(ustack_trace_reader__pyfunc(r, 3, &got), 0);
	ustack_trace_reader__close(r);
	unlink(path);
}

static size_t put_file_header(uint8_t *out)
{
	static const uint8_t h[28] = { 0x7f, 'U', 'S', 'T', 'A', 'C', 'K', '\n', 1, 0, 5, 0,
				       4, 3, 2, 1, 8, 32 };
	uint32_t crc = ustack_crc32(0, h, 28);

	memcpy(out, h, 28);
	memcpy(out + 28, &crc, 4);
	return 32;
}

/* One chunk of @payload (@nrec records) read asking for every type: the
 * records read, the error message. */
static int read_one_chunk(const uint8_t *payload, uint32_t plen, uint32_t nrec, int *nrecs,
			  char *msg, size_t msgsz)
{
	static uint8_t file[1024];
	struct ustack_trace_reader_opts o = { .sz = sizeof(o),
					      .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_trace_reader *r;
	struct ustack_trace_record rec;
	size_t n = put_file_header(file);
	uint32_t seq = 0, crc;
	int ret;

	memcpy(file + n, "UCHK", 4);
	memcpy(file + n + 4, &seq, 4);
	memcpy(file + n + 8, &plen, 4);
	memcpy(file + n + 12, &nrec, 4);
	memcpy(file + n + 20, payload, plen);
	crc = ustack_crc32(ustack_crc32(0, file + n, 16), payload, plen);
	memcpy(file + n + 16, &crc, 4);
	n += 20 + plen;
	r = ustack_trace_reader__open_mem(file, n, &o);
	CHECK(r);
	*nrecs = 0;
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1)
		(*nrecs)++;
	snprintf(msg, msgsz, "%s", ustack_trace_reader__error(r));
	ustack_trace_reader__close(r);
	return ret;
}

/* Each invalid PYFUNC (and Python FILE_MAP) stops the reader at its own
 * offset with its reason; the valid neighbours read. Records start at
 * 52 + 10 = 62 (after the HEADER); the second record at 62 + 12 = 74. */
static void test_pyfunc_invalid(void)
{
	static const uint8_t hdr_rec[] = { 1, 8, 1, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t end_rec[] = { 10, 8, 0, 0, 0, 0, 0, 1, 0, 0 };
	/* id 5, pid 7, first line 3, "f", "a.py" */
	static const uint8_t pf5[] = { 13, 10, 5, 7, 3, 1, 'f', 4, 'a', '.', 'p', 'y' };
	static const uint8_t pf5_line4[] = { 13, 10, 5, 7, 4, 1, 'f', 4, 'a', '.', 'p', 'y' };
	static const uint8_t pf5_name_g[] = { 13, 10, 5, 7, 3, 1, 'g', 4, 'a', '.', 'p', 'y' };
	static const uint8_t pf5_pid8[] = { 13, 10, 5, 8, 3, 1, 'f', 4, 'a', '.', 'p', 'y' };
	static const uint8_t pf0[] = { 13, 10, 0, 7, 3, 1, 'f', 4, 'a', '.', 'p', 'y' };
	/* id 2^40 (varint 80 80 80 80 80 20), and 2^40 - 1 */
	static const uint8_t pf_big[] = { 13, 15, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 7, 3, 1, 'f',
					  4, 'a', '.', 'p', 'y' };
	static const uint8_t pf_max[] = { 13, 15, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 7, 3, 1, 'f',
					  4, 'a', '.', 'p', 'y' };
	static const uint8_t pf_noname[] = { 13, 9, 5, 7, 3, 0, 4, 'a', '.', 'p', 'y' };
	static const uint8_t pf_nofile[] = { 13, 6, 5, 7, 3, 1, 'f', 0 };
	static const uint8_t pf_nul[] = { 13, 10, 5, 7, 3, 1, 0, 4, 'a', '.', 'p', 'y' };
	/* the file string cut: 4 bytes announced, 2 in the body */
	static const uint8_t pf_cut[] = { 13, 8, 5, 7, 3, 1, 'f', 4, 'a', '.' };
	/* pid above 2^32 */
	static const uint8_t pf_pid_big[] = { 13, 14, 5, 0x80, 0x80, 0x80, 0x80, 0x10, 3, 1, 'f', 4,
					      'a', '.', 'p', 'y' };
	/* FILE_MAP id 9 of kind 10: plain, then with a 1-byte build ID, then an inode */
	static const uint8_t fm_py[] = { 7, 12, 9, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t fm_py_bid[] = { 7, 13, 9, 10, 0, 0, 1, 0xaa, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t fm_py_ino[] = { 7, 12, 9, 10, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0 };
	uint8_t p[256];
	char msg[256];
	size_t n;
	int nrecs;

#define CAT(x) (memcpy(p + n, x, sizeof(x)), n += sizeof(x))
#define READ(nrec) read_one_chunk(p, (uint32_t)n, nrec, &nrecs, msg, sizeof(msg))
	n = 0; CAT(hdr_rec); CAT(pf5); CAT(pf5); CAT(pf_max); CAT(end_rec);
	CHECK_EQ(READ(5), 0);
	CHECK_EQ(nrecs, 5);

	n = 0; CAT(hdr_rec); CAT(pf0); CAT(end_rec);
	CHECK_EQ(READ(3), -EBADMSG);
	CHECK_EQ(nrecs, 1);
	CHECK_STR(msg, "offset 62: chunk 0: PYFUNC record: id not in 1 .. 2^40-1");

	n = 0; CAT(hdr_rec); CAT(pf_big); CAT(end_rec);
	CHECK_EQ(READ(3), -EBADMSG);
	CHECK_STR(msg, "offset 62: chunk 0: PYFUNC record: id not in 1 .. 2^40-1");

	n = 0; CAT(hdr_rec); CAT(pf_noname); CAT(end_rec);
	CHECK_EQ(READ(3), -EBADMSG);
	CHECK_STR(msg, "offset 62: chunk 0: PYFUNC record: empty name");

	n = 0; CAT(hdr_rec); CAT(pf_nofile); CAT(end_rec);
	CHECK_EQ(READ(3), -EBADMSG);
	CHECK_STR(msg, "offset 62: chunk 0: PYFUNC record: empty file");

	n = 0; CAT(hdr_rec); CAT(pf_nul); CAT(end_rec);
	CHECK_EQ(READ(3), -EBADMSG);
	CHECK_STR(msg, "offset 62: chunk 0: PYFUNC record: bad field");

	n = 0; CAT(hdr_rec); CAT(pf_cut); CAT(end_rec);
	CHECK_EQ(READ(3), -EBADMSG);
	CHECK_STR(msg, "offset 62: chunk 0: PYFUNC record: bad field");

	n = 0; CAT(hdr_rec); CAT(pf_pid_big); CAT(end_rec);
	CHECK_EQ(READ(3), -EBADMSG);
	CHECK_STR(msg, "offset 62: chunk 0: PYFUNC record: bad field");

	/* one id said twice differently: each field counts */
	n = 0; CAT(hdr_rec); CAT(pf5); CAT(pf5_line4); CAT(end_rec);
	CHECK_EQ(READ(4), -EBADMSG);
	CHECK_EQ(nrecs, 2);
	CHECK_STR(msg, "offset 74: chunk 0: PYFUNC record: function id redefined differently");
	n = 0; CAT(hdr_rec); CAT(pf5); CAT(pf5_name_g); CAT(end_rec);
	CHECK_EQ(READ(4), -EBADMSG);
	CHECK_STR(msg, "offset 74: chunk 0: PYFUNC record: function id redefined differently");
	n = 0; CAT(hdr_rec); CAT(pf5); CAT(pf5_pid8); CAT(end_rec);
	CHECK_EQ(READ(4), -EBADMSG);
	CHECK_STR(msg, "offset 74: chunk 0: PYFUNC record: function id redefined differently");

	n = 0; CAT(hdr_rec); CAT(fm_py); CAT(end_rec);
	CHECK_EQ(READ(3), 0);
	n = 0; CAT(hdr_rec); CAT(fm_py_bid); CAT(end_rec);
	CHECK_EQ(READ(3), -EBADMSG);
	CHECK_STR(msg, "offset 62: chunk 0: FILE_MAP record: Python file map (kind 10) with a "
		       "build ID, device, inode or debuglink");
	n = 0; CAT(hdr_rec); CAT(fm_py_ino); CAT(end_rec);
	CHECK_EQ(READ(3), -EBADMSG);
	CHECK(strstr(msg, "Python file map (kind 10)"));
#undef READ
#undef CAT
}

/* A 1.4 trace (the golden example as 1.4 wrote it) reads whole: a 1.5
 * reader adds a record type, it takes nothing away. */
static void test_minor_4_reads(void)
{
	const char *p14 = "tests/data/trace/tiny-1.4.ustack";
	struct ustack_trace_reader *r;
	struct ustack_trace_record rec;
	int ret, n = 0, nstack = 0;

	if (access(p14, R_OK))
		SKIP("%s not found (run from the top of the tree)", p14);
	r = open_all(p14);
	CHECK(r);
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		n++;
		if (rec.type == USTACK_TRACE_STACK) {
			CHECK_EQ(rec.stack.nr, 2);
			CHECK_EQ_U64(rec.stack.frames[0].offset, 0x1149);
			nstack++;
		}
		CHECK(rec.type != USTACK_TRACE_PYFUNC);
	}
	CHECK_EQ(ret, 0);
	CHECK_EQ(nstack, 1);
	CHECK(n >= 6);
	ustack_trace_reader__close(r);
}

int main(void)
{
	RUN(test_pyfunc_roundtrip);
	RUN(test_pyfunc_invalid);
	RUN(test_minor_4_reads);
	TEST_EXIT();
}
