// SPDX-License-Identifier: MIT
/*
 * The public unwinder (include/ustack/unwind.h): a sorted list of mappings,
 * each opened into its module tables on first use, over the internal
 * unwinder core. Mappings come from the embedder, a callback, or a live
 * process's /proc/PID/maps; all three end up in the same list, so a pc is
 * looked up by binary search and a mapping asked for only once.
 *
 * Every table a mapping opened is held (a reference) until the unwinder is
 * freed: the names ustack_unwinder__describe() hands out point into it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <ustack/procmaps.h>
#include <ustack/unwind.h>
#include "common/compiler.h"
#include "common/grow.h"
#include "common/log.h"
#include "common/opts.h"
#include "elf/elf_file.h"
#include "unwind/modules.h"
#include "unwind/unwind.h"

/* Largest in-memory image taken from a live process (the vDSO: 8 KiB). */
#define IMAGE_MAX (1u << 20)

struct uw_map {
	uint64_t start, end, off;
	char *path;          /* to open; NULL for an image */
	char *name;          /* to show */
	void *image;
	size_t image_size;
	uint8_t build_id[USTACK_BUILD_ID_MAX];
	size_t build_id_size; /* expected; 0: not checked */
	uint32_t flags;
	int tried;           /* tables looked for already */
	struct ustack_modtab *mod;   /* a reference, or NULL */
	uint8_t file_bid[USTACK_BUILD_ID_MAX];
	int file_bid_size;
};

struct ustack_unwinder {
	struct ustack_modcache *mc;
	struct ustack_procmaps *pm; /* pid mode */
	int pid;
	ustack_find_mapping_fn find_mapping;
	void *find_ctx;
	ustack_find_table_file_fn find_table_file;
	void *find_table_ctx;
	struct uw_map *maps;        /* sorted by start, non-overlapping */
	size_t nr, cap;
	/* the walk in progress */
	const struct ustack_unwind_opts *walk;
};

USTACK_API struct ustack_unwinder *ustack_unwinder__new(const struct ustack_unwinder_opts *opts)
{
	struct ustack_unwinder *u;

	if (!OPTS_VALID(opts, struct ustack_unwinder_opts) || OPTS_GET(opts, pid, 0) < 0) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->pid = OPTS_GET(opts, pid, 0);
	u->find_mapping = OPTS_GET(opts, find_mapping, NULL);
	u->find_ctx = OPTS_GET(opts, find_mapping_ctx, NULL);
	u->find_table_file = OPTS_GET(opts, find_table_file, NULL);
	u->find_table_ctx = OPTS_GET(opts, find_table_file_ctx, NULL);
	u->mc = ustack_modcache__new(OPTS_GET(opts, max_tables, 0), 0);
	if (!u->mc)
		goto fail;
	if (u->pid > 0) {
		u->pm = ustack_procmaps__open(u->pid, NULL);
		if (!u->pm)
			goto fail;
	}
	return u;
fail:
	{
		int err = errno;

		ustack_unwinder__free(u);
		errno = err;
	}
	return NULL;
}

static void map_release(struct uw_map *m)
{
	ustack_modtab__put(m->mod);
	free(m->path);
	free(m->name);
	free(m->image);
}

USTACK_API void ustack_unwinder__free(struct ustack_unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nr; i++)
		map_release(&u->maps[i]);
	free(u->maps);
	ustack_modcache__free(u->mc);
	ustack_procmaps__close(u->pm);
	free(u);
}

/* Index of the first mapping whose end is above @addr. */
static size_t map_lower_bound(const struct ustack_unwinder *u, uint64_t addr)
{
	size_t lo = 0, hi = u->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Insert a copy of @m (with display name @name), replacing overlaps. */
static int map_insert(struct ustack_unwinder *u, const struct ustack_mapping *m, const char *name,
		      struct uw_map **out)
{
	struct uw_map n = { .start = m->start, .end = m->end, .off = m->file_offset,
			    .flags = m->flags };
	size_t i, j;

	if (m->start >= m->end || (!m->path && !m->image) || (m->image && !m->image_size))
		return -EINVAL;
	if (m->build_id && m->build_id_size) {
		n.build_id_size = m->build_id_size < USTACK_BUILD_ID_MAX ? m->build_id_size
									  : USTACK_BUILD_ID_MAX;
		memcpy(n.build_id, m->build_id, n.build_id_size);
	}
	if (m->path && !(n.path = strdup(m->path)))
		goto nomem;
	if (!(n.name = strdup(name ? name : m->path ? m->path : "[image]")))
		goto nomem;
	if (m->image) {
		n.image = malloc(m->image_size);
		if (!n.image)
			goto nomem;
		memcpy(n.image, m->image, m->image_size);
		n.image_size = m->image_size;
		free(n.path); /* the image wins: it is what was mapped */
		n.path = NULL;
	}
	{
		void *g = u->maps;
		int gret = ustack_grow(&g, &u->cap, u->nr + 1, sizeof(*u->maps), 16);

		u->maps = g;
		if (gret)
			goto nomem;
	}
	/* [i, j): the mappings the new one overlaps */
	i = map_lower_bound(u, m->start);
	for (j = i; j < u->nr && u->maps[j].start < m->end; j++)
		map_release(&u->maps[j]);
	memmove(&u->maps[i + 1], &u->maps[j], (u->nr - j) * sizeof(*u->maps));
	u->nr = u->nr - (j - i) + 1;
	u->maps[i] = n;
	if (out)
		*out = &u->maps[i];
	return 0;
nomem:
	free(n.path);
	free(n.name);
	free(n.image);
	return -ENOMEM;
}

USTACK_API int ustack_unwinder__add_mapping(struct ustack_unwinder *u, const struct ustack_mapping *m)
{
	if (!u || !m || !OPTS_VALID(m, struct ustack_mapping))
		return -EINVAL;
	/* a caller with an older, shorter struct: the fields it has */
	if (m->sz < sizeof(*m)) {
		struct ustack_mapping c = { 0 };

		memcpy(&c, m, m->sz);
		return map_insert(u, &c, NULL, NULL);
	}
	return map_insert(u, m, NULL, NULL);
}

/* pid mode: the process's mapping at @pc, asked of procmaps. */
static int pid_mapping(struct ustack_unwinder *u, uint64_t pc, struct uw_map **out)
{
	struct ustack_mapping m = { .sz = sizeof(m) };
	struct ustack_vma vma;
	char path[4096];
	void *img = NULL;
	int ret;

	ret = ustack_procmaps__query(u->pm, pc, &vma);
	if (ret)
		return ret;
	m.start = vma.start;
	m.end = vma.end;
	m.file_offset = vma.pgoff;
	m.flags = (vma.flags & USTACK_VMA_EXEC) ? USTACK_MAPPING_EXEC : 0;
	if (vma.kind == USTACK_VMA_FILE) {
		if (ustack_procmaps__elf_path(u->pm, &vma, path, sizeof(path)))
			return -ENOENT;
		m.path = path;
	} else if (vma.kind == USTACK_VMA_VDSO && vma.end - vma.start <= IMAGE_MAX) {
		struct iovec local, remote;

		img = malloc(vma.end - vma.start);
		if (!img)
			return -ENOMEM;
		local = (struct iovec){ img, vma.end - vma.start };
		remote = (struct iovec){ (void *)(uintptr_t)vma.start, vma.end - vma.start };
		if (process_vm_readv(u->pid, &local, 1, &remote, 1, 0) != (ssize_t)local.iov_len) {
			free(img);
			return -ENOENT;
		}
		m.image = img;
		m.image_size = local.iov_len;
		m.file_offset = 0;
	} else {
		return -ENOENT; /* anonymous: no tables, not code for fp steps */
	}
	ret = map_insert(u, &m, vma.name ? vma.name : "?", out);
	free(img);
	return ret;
}

/* The mapping holding @pc, asking the source on a miss. */
static struct uw_map *map_of(struct ustack_unwinder *u, uint64_t pc)
{
	size_t i = map_lower_bound(u, pc);
	struct uw_map *out = NULL;

	if (i < u->nr && u->maps[i].start <= pc)
		return &u->maps[i];
	if (u->pm) {
		if (pid_mapping(u, pc, &out))
			return NULL;
	} else if (u->find_mapping) {
		struct ustack_mapping m = { .sz = sizeof(m) };

		if (u->find_mapping(u->find_ctx, pc, &m) || pc < m.start || pc >= m.end)
			return NULL;
		if (map_insert(u, &m, NULL, &out))
			return NULL;
	}
	return out;
}

/* Open @m's tables once; a build ID other than the expected one means the
 * file on disk is not the one that was mapped: its tables would be wrong. */
static struct ustack_modtab *map_tables(struct ustack_unwinder *u, struct uw_map *m)
{
	struct ustack_modtab *t;
	const char *path = m->path;
	char alt[4096];
	int n;

	if (m->tried)
		return m->mod;
	m->tried = 1;
	if (!m->image && u->find_table_file) {
		/* the embedder's file for this mapping's tables, if it has one */
		struct ustack_mapping q = {
			.sz = sizeof(q), .start = m->start, .end = m->end, .file_offset = m->off,
			.path = m->path, .flags = m->flags,
			.build_id = m->build_id_size ? m->build_id : NULL,
			.build_id_size = m->build_id_size,
		};

		alt[0] = 0;
		if (!u->find_table_file(u->find_table_ctx, &q, alt, sizeof(alt)) && alt[0] &&
		    memchr(alt, 0, sizeof(alt)))
			path = alt;
	}
	t = m->image ? ustack_modcache__get_mem(u->mc, m->start, m->image, m->image_size, m->name)
		     : ustack_modcache__get(u->mc, path);
	if (!t)
		return NULL;
	n = ustack_elf__build_id(ustack_modtab__elf(t), m->file_bid, sizeof(m->file_bid));
	m->file_bid_size = n > 0 ? (n < USTACK_BUILD_ID_MAX ? n : USTACK_BUILD_ID_MAX) : 0;
	if (m->build_id_size && ((size_t)m->file_bid_size != m->build_id_size ||
				 memcmp(m->file_bid, m->build_id, m->build_id_size))) {
		char want[2 * USTACK_BUILD_ID_MAX + 1], have[2 * USTACK_BUILD_ID_MAX + 1];

		ustack_hex(m->build_id, m->build_id_size, want);
		ustack_hex(m->file_bid, m->file_bid_size, have);
		pr_warn("%s: build ID %s, but the mapping had %s: not the mapped file, no "
			"unwind table or names from it\n", m->name, m->file_bid_size ? have : "(none)",
			want);
		ustack_modtab__put(t);
		m->file_bid_size = 0;
		return NULL;
	}
	m->mod = t;
	return t;
}

/* @pc -> the file's own vaddr. */
static int map_vaddr(struct uw_map *m, uint64_t pc, uint64_t *vaddr)
{
	return ustack_elf__offset_to_vaddr(ustack_modtab__elf(m->mod), pc - m->start + m->off, vaddr);
}

static int uw_find_row(void *ctx, uint64_t pc, struct ustack_row *row, unsigned int *method)
{
	struct ustack_unwinder *u = ctx;
	struct uw_map *m = map_of(u, pc);
	uint64_t vaddr;
	int ret;

	if (!m || !map_tables(u, m) || map_vaddr(m, pc, &vaddr))
		return -ENOENT;
	ret = ustack_modtab__find_row(m->mod, vaddr, row, method);
	if (!ret) {
		row->start = row->start - vaddr + pc;
		row->end = row->end - vaddr + pc;
	}
	return ret;
}

static int uw_is_code(void *ctx, uint64_t pc)
{
	struct uw_map *m = map_of(ctx, pc);

	return m && (m->flags & USTACK_MAPPING_EXEC);
}

static int uw_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct ustack_unwind_opts *o = ((struct ustack_unwinder *)ctx)->walk;

	if (o->stack && addr >= o->stack_addr && len <= o->stack_size &&
	    addr - o->stack_addr <= o->stack_size - len) {
		memcpy(buf, (const uint8_t *)o->stack + (addr - o->stack_addr), len);
		return 0;
	}
	return o->read ? o->read(o->read_ctx, addr, buf, len) : -EFAULT;
}

USTACK_API int ustack_unwinder__unwind(struct ustack_unwinder *u, const struct ustack_regs *regs,
				       const struct ustack_unwind_opts *opts,
				       struct ustack_frame *frames, int max, unsigned int *stop)
{
	struct ustack_unwind_opts o = { .sz = sizeof(o) };
	struct ustack_unwind_ops ops = { .find_row = uw_find_row, .read = uw_read,
					 .is_code = uw_is_code, .ctx = u };
	struct ustack_walk_opts w = { .sz = sizeof(w) };
	int n;

	if (!u || !regs || !opts || max < 0 || (max && !frames) ||
	    !OPTS_VALID(opts, struct ustack_unwind_opts))
		return -EINVAL;
	/* our full-size copy: fields an older caller lacks read as 0 */
	o.read = OPTS_GET(opts, read, NULL);
	o.read_ctx = OPTS_GET(opts, read_ctx, NULL);
	o.stack = OPTS_GET(opts, stack, NULL);
	o.stack_size = OPTS_GET(opts, stack_size, 0);
	o.stack_addr = OPTS_GET(opts, stack_addr, 0);
	o.flags = OPTS_GET(opts, flags, 0);
	o.bx = OPTS_GET(opts, bx, 0);
	o.has_bx = OPTS_GET(opts, has_bx, 0);
	if (!o.read && (!o.stack || !o.stack_size))
		return -EINVAL;
	if (o.stack && !o.read) {
		/* nothing outside the copy can be read: bound the walk by it */
		w.stack_lo = o.stack_addr;
		w.stack_hi = o.stack_addr + o.stack_size;
		w.hi_is_copy_end = 1;
	}
	w.first_is_return = !!(o.flags & USTACK_UNWIND_FIRST_IS_RETURN);
	w.fp_unknown = !!(o.flags & USTACK_UNWIND_FP_UNKNOWN);
	w.has_bx = !!o.has_bx;
	w.bx = o.bx;
	w.max_depth = max < USTACK_MAX_DEPTH ? max : USTACK_MAX_DEPTH;
	u->walk = &o;
	n = ustack_unwind(&ops, regs, &w, frames, max, stop);
	u->walk = NULL;
	return n;
}

USTACK_API int ustack_unwinder__describe(struct ustack_unwinder *u, const struct ustack_frame *f,
					 struct ustack_frame_info *info)
{
	struct ustack_frame_info r = { .sz = sizeof(r) };
	uint64_t lookup, vaddr, start;
	struct uw_map *m;

	/* an output struct: any sz from its first field on; a newer caller's
	 * fields we do not know are zeroed */
	if (!u || !f || !info || info->sz < offsetof(struct ustack_frame_info, path) + sizeof(r.path))
		return -EINVAL;
	lookup = f->pc - ((f->flags & USTACK_FRAME_EXACT_PC) ? 0 : 1);
	m = map_of(u, lookup);
	if (!m)
		return -ENOENT;
	r.path = m->name;
	r.map_start = m->start;
	r.file_offset = lookup - m->start + m->off;
	if (map_tables(u, m)) {
		r.has_table = 1;
		if (m->file_bid_size) {
			r.build_id = m->file_bid;
			r.build_id_size = m->file_bid_size;
		}
		if (!map_vaddr(m, lookup, &vaddr) &&
		    !ustack_elf__symbolize(ustack_modtab__elf(m->mod), vaddr, &r.symbol, &start))
			r.symbol_off = vaddr - start + (f->pc - lookup);
	}
	/* only the fields the caller's struct has; its sz stays as set */
	ustack_copy_out((char *)info + sizeof(size_t), info->sz - sizeof(size_t),
			(char *)&r + sizeof(size_t), sizeof(r) - sizeof(size_t));
	return 0;
}
