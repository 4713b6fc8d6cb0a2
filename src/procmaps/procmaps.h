/* SPDX-License-Identifier: MIT */
/*
 * procmaps internals: the VMA table of text mode, the PROCMAP_QUERY ioctl,
 * the file table (file ids, file_map records) shared by both modes.
 */
#ifndef USTACK_PROCMAPS_PROCMAPS_H
#define USTACK_PROCMAPS_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/hashmap.h>
#include <ustack/procmaps.h>
#include "common/procmap_query.h"

/* One line of the text maps. */
struct pm_vma {
	uint64_t start, end, pgoff, inode;
	uint32_t dev_major, dev_minor;
	uint32_t flags;  /* enum ustack_vma_flags */
	uint32_t kind;   /* enum ustack_vma_kind */
	const char *name;  /* interned (file path without " (deleted)", or special name) */
	int32_t file;      /* index into the file table, -1 when not a file/vdso */
};

/* One file id. */
struct pm_file {
	uint64_t id;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t kind;        /* USTACK_VMA_FILE or USTACK_VMA_VDSO */
	uint32_t flags;       /* USTACK_VMA_DELETED */
	uint32_t generation;
	uint32_t state;       /* enum pm_file_state bits */
	int32_t prev_gen;     /* older generation with the same dev:inode, or -1 */
	int32_t hash_next;    /* next file of its by_dev_inode chain, or -1 */
	uint64_t lo, hi;      /* address hull of the mappings known to hold it */
	uint64_t map_start, map_end; /* first mapping seen (map_files name) */
	const char *path;     /* interned */
	const char *debuglink;
	uint32_t debuglink_crc;
	uint32_t build_id_size, build_id_source;
	uint8_t build_id[USTACK_BUILD_ID_MAX];
};

enum pm_file_state {
	PM_FILE_INFO_DONE = 1u << 0, /* build ID / debuglink looked up */
	PM_FILE_EMITTED = 1u << 1,   /* returned by resolve: file_map emitted */
};

/* Bump allocator for strings: freed all at once at close. */
struct pm_strings {
	struct pm_strchunk *chunks;
};

#define PM_BATCH_VMAS 8
#define PM_SPECIAL_CACHE 8

struct ustack_procmaps {
	int pid;
	int maps_fd;          /* /proc/PID/maps, -1 for a buffer */
	int use_ioctl;
	uint32_t flags;       /* enum ustack_procmaps_open_flags */
	ustack_file_map_fn_t on_file_map;
	void *ctx;
	uint64_t key[2];
	char name[64];        /* for messages: "/proc/123/maps" or opts->name */
	/* opts->errbuf while an open call runs (NULL after: the caller's
	 * buffer need not outlive the call) */
	char *errbuf;
	size_t errbuf_sz;

	/* text mode: sorted, non-overlapping */
	struct pm_vma *vmas;
	size_t nr_vmas, cap_vmas;
	char *text;           /* last read text (reused between reloads) */
	size_t text_cap;

	/* file table: entries in creation order, hashed by dev:inode */
	struct pm_file *files;
	size_t nr_files, cap_files;
	/* hash of dev:inode -> index + 1 of the first file of a chain through
	 * hash_next (files whose dev:inode hash alike; one per dev:inode, the
	 * newest generation); NULL until the first file */
	struct ustack_u64map *by_dev_inode;
	/* ids returned by resolve, in first-use order (index into files) */
	int32_t *emitted;
	size_t nr_emitted, cap_emitted;

	/* interned special names ("[vdso]", "[anon:x]") and paths */
	struct pm_strings strings;
	const char **specials;
	size_t nr_specials, cap_specials;

	/* ioctl mode: buffers for the cold name/build-ID query */
	char *namebuf;        /* PATH_MAX + 1 */
	/* ioctl mode: named anonymous/special VMAs, whose names cost a
	 * second query (vDSO, stack, JIT regions): reused when a bare query
	 * returns the same range and flags */
	struct pm_vma special_cache[PM_SPECIAL_CACHE];
	unsigned int special_next;
};

/* Internal open flag (beyond enum ustack_procmaps_open_flags): file ids
 * are 1, 2, ... in creation order instead of keyed hashes. */
#define PM_SEQUENTIAL_IDS (1u << 31)

struct ustack_procmaps *pm_alloc(const struct ustack_procmaps_opts *opts);

/* procmaps_space.c: sorted, non-overlapping VMA arrays and a file table
 * without a process, for a mapping picture fed by events (the recorder) */
size_t pm_vmas_lower_bound(const struct pm_vma *v, size_t n, uint64_t addr);
const struct pm_vma *pm_vmas_find(const struct pm_vma *v, size_t n, uint64_t addr);
/* Insert @nv, cutting away what it overlaps (a file mapping's pgoff
 * follows its new start). 0, -EINVAL (empty range), -ENOMEM. */
int pm_vmas_replace(struct pm_vma **v, size_t *n, size_t *cap, const struct pm_vma *nv);
/* A file table only (no process, no VMAs): @flags as in
 * enum ustack_procmaps_open_flags plus PM_SEQUENTIAL_IDS. */
struct ustack_procmaps *pm_open_file_table(uint32_t flags);
struct pm_file *pm_file_at(struct ustack_procmaps *pm, int32_t idx);

/* Key of a dev:inode in the file table (by_dev_inode). Not unique: files
 * whose keys are equal share a chain. */
static inline uint64_t pm_dev_inode_hash(uint32_t maj, uint32_t min, uint64_t inode)
{
	uint64_t h = inode * 0x9e3779b97f4a7c15ULL;

	h ^= ((uint64_t)maj << 32 | min) * 0xc2b2ae3d27d4eb4fULL;
	return h ^ (h >> 29);
}

/* procmaps_text.c */
int pm_text_parse(struct ustack_procmaps *pm, const char *buf, size_t len);
int pm_text_read(struct ustack_procmaps *pm);
const struct pm_vma *pm_text_find(const struct ustack_procmaps *pm, uint64_t addr);
size_t pm_text_lower_bound(const struct ustack_procmaps *pm, uint64_t addr);
void pm_set_error_line(unsigned int line);
uint32_t pm_kind_of_name(const char *name, size_t len, uint32_t flags, int file_backed);

/* procmaps_query.c: PROCMAP_QUERY */
/* [*start, *end) of the mapping covering @addr, at the cost of one query
 * (no name, no file looked up; a stack's bounds): 0, -ENOENT when @addr is
 * not mapped, or a negative errno */
int ustack_procmaps__bounds(struct ustack_procmaps *pm, uint64_t addr, uint64_t *start,
			    uint64_t *end);
int pm_ioctl_query(struct ustack_procmaps *pm, uint64_t addr, uint64_t qflags, int want_name,
		   int want_build_id, struct pm_vma *out, uint8_t *build_id, uint32_t *build_id_size);
int pm_ioctl_probe(int fd);

/* procmaps_files.c: file ids and file_map */
const char *pm_intern(struct ustack_procmaps *pm, const char *s, size_t len);
void pm_strings_free(struct pm_strings *st);
uint64_t ustack_siphash24(const uint64_t key[2], const void *data, size_t len);
void pm_default_key(uint64_t key[2]);
int32_t pm_file_lookup(struct ustack_procmaps *pm, uint32_t kind, uint32_t maj, uint32_t min,
		       uint64_t inode, const char *path, uint64_t start, uint64_t end);
int32_t pm_file_find_dev_inode(struct ustack_procmaps *pm, uint32_t maj, uint32_t min, uint64_t inode);
int32_t pm_file_new(struct ustack_procmaps *pm, uint32_t kind, uint32_t maj, uint32_t min,
		    uint64_t inode, const char *path, uint32_t vflags, uint64_t start, uint64_t end,
		    uint32_t generation, int32_t prev);
void pm_file_info(struct ustack_procmaps *pm, struct pm_file *f);
void pm_file_to_map(const struct pm_file *f, struct ustack_file_map *fm);
int pm_file_emit(struct ustack_procmaps *pm, int32_t idx);
void pm_files_free(struct ustack_procmaps *pm);

#endif
