// SPDX-License-Identifier: MIT
/*
 * perf JIT maps: the parser (lines as node --perf-basic-prof, python3 -X
 * perf and perf-map-agent write them), the overlap rule, and the JITSYM
 * trace record carrying them from record to report.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ustack/perfmap.h>
#include <ustack/trace.h>
#include <ustack/ustack.h>

#include "symbolize/perfmap_pid.h"
#include "test.h"

static int warnings;
static char last_warning[512];

static int count_print(enum ustack_print_level level, const char *fmt, va_list ap)
{
	if (level == USTACK_WARN) {
		warnings++;
		vsnprintf(last_warning, sizeof(last_warning), fmt, ap);
	}
	return 0;
}

/* lines copied from a real /tmp/perf-PID.map of node 20 --perf-basic-prof,
 * of python3.12 -X perf, and of perf-map-agent (0x prefixes) */
static const char node_map[] =
	"2418de24b236 47 JS:~driver /tmp/jitw/x.js:6:16\n"
	"2418de24b356 2a JS:~hot /tmp/jitw/x.js:1:13\n"
	"7ff972fc5b80 2c8 JS:*hot /tmp/jitw/x.js:1:13\n"
	"7ff972fc5e80 1e0 JS:*hot /tmp/jitw/x.js:1:13\n"
	"7ff972fc60c0 2a8 JS:*driver /tmp/jitw/x.js:6:16\n"
	"7f3b2c0a1000 b py::hot:/tmp/x.py\n"
	"0x7f00deadb000 0x40 Lcom/example/Foo;::bar\n";

static void test_parse_real_lines(void)
{
	struct ustack_perfmap *m = ustack_perfmap__new();
	const struct ustack_perfmap_entry *e;

	CHECK(m);
	warnings = 0;
	CHECK_EQ(ustack_perfmap__parse(m, node_map, strlen(node_map), "node.map", 1),
		 (long)strlen(node_map));
	CHECK_EQ(warnings, 0);
	CHECK_EQ(ustack_perfmap__count(m), 7);
	e = ustack_perfmap__lookup(m, 0x7ff972fc5b80 + 0x2c7);
	CHECK(e);
	CHECK_STR(e->name, "JS:*hot /tmp/jitw/x.js:1:13");
	CHECK_EQ_U64(e->start, 0x7ff972fc5b80);
	CHECK_EQ_U64(e->size, 0x2c8);
	/* one past the end: the gap before the next symbol */
	CHECK(!ustack_perfmap__lookup(m, 0x7ff972fc5b80 + 0x2c8));
	CHECK_STR(ustack_perfmap__lookup(m, 0x7ff972fc60c0)->name, "JS:*driver /tmp/jitw/x.js:6:16");
	CHECK_STR(ustack_perfmap__lookup(m, 0x7f3b2c0a100a)->name, "py::hot:/tmp/x.py");
	CHECK(!ustack_perfmap__lookup(m, 0x7f3b2c0a100b));
	CHECK_STR(ustack_perfmap__lookup(m, 0x7f00deadb03f)->name, "Lcom/example/Foo;::bar");
	CHECK(!ustack_perfmap__lookup(m, 0x1000));
	CHECK(!ustack_perfmap__lookup(m, UINT64_MAX));
	ustack_perfmap__free(m);
}

static void test_overlap_newest_wins(void)
{
	struct ustack_perfmap *m = ustack_perfmap__new();
	/* V8 reuses code space after a GC: a later line covers an older one */
	static const char text[] =
		"1000 1000 old_big\n"
		"1800 100 new_inner\n"
		"1000 10 same_start_newer\n"
		"1000 10 same_start_newest\n"
		"3000 10 after\n";

	CHECK(m);
	CHECK_EQ(ustack_perfmap__parse(m, text, strlen(text), "t.map", 1), (long)strlen(text));
	CHECK_STR(ustack_perfmap__lookup(m, 0x1005)->name, "same_start_newest");
	CHECK_STR(ustack_perfmap__lookup(m, 0x1010)->name, "old_big");
	CHECK_STR(ustack_perfmap__lookup(m, 0x1850)->name, "new_inner");
	CHECK_STR(ustack_perfmap__lookup(m, 0x1900)->name, "old_big");
	CHECK_STR(ustack_perfmap__lookup(m, 0x1fff)->name, "old_big");
	CHECK(!ustack_perfmap__lookup(m, 0x2000));
	CHECK_STR(ustack_perfmap__lookup(m, 0x3000)->name, "after");
	/* an addition after lookups re-sorts */
	CHECK_EQ(ustack_perfmap__add(m, 0x1900, 0x10, "added_later"), 0);
	CHECK_STR(ustack_perfmap__lookup(m, 0x1905)->name, "added_later");
	CHECK_EQ(ustack_perfmap__add(m, 0x1900, 0, "empty"), -EINVAL);
	CHECK_EQ(ustack_perfmap__add(m, UINT64_MAX, 2, "wraps"), -EINVAL);
	ustack_perfmap__free(m);
}

static void test_malformed_and_partial(void)
{
	struct ustack_perfmap *m = ustack_perfmap__new();
	static const char text[] =
		"4000 10 good_one\n"
		"garbage line\n"               /* 2: no address */
		"4100 zz bad_size\n"           /* 3 */
		"4200 10\n"                    /* 4: no name */
		"\n"                           /* 5: blank, not a warning */
		"4300 0 size_zero\n"           /* 6 */
		"ffffffffffffffff 10 wraps\n"  /* 7 */
		"12345678901234567 1 toolong\n"/* 8: more than 64 bits */
		"4400 10 good_two\r\n"         /* 9: CRLF */
		"4500 10 cut_in_the_mid";      /* partial: the writer is at it */
	long used;

	CHECK(m);
	warnings = 0;
	used = ustack_perfmap__parse(m, text, sizeof(text) - 1, "bad.map", 1);
	CHECK_EQ(used, (long)(strstr(text, "4500") - text));
	CHECK_EQ(ustack_perfmap__count(m), 2);
	CHECK_EQ(ustack_perfmap__bad_lines(m), 6);
	CHECK_EQ(warnings, 6);
	CHECK(strstr(last_warning, "bad.map:8:"));
	CHECK_STR(ustack_perfmap__lookup(m, 0x4005)->name, "good_one");
	CHECK_STR(ustack_perfmap__lookup(m, 0x4405)->name, "good_two");
	CHECK(!ustack_perfmap__lookup(m, 0x4505));
	/* the writer finishes the line: resume where parsing stopped */
	{
		static const char rest[] = "4500 10 cut_in_the_middle\n";
		char buf[128];
		size_t left = sizeof(text) - 1 - (size_t)used;

		memcpy(buf, text + used, left);
		memcpy(buf + left, rest + strlen("4500 10 cut_in_the_mid"),
		       strlen(rest) - strlen("4500 10 cut_in_the_mid"));
		left += strlen(rest) - strlen("4500 10 cut_in_the_mid");
		CHECK_EQ(ustack_perfmap__parse(m, buf, left, "bad.map", 10), (long)left);
		CHECK_STR(ustack_perfmap__lookup(m, 0x4505)->name, "cut_in_the_middle");
	}
	ustack_perfmap__free(m);
}

static void test_read_file(void)
{
	char path[] = "/tmp/ustack-test-perfmap-XXXXXX";
	int fd = mkstemp(path);
	struct ustack_perfmap *m = ustack_perfmap__new();

	CHECK(fd >= 0 && m);
	CHECK_EQ(write(fd, node_map, strlen(node_map)), (long)strlen(node_map));
	close(fd);
	CHECK_EQ(ustack_perfmap__read_file(m, path), 0);
	CHECK_EQ(ustack_perfmap__count(m), 7);
	CHECK_STR(ustack_perfmap__lookup(m, 0x2418de24b356)->name, "JS:~hot /tmp/jitw/x.js:1:13");
	unlink(path);
	CHECK_EQ(ustack_perfmap__read_file(m, path), -ENOENT);
	ustack_perfmap__free(m);
}

/* A FIFO where the map should be (anyone can make /tmp/perf-PID.map one):
 * refused at once with a warning, never a read that waits for a writer.
 * Read in a child with an alarm, so that a regression fails instead of
 * hanging make check. */
static void test_read_fifo(void)
{
	char dir[] = "/tmp/ustack-test-perfmap-XXXXXX", path[64];
	pid_t pid;
	int st = 0;

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/perf-1.map", dir);
	CHECK_EQ(mkfifo(path, 0644), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct ustack_perfmap *m = ustack_perfmap__new();
		int ret;

		alarm(5);
		warnings = 0;
		ret = ustack_perfmap__read_file(m, path);
		ustack_perfmap__free(m);
		_exit(ret == -EINVAL && warnings == 1 && strstr(last_warning, "not a regular file")
			      ? 0 : 1);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(!WIFSIGNALED(st)); /* SIGALRM: the read blocked */
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	unlink(path);
	/* a directory is no map either */
	{
		struct ustack_perfmap *m = ustack_perfmap__new();

		CHECK_EQ(ustack_perfmap__read_file(m, dir), -EINVAL);
		ustack_perfmap__free(m);
	}
	rmdir(dir);
}

/* A map owned by another user than the process's, root or us: refused
 * (perf's rule); the process's own uid, or no owner check: read. */
static void test_read_owner(void)
{
	char path[] = "/tmp/ustack-test-perfmap-XXXXXX";
	int fd = mkstemp(path);
	struct ustack_perfmap *m = ustack_perfmap__new();

	CHECK(fd >= 0 && m);
	CHECK_EQ(write(fd, node_map, strlen(node_map)), (long)strlen(node_map));
	/* ours: read, whatever uid the process has */
	CHECK_EQ(ustack_perfmap__read_file_owned(m, path, 4242), 0);
	CHECK_EQ(ustack_perfmap__count(m), 7);
	if (geteuid() != 0) {
		close(fd);
		unlink(path);
		ustack_perfmap__free(m);
		SKIP("not root: cannot give the file another owner");
		return;
	}
	CHECK_EQ(fchown(fd, 4242, 4242), 0);
	close(fd);
	warnings = 0;
	CHECK_EQ(ustack_perfmap__read_file_owned(m, path, 4343), -EPERM);
	CHECK_EQ(warnings, 1);
	CHECK(strstr(last_warning, "owned by uid 4242"));
	CHECK_EQ(ustack_perfmap__count(m), 7); /* nothing added */
	CHECK_EQ(ustack_perfmap__read_file_owned(m, path, 4242), 0);
	CHECK_EQ(ustack_perfmap__count(m), 14);
	CHECK_EQ(ustack_perfmap__read_file(m, path), 0);
	unlink(path);
	ustack_perfmap__free(m);
}

static int no_stack(void *ctx, uint32_t kind, uint32_t id, struct ustack_trace_stack *st)
{
	return -ENOENT;
}

static int no_file(void *ctx, uint64_t id, struct ustack_file_map *fm)
{
	return -ENOENT;
}

/* JITSYM records: written, read back, collected per pid; an empty name,
 * size 0 or an end past 2^64 is refused by the writer */
static void test_jitsym_trace(void)
{
	char path[] = "/tmp/ustack-test-jitsym-XXXXXX";
	struct ustack_trace_header hdr = { .clock_id = 1, .hostname = "h", .version = "t" };
	struct ustack_trace_writer_opts o = { .sz = sizeof(o), .get_stack = no_stack,
					      .get_file_map = no_file };
	struct ustack_trace_jitsym j1 = { 100, 0x7ff972fc5b80, 0x2c8, "JS:*hot /tmp/x.js:1:13" };
	struct ustack_trace_jitsym j2 = { 200, 0x7ff972fc5b80, 0x10, "other process" };
	struct ustack_trace_jitsym j3 = { 100, 0x7ff972fc5c00, 0x10, "newer, inside" };
	struct ustack_trace_jitsym bad = { 100, 0x1000, 0, "size 0" };
	struct ustack_trace_jitsym wraps = { 100, UINT64_MAX - 0xf, 0x20, "past 2^64" };
	struct ustack_trace_jitsym noname = { 100, 0x1000, 0x10, "" };
	struct ustack_trace_writer *w;
	struct ustack_trace_reader *r;
	struct ustack_trace_record rec;
	struct ustack_jitsyms *t;
	int fd = mkstemp(path), n = 0;

	CHECK(fd >= 0);
	close(fd);
	w = ustack_trace_writer__open(path, &hdr, &o);
	CHECK(w);
	CHECK_EQ(ustack_trace_writer__add_jitsym(w, &j1), 0);
	CHECK_EQ(ustack_trace_writer__add_jitsym(w, &j2), 0);
	CHECK_EQ(ustack_trace_writer__add_jitsym(w, &j3), 0);
	CHECK_EQ(ustack_trace_writer__add_jitsym(w, &bad), -EINVAL);
	/* what the reader would take as damage (ending the report there) */
	CHECK_EQ(ustack_trace_writer__add_jitsym(w, &wraps), -EINVAL);
	CHECK_EQ(ustack_trace_writer__add_jitsym(w, &noname), -EINVAL);
	CHECK_EQ(ustack_trace_writer__close(w), 0);

	r = ustack_trace_reader__open(path, NULL);
	CHECK(r);
	while (ustack_trace_reader__next(r, &rec, sizeof(rec)) == 1) {
		if (rec.type != USTACK_TRACE_JITSYM)
			continue;
		if (n == 0) {
			CHECK_EQ(rec.jitsym.pid, 100);
			CHECK_EQ_U64(rec.jitsym.addr, 0x7ff972fc5b80);
			CHECK_EQ_U64(rec.jitsym.size, 0x2c8);
			CHECK_STR(rec.jitsym.name, "JS:*hot /tmp/x.js:1:13");
		}
		n++;
	}
	CHECK_EQ(n, 3);
	CHECK(ustack_trace_reader__error(r) == NULL || !*ustack_trace_reader__error(r));
	ustack_trace_reader__close(r);

	t = ustack_jitsyms__new();
	CHECK(t);
	CHECK_EQ(ustack_jitsyms__load_trace(t, path), 3);
	CHECK_STR(ustack_jitsyms__lookup(t, 100, 0x7ff972fc5b90)->name, "JS:*hot /tmp/x.js:1:13");
	CHECK_STR(ustack_jitsyms__lookup(t, 100, 0x7ff972fc5c05)->name, "newer, inside");
	CHECK_STR(ustack_jitsyms__lookup(t, 200, 0x7ff972fc5b85)->name, "other process");
	CHECK(!ustack_jitsyms__lookup(t, 200, 0x7ff972fc5b90));
	CHECK(!ustack_jitsyms__lookup(t, 300, 0x7ff972fc5b85));
	CHECK_EQ(ustack_jitsyms__map_index(t, 300), 0);
	CHECK(ustack_jitsyms__map_index(t, 100) != ustack_jitsyms__map_index(t, 200));
	ustack_jitsyms__free(t);
	unlink(path);
}


/* Lines a hostile or broken writer makes, each shaped so that a lenient
 * parser would give the address 0x5000 (or 0x6000) a wrong name: every one
 * is skipped and counted, and the good lines around them still name their
 * code. */
static void test_hostile_lines(void)
{
	static const char text[] =
		"4000 2000 OLD_decoy_overlapping\n"            /* 1: older: loses */
		"5000 10 good_five\n"                           /* 2 */
		"5000 0 WRONG_size0\n"                          /* 3 */
		"5000g 10 WRONG_garbage_after_start\n"          /* 4 */
		"5000 10g WRONG_garbage_after_size\n"           /* 5 */
		"0x 10 WRONG_0x_alone\n"                        /* 6 */
		"-5000 10 WRONG_negative\n"                     /* 7 */
		"00000000000000000005000 10 good_leading_zeros\n" /* 8: 64 bits, fine */
		"15000 fffffffffffffff0 WRONG_wraps_to_0x5000\n"/* 9: end past 2^64 */
		"1 ffffffffffffffff WRONG_ends_at_2_64\n"       /* 10 */
		"5000\t10\tgood_tabs\n"                         /* 11 */
		"\r\n"                                          /* 12: blank (CRLF) */
		"   \n"                                         /* 13: blanks only: bad */
		"6000 10 good_crlf\r\n"                         /* 14 */
		"6000 10 cr_in\rside\n"                         /* 15: kept as it is (below) */
		"6010 10 x\n"                                   /* 16: one-letter name */
		"\x01\x7f\xff\xfe garbage bytes\n"              /* 17 */
		"6020\n"                                        /* 18: one field */
		"6020 10 \n"                                    /* 19: blank name */
		"6030 10 WRONG_partial_last_line";              /* not a line yet */
	/* NUL bytes: in the address, in the name */
	static const char nul1[] = "7000\0 10 WRONG_nul_in_address\n";
	static const char nul2[] = "7000 10 good_before_nul\n7000 10 WRONG\0after_nul\n";
	struct ustack_perfmap *m = ustack_perfmap__new();
	const struct ustack_perfmap_entry *e;
	long used;

	CHECK(m);
	warnings = 0;
	used = ustack_perfmap__parse(m, text, sizeof(text) - 1, "hostile.map", 1);
	CHECK_EQ(used, (long)(strstr(text, "6030 10 WRONG_partial") - text));
	/* bad: lines 3-7, 9, 10, 13, 17, 18, 19 */
	CHECK_EQ(ustack_perfmap__bad_lines(m), 11);
	/* the first 10 said with their line numbers, then one line for the rest */
	CHECK_EQ(warnings, 11);
	CHECK(strstr(last_warning, "hostile.map: more malformed lines skipped"));
	CHECK_EQ(ustack_perfmap__count(m), 7);
	for (size_t i = 0; i < ustack_perfmap__count(m); i++)
		CHECK(!strstr(ustack_perfmap__entry(m, i)->name, "WRONG"));
	/* the newest covering line wins: good_tabs over leading_zeros over
	 * good_five over the decoy */
	CHECK_STR(ustack_perfmap__lookup(m, 0x5000)->name, "good_tabs");
	CHECK_STR(ustack_perfmap__lookup(m, 0x500f)->name, "good_tabs");
	CHECK_STR(ustack_perfmap__lookup(m, 0x5010)->name, "OLD_decoy_overlapping");
	CHECK_STR(ustack_perfmap__lookup(m, 0x5fff)->name, "OLD_decoy_overlapping");
	/* a CR inside the name is part of it (the format ends names at the
	 * line's end); only a CR ending the line goes */
	CHECK_STR(ustack_perfmap__lookup(m, 0x6000)->name, "cr_in\rside");
	e = ustack_perfmap__entry(m, 4); /* no CR left at its end */
	CHECK_STR(e->name, "good_crlf");
	CHECK_STR(ustack_perfmap__lookup(m, 0x6010)->name, "x");
	CHECK(!ustack_perfmap__lookup(m, 0x6020));
	CHECK(!ustack_perfmap__lookup(m, 0x6030));
	CHECK(!ustack_perfmap__lookup(m, 0));
	CHECK(!ustack_perfmap__lookup(m, UINT64_MAX));
	ustack_perfmap__free(m);

	m = ustack_perfmap__new();
	CHECK(m);
	warnings = 0;
	CHECK_EQ(ustack_perfmap__parse(m, nul1, sizeof(nul1) - 1, "nul.map", 1), (long)sizeof(nul1) - 1);
	CHECK_EQ(ustack_perfmap__parse(m, nul2, sizeof(nul2) - 1, "nul.map", 2), (long)sizeof(nul2) - 1);
	CHECK_EQ(warnings, 2);
	CHECK(strstr(last_warning, "nul.map:3: malformed perf map line skipped: NUL byte"));
	CHECK_EQ(ustack_perfmap__count(m), 1);
	CHECK_STR(ustack_perfmap__lookup(m, 0x7000)->name, "good_before_nul");
	ustack_perfmap__free(m);
}

/* A name of 1 MiB: cut to USTACK_PERFMAP_MAX_NAME bytes ending with the
 * mark (never shown whole when it is not), not inside a UTF-8 sequence,
 * and the lines after it are read. */
static void test_huge_name(void)
{
	size_t big = 1 << 20, len;
	char *text = malloc(2 * big + 256);
	struct ustack_perfmap *m = ustack_perfmap__new();
	const char *n;

	CHECK(text && m);
	len = (size_t)sprintf(text, "1000 10 ");
	memset(text + len, 'A', big);
	len += big;
	len += (size_t)sprintf(text + len, "_END\n2000 10 after_ascii\n3000 10 ");
	for (size_t i = 0; i < big / 2; i++) {
		text[len++] = (char)0xc3; /* U+00E9, two bytes */
		text[len++] = (char)0xa9;
	}
	len += (size_t)sprintf(text + len, "\n4000 10 after_utf8\n");
	warnings = 0;
	CHECK_EQ(ustack_perfmap__parse(m, text, len, "big.map", 1), (long)len);
	CHECK_EQ(warnings, 0);
	CHECK_EQ(ustack_perfmap__count(m), 4);
	n = ustack_perfmap__lookup(m, 0x1000)->name;
	CHECK_EQ(strlen(n), USTACK_PERFMAP_MAX_NAME);
	CHECK(!strcmp(n + USTACK_PERFMAP_MAX_NAME - 3, USTACK_PERFMAP_CUT_MARK));
	CHECK_EQ(strspn(n, "A"), USTACK_PERFMAP_MAX_NAME - 3);
	CHECK_STR(ustack_perfmap__lookup(m, 0x2000)->name, "after_ascii");
	/* 1021 bytes would end inside a character: 1020 are kept */
	n = ustack_perfmap__lookup(m, 0x3000)->name;
	CHECK_EQ(strlen(n), USTACK_PERFMAP_MAX_NAME - 1);
	CHECK(!strcmp(n + USTACK_PERFMAP_MAX_NAME - 4, USTACK_PERFMAP_CUT_MARK));
	CHECK_EQ((unsigned char)n[USTACK_PERFMAP_MAX_NAME - 5], 0xa9);
	CHECK_STR(ustack_perfmap__lookup(m, 0x4000)->name, "after_utf8");
	/* a name of exactly the bound is whole, one byte more is cut */
	memset(text, 'B', USTACK_PERFMAP_MAX_NAME + 1);
	text[USTACK_PERFMAP_MAX_NAME + 1] = 0;
	CHECK_EQ(ustack_perfmap__add(m, 0x5000, 1, text + 1), 0);
	CHECK_EQ(strlen(ustack_perfmap__lookup(m, 0x5000)->name), USTACK_PERFMAP_MAX_NAME);
	CHECK(!strchr(ustack_perfmap__lookup(m, 0x5000)->name, '.'));
	CHECK_EQ(ustack_perfmap__add(m, 0x6000, 1, text), 0);
	CHECK(strstr(ustack_perfmap__lookup(m, 0x6000)->name, "BBB..."));
	ustack_perfmap__free(m);
	free(text);
}

/* ---- a map rewritten while it is read -------------------------------------- */

/* Self-checking lines: "START SIZE rw_START_SIZE_gGEN_nN_PAD_cHASH", HASH the
 * FNV-1a 32 of the name before "_c". A line glued from two generations (or
 * from two lines) fails the hash, or names another START/SIZE than its own. */
static uint32_t fnv1a(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

/* NULL when @e is a line the writer wrote, else why not */
static const char *rw_entry_bad(const struct ustack_perfmap_entry *e)
{
	unsigned long long start, size;
	unsigned int hash;
	const char *c = strrchr(e->name, '_');
	int used = 0;

	if (sscanf(e->name, "rw_%llx_%llx_g%*u_n%*u_%n", &start, &size, &used) != 2 || !used)
		return "not of the writer's shape";
	if (!c || sscanf(c, "_c%8x", &hash) != 1 || strlen(c) != 10)
		return "no hash at the end";
	if (fnv1a(e->name, (size_t)(c - e->name)) != hash)
		return "hash mismatch (a torn line)";
	if (start != e->start || size != e->size)
		return "START/SIZE of the line differ from those its name repeats (a torn line)";
	return NULL;
}

struct rw_writer {
	const char *path;
	atomic_int stop;
	unsigned long gens;
	int err;
};

static void *rw_write(void *arg)
{
	struct rw_writer *w = arg;
	uint64_t rnd = 0x9e3779b97f4a7c15ull;
	char *buf = malloc(1 << 20);
	int fd = open(w->path, O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0 || !buf) {
		w->err = fd < 0 ? errno : ENOMEM;
		free(buf);
		return NULL;
	}
	while (!atomic_load(&w->stop)) {
		size_t len = 0, off = 0;
		unsigned int lines;

		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		/* 40 KiB .. 600 KiB: more than one read() of the reader */
		lines = 400 + (unsigned int)(rnd % 6000);
		for (unsigned int i = 0; i < lines && len < (1 << 20) - 512; i++) {
			char name[320];
			uint64_t start, size;
			int n, pad;

			rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
			start = 0x7f0000000000ull + (rnd & 0xffffff0);
			size = 1 + (rnd >> 40) % 0x1000;
			pad = (int)((rnd >> 20) % 60);
			n = snprintf(name, sizeof(name), "rw_%llx_%llx_g%lu_n%u_%.*s",
				     (unsigned long long)start, (unsigned long long)size, w->gens, i,
				     pad, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
			len += (size_t)snprintf(buf + len, 512, "%llx %llx %s_c%08x\n",
						(unsigned long long)start, (unsigned long long)size,
						name, fnv1a(name, (size_t)n));
		}
		/* a new generation in place of the old one, written in pieces
		 * cut anywhere (half lines for the reader) */
		if (ftruncate(fd, 0)) {
			w->err = errno;
			break;
		}
		while (off < len) {
			size_t cut;
			ssize_t k;

			rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
			cut = 1 + (size_t)(rnd % 16384);
			if (cut > len - off)
				cut = len - off;
			k = write(fd, buf + off, cut);
			if (k <= 0) {
				w->err = k < 0 ? errno : EIO;
				break;
			}
			off += (size_t)k;
		}
		w->gens++;
	}
	close(fd);
	free(buf);
	return NULL;
}

/* A map truncated and written anew, in pieces, while it is read (a JIT
 * that starts its map over, a pid reused): whatever a read meets, every
 * entry it keeps is a whole line of one generation. Before read_file()
 * read the text twice and compared, a read() that went on after a
 * truncation glued the start of a line of the old text to the end of a
 * line of the new one. */
static void test_read_while_rewritten(void)
{
	char path[] = "/tmp/ustack-test-perfmap-XXXXXX";
	int fd = mkstemp(path);
	struct rw_writer w = { .path = path };
	struct timespec t0, t;
	unsigned long reads = 0, entries = 0, refused = 0; /* reads kept in part */
	char bad[600] = "";
	pthread_t th;

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(pthread_create(&th, NULL, rw_write, &w), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* 1.5 s of reads, or 4000 */
	do {
		struct ustack_perfmap *m = ustack_perfmap__new();
		int ret;

		if (!m)
			break;
		warnings = 0;
		ret = ustack_perfmap__read_file(m, path);
		reads++;
		refused += strstr(last_warning, "rewritten while being read") && warnings;
		if (ret && !bad[0])
			snprintf(bad, sizeof(bad), "read %lu: ustack_perfmap__read_file: %d", reads, ret);
		for (size_t i = 0; i < ustack_perfmap__count(m) && !bad[0]; i++) {
			const struct ustack_perfmap_entry *e = ustack_perfmap__entry(m, i);
			const char *why = rw_entry_bad(e);

			if (why)
				snprintf(bad, sizeof(bad),
					 "read %lu, entry %zu: %s: 0x%llx 0x%llx \"%.400s\"", reads, i,
					 why, (unsigned long long)e->start,
					 (unsigned long long)e->size, e->name);
		}
		entries += ustack_perfmap__count(m);
		ustack_perfmap__free(m);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (!bad[0] && reads < 4000 &&
		 (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 1500);
	atomic_store(&w.stop, 1);
	pthread_join(th, NULL);
	unlink(path);
	printf("# read_while_rewritten: %lu reads (%lu kept in part: rewritten while read), %lu entries, "
	       "%lu generations written\n", reads, refused, entries, w.gens);
	CHECK_EQ(w.err, 0);
	if (bad[0]) {
		printf("FAIL %s: %s\n", test_name_, bad);
		test_failed_ = 1;
		return;
	}
	/* the check saw something: whole lines were read */
	CHECK(entries > 0);
	CHECK(w.gens > 1);
}

/* NStgid of /proc/PID/status: the innermost pid, strictly parsed */
static void test_nstgid(void)
{
	static const struct {
		const char *text;
		int pid, ret, nspid;
	} cases[] = {
		{ "Name:\tx\nTgid:\t7\nNStgid:\t1234\n", 1234, 0, 1234 },
		{ "Name:\tx\nNStgid:\t1234\t2\nNSpid:\t1234\t2\n", 1234, 0, 2 },
		{ "NStgid:\t99\t8\t1\n", 99, 0, 1 },
		{ "Name:\tx\nNSpid:\t5\n", 5, -ENOENT, 0 },
		{ "Name:\tNStgid:\t5\t1\n", 5, -ENOENT, 0 }, /* not at a line start */
		{ "NStgid:\t1234\t2\n", 1235, -EBADMSG, 0 },  /* not this pid */
		{ "NStgid:\t1234\t-2\n", 1234, -EBADMSG, 0 },
		{ "NStgid:\t1234\t02\n", 1234, -EBADMSG, 0 },
		{ "NStgid:\t1234\t0\n", 1234, -EBADMSG, 0 },
		{ "NStgid:\t1234\t4194305\n", 1234, -EBADMSG, 0 }, /* > PID_MAX_LIMIT */
		{ "NStgid:\t1234\t99999999999999999999\n", 1234, -EBADMSG, 0 },
		{ "NStgid:\t1234\t2x\n", 1234, -EBADMSG, 0 },
		{ "NStgid:\t1234 2\n", 1234, -EBADMSG, 0 },
		{ "NStgid:\t1234\t\n", 1234, -EBADMSG, 0 },
		{ "NStgid:\t1234\t2", 1234, -EBADMSG, 0 },      /* cut: no newline */
		{ "NStgid:\n", 1234, -EBADMSG, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int nspid = 0;

		CHECK_EQ(ustack_status__nstgid(cases[i].text, strlen(cases[i].text), cases[i].pid,
					       &nspid), cases[i].ret);
		if (!cases[i].ret)
			CHECK_EQ(nspid, cases[i].nspid);
	}
}

/* Our own map found by pid: a process of the host reads /tmp/perf-PID.map */
static void test_read_pid_self(void)
{
	char path[64], name[128];
	struct ustack_perfmap *m = ustack_perfmap__new();
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs("1000 10 self_jit\n", f);
	fclose(f);
	CHECK_EQ(ustack_perfmap__read_pid(m, getpid(), (uint32_t)-1, name, sizeof(name)), 0);
	CHECK_STR(name, path);
	CHECK(ustack_perfmap__lookup(m, 0x1008) != NULL);
	if (ustack_perfmap__lookup(m, 0x1008))
		CHECK_STR(ustack_perfmap__lookup(m, 0x1008)->name, "self_jit");
	unlink(path);
	ustack_perfmap__free(m);
	m = ustack_perfmap__new();
	CHECK_EQ(ustack_perfmap__read_pid(m, getpid(), (uint32_t)-1, NULL, 0), -ENOENT);
	CHECK_EQ(ustack_perfmap__read_pid(m, 0, (uint32_t)-1, NULL, 0), -EINVAL);
	ustack_perfmap__free(m);
}

int main(void)
{
	ustack_set_print(count_print);
	RUN(test_parse_real_lines);
	RUN(test_overlap_newest_wins);
	RUN(test_malformed_and_partial);
	RUN(test_read_file);
	RUN(test_read_fifo);
	RUN(test_read_owner);
	RUN(test_jitsym_trace);
	RUN(test_hostile_lines);
	RUN(test_huge_name);
	RUN(test_read_while_rewritten);
	RUN(test_nstgid);
	RUN(test_read_pid_self);
	TEST_EXIT();
}
