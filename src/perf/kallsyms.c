// SPDX-License-Identifier: MIT
/* Kernel text symbols with an on-disk cache (kallsyms.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/cache_dir.h"
#include "perf/kallsyms.h"

#define NO_MODULE UINT32_MAX
#define KSYM_PAGE 4096u
/* cache file: header, entries, strings */
#define CACHE_MAGIC "USKSYM2" /* 2: dynamic entries unnamed */

struct kentry {
	uint64_t addr;
	uint32_t name;   /* offset in strings */
	uint32_t module; /* offset in strings, NO_MODULE */
};

struct cache_hdr {
	char magic[8];
	uint64_t key;
	uint64_t count;
	uint64_t strings_size;
};

struct ustack_kallsyms {
	struct kentry *e;
	size_t n, cap;
	char *strings;
	size_t strings_size, strings_cap;
	/* bytes mapped by body_alloc() for e and strings (0: malloc()ed) */
	size_t e_mapped, strings_mapped;
};

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* What the symbol set depends on: this boot, this kernel, these modules. */
static uint64_t cache_key(void)
{
	uint64_t h = 0xcbf29ce484222325ull;
	struct utsname un;
	char buf[4096];
	ssize_t n;
	int fd;

	if (!uname(&un))
		h = fnv1a(h, un.release, strlen(un.release));
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf));
		if (n > 0)
			h = fnv1a(h, buf, n);
		close(fd);
	}
	fd = open("/proc/modules", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			h = fnv1a(h, buf, n);
		close(fd);
	}
	return h;
}

static int add_string(struct ustack_kallsyms *k, const char *s, size_t len, uint32_t *off)
{
	if (k->strings_size + len + 1 > k->strings_cap) {
		size_t cap = k->strings_cap ? 2 * k->strings_cap : 1 << 20;
		char *g;

		while (cap < k->strings_size + len + 1)
			cap *= 2;
		if (cap > UINT32_MAX || !(g = realloc(k->strings, cap)))
			return -ENOMEM;
		k->strings = g;
		k->strings_cap = cap;
	}
	memcpy(k->strings + k->strings_size, s, len);
	k->strings[k->strings_size + len] = 0;
	*off = (uint32_t)k->strings_size;
	k->strings_size += len + 1;
	return 0;
}

static int kentry_cmp(const void *a, const void *b)
{
	const struct kentry *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Text symbols of /proc/kallsyms: "addr type name\t[module]". */
static int read_text(struct ustack_kallsyms *k, FILE *f)
{
	char line[512];
	int ret = 0;

	while (!ret && fgets(line, sizeof(line), f)) {
		const char *p, *name, *mod = NULL;
		size_t nlen, mlen = 0;
		uint64_t addr;
		uint32_t noff, moff = NO_MODULE;
		char type;

		p = ustack_parse_hex(line, NULL, &addr);
		if (!p || *p != ' ' || !addr)
			continue;
		type = p[1];
		if ((type != 't' && type != 'T' && type != 'W' && type != 'w') || p[2] != ' ')
			continue;
		name = p + 3;
		nlen = strcspn(name, " \t\n");
		if (name[nlen] == '\t' && name[nlen + 1] == '[') {
			mod = name + nlen + 2;
			mlen = strcspn(mod, "]\n");
		}
		if (k->n == k->cap) {
			size_t cap = k->cap ? 2 * k->cap : 65536;
			struct kentry *g = realloc(k->e, cap * sizeof(*g));

			if (!g) {
				ret = -ENOMEM;
				break;
			}
			k->e = g;
			k->cap = cap;
		}
		ret = add_string(k, name, nlen, &noff);
		if (!ret && mod)
			ret = add_string(k, mod, mlen, &moff);
		if (!ret)
			k->e[k->n++] = (struct kentry){ .addr = addr, .name = noff, .module = moff };
	}
	if (k->n)
		qsort(k->e, k->n, sizeof(*k->e), kentry_cmp);
	return ret;
}

static int load_proc(struct ustack_kallsyms *k)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	int ret;

	if (!f)
		return -errno;
	ret = read_text(k, f);
	fclose(f);
	return ret;
}

/* The cache is input like any other: every count and offset is checked. */
static int check_cache_hdr(const struct cache_hdr *h, uint64_t file_size, uint64_t key)
{
	if (memcmp(h->magic, CACHE_MAGIC, sizeof(h->magic)) || h->key != key ||
	    h->count > file_size / sizeof(struct kentry) || h->strings_size > UINT32_MAX ||
	    file_size != sizeof(*h) + h->count * sizeof(struct kentry) + h->strings_size)
		return -EBADMSG;
	return 0;
}

/* Entries and strings of a cache whose header passed are in @k (n and
 * strings_size not set yet): check them, then take them. */
static int check_cache_body(struct ustack_kallsyms *k, const struct cache_hdr *h)
{
	if (h->strings_size && k->strings[h->strings_size - 1])
		return -EBADMSG; /* every string must end inside the blob */
	for (uint64_t i = 0; i < h->count; i++) {
		if (k->e[i].name >= h->strings_size ||
		    (k->e[i].module != NO_MODULE && k->e[i].module >= h->strings_size) ||
		    (i && k->e[i].addr < k->e[i - 1].addr))
			return -EBADMSG;
	}
	k->n = k->cap = h->count;
	k->strings_size = k->strings_cap = h->strings_size;
	return 0;
}

/*
 * A cache's entries and strings (~3 MB each for a distribution kernel) are
 * read in whole at every recording's start. From malloc() each 4 KiB page
 * is one page fault as the read fills it: ~1,350 of them, 25 ms on the
 * project's virtual machines (~19 us a fault), a tenth of a bpf
 * recording's start-up. A buffer of 1 MiB or more is an anonymous mapping
 * of whole 2 MiB huge pages, aligned to one, that asks for transparent
 * huge pages (MADV_HUGEPAGE: also where THP is "madvise", the distribution
 * default): 2-4 faults instead; where THP is off it is as before, page by
 * page. Such a buffer is never grown (only text is parsed into growing
 * ones). @mapped: the bytes mapped, 0 when malloc()ed.
 */
#define BODY_HUGE ((size_t)2 << 20)

static void *body_alloc(size_t size, size_t *mapped)
{
	size_t len = (size + BODY_HUGE - 1) & ~(BODY_HUGE - 1);
	char *raw, *p;

	*mapped = 0;
	if (size < BODY_HUGE / 2)
		return malloc(size ? size : 1);
	raw = mmap(NULL, len + BODY_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (raw == MAP_FAILED)
		return malloc(size);
	p = (char *)(((uintptr_t)raw + BODY_HUGE - 1) & ~(uintptr_t)(BODY_HUGE - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	if (raw + BODY_HUGE > p)
		munmap(p + len, (size_t)(raw + BODY_HUGE - p));
	madvise(p, len, MADV_HUGEPAGE);
	*mapped = len;
	return p;
}

static void body_free(void *p, size_t *mapped)
{
	if (*mapped)
		munmap(p, *mapped);
	else
		free(p);
	*mapped = 0;
}

static int alloc_cache_body(struct ustack_kallsyms *k, const struct cache_hdr *h)
{
	k->e = body_alloc(h->count * sizeof(*k->e), &k->e_mapped);
	k->strings = body_alloc(h->strings_size, &k->strings_mapped);
	return k->e && k->strings ? 0 : -ENOMEM;
}

static void drop_cache_body(struct ustack_kallsyms *k)
{
	body_free(k->e, &k->e_mapped);
	body_free(k->strings, &k->strings_mapped);
	k->e = NULL;
	k->strings = NULL;
}

static int load_cache(struct ustack_kallsyms *k, const char *path, uint64_t key)
{
	struct cache_hdr h;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -EBADMSG;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || read(fd, &h, sizeof(h)) != sizeof(h) ||
	    check_cache_hdr(&h, (uint64_t)st.st_size, key))
		goto out;
	ret = alloc_cache_body(k, &h);
	if (ret)
		goto out;
	ret = -EBADMSG;
	if (read(fd, k->e, h.count * sizeof(*k->e)) != (ssize_t)(h.count * sizeof(*k->e)) ||
	    read(fd, k->strings, h.strings_size) != (ssize_t)h.strings_size)
		goto out;
	ret = check_cache_body(k, &h);
out:
	close(fd);
	if (ret)
		drop_cache_body(k);
	return ret;
}

/*
 * Symbols of BPF programs and ftrace trampolines (modules "bpf" and
 * "__builtin__ftrace") come and go while the kernel runs: every recording
 * with the BPF backend loads programs of its own. The cache, keyed by boot
 * and modules, outlives them, so it keeps their addresses (places no other
 * symbol reaches into) but not their names: a frame there is left unnamed
 * rather than named after a program that may be gone, or another one at
 * the same address. A read of /proc/kallsyms itself names them.
 */
static int dynamic_entry(const struct ustack_kallsyms *k, const struct kentry *e)
{
	const char *m = e->module == NO_MODULE ? NULL : k->strings + e->module;

	return m && (!strcmp(m, "bpf") || !strcmp(m, "__builtin__ftrace"));
}

static void save_cache(const struct ustack_kallsyms *k, const char *dir, const char *path,
		       uint64_t key)
{
	void *img;
	size_t len;
	int err;

	if (ustack_kallsyms__cache_image(k, key, &img, &len))
		return;
	err = ustack_cache_write(dir, path, img, len);
	free(img);
	if (err)
		return;
	/* one file per boot and set of modules: the old ones go */
	ustack_cache_trim(dir, "kallsyms-", NULL, USTACK_CACHE_KALLSYMS_MAX_BYTES,
			  strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
}

struct ustack_kallsyms *ustack_kallsyms__load(const char *cache_dir, int *from_cache)
{
	struct ustack_kallsyms *k = calloc(1, sizeof(*k));
	char dirbuf[4096], path[4096 + 64];
	uint64_t key = 0;

	if (from_cache)
		*from_cache = 0;
	if (!k)
		return NULL;
	if (!cache_dir)
		cache_dir = ustack_cache_dir(dirbuf, sizeof(dirbuf));
	if (*cache_dir) {
		key = cache_key();
		snprintf(path, sizeof(path), "%s/kallsyms-%016llx", cache_dir, (unsigned long long)key);
		if (!load_cache(k, path, key)) {
			if (from_cache)
				*from_cache = 1;
			return k;
		}
	}
	if (load_proc(k) == -ENOMEM) {
		ustack_kallsyms__free(k);
		errno = ENOMEM;
		return NULL;
	}
	/* hidden addresses (kptr_restrict) give nothing worth caching */
	if (*cache_dir && k->n)
		save_cache(k, cache_dir, path, key);
	return k;
}

size_t ustack_kallsyms__count(const struct ustack_kallsyms *k)
{
	return k->n;
}

static int same_module(const struct ustack_kallsyms *k, const struct kentry *a,
		       const struct kentry *b)
{
	if (a->module == NO_MODULE || b->module == NO_MODULE)
		return a->module == b->module;
	return !strcmp(k->strings + a->module, k->strings + b->module);
}

/*
 * How far symbol @i reaches; @next is the first entry at a higher address.
 * /proc/kallsyms gives no sizes. A symbol reaches the next one when both are
 * in the kernel image or both in the same module; the last symbol of the
 * kernel or of a module (followed by a gap of up to a gigabyte, or by
 * nothing) reaches to the end of the page after its start, perf's rule
 * (symbols__fixup_end()), never past the next symbol.
 */
static uint64_t extent(const struct ustack_kallsyms *k, size_t i, size_t next)
{
	const struct kentry *e = &k->e[i];
	uint64_t page = KSYM_PAGE + (KSYM_PAGE - (e->addr & (KSYM_PAGE - 1))) % KSYM_PAGE;

	if (next >= k->n)
		return page;
	if (same_module(k, e, &k->e[next]))
		return k->e[next].addr - e->addr;
	return page < k->e[next].addr - e->addr ? page : k->e[next].addr - e->addr;
}

int ustack_kallsyms__find(const struct ustack_kallsyms *k, uint64_t ip, uint64_t *addr,
			  uint64_t *size, const char **name, const char **module)
{
	size_t i = ustack_count_le_u64(k->e, k->n, sizeof(*k->e), offsetof(struct kentry, addr), ip);
	const struct kentry *e;
	uint64_t ext;

	if (!i)
		return -ENOENT;
	e = &k->e[i - 1];
	ext = extent(k, i - 1, i);
	if (ip - e->addr >= ext || !k->strings[e->name]) /* unnamed: dynamic_entry() */
		return -ENOENT;
	*addr = e->addr;
	*size = ext;
	*name = k->strings + e->name;
	*module = e->module == NO_MODULE ? NULL : k->strings + e->module;
	return 0;
}

void ustack_kallsyms__free(struct ustack_kallsyms *k)
{
	if (!k)
		return;
	drop_cache_body(k);
	free(k);
}

/* ---- the two inputs from memory (kallsyms.h: tests and fuzzing) ------------ */

struct ustack_kallsyms *ustack_kallsyms__from_text(const char *text, size_t len)
{
	struct ustack_kallsyms *k = calloc(1, sizeof(*k));
	FILE *f;
	int ret;

	if (!k)
		return NULL;
	if (!len)
		return k;
	f = fmemopen((void *)text, len, "r");
	if (!f) {
		ustack_kallsyms__free(k);
		return NULL;
	}
	ret = read_text(k, f);
	fclose(f);
	if (ret) {
		ustack_kallsyms__free(k);
		errno = -ret;
		return NULL;
	}
	return k;
}

struct ustack_kallsyms *ustack_kallsyms__from_cache(const void *img, size_t len, uint64_t key)
{
	struct ustack_kallsyms *k = calloc(1, sizeof(*k));
	const uint8_t *p = img;
	struct cache_hdr h;
	int ret = -EBADMSG;

	if (!k)
		return NULL;
	if (len < sizeof(h))
		goto fail;
	memcpy(&h, p, sizeof(h));
	ret = check_cache_hdr(&h, len, key);
	if (!ret)
		ret = alloc_cache_body(k, &h);
	if (ret)
		goto fail;
	memcpy(k->e, p + sizeof(h), h.count * sizeof(*k->e));
	memcpy(k->strings, p + sizeof(h) + h.count * sizeof(*k->e), h.strings_size);
	ret = check_cache_body(k, &h);
	if (!ret)
		return k;
fail:
	drop_cache_body(k);
	free(k);
	errno = -ret;
	return NULL;
}

/* The strings get one more byte, an empty name for dynamic entries. */
int ustack_kallsyms__cache_image(const struct ustack_kallsyms *k, uint64_t key, void **img,
				 size_t *len)
{
	size_t ne = k->n * sizeof(*k->e);
	struct cache_hdr h = { .key = key, .count = k->n, .strings_size = k->strings_size + 1 };
	struct kentry *e;
	uint8_t *p;

	memcpy(h.magic, CACHE_MAGIC, sizeof(h.magic));
	*len = sizeof(h) + ne + h.strings_size;
	p = malloc(*len);
	if (!p)
		return -ENOMEM;
	memcpy(p, &h, sizeof(h));
	e = (struct kentry *)(p + sizeof(h));
	if (ne)
		memcpy(e, k->e, ne);
	for (size_t i = 0; i < k->n; i++)
		if (dynamic_entry(k, &k->e[i]))
			e[i].name = (uint32_t)k->strings_size;
	if (k->strings_size)
		memcpy(p + sizeof(h) + ne, k->strings, k->strings_size);
	p[*len - 1] = 0;
	*img = p;
	return 0;
}

int ustack_kallsyms__entry(const struct ustack_kallsyms *k, size_t i, uint64_t *addr,
			   const char **name, const char **module)
{
	if (i >= k->n)
		return -ENOENT;
	*addr = k->e[i].addr;
	*name = k->strings + k->e[i].name;
	*module = k->e[i].module == NO_MODULE ? NULL : k->strings + k->e[i].module;
	return 0;
}
