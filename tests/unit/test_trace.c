// SPDX-License-Identifier: MIT
/*
 * Trace writer and reader: round trip of every record type, chunk
 * self-containment, damage at every byte offset, truncation at every
 * length, full disk / file size limit, stitching rules, sizes.
 *
 * `test_trace --gen DIR` writes the fuzz corpus (valid and damaged traces).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ustack/trace.h>
#include "common/compiler.h"
#include "common/crc32.h"
#include "trace/trace.h"
#include "test.h"

/* ---- a fake recorder: stacks, files and kernel symbols ---------------- */

#define FILE_LIBC 0x9d1c2f3e4a5b6c7dull
#define FILE_APP  0x1234567890abcdefull
#define FILE_VDSO 0x00000000000000a5ull

static const uint64_t kstack0[] = { 0xffffffff81a01234ull, 0xffffffff81a00100ull, 0xffffffff8100ffeeull };
static const uint64_t kstack1[] = { 0xffffffff81b00010ull };
static const struct ustack_trace_frame ustack0[] = {
	{ 0x9ca8, FILE_LIBC, USTACK_METHOD_REGS, USTACK_TRACE_FRAME_EXACT_PC },
	{ 0x29d90, FILE_LIBC, USTACK_METHOD_CFI, 0 },
	{ 0x1149, FILE_APP, USTACK_METHOD_SFRAME, 0 },
	{ 0x7f00dead1000ull, 0, USTACK_METHOD_FP, 0 },   /* JIT: absolute pc */
	{ 0x5a1, FILE_VDSO, USTACK_METHOD_SIGNAL, USTACK_TRACE_FRAME_EXACT_PC },
	{ 0x11e0, FILE_APP, 7, 0 },                      /* unknown method kept */
};
static const struct ustack_trace_frame ustack1[] = {
	{ 0x1000, FILE_APP, USTACK_METHOD_REGS, USTACK_TRACE_FRAME_EXACT_PC },
};

struct fake {
	int calls_stack, calls_file, calls_ksym;
	int nr_ustacks;  /* extra synthetic user stacks with ids >= 100 */
	struct ustack_trace_frame synth[16];
};

static int fake_stack(void *ctx, uint32_t kind, uint32_t id, struct ustack_trace_stack *st)
{
	struct fake *f = ctx;

	f->calls_stack++;
	st->id = id;
	st->kind = kind;
	if (kind == USTACK_TRACE_KSTACK && id == 0) {
		st->ips = kstack0;
		st->nr = ARRAY_SIZE(kstack0);
	} else if (kind == USTACK_TRACE_KSTACK && id == 1) {
		st->ips = kstack1;
		st->nr = 1;
	} else if (kind == USTACK_TRACE_USTACK && id == 0) {
		st->frames = ustack0;
		st->nr = ARRAY_SIZE(ustack0);
	} else if (kind == USTACK_TRACE_USTACK && id == 1) {
		st->frames = ustack1;
		st->nr = 1;
	} else if (kind == USTACK_TRACE_USTACK && id >= 100 && id < 100u + f->nr_ustacks) {
		/* a 12-frame stack through three files, different per id */
		for (int i = 0; i < 12; i++) {
			f->synth[i].file_id = i < 3 ? FILE_LIBC : i < 9 ? FILE_APP : FILE_VDSO + (id % 3);
			f->synth[i].offset = 0x1000 + 0x40 * i + 0x10 * (id - 100);
			f->synth[i].method = i ? USTACK_METHOD_CFI : USTACK_METHOD_REGS;
			f->synth[i].flags = i ? 0 : USTACK_TRACE_FRAME_EXACT_PC;
		}
		st->frames = f->synth;
		st->nr = 12;
	} else {
		return -ENOENT;
	}
	return 0;
}

static const uint8_t libc_bid[20] = { 0x51, 0x65, 0x7f, 0x81, 0x8b, 0xb2, 0x3f, 0x3c, 0x98, 0x2e,
				      0x33, 0xc1, 0x09, 0xc5, 0x05, 0x13, 0x3a, 0x29, 0x68, 0x13 };

static int fake_file_map(void *ctx, uint64_t id, struct ustack_file_map *fm)
{
	struct fake *f = ctx;

	f->calls_file++;
	fm->file_id = id;
	if (id == FILE_LIBC) {
		fm->kind = USTACK_VMA_FILE;
		fm->path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
		fm->build_id_size = 20;
		fm->build_id_source = USTACK_BUILD_ID_KERNEL;
		memcpy(fm->build_id, libc_bid, 20);
		fm->dev_major = 254;
		fm->dev_minor = 3;
		fm->inode = 1340007;
		fm->map_start = 0x7f1234560000ull;
		fm->debuglink = "libc.so.6.debug";
		fm->debuglink_crc = 0xdeadbeef;
	} else if (id == FILE_APP) {
		fm->kind = USTACK_VMA_FILE;
		fm->flags = USTACK_VMA_DELETED;
		fm->path = "/tmp/app";
		fm->dev_major = 8;
		fm->dev_minor = 1;
		fm->inode = 42;
		fm->map_start = 0x555555554000ull;
	} else if (id >= FILE_VDSO && id < FILE_VDSO + 3) {
		fm->kind = USTACK_VMA_VDSO;
		fm->path = "[vdso]";
		fm->map_start = 0x7ffff7fc1000ull + (id - FILE_VDSO) * 0x1000;
	} else {
		return -ENOENT;
	}
	return 0;
}

static int fake_ksym(void *ctx, uint64_t ip, struct ustack_trace_ksym *ks)
{
	static const struct ustack_trace_ksym syms[] = {
		{ 0xffffffff8100ff00ull, 0x200, "entry_SYSCALL_64", "" },
		{ 0xffffffff81a00000ull, 0x2000, "do_syscall_64", "" },
		{ 0xffffffff81b00000ull, 0x100, "ext4_read", "ext4" },
	};
	struct fake *f = ctx;

	f->calls_ksym++;
	for (size_t i = 0; i < ARRAY_SIZE(syms); i++)
		if (ip >= syms[i].addr && ip < syms[i].addr + syms[i].size) {
			*ks = syms[i];
			return 0;
		}
	return -ENOENT;
}

static const struct ustack_trace_header test_hdr = {
	.clock_id = 1,
	.realtime_ns = 1764000000123456789ull,
	.clock_ns = 240253487000ull,
	.hostname = "testhost",
	.release = "6.18.0-test",
	.machine = "x86_64",
	.cmdline = "ustack record -e cpu-clock -- ./app",
	.version = "ustack 0.1.0",
};

static struct ustack_trace_writer *open_writer(const char *path, struct fake *f, uint32_t chunk_size)
{
	struct ustack_trace_writer_opts o = {
		.sz = sizeof(o), .chunk_size = chunk_size, .get_stack = fake_stack,
		.get_file_map = fake_file_map, .get_ksym = fake_ksym, .ctx = f,
	};

	return ustack_trace_writer__open(path, &test_hdr, &o);
}

static char tmp_path[64];

static const char *tmpfile_path(void)
{
	int fd;

	strcpy(tmp_path, "/tmp/ustack-test-trace-XXXXXX");
	fd = mkstemp(tmp_path);
	if (fd >= 0)
		close(fd);
	return tmp_path;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n ? n : 1);
	if (fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

static const struct ustack_trace_event_desc desc_cpu = { 0, USTACK_TRACE_EV_SAMPLE, USTACK_TRACE_EV_FREQ, 999, "cpu-clock" };
static const struct ustack_trace_event_desc desc_futex = { 7, USTACK_TRACE_EV_TRACEPOINT, 0, 1, "syscalls:sys_enter_futex" };

/* One of every record type. */
static int write_all_types(struct ustack_trace_writer *w)
{
	struct ustack_trace_thread th = { 1000, 4242, 4243, USTACK_TRACE_THREAD_FORK, "worker-1" };
	struct ustack_trace_event e1 = { .time = 2000, .pid = 4242, .tid = 4243, .cpu = 1, .event_id = 0,
					 .kstack_id = 0, .cookie = 0x7000000000009ull };
	struct ustack_trace_event e2 = { .time = 1500, .pid = 4242, .tid = 4242, .cpu = 0, .event_id = 7,
					 .kstack_id = USTACK_TRACE_NO_STACK, .cookie = 0,
					 .value = 123456789, .flags = USTACK_TRACE_EVENT_HAS_VALUE };
	struct ustack_trace_user_stack u1 = { .time = 2100, .pid = 4242, .tid = 4243, .cpu = 1,
					      .stop_reason = USTACK_STOP_OUTERMOST,
					      .cookie = 0x7000000000009ull, .stack_id = 0 };
	struct ustack_trace_user_stack u2 = { .time = 2200, .pid = 4242, .tid = 4242, .cpu = 0,
					      .stop_reason = USTACK_STOP_READ_FAULT,
					      .cookie = 0x300000001ull, .stack_id = USTACK_TRACE_NO_STACK };
	struct ustack_trace_lost lost = { 3000, USTACK_TRACE_LOST_KERNEL, 1, 17 };
	struct ustack_trace_ksym ks = { 0xffffffffc0001000ull, 0, "nf_hook", "nf_tables" };
	struct ustack_trace_file_content fc = { .file_id = FILE_LIBC,
						.flags = USTACK_TRACE_CONTENT_CACHED,
						.algo = USTACK_TRACE_HASH_SHA256, .size = 2125328 };
	int err = 0;

	for (int i = 0; i < 32; i++)
		fc.hash[i] = (uint8_t)(0xa0 + i);

	err = err ?: ustack_trace_writer__add_event_desc(w, &desc_cpu);
	err = err ?: ustack_trace_writer__add_event_desc(w, &desc_futex);
	err = err ?: ustack_trace_writer__add_thread(w, &th);
	err = err ?: ustack_trace_writer__add_event(w, &e1);
	err = err ?: ustack_trace_writer__add_event(w, &e2);
	err = err ?: ustack_trace_writer__add_user_stack(w, &u1);
	err = err ?: ustack_trace_writer__add_user_stack(w, &u2);
	err = err ?: ustack_trace_writer__add_lost(w, &lost);
	err = err ?: ustack_trace_writer__add_ksym(w, &ks);
	err = err ?: ustack_trace_writer__add_file_content(w, &fc);
	return err;
}

static struct ustack_trace_reader *mem_reader(const uint8_t *buf, size_t len, uint32_t flags)
{
	struct ustack_trace_reader_opts o = { .sz = sizeof(o), .flags = flags };

	return ustack_trace_reader__open_mem(buf, len, &o);
}

/* ---- tests ------------------------------------------------------------- */

/* The varint of @p, byte by byte as the format defines it (section 2):
 * 1 and *v, 0 for bad (past @len, or a 10th byte above 1). */
static int varint_ref(const uint8_t *p, size_t len, uint64_t *v, size_t *used)
{
	*v = 0;
	for (size_t i = 0; i < 10; i++) {
		if (i >= len || (i == 9 && p[i] > 1))
			return 0;
		*v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			*used = i + 1;
			return 1;
		}
	}
	return 0;
}

/* Every length of value, of buffer after it (the decoder reads 8 bytes at
 * once where 8 are there) and of truncation, random continuation bytes
 * and non-minimal encodings, against the reference. */
static void test_varint_decoder(void)
{
	uint8_t b[32];
	unsigned int bad = 0;
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	for (int round = 0; round < 200000; round++) {
		struct trace_cur c;
		uint64_t v, want, x;
		size_t n, len, used = 0;
		int ok;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		x = seed;
		for (size_t i = 0; i < sizeof(b); i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			b[i] = (uint8_t)(seed >> 56);
		}
		switch (round % 4) {
		case 0: /* a valid varint of 1..10 bytes */
			v = x >> (x % 64);
			n = trace_put_varint(b, v);
			break;
		case 1: /* random bytes: continuation bits anywhere */
			n = 10;
			break;
		case 2: /* long runs of continuation bytes */
			for (size_t i = 0; i < 12; i++)
				b[i] |= 0x80;
			b[x % 12] &= 0x7f;
			n = 12;
			break;
		default: /* a non-minimal encoding (zero groups after the value) */
			n = 1 + x % 9;
			for (size_t i = 0; i + 1 < n; i++)
				b[i] |= 0x80;
			b[n - 1] &= 0x01;
			break;
		}
		len = (size_t)(round / 4) % 24;
		if (len < n && round % 3)
			len = n + len % 10;
		ok = varint_ref(b, len, &want, &used);
		c = (struct trace_cur){ b, len, 0, 0 };
		v = trace_get_varint(&c);
		if (ok ? (c.bad || v != want || c.pos != used) : !c.bad)
			bad++;
	}
	CHECK_EQ(bad, 0);
}

static void test_varint(void)
{
	uint8_t b[16];
	struct trace_cur c;
	static const struct { uint64_t v; size_t n; uint8_t bytes[10]; } ex[] = {
		{ 0, 1, { 0x00 } }, { 127, 1, { 0x7f } }, { 128, 2, { 0x80, 0x01 } },
		{ 300, 2, { 0xac, 0x02 } },
		{ UINT64_MAX, 10, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 } },
	};

	/* the chunk CRC itself is tested against zlib in test_crc32 */
	for (size_t i = 0; i < ARRAY_SIZE(ex); i++) {
		CHECK(trace_put_varint(b, ex[i].v) == ex[i].n);
		CHECK(!memcmp(b, ex[i].bytes, ex[i].n));
		c = (struct trace_cur){ b, ex[i].n, 0, 0 };
		CHECK_EQ_U64(trace_get_varint(&c), ex[i].v);
		CHECK(!c.bad);
	}
	/* 10th byte > 1 overflows; 11 bytes; running past the end */
	memcpy(b, ex[4].bytes, 10);
	b[9] = 2;
	c = (struct trace_cur){ b, 10, 0, 0 };
	trace_get_varint(&c);
	CHECK(c.bad);
	c = (struct trace_cur){ (const uint8_t *)"\x80\x80", 2, 0, 0 };
	trace_get_varint(&c);
	CHECK(c.bad);
	CHECK_EQ(trace_zigzag(0), 0);
	CHECK_EQ(trace_zigzag(-1), 1);
	CHECK_EQ(trace_zigzag(1), 2);
	CHECK_EQ(trace_zigzag(-2), 3);
	CHECK_EQ(trace_unzigzag(trace_zigzag(INT64_MIN)), INT64_MIN);
	CHECK_EQ(trace_unzigzag(trace_zigzag(INT64_MAX)), INT64_MAX);
}

/* The stackmap words of a user frame: the rule `ustack record` keys user
 * stacks by and `ustack report --format stackmap` prints. */
static void test_frame_words(void)
{
	struct ustack_trace_frame f = { 0x29d90, FILE_LIBC, USTACK_METHOD_PLT,
					USTACK_TRACE_FRAME_EXACT_PC }, g;
	uint64_t w[2];

	ustack_trace_pack_frame(&f, w);
	CHECK_EQ_U64(w[0], 0x29d90);
	CHECK_EQ_U64(w[1], 0x1c2f3e4a5b6c7dull | 5ull << 56 | 1ull << 62);
	ustack_trace_unpack_frame(w, &g);
	CHECK_EQ_U64(g.offset, 0x29d90);
	CHECK_EQ_U64(g.file_id, FILE_LIBC & USTACK_TRACE_WORD_FILE_ID_MASK);
	CHECK_EQ(g.method, USTACK_METHOD_PLT);
	CHECK_EQ(g.flags, USTACK_TRACE_FRAME_EXACT_PC);
	/* no file: the pc and a zero id; every field at its widest */
	f = (struct ustack_trace_frame){ 0x7ffd12345678ull, 0, 0x3f, 3 };
	ustack_trace_pack_frame(&f, w);
	CHECK_EQ_U64(w[1], 0xffull << 56);
	ustack_trace_unpack_frame(w, &g);
	CHECK_EQ_U64(g.offset, f.offset);
	CHECK_EQ_U64(g.file_id, 0);
	CHECK_EQ(g.method, 0x3f);
	CHECK_EQ(g.flags, 3);
}

static void check_file_map_libc(const struct ustack_file_map *fm)
{
	CHECK_EQ_U64(fm->file_id, FILE_LIBC);
	CHECK_EQ(fm->kind, USTACK_VMA_FILE);
	CHECK_STR(fm->path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	CHECK_EQ(fm->build_id_size, 20);
	CHECK(!memcmp(fm->build_id, libc_bid, 20));
	CHECK_EQ(fm->build_id_source, USTACK_BUILD_ID_KERNEL);
	CHECK_EQ(fm->dev_major, 254);
	CHECK_EQ(fm->dev_minor, 3);
	CHECK_EQ(fm->inode, 1340007);
	CHECK_EQ_U64(fm->map_start, 0x7f1234560000ull);
	CHECK_STR(fm->debuglink, "libc.so.6.debug");
	CHECK_EQ_U64(fm->debuglink_crc, 0xdeadbeef);
}

static void test_roundtrip_all_types(void)
{
	struct fake f = { 0 };
	const char *path = tmpfile_path();
	struct ustack_trace_writer *w = open_writer(path, &f, 0);
	struct ustack_trace_reader *r;
	struct ustack_trace_record rec;
	struct ustack_trace_stats ws;
	struct ustack_trace_stack st;
	struct ustack_file_map fm;
	struct ustack_trace_ksym ks;
	struct ustack_trace_event_desc d;
	int types[64], n = 0, ret;
	int seen_libc = 0, seen_app = 0, seen_vdso = 0;

	CHECK(w);
	CHECK_EQ(write_all_types(w), 0);
	/* an event id never described is refused */
	struct ustack_trace_event bad = { .event_id = 99, .kstack_id = USTACK_TRACE_NO_STACK };
	CHECK_EQ(ustack_trace_writer__add_event(w, &bad), -EINVAL);
	/* a described id redefined differently is refused */
	struct ustack_trace_event_desc d2 = desc_cpu;
	d2.period = 100;
	CHECK_EQ(ustack_trace_writer__add_event_desc(w, &d2), -EEXIST);
	ustack_trace_writer__stats(w, &ws, sizeof(ws));
	CHECK_EQ(ws.events, 2);
	CHECK_EQ(ws.user_stacks, 2);
	CHECK_EQ(ws.stacks, 2);
	CHECK_EQ(ws.file_maps, 3);
	CHECK_EQ(ws.lost, 17);
	CHECK_EQ(ustack_trace_writer__close(w), 0);

	r = ustack_trace_reader__open(path, NULL);
	CHECK(r);
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		CHECK(n < 64);
		types[n++] = rec.type;
		CHECK_EQ(rec.chunk, 0);
		switch (rec.type) {
		case USTACK_TRACE_HEADER:
			CHECK_EQ(rec.offset, 32 + 20);
			CHECK_EQ(rec.header.clock_id, 1);
			CHECK_EQ_U64(rec.header.realtime_ns, test_hdr.realtime_ns);
			CHECK_EQ_U64(rec.header.clock_ns, test_hdr.clock_ns);
			CHECK_STR(rec.header.hostname, "testhost");
			CHECK_STR(rec.header.release, "6.18.0-test");
			CHECK_STR(rec.header.machine, "x86_64");
			CHECK_STR(rec.header.cmdline, test_hdr.cmdline);
			CHECK_STR(rec.header.version, "ustack 0.1.0");
			break;
		case USTACK_TRACE_EVENT_DESC:
			if (rec.event_desc.id == 0) {
				CHECK_EQ(rec.event_desc.type, USTACK_TRACE_EV_SAMPLE);
				CHECK_EQ(rec.event_desc.flags, USTACK_TRACE_EV_FREQ);
				CHECK_EQ(rec.event_desc.period, 999);
				CHECK_STR(rec.event_desc.name, "cpu-clock");
			} else {
				CHECK_EQ(rec.event_desc.id, 7);
				CHECK_EQ(rec.event_desc.type, USTACK_TRACE_EV_TRACEPOINT);
				CHECK_EQ(rec.event_desc.flags, 0);
				CHECK_EQ(rec.event_desc.period, 1);
				CHECK_STR(rec.event_desc.name, "syscalls:sys_enter_futex");
			}
			break;
		case USTACK_TRACE_THREAD:
			CHECK_EQ(rec.thread.time, 1000);
			CHECK_EQ(rec.thread.pid, 4242);
			CHECK_EQ(rec.thread.tid, 4243);
			CHECK_EQ(rec.thread.flags, USTACK_TRACE_THREAD_FORK);
			CHECK_STR(rec.thread.comm, "worker-1");
			break;
		case USTACK_TRACE_EVENT:
			if (rec.event.event_id == 0) {
				CHECK_EQ(rec.event.time, 2000);
				CHECK_EQ(rec.event.pid, 4242);
				CHECK_EQ(rec.event.tid, 4243);
				CHECK_EQ(rec.event.cpu, 1);
				CHECK_EQ(rec.event.kstack_id, 0);
				CHECK_EQ_U64(rec.event.cookie, 0x7000000000009ull);
				CHECK_EQ(rec.event.value, 1);
				CHECK_EQ(rec.event.flags, 0);
			} else {
				CHECK_EQ(rec.event.event_id, 7);
				CHECK_EQ(rec.event.time, 1500); /* negative delta */
				CHECK_EQ(rec.event.tid, 4242);
				CHECK_EQ(rec.event.cpu, 0);
				CHECK_EQ_U64(rec.event.kstack_id, USTACK_TRACE_NO_STACK);
				CHECK_EQ(rec.event.cookie, 0);
				CHECK_EQ(rec.event.value, 123456789);
				CHECK_EQ(rec.event.flags, USTACK_TRACE_EVENT_HAS_VALUE);
			}
			break;
		case USTACK_TRACE_USER_STACK:
			if (rec.user_stack.stack_id == 0) {
				CHECK_EQ(rec.user_stack.time, 2100);
				CHECK_EQ(rec.user_stack.tid, 4243);
				CHECK_EQ(rec.user_stack.cpu, 1);
				CHECK_EQ(rec.user_stack.stop_reason, USTACK_STOP_OUTERMOST);
				CHECK_EQ_U64(rec.user_stack.cookie, 0x7000000000009ull);
			} else {
				CHECK_EQ_U64(rec.user_stack.stack_id, USTACK_TRACE_NO_STACK);
				CHECK_EQ(rec.user_stack.time, 2200);
				CHECK_EQ(rec.user_stack.tid, 4242);
				CHECK_EQ(rec.user_stack.stop_reason, USTACK_STOP_READ_FAULT);
				CHECK_EQ_U64(rec.user_stack.cookie, 0x300000001ull);
			}
			break;
		case USTACK_TRACE_STACK:
			if (rec.stack.kind == USTACK_TRACE_KSTACK) {
				CHECK_EQ(rec.stack.id, 0);
				CHECK_EQ(rec.stack.nr, 3);
				CHECK(!memcmp(rec.stack.ips, kstack0, sizeof(kstack0)));
			} else {
				CHECK_EQ(rec.stack.id, 0);
				CHECK_EQ(rec.stack.nr, (int)ARRAY_SIZE(ustack0));
				for (size_t i = 0; i < ARRAY_SIZE(ustack0); i++) {
					CHECK_EQ_U64(rec.stack.frames[i].offset, ustack0[i].offset);
					CHECK_EQ_U64(rec.stack.frames[i].file_id, ustack0[i].file_id);
					CHECK_EQ(rec.stack.frames[i].method, ustack0[i].method);
					CHECK_EQ(rec.stack.frames[i].flags, ustack0[i].flags);
				}
			}
			break;
		case USTACK_TRACE_FILE_MAP:
			if (rec.file_map.file_id == FILE_LIBC) {
				check_file_map_libc(&rec.file_map);
				seen_libc++;
			} else if (rec.file_map.file_id == FILE_APP) {
				CHECK_STR(rec.file_map.path, "/tmp/app");
				CHECK_EQ(rec.file_map.flags, USTACK_VMA_DELETED);
				CHECK_EQ(rec.file_map.build_id_size, 0);
				CHECK(rec.file_map.debuglink == NULL);
				CHECK_EQ(rec.file_map.inode, 42);
				seen_app++;
			} else {
				CHECK_EQ_U64(rec.file_map.file_id, FILE_VDSO);
				CHECK_EQ(rec.file_map.kind, USTACK_VMA_VDSO);
				CHECK_STR(rec.file_map.path, "[vdso]");
				seen_vdso++;
			}
			break;
		case USTACK_TRACE_LOST:
			CHECK_EQ(rec.lost.time, 3000);
			CHECK_EQ(rec.lost.what, USTACK_TRACE_LOST_KERNEL);
			CHECK_EQ(rec.lost.cpu, 1);
			CHECK_EQ(rec.lost.count, 17);
			break;
		case USTACK_TRACE_KSYM:
			CHECK(rec.ksym.name && rec.ksym.module);
			break;
		case USTACK_TRACE_END:
			CHECK_EQ(rec.end.events, 2);
			CHECK_EQ(rec.end.user_stacks, 2);
			CHECK_EQ(rec.end.stacks, 2);
			CHECK_EQ(rec.end.file_maps, 3);
			CHECK_EQ(rec.end.lost, 17);
			CHECK_EQ(rec.end.chunks, 1);
			CHECK_EQ(rec.end.first_time, 1000);
			CHECK_EQ(rec.end.last_time, 3000);
			break;
		default:
			CHECK(!"unexpected record type");
		}
	}
	CHECK_EQ(ret, 0);
	CHECK_STR(ustack_trace_reader__error(r), "");
	/* exact order: definitions right before first use */
	static const int want[] = {
		USTACK_TRACE_HEADER, USTACK_TRACE_EVENT_DESC, USTACK_TRACE_EVENT_DESC,
		USTACK_TRACE_THREAD,
		USTACK_TRACE_KSYM, USTACK_TRACE_KSYM, USTACK_TRACE_STACK, USTACK_TRACE_EVENT,
		USTACK_TRACE_EVENT,
		USTACK_TRACE_FILE_MAP, USTACK_TRACE_FILE_MAP, USTACK_TRACE_FILE_MAP,
		USTACK_TRACE_STACK, USTACK_TRACE_USER_STACK, USTACK_TRACE_USER_STACK,
		USTACK_TRACE_LOST, USTACK_TRACE_KSYM, USTACK_TRACE_END,
	};
	CHECK_EQ(n, (int)ARRAY_SIZE(want));
	for (int i = 0; i < n; i++)
		CHECK_EQ(types[i], want[i]);
	CHECK_EQ(seen_libc + seen_app + seen_vdso, 3);
	/* lookups after the fact */
	CHECK(ustack_trace_reader__header(r));
	CHECK_STR(ustack_trace_reader__header(r)->hostname, "testhost");
	CHECK_EQ(ustack_trace_reader__stack(r, USTACK_TRACE_USTACK, 0, &st), 0);
	CHECK_EQ(st.nr, (int)ARRAY_SIZE(ustack0));
	CHECK_EQ_U64(st.frames[3].offset, 0x7f00dead1000ull);
	CHECK_EQ(st.frames[3].file_id, 0);
	CHECK_EQ(ustack_trace_reader__stack(r, USTACK_TRACE_KSTACK, 0, &st), 0);
	CHECK_EQ_U64(st.ips[2], kstack0[2]);
	CHECK_EQ(ustack_trace_reader__stack(r, USTACK_TRACE_KSTACK, 1, &st), -ENOENT);
	CHECK_EQ(ustack_trace_reader__file_map(r, FILE_LIBC, &fm), 0);
	check_file_map_libc(&fm);
	CHECK_EQ(ustack_trace_reader__file_map(r, 12345, &fm), -ENOENT);
	CHECK_EQ(ustack_trace_reader__event_desc(r, 7, &d), 0);
	CHECK_STR(d.name, "syscalls:sys_enter_futex");
	CHECK_EQ(ustack_trace_reader__ksym(r, 0xffffffff81a01234ull, &ks), 0);
	CHECK_STR(ks.name, "do_syscall_64");
	CHECK_EQ(ustack_trace_reader__ksym(r, 0xffffffff8100ffeeull, &ks), 0);
	CHECK_STR(ks.name, "entry_SYSCALL_64");
	CHECK_EQ(ustack_trace_reader__ksym(r, 0xffffffffc0005000ull, &ks), 0); /* size 0: open-ended */
	CHECK_STR(ks.name, "nf_hook");
	CHECK_STR(ks.module, "nf_tables");
	CHECK_EQ(ustack_trace_reader__ksym(r, 0xffffffff81a02000ull, &ks), -ENOENT); /* past its size */
	CHECK_EQ(ustack_trace_reader__ksym(r, 0x1000, &ks), -ENOENT);
	ustack_trace_reader__close(r);
	unlink(path);
}

/* Many chunks: chunk_size small, stacks reused across chunks. Returns the
 * file bytes. */
static uint8_t *make_multichunk(size_t *len, uint32_t chunk_size, int nev)
{
	struct fake f = { .nr_ustacks = 5 };
	const char *path = tmpfile_path();
	struct ustack_trace_writer *w = open_writer(path, &f, chunk_size);
	uint8_t *buf;
	int err = 0;

	if (!w)
		return NULL;
	err = err ?: ustack_trace_writer__add_event_desc(w, &desc_cpu);
	for (int i = 0; i < nev && !err; i++) {
		uint64_t cookie = ((uint64_t)(2 * i + 1) << 32) | (uint64_t)(i % 2 + 1);
		struct ustack_trace_event e = {
			.time = 1000000 + 1001001ull * i, .pid = 300, .tid = 300 + i % 3, .cpu = i % 2,
			.event_id = 0, .kstack_id = i % 4 == 0 ? USTACK_TRACE_NO_STACK : (uint32_t)(i % 2),
			.cookie = cookie,
		};
		struct ustack_trace_user_stack u = {
			.time = e.time + 5000, .pid = 300, .tid = e.tid, .cpu = e.cpu, .cookie = cookie,
			.stack_id = i % 7 == 6 ? USTACK_TRACE_NO_STACK : (uint32_t)(100 + i % 5),
		};

		err = ustack_trace_writer__add_event(w, &e);
		err = err ?: ustack_trace_writer__add_user_stack(w, &u);
		if (!err && i % 10 == 9) {
			struct ustack_trace_thread th = { e.time, 300, e.tid, 0, "t" };

			err = ustack_trace_writer__add_thread(w, &th);
		}
	}
	if (ustack_trace_writer__close(w) || err) {
		unlink(path);
		return NULL;
	}
	buf = slurp(path, len);
	unlink(path);
	return buf;
}

struct chunk_pos {
	size_t off, end;
};

static int list_chunks(const uint8_t *buf, size_t len, struct chunk_pos *out, int max)
{
	size_t off = 32;
	int n = 0;

	while (off + 20 <= len && n < max) {
		uint32_t plen = ld_u32(buf + off + 8);

		out[n].off = off;
		out[n].end = off + 20 + plen;
		off = out[n++].end;
	}
	return n;
}

/* Skimming (the JIT pre-pass of a report): only the HEADER and the asked
 * types come out, the same as a full read gives them, over several chunks;
 * a damaged chunk still fails. */
static void test_skim(void)
{
	struct fake f = { 0 };
	const char *path = tmpfile_path();
	struct ustack_trace_writer *w = open_writer(path, &f, 256);
	struct ustack_trace_reader *r;
	struct ustack_trace_record rec;
	char names[2][64][16];
	int n[2] = { 0, 0 }, others = 0, ret;

	CHECK(w);
	CHECK_EQ(write_all_types(w), 0);
	for (int i = 0; i < 40; i++) {
		struct ustack_trace_jitsym j = { .pid = 4242, .addr = 0x7000 + 0x100 * i, .size = 0x10 };
		struct ustack_trace_event e = { .time = 3000 + i, .pid = 4242, .tid = 4243, .cpu = 1,
						.event_id = 0, .kstack_id = USTACK_TRACE_NO_STACK };
		char name[16];

		snprintf(name, sizeof(name), "jit_%d", i);
		j.name = name;
		CHECK_EQ(ustack_trace_writer__add_event(w, &e), 0);
		CHECK_EQ(ustack_trace_writer__add_jitsym(w, &j), 0);
	}
	CHECK_EQ(ustack_trace_writer__close(w), 0);
	for (int pass = 0; pass < 2; pass++) {
		r = ustack_trace_reader__open(path, NULL);
		CHECK(r);
		if (pass)
			ustack_trace_reader__skim(r, 1u << USTACK_TRACE_JITSYM);
		while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
			if (rec.type == USTACK_TRACE_JITSYM) {
				CHECK(n[pass] < 64);
				snprintf(names[pass][n[pass]++], 16, "%s", rec.jitsym.name);
			} else if (rec.type != USTACK_TRACE_HEADER) {
				others += pass;
			}
		}
		CHECK_EQ(ret, 0);
		CHECK(ustack_trace_reader__error(r) == NULL || !*ustack_trace_reader__error(r));
		ustack_trace_reader__close(r);
	}
	CHECK_EQ(n[0], 40);
	CHECK_EQ(n[1], 40);
	CHECK_EQ(others, 0);
	for (int i = 0; i < 40; i++)
		CHECK_STR(names[0][i], names[1][i]);
	/* a flipped byte in the last chunk's payload: the skim fails too */
	{
		FILE *fp = fopen(path, "r+b");
		long size;
		int c;

		CHECK(fp);
		fseek(fp, 0, SEEK_END);
		size = ftell(fp);
		fseek(fp, size - 40, SEEK_SET);
		c = fgetc(fp);
		fseek(fp, size - 40, SEEK_SET);
		fputc(c ^ 0x20, fp);
		fclose(fp);
	}
	r = ustack_trace_reader__open(path, NULL);
	CHECK(r);
	ustack_trace_reader__skim(r, 1u << USTACK_TRACE_JITSYM);
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1)
		;
	CHECK_EQ(ret, -EBADMSG);
	ustack_trace_reader__close(r);
	unlink(path);
}

static void test_chunks_self_contained(void)
{
	size_t len;
	uint8_t *buf = make_multichunk(&len, 256, 200);
	struct chunk_pos ch[256];
	int nch, total_events = 0;

	CHECK(buf);
	nch = list_chunks(buf, len, ch, 256);
	CHECK(nch >= 5);
	CHECK_EQ(ch[nch - 1].end, len);
	for (int k = 0; k < nch; k++) {
		size_t elen = 32 + (ch[k].end - ch[k].off);
		uint8_t *ex = malloc(elen);
		struct ustack_trace_reader *r;
		struct ustack_trace_record rec;
		int ret, events = 0, ustacks = 0;

		memcpy(ex, buf, 32);
		memcpy(ex + 32, buf + ch[k].off, elen - 32);
		r = mem_reader(ex, elen, USTACK_TRACE_READER_EXTRACT);
		CHECK(r);
		while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
			struct ustack_trace_stack st;
			struct ustack_file_map fm;

			if (rec.type == USTACK_TRACE_EVENT) {
				events++;
				if (rec.event.kstack_id != USTACK_TRACE_NO_STACK)
					CHECK_EQ(ustack_trace_reader__stack(r, USTACK_TRACE_KSTACK,
									    rec.event.kstack_id, &st), 0);
			} else if (rec.type == USTACK_TRACE_USER_STACK &&
				   rec.user_stack.stack_id != USTACK_TRACE_NO_STACK) {
				ustacks++;
				CHECK_EQ(ustack_trace_reader__stack(r, USTACK_TRACE_USTACK,
								    rec.user_stack.stack_id, &st), 0);
				CHECK_EQ(st.nr, 12);
				for (uint32_t i = 0; i < st.nr; i++)
					CHECK_EQ(ustack_trace_reader__file_map(r, st.frames[i].file_id, &fm), 0);
				CHECK_EQ_U64(st.frames[11].offset, 0x1000 + 0x40 * 11 + 0x10 * (rec.user_stack.stack_id - 100));
			}
		}
		if (ret) {
			printf("  chunk %d: %s\n", k, ustack_trace_reader__error(r));
		}
		CHECK_EQ(ret, 0);
		/* the same extract read strictly is not a whole file (no HEADER/END) */
		if (k > 0) {
			struct ustack_trace_reader *s = mem_reader(ex, elen, 0);

			CHECK_EQ(ustack_trace_reader__next(s, &rec, sizeof(rec)), -EBADMSG);
			ustack_trace_reader__close(s);
		}
		total_events += events;
		ustack_trace_reader__close(r);
		free(ex);
	}
	CHECK_EQ(total_events, 200);
	free(buf);
}

/* Reference list of (offset, type) of all records of a valid file. */
struct ref {
	uint64_t off[4096];
	uint32_t chunk[4096];
	int n;
};

static int read_collect(const uint8_t *buf, size_t len, struct ref *got, uint64_t *err_off)
{
	struct ustack_trace_reader *r = mem_reader(buf, len, 0);
	struct ustack_trace_record rec;
	int ret;

	got->n = 0;
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		if (got->n < 4096) {
			got->off[got->n] = rec.offset;
			got->chunk[got->n] = rec.chunk;
		}
		got->n++;
	}
	/* an error repeats */
	if (ret < 0 && ustack_trace_reader__next(r, &rec, sizeof(rec)) != ret)
		ret = -1000;
	if (ret < 0 && !strstr(ustack_trace_reader__error(r), "offset "))
		ret = -1001;
	*err_off = ustack_trace_reader__error_offset(r);
	ustack_trace_reader__close(r);
	return ret;
}

static struct ref ref_all, got;

/* Records of chunks wholly before file offset @off */
static int records_before(const struct ref *ref, const struct chunk_pos *ch, int nch, size_t off)
{
	int n = 0;

	for (int i = 0; i < ref->n; i++) {
		uint32_t c = ref->chunk[i];

		if ((int)c < nch && ch[c].end <= off)
			n++;
	}
	return n;
}

static int chunk_of(const struct chunk_pos *ch, int nch, size_t off)
{
	for (int k = 0; k < nch; k++)
		if (off >= ch[k].off && off < ch[k].end)
			return k;
	return -1;
}

static void test_damage_every_byte(void)
{
	size_t len;
	uint8_t *buf = make_multichunk(&len, 200, 12);
	struct chunk_pos ch[64];
	uint64_t eoff;
	int nch, ret;

	CHECK(buf);
	nch = list_chunks(buf, len, ch, 64);
	CHECK(nch >= 3);
	CHECK_EQ(read_collect(buf, len, &ref_all, &eoff), 0);
	for (size_t i = 0; i < len; i++) {
		for (int m = 0; m < 2; m++) {
			uint8_t mask = m ? 0x01 : 0xa5;
			int k = chunk_of(ch, nch, i);

			buf[i] ^= mask;
			ret = read_collect(buf, len, &got, &eoff);
			buf[i] ^= mask;
			if (ret != -EBADMSG && ret != -ENOTSUP)
				printf("  flip at %zu: ret %d\n", i, ret);
			CHECK(ret == -EBADMSG || ret == -ENOTSUP);
			if (i < 32) {
				CHECK(eoff < 32);
				CHECK_EQ(got.n, 0);
				continue;
			}
			CHECK(k >= 0);
			if (eoff != ch[k].off)
				printf("  flip at %zu (chunk %d at %zu): error at %llu\n", i, k, ch[k].off,
				       (unsigned long long)eoff);
			CHECK_EQ(eoff, ch[k].off);
			/* exactly the records of the chunks before */
			CHECK_EQ(got.n, records_before(&ref_all, ch, nch, ch[k].off));
			for (int j = 0; j < got.n; j++)
				CHECK_EQ(got.off[j], ref_all.off[j]);
		}
	}
	free(buf);
}

static void test_truncate_every_length(void)
{
	size_t len;
	uint8_t *buf = make_multichunk(&len, 200, 12);
	struct chunk_pos ch[64];
	uint64_t eoff;
	int nch, ret;

	CHECK(buf);
	nch = list_chunks(buf, len, ch, 64);
	CHECK_EQ(read_collect(buf, len, &ref_all, &eoff), 0);
	for (size_t l = 0; l < len; l++) {
		uint8_t *cut = malloc(l ? l : 1); /* exact size: ASan sees overreads */
		int want_n;

		memcpy(cut, buf, l);
		ret = read_collect(cut, l, &got, &eoff);
		free(cut);
		CHECK_EQ(ret, -EBADMSG);
		if (l < 32) {
			CHECK_EQ(eoff, 0);
			continue;
		}
		want_n = records_before(&ref_all, ch, nch, l);
		CHECK_EQ(got.n, want_n);
		/* damage starts at the first chunk not wholly present */
		size_t want_off = 32;

		for (int k = 0; k < nch && ch[k].end <= l; k++)
			want_off = ch[k].end;
		CHECK_EQ(eoff, want_off);
	}
	/* trailing garbage after END */
	uint8_t *more = malloc(len + 3);

	memcpy(more, buf, len);
	memcpy(more + len, "abc", 3);
	ret = read_collect(more, len + 3, &got, &eoff);
	CHECK_EQ(ret, -EBADMSG);
	CHECK_EQ(eoff, len);
	CHECK_EQ(got.n, ref_all.n);
	free(more);
	free(buf);
}

/* Hand-built chunks: forward compatibility and rule violations. */
static size_t put_chunk(uint8_t *out, uint32_t seq, const uint8_t *payload, uint32_t plen, uint32_t nrec)
{
	memcpy(out, "UCHK", 4);
	memcpy(out + 4, &seq, 4);
	memcpy(out + 8, &plen, 4);
	memcpy(out + 12, &nrec, 4);
	memcpy(out + 20, payload, plen);
	uint32_t crc = ustack_crc32(ustack_crc32(0, out, 16), payload, plen);

	memcpy(out + 16, &crc, 4);
	return 20 + plen;
}

static size_t put_file_header(uint8_t *out)
{
	static const uint8_t h[28] = { 0x7f, 'U', 'S', 'T', 'A', 'C', 'K', '\n', 1, 0, 0, 0,
				       4, 3, 2, 1, 8, 32 };
	uint32_t crc = ustack_crc32(0, h, 28);

	memcpy(out, h, 28);
	memcpy(out + 28, &crc, 4);
	return 32;
}

/* A file of one chunk of @payload (nrec records), read with the reader
 * @open makes: the records read into *nrecs, the reader's error into @msg. */
static int read_chunk_with(struct ustack_trace_reader *(*open)(const uint8_t *, size_t, uint32_t),
			   const uint8_t *payload, size_t plen, uint32_t nrec, uint32_t flags,
			   int *nrecs, char *msg, size_t msgsz)
{
	static uint8_t file[4096];
	size_t n = put_file_header(file);
	struct ustack_trace_reader *r;
	struct ustack_trace_record rec;
	int ret;

	n += put_chunk(file + n, 0, payload, (uint32_t)plen, nrec);
	r = open(file, n, flags);
	*nrecs = 0;
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1)
		(*nrecs)++;
	snprintf(msg, msgsz, "%s", ustack_trace_reader__error(r));
	ustack_trace_reader__close(r);
	return ret;
}

static int read_handmade(const uint8_t *payload, size_t plen, uint32_t nrec, uint32_t flags,
			 int *nrecs, char *msg, size_t msgsz)
{
	return read_chunk_with(mem_reader, payload, plen, nrec, flags, nrecs, msg, msgsz);
}

static void test_handmade_records(void)
{
	/* HEADER (empty strings) */
	static const uint8_t hdr_rec[] = { 1, 8, 1, 0, 0, 0, 0, 0, 0, 0 };
	/* END with zero totals, chunks = 1 */
	static const uint8_t end_rec[] = { 10, 8, 0, 0, 0, 0, 0, 1, 0, 0 };
	/* unknown type 77 with a 3-byte body; a LOST with 2 extra trailing bytes */
	static const uint8_t unk_rec[] = { 77, 3, 0xff, 0xff, 0xff };
	static const uint8_t lost_ext[] = { 8, 6, 0, 0x04, 3, 5, 0xee, 0xee };
	/* EVENT referring to an event id never described */
	static const uint8_t ev_nodesc[] = { 4, 6, 0, 0, 1, 0, 0, 0 };
	/* EVENT_DESC 0 then EVENT with kernel stack 5 not defined in the chunk */
	static const uint8_t desc0[] = { 2, 5, 0, 0, 0, 0, 0 };
	static const uint8_t ev_nostack[] = { 4, 7, 1, 0, 1, 0, 0, 0, 5 };
	/* user STACK referring to an undefined file id 9 */
	static const uint8_t stk_nofile[] = { 6, 6, 1, 1, 1, 0x01, 9, 0x10 };
	/* reserved flag bit in an EVENT */
	static const uint8_t ev_resv[] = { 4, 6, 0x10, 0, 1, 0, 0, 0 };
	uint8_t p[512];
	char msg[256];
	size_t n;
	int nrecs, ret;

#define CAT(x) (memcpy(p + n, x, sizeof(x)), n += sizeof(x))
	n = 0; CAT(hdr_rec); CAT(unk_rec); CAT(lost_ext); CAT(end_rec);
	ret = read_handmade(p, n, 4, 0, &nrecs, msg, sizeof(msg));
	CHECK_EQ(ret, 0);
	CHECK_EQ(nrecs, 3); /* unknown skipped, LOST's trailing bytes ignored */

	n = 0; CAT(hdr_rec); CAT(ev_nodesc); CAT(end_rec);
	ret = read_handmade(p, n, 3, 0, &nrecs, msg, sizeof(msg));
	CHECK_EQ(ret, -EBADMSG);
	CHECK_EQ(nrecs, 1);
	CHECK(strstr(msg, "offset 62: chunk 0: EVENT record: event id not defined"));

	n = 0; CAT(hdr_rec); CAT(desc0); CAT(ev_nostack); CAT(end_rec);
	ret = read_handmade(p, n, 4, 0, &nrecs, msg, sizeof(msg));
	CHECK_EQ(ret, -EBADMSG);
	CHECK(strstr(msg, "kernel stack not defined in this chunk"));

	n = 0; CAT(hdr_rec); CAT(stk_nofile); CAT(end_rec);
	ret = read_handmade(p, n, 3, 0, &nrecs, msg, sizeof(msg));
	CHECK_EQ(ret, -EBADMSG);
	CHECK(strstr(msg, "file id not defined in this chunk"));

	n = 0; CAT(hdr_rec); CAT(desc0); CAT(ev_resv); CAT(end_rec);
	ret = read_handmade(p, n, 4, 0, &nrecs, msg, sizeof(msg));
	CHECK_EQ(ret, -EBADMSG);
	CHECK(strstr(msg, "reserved flag bits"));

	/* record count disagreeing with the header */
	n = 0; CAT(hdr_rec); CAT(end_rec);
	ret = read_handmade(p, n, 3, 0, &nrecs, msg, sizeof(msg));
	CHECK_EQ(ret, -EBADMSG);
	CHECK(strstr(msg, "offset 32: chunk 0: 2 records, header says 3"));

	/* a record after END */
	n = 0; CAT(hdr_rec); CAT(end_rec); CAT(lost_ext);
	ret = read_handmade(p, n, 3, 0, &nrecs, msg, sizeof(msg));
	CHECK_EQ(ret, -EBADMSG);
	CHECK(strstr(msg, "record after END"));

	/* first record not HEADER; but fine in an extract */
	n = 0; CAT(lost_ext); CAT(end_rec);
	ret = read_handmade(p, n, 2, 0, &nrecs, msg, sizeof(msg));
	CHECK_EQ(ret, -EBADMSG);
	CHECK(strstr(msg, "not HEADER"));
	ret = read_handmade(p, n, 2, USTACK_TRACE_READER_EXTRACT, &nrecs, msg, sizeof(msg));
	CHECK_EQ(ret, 0);
	CHECK_EQ(nrecs, 2);

	/* END totals that disagree (1 event claimed) */
	static const uint8_t end_bad[] = { 10, 8, 1, 0, 0, 0, 0, 1, 0, 0 };
	n = 0; CAT(hdr_rec); CAT(end_bad);
	ret = read_handmade(p, n, 2, 0, &nrecs, msg, sizeof(msg));
	CHECK_EQ(ret, -EBADMSG);
	CHECK(strstr(msg, "event count disagrees"));
#undef CAT
}

/* ---- FILE_CONTENT (since 1.2) ------------------------------------------ */

static struct ustack_trace_reader *all_types_reader(const uint8_t *buf, size_t len, uint32_t flags)
{
	struct ustack_trace_reader_opts o = { .sz = sizeof(o), .flags = flags,
					      .max_type = USTACK_TRACE_RECORD_TYPE_MAX };

	return ustack_trace_reader__open_mem(buf, len, &o);
}

/* Reads @r to its end (and closes it), counting the FILE_CONTENT records handed out; the last one
 * in *last. Returns the reader's final status. */
static int count_contents(struct ustack_trace_reader *r, int *n,
			  struct ustack_trace_file_content *last, char *msg, size_t msgsz)
{
	struct ustack_trace_record rec;
	int ret;

	*n = 0;
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1)
		if (rec.type == USTACK_TRACE_FILE_CONTENT) {
			(*n)++;
			*last = rec.file_content;
		}
	snprintf(msg, msgsz, "%s", ustack_trace_reader__error(r));
	ustack_trace_reader__close(r);
	return ret;
}

/* Written in a later chunk than the stack that used the file: the writer
 * repeats the FILE_MAP there, the record comes back with its values, only
 * to a caller that asked for type 12, and the chunk reads on its own. */
static void test_file_content_roundtrip(void)
{
	struct fake f = { 0 };
	const char *path = tmpfile_path();
	struct ustack_trace_writer *w = open_writer(path, &f, 64);
	struct ustack_trace_user_stack u = { .time = 10, .pid = 1, .tid = 1, .cookie = 0x300000001ull,
					     .stack_id = 0 };
	struct ustack_trace_file_content fc = { .file_id = FILE_APP,
						.flags = USTACK_TRACE_CONTENT_CACHED |
							 USTACK_TRACE_CONTENT_DEBUG,
						.algo = USTACK_TRACE_HASH_SHA256,
						.size = 0x123456789ull }, bad, fcg;
	struct chunk_pos ch[16];
	struct ustack_trace_reader *r;
	size_t len;
	uint8_t *buf;
	char msg[256];
	int n, nch, calls;

	CHECK(w);
	for (int i = 0; i < 32; i++)
		fc.hash[i] = (uint8_t)(i * 7 + 1);
	/* not known to the writer yet: a reader would stop there */
	CHECK_EQ(ustack_trace_writer__add_file_content(w, &fc), -EINVAL);
	CHECK_EQ(ustack_trace_writer__add_user_stack(w, &u), 0);
	CHECK_EQ(ustack_trace_writer__flush(w), 0);
	bad = fc; bad.file_id = 0;
	CHECK_EQ(ustack_trace_writer__add_file_content(w, &bad), -EINVAL);
	bad = fc; bad.algo = 2;
	CHECK_EQ(ustack_trace_writer__add_file_content(w, &bad), -EINVAL);
	bad = fc; bad.flags = 0x8;
	CHECK_EQ(ustack_trace_writer__add_file_content(w, &bad), -EINVAL);
	CHECK_EQ(ustack_trace_writer__add_file_content(w, NULL), -EINVAL);
	calls = f.calls_file;
	CHECK_EQ(ustack_trace_writer__add_file_content(w, &fc), 0); /* refusals are not sticky */
	CHECK_EQ(f.calls_file, calls + 1); /* its FILE_MAP again, in the new chunk */
	CHECK_EQ(ustack_trace_writer__close(w), 0);
	buf = slurp(path, &len);
	unlink(path);
	CHECK(buf);
	CHECK_EQ(buf[10], USTACK_TRACE_VERSION_MINOR);

	CHECK_EQ(count_contents(all_types_reader(buf, len, 0), &n, &fcg, msg, sizeof(msg)), 0);
	CHECK_EQ(n, 1);
	CHECK_EQ_U64(fcg.file_id, FILE_APP);
	CHECK_EQ(fcg.flags, USTACK_TRACE_CONTENT_CACHED | USTACK_TRACE_CONTENT_DEBUG);
	CHECK_EQ(fcg.algo, USTACK_TRACE_HASH_SHA256);
	CHECK_EQ_U64(fcg.size, 0x123456789ull);
	CHECK(!memcmp(fcg.hash, fc.hash, 32));
	/* a caller that did not ask for type 12 never gets it */
	CHECK_EQ(count_contents(mem_reader(buf, len, 0), &n, &fcg, msg, sizeof(msg)), 0);
	CHECK_EQ(n, 0);

	/* each chunk read alone: the one holding FILE_CONTENT has its FILE_MAP */
	nch = list_chunks(buf, len, ch, 16);
	CHECK(nch >= 2);
	for (int k = 0, total = 0; k < nch; k++) {
		size_t elen = 32 + (ch[k].end - ch[k].off);
		uint8_t *ex = malloc(elen);

		CHECK(ex);
		memcpy(ex, buf, 32);
		memcpy(ex + 32, buf + ch[k].off, elen - 32);
		r = all_types_reader(ex, elen, USTACK_TRACE_READER_EXTRACT);
		CHECK_EQ(count_contents(r, &n, &fcg, msg, sizeof(msg)), 0);
		free(ex);
		total += n;
		if (n)
			CHECK_EQ_U64(fcg.size, 0x123456789ull);
		if (k == nch - 1)
			CHECK_EQ(total, 1);
	}
	free(buf);
}

/* One chunk of @payload (nrec records), read asking for every type. */
static int read_fc(const uint8_t *payload, size_t plen, uint32_t nrec, int *nrecs, char *msg,
		   size_t msgsz)
{
	return read_chunk_with(all_types_reader, payload, plen, nrec, 0, nrecs, msg, msgsz);
}

#define FC_HASH32 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, \
		  17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32

static void test_file_content_invalid(void)
{
	static const uint8_t hdr_rec[] = { 1, 8, 1, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t end_rec[] = { 10, 8, 0, 0, 0, 0, 0, 1, 0, 0 };
	static const uint8_t end_rec2[] = { 10, 8, 0, 0, 0, 0, 0, 2, 0, 0 };
	/* FILE_MAP of id 9: no build ID, empty path */
	static const uint8_t fmap9[] = { 7, 12, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t fc9[] = { 12, 37, 9, 1, 1, 32, FC_HASH32, 5 };
	static const uint8_t fc9_size6[] = { 12, 37, 9, 1, 1, 32, FC_HASH32, 6 };
	static const uint8_t fc0[] = { 12, 37, 0, 1, 1, 32, FC_HASH32, 5 };
	static const uint8_t fc9_resv[] = { 12, 37, 9, 0x9, 1, 32, FC_HASH32, 5 };
	static const uint8_t fc9_short[] = { 12, 25, 9, 1, 1, 20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
					     11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 5 };
	static const uint8_t fc9_algo7[] = { 12, 8, 9, 0, 7, 3, 0xaa, 0xbb, 0xcc, 5 };
	/* cut inside the hash */
	static const uint8_t fc9_cut[] = { 12, 10, 9, 1, 1, 32, 1, 2, 3, 4, 5, 6 };
	uint8_t p[512], file[1024];
	char msg[256];
	size_t n, fn;
	int nrecs, ret;

#define CAT(x) (memcpy(p + n, x, sizeof(x)), n += sizeof(x))
	n = 0; CAT(hdr_rec); CAT(fmap9); CAT(fc9); CAT(end_rec);
	CHECK_EQ(read_fc(p, n, 4, &nrecs, msg, sizeof(msg)), 0);
	CHECK_EQ(nrecs, 4);
	/* the default max_type: read and checked, not handed out */
	CHECK_EQ(read_handmade(p, n, 4, 0, &nrecs, msg, sizeof(msg)), 0);
	CHECK_EQ(nrecs, 3);

	/* records start at 52 + 10 (HEADER) = 62; after FILE_MAP at 76 */
	n = 0; CAT(hdr_rec); CAT(fc9); CAT(end_rec);
	ret = read_fc(p, n, 3, &nrecs, msg, sizeof(msg));
	CHECK_EQ(ret, -EBADMSG);
	CHECK_EQ(nrecs, 1);
	CHECK_STR(msg, "offset 62: chunk 0: FILE_CONTENT record: file id not defined by an "
		       "earlier FILE_MAP");
	/* invalid whatever max_type says */
	CHECK_EQ(read_handmade(p, n, 3, 0, &nrecs, msg, sizeof(msg)), -EBADMSG);

	n = 0; CAT(hdr_rec); CAT(fmap9); CAT(fc0); CAT(end_rec);
	CHECK_EQ(read_fc(p, n, 4, &nrecs, msg, sizeof(msg)), -EBADMSG);
	CHECK_STR(msg, "offset 76: chunk 0: FILE_CONTENT record: file id 0");

	n = 0; CAT(hdr_rec); CAT(fmap9); CAT(fc9_resv); CAT(end_rec);
	CHECK_EQ(read_fc(p, n, 4, &nrecs, msg, sizeof(msg)), -EBADMSG);
	CHECK_STR(msg, "offset 76: chunk 0: FILE_CONTENT record: reserved flag bits set");

	n = 0; CAT(hdr_rec); CAT(fmap9); CAT(fc9_short); CAT(end_rec);
	CHECK_EQ(read_fc(p, n, 4, &nrecs, msg, sizeof(msg)), -EBADMSG);
	CHECK_STR(msg, "offset 76: chunk 0: FILE_CONTENT record: SHA-256 hash not 32 bytes");

	n = 0; CAT(hdr_rec); CAT(fmap9); CAT(fc9_cut); CAT(end_rec);
	CHECK_EQ(read_fc(p, n, 4, &nrecs, msg, sizeof(msg)), -EBADMSG);
	CHECK_STR(msg, "offset 76: chunk 0: FILE_CONTENT record: bad field");

	/* an algorithm of a later minor: skipped, the rest read */
	n = 0; CAT(hdr_rec); CAT(fmap9); CAT(fc9_algo7); CAT(fc9); CAT(end_rec);
	CHECK_EQ(read_fc(p, n, 5, &nrecs, msg, sizeof(msg)), 0);
	CHECK_EQ(nrecs, 4);

	/* the same content twice is fine; another one is not (at 76 + 39) */
	n = 0; CAT(hdr_rec); CAT(fmap9); CAT(fc9); CAT(fc9); CAT(end_rec);
	CHECK_EQ(read_fc(p, n, 5, &nrecs, msg, sizeof(msg)), 0);
	CHECK_EQ(nrecs, 5);
	n = 0; CAT(hdr_rec); CAT(fmap9); CAT(fc9); CAT(fc9_size6); CAT(end_rec);
	CHECK_EQ(read_fc(p, n, 5, &nrecs, msg, sizeof(msg)), -EBADMSG);
	CHECK_EQ(nrecs, 3);
	CHECK_STR(msg, "offset 115: chunk 0: FILE_CONTENT record: file content redefined "
		       "differently");

	/* FILE_MAP in chunk 0, FILE_CONTENT alone in chunk 1: valid (the
	 * content is for the whole file, not the chunk) */
	fn = put_file_header(file);
	n = 0; CAT(hdr_rec); CAT(fmap9);
	fn += put_chunk(file + fn, 0, p, (uint32_t)n, 2);
	n = 0; CAT(fc9); CAT(end_rec2);
	fn += put_chunk(file + fn, 1, p, (uint32_t)n, 2);
	{
		struct ustack_trace_file_content fcg;

		CHECK_EQ(count_contents(all_types_reader(file, fn, 0), &nrecs, &fcg, msg,
					sizeof(msg)), 0);
		CHECK_EQ(nrecs, 1);
		CHECK_EQ_U64(fcg.file_id, 9);
		CHECK_EQ_U64(fcg.size, 5);
		CHECK_EQ(fcg.hash[31], 32);
	}
#undef CAT
}

static void test_version_and_header(void)
{
	uint8_t f[64];
	struct ustack_trace_reader *r;
	struct ustack_trace_record rec;
	uint32_t crc;

	put_file_header(f);
	f[8] = 2; /* major 2 */
	crc = ustack_crc32(0, f, 28);
	memcpy(f + 28, &crc, 4);
	r = mem_reader(f, 32, 0);
	CHECK_EQ(ustack_trace_reader__next(r, &rec, sizeof(rec)), -ENOTSUP);
	CHECK(strstr(ustack_trace_reader__error(r), "version 2.0 not supported"));
	ustack_trace_reader__close(r);

	r = mem_reader((const uint8_t *)"hello world, this is not a trace", 32, 0);
	CHECK_EQ(ustack_trace_reader__next(r, &rec, sizeof(rec)), -EBADMSG);
	CHECK_STR(ustack_trace_reader__error(r), "offset 0: file header: bad magic (not a ustack trace)");
	ustack_trace_reader__close(r);

	/* the empty file */
	r = mem_reader(f, 0, 0);
	CHECK_EQ(ustack_trace_reader__next(r, &rec, sizeof(rec)), -EBADMSG);
	ustack_trace_reader__close(r);
	/* a file of just the header: no END */
	put_file_header(f);
	r = mem_reader(f, 32, 0);
	CHECK_EQ(ustack_trace_reader__next(r, &rec, sizeof(rec)), -EBADMSG);
	CHECK(strstr(ustack_trace_reader__error(r), "offset 32: file ends without an END record"));
	ustack_trace_reader__close(r);
	CHECK(ustack_trace_reader__open("/nonexistent/trace", NULL) == NULL);
	CHECK_EQ(errno, ENOENT);
}

/* The writer in a child with RLIMIT_FSIZE: EFBIG, earlier chunks readable. */
static void test_file_size_limit(void)
{
	const char *path = tmpfile_path();
	struct ustack_trace_reader *r;
	struct ustack_trace_record rec;
	int status, ret, events = 0;
	pid_t pid;

	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 3000, 3000 };
		struct fake f = { .nr_ustacks = 5 };
		struct ustack_trace_writer *w;
		int err = 0, i;

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(10);
		w = open_writer(path, &f, 512);
		if (!w)
			_exit(11);
		err = ustack_trace_writer__add_event_desc(w, &desc_cpu);
		for (i = 0; i < 10000 && !err; i++) {
			struct ustack_trace_event e = { .time = i * 1000, .pid = 1, .tid = 1,
							.kstack_id = 0, .cookie = (uint64_t)i << 32 | 1 };
			struct ustack_trace_user_stack u = { .time = i * 1000 + 1, .pid = 1, .tid = 1,
							     .cookie = e.cookie, .stack_id = 100 + i % 5 };

			err = ustack_trace_writer__add_event(w, &e);
			err = err ?: ustack_trace_writer__add_user_stack(w, &u);
		}
		if (err != -EFBIG)
			_exit(12);
		/* sticky, and close reports it too */
		if (ustack_trace_writer__flush(w) != -EFBIG || ustack_trace_writer__close(w) != -EFBIG)
			_exit(13);
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	r = ustack_trace_reader__open(path, NULL);
	CHECK(r);
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1)
		events += rec.type == USTACK_TRACE_EVENT;
	CHECK_EQ(ret, -EBADMSG);
	CHECK(events > 5);
	uint64_t size;

	ustack_trace_reader__offset(r, &size);
	CHECK(size <= 3000);
	CHECK(ustack_trace_reader__error_offset(r) <= size);
	ustack_trace_reader__close(r);
	unlink(path);
}

static void test_full_disk(void)
{
	struct fake f = { 0 };
	struct ustack_trace_writer *w;
	char dir[] = "/tmp/ustack-test-tmpfs-XXXXXX";
	char path[128];
	int err = 0, ret, events = 0;

	/* /dev/full: the file header cannot be written */
	errno = 0;
	w = open_writer("/dev/full", &f, 0);
	CHECK(w == NULL);
	CHECK_EQ(errno, ENOSPC);

	/* a tiny tmpfs: ENOSPC in the middle, earlier chunks stay readable */
	CHECK(mkdtemp(dir));
	if (mount("tmpfs", dir, "tmpfs", 0, "size=16k")) {
		int e = errno;

		rmdir(dir);
		SKIP("cannot mount a tmpfs (%s): needs root", strerror(e));
	}
	snprintf(path, sizeof(path), "%s/trace", dir);
	f.nr_ustacks = 5;
	w = open_writer(path, &f, 1024);
	if (!w)
		goto out;
	err = ustack_trace_writer__add_event_desc(w, &desc_cpu);
	for (int i = 0; i < 100000 && !err; i++) {
		struct ustack_trace_event e = { .time = i * 1000, .pid = 1, .tid = 1,
						.kstack_id = 0, .cookie = (uint64_t)i << 32 | 1 };
		struct ustack_trace_user_stack u = { .time = i * 1000 + 1, .pid = 1, .tid = 1,
						     .cookie = e.cookie, .stack_id = 100 + i % 5 };

		err = ustack_trace_writer__add_event(w, &e);
		err = err ?: ustack_trace_writer__add_user_stack(w, &u);
	}
	ret = ustack_trace_writer__close(w);
	if (err != -ENOSPC || ret != -ENOSPC) {
		printf("  err %d close %d\n", err, ret);
		err = -1;
		goto out;
	}
	struct ustack_trace_reader *r = ustack_trace_reader__open(path, NULL);
	struct ustack_trace_record rec;

	if (!r) {
		err = -2;
		goto out;
	}
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1)
		events += rec.type == USTACK_TRACE_EVENT;
	ustack_trace_reader__close(r);
	err = ret == -EBADMSG && events > 50 ? 0 : -3;
out:
	unlink(path);
	umount(dir);
	rmdir(dir);
	CHECK_EQ(err, 0);
}

static void test_stitching(void)
{
	struct fake f = { .nr_ustacks = 5 };
	const char *path = tmpfile_path();
	struct ustack_trace_writer *w = open_writer(path, &f, 0);
	struct ustack_trace_reader *r;
	struct ustack_trace_stitcher *s = ustack_trace_stitcher__new();
	struct ustack_trace_record rec;
	struct ustack_trace_stitched out;
	int ret, n = 0;
	/* expected result per event time */
	struct { uint64_t time; uint32_t result; uint32_t ustack; } want[] = {
		{ 10, USTACK_TRACE_STITCH_OK, 100 },        /* tid 1, cookie A */
		{ 11, USTACK_TRACE_STITCH_OK, 100 },        /* tid 1, cookie A again */
		{ 12, USTACK_TRACE_STITCH_MISMATCH, 0 },    /* tid 2 cookie B, stack arrives with C */
		{ 13, USTACK_TRACE_STITCH_NO_COOKIE, 0 },
		{ 14, USTACK_TRACE_STITCH_MISMATCH, 0 },    /* tid 3 cookie D, then tid 3 cookie E */
		{ 15, USTACK_TRACE_STITCH_LOST, 0 },        /* tid 3 cookie E, LOST before its stack */
		{ 16, USTACK_TRACE_STITCH_OK, 101 },        /* tid 3 cookie E after the loss */
		{ 17, USTACK_TRACE_STITCH_OK, USTACK_TRACE_NO_STACK }, /* stack without frames */
		{ 18, USTACK_TRACE_STITCH_END, 0 },
	};
	const uint64_t A = 0x100000001ull, B = 0x300000002ull, C = 0x500000002ull, D = 0x700000001ull,
		       E = 0x900000001ull, F = 0xb00000001ull, G = 0xd00000001ull;
#define EV(t, tid_, ck) do { struct ustack_trace_event e_ = { .time = t, .pid = 1, .tid = tid_, \
	.kstack_id = USTACK_TRACE_NO_STACK, .cookie = ck }; \
	CHECK_EQ(ustack_trace_writer__add_event(w, &e_), 0); } while (0)
#define US(t, tid_, ck, id) do { struct ustack_trace_user_stack u_ = { .time = t, .pid = 1, \
	.tid = tid_, .cookie = ck, .stack_id = id }; \
	CHECK_EQ(ustack_trace_writer__add_user_stack(w, &u_), 0); } while (0)

	CHECK(w && s);
	CHECK_EQ(ustack_trace_writer__add_event_desc(w, &desc_cpu), 0);
	EV(10, 1, A);
	EV(11, 1, A);
	EV(12, 2, B);
	EV(13, 2, 0);
	US(20, 1, A, 100);
	US(21, 2, C, 102);
	EV(14, 3, D);
	EV(15, 3, E);
	struct ustack_trace_lost l = { 22, USTACK_TRACE_LOST_KERNEL, 0, 3 };
	CHECK_EQ(ustack_trace_writer__add_lost(w, &l), 0);
	EV(16, 3, E);
	US(23, 3, E, 101);
	EV(17, 4, F);
	US(24, 4, F, USTACK_TRACE_NO_STACK);
	US(25, 4, G, 100); /* nothing waits: ignored */
	EV(18, 5, G);
	CHECK_EQ(ustack_trace_writer__close(w), 0);
#undef EV
#undef US
	r = ustack_trace_reader__open(path, NULL);
	CHECK(r);
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1)
		CHECK_EQ(ustack_trace_stitcher__push(s, &rec), 0);
	CHECK_EQ(ret, 0);
	CHECK_EQ(ustack_trace_stitcher__push(s, NULL), 0);
	while (ustack_trace_stitcher__pop(s, &out)) {
		int found = 0;

		for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
			if (want[i].time != out.event.time)
				continue;
			found = 1;
			CHECK_EQ(out.result, want[i].result);
			if (out.result == USTACK_TRACE_STITCH_OK)
				CHECK_EQ_U64(out.ustack_id, want[i].ustack);
			else
				CHECK_EQ_U64(out.ustack_id, USTACK_TRACE_NO_STACK);
		}
		CHECK(found);
		n++;
	}
	CHECK_EQ(n, (int)ARRAY_SIZE(want));
	ustack_trace_stitcher__free(s);
	ustack_trace_reader__close(r);
	unlink(path);
}

/* A typical profile: 999 Hz on 2 CPUs, 4 threads, 200 distinct user stacks
 * of 12 frames over 5 files, 20 kernel stacks; 20000 samples. */
static void test_typical_sizes(void)
{
	struct fake f = { .nr_ustacks = 200 };
	const char *path = tmpfile_path();
	struct ustack_trace_writer *w = open_writer(path, &f, 0);
	struct ustack_trace_stats st;
	uint64_t t = 240253487000ull;
	struct stat sb;

	CHECK(w);
	CHECK_EQ(ustack_trace_writer__add_event_desc(w, &desc_cpu), 0);
	srand(1);
	for (int i = 0; i < 20000; i++) {
		uint32_t cpu = i % 2, tid = 31337 + rand() % 4;
		uint64_t cookie = ((uint64_t)(2 * (i / 2) + 1) << 32) | (cpu + 1);
		struct ustack_trace_event e = { .time = t, .pid = 31337, .tid = tid, .cpu = cpu,
						.kstack_id = rand() % 3 ? USTACK_TRACE_NO_STACK : (uint32_t)(rand() % 2),
						.cookie = cookie };
		struct ustack_trace_user_stack u = { .time = t + 3000, .pid = 31337, .tid = tid,
						     .cpu = cpu, .cookie = cookie,
						     .stack_id = 100 + (uint32_t)(rand() % 200) };

		CHECK_EQ(ustack_trace_writer__add_event(w, &e), 0);
		CHECK_EQ(ustack_trace_writer__add_user_stack(w, &u), 0);
		t += 1001001 / 2 + rand() % 1000;
	}
	ustack_trace_writer__stats(w, &st, sizeof(st));
	CHECK_EQ(ustack_trace_writer__close(w), 0);
	CHECK_EQ(stat(path, &sb), 0);
	printf("INFO typical: %llu events, %llu chunks, file %lld bytes: %.1f bytes/EVENT record, "
	       "%.1f bytes/USER_STACK record, %.1f bytes per sample all included "
	       "(perf --call-graph dwarf: ~8400)\n",
	       (unsigned long long)st.events, (unsigned long long)st.chunks + 1, (long long)sb.st_size,
	       (double)st.event_bytes / st.events, (double)st.user_stack_bytes / st.user_stacks,
	       (double)sb.st_size / st.events);
	CHECK(st.event_bytes / st.events <= 24);
	CHECK(st.user_stack_bytes / st.user_stacks <= 24);
	CHECK((uint64_t)sb.st_size / st.events <= 8400 / 50);
	unlink(path);
}

/* ---- corpus generator -------------------------------------------------- */

static void write_file(const char *dir, const char *name, const uint8_t *b, size_t n)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "wb");
	if (f) {
		fwrite(b, 1, n, f);
		fclose(f);
	}
}

/* Python frames (1.5): a kind-10 FILE_MAP, stacks whose offsets name
 * PYFUNCs (one before its stack, one after, one repeated, one never
 * written), beside a native frame. */
static int py_stack(void *ctx, uint32_t kind, uint32_t id, struct ustack_trace_stack *st)
{
	static struct ustack_trace_frame fr[3];

	if (kind != USTACK_TRACE_USTACK || id != 0)
		return -ENOENT;
	fr[0] = (struct ustack_trace_frame){ ustack_trace_py_offset(1, 7), 0x99, USTACK_METHOD_REGS,
					     USTACK_TRACE_FRAME_EXACT_PC };
	fr[1] = (struct ustack_trace_frame){ ustack_trace_py_offset(2, 0), 0x99, USTACK_METHOD_REGS,
					     USTACK_TRACE_FRAME_EXACT_PC };
	fr[2] = (struct ustack_trace_frame){ ustack_trace_py_offset(9, 3), 0x99, USTACK_METHOD_REGS,
					     USTACK_TRACE_FRAME_EXACT_PC };
	st->frames = fr;
	st->nr = 3;
	return 0;
}

static int py_file_map(void *ctx, uint64_t id, struct ustack_file_map *fm)
{
	if (id != 0x99)
		return -ENOENT;
	fm->kind = USTACK_TRACE_FILE_KIND_PYTHON;
	fm->path = "[python]";
	return 0;
}

static int write_python(const char *dir)
{
	struct ustack_trace_writer_opts o = { .sz = sizeof(o), .get_stack = py_stack,
					      .get_file_map = py_file_map };
	struct ustack_trace_user_stack u = { .time = 2100, .pid = 31, .tid = 31, .cpu = 1,
					     .cookie = 0x300000001ull, .stack_id = 0 };
	struct ustack_trace_pyfunc f1 = { 1, 31, 5, "Tree.walk", "/srv/tree.py" };
	struct ustack_trace_pyfunc f2 = { 2, 31, 0, "<module>", "main.py" };
	const char *path = tmpfile_path();
	struct ustack_trace_writer *w = ustack_trace_writer__open(path, &test_hdr, &o);
	size_t len;
	uint8_t *buf;
	int err;

	if (!w)
		return 1;
	err = ustack_trace_writer__add_pyfunc(w, &f1);
	err = err ?: ustack_trace_writer__add_user_stack(w, &u);
	err = err ?: ustack_trace_writer__add_pyfunc(w, &f2);
	err = err ?: ustack_trace_writer__add_pyfunc(w, &f1);
	if (ustack_trace_writer__close(w) || err)
		return 1;
	buf = slurp(path, &len);
	unlink(path);
	if (!buf)
		return 1;
	write_file(dir, "python_frames.ustack", buf, len);
	free(buf);
	return 0;
}

static int gen_corpus(const char *dir)
{
	struct fake f = { 0 };
	const char *path = tmpfile_path();
	struct ustack_trace_writer *w = open_writer(path, &f, 0);
	size_t len, mlen;
	uint8_t *all, *multi;
	char name[64];

	if (!w || write_all_types(w) || ustack_trace_writer__close(w))
		return 1;
	all = slurp(path, &len);
	unlink(path);
	multi = make_multichunk(&mlen, 200, 12);
	if (!all || !multi)
		return 1;
	write_file(dir, "all_types.ustack", all, len);
	if (write_python(dir))
		return 1;
	write_file(dir, "multi_chunk.ustack", multi, mlen);
	write_file(dir, "truncated_mid_chunk.ustack", multi, mlen / 2);
	write_file(dir, "header_only.ustack", multi, 32);
	for (int i = 0; i < 6; i++) {
		size_t at = 32 + (mlen - 32) * i / 6 + 7;

		multi[at] ^= 0x40;
		snprintf(name, sizeof(name), "flipped_%zu.ustack", at);
		write_file(dir, name, multi, mlen);
		multi[at] ^= 0x40;
	}
	free(all);
	free(multi);
	return 0;
}

/* The worked example of docs/trace-format.md section 6. */
static const struct ustack_trace_frame tiny_frames[] = {
	{ 0x1149, 0x2a, USTACK_METHOD_REGS, USTACK_TRACE_FRAME_EXACT_PC },
	{ 0x1260, 0x2a, USTACK_METHOD_CFI, 0 },
};

static int tiny_stack(void *ctx, uint32_t kind, uint32_t id, struct ustack_trace_stack *st)
{
	if (kind != USTACK_TRACE_USTACK || id != 0)
		return -ENOENT;
	st->frames = tiny_frames;
	st->nr = 2;
	return 0;
}

static int tiny_file_map(void *ctx, uint64_t id, struct ustack_file_map *fm)
{
	static const uint8_t bid[8] = { 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04 };

	if (id != 0x2a)
		return -ENOENT;
	fm->kind = USTACK_VMA_FILE;
	fm->path = "/tmp/app";
	fm->build_id_size = 8;
	fm->build_id_source = USTACK_BUILD_ID_ELF;
	memcpy(fm->build_id, bid, 8);
	fm->dev_major = 8;
	fm->dev_minor = 1;
	fm->inode = 4242;
	fm->map_start = 0x400000;
	return 0;
}

static int write_tiny(const char *path)
{
	static const struct ustack_trace_header h = {
		.clock_id = 1, .realtime_ns = 1764000000000000000ull, .clock_ns = 1000000000,
		.hostname = "h", .release = "6.18", .machine = "x86_64",
		.cmdline = "ustack record", .version = "ustack 0.1.0",
	};
	struct ustack_trace_writer_opts o = { .sz = sizeof(o), .get_stack = tiny_stack,
					      .get_file_map = tiny_file_map };
	struct ustack_trace_writer *w = ustack_trace_writer__open(path, &h, &o);
	struct ustack_trace_event e = { .time = 1000000500, .pid = 100, .tid = 101, .cpu = 1,
					.kstack_id = USTACK_TRACE_NO_STACK,
					.cookie = (1ull << 32) | 2 };
	struct ustack_trace_user_stack u = { .time = 1000000600, .pid = 100, .tid = 101, .cpu = 1,
					     .cookie = e.cookie, .stack_id = 0 };
	int err;

	if (!w)
		return -errno;
	err = ustack_trace_writer__add_event_desc(w, &desc_cpu);
	err = err ?: ustack_trace_writer__add_event(w, &e);
	err = err ?: ustack_trace_writer__add_user_stack(w, &u);
	if (err) {
		ustack_trace_writer__close(w);
		return err;
	}
	return ustack_trace_writer__close(w);
}

/* The committed example must be exactly what the writer produces: any
 * change of the encoding shows up here (and must update the spec). */
static void test_golden_example(void)
{
	const char *golden = "tests/data/trace/tiny.ustack";
	const char *path = tmpfile_path();
	size_t glen, len;
	uint8_t *g, *b;

	if (access(golden, R_OK))
		SKIP("%s not found (run from the top of the tree)", golden);
	/* a deliberate change of the format (a new minor): regenerate it */
	if (getenv("USTACK_UPDATE_GOLDEN"))
		CHECK_EQ(write_tiny(golden), 0);
	CHECK_EQ(write_tiny(path), 0);
	g = slurp(golden, &glen);
	b = slurp(path, &len);
	unlink(path);
	CHECK(g && b);
	CHECK_EQ(len, glen);
	CHECK(!memcmp(g, b, len));
	free(g);
	free(b);
}

/* The C reader's records in read_trace.py's dump format. */
static void dump_c(const uint8_t *buf, size_t len, FILE *o)
{
	struct ustack_trace_reader_opts ro = { .sz = sizeof(ro),
					       .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_trace_reader *r = ustack_trace_reader__open_mem(buf, len, &ro);
	struct ustack_trace_record rec;
	int ret;

	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		switch (rec.type) {
		case USTACK_TRACE_HEADER: {
			const struct ustack_trace_header *h = &rec.header;

			fprintf(o, "HEADER clock=%u realtime=%llu clock_ns=%llu host=%s release=%s "
				"machine=%s cmdline=%s version=%s\n", h->clock_id,
				(unsigned long long)h->realtime_ns, (unsigned long long)h->clock_ns,
				h->hostname, h->release, h->machine, h->cmdline, h->version);
			break;
		}
		case USTACK_TRACE_EVENT_DESC:
			fprintf(o, "EVENT_DESC %u %u %u %llu %s\n", rec.event_desc.id, rec.event_desc.type,
				rec.event_desc.flags, (unsigned long long)rec.event_desc.period,
				rec.event_desc.name);
			break;
		case USTACK_TRACE_THREAD:
			fprintf(o, "THREAD %llu %u %u %u %s\n", (unsigned long long)rec.thread.time,
				rec.thread.pid, rec.thread.tid, rec.thread.flags, rec.thread.comm);
			break;
		case USTACK_TRACE_EVENT: {
			const struct ustack_trace_event *e = &rec.event;
			char ks[16] = "-";

			if (e->kstack_id != USTACK_TRACE_NO_STACK)
				snprintf(ks, sizeof(ks), "%u", e->kstack_id);
			fprintf(o, "EVENT %llu %u %u %u %u %s %#llx %llu", (unsigned long long)e->time,
				e->pid, e->tid, e->cpu, e->event_id, ks, (unsigned long long)e->cookie,
				(unsigned long long)e->value);
			for (uint32_t a = 0; a < e->nr_args; a++)
				fprintf(o, " %llu", (unsigned long long)e->args[a]);
			fprintf(o, "\n");
			break;
		}
		case USTACK_TRACE_USER_STACK: {
			const struct ustack_trace_user_stack *u = &rec.user_stack;
			char id[16] = "-";

			if (u->stack_id != USTACK_TRACE_NO_STACK)
				snprintf(id, sizeof(id), "%u", u->stack_id);
			fprintf(o, "USER_STACK %llu %u %u %u %#llx %u %s\n", (unsigned long long)u->time,
				u->pid, u->tid, u->cpu, (unsigned long long)u->cookie, u->stop_reason, id);
			break;
		}
		case USTACK_TRACE_STACK:
			fprintf(o, "STACK %u %u %u", rec.stack.kind, rec.stack.id, rec.stack.nr);
			for (uint32_t i = 0; i < rec.stack.nr; i++) {
				if (rec.stack.kind == USTACK_TRACE_KSTACK) {
					fprintf(o, " %#llx", (unsigned long long)rec.stack.ips[i]);
				} else {
					const struct ustack_trace_frame *f = &rec.stack.frames[i];

					fprintf(o, " %u/%u:%#llx:%#llx", f->method, f->flags,
						(unsigned long long)f->file_id, (unsigned long long)f->offset);
				}
			}
			fprintf(o, "\n");
			break;
		case USTACK_TRACE_FILE_MAP: {
			const struct ustack_file_map *fm = &rec.file_map;
			char hex[80] = "-";

			for (uint32_t i = 0; i < fm->build_id_size; i++)
				sprintf(hex + 2 * i, "%02x", fm->build_id[i]);
			fprintf(o, "FILE_MAP %#llx %u %u %u %s %u:%u %llu %#llx %s %s %#x\n",
				(unsigned long long)fm->file_id, fm->kind, fm->flags, fm->build_id_source,
				hex, fm->dev_major, fm->dev_minor, (unsigned long long)fm->inode,
				(unsigned long long)fm->map_start, fm->path,
				fm->debuglink ? fm->debuglink : "-", fm->debuglink_crc);
			break;
		}
		case USTACK_TRACE_LOST:
			fprintf(o, "LOST %u %llu %u %llu\n", rec.lost.what, (unsigned long long)rec.lost.time,
				rec.lost.cpu, (unsigned long long)rec.lost.count);
			break;
		case USTACK_TRACE_KSYM:
			fprintf(o, "KSYM %#llx %llu %s %s\n", (unsigned long long)rec.ksym.addr,
				(unsigned long long)rec.ksym.size, rec.ksym.name,
				rec.ksym.module && *rec.ksym.module ? rec.ksym.module : "-");
			break;
		case USTACK_TRACE_FILE_CONTENT: {
			char hex[65];

			for (int i = 0; i < 32; i++)
				sprintf(hex + 2 * i, "%02x", rec.file_content.hash[i]);
			fprintf(o, "FILE_CONTENT %#llx %u %u %s %llu\n",
				(unsigned long long)rec.file_content.file_id, rec.file_content.flags,
				rec.file_content.algo, hex, (unsigned long long)rec.file_content.size);
			break;
		}
		case USTACK_TRACE_PYFUNC:
			fprintf(o, "PYFUNC %#llx %u %u %s %s\n", (unsigned long long)rec.pyfunc.id,
				rec.pyfunc.pid, rec.pyfunc.first_line, rec.pyfunc.name, rec.pyfunc.file);
			break;
		case USTACK_TRACE_END: {
			const struct ustack_trace_stats *t = &rec.end;

			fprintf(o, "END %llu %llu %llu %llu %llu %llu %llu %llu\n",
				(unsigned long long)t->events, (unsigned long long)t->user_stacks,
				(unsigned long long)t->stacks, (unsigned long long)t->file_maps,
				(unsigned long long)t->lost, (unsigned long long)t->chunks,
				(unsigned long long)t->first_time, (unsigned long long)t->last_time);
			break;
		}
		}
	}
	if (ret)
		fprintf(o, "ERROR offset %llu\n",
			(unsigned long long)ustack_trace_reader__error_offset(r));
	ustack_trace_reader__close(r);
}

/* A 1.2 file (the golden example as 1.2 wrote it) reads to the very records
 * the 1.3 writer's file does: only the minor version differs. */
static void test_old_minor_reads(void)
{
	static const char *const paths[2] = { "tests/data/trace/tiny-1.2.ustack",
					      "tests/data/trace/tiny.ustack" };
	char dump[2][4096];

	for (int i = 0; i < 2; i++) {
		size_t len;
		uint8_t *buf;
		FILE *o;

		if (access(paths[i], R_OK))
			SKIP("%s not found (run from the top of the tree)", paths[i]);
		buf = slurp(paths[i], &len);
		CHECK(buf);
		CHECK_EQ(buf[10], i ? USTACK_TRACE_VERSION_MINOR : 2);
		memset(dump[i], 0, sizeof(dump[i]));
		o = fmemopen(dump[i], sizeof(dump[i]) - 1, "w");
		CHECK(o);
		dump_c(buf, len, o);
		fclose(o);
		free(buf);
	}
	CHECK(strstr(dump[0], "EVENT_DESC 0 0 1 999 cpu-clock"));
	CHECK(!strstr(dump[0], "ERROR"));
	CHECK_STR(dump[0], dump[1]);
}

/* Off-CPU (1.3): the event type, the unit bits and the weights come back as
 * written, and a weight of 1 stored explicitly reads as 1. */
static void test_offcpu_roundtrip(void)
{
	struct ustack_trace_header h = { .clock_id = 1 };
	struct ustack_trace_event_desc d = {
		.id = 3, .type = USTACK_TRACE_EV_OFFCPU, .flags = USTACK_TRACE_EV_UNIT_NS,
		.period = 250000, .name = "off-cpu",
	};
	static const uint64_t values[] = { 1, 2500000, 1ull << 40 };
	const char *path = tmpfile_path();
	struct ustack_trace_writer *w = ustack_trace_writer__open(path, &h, NULL);
	struct ustack_trace_reader *r;
	struct ustack_trace_record rec;
	int ret, nev = 0, ndesc = 0;

	CHECK(w);
	CHECK_EQ(ustack_trace_writer__add_event_desc(w, &d), 0);
	for (int i = 0; i < 3; i++) {
		struct ustack_trace_event e = { .time = 1000u * (i + 1), .pid = 5, .tid = 6,
						.event_id = 3, .kstack_id = USTACK_TRACE_NO_STACK,
						.value = values[i],
						.flags = USTACK_TRACE_EVENT_HAS_VALUE };

		CHECK_EQ(ustack_trace_writer__add_event(w, &e), 0);
	}
	CHECK_EQ(ustack_trace_writer__close(w), 0);
	r = ustack_trace_reader__open(path, NULL);
	CHECK(r);
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		if (rec.type == USTACK_TRACE_EVENT_DESC) {
			CHECK_EQ(rec.event_desc.type, USTACK_TRACE_EV_OFFCPU);
			CHECK_EQ(rec.event_desc.flags & USTACK_TRACE_EV_UNIT_MASK,
				 USTACK_TRACE_EV_UNIT_NS);
			CHECK_EQ(rec.event_desc.period, 250000);
			ndesc++;
		} else if (rec.type == USTACK_TRACE_EVENT) {
			CHECK(nev < 3);
			CHECK_EQ(rec.event.value, values[nev]);
			nev++;
		}
	}
	CHECK_EQ(ret, 0);
	CHECK_EQ(nev, 3);
	CHECK_EQ(ndesc, 1);
	ustack_trace_reader__close(r);
	unlink(path);
}

/* 1.4: an EVENT's args (a probe's payload, an allocation's size and
 * address) read back as written, the writer refuses 0 or more than
 * USTACK_TRACE_MAX_ARGS, and the reader a count out of range. */
static void test_args_roundtrip(void)
{
	struct ustack_trace_header h = { .clock_id = 1 };
	struct ustack_trace_event_desc d = {
		.id = 2, .type = USTACK_TRACE_EV_ALLOC, .flags = USTACK_TRACE_EV_UNIT_BYTES,
		.period = 524288, .name = "alloc",
	};
	static const uint64_t args[3][USTACK_TRACE_MAX_ARGS] = {
		{ 100, 0x7f0012345670 }, { UINT64_MAX, 0 }, { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 },
	};
	static const uint32_t nargs[3] = { 2, 2, USTACK_TRACE_MAX_ARGS };
	/* the HEADER, EVENT_DESC 0 and END of test_handmade_records, and an
	 * EVENT of 13 args */
	static const uint8_t hdr_rec[] = { 1, 8, 1, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t end_rec[] = { 10, 8, 0, 0, 0, 0, 0, 1, 0, 0 };
	static const uint8_t desc0[] = { 2, 5, 0, 0, 0, 0, 0 };
	static const uint8_t ev_13args[] = { 4, 7, 0x08, 0, 1, 0, 0, 0, 13 };
	const char *path = tmpfile_path();
	struct ustack_trace_writer *w = ustack_trace_writer__open(path, &h, NULL);
	struct ustack_trace_event e = { .pid = 5, .tid = 6, .event_id = 2,
					.kstack_id = USTACK_TRACE_NO_STACK,
					.flags = USTACK_TRACE_EVENT_HAS_ARGS };
	struct ustack_trace_reader *r;
	struct ustack_trace_record rec;
	int ret, nev = 0;

	CHECK(w);
	CHECK_EQ(ustack_trace_writer__add_event_desc(w, &d), 0);
	CHECK_EQ(ustack_trace_writer__add_event(w, &e), -EINVAL); /* nr_args 0 */
	e.nr_args = USTACK_TRACE_MAX_ARGS + 1;
	CHECK_EQ(ustack_trace_writer__add_event(w, &e), -EINVAL);
	for (int i = 0; i < 3; i++) {
		e.time = 1000u * (i + 1);
		e.nr_args = nargs[i];
		memcpy(e.args, args[i], sizeof(e.args));
		e.value = 4096 + i;
		e.flags = USTACK_TRACE_EVENT_HAS_ARGS | (i ? USTACK_TRACE_EVENT_HAS_VALUE : 0);
		CHECK_EQ(ustack_trace_writer__add_event(w, &e), 0);
	}
	CHECK_EQ(ustack_trace_writer__close(w), 0);
	r = ustack_trace_reader__open(path, NULL);
	CHECK(r);
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		if (rec.type != USTACK_TRACE_EVENT)
			continue;
		CHECK(nev < 3);
		CHECK(rec.event.flags & USTACK_TRACE_EVENT_HAS_ARGS);
		CHECK_EQ(rec.event.nr_args, nargs[nev]);
		CHECK(!memcmp(rec.event.args, args[nev], nargs[nev] * sizeof(uint64_t)));
		CHECK_EQ(rec.event.value, nev ? 4096u + nev : 1u);
		nev++;
	}
	CHECK_EQ(ret, 0);
	CHECK_EQ(nev, 3);
	ustack_trace_reader__close(r);
	unlink(path);
	{
		uint8_t p[512];
		char msg[256];
		size_t n = 0;
		int nrecs;

		memcpy(p + n, hdr_rec, sizeof(hdr_rec)), n += sizeof(hdr_rec);
		memcpy(p + n, desc0, sizeof(desc0)), n += sizeof(desc0);
		memcpy(p + n, ev_13args, sizeof(ev_13args)), n += sizeof(ev_13args);
		memcpy(p + n, end_rec, sizeof(end_rec)), n += sizeof(end_rec);
		ret = read_handmade(p, n, 4, 0, &nrecs, msg, sizeof(msg));
		CHECK_EQ(ret, -EBADMSG);
		CHECK(strstr(msg, "bad number of args"));
	}
}

/* An independent Python reader written from the spec alone must see the
 * same records, and the same damage offset, as the C reader. */
static void test_python_reader_agrees(void)
{
	const char *py = "tests/data/trace/read_trace.py";
	char dir[] = "/tmp/ustack-test-corpus-XXXXXX", cmd[512], p[300];
	static const char *files[] = {
		"all_types.ustack", "multi_chunk.ustack", "truncated_mid_chunk.ustack",
		"header_only.ustack", "python_frames.ustack",
	};
	int files_done = 0;

	if (access(py, R_OK))
		SKIP("%s not found (run from the top of the tree)", py);
	if (system("python3 -c 'import zlib' >/dev/null 2>&1"))
		SKIP("python3 with zlib not available");
	CHECK(mkdtemp(dir));
	CHECK_EQ(gen_corpus(dir), 0);
	for (size_t i = 0; i < ARRAY_SIZE(files) + 6; i++) {
		char *want = NULL, got_buf[1 << 16];
		size_t want_len = 0, got_len, len;
		uint8_t *buf;
		FILE *o, *pp;

		if (i < ARRAY_SIZE(files)) {
			snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		} else {
			/* the flipped_* files, whatever their names (each is
			 * removed once compared) */
			snprintf(cmd, sizeof(cmd), "ls %s/flipped_* | head -n 1", dir);
			pp = popen(cmd, "r");
			CHECK(pp);
			CHECK(fgets(p, sizeof(p), pp));
			pclose(pp);
			p[strcspn(p, "\n")] = 0;
		}
		buf = slurp(p, &len);
		CHECK(buf);
		o = open_memstream(&want, &want_len);
		dump_c(buf, len, o);
		fclose(o);
		free(buf);
		snprintf(cmd, sizeof(cmd), "python3 %s %s", py, p);
		pp = popen(cmd, "r");
		CHECK(pp);
		got_len = fread(got_buf, 1, sizeof(got_buf) - 1, pp);
		pclose(pp);
		got_buf[got_len] = 0;
		if (strcmp(want, got_buf))
			printf("  %s differs:\n--- C\n%s--- python\n%s", p, want, got_buf);
		int same = !strcmp(want, got_buf);

		free(want);
		CHECK(same);
		unlink(p);
		files_done++;
	}
	rmdir(dir);
	CHECK_EQ(files_done, 11);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--gen"))
		return gen_corpus(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--example"))
		return write_tiny(argv[2]) ? 1 : 0;
	RUN(test_varint);
	RUN(test_varint_decoder);
	RUN(test_frame_words);
	RUN(test_roundtrip_all_types);
	RUN(test_skim);
	RUN(test_chunks_self_contained);
	RUN(test_damage_every_byte);
	RUN(test_truncate_every_length);
	RUN(test_handmade_records);
	RUN(test_file_content_roundtrip);
	RUN(test_file_content_invalid);
	RUN(test_version_and_header);
	RUN(test_file_size_limit);
	RUN(test_full_disk);
	RUN(test_stitching);
	RUN(test_typical_sizes);
	RUN(test_golden_example);
	RUN(test_python_reader_agrees);
	RUN(test_old_minor_reads);
	RUN(test_args_roundtrip);
	RUN(test_offcpu_roundtrip);
	TEST_EXIT();
}
