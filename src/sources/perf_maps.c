// SPDX-License-Identifier: MIT
/* The recorder's picture of each process's executable mappings (perf_maps.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "elf/elf_file.h"
#include "sources/perf_maps.h"

#define PROC_BUCKETS 1024

struct recmaps_proc {
	uint32_t pid;
	struct recmaps_vma *v; /* sorted by start, not overlapping */
	uint32_t n, cap;
	struct recmaps_proc *next;
};

struct ustack_recmaps {
	struct recmaps_proc *buckets[PROC_BUCKETS];
	struct recmaps_file *files;
	uint32_t nr_files, cap_files;
	struct ustack_modcache *mc;
	uint32_t cur_pid;
	struct recmaps_proc *cur; /* last process looked up */
	int32_t vdso_file;
};

struct ustack_recmaps *ustack_recmaps__new(struct ustack_modcache *mc)
{
	struct ustack_recmaps *rm = calloc(1, sizeof(*rm));

	if (!rm)
		return NULL;
	rm->mc = mc;
	rm->vdso_file = -1;
	return rm;
}

static void proc_free(struct recmaps_proc *p)
{
	free(p->v);
	free(p);
}

void ustack_recmaps__free(struct ustack_recmaps *rm)
{
	if (!rm)
		return;
	for (int i = 0; i < PROC_BUCKETS; i++) {
		struct recmaps_proc *p = rm->buckets[i], *n;

		for (; p; p = n) {
			n = p->next;
			proc_free(p);
		}
	}
	for (uint32_t i = 0; i < rm->nr_files; i++) {
		free(rm->files[i].path);
		free(rm->files[i].debuglink);
	}
	free(rm->files);
	free(rm);
}

static struct recmaps_proc *proc_get(struct ustack_recmaps *rm, uint32_t pid, int create)
{
	struct recmaps_proc **b = &rm->buckets[pid % PROC_BUCKETS], *p;

	if (rm->cur && rm->cur->pid == pid)
		return rm->cur;
	for (p = *b; p; p = p->next)
		if (p->pid == pid)
			return rm->cur = p;
	if (!create)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->next = *b;
	*b = p;
	return rm->cur = p;
}

static void proc_drop(struct ustack_recmaps *rm, uint32_t pid)
{
	struct recmaps_proc **pp = &rm->buckets[pid % PROC_BUCKETS];

	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->pid == pid) {
			struct recmaps_proc *p = *pp;

			*pp = p->next;
			if (rm->cur == p)
				rm->cur = NULL;
			proc_free(p);
			return;
		}
	}
}

static int32_t file_get(struct ustack_recmaps *rm, uint32_t maj, uint32_t min, uint64_t ino,
			const uint8_t *bid, uint32_t bid_size, const char *path, uint32_t kind)
{
	struct recmaps_file *f;
	size_t plen = strlen(path);
	int deleted = 0;

	/* the kernel marks unlinked files in the name */
	if (plen > 10 && !strcmp(path + plen - 10, " (deleted)")) {
		plen -= 10;
		deleted = 1;
	}
	for (uint32_t i = 0; i < rm->nr_files; i++) {
		f = &rm->files[i];
		if (f->kind != kind || strlen(f->path) != plen || memcmp(f->path, path, plen))
			continue;
		if (ino && (f->ino != ino || f->maj != maj || f->min != min))
			continue;
		if (bid_size && f->build_id_size &&
		    (f->build_id_size != bid_size || memcmp(f->build_id, bid, bid_size)))
			continue;
		return (int32_t)i;
	}
	if (rm->nr_files == rm->cap_files) {
		uint32_t cap = rm->cap_files ? 2 * rm->cap_files : 32;
		struct recmaps_file *n = realloc(rm->files, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		rm->files = n;
		rm->cap_files = cap;
	}
	f = &rm->files[rm->nr_files];
	memset(f, 0, sizeof(*f));
	f->path = strndup(path, plen);
	if (!f->path)
		return -ENOMEM;
	f->file_id = rm->nr_files + 1;
	f->kind = kind;
	f->maj = maj;
	f->min = min;
	f->ino = ino;
	f->deleted = deleted;
	if (bid_size) {
		memcpy(f->build_id, bid, bid_size);
		f->build_id_size = bid_size;
	}
	return (int32_t)rm->nr_files++;
}

int ustack_recmaps__mmap(struct ustack_recmaps *rm, uint32_t pid, uint64_t start, uint64_t len,
			 uint64_t pgoff, uint32_t maj, uint32_t min, uint64_t ino,
			 const uint8_t *build_id, uint32_t build_id_size, const char *path)
{
	struct recmaps_proc *p = proc_get(rm, pid, 1);
	uint64_t end = start + len;
	struct recmaps_vma *out;
	int32_t file = -1;
	uint32_t i, j, k = 0;

	if (!p)
		return -ENOMEM;
	if (!len || end < start)
		return -EINVAL;
	if (path && path[0] == '/')
		file = file_get(rm, maj, min, ino, build_id, build_id_size, path, RECMAPS_FILE);
	else if (path && !strcmp(path, "[vdso]"))
		file = rm->vdso_file >= 0 ? rm->vdso_file
					  : (rm->vdso_file = file_get(rm, 0, 0, 0, NULL, 0, "[vdso]",
								      RECMAPS_VDSO));
	if (file < -1)
		return file;
	/* A new mapping replaces whatever it overlaps: keep the parts of the
	 * old ones outside it (still sorted), then insert it in order. */
	out = malloc((p->n + 2) * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (i = 0; i < p->n; i++) {
		struct recmaps_vma v = p->v[i];

		if (v.end <= start || v.start >= end) {
			out[k++] = v;
			continue;
		}
		if (v.start < start) {
			out[k] = v;
			out[k++].end = start;
		}
		if (v.end > end) {
			out[k] = v;
			out[k].pgoff += end - v.start;
			out[k++].start = end;
		}
	}
	for (j = 0; j < k && out[j].start < start; j++)
		;
	memmove(&out[j + 1], &out[j], (k - j) * sizeof(*out));
	out[j] = (struct recmaps_vma){ .start = start, .end = end, .pgoff = pgoff, .file = file };
	free(p->v);
	p->v = out;
	p->n = k + 1;
	p->cap = p->n + 1;
	return 0;
}

int ustack_recmaps__fork(struct ustack_recmaps *rm, uint32_t pid, uint32_t ppid)
{
	struct recmaps_proc *parent = proc_get(rm, ppid, 0), *child;

	proc_drop(rm, pid); /* a reused pid starts fresh */
	child = proc_get(rm, pid, 1);
	if (!child)
		return -ENOMEM;
	parent = proc_get(rm, ppid, 0);
	rm->cur = child;
	if (!parent || !parent->n)
		return 0;
	child->v = malloc(parent->cap * sizeof(*child->v));
	if (!child->v)
		return -ENOMEM;
	memcpy(child->v, parent->v, parent->n * sizeof(*child->v));
	child->n = parent->n;
	child->cap = parent->cap;
	return 0;
}

void ustack_recmaps__exec(struct ustack_recmaps *rm, uint32_t pid)
{
	struct recmaps_proc *p = proc_get(rm, pid, 0);

	if (p)
		p->n = 0;
}

void ustack_recmaps__exit(struct ustack_recmaps *rm, uint32_t pid)
{
	proc_drop(rm, pid);
}

int ustack_recmaps__synthesize(struct ustack_recmaps *rm, uint32_t pid)
{
	char path[64], line[4096 + 256];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ustack_recmaps__exec(rm, pid);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino;
		unsigned int maj, min;
		char perms[8];
		int name_at = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj,
			   &min, &ino, &name_at) < 7 || perms[2] != 'x')
			continue;
		line[strcspn(line, "\n")] = 0;
		if (!ustack_recmaps__mmap(rm, pid, start, end - start, off, maj, min, ino, NULL, 0,
					  name_at ? line + name_at : ""))
			n++;
	}
	fclose(f);
	return n;
}

const struct recmaps_vma *ustack_recmaps__find(struct ustack_recmaps *rm, uint32_t pid, uint64_t pc)
{
	struct recmaps_proc *p = proc_get(rm, pid, 0);
	uint32_t lo = 0, hi;

	if (!p)
		return NULL;
	hi = p->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (p->v[mid].end <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->n && pc >= p->v[lo].start && pc < p->v[lo].end)
		return &p->v[lo];
	return NULL;
}

struct recmaps_file *ustack_recmaps__file(struct ustack_recmaps *rm, int32_t idx)
{
	return idx >= 0 && (uint32_t)idx < rm->nr_files ? &rm->files[idx] : NULL;
}

struct recmaps_file *ustack_recmaps__file_by_id(struct ustack_recmaps *rm, uint64_t file_id)
{
	return file_id >= 1 && file_id <= rm->nr_files ? &rm->files[file_id - 1] : NULL;
}

/* Our own vDSO: the kernel maps the same image into every process. */
static struct ustack_modtab *vdso_tables(struct ustack_recmaps *rm)
{
	const uint8_t *img = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	FILE *f;
	char line[256];
	unsigned long long s, e;
	struct ustack_modtab *m = NULL;

	if (!img)
		return NULL;
	f = fopen("/proc/self/maps", "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &s, &e) == 2 &&
		    s == (uintptr_t)img) {
			m = ustack_modcache__get_mem(rm->mc, 0x7664736f, img, e - s, "[vdso]");
			break;
		}
	}
	if (f)
		fclose(f);
	return m;
}

/* Open a file of process @pid: the mapping's map_files entry while the
 * process lives (deleted files, other mount namespaces), else through its
 * root, else by path. */
static struct ustack_modtab *file_tables(struct ustack_recmaps *rm, struct recmaps_file *f,
					 uint32_t pid, const struct recmaps_vma *v)
{
	char path[4096 + 64];
	struct ustack_modtab *m;

	if (f->kind == RECMAPS_VDSO)
		return vdso_tables(rm);
	if (v) {
		snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
			 (unsigned long long)v->start, (unsigned long long)v->end);
		if ((m = ustack_modcache__get(rm->mc, path)))
			return m;
	}
	snprintf(path, sizeof(path), "/proc/%u/root%s", pid, f->path);
	if ((m = ustack_modcache__get(rm->mc, path)))
		return m;
	return f->deleted ? NULL : ustack_modcache__get(rm->mc, f->path);
}

/* A reference to the tables of @f (the caller puts it): the cached ones
 * while they last, else the file opened again. */
static struct ustack_modtab *file_mod(struct ustack_recmaps *rm, struct recmaps_file *f,
				      uint32_t pid, const struct recmaps_vma *v)
{
	struct ustack_modtab *m;

	if (f->mod_failed)
		return NULL;
	if ((m = ustack_modcache__lookup(rm->mc, f->mod)))
		return m;
	m = file_tables(rm, f, pid, v);
	f->mod = ustack_modtab__ref(m);
	/* without the mapping only the path was tried: map_files may work */
	f->mod_failed = !m && v;
	return m;
}

void ustack_recmaps__file_info(struct ustack_recmaps *rm, struct recmaps_file *f, uint32_t pid)
{
	struct ustack_modtab *m;
	struct ustack_elf *elf;
	const char *name;
	uint8_t id[20];
	uint32_t crc;
	int n;

	if (f->info_done)
		return;
	f->info_done = 1;
	m = file_mod(rm, f, pid, NULL);
	if (!m)
		return;
	elf = ustack_modtab__elf(m);
	if (!f->build_id_size && (n = ustack_elf__build_id(elf, id, sizeof(id))) > 0) {
		f->build_id_size = n < 20 ? n : 20;
		memcpy(f->build_id, id, f->build_id_size);
	}
	if (!ustack_elf__debuglink(elf, &name, &crc)) {
		f->debuglink = strdup(name);
		f->debuglink_crc = crc;
	}
	ustack_modtab__put(m);
}

void ustack_recmaps__set_pid(struct ustack_recmaps *rm, uint32_t pid)
{
	rm->cur_pid = pid;
}

int ustack_recmaps__find_row(void *ctx, uint64_t pc, struct ustack_row *row, unsigned int *method)
{
	struct ustack_recmaps *rm = ctx;
	const struct recmaps_vma *v = ustack_recmaps__find(rm, rm->cur_pid, pc);
	struct recmaps_file *f;
	struct ustack_modtab *m;
	uint64_t vaddr;
	int ret;

	if (!v || !(f = ustack_recmaps__file(rm, v->file)))
		return -ENOENT;
	m = file_mod(rm, f, rm->cur_pid, v);
	if (!m)
		return -ENOENT;
	ret = ustack_elf__offset_to_vaddr(ustack_modtab__elf(m), pc - v->start + v->pgoff, &vaddr)
		      ? -ENOENT
		      : ustack_modtab__find_row(m, vaddr, row, method);
	if (!ret) {
		row->start = row->start - vaddr + pc;
		row->end = row->end - vaddr + pc;
	}
	ustack_modtab__put(m);
	return ret;
}

int ustack_recmaps__is_code(void *ctx, uint64_t pc)
{
	struct ustack_recmaps *rm = ctx;

	return ustack_recmaps__find(rm, rm->cur_pid, pc) != NULL;
}
