// SPDX-License-Identifier: MIT
/*
 * ABI of the public opts and output structs (docs/api.md, "ABI rules").
 *
 * Every public function taking an opts struct is called with five forms of
 * it, as programs built against other headers pass them:
 *   NULL                       defaults (or -EINVAL where a field is required)
 *   "old": sz cut before the last field, the bytes after sz garbage (an
 *          older, shorter header: those bytes are not the caller's struct
 *          and must not be read; ASan and the garbage values tell)
 *   "big0": sz 16 bytes larger, the tail zero (a newer header that asks
 *          for nothing new): accepted
 *   "bigx": the same with one non-zero tail byte (asks for something this
 *          library cannot do): -EINVAL / NULL + EINVAL
 *   "tiny": sz smaller than size_t: -EINVAL
 * The oracle of "accepted" is a call that gets past the opts check: it
 * succeeds, or fails with the errno of its real work (ENOENT, ESRCH ...),
 * never EINVAL. Output structs (stats, records, frame info) are checked
 * the other way: an older caller's smaller struct is not written past its
 * size, a newer caller's unknown tail is zeroed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ustack/procmaps.h>
#include <ustack/record.h>
#include <ustack/sframe.h>
#include <ustack/snapshot.h>
#include <ustack/stackmap.h>
#include <ustack/symbolize.h>
#include <ustack/trace.h>
#include <ustack/unwind.h>
#include "test.h"

enum { V_NULL, V_FULL, V_OLD, V_BIG0, V_BIGX, V_TINY, NR_V };
static const char *const vname[NR_V] = { "NULL", "full", "old", "big0", "bigx", "tiny" };
/* 1: accepted; 0: refused with EINVAL. NULL is per function. */
static const int v_ok[NR_V] = { 1, 1, 1, 1, 0, 0 };

#define TAIL 16
static alignas(16) unsigned char vbuf[1024];

/*
 * The caller's struct of form @v, made from @full (@size bytes, its last
 * field at @last). Returns NULL for V_NULL.
 */
static void *variant(const void *full, size_t size, size_t last, int v)
{
	size_t sz = size;

	if (size + TAIL > sizeof(vbuf))
		abort();
	memset(vbuf, 0, sizeof(vbuf));
	if (v == V_NULL)
		return NULL;
	memcpy(vbuf, full, size);
	switch (v) {
	case V_OLD:
		sz = last;
		/* not the caller's struct any more: whatever is on its stack */
		memset(vbuf + last, 0xa5, size + TAIL - last);
		break;
	case V_BIG0:
		sz = size + TAIL;
		break;
	case V_BIGX:
		sz = size + TAIL;
		vbuf[size + 9] = 1;
		break;
	case V_TINY:
		sz = 4;
		break;
	}
	memcpy(vbuf, &sz, sizeof(sz));
	return vbuf;
}

#define VARIANT(obj, last_field, v) \
	variant(&(obj), sizeof(obj), offsetof(__typeof__(obj), last_field), (v))

static char tmpdir[64];

static void make_tmpdir(void)
{
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/ustack_opts_abi.XXXXXX");
		if (!mkdtemp(tmpdir))
			abort();
	}
}

/* A pid that names no process (above the kernel's pid_max limit). */
#define NO_PID ((1 << 22) + 12345)

/* ---- one function per public entry point: 1 accepted, 0 EINVAL ------------ */

/* Returns 1/0 for a pointer result; anything else fails the test. */
#define PTR_RESULT(p, accepted_errno_ok) do { \
	if (p) return 1; \
	if (errno == EINVAL) return 0; \
	CHECK(accepted_errno_ok); return 1; } while (0)

static int call_trace_writer_open(int v)
{
	struct ustack_trace_writer_opts o = { .sz = sizeof(o), .chunk_size = 4096 };
	struct ustack_trace_header hdr = { .clock_id = 1 };
	char path[128];
	struct ustack_trace_writer *w;

	make_tmpdir();
	snprintf(path, sizeof(path), "%s/w.trace", tmpdir);
	errno = 0;
	w = ustack_trace_writer__open(path, &hdr, VARIANT(o, ctx, v));
	if (w) {
		CHECK_EQ(ustack_trace_writer__close(w), 0);
		return 1;
	}
	CHECK_EQ(errno, EINVAL);
	return 0;
}

static int call_trace_writer_open_fd(int v)
{
	struct ustack_trace_writer_opts o = { .sz = sizeof(o) };
	struct ustack_trace_header hdr = { .clock_id = 1 };
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct ustack_trace_writer *w;

	CHECK(fd >= 0);
	errno = 0;
	w = ustack_trace_writer__open_fd(fd, &hdr, VARIANT(o, ctx, v));
	if (w)
		CHECK_EQ(ustack_trace_writer__close(w), 0);
	else
		CHECK_EQ(errno, EINVAL);
	close(fd);
	return !!w;
}

static int call_trace_reader_open(int v)
{
	struct ustack_trace_reader_opts o = { .sz = sizeof(o), .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_trace_reader *r;

	errno = 0;
	/* any readable file: format errors come from __next(), not here */
	r = ustack_trace_reader__open("/proc/self/exe", VARIANT(o, max_type, v));
	if (r) {
		ustack_trace_reader__close(r);
		return 1;
	}
	CHECK_EQ(errno, EINVAL);
	return 0;
}

static int call_trace_reader_open_mem(int v)
{
	static const char junk[64];
	struct ustack_trace_reader_opts o = { .sz = sizeof(o) };
	struct ustack_trace_reader *r;

	errno = 0;
	r = ustack_trace_reader__open_mem(junk, sizeof(junk), VARIANT(o, max_type, v));
	if (r) {
		ustack_trace_reader__close(r);
		return 1;
	}
	CHECK_EQ(errno, EINVAL);
	return 0;
}

static int call_procmaps_open(int v)
{
	char err[128] = "";
	struct ustack_procmaps_opts o = { .sz = sizeof(o), .flags = USTACK_PROCMAPS_NO_ELF,
					  .errbuf = err, .errbuf_sz = sizeof(err) };
	struct ustack_procmaps *pm;

	errno = 0;
	pm = ustack_procmaps__open(0, VARIANT(o, errbuf_sz, v));
	if (pm) {
		ustack_procmaps__close(pm);
		return 1;
	}
	CHECK_EQ(errno, EINVAL);
	return 0;
}

static int call_procmaps_open_text(int v)
{
	static const char text[] = "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/true\n";
	static const char bad[] = "00400000-zz r-xp 00000000 08:02 173521 /usr/bin/true\n";
	char err[128] = "";
	struct ustack_procmaps_opts o = { .sz = sizeof(o), .name = "t.maps",
					  .errbuf = err, .errbuf_sz = sizeof(err) };
	struct ustack_procmaps *pm;
	void *op = VARIANT(o, errbuf_sz, v);

	errno = 0;
	pm = ustack_procmaps__open_text(text, sizeof(text) - 1, op);
	if (!pm) {
		CHECK_EQ(errno, EINVAL);
		return 0;
	}
	ustack_procmaps__close(pm);
	/* the error message of a malformed line, where the struct has errbuf */
	errno = 0;
	CHECK(!ustack_procmaps__open_text(bad, sizeof(bad) - 1, op));
	CHECK_EQ(errno, EBADMSG);
	if (v == V_FULL || v == V_BIG0)
		CHECK_STR(err, "t.maps: line 1: bad address range");
	else
		CHECK_STR(err, "");
	return 1;
}

static int call_stackmap_new(int v)
{
	struct ustack_stackmap_opts o = { .sz = sizeof(o), .capacity = 64, .arena_words = 4096,
					  .max_threads = 2, .seed = 7 };
	struct ustack_stackmap *m;

	errno = 0;
	m = ustack_stackmap__new(VARIANT(o, seed, v));
	if (m) {
		/* "old" leaves seed out: capacity (before it) still counts */
		struct ustack_stackmap_stats st;

		CHECK_EQ(ustack_stackmap__stats(m, &st, sizeof(st)), 0);
		CHECK_EQ(st.capacity, v == V_NULL ? USTACK_STACKMAP_DEF_CAPACITY : 64);
		ustack_stackmap__free(m);
		return 1;
	}
	CHECK_EQ(errno, EINVAL);
	return 0;
}

static void *bin_data;
static size_t bin_size;

static int call_stackmap_bin_open(int v)
{
	char err[128] = "";
	struct ustack_stackmap_bin_opts o = { .sz = sizeof(o), .errbuf = err,
					      .errbuf_sz = sizeof(err) };
	struct ustack_stackmap_bin *b;
	void *op = VARIANT(o, errbuf_sz, v);
	static const char bad[16] = "XXXX";

	errno = 0;
	b = ustack_stackmap_bin__open(bin_data, bin_size, op);
	if (!b) {
		CHECK_EQ(errno, EINVAL);
		CHECK_STR(err, "");
		return 0;
	}
	CHECK_EQ(ustack_stackmap_bin__nr_stacks(b), 1);
	ustack_stackmap_bin__free(b);
	CHECK(!ustack_stackmap_bin__open(bad, sizeof(bad), op));
	CHECK_EQ(errno, EBADMSG);
	if (v == V_FULL || v == V_BIG0)
		CHECK(strstr(err, "bad magic") != NULL);
	else
		CHECK_STR(err, "");
	return 1;
}

static int call_symbolizer_new(int v)
{
	struct ustack_symbolizer_opts o = { .sz = sizeof(o), .debug_dir = "/nonexistent" };
	struct ustack_symbolizer *s;

	errno = 0;
	s = ustack_symbolizer__new(VARIANT(o, debug_dir, v));
	if (s) {
		ustack_symbolizer__free(s);
		return 1;
	}
	CHECK_EQ(errno, EINVAL);
	return 0;
}

static int call_snapshot(int v)
{
	char err[128] = "";
	struct ustack_snapshot_opts o = { .sz = sizeof(o), .max_depth = 8,
					  .errbuf = err, .errbuf_sz = sizeof(err) };
	int ret = ustack_snapshot(NO_PID, VARIANT(o, errbuf_sz, v), NULL, NULL, NULL, 0);

	if (ret == -EINVAL) {
		CHECK_STR(err, "");
		return 0;
	}
	CHECK_EQ(ret, -ESRCH);
	if (v == V_FULL || v == V_BIG0)
		CHECK(strstr(err, "no such process") != NULL);
	else
		CHECK_STR(err, "");
	return 1;
}

static int call_snapshot_core(int v)
{
	char err[128] = "";
	struct ustack_snapshot_core_opts o = { .sz = sizeof(o), .errbuf = err,
					       .errbuf_sz = sizeof(err) };
	int ret = ustack_snapshot_core("/nonexistent/core", VARIANT(o, errbuf_sz, v), NULL, NULL,
				       NULL, 0);

	if (ret == -EINVAL)
		return 0;
	CHECK_EQ(ret, -ENOENT);
	return 1;
}

static int call_unwinder_new(int v)
{
	struct ustack_unwinder_opts o = { .sz = sizeof(o), .max_tables = 4 };
	struct ustack_unwinder *u;

	errno = 0;
	u = ustack_unwinder__new(VARIANT(o, max_tables, v));
	if (u) {
		ustack_unwinder__free(u);
		return 1;
	}
	CHECK_EQ(errno, EINVAL);
	return 0;
}

static int call_unwinder_add_mapping(int v)
{
	struct ustack_unwinder *u = ustack_unwinder__new(NULL);
	struct ustack_mapping m = { .sz = sizeof(m), .start = 0x1000, .end = 0x2000,
				    .path = "/nonexistent", .flags = USTACK_MAPPING_EXEC };
	int ret;

	CHECK(u);
	ret = ustack_unwinder__add_mapping(u, VARIANT(m, flags, v));
	ustack_unwinder__free(u);
	if (v == V_NULL) {
		CHECK_EQ(ret, -EINVAL); /* the mapping is the argument */
		return 1;
	}
	CHECK(ret == 0 || ret == -EINVAL);
	return ret == 0;
}

static int call_unwinder_unwind(int v)
{
	static uint64_t stack[64];
	struct ustack_unwinder *u = ustack_unwinder__new(NULL);
	struct ustack_regs regs = { .pc = 0x1234, .sp = 0x10000, .fp = 0 };
	struct ustack_unwind_opts o = { .sz = sizeof(o), .stack = stack, .stack_size = sizeof(stack),
					.stack_addr = 0x10000, .flags = 0 };
	struct ustack_frame frames[4];
	unsigned int stop;
	int ret;

	CHECK(u);
	ret = ustack_unwinder__unwind(u, &regs, VARIANT(o, flags, v), frames, 4, &stop);
	ustack_unwinder__free(u);
	if (v == V_NULL) {
		CHECK_EQ(ret, -EINVAL); /* the memory to read is required */
		return 1;
	}
	if (ret == -EINVAL)
		return 0;
	CHECK(ret >= 1);
	CHECK_EQ_U64(frames[0].pc, 0x1234);
	return 1;
}

static int call_sframe_open(int v)
{
	char err[128] = "";
	struct ustack_sframe_file_opts o = { .sz = sizeof(o), .errbuf = err,
					     .errbuf_sz = sizeof(err) };
	struct ustack_sframe_file *f;

	errno = 0;
	f = ustack_sframe_file__open_opts("/nonexistent/elf", VARIANT(o, errbuf_sz, v));
	CHECK(!f);
	if (errno == EINVAL)
		return 0;
	CHECK_EQ(errno, ENOENT);
	if (v == V_FULL || v == V_BIG0)
		CHECK_STR(err, strerror(ENOENT));
	return 1;
}

static int call_recorder_new(int v)
{
	char err[256] = "", path[128];
	int pid = NO_PID;
	struct ustack_record_opts o = { .sz = sizeof(o), .pids = &pid, .nr_pids = 1,
					.errbuf = err, .errbuf_sz = sizeof(err),
					.backend = USTACK_RECORD_COPY, .table_memory = 1 << 20 };
	struct ustack_recorder *rec;

	make_tmpdir();
	snprintf(path, sizeof(path), "%s/r.trace", tmpdir);
	o.output = path;
	errno = 0;
	rec = ustack_recorder__new(VARIANT(o, table_memory, v));
	if (v == V_NULL) {
		/* no target: there is no default one */
		CHECK(!rec);
		CHECK_EQ(errno, EINVAL);
		return 1;
	}
	if (rec) { /* cannot happen for a pid that does not exist */
		ustack_recorder__free(rec);
		CHECK(0);
	}
	if (errno == EINVAL) {
		CHECK_STR(err, "");
		return 0;
	}
	/* ESRCH, or EACCES/EPERM where perf events are not allowed */
	CHECK(err[0]);
	return 1;
}

static int call_record(int v)
{
	char err[256] = "", path[128];
	int pid = NO_PID, ret;
	struct ustack_record_opts o = { .sz = sizeof(o), .pids = &pid, .nr_pids = 1,
					.errbuf = err, .errbuf_sz = sizeof(err),
					.backend = USTACK_RECORD_COPY };
	struct ustack_record_stats st;

	make_tmpdir();
	snprintf(path, sizeof(path), "%s/r2.trace", tmpdir);
	o.output = path;
	ret = ustack_record(VARIANT(o, table_memory, v), &st, sizeof(st));
	if (v == V_NULL) {
		CHECK_EQ(ret, -EINVAL);
		return 1;
	}
	CHECK(ret < 0);
	if (ret == -EINVAL) {
		CHECK_STR(err, "");
		return 0;
	}
	CHECK(err[0]);
	return 1;
}

/* ---- the driver ------------------------------------------------------------- */

struct entry {
	const char *name;
	int (*call)(int v);
	int null_ok; /* what NULL opts give: 1 accepted (defaults) */
};

static const struct entry entries[] = {
	{ "ustack_trace_writer__open", call_trace_writer_open, 1 },
	{ "ustack_trace_writer__open_fd", call_trace_writer_open_fd, 1 },
	{ "ustack_trace_reader__open", call_trace_reader_open, 1 },
	{ "ustack_trace_reader__open_mem", call_trace_reader_open_mem, 1 },
	{ "ustack_procmaps__open", call_procmaps_open, 1 },
	{ "ustack_procmaps__open_text", call_procmaps_open_text, 1 },
	{ "ustack_stackmap__new", call_stackmap_new, 1 },
	{ "ustack_stackmap_bin__open", call_stackmap_bin_open, 1 },
	{ "ustack_symbolizer__new", call_symbolizer_new, 1 },
	{ "ustack_snapshot", call_snapshot, 1 },
	{ "ustack_snapshot_core", call_snapshot_core, 1 },
	{ "ustack_unwinder__new", call_unwinder_new, 1 },
	/* these return 1 for NULL after checking the documented -EINVAL */
	{ "ustack_unwinder__add_mapping", call_unwinder_add_mapping, 1 },
	{ "ustack_unwinder__unwind", call_unwinder_unwind, 1 },
	{ "ustack_sframe_file__open_opts", call_sframe_open, 1 },
	{ "ustack_recorder__new", call_recorder_new, 1 },
	{ "ustack_record", call_record, 1 },
};

static const char *cur_entry, *cur_variant;

static void test_every_opts_function(void)
{
	struct ustack_stackmap *m = ustack_stackmap__new(NULL);
	uint64_t ips[3] = { 1, 2, 3 };
	uint32_t id;

	CHECK(m);
	CHECK_EQ(ustack_stackmap__insert(m, ips, 3, &id), 1);
	CHECK_EQ(ustack_stackmap__export_bin(m, &bin_data, &bin_size), 1);
	ustack_stackmap__free(m);
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		for (int v = 0; v < NR_V; v++) {
			int want = v == V_NULL ? entries[i].null_ok : v_ok[v];
			int got;

			cur_entry = entries[i].name;
			cur_variant = vname[v];
			got = entries[i].call(v);
			if (got != want)
				printf("# %s with %s opts: %s, expected %s\n", cur_entry, cur_variant,
				       got ? "accepted" : "EINVAL", want ? "accepted" : "EINVAL");
			CHECK_EQ(got, want);
		}
	}
	free(bin_data);
}

/* ---- output structs ------------------------------------------------------------ */

#define SENTINEL 0x5a

static int all_bytes(const void *p, size_t n, unsigned char c)
{
	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)p)[i] != c)
			return 0;
	return 1;
}

static void test_stats_sizes(void)
{
	struct ustack_stackmap *m = ustack_stackmap__new(NULL);
	unsigned char buf[sizeof(struct ustack_stackmap_stats) + TAIL];
	struct ustack_stackmap_stats full;
	size_t old = offsetof(struct ustack_stackmap_stats, wasted);
	uint64_t ips[2] = { 5, 6 };
	uint32_t id;

	CHECK(m);
	CHECK_EQ(ustack_stackmap__insert(m, ips, 2, &id), 1);
	CHECK_EQ(ustack_stackmap__stats(m, &full, sizeof(full)), 0);
	CHECK_EQ(full.entries, 1);
	/* older caller: nothing written past its size */
	memset(buf, SENTINEL, sizeof(buf));
	CHECK_EQ(ustack_stackmap__stats(m, (void *)buf, old), 0);
	CHECK(!memcmp(buf, &full, old));
	CHECK(all_bytes(buf + old, sizeof(buf) - old, SENTINEL));
	/* newer caller: its unknown tail zeroed */
	memset(buf, SENTINEL, sizeof(buf));
	CHECK_EQ(ustack_stackmap__stats(m, (void *)buf, sizeof(buf)), 0);
	CHECK(!memcmp(buf, &full, sizeof(full)));
	CHECK(all_bytes(buf + sizeof(full), TAIL, 0));
	ustack_stackmap__free(m);

	/* trace writer totals, the same way */
	{
		struct ustack_trace_header hdr = { .clock_id = 1 };
		int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		struct ustack_trace_writer *w = ustack_trace_writer__open_fd(fd, &hdr, NULL);
		unsigned char tb[sizeof(struct ustack_trace_stats) + TAIL];
		size_t told = offsetof(struct ustack_trace_stats, bytes);

		CHECK(w);
		memset(tb, SENTINEL, sizeof(tb));
		CHECK_EQ(ustack_trace_writer__stats(w, (void *)tb, told), 0);
		CHECK(all_bytes(tb + told, sizeof(tb) - told, SENTINEL));
		memset(tb, SENTINEL, sizeof(tb));
		CHECK_EQ(ustack_trace_writer__stats(w, (void *)tb, sizeof(tb)), 0);
		CHECK(all_bytes(tb + sizeof(struct ustack_trace_stats), TAIL, 0));
		CHECK_EQ(ustack_trace_writer__close(w), 0);
		close(fd);
	}

	/* snapshot totals of a failed snapshot: zeroed within the size only */
	{
		unsigned char sb[sizeof(struct ustack_snapshot_stats) + TAIL];
		size_t sold = offsetof(struct ustack_snapshot_stats, pages_read);

		memset(sb, SENTINEL, sizeof(sb));
		CHECK_EQ(ustack_snapshot(NO_PID, NULL, NULL, NULL, (void *)sb, sold), -ESRCH);
		CHECK(all_bytes(sb, sold, 0));
		CHECK(all_bytes(sb + sold, sizeof(sb) - sold, SENTINEL));
	}
}

static void test_frame_info_sizes(void)
{
	static const char text[] = "hello";
	struct ustack_unwinder *u = ustack_unwinder__new(NULL);
	struct ustack_mapping m = { .sz = sizeof(m), .start = 0x1000, .end = 0x2000,
				    .path = "/nonexistent/lib.so", .file_offset = 0x3000 };
	struct ustack_frame f = { .pc = 0x1100, .flags = USTACK_FRAME_EXACT_PC };
	alignas(16) unsigned char buf[sizeof(struct ustack_frame_info) + TAIL];
	struct ustack_frame_info *fi = (void *)buf;
	size_t old = offsetof(struct ustack_frame_info, has_table);

	(void)text;
	CHECK(u);
	CHECK_EQ(ustack_unwinder__add_mapping(u, &m), 0);
	/* older caller without has_table */
	memset(buf, SENTINEL, sizeof(buf));
	fi->sz = old;
	CHECK_EQ(ustack_unwinder__describe(u, &f, fi), 0);
	CHECK_EQ(fi->sz, old);
	CHECK_EQ_U64(fi->file_offset, 0x3100);
	CHECK_EQ_U64(fi->map_start, 0x1000);
	CHECK(all_bytes(buf + old, sizeof(buf) - old, SENTINEL));
	/* newer caller: its tail zeroed, sz kept */
	memset(buf, SENTINEL, sizeof(buf));
	fi->sz = sizeof(buf);
	CHECK_EQ(ustack_unwinder__describe(u, &f, fi), 0);
	CHECK_EQ(fi->sz, sizeof(buf));
	CHECK_EQ(fi->has_table, 0);
	CHECK(all_bytes(buf + sizeof(struct ustack_frame_info), TAIL, 0));
	/* too small to hold anything */
	fi->sz = 4;
	CHECK_EQ(ustack_unwinder__describe(u, &f, fi), -EINVAL);
	ustack_unwinder__free(u);
}

/* A trace with a THREAD, a FILE_MAP-free EVENT and a JITSYM record. */
static void *write_trace(size_t *size)
{
	struct ustack_trace_header hdr = { .clock_id = 1, .hostname = "h" };
	struct ustack_trace_event_desc d = { .id = 0, .name = "cpu-clock" };
	struct ustack_trace_thread t = { .time = 1, .pid = 10, .tid = 10, .comm = "abc" };
	struct ustack_trace_jitsym j = { .pid = 10, .addr = 0x7000, .size = 0x10, .name = "jitfn" };
	int fd = memfd_create("trace", MFD_CLOEXEC);
	struct ustack_trace_writer *w;
	void *buf;
	off_t n;

	if (fd < 0)
		return NULL;
	w = ustack_trace_writer__open_fd(fd, &hdr, NULL);
	if (!w || ustack_trace_writer__add_event_desc(w, &d) || ustack_trace_writer__add_thread(w, &t) ||
	    ustack_trace_writer__add_jitsym(w, &j) || ustack_trace_writer__close(w)) {
		close(fd);
		return NULL;
	}
	n = lseek(fd, 0, SEEK_END);
	buf = malloc(n);
	if (!buf || pread(fd, buf, n, 0) != n) {
		free(buf);
		close(fd);
		return NULL;
	}
	close(fd);
	*size = n;
	return buf;
}

static void test_trace_record_sizes(void)
{
	size_t size = 0;
	void *trace = write_trace(&size);
	alignas(16) unsigned char buf[sizeof(struct ustack_trace_record) + TAIL];
	struct ustack_trace_record *rec = (void *)buf;
	/* a caller whose record ends after the thread member */
	size_t old = offsetof(struct ustack_trace_record, thread) + sizeof(struct ustack_trace_thread);
	struct ustack_trace_reader_opts ro = { .sz = sizeof(ro), .max_type = USTACK_TRACE_KSYM };
	struct ustack_trace_reader *r;
	int ret, threads = 0, jitsyms = 0;

	CHECK(trace);
	/* smaller record: each record written within its size, members whole */
	r = ustack_trace_reader__open_mem(trace, size, NULL);
	CHECK(r);
	for (;;) {
		memset(buf, SENTINEL, sizeof(buf));
		ret = ustack_trace_reader__next(r, rec, old);
		if (ret != 1)
			break;
		CHECK(all_bytes(buf + old, sizeof(buf) - old, SENTINEL));
		if (rec->type == USTACK_TRACE_THREAD) {
			CHECK_STR(rec->thread.comm, "abc");
			CHECK_EQ(rec->thread.tid, 10);
			threads++;
		}
		jitsyms += rec->type == USTACK_TRACE_JITSYM;
	}
	CHECK_EQ(ret, 0);
	CHECK_EQ(threads, 1);
	CHECK_EQ(jitsyms, 1); /* max_type 0: every type of this header */
	/* too small for the common fields */
	CHECK_EQ(ustack_trace_reader__next(r, rec, offsetof(struct ustack_trace_record, header) - 1),
		 -EINVAL);
	ustack_trace_reader__close(r);

	/* a caller that knows types up to KSYM never sees JITSYM */
	r = ustack_trace_reader__open_mem(trace, size, &ro);
	CHECK(r);
	jitsyms = threads = 0;
	while ((ret = ustack_trace_reader__next(r, rec, sizeof(*rec))) == 1) {
		jitsyms += rec->type == USTACK_TRACE_JITSYM;
		threads += rec->type == USTACK_TRACE_THREAD;
	}
	CHECK_EQ(ret, 0);
	CHECK_EQ(threads, 1);
	CHECK_EQ(jitsyms, 0);
	ustack_trace_reader__close(r);

	/* a newer caller's larger record: tail zeroed */
	r = ustack_trace_reader__open_mem(trace, size, NULL);
	CHECK(r);
	memset(buf, SENTINEL, sizeof(buf));
	CHECK_EQ(ustack_trace_reader__next(r, rec, sizeof(buf)), 1);
	CHECK_EQ(rec->type, USTACK_TRACE_HEADER);
	CHECK_STR(rec->header.hostname, "h");
	CHECK(all_bytes(buf + sizeof(struct ustack_trace_record), TAIL, 0));
	ustack_trace_reader__close(r);
	free(trace);
}

static void cleanup(void)
{
	char path[160];

	if (!tmpdir[0])
		return;
	snprintf(path, sizeof(path), "%s/w.trace", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/r.trace", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/r2.trace", tmpdir);
	unlink(path);
	rmdir(tmpdir);
}

int main(void)
{
	ustack_set_print(NULL); /* the refused calls warn by design */
	RUN(test_every_opts_function);
	RUN(test_stats_sizes);
	RUN(test_frame_info_sizes);
	RUN(test_trace_record_sizes);
	cleanup();
	TEST_EXIT();
}
