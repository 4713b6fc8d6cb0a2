// SPDX-License-Identifier: MIT
/*
 * procmaps on recorded maps text (tests/data/procmaps/): the parser, region
 * kinds, malformed lines, file ids and the file_map emission rules.
 * Hermetic: no process is inspected, no file is opened but the fixtures.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/procmaps.h>
#include "procmaps/procmaps.h" /* pm_dev_inode_hash(): to build a collision */
#include "test.h"

static char *slurp(const char *name, size_t *len)
{
	const char *top = getenv("TOP");
	char path[4096];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/tests/data/procmaps/%s", top ? top : ".", name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	buf[n] = 0;
	*len = (size_t)n;
	return buf;
}

static char logbuf[4096];

static int capture(enum ustack_print_level level, const char *fmt, va_list ap)
{
	size_t l = strlen(logbuf);

	vsnprintf(logbuf + l, sizeof(logbuf) - l, fmt, ap);
	return 0;
}

static struct ustack_procmaps *open_fixture(const char *name, const struct ustack_procmaps_opts *opts)
{
	size_t len;
	char *buf = slurp(name, &len);
	struct ustack_procmaps *pm;

	if (!buf)
		return NULL;
	pm = ustack_procmaps__open_text(buf, len, opts);
	free(buf);
	return pm;
}

static void test_siphash_vectors(void)
{
	/* the reference vectors of the SipHash paper: key 00..0f, message 00..(n-1) */
	uint64_t key[2] = { 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL };
	uint8_t msg[64];

	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	CHECK_EQ_U64(ustack_siphash24(key, msg, 0), 0x726fdb47dd0e0e31ULL);
	CHECK_EQ_U64(ustack_siphash24(key, msg, 15), 0xa129ca6149be45e5ULL);
	CHECK_EQ_U64(ustack_siphash24(key, msg, 8), 0x93f5f5799a932462ULL);
}

static void test_kinds(void)
{
	struct ustack_procmaps *pm = open_fixture("kinds.txt", NULL);
	struct ustack_vma v;
	uint64_t addr = 0;
	int n = 0;

	CHECK(pm);
	CHECK(!ustack_procmaps__uses_ioctl(pm));
	while (!ustack_procmaps__next(pm, addr, 0, &v)) {
		n++;
		addr = v.end;
		if (!addr)
			break;
	}
	CHECK_EQ(n, 25);

	CHECK_EQ(ustack_procmaps__query(pm, 0x555555556100, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_FILE);
	CHECK_STR(v.name, "/usr/bin/my prog");
	CHECK_EQ_U64(v.start, 0x555555556000);
	CHECK_EQ_U64(v.end, 0x55555555b000);
	CHECK_EQ_U64(v.pgoff, 0x2000);
	CHECK_EQ(v.flags, USTACK_VMA_READ | USTACK_VMA_EXEC);
	CHECK_EQ(v.dev_major, 0xfe);
	CHECK_EQ(v.dev_minor, 0);
	CHECK_EQ_U64(v.inode, 247134);
	CHECK(v.file_id != 0);

	CHECK_EQ(ustack_procmaps__query(pm, 0x555555560010, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_HEAP);
	CHECK_STR(v.name, "[heap]");
	CHECK_EQ_U64(v.file_id, 0);

	CHECK_EQ(ustack_procmaps__query(pm, 0x7f0000000000, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_JIT);
	CHECK(v.name == NULL);
	CHECK_EQ(ustack_procmaps__query(pm, 0x7f0000001fff, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_JIT);
	CHECK_STR(v.name, "[anon:jit code]");
	CHECK_EQ(ustack_procmaps__query(pm, 0x7f0000002000, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_ANON);
	CHECK_STR(v.name, "[anon:arena]");

	CHECK_EQ(ustack_procmaps__query(pm, 0x7f0000010000, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_FILE);
	CHECK_STR(v.name, "/memfd:jit-cache");
	CHECK_EQ(v.flags, USTACK_VMA_READ | USTACK_VMA_EXEC | USTACK_VMA_SHARED | USTACK_VMA_DELETED);
	CHECK_EQ(v.dev_minor, 1);

	CHECK_EQ(ustack_procmaps__query(pm, 0x7f0000301800, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_FILE);
	CHECK_STR(v.name, "/tmp/old plugin.so");
	CHECK(v.flags & USTACK_VMA_DELETED);

	CHECK_EQ(ustack_procmaps__query(pm, 0x7f0000400000, &v), 0);
	CHECK_STR(v.name, "  leading spaces.so");

	CHECK_EQ(ustack_procmaps__query(pm, 0x7ffff7fc1000, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_VVAR);
	CHECK_EQ(ustack_procmaps__query(pm, 0x7ffff7fc5000, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_VVAR);
	CHECK_STR(v.name, "[vvar_vclock]");
	CHECK_EQ(ustack_procmaps__query(pm, 0x7ffff7fc8000, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_VDSO);
	CHECK(v.file_id != 0);
	CHECK_EQ(ustack_procmaps__query(pm, 0x7fffffffe000, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_STACK);
	CHECK_EQ(ustack_procmaps__query(pm, 0xffffffffff600000, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_VSYSCALL);

	/* holes and the ends of the address space */
	CHECK_EQ(ustack_procmaps__query(pm, 0x1000, &v), -ENOENT);
	CHECK_EQ(ustack_procmaps__query(pm, 0x555555581000, &v), -ENOENT);
	CHECK_EQ(ustack_procmaps__query(pm, 0x7f0000003000, &v), -ENOENT);
	CHECK_EQ(ustack_procmaps__query(pm, 0xffffffffff601000, &v), -ENOENT);

	/* executable mappings only */
	n = 0;
	for (addr = 0; !ustack_procmaps__next(pm, addr, USTACK_VMA_EXEC, &v) && v.end; addr = v.end) {
		CHECK(v.flags & USTACK_VMA_EXEC);
		n++;
	}
	CHECK_EQ(n, 10);

	/* recorded maps never send us to this host's files */
	{
		char p[256];

		CHECK_EQ(ustack_procmaps__query(pm, 0x7f0000126000, &v), 0);
		CHECK_EQ(ustack_procmaps__elf_path(pm, &v, p, sizeof(p)), -ENOENT);
	}
	ustack_procmaps__close(pm);
}

struct seen {
	int calls;
	uint64_t ids[16];
	char paths[16][128];
	uint32_t kinds[16];
};

static void on_file_map(void *ctx, const struct ustack_file_map *fm)
{
	struct seen *s = ctx;

	if (s->calls < 16) {
		s->ids[s->calls] = fm->file_id;
		snprintf(s->paths[s->calls], sizeof(s->paths[0]), "%s", fm->path ? fm->path : "(null)");
		s->kinds[s->calls] = fm->kind;
	}
	s->calls++;
}

static void test_resolve_and_file_map(void)
{
	struct seen s = { 0 };
	struct ustack_procmaps_opts o = { .sz = sizeof(o), .on_file_map = on_file_map, .ctx = &s };
	struct ustack_procmaps *pm = open_fixture("kinds.txt", &o);
	const uint64_t pcs[] = {
		0x555555556123, /* prog text */
		0x7f0000127000, /* libc text */
		0x555555557000, /* prog again */
		0x7f000027c010, /* libc rodata: same file, other mapping */
		0x7ffff7fca100, /* ld.so */
		0x0000deadbeef, /* nothing */
		0x7f0000000010, /* JIT */
		0x7ffff7fc7100, /* vDSO */
	};
	struct ustack_resolved r[8];
	struct ustack_file_map fm;
	size_t it = 0;

	CHECK(pm);
	CHECK_EQ(ustack_procmaps__resolve(pm, pcs, 8, r), 7);
	CHECK_EQ(r[0].kind, USTACK_VMA_FILE);
	CHECK_EQ_U64(r[0].offset, 0x555555556123 - 0x555555556000 + 0x2000);
	CHECK_EQ(r[0].flags, USTACK_RESOLVED_NEW_FILE);
	CHECK_EQ_U64(r[1].offset, 0x7f0000127000 - 0x7f0000126000 + 0x26000);
	CHECK_EQ(r[1].flags, USTACK_RESOLVED_NEW_FILE);
	CHECK(r[1].file_id != r[0].file_id);
	CHECK_EQ_U64(r[2].file_id, r[0].file_id);
	CHECK_EQ(r[2].flags, 0);
	CHECK_EQ_U64(r[2].offset, 0x3000);
	CHECK_EQ_U64(r[3].file_id, r[1].file_id);
	CHECK_EQ(r[3].flags, 0);
	CHECK_EQ_U64(r[3].offset, 0x17c010);
	CHECK_EQ(r[4].flags, USTACK_RESOLVED_NEW_FILE);
	CHECK_EQ_U64(r[4].offset, 0x1100);
	CHECK_EQ(r[5].kind, USTACK_VMA_UNMAPPED);
	CHECK_EQ_U64(r[5].file_id, 0);
	CHECK_EQ_U64(r[5].offset, 0);
	CHECK_EQ(r[6].kind, USTACK_VMA_JIT);
	CHECK_EQ_U64(r[6].file_id, 0);
	CHECK_EQ_U64(r[6].offset, 0x7f0000000010);
	CHECK_EQ(r[7].kind, USTACK_VMA_VDSO);
	CHECK_EQ(r[7].flags, USTACK_RESOLVED_NEW_FILE);
	CHECK_EQ_U64(r[7].offset, 0x100);

	/* one callback per id, in first-use order, with the right records */
	CHECK_EQ(s.calls, 4);
	CHECK_EQ_U64(s.ids[0], r[0].file_id);
	CHECK_STR(s.paths[0], "/usr/bin/my prog");
	CHECK_STR(s.paths[1], "/usr/lib/x86_64-linux-gnu/libc.so.6");
	CHECK_STR(s.paths[2], "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
	CHECK_STR(s.paths[3], "[vdso]");
	CHECK_EQ(s.kinds[3], USTACK_VMA_VDSO);

	/* a second walk of the same stack: nothing new */
	CHECK_EQ(ustack_procmaps__resolve(pm, pcs, 8, r), 7);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(r[i].flags, 0);
	CHECK_EQ(s.calls, 4);

	/* the iterator re-lists every id (a trace chunk start) */
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(ustack_procmaps__next_file_map(pm, &it, &fm), 0);
		CHECK_EQ_U64(fm.file_id, s.ids[i]);
	}
	CHECK_EQ(ustack_procmaps__next_file_map(pm, &it, &fm), -ENOENT);

	CHECK_EQ(ustack_procmaps__file_map(pm, r[1].file_id, &fm), 0);
	CHECK_EQ(fm.kind, USTACK_VMA_FILE);
	CHECK_EQ(fm.dev_major, 0xfe);
	CHECK_EQ_U64(fm.inode, 332835);
	CHECK_EQ_U64(fm.map_start, 0x7f0000100000);
	CHECK_EQ(fm.build_id_size, 0); /* recorded maps: no file to read */
	CHECK_EQ(fm.generation, 0);
	CHECK_EQ(ustack_procmaps__file_map(pm, 12345, &fm), -ENOENT);
	ustack_procmaps__close(pm);
}

static const char remap_a[] =
	"00400000-00401000 r-xp 00000000 08:01 100 /opt/a.so\n"
	"00500000-00501000 r-xp 00000000 08:01 200 /opt/b.so\n";
/* same range, another file (dev:inode differ) */
static const char remap_b[] =
	"00400000-00401000 r-xp 00000000 08:02 100 /opt/a.so\n"
	"00500000-00501000 r-xp 00000000 08:01 200 /opt/b.so (deleted)\n";
/* inode 100 of 08:01 recycled for another path */
static const char remap_c[] =
	"00400000-00401000 r-xp 00000000 08:01 100 /opt/new.so\n";
/* back to the first file */
static const char remap_d[] =
	"00400000-00401000 r-xp 00000000 08:01 100 /opt/a.so\n";

static void test_remap_new_ids(void)
{
	struct seen s = { 0 };
	struct ustack_procmaps_opts o = { .sz = sizeof(o), .on_file_map = on_file_map, .ctx = &s };
	struct ustack_procmaps *pm = ustack_procmaps__open_text(remap_a, sizeof(remap_a) - 1, &o);
	uint64_t pcs[2] = { 0x400010, 0x500020 };
	struct ustack_resolved r[2];
	struct ustack_file_map fm;
	uint64_t a, b, a2, c;

	CHECK(pm);
	CHECK_EQ(ustack_procmaps__resolve(pm, pcs, 2, r), 2);
	a = r[0].file_id;
	b = r[1].file_id;
	CHECK(a && b && a != b);

	CHECK_EQ(ustack_procmaps__reload(pm, remap_b, sizeof(remap_b) - 1), 0);
	CHECK_EQ(ustack_procmaps__resolve(pm, pcs, 2, r), 2);
	a2 = r[0].file_id;
	CHECK(a2 != a);                               /* other dev: other file */
	CHECK_EQ(r[0].flags, USTACK_RESOLVED_NEW_FILE);
	CHECK_EQ_U64(r[1].file_id, b);                /* deleted now, same file */
	CHECK_EQ(r[1].flags, 0);
	CHECK_EQ(ustack_procmaps__file_map(pm, b, &fm), 0);
	CHECK(fm.flags & USTACK_VMA_DELETED);

	CHECK_EQ(ustack_procmaps__reload(pm, remap_c, sizeof(remap_c) - 1), 0);
	CHECK_EQ(ustack_procmaps__resolve(pm, pcs, 1, r), 1);
	c = r[0].file_id;
	CHECK(c != a && c != a2);
	CHECK_EQ(r[0].flags, USTACK_RESOLVED_NEW_FILE);
	CHECK_EQ(ustack_procmaps__file_map(pm, c, &fm), 0);
	CHECK_EQ(fm.generation, 1);
	CHECK_STR(fm.path, "/opt/new.so");

	CHECK_EQ(ustack_procmaps__reload(pm, remap_d, sizeof(remap_d) - 1), 0);
	CHECK_EQ(ustack_procmaps__resolve(pm, pcs, 1, r), 1);
	CHECK_EQ_U64(r[0].file_id, a);
	CHECK_EQ(r[0].flags, 0);
	CHECK_EQ(s.calls, 4);

	/* the address that left: now unmapped */
	CHECK_EQ(ustack_procmaps__resolve(pm, pcs + 1, 1, r), 0);
	CHECK_EQ(r[0].kind, USTACK_VMA_UNMAPPED);
	ustack_procmaps__close(pm);
}

/*
 * Two files whose dev:inode hash alike share one chain of the file table:
 * each keeps its own id while the other one's inode is recycled (a new
 * generation replaces the old in the chain) and comes back.
 */
static void test_dev_inode_hash_collision(void)
{
	const uint64_t k1 = 0x9e3779b97f4a7c15ULL, i1 = 100;
	uint64_t inv = k1, i2, pcs[2] = { 0x400010, 0x500020 }, x, y, x1;
	char maps[4][256];
	struct ustack_resolved r[2];
	struct ustack_file_map fm;
	struct ustack_procmaps *pm;

	for (int k = 0; k < 6; k++) /* Newton: k1 * inv == 1 mod 2^64 */
		inv *= 2 - k1 * inv;
	CHECK_EQ_U64(k1 * inv, 1);
	/* i2 * k1 ^ D2 == i1 * k1 ^ D1 with D = dev * 0xc2b2ae3d27d4eb4f */
	i2 = ((i1 * k1) ^ ((1ull << 32 | 1) * 0xc2b2ae3d27d4eb4fULL) ^
	      ((2ull << 32 | 7) * 0xc2b2ae3d27d4eb4fULL)) * inv;
	CHECK(i2 != i1);
	CHECK_EQ_U64(pm_dev_inode_hash(2, 7, i2), pm_dev_inode_hash(1, 1, i1));

	snprintf(maps[0], sizeof(maps[0]),
		 "00400000-00401000 r-xp 00000000 01:01 %" PRIu64 " /opt/x.so\n"
		 "00500000-00501000 r-xp 00000000 02:07 %" PRIu64 " /opt/y.so\n", i1, i2);
	/* x's inode recycled for another path; y unchanged */
	snprintf(maps[1], sizeof(maps[1]),
		 "00400000-00401000 r-xp 00000000 01:01 %" PRIu64 " /opt/x-new.so\n"
		 "00500000-00501000 r-xp 00000000 02:07 %" PRIu64 " /opt/y.so\n", i1, i2);
	pm = ustack_procmaps__open_text(maps[0], strlen(maps[0]), NULL);
	CHECK(pm);
	CHECK_EQ(ustack_procmaps__resolve(pm, pcs, 2, r), 2);
	x = r[0].file_id;
	y = r[1].file_id;
	CHECK(x && y && x != y);
	CHECK_EQ(ustack_procmaps__file_map(pm, y, &fm), 0);
	CHECK_EQ_U64(fm.inode, i2);
	CHECK_EQ(fm.dev_minor, 7);

	CHECK_EQ(ustack_procmaps__reload(pm, maps[1], strlen(maps[1])), 0);
	CHECK_EQ(ustack_procmaps__resolve(pm, pcs, 2, r), 2);
	x1 = r[0].file_id;
	CHECK(x1 != x && x1 != y);
	CHECK_EQ(ustack_procmaps__file_map(pm, x1, &fm), 0);
	CHECK_EQ(fm.generation, 1);
	CHECK_STR(fm.path, "/opt/x-new.so");
	CHECK_EQ_U64(r[1].file_id, y);

	/* back to the first picture: the old generation of x, y as ever */
	CHECK_EQ(ustack_procmaps__reload(pm, maps[0], strlen(maps[0])), 0);
	CHECK_EQ(ustack_procmaps__resolve(pm, pcs, 2, r), 2);
	CHECK_EQ_U64(r[0].file_id, x);
	CHECK_EQ_U64(r[1].file_id, y);
	ustack_procmaps__close(pm);
}

static void test_id_key(void)
{
	struct ustack_procmaps_opts o1 = { .sz = sizeof(o1), .id_key = { 1, 2 } };
	struct ustack_procmaps_opts o2 = { .sz = sizeof(o2), .id_key = { 3, 4 } };
	struct ustack_procmaps *p1 = ustack_procmaps__open_text(remap_a, sizeof(remap_a) - 1, &o1);
	struct ustack_procmaps *p1b = ustack_procmaps__open_text(remap_a, sizeof(remap_a) - 1, &o1);
	struct ustack_procmaps *p2 = ustack_procmaps__open_text(remap_a, sizeof(remap_a) - 1, &o2);
	struct ustack_procmaps *pd = ustack_procmaps__open_text(remap_a, sizeof(remap_a) - 1, NULL);
	struct ustack_procmaps *pd2 = ustack_procmaps__open_text(remap_a, sizeof(remap_a) - 1, NULL);
	struct ustack_vma v1, v1b, v2, vd, vd2;

	CHECK(p1 && p1b && p2 && pd && pd2);
	CHECK_EQ(ustack_procmaps__query(p1, 0x400000, &v1), 0);
	CHECK_EQ(ustack_procmaps__query(p1b, 0x400000, &v1b), 0);
	CHECK_EQ(ustack_procmaps__query(p2, 0x400000, &v2), 0);
	CHECK_EQ(ustack_procmaps__query(pd, 0x400000, &vd), 0);
	CHECK_EQ(ustack_procmaps__query(pd2, 0x400000, &vd2), 0);
	CHECK_EQ_U64(v1.file_id, v1b.file_id);
	CHECK(v1.file_id != v2.file_id);
	CHECK_EQ_U64(vd.file_id, vd2.file_id); /* one random key per process */
	ustack_procmaps__close(p1);
	ustack_procmaps__close(p1b);
	ustack_procmaps__close(p2);
	ustack_procmaps__close(pd);
	ustack_procmaps__close(pd2);
}

static void test_malformed(void)
{
	static const struct {
		const char *file;
		unsigned int line;
		const char *why;
	} cases[] = {
		{ "bad_range.txt", 3, "bad address range" },
		{ "bad_perms.txt", 4, "bad permissions" },
		{ "bad_inode.txt", 1, "junk after inode" },
		{ "bad_order.txt", 2, "out of order" },
		{ "bad_overlap.txt", 3, "overlaps" },
		{ "bad_empty_range.txt", 2, "empty or inverted" },
		{ "bad_truncated.txt", 4, "bad device" },
		{ "bad_hexoverflow.txt", 2, "bad address range" },
	};
	ustack_print_fn_t old = ustack_set_print(capture);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ustack_procmaps_opts o = { .sz = sizeof(o), .name = cases[i].file };
		char want[64];
		struct ustack_procmaps *pm;

		logbuf[0] = 0;
		errno = 0;
		pm = open_fixture(cases[i].file, &o);
		if (pm)
			ustack_procmaps__close(pm);
		CHECK(!pm);
		CHECK_EQ(errno, EBADMSG);
		CHECK_EQ(ustack_procmaps__error_line(), cases[i].line);
		snprintf(want, sizeof(want), "%s: line %u: ", cases[i].file, cases[i].line);
		if (!strstr(logbuf, want) || !strstr(logbuf, cases[i].why)) {
			printf("# log was: %s", logbuf);
			CHECK(!"message names the file, line and problem");
		}
	}
	/* with an errbuf, the message goes there and not to the print
	 * callback too (one error, one channel: docs/api.md "Errors") */
	{
		char err[128] = "";
		struct ustack_procmaps_opts o = { .sz = sizeof(o), .name = "bad_range.txt",
						  .errbuf = err, .errbuf_sz = sizeof(err) };
		struct ustack_procmaps *pm;

		logbuf[0] = 0;
		pm = open_fixture("bad_range.txt", &o);
		if (pm)
			ustack_procmaps__close(pm);
		CHECK(!pm);
		CHECK_STR(err, "bad_range.txt: line 3: bad address range");
		if (logbuf[0])
			printf("# log was: %s", logbuf);
		CHECK(!logbuf[0]);
	}
	ustack_set_print(old);
}

static void test_layouts(void)
{
	/* the 32-bit layout (name after one blank), no name, no final newline,
	 * an empty buffer */
	static const char t[] = "08048000-08049000 r-xp 00000000 08:01 123 /bin/x\n"
				"08049000-0804a000 rw-p 00000000 00:00 0 \n"
				"0804a000-0804b000 rw-p 00000000 00:00 0";
	struct ustack_procmaps *pm = ustack_procmaps__open_text(t, sizeof(t) - 1, NULL);
	struct ustack_vma v;

	CHECK(pm);
	CHECK_EQ(ustack_procmaps__query(pm, 0x8048000, &v), 0);
	CHECK_STR(v.name, "/bin/x");
	CHECK_EQ(ustack_procmaps__query(pm, 0x8049000, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_ANON);
	CHECK(v.name == NULL);
	CHECK_EQ(ustack_procmaps__query(pm, 0x804afff, &v), 0);
	CHECK_EQ(v.kind, USTACK_VMA_ANON);
	ustack_procmaps__close(pm);

	pm = ustack_procmaps__open_text("", 0, NULL);
	CHECK(pm);
	CHECK_EQ(ustack_procmaps__query(pm, 0x1000, &v), -ENOENT);
	CHECK_EQ(ustack_procmaps__next(pm, 0, 0, &v), -ENOENT);
	ustack_procmaps__close(pm);
}

static void test_huge(void)
{
	const size_t n = 200000; /* above the default vm.max_map_count of 65530 */
	size_t cap = n * 100, len = 0;
	char *t = malloc(cap);
	struct ustack_procmaps *pm;
	struct ustack_vma v;
	struct ustack_resolved r;
	uint64_t pc;

	CHECK(t);
	for (size_t i = 0; i < n; i++) {
		uint64_t s = 0x10000000ULL + i * 0x2000;

		len += (size_t)snprintf(t + len, cap - len, "%012llx-%012llx r-xp %08llx fe:00 %zu /lib/f%zu.so\n",
					(unsigned long long)s, (unsigned long long)s + 0x1000,
					(unsigned long long)(i & 7) * 0x1000, 1000 + i / 4, i / 4);
	}
	pm = ustack_procmaps__open_text(t, len, NULL);
	free(t);
	CHECK(pm);
	for (size_t i = 0; i < n; i += 997) {
		uint64_t s = 0x10000000ULL + i * 0x2000;

		CHECK_EQ(ustack_procmaps__query(pm, s + 0x800, &v), 0);
		CHECK_EQ_U64(v.start, s);
		CHECK_EQ_U64(v.inode, 1000 + i / 4);
		CHECK_EQ(ustack_procmaps__query(pm, s + 0x1000, &v), -ENOENT); /* the hole after it */
	}
	pc = 0x10000000ULL + (n - 1) * 0x2000 + 0x10;
	CHECK_EQ(ustack_procmaps__resolve(pm, &pc, 1, &r), 1);
	CHECK_EQ_U64(r.offset, ((n - 1) & 7) * 0x1000 + 0x10);
	ustack_procmaps__close(pm);
}

/* A real capture (python3 with ~60 extension modules) against a line-by-line
 * sscanf reading of the same text. */
static void test_real_capture(void)
{
	size_t len;
	char *buf = slurp("python3_many_modules.txt", &len);
	struct ustack_procmaps *pm;
	char *line, *save = NULL;
	int n = 0;

	CHECK(buf);
	pm = ustack_procmaps__open_text(buf, len, NULL);
	CHECK(pm);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long s, e, off, ino;
		unsigned int maj, min;
		char perm[5];
		int pos = 0;
		struct ustack_vma v;

		CHECK_EQ(sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &s, &e, perm, &off, &maj, &min,
				&ino, &pos), 7);
		CHECK_EQ(ustack_procmaps__query(pm, s, &v), 0);
		CHECK_EQ_U64(v.start, s);
		CHECK_EQ_U64(v.end, e);
		CHECK_EQ(v.dev_major, maj);
		CHECK_EQ(v.dev_minor, min);
		CHECK_EQ_U64(v.inode, ino);
		CHECK_EQ(!!(v.flags & USTACK_VMA_EXEC), perm[2] == 'x');
		if (line[pos] == '/') {
			CHECK_EQ(v.kind, USTACK_VMA_FILE);
			CHECK_EQ_U64(v.pgoff, off);
			CHECK(!strncmp(line + pos, v.name, strlen(v.name)));
		}
		n++;
	}
	CHECK_EQ(n, 372);
	ustack_procmaps__close(pm);
	free(buf);
}

int main(void)
{
	RUN(test_siphash_vectors);
	RUN(test_kinds);
	RUN(test_resolve_and_file_map);
	RUN(test_remap_new_ids);
	RUN(test_dev_inode_hash_collision);
	RUN(test_id_key);
	RUN(test_malformed);
	RUN(test_layouts);
	RUN(test_huge);
	RUN(test_real_capture);
	TEST_EXIT();
}
