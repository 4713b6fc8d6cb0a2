// SPDX-License-Identifier: MIT
/*
 * The probe resolver's parsers (src/probe/): probe names, USDT argument
 * specs, stapsdt notes and ld.so.cache tables built here byte by byte.
 * The resolution against real files is tests/integration/probe_resolve.sh.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "probe/probe.h"
#include "probe/probe_internal.h"
#include "record/core.h"
#include "record/rec.h"
#include "test.h"

/* the uapi x86-64 struct pt_regs, as <asm/ptrace.h> lays it out */
struct uapi_pt_regs {
	unsigned long r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8, rax, rcx, rdx, rsi, rdi,
		orig_rax, rip, cs, eflags, rsp, ss;
};

static void test_parse_good(void)
{
	struct ustack_probe_spec s;
	char err[256];

	CHECK_EQ(ustack_probe_parse("uprobe:/bin/bash:readline", &s, err, sizeof(err)), 1);
	CHECK_EQ(s.kind, USTACK_PROBE_UPROBE);
	CHECK_STR(s.path, "/bin/bash");
	CHECK_STR(s.symbol, "readline");
	CHECK_EQ(s.offset, 0);
	CHECK_EQ(ustack_probe_parse("uprobe:libc:malloc+0x1c", &s, err, sizeof(err)), 1);
	CHECK_STR(s.path, "libc");
	CHECK_STR(s.symbol, "malloc");
	CHECK_EQ(s.offset, 0x1c);
	CHECK_EQ(ustack_probe_parse("uprobe:libc:malloc+12", &s, err, sizeof(err)), 1);
	CHECK_EQ(s.offset, 12);
	CHECK_EQ(ustack_probe_parse("uprobe:/x/y:0x4011a0", &s, err, sizeof(err)), 1);
	CHECK_STR(s.symbol, "");
	CHECK_EQ_U64(s.address, 0x4011a0);
	CHECK_EQ(ustack_probe_parse("uretprobe:libc:pthread_mutex_*", &s, err, sizeof(err)), 1);
	CHECK_EQ(s.kind, USTACK_PROBE_URETPROBE);
	CHECK_STR(s.symbol, "pthread_mutex_*");
	CHECK_EQ(ustack_probe_parse("usdt:/usr/bin/python3:python:function__entry", &s, err,
				    sizeof(err)), 1);
	CHECK_EQ(s.kind, USTACK_PROBE_USDT);
	CHECK_STR(s.provider, "python");
	CHECK_STR(s.name, "function__entry");
	/* no provider: any provider, as bpftrace */
	CHECK_EQ(ustack_probe_parse("usdt:libc:memory_malloc_retry", &s, err, sizeof(err)), 1);
	CHECK_STR(s.provider, "*");
	CHECK_STR(s.name, "memory_malloc_retry");
	CHECK_STR(s.path, "libc");
}

static void test_parse_not_probe(void)
{
	struct ustack_probe_spec s;
	char err[256];

	CHECK_EQ(ustack_probe_parse("sched:sched_switch", &s, err, sizeof(err)), 0);
	CHECK_EQ(ustack_probe_parse("cpu-clock", &s, err, sizeof(err)), 0);
	CHECK_EQ(ustack_probe_parse("uprobes:a:b", &s, err, sizeof(err)), 0);
}

static void bad(const char *name, const char *want)
{
	struct ustack_probe_spec s;
	char err[256] = "";

	if (ustack_probe_parse(name, &s, err, sizeof(err)) != -EINVAL || !strstr(err, want)) {
		printf("    %s: got '%s', want -EINVAL and '%s'\n", name, err, want);
		CHECK(0);
	}
}

static void test_parse_bad(void)
{
	bad("uretprobe:libc:malloc+4", "no +OFFSET");
	bad("uretprobe:libc:0x1234", "not an address");
	bad("uprobe:libc", "want uprobe:PATH:SYMBOL");
	bad("uprobe:/a:b:c", "a PATH cannot");
	bad("uprobe::malloc", "no PATH");
	bad("uprobe:libc:", "no function name");
	bad("uprobe:libc:malloc+", "bad offset");
	bad("uprobe:libc:malloc+0xzz", "bad offset");
	bad("uprobe:libc:malloc+99999999999999999999", "bad offset");
	bad("uprobe:libc:mall*+4", "not a wildcard");
	bad("uprobe:libc:0xg", "bad address");
	bad("usdt:libc", "want usdt:PATH");
	bad("usdt:a:b:c:d", "a PATH cannot");
	bad("usdt:a:b:c:d:e", "too many");
	bad("usdt:a::n", "bad provider");
	bad("usdt:a:p:", "bad probe name");
}

static void one_arg(const char *spec, int kind, int size, size_t reg, long long val)
{
	struct ustack_usdt_arg a[USTACK_USDT_MAX_ARGS];
	char err[128] = "";
	int n = ustack_usdt_parse_args(spec, a, USTACK_USDT_MAX_ARGS, err, sizeof(err));

	if (n != 1 || a[0].kind != kind || a[0].size != size ||
	    (kind != USTACK_USDT_ARG_CONST && a[0].reg != reg) ||
	    (kind != USTACK_USDT_ARG_REG && a[0].val != val)) {
		printf("    '%s': n %d (%s) kind %d size %d reg %u val %lld\n", spec, n, err,
		       n > 0 ? a[0].kind : 0, n > 0 ? a[0].size : 0, n > 0 ? a[0].reg : 0,
		       n > 0 ? (long long)a[0].val : 0);
		CHECK(0);
	}
}

#define R(f) offsetof(struct uapi_pt_regs, f)

/* every width of every register names its 64-bit register */
static void test_usdt_regs(void)
{
	static const struct { const char *n[4]; size_t off; } t[] = {
		{ { "rax", "eax", "ax", "al" }, R(rax) }, { { "rbx", "ebx", "bx", "bl" }, R(rbx) },
		{ { "rcx", "ecx", "cx", "cl" }, R(rcx) }, { { "rdx", "edx", "dx", "dl" }, R(rdx) },
		{ { "rsi", "esi", "si", "sil" }, R(rsi) }, { { "rdi", "edi", "di", "dil" }, R(rdi) },
		{ { "rbp", "ebp", "bp", "bpl" }, R(rbp) }, { { "rsp", "esp", "sp", "spl" }, R(rsp) },
		{ { "r8", "r8d", "r8w", "r8b" }, R(r8) }, { { "r9", "r9d", "r9w", "r9b" }, R(r9) },
		{ { "r10", "r10d", "r10w", "r10b" }, R(r10) },
		{ { "r11", "r11d", "r11w", "r11b" }, R(r11) },
		{ { "r12", "r12d", "r12w", "r12b" }, R(r12) },
		{ { "r13", "r13d", "r13w", "r13b" }, R(r13) },
		{ { "r14", "r14d", "r14w", "r14b" }, R(r14) },
		{ { "r15", "r15d", "r15w", "r15b" }, R(r15) },
	};
	static const int sizes[4] = { 8, -4, 2, -1 };
	char spec[32];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		for (int w = 0; w < 4; w++) {
			snprintf(spec, sizeof(spec), "%d@%%%s", sizes[w], t[i].n[w]);
			one_arg(spec, USTACK_USDT_ARG_REG, sizes[w], t[i].off, 0);
			snprintf(spec, sizeof(spec), "%d@-24(%%%s)", sizes[w], t[i].n[w]);
			one_arg(spec, USTACK_USDT_ARG_DEREF, sizes[w], t[i].off, -24);
		}
}

static void test_usdt_operands(void)
{
	struct ustack_usdt_arg a[USTACK_USDT_MAX_ARGS];
	char err[128];
	int n;

	one_arg("4@$5", USTACK_USDT_ARG_CONST, 4, 0, 5);
	one_arg("-8@$-42", USTACK_USDT_ARG_CONST, -8, 0, -42);
	one_arg("8@$0x10", USTACK_USDT_ARG_CONST, 8, 0, 16);
	one_arg("8@(%rdi)", USTACK_USDT_ARG_DEREF, 8, R(rdi), 0);
	one_arg("2@0x10(%r12)", USTACK_USDT_ARG_DEREF, 2, R(r12), 16);
	n = ustack_usdt_parse_args("  -4@%eax 8@-8(%rbp)\t1@$1 ", a, USTACK_USDT_MAX_ARGS, err,
				   sizeof(err));
	CHECK_EQ(n, 3);
	CHECK_EQ(a[0].size, -4);
	CHECK_EQ(a[1].val, -8);
	CHECK_EQ(a[2].kind, USTACK_USDT_ARG_CONST);
	CHECK_EQ(ustack_usdt_parse_args("", a, USTACK_USDT_MAX_ARGS, err, sizeof(err)), 0);
	/* refused, each with its reason */
	static const struct { const char *s, *why; } no[] = {
		{ "3@%eax", "size" }, { "16@%rax", "size" }, { "%eax", "SIZE@OPERAND" },
		{ "4@%ah", "unknown register" }, { "4@%xmm0", "unknown register" },
		{ "8@8(%rip)", "RIP-relative" }, { "8@foo(%rip)", "displacement" },
		{ "8@%rip", "%rip" }, { "4@8(%rax,%rbx,8)", "index form" }, { "4@$x", "operand" },
		{ "4@8(%rax", "operand" }, { "4@", "operand" },
	};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		err[0] = 0;
		n = ustack_usdt_parse_args(no[i].s, a, USTACK_USDT_MAX_ARGS, err, sizeof(err));
		if (n != -EBADMSG || !strstr(err, no[i].why)) {
			printf("    '%s': %d '%s', want -EBADMSG '%s'\n", no[i].s, n, err, no[i].why);
			CHECK(0);
		}
	}
	CHECK_EQ(ustack_usdt_parse_args("1@$1 1@$2 1@$3", a, 2, err, sizeof(err)), -EBADMSG);
}

/* ---- stapsdt notes --------------------------------------------------------- */

static size_t put_note(uint8_t *p, const char *owner, uint32_t type, uint64_t pc, uint64_t base,
		       uint64_t sem, const char *strs, size_t strs_len)
{
	uint32_t nsz = (uint32_t)strlen(owner) + 1, dsz = (uint32_t)(24 + strs_len);
	size_t at = 12;

	memcpy(p, &nsz, 4);
	memcpy(p + 4, &dsz, 4);
	memcpy(p + 8, &type, 4);
	memset(p + at, 0, (nsz + 3) & ~3u);
	memcpy(p + at, owner, nsz);
	at += (nsz + 3) & ~3u;
	memset(p + at, 0, (dsz + 3) & ~3u);
	memcpy(p + at, &pc, 8);
	memcpy(p + at + 8, &base, 8);
	memcpy(p + at + 16, &sem, 8);
	memcpy(p + at + 24, strs, strs_len);
	return at + ((dsz + 3) & ~3u);
}

struct seen {
	struct ustack_usdt_note n[4];
	char prov[4][16], name[4][16], args[4][32];
	int nr;
};

static int note_cb(void *ctx, const struct ustack_usdt_note *n)
{
	struct seen *s = ctx;

	if (s->nr == 4)
		return -E2BIG;
	s->n[s->nr] = *n;
	snprintf(s->prov[s->nr], 16, "%s", n->provider);
	snprintf(s->name[s->nr], 16, "%s", n->name);
	snprintf(s->args[s->nr], 32, "%s", n->args);
	s->nr++;
	return 0;
}

static void test_notes(void)
{
	uint8_t buf[512];
	struct seen s = { 0 };
	uint64_t bad = 0;
	size_t n = 0, second;

	n += put_note(buf + n, "stapsdt", 3, 0x1098, 0x2004, 0x4022, "prov\0args4\0-4@%eax 8@$1",
		      sizeof("prov\0args4\0-4@%eax 8@$1"));
	second = n;
	n += put_note(buf + n, "GNU", 3, 1, 2, 3, "x\0y\0", 4);      /* another owner */
	n += put_note(buf + n, "stapsdt", 1, 1, 2, 3, "x\0y\0", 4);  /* another type */
	n += put_note(buf + n, "stapsdt", 3, 0x10a5, 0x2004, 0, "p\0noargs", 9); /* no args */
	CHECK_EQ(ustack_usdt_notes_walk(buf, n, note_cb, &s, &bad), 0);
	CHECK_EQ(s.nr, 2);
	CHECK_EQ_U64(s.n[0].pc, 0x1098);
	CHECK_EQ_U64(s.n[0].base, 0x2004);
	CHECK_EQ_U64(s.n[0].semaphore, 0x4022);
	CHECK_STR(s.prov[0], "prov");
	CHECK_STR(s.name[0], "args4");
	CHECK_STR(s.args[0], "-4@%eax 8@$1");
	CHECK_EQ(s.n[0].off, 0);
	CHECK_STR(s.name[1], "noargs");
	CHECK_STR(s.args[1], "");
	CHECK_EQ_U64(s.n[1].semaphore, 0);
	/* cut inside the second note: the first is offered, the error says where */
	s.nr = 0;
	CHECK_EQ(ustack_usdt_notes_walk(buf, second + 14, note_cb, &s, &bad), -EBADMSG);
	CHECK_EQ(s.nr, 1);
	CHECK_EQ(bad, second);
	/* a name not terminated inside the descriptor */
	n = put_note(buf, "stapsdt", 3, 1, 2, 3, "prov\0name", 9);
	CHECK_EQ(ustack_usdt_notes_walk(buf, n, note_cb, &s, &bad), -EBADMSG);
	/* a descriptor shorter than its three addresses */
	n = put_note(buf, "stapsdt", 3, 1, 2, 3, "", 0);
	memset(buf + 4, 20, 1);
	CHECK_EQ(ustack_usdt_notes_walk(buf, n, note_cb, &s, &bad), -EBADMSG);
}

/* ---- ld.so.cache ------------------------------------------------------------ */

struct lc { char key[4][32], val[4][64]; int nr; };

static int lc_cb(void *ctx, const char *k, const char *v)
{
	struct lc *l = ctx;

	if (l->nr < 4) {
		snprintf(l->key[l->nr], 32, "%s", k);
		snprintf(l->val[l->nr], 64, "%s", v);
	}
	l->nr++;
	return 0;
}

/* a new-format cache at @p + @at of @n entries (flags, key, value) */
static size_t put_cache(uint8_t *p, size_t at, const uint32_t (*e)[3], uint32_t n,
			const char *strs, size_t strs_len)
{
	uint8_t *h = p + at;
	uint32_t str0 = 48 + 24 * n;

	memset(h, 0, str0);
	memcpy(h, "glibc-ld.so.cache1.1", 20);
	memcpy(h + 20, &n, 4);
	memcpy(h + 24, &(uint32_t){ (uint32_t)strs_len }, 4);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = e[i][1] + str0, v = e[i][2] + str0;

		memcpy(h + 48 + 24 * i, &e[i][0], 4);
		memcpy(h + 48 + 24 * i + 4, &k, 4);
		memcpy(h + 48 + 24 * i + 8, &v, 4);
	}
	memcpy(h + str0, strs, strs_len);
	return at + str0 + strs_len;
}

static void test_ldcache(void)
{
	static const char strs[] = "libc.so.6\0/lib/x86_64-linux-gnu/libc.so.6\0libc.so.6\0/lib32/libc.so.6";
	static const uint32_t e[3][3] = {
		{ 0x0303, 0, 10 },   /* x86-64 */
		{ 0x0003, 52, 62 },  /* i386: not ours */
		{ 0x0303, 52, 10 },
	};
	uint8_t buf[1024] = { 0 };
	struct lc l = { 0 };
	size_t n = put_cache(buf, 0, e, 3, strs, sizeof(strs));

	CHECK_EQ(ustack_ldcache_walk(buf, n, lc_cb, &l), 0);
	CHECK_EQ(l.nr, 2);
	CHECK_STR(l.key[0], "libc.so.6");
	CHECK_STR(l.val[0], "/lib/x86_64-linux-gnu/libc.so.6");
	/* after an old-format table of 2 entries (16 + 24 bytes, aligned to
	 * 8: 40), string offsets counted from the new header */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "ld.so-1.7.0", 11);
	memcpy(buf + 12, &(uint32_t){ 2 }, 4);
	n = put_cache(buf, 40, e, 3, strs, sizeof(strs));
	l.nr = 0;
	CHECK_EQ(ustack_ldcache_walk(buf, n, lc_cb, &l), 0);
	CHECK_EQ(l.nr, 2);
	CHECK_STR(l.val[1], "/lib/x86_64-linux-gnu/libc.so.6");
	/* a string offset past the end; a count past the end; no magic */
	n = put_cache(buf, 0, e, 3, strs, sizeof(strs));
	CHECK_EQ(ustack_ldcache_walk(buf, n - 20, lc_cb, &l), -EBADMSG);
	CHECK_EQ(ustack_ldcache_walk(buf, 48 + 24 * 2, lc_cb, &l), -EBADMSG);
	CHECK_EQ(ustack_ldcache_walk((const uint8_t *)"hello", 5, lc_cb, &l), -ENOENT);
}

static void test_lib_names(void)
{
	CHECK(ustack_lib_name_matches("libc.so.6", "libc"));
	CHECK(ustack_lib_name_matches("libc.so.6", "libc.so.6"));
	CHECK(ustack_lib_name_matches("libc-2.31.so", "libc"));
	CHECK(ustack_lib_name_matches("libpthread.so.0", "libpthread"));
	CHECK(ustack_lib_name_matches("python3", "python3"));
	CHECK(!ustack_lib_name_matches("libcrypt.so.1", "libc"));
	CHECK(!ustack_lib_name_matches("libc_malloc_debug.so.0", "libc"));
	CHECK(!ustack_lib_name_matches("python3.11", "python3"));
	CHECK(!ustack_lib_name_matches("libc-foo.so", "libc"));
}

/* ---- rec_probes_resolve: the recorder's places -------------------------- */

static struct rec rr; /* large: not on the stack */
static char rec_err[512];

/* a recording of @names (a name "alloc" is --alloc's event) for @pid (0:
 * a command; -1: -a) */
static int rec_with(const char *const *names, int n, int *pid)
{
	rec_probes_free(&rr);
	memset(&rr, 0, sizeof(rr));
	rr.o = &rr.opts;
	rr.opts.sz = sizeof(rr.opts);
	rr.opts.errbuf = rec_err;
	rr.opts.errbuf_sz = sizeof(rec_err);
	rec_err[0] = 0;
	if (pid && *pid > 0) {
		rr.opts.pids = pid;
		rr.opts.nr_pids = 1;
	} else if (pid) {
		rr.opts.system_wide = 1;
	}
	for (int i = 0; i < n; i++) {
		struct rec_event *e = &rr.events[rr.nr_events++];

		snprintf(e->perf.name, sizeof(e->perf.name), "%s", names[i]);
		e->kind = strcmp(names[i], "alloc") ? &rec_event_probe : &rec_event_alloc;
		e->alloc = REC_ALLOC_ALLOC;
	}
	return rec_probes_resolve(&rr);
}

/* the libc this process maps (its path in /proc/self/maps) */
static int self_libc(char *path, size_t sz, struct stat *st)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/'), *b;

		if (!p)
			continue;
		p[strcspn(p, "\n")] = 0;
		b = strrchr(p, '/') + 1;
		if (!strncmp(b, "libc.so.", 8) || !strncmp(b, "libc-", 5)) {
			snprintf(path, sz, "%s", p);
			found = !stat(p, st);
		}
	}
	if (f)
		fclose(f);
	return found;
}

static void test_rec_uprobe(void)
{
	static const char *const ev[] = { "uprobe:libc:malloc", "uretprobe:libc:free" };
	char libc[4096];
	struct stat st;
	int self = getpid(), minus = -1;

	if (!self_libc(libc, sizeof(libc), &st))
		SKIP("this process maps no libc.so.* (static?)");
	CHECK_EQ(rec_with(ev, 2, &self), 0);
	CHECK_EQ(rr.probes.nr, 2);
	for (int i = 0; i < 2; i++) {
		const struct rec_probe *p = &rr.probes.v[i];

		CHECK_EQ(p->event, i);
		CHECK_EQ(p->pid, self);
		CHECK_EQ(p->alloc_fn, 0);
		CHECK_EQ(p->t.kind, i ? USTACK_PROBE_URETPROBE : USTACK_PROBE_UPROBE);
		CHECK_STR(p->t.shown, libc);
		CHECK_EQ_U64(p->t.dev, st.st_dev);
		CHECK_EQ_U64(p->t.ino, st.st_ino);
		CHECK_STR(p->t.symbol, i ? "free" : "malloc");
	}
	CHECK(rr.probes.v[0].t.offset != rr.probes.v[1].t.offset);
	/* -a: every process; a command: pid 0 */
	CHECK_EQ(rec_with(ev, 1, &minus), 0);
	CHECK_EQ(rr.probes.nr, 1);
	CHECK_EQ(rr.probes.v[0].pid, -1);
	CHECK_EQ(rec_with(ev, 1, NULL), 0);
	CHECK_EQ(rr.probes.v[0].pid, 0);
	rec_probes_free(&rr);
}

static void test_rec_errors(void)
{
	static const char *const ev[] = { "uprobe:libc:malloc", "uprobe:libc:no_such_fn_here" };
	static const char *const gone[] = { "uprobe:libc:malloc" };
	int self = getpid(), nopid = 0x3ffffff0;

	CHECK_EQ(rec_with(ev, 2, &self), -ENOENT);
	CHECK_EQ(rr.probes.nr, 0); /* nothing half-resolved */
	if (!strstr(rec_err, "event uprobe:libc:no_such_fn_here") ||
	    !strstr(rec_err, "no function 'no_such_fn_here' in /")) {
		printf("    message: %s\n", rec_err);
		CHECK(0);
	}
	CHECK(rec_with(gone, 1, &nopid) < 0);
	CHECK(strstr(rec_err, "no such process") != NULL);
}

/* --alloc: the malloc family of the libc this process maps, entries and
 * returns, free at its entry only, each place once */
static void test_rec_alloc(void)
{
	static const char *const ev[] = { "alloc" };
	static const char *const ref[] = { "uprobe:libc:malloc" };
	int self = getpid(), entries[REC_AF_NR] = { 0 }, rets[REC_AF_NR] = { 0 };
	uint64_t malloc_off;
	char libc[4096];
	struct stat st;

	if (!self_libc(libc, sizeof(libc), &st))
		SKIP("this process maps no libc.so.* (static?)");
	CHECK_EQ(rec_with(ref, 1, &self), 0);
	malloc_off = rr.probes.v[0].t.offset;
	CHECK_EQ(rec_with(ev, 1, &self), 0);
	for (size_t i = 0; i < rr.probes.nr; i++) {
		const struct rec_probe *p = &rr.probes.v[i];

		CHECK(p->alloc_fn >= REC_AF_MALLOC && p->alloc_fn < REC_AF_NR);
		CHECK_STR(p->t.shown, libc);
		CHECK_EQ(p->pid, self);
		if (p->t.kind == USTACK_PROBE_URETPROBE)
			rets[p->alloc_fn]++;
		else
			entries[p->alloc_fn]++;
		if (p->alloc_fn == REC_AF_MALLOC)
			CHECK_EQ_U64(p->t.offset, malloc_off);
		for (size_t j = 0; j < i; j++)
			CHECK(!(rr.probes.v[j].t.offset == p->t.offset &&
				rr.probes.v[j].t.kind == p->t.kind));
	}
	CHECK_EQ(entries[REC_AF_MALLOC], 1);
	CHECK_EQ(rets[REC_AF_MALLOC], 1);
	CHECK_EQ(entries[REC_AF_FREE], 1);
	CHECK_EQ(rets[REC_AF_FREE], 0);
	/* glibc has every one of them */
	CHECK_EQ(entries[REC_AF_CALLOC] + rets[REC_AF_CALLOC], 2);
	CHECK_EQ(entries[REC_AF_REALLOC] + rets[REC_AF_REALLOC], 2);
	CHECK_EQ(entries[REC_AF_POSIX_MEMALIGN] + rets[REC_AF_POSIX_MEMALIGN], 2);
	rec_probes_free(&rr);
}

int main(void)
{
	RUN(test_parse_good);
	RUN(test_parse_not_probe);
	RUN(test_parse_bad);
	RUN(test_usdt_regs);
	RUN(test_usdt_operands);
	RUN(test_notes);
	RUN(test_ldcache);
	RUN(test_lib_names);
	RUN(test_rec_uprobe);
	RUN(test_rec_errors);
	RUN(test_rec_alloc);
	TEST_EXIT();
}
