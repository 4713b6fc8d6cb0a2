// SPDX-License-Identifier: MIT
/*
 * File ids and file_map records.
 *
 * A file id is SipHash-2-4 (keyed) of (kind, dev major, dev minor,
 * generation, inode, vDSO start). The generation of a dev:inode starts at 0
 * and grows when that dev:inode is later seen holding another file (another
 * path in the text maps, or, with the ioctl, another path behind a mapping
 * outside the address hull known for it): a recycled inode then gets a new
 * id and a new file_map record. docs/procmaps.md states the guarantees.
 *
 * Everything here runs once per file (cold path): allocation is fine.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/log.h"
#include "elf/elf_file.h"
#include "procmaps/procmaps.h"

/* ---- SipHash-2-4 (Aumasson & Bernstein), from the paper's description ---- */

static inline uint64_t rotl64(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIPROUND do { \
	v0 += v1; v1 = rotl64(v1, 13); v1 ^= v0; v0 = rotl64(v0, 32); \
	v2 += v3; v3 = rotl64(v3, 16); v3 ^= v2; \
	v0 += v3; v3 = rotl64(v3, 21); v3 ^= v0; \
	v2 += v1; v1 = rotl64(v1, 17); v1 ^= v2; v2 = rotl64(v2, 32); \
} while (0)

uint64_t ustack_siphash24(const uint64_t key[2], const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t v0 = key[0] ^ 0x736f6d6570736575ULL;
	uint64_t v1 = key[1] ^ 0x646f72616e646f6dULL;
	uint64_t v2 = key[0] ^ 0x6c7967656e657261ULL;
	uint64_t v3 = key[1] ^ 0x7465646279746573ULL;
	uint64_t b = (uint64_t)len << 56;
	size_t i, full = len & ~(size_t)7;

	for (i = 0; i < full; i += 8) {
		uint64_t m = 0;

		for (int j = 0; j < 8; j++)
			m |= (uint64_t)p[i + j] << (8 * j);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (int j = 0; i + (size_t)j < len; j++)
		b |= (uint64_t)p[i + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t process_key[2];
static pthread_once_t process_key_once = PTHREAD_ONCE_INIT;

static void process_key_init(void)
{
	if (getrandom(process_key, sizeof(process_key), 0) != (ssize_t)sizeof(process_key)) {
		/* no entropy source: ids are still unique, only guessable */
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		process_key[0] = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
		process_key[1] = (uint64_t)ts.tv_sec * 0x9e3779b97f4a7c15ULL;
	}
}

void pm_default_key(uint64_t key[2])
{
	pthread_once(&process_key_once, process_key_init);
	key[0] = process_key[0];
	key[1] = process_key[1];
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t file_id_of(const struct ustack_procmaps *pm, uint32_t kind, uint32_t maj,
			   uint32_t min, uint32_t gen, uint64_t inode, uint64_t vdso_start)
{
	uint8_t m[32];
	uint64_t id;

	put_le(m, kind, 4);
	put_le(m + 4, maj, 4);
	put_le(m + 8, min, 4);
	put_le(m + 12, gen, 4);
	put_le(m + 16, inode, 8);
	put_le(m + 24, vdso_start, 8);
	id = ustack_siphash24(pm->key, m, sizeof(m));
	return id ? id : 1; /* 0 means "no file" */
}

/* ---- interned strings: one copy per distinct string, freed at close ---- */

struct pm_strchunk {
	struct pm_strchunk *next;
	size_t used, size;
	char data[];
};

static uint64_t str_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
	return h;
}

static char *arena_alloc(struct pm_strings *st, size_t n)
{
	struct pm_strchunk *c = st->chunks;

	if (!c || c->size - c->used < n) {
		size_t size = n > 16384 ? n : 16384;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->next = st->chunks;
		c->used = 0;
		c->size = size;
		st->chunks = c;
	}
	c->used += n;
	return c->data + c->used - n;
}

const char *pm_intern(struct ustack_procmaps *pm, const char *s, size_t len)
{
	size_t mask, i;
	char *copy;

	if (pm->nr_specials * 2 >= pm->cap_specials) {
		size_t ncap = pm->cap_specials ? pm->cap_specials * 2 : 256;
		const char **n = calloc(ncap, sizeof(*n));

		if (!n)
			return NULL;
		for (i = 0; i < pm->cap_specials; i++) {
			const char *o = pm->specials[i];
			size_t j;

			if (!o)
				continue;
			for (j = str_hash(o, strlen(o)) & (ncap - 1); n[j]; j = (j + 1) & (ncap - 1))
				;
			n[j] = o;
		}
		free(pm->specials);
		pm->specials = n;
		pm->cap_specials = ncap;
	}
	mask = pm->cap_specials - 1;
	for (i = str_hash(s, len) & mask; pm->specials[i]; i = (i + 1) & mask) {
		const char *o = pm->specials[i];

		if (!strncmp(o, s, len) && o[len] == '\0')
			return o;
	}
	copy = arena_alloc(&pm->strings, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = '\0';
	pm->specials[i] = copy;
	pm->nr_specials++;
	return copy;
}

void pm_strings_free(struct pm_strings *st)
{
	struct pm_strchunk *c = st->chunks, *n;

	for (; c; c = n) {
		n = c->next;
		free(c);
	}
	st->chunks = NULL;
}

/* ---- the file table ---- */

static int same_dev_inode(const struct pm_file *f, uint32_t maj, uint32_t min, uint64_t inode)
{
	return f->inode == inode && f->dev_major == maj && f->dev_minor == min;
}

int32_t pm_file_find_dev_inode(struct ustack_procmaps *pm, uint32_t maj, uint32_t min, uint64_t inode)
{
	uint64_t head;

	if (!ustack_u64map__get(pm->by_dev_inode, pm_dev_inode_hash(maj, min, inode), &head))
		return -1;
	for (int32_t i = (int32_t)head - 1; i >= 0; i = pm->files[i].hash_next)
		if (pm->files[i].kind == USTACK_VMA_FILE && same_dev_inode(&pm->files[i], maj, min, inode))
			return i;
	return -1;
}

/* Point dev:inode at entry @idx (its newest generation): @idx heads the
 * chain of its hash, and an older generation leaves the chain (it stays
 * reachable through prev_gen). */
static int fhash_set(struct ustack_procmaps *pm, int32_t idx)
{
	struct pm_file *f = &pm->files[idx];
	uint64_t *head;
	int32_t next, *link;

	if (!pm->by_dev_inode && !(pm->by_dev_inode = ustack_u64map__new()))
		return -ENOMEM;
	head = ustack_u64map__slot(pm->by_dev_inode,
				   pm_dev_inode_hash(f->dev_major, f->dev_minor, f->inode), NULL);
	if (!head)
		return -ENOMEM;
	next = (int32_t)*head - 1; /* -1 when the key was just added */
	for (link = &next; *link >= 0; link = &pm->files[*link].hash_next) {
		const struct pm_file *g = &pm->files[*link];

		if (same_dev_inode(g, f->dev_major, f->dev_minor, f->inode)) {
			*link = g->hash_next;
			break;
		}
	}
	f->hash_next = next;
	*head = (uint64_t)idx + 1;
	return 0;
}

int32_t pm_file_new(struct ustack_procmaps *pm, uint32_t kind, uint32_t maj, uint32_t min,
		    uint64_t inode, const char *path, uint32_t vflags, uint64_t start, uint64_t end,
		    uint32_t generation, int32_t prev)
{
	struct pm_file *f;
	int32_t idx;

	if (pm->nr_files >= INT32_MAX / 2)
		return -ENOSPC;
	if (pm->nr_files == pm->cap_files) {
		size_t ncap = pm->cap_files ? pm->cap_files * 2 : 64;
		struct pm_file *n = realloc(pm->files, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		pm->files = n;
		pm->cap_files = ncap;
	}
	idx = (int32_t)pm->nr_files;
	f = &pm->files[idx];
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->dev_major = maj;
	f->dev_minor = min;
	f->inode = inode;
	f->generation = generation;
	f->prev_gen = prev;
	f->path = path;
	f->flags = vflags & USTACK_VMA_DELETED;
	f->lo = f->map_start = start;
	f->hi = f->map_end = end;
	/* a table of its own (the recorder's) numbers its files 1, 2, ...:
	 * small varints in a trace; a live object's ids are keyed hashes */
	f->id = (pm->flags & PM_SEQUENTIAL_IDS) ? (uint64_t)idx + 1
						: file_id_of(pm, kind, maj, min, generation, inode,
							     kind == USTACK_VMA_VDSO ? start : 0);
	pm->nr_files++;
	if (kind == USTACK_VMA_FILE) {
		int err = fhash_set(pm, idx);

		if (err) {
			pm->nr_files--;
			return err;
		}
	}
	return idx;
}

/*
 * Text mode: the file of a mapping whose path is known. Same dev:inode and
 * same path -> same file; another path -> the inode was recycled: next
 * generation.
 */
int32_t pm_file_lookup(struct ustack_procmaps *pm, uint32_t kind, uint32_t maj, uint32_t min,
		       uint64_t inode, const char *path, uint64_t start, uint64_t end)
{
	int32_t newest, i;

	if (kind == USTACK_VMA_VDSO) {
		uint32_t gen = 0;

		for (size_t k = 0; k < pm->nr_files; k++) {
			if (pm->files[k].kind != USTACK_VMA_VDSO)
				continue;
			if (pm->files[k].map_start == start)
				return (int32_t)k;
			gen++;
		}
		return pm_file_new(pm, kind, 0, 0, 0, path, 0, start, end, gen, -1);
	}
	newest = pm_file_find_dev_inode(pm, maj, min, inode);
	for (i = newest; i >= 0; i = pm->files[i].prev_gen) {
		struct pm_file *f = &pm->files[i];

		if (!f->path || !path || f->path == path || !strcmp(f->path, path)) {
			if (!f->path)
				f->path = path;
			if (start < f->lo)
				f->lo = start;
			if (end > f->hi)
				f->hi = end;
			return i;
		}
	}
	return pm_file_new(pm, kind, maj, min, inode, path, 0, start, end,
			   newest >= 0 ? pm->files[newest].generation + 1 : 0, newest);
}

/* ---- build ID and debuglink (from the kernel, else from the ELF) ---- */

/* Read the vDSO image out of the target: it is an ELF file in memory. */
static void vdso_info(struct ustack_procmaps *pm, struct pm_file *f)
{
	uint64_t len = f->map_end - f->map_start;
	char path[64];
	struct ustack_elf *elf;
	uint8_t *img;
	ssize_t n;
	int fd, r;

	if (pm->pid <= 0 || len == 0 || len > (1u << 20))
		return;
	snprintf(path, sizeof(path), "/proc/%d/mem", pm->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	img = malloc(len);
	n = img ? pread(fd, img, len, (off_t)f->map_start) : -1;
	close(fd);
	if (n != (ssize_t)len) {
		free(img);
		return;
	}
	elf = ustack_elf__open_mem(img, len, "[vdso]");
	if (elf) {
		r = ustack_elf__build_id(elf, f->build_id, sizeof(f->build_id));
		if (r > 0) {
			f->build_id_size = r > USTACK_BUILD_ID_MAX ? USTACK_BUILD_ID_MAX : (uint32_t)r;
			f->build_id_source = USTACK_BUILD_ID_ELF;
		}
		ustack_elf__close(elf);
	}
	free(img);
}

void pm_file_info(struct ustack_procmaps *pm, struct pm_file *f)
{
	struct ustack_vma v;
	struct ustack_elf *elf;
	const char *dl;
	uint32_t crc;
	char path[PATH_MAX + 64];
	int r;

	if (f->state & PM_FILE_INFO_DONE)
		return;
	f->state |= PM_FILE_INFO_DONE;
	if (pm->flags & USTACK_PROCMAPS_NO_ELF)
		return;
	if (f->kind == USTACK_VMA_VDSO) {
		vdso_info(pm, f);
		return;
	}
	memset(&v, 0, sizeof(v));
	v.start = f->map_start;
	v.end = f->map_end;
	v.kind = USTACK_VMA_FILE;
	v.name = f->path;
	v.flags = f->flags;
	if (ustack_procmaps__elf_path(pm, &v, path, sizeof(path)))
		return;
	elf = ustack_elf__open(path);
	if (!elf) {
		pr_debug("%s: cannot read the ELF file (%s)\n", f->path ? f->path : path, strerror(errno));
		return;
	}
	if (!f->build_id_size) {
		r = ustack_elf__build_id(elf, f->build_id, sizeof(f->build_id));
		if (r > 0) {
			f->build_id_size = r > USTACK_BUILD_ID_MAX ? USTACK_BUILD_ID_MAX : (uint32_t)r;
			f->build_id_source = USTACK_BUILD_ID_ELF;
		}
	}
	if (!ustack_elf__debuglink(elf, &dl, &crc)) {
		f->debuglink = pm_intern(pm, dl, strnlen(dl, PATH_MAX));
		f->debuglink_crc = crc;
	}
	ustack_elf__close(elf);
}

void pm_file_to_map(const struct pm_file *f, struct ustack_file_map *fm)
{
	memset(fm, 0, sizeof(*fm));
	fm->file_id = f->id;
	fm->kind = f->kind;
	fm->flags = f->flags;
	fm->path = f->path;
	fm->dev_major = f->dev_major;
	fm->dev_minor = f->dev_minor;
	fm->inode = f->inode;
	fm->map_start = f->map_start;
	fm->build_id_size = f->build_id_size;
	fm->build_id_source = f->build_id_source;
	memcpy(fm->build_id, f->build_id, sizeof(fm->build_id));
	fm->debuglink = f->debuglink;
	fm->debuglink_crc = f->debuglink_crc;
	fm->generation = f->generation;
}

/* First use of a file: 1 (and the callback ran), already known: 0. */
int pm_file_emit(struct ustack_procmaps *pm, int32_t idx)
{
	struct pm_file *f = &pm->files[idx];
	struct ustack_file_map fm;

	if (f->state & PM_FILE_EMITTED)
		return 0;
	if (pm->nr_emitted == pm->cap_emitted) {
		size_t ncap = pm->cap_emitted ? pm->cap_emitted * 2 : 64;
		int32_t *n = realloc(pm->emitted, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		pm->emitted = n;
		pm->cap_emitted = ncap;
	}
	pm->emitted[pm->nr_emitted++] = idx;
	f->state |= PM_FILE_EMITTED;
	pm_file_info(pm, f);
	f = &pm->files[idx];
	if (pm->on_file_map) {
		pm_file_to_map(f, &fm);
		pm->on_file_map(pm->ctx, &fm);
	}
	return 1;
}

void pm_files_free(struct ustack_procmaps *pm)
{
	free(pm->files);
	ustack_u64map__free(pm->by_dev_inode);
	free(pm->emitted);
	free(pm->specials);
	pm_strings_free(&pm->strings);
	pm->files = NULL;
	pm->by_dev_inode = NULL;
	pm->emitted = NULL;
	pm->specials = NULL;
}
