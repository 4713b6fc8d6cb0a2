// SPDX-License-Identifier: MIT
/* Kernel symbols and their cache (src/perf/kallsyms.c): the cache gives
 * exactly what /proc/kallsyms gives; a damaged cache is ignored and
 * rebuilt, never trusted. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "perf/kallsyms.h"
#include "test.h"

static char dir[] = "/tmp/ustack-kallsyms-XXXXXX";

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *cache_file(void)
{
	static char path[512];
	DIR *d = opendir(dir);
	struct dirent *de;

	path[0] = 0;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, "kallsyms-", 9) && !strstr(de->d_name, ".tmp"))
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
	if (d)
		closedir(d);
	return path[0] ? path : NULL;
}

/* Symbols of BPF programs (module "bpf") come and go whenever a program is
 * loaded or unloaded, e.g. by a recording running beside the test: two
 * reads of /proc/kallsyms are compared without them. */
static size_t count_not_bpf(const struct ustack_kallsyms *k)
{
	size_t n = 0;
	uint64_t addr;
	const char *name, *mod;

	for (size_t i = 0; !ustack_kallsyms__entry(k, i, &addr, &name, &mod); i++)
		n += !mod || strcmp(mod, "bpf");
	return n;
}

/* Both tables answer every probe the same way (the walk from address 0
 * ends long before the module area, where BPF programs are). */
static void same_answers(const struct ustack_kallsyms *a, const struct ustack_kallsyms *b)
{
	uint64_t addr = 0, size;
	const char *name, *mod;

	CHECK_EQ(count_not_bpf(a), count_not_bpf(b));
	/* walk the table: each symbol's own address and one inside it */
	for (int i = 0; i < 2000; i++) {
		uint64_t a1, s1, a2, s2;
		const char *n1, *n2, *m1, *m2;
		int r1 = ustack_kallsyms__find(a, addr, &a1, &s1, &n1, &m1);
		int r2 = ustack_kallsyms__find(b, addr, &a2, &s2, &n2, &m2);

		CHECK_EQ(r1, r2);
		if (r1)
			break;
		CHECK_EQ_U64(a1, a2);
		CHECK_EQ_U64(s1, s2);
		CHECK_STR(n1, n2);
		CHECK((m1 == NULL) == (m2 == NULL));
		if (m1)
			CHECK_STR(m1, m2);
		if (!s1)
			break;
		addr = a1 + s1 + (i % 3 ? s1 / 2 : 0); /* next symbol, or into the one after */
	}
	(void)name, (void)mod, (void)size;
}

static void test_cache_matches_proc(void)
{
	struct ustack_kallsyms *fresh, *cached, *direct;
	int from_cache = -1;
	double t0, t1, t2;

	direct = ustack_kallsyms__load("", &from_cache); /* no cache */
	CHECK(direct);
	CHECK_EQ(from_cache, 0);
	if (!ustack_kallsyms__count(direct)) {
		ustack_kallsyms__free(direct);
		SKIP("kernel addresses hidden (kptr_restrict): no symbols to compare");
	}
	t0 = now();
	fresh = ustack_kallsyms__load(dir, &from_cache);
	t1 = now();
	CHECK(fresh && from_cache == 0 && cache_file());
	cached = ustack_kallsyms__load(dir, &from_cache);
	t2 = now();
	CHECK(cached);
	CHECK_EQ(from_cache, 1);
	printf("# %zu symbols: /proc/kallsyms %.1f ms, cache %.1f ms\n",
	       ustack_kallsyms__count(cached), (t1 - t0) * 1e3, (t2 - t1) * 1e3);
	same_answers(direct, cached);
	same_answers(fresh, cached);
	ustack_kallsyms__free(fresh);
	ustack_kallsyms__free(cached);
	ustack_kallsyms__free(direct);
}

/* Damage the cache in several ways: each is ignored (the table still comes
 * from /proc, right) and the cache is rewritten. */
static void test_damaged_cache(void)
{
	const char *path = cache_file();
	struct ustack_kallsyms *good, *k;
	int from_cache;
	off_t size;
	int fd;

	if (!path)
		SKIP("no cache file (kernel addresses hidden)");
	good = ustack_kallsyms__load("", NULL);
	CHECK(good);
	for (int how = 0; how < 4; how++) {
		fd = open(path, O_RDWR);
		CHECK(fd >= 0);
		size = lseek(fd, 0, SEEK_END);
		switch (how) {
		case 0: CHECK(!ftruncate(fd, size - 7)); break;           /* truncated */
		case 1: CHECK(pwrite(fd, "X", 1, 0) == 1); break;          /* magic */
		case 2: CHECK(pwrite(fd, "\xff\xff\xff\x7f", 4, 32 + 8) == 4); break; /* name offset */
		case 3: CHECK(pwrite(fd, "Z", 1, size - 1) == 1); break;   /* last string unterminated */
		}
		close(fd);
		k = ustack_kallsyms__load(dir, &from_cache);
		CHECK(k);
		CHECK_EQ(from_cache, 0);
		same_answers(good, k);
		ustack_kallsyms__free(k);
		/* rewritten: the next load uses it again */
		k = ustack_kallsyms__load(dir, &from_cache);
		CHECK(k && from_cache == 1);
		ustack_kallsyms__free(k);
	}
	ustack_kallsyms__free(good);
}

/* The text parser on known lines: only text symbols (t T w W) with an
 * address, sorted, modules kept; a cache image of it loads back the same. */
static void test_from_memory(void)
{
	static const char text[] =
		"ffffffff81000100 T _text_b\n"
		"ffffffff81000000 T _text\n"
		"ffffffff82400000 D __start_rodata\n"
		"ffffffffc0a05000 t ext4_get_block\t[ext4]\n"
		"ffffffff81207610 W abort\n"
		"0000000000000000 A fixed_percpu_data\n"
		"ffffffff83000000 b local_bss\n"
		"ffffffffc0a05300 w weak\t[ext4]";
	struct ustack_kallsyms *k = ustack_kallsyms__from_text(text, sizeof(text) - 1), *c;
	uint64_t addr, size;
	const char *name, *mod;
	uint8_t *img;
	size_t len;

	CHECK(k);
	CHECK_EQ(ustack_kallsyms__count(k), 5);
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffff81000050, &addr, &size, &name, &mod), 0);
	CHECK_EQ_U64(addr, 0xffffffff81000000);
	CHECK_EQ_U64(size, 0x100);
	CHECK_STR(name, "_text");
	CHECK(mod == NULL);
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffffc0a05010, &addr, &size, &name, &mod), 0);
	CHECK_STR(name, "ext4_get_block");
	CHECK_STR(mod, "ext4");
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffffc0a05300, &addr, &size, &name, &mod), 0);
	CHECK_STR(name, "weak");
	CHECK_EQ_U64(size, 0x1d00); /* the last one: to the end of the next page */
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffff80ffffff, &addr, &size, &name, &mod), -ENOENT);

	CHECK_EQ(ustack_kallsyms__cache_image(k, 42, (void **)&img, &len), 0);
	c = ustack_kallsyms__from_cache(img, len, 42);
	CHECK(c);
	same_answers(k, c);
	ustack_kallsyms__free(c);
	CHECK(!ustack_kallsyms__from_cache(img, len, 43) && errno == EBADMSG);  /* other key */
	CHECK(!ustack_kallsyms__from_cache(img, len - 1, 42) && errno == EBADMSG);
	img[len - 1] = 'x'; /* last string unterminated */
	CHECK(!ustack_kallsyms__from_cache(img, len, 42) && errno == EBADMSG);
	img[len - 1] = 0;
	memcpy(img + 32 + 16, "\0\0\0\0\0\0\0\0", 8); /* entry 1 below entry 0 */
	CHECK(!ustack_kallsyms__from_cache(img, len, 42) && errno == EBADMSG);
	free(img);
	ustack_kallsyms__free(k);
}

/* A symbol reaches the next one of its own image (kernel or module); the
 * last of an image reaches to the end of the page after its start (perf's
 * symbols__fixup_end()). The case that made this matter: the BPF backend's
 * kernel stacks ended in 0xffffffffffffff80 (PERF_CONTEXT_KERNEL), 1 GB past
 * the last symbol, shown as ftrace_trampoline+0x3fdfef80. */
static void test_extent(void)
{
	static const char text[] =
		"ffffffff81000000 T _stext\n"
		"ffffffff81000100 T do_one\n"
		"ffffffff837f8910 T _einittext\n"
		"ffffffffc0a00000 t mod_a_fn\t[mod_a]\n"
		"ffffffffc0a00400 t mod_a_fn2\t[mod_a]\n"
		"ffffffffc0a00800 t mod_b_fn\t[mod_b]\n"
		"ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n";
	struct ustack_kallsyms *k = ustack_kallsyms__from_text(text, sizeof(text) - 1);
	uint64_t addr, size;
	const char *name, *mod;

	CHECK(k);
	CHECK_EQ(ustack_kallsyms__count(k), 7);
	/* kernel to kernel, module to same module: up to the next symbol */
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffff810000ff, &addr, &size, &name, &mod), 0);
	CHECK_STR(name, "_stext");
	CHECK_EQ_U64(size, 0x100);
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffffc0a003ff, &addr, &size, &name, &mod), 0);
	CHECK_STR(name, "mod_a_fn");
	CHECK_EQ_U64(size, 0x400);
	/* last of the kernel: the page after 0x...8910 ends at 0x...a000 */
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffff837f9fff, &addr, &size, &name, &mod), 0);
	CHECK_STR(name, "_einittext");
	CHECK_EQ_U64(size, 0x16f0);
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffff837fa000, &addr, &size, &name, &mod), -ENOENT);
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffffa0000000, &addr, &size, &name, &mod), -ENOENT);
	/* last of mod_a: the next module begins before the page ends */
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffffc0a00500, &addr, &size, &name, &mod), 0);
	CHECK_STR(name, "mod_a_fn2");
	CHECK_EQ_U64(size, 0x400);
	/* last of all: to the end of the page after the one it starts in */
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffffc0a01fff, &addr, &size, &name, &mod), 0);
	CHECK_STR(name, "mod_b_fn");
	CHECK_EQ_U64(size, 0x1800);
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffffc0a02000, &addr, &size, &name, &mod), -ENOENT);
	/* before another module: a page-aligned start reaches one page */
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffffc0201fff, &addr, &size, &name, &mod), 0);
	CHECK_STR(name, "ftrace_trampoline");
	CHECK_STR(mod, "__builtin__ftrace");
	CHECK_EQ_U64(size, 0x1000);
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffffc0202000, &addr, &size, &name, &mod), -ENOENT);
	/* the context marker and the top of the address space */
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffffffffff80, &addr, &size, &name, &mod), -ENOENT);
	CHECK_EQ(ustack_kallsyms__find(k, UINT64_MAX, &addr, &size, &name, &mod), -ENOENT);
	ustack_kallsyms__free(k);
	/* a symbol in the last page of the address space: no overflow */
	k = ustack_kallsyms__from_text("fffffffffffff800 T top\n", 23);
	CHECK(k);
	CHECK_EQ(ustack_kallsyms__find(k, UINT64_MAX, &addr, &size, &name, &mod), 0);
	CHECK_STR(name, "top");
	CHECK_EQ_U64(size, 0x1800);
	ustack_kallsyms__free(k);
}

/* __load() writes exactly the image ustack_kallsyms__cache_image() makes. */
/* One try: the cache file written now (the old one removed, then a load
 * with the cache directory writes it), against the image of a table read
 * from /proc/kallsyms right after. 1: equal, 0: they differ only in BPF
 * programs' symbols (one loaded or unloaded between the two reads: a
 * recording beside the test), -1: they differ otherwise (a failure). */
static int cache_file_try(void)
{
	const char *path = cache_file();
	struct ustack_kallsyms *k, *c;
	int from_cache = -1, ret = 1;
	uint8_t *img, *file;
	uint64_t key;
	size_t len;
	ssize_t n;
	int fd;

	if (path)
		unlink(path);
	k = ustack_kallsyms__load(dir, &from_cache);
	CHECK(k);
	CHECK_EQ(from_cache, 0);
	ustack_kallsyms__free(k);
	path = cache_file();
	CHECK(path);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	file = malloc(64 << 20);
	CHECK(file);
	n = read(fd, file, 64 << 20);
	close(fd);
	CHECK(n >= 32);
	memcpy(&key, file + 8, 8);
	k = ustack_kallsyms__load("", NULL);
	CHECK(k);
	CHECK_EQ(ustack_kallsyms__cache_image(k, key, (void **)&img, &len), 0);
	if (len != (size_t)n || memcmp(img, file, len)) {
		c = ustack_kallsyms__from_cache(file, n, key);
		ret = c && count_not_bpf(c) == count_not_bpf(k) &&
		      ustack_kallsyms__count(c) != ustack_kallsyms__count(k) ? 0 : -1;
		ustack_kallsyms__free(c);
	}
	free(img);
	free(file);
	ustack_kallsyms__free(k);
	return ret;
}

/* The cache file is byte for byte the image of the table: tried up to 20
 * times while BPF programs come and go beside the test (another test's
 * recordings); skipped only when every try met one. */
static void test_cache_file_is_the_image(void)
{
	int r = 0;

	if (!cache_file())
		SKIP("no cache file (kernel addresses hidden)");
	for (int i = 0; i < 20 && !r; i++)
		r = cache_file_try();
	CHECK(r != -1);
	if (!r)
		SKIP("BPF programs were loaded or unloaded between the two reads, 20 times");
}

static int mapping_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0, ch;

	CHECK(f);
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* A cache image of 3 MB of entries and 1.5 MB of strings (the sizes of a
 * distribution kernel's): its buffers are huge-page mappings, not malloc();
 * 30 loads and frees leave no mapping behind, and every symbol is found. */
static void test_big_cache_buffers(void)
{
	enum { N = 200000 };
	size_t cap = (size_t)N * 40 + 64, len = 0, ilen;
	char *text = malloc(cap);
	struct ustack_kallsyms *k, *c;
	uint64_t addr, size;
	const char *name, *mod;
	int before;
	void *img;

	CHECK(text);
	for (int i = 0; i < N; i++)
		len += (size_t)snprintf(text + len, cap - len, "ffffffff%08x T sym_%07d_pad\n",
					0x81000000u + (unsigned)i * 16, i);
	k = ustack_kallsyms__from_text(text, len);
	CHECK(k);
	CHECK_EQ(ustack_kallsyms__count(k), N);
	CHECK_EQ(ustack_kallsyms__cache_image(k, 7, &img, &ilen), 0);
	CHECK(ilen > 4u << 20);
	before = mapping_count();
	for (int r = 0; r < 30; r++) {
		c = ustack_kallsyms__from_cache(img, ilen, 7);
		CHECK(c);
		CHECK_EQ(ustack_kallsyms__count(c), N);
		CHECK_EQ(ustack_kallsyms__find(c, 0xffffffff81000000ull + 16ull * (N - 1) + 3, &addr,
					       &size, &name, &mod), 0);
		CHECK_STR(name, "sym_0199999_pad");
		ustack_kallsyms__free(c);
	}
	CHECK(mapping_count() <= before + 4);
	free(img);
	ustack_kallsyms__free(k);
	free(text);
}

/* BPF programs and ftrace trampolines come and go: read from
 * /proc/kallsyms they are named; from the cache, which outlives them,
 * their places are known but unnamed (never another program's name). */
static void test_dynamic_symbols_unnamed_in_cache(void)
{
	static const char text[] =
		"ffffffff81000000 T _stext\n"
		"ffffffff81000100 T do_one\n"
		"ffffffffc0a00000 t mod_a_fn\t[mod_a]\n"
		"ffffffffc0a00400 t mod_a_end\t[mod_a]\n"
		"ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n"
		"ffffffffc0b00000 t bpf_prog_6deef7357e7b4530_old_prog\t[bpf]\n"
		"ffffffffc0b00800 t bpf_prog_0123456789abcdef_other\t[bpf]\n";
	struct ustack_kallsyms *k = ustack_kallsyms__from_text(text, sizeof(text) - 1), *c;
	uint64_t addr, size;
	const char *name, *mod;
	void *img;
	size_t len;

	CHECK(k);
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffffc0b00010, &addr, &size, &name, &mod), 0);
	CHECK_STR(name, "bpf_prog_6deef7357e7b4530_old_prog");
	CHECK_STR(mod, "bpf");
	CHECK_EQ(ustack_kallsyms__find(k, 0xffffffffc0201008, &addr, &size, &name, &mod), 0);
	CHECK_STR(name, "ftrace_trampoline");

	CHECK_EQ(ustack_kallsyms__cache_image(k, 7, &img, &len), 0);
	c = ustack_kallsyms__from_cache(img, len, 7);
	free(img);
	CHECK(c);
	CHECK_EQ(ustack_kallsyms__count(c), ustack_kallsyms__count(k));
	/* a program loaded later at or after an old one's place: unnamed */
	CHECK_EQ(ustack_kallsyms__find(c, 0xffffffffc0b00010, &addr, &size, &name, &mod), -ENOENT);
	CHECK_EQ(ustack_kallsyms__find(c, 0xffffffffc0b00900, &addr, &size, &name, &mod), -ENOENT);
	CHECK_EQ(ustack_kallsyms__find(c, 0xffffffffc0201008, &addr, &size, &name, &mod), -ENOENT);
	/* the kernel and modules are named as before */
	CHECK_EQ(ustack_kallsyms__find(c, 0xffffffff81000104, &addr, &size, &name, &mod), 0);
	CHECK_STR(name, "do_one");
	CHECK_EQ(ustack_kallsyms__find(c, 0xffffffffc0a00010, &addr, &size, &name, &mod), 0);
	CHECK_STR(name, "mod_a_fn");
	CHECK_STR(mod, "mod_a");
	ustack_kallsyms__free(c);
	ustack_kallsyms__free(k);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(test_cache_matches_proc);
	RUN(test_damaged_cache);
	RUN(test_from_memory);
	RUN(test_extent);
	RUN(test_cache_file_is_the_image);
	RUN(test_big_cache_buffers);
	RUN(test_dynamic_symbols_unnamed_in_cache);
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			return 1;
	}
	TEST_EXIT();
}
