// SPDX-License-Identifier: MIT
/* Unwinding another process: mapping lookup and file tables (remote.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf_file.h"
#include "procmaps/procmaps.h"
#include "unwind/remote.h"

/* Largest vDSO image we copy (it is 8 KiB on x86-64 today). */
#define VDSO_MAX (64u * 1024)

void ustack_remote__init(struct ustack_remote *r, struct ustack_procmaps *pm,
			 struct ustack_modcache *mc,
			 int (*read)(void *ctx, uint64_t addr, void *buf, size_t len),
			 void *read_ctx)
{
	memset(r, 0, sizeof(*r));
	r->pm = pm;
	r->mc = mc;
	r->read = read;
	r->read_ctx = read_ctx;
}

static void remote_vma_clear(struct remote_vma *v)
{
	ustack_modtab__put(v->mod);
	v->mod = NULL;
	v->valid = 0;
}

void ustack_remote__flush(struct ustack_remote *r)
{
	for (unsigned int i = 0; i < REMOTE_VMA_CACHE; i++)
		remote_vma_clear(&r->vmas[i]);
}

void ustack_remote__fini(struct ustack_remote *r)
{
	ustack_remote__flush(r);
}

static struct ustack_modtab *remote_tables(struct ustack_remote *r, const struct ustack_vma *vma)
{
	char path[4096];

	if (vma->kind == USTACK_VMA_FILE) {
		if (ustack_procmaps__elf_path(r->pm, vma, path, sizeof(path)))
			return NULL;
		return ustack_modcache__get(r->mc, path);
	}
	if (vma->kind == USTACK_VMA_VDSO && r->read && vma->end - vma->start <= VDSO_MAX) {
		size_t size = vma->end - vma->start;
		void *img = malloc(size);
		struct ustack_modtab *m = NULL;

		if (img && !r->read(r->read_ctx, vma->start, img, size))
			m = ustack_modcache__get_mem(r->mc, vma->start, img, size, "[vdso]");
		free(img);
		return m;
	}
	return NULL;
}

int ustack_remote__preload(struct ustack_remote *r)
{
	struct ustack_vma vma;
	uint64_t addr = 0;
	int n = 0;

	while (!ustack_procmaps__next(r->pm, addr, USTACK_VMA_EXEC, &vma)) {
		struct ustack_modtab *m = remote_tables(r, &vma);

		/* cached now (as far as the cache holds: a process with more
		 * files than that has some opened again on use) */
		n += !!m;
		if (r->next_slot < REMOTE_VMA_CACHE) {
			/* and the mapping too: a stop that meets it needs no
			 * query, path lookup or stat (about 15 us each) */
			struct remote_vma *v = &r->vmas[r->next_slot++];

			remote_vma_clear(v);
			v->vma = vma;
			v->mod = m;
			v->valid = 1;
			v->gen = ++r->gen;
		} else {
			ustack_modtab__put(m);
		}
		if (vma.end <= addr)
			break;
		addr = vma.end;
	}
	return n;
}

static struct remote_vma *remote_vma_of(struct ustack_remote *r, uint64_t pc)
{
	struct remote_vma *v;

	for (unsigned int i = 0; i < REMOTE_VMA_CACHE; i++) {
		v = &r->vmas[i];
		if (v->valid && pc >= v->vma.start && pc < v->vma.end)
			return v;
	}
	v = &r->vmas[r->next_slot++ % REMOTE_VMA_CACHE];
	remote_vma_clear(v);
	if (ustack_procmaps__query(r->pm, pc, &v->vma))
		return NULL;
	v->mod = remote_tables(r, &v->vma);
	v->valid = 1;
	v->gen = ++r->gen;
	return v;
}

/* pc -> the file's own vaddr through the mapping's file offset. */
static int remote_vaddr(const struct remote_vma *v, uint64_t pc, uint64_t *vaddr, uint64_t *off)
{
	*off = pc - v->vma.start + v->vma.pgoff;
	return ustack_elf__offset_to_vaddr(ustack_modtab__elf(v->mod), *off, vaddr);
}

int ustack_remote__find_row(void *ctx, uint64_t pc, struct ustack_row *row, unsigned int *method)
{
	struct ustack_remote *r = ctx;
	struct remote_vma *v = remote_vma_of(r, pc);
	struct remote_row *c = &r->rows[((pc * 0x9e3779b97f4a7c15ull) >> 32) & (REMOTE_ROW_CACHE - 1)];
	uint64_t vaddr, off;
	int ret;

	if (!v || !v->mod)
		return -ENOENT;
	if (c->pc == pc && c->gen == v->gen) {
		*row = c->row;
		*method = c->method;
		return 0;
	}
	if (remote_vaddr(v, pc, &vaddr, &off))
		return -ENOENT;
	ret = ustack_modtab__find_row(v->mod, vaddr, row, method);
	if (!ret) {
		/* back to runtime addresses */
		row->start = row->start - vaddr + pc;
		row->end = row->end - vaddr + pc;
		c->pc = pc;
		c->gen = v->gen;
		c->method = *method;
		c->row = *row;
	}
	return ret;
}

int ustack_remote__read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct ustack_remote *r = ctx;

	return r->read ? r->read(r->read_ctx, addr, buf, len) : -EFAULT;
}

int ustack_remote__is_code(void *ctx, uint64_t pc)
{
	struct remote_vma *v = remote_vma_of(ctx, pc);

	return v && (v->vma.flags & USTACK_VMA_EXEC);
}

int ustack_remote__stack_range(void *ctx, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	struct ustack_remote *r = ctx;

	/* not through the mapping cache: a stack would push out a code
	 * mapping that the next stop then has to query again */
	return ustack_procmaps__bounds(r->pm, sp, lo, hi);
}

int ustack_remote__describe(struct ustack_remote *r, uint64_t lookup_pc,
			    const struct ustack_vma **vma, const char **sym, uint64_t *sym_off,
			    uint64_t *file_off)
{
	struct remote_vma *v = remote_vma_of(r, lookup_pc);
	uint64_t vaddr, start;

	if (!v)
		return -ENOENT;
	*vma = &v->vma;
	*file_off = lookup_pc - v->vma.start + v->vma.pgoff;
	if (!sym) /* no name asked for: no symbol table is read */
		return 0;
	*sym = NULL;
	*sym_off = 0;
	if (v->mod && !remote_vaddr(v, lookup_pc, &vaddr, file_off) &&
	    !ustack_elf__symbolize(ustack_modtab__elf(v->mod), vaddr, sym, &start))
		*sym_off = vaddr - start;
	return 0;
}

struct ustack_modtab *ustack_remote__module(struct ustack_remote *r, uint64_t pc)
{
	struct remote_vma *v = remote_vma_of(r, pc);

	return v ? ustack_modtab__get(v->mod) : NULL;
}
