// SPDX-License-Identifier: MIT
/*
 * The address-space resolver: pc -> VMA -> (file offset, file id), with the
 * PROCMAP_QUERY ioctl when the kernel has it and the text maps otherwise.
 *
 * Hot path (ustack_procmaps__resolve): the mappings found earlier in the
 * same batch are tried first, so walking a stack costs at most one ioctl per
 * distinct mapping; known files are found by dev:inode in a hash table; no
 * allocation unless a file (or a named anonymous region) is new.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/log.h"
#include "common/opts.h"
#include "procmaps/procmaps.h"

static const char *const kind_names[] = {
	[USTACK_VMA_UNMAPPED] = "unmapped", [USTACK_VMA_FILE] = "file",
	[USTACK_VMA_ANON] = "anon",         [USTACK_VMA_JIT] = "jit",
	[USTACK_VMA_HEAP] = "heap",         [USTACK_VMA_STACK] = "stack",
	[USTACK_VMA_VDSO] = "vdso",         [USTACK_VMA_VVAR] = "vvar",
	[USTACK_VMA_VSYSCALL] = "vsyscall", [USTACK_VMA_SPECIAL] = "special",
};

const char *ustack_vma_kind_name(unsigned int kind)
{
	return kind < ARRAY_SIZE(kind_names) && kind_names[kind] ? kind_names[kind] : "unknown";
}

struct ustack_procmaps *pm_alloc(const struct ustack_procmaps_opts *opts)
{
	struct ustack_procmaps *pm = calloc(1, sizeof(*pm));

	if (!pm)
		return NULL;
	pm->maps_fd = -1;
	/* libbpf-style opts (checked by the caller with OPTS_VALID): read
	 * only the fields the caller's struct has */
	pm->flags = OPTS_GET(opts, flags, 0);
	pm->on_file_map = OPTS_GET(opts, on_file_map, NULL);
	pm->ctx = OPTS_GET(opts, ctx, NULL);
	if (OPTS_HAS(opts, id_key)) {
		pm->key[0] = opts->id_key[0];
		pm->key[1] = opts->id_key[1];
	}
	if (OPTS_GET(opts, name, NULL))
		snprintf(pm->name, sizeof(pm->name), "%s", opts->name);
	pm->errbuf = OPTS_GET(opts, errbuf, NULL);
	pm->errbuf_sz = OPTS_GET(opts, errbuf_sz, 0);
	if (pm->errbuf && pm->errbuf_sz)
		pm->errbuf[0] = 0;
	if (!pm->key[0] && !pm->key[1])
		pm_default_key(pm->key);
	return pm;
}

struct ustack_procmaps *ustack_procmaps__open(int pid, const struct ustack_procmaps_opts *opts)
{
	struct ustack_procmaps *pm;
	char path[64];
	int err;

	if (!OPTS_VALID(opts, struct ustack_procmaps_opts)) {
		errno = EINVAL;
		return NULL;
	}
	if (pid < 0) {
		OPTS_SET_ERR(opts, "pid %d: not a process id", pid);
		errno = EINVAL;
		return NULL;
	}
	pm = pm_alloc(opts);
	if (!pm) {
		errno = ENOMEM;
		return NULL;
	}
	pm->pid = pid ? pid : getpid();
	snprintf(path, sizeof(path), "/proc/%d/maps", pm->pid);
	if (!pm->name[0]) /* no opts->name (or an empty one) */
		snprintf(pm->name, sizeof(pm->name), "%s", path);
	pm->maps_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (pm->maps_fd < 0) {
		err = errno == ENOENT ? ESRCH : errno == EPERM ? EACCES : errno;
		if (pm->errbuf && pm->errbuf_sz)
			snprintf(pm->errbuf, pm->errbuf_sz, "%s: %s", path, strerror(err));
		goto fail;
	}
	if (!(pm->flags & USTACK_PROCMAPS_FORCE_TEXT) && pm_ioctl_probe(pm->maps_fd)) {
		pm->use_ioctl = 1;
		pm->namebuf = malloc(PATH_MAX + 1);
		if (!pm->namebuf) {
			err = ENOMEM;
			goto fail;
		}
	} else {
		err = -pm_text_read(pm);
		if (err) {
			if (err == EPERM)
				err = EACCES;
			goto fail;
		}
	}
	pm->errbuf = NULL;
	return pm;
fail:
	ustack_procmaps__close(pm);
	errno = err;
	return NULL;
}

struct ustack_procmaps *ustack_procmaps__open_text(const char *buf, size_t len,
						   const struct ustack_procmaps_opts *opts)
{
	struct ustack_procmaps *pm;
	int err;

	if (!OPTS_VALID(opts, struct ustack_procmaps_opts) || (!buf && len)) {
		errno = EINVAL;
		return NULL;
	}
	pm = pm_alloc(opts);
	if (!pm) {
		errno = ENOMEM;
		return NULL;
	}
	if (!pm->name[0])
		snprintf(pm->name, sizeof(pm->name), "maps");
	err = pm_text_parse(pm, buf ? buf : "", len);
	if (err) {
		ustack_procmaps__close(pm);
		errno = -err;
		return NULL;
	}
	pm->errbuf = NULL;
	return pm;
}

int ustack_procmaps__reload(struct ustack_procmaps *pm, const char *buf, size_t len)
{
	if (!pm)
		return -EINVAL;
	if (buf) {
		if (pm->use_ioctl)
			return -EINVAL;
		return pm_text_parse(pm, buf, len);
	}
	if (pm->use_ioctl)
		return 0; /* every ioctl query is fresh */
	if (pm->maps_fd < 0)
		return -EINVAL;
	return pm_text_read(pm);
}

void ustack_procmaps__close(struct ustack_procmaps *pm)
{
	if (!pm)
		return;
	if (pm->maps_fd >= 0)
		close(pm->maps_fd);
	free(pm->vmas);
	free(pm->text);
	free(pm->namebuf);
	pm_files_free(pm);
	free(pm);
}

int ustack_procmaps__uses_ioctl(const struct ustack_procmaps *pm)
{
	return pm ? pm->use_ioctl : 0;
}

int ustack_procmaps__pid(const struct ustack_procmaps *pm)
{
	return pm ? pm->pid : 0;
}

/* ---- ioctl mode ---- */

static int hull_touches(const struct pm_file *f, uint64_t start, uint64_t end)
{
	return start <= f->hi && end >= f->lo;
}

/*
 * Bind a file-backed VMA from a bare query to its file entry. A dev:inode
 * seen before, in or next to the address hull of its mappings, is the same
 * file; elsewhere, or never seen, one more query fetches the name (and the
 * build ID for a new file) to tell a second mapping of the same file from a
 * recycled inode.
 */
static int bind_file_ioctl(struct ustack_procmaps *pm, uint64_t addr, struct pm_vma *v)
{
	int32_t newest = pm_file_find_dev_inode(pm, v->dev_major, v->dev_minor, v->inode);
	uint8_t bid[USTACK_BUILD_ID_MAX];
	uint32_t bid_size = 0;
	struct pm_vma named;
	int32_t i, idx;
	int err, want_bid;

	for (i = newest; i >= 0; i = pm->files[i].prev_gen) {
		if (hull_touches(&pm->files[i], v->start, v->end)) {
			struct pm_file *f = &pm->files[i];

			if (v->start < f->lo)
				f->lo = v->start;
			if (v->end > f->hi)
				f->hi = v->end;
			v->file = i;
			v->name = f->path;
			v->flags |= f->flags & USTACK_VMA_DELETED;
			return 0;
		}
	}
	want_bid = !(pm->flags & USTACK_PROCMAPS_NO_KERNEL_BUILD_ID);
	err = pm_ioctl_query(pm, addr, 0, 1, want_bid, &named, bid, &bid_size);
	if (err)
		return err;
	if (named.start != v->start || named.inode != v->inode || named.dev_major != v->dev_major ||
	    named.dev_minor != v->dev_minor)
		*v = named; /* the mapping changed between the two queries: trust the newer */
	v->name = named.name;
	v->flags = named.flags;
	newest = pm_file_find_dev_inode(pm, v->dev_major, v->dev_minor, v->inode);
	for (i = newest; i >= 0; i = pm->files[i].prev_gen) {
		struct pm_file *f = &pm->files[i];

		if (f->path && v->name && strcmp(f->path, v->name))
			continue;
		if (v->start < f->lo)
			f->lo = v->start;
		if (v->end > f->hi)
			f->hi = v->end;
		v->file = i;
		return 0;
	}
	idx = pm_file_new(pm, USTACK_VMA_FILE, v->dev_major, v->dev_minor, v->inode, v->name,
			  v->flags, v->start, v->end,
			  newest >= 0 ? pm->files[newest].generation + 1 : 0, newest);
	if (idx < 0)
		return idx;
	if (bid_size && bid_size <= USTACK_BUILD_ID_MAX) {
		memcpy(pm->files[idx].build_id, bid, bid_size);
		pm->files[idx].build_id_size = bid_size;
		pm->files[idx].build_id_source = USTACK_BUILD_ID_KERNEL;
	}
	v->file = idx;
	return 0;
}

static int lookup_ioctl(struct ustack_procmaps *pm, uint64_t addr, uint64_t qflags, struct pm_vma *v)
{
	struct pm_vma named;
	unsigned int i;
	int err, tries = 0;

retry:
	err = pm_ioctl_query(pm, addr, qflags, 0, 0, v, NULL, NULL);
	if (err)
		return err;
	if (v->kind == USTACK_VMA_FILE)
		return bind_file_ioctl(pm, v->start, v);
	for (i = 0; i < PM_SPECIAL_CACHE; i++) {
		const struct pm_vma *c = &pm->special_cache[i];

		if (c->end && c->start == v->start && c->end == v->end && c->flags == v->flags) {
			*v = *c;
			return 0;
		}
	}
	err = pm_ioctl_query(pm, v->start, 0, 1, 0, &named, NULL, NULL);
	if (err)
		return err == -ENOENT ? 0 : err; /* unmapped meanwhile: keep the bare answer */
	if (named.start != v->start || named.kind == USTACK_VMA_FILE) {
		/* the mapping changed between the two queries: start over, a few times */
		if (++tries < 3)
			goto retry;
		return -EAGAIN;
	}
	*v = named;
	if (v->kind == USTACK_VMA_VDSO) {
		v->file = pm_file_lookup(pm, USTACK_VMA_VDSO, 0, 0, 0, v->name, v->start, v->end);
		if (v->file < 0)
			return v->file;
	}
	pm->special_cache[pm->special_next++ % PM_SPECIAL_CACHE] = *v;
	return 0;
}

/* ---- both modes ---- */

static int lookup(struct ustack_procmaps *pm, uint64_t addr, struct pm_vma *v, int *refreshed)
{
	const struct pm_vma *t;
	int err;

	if (pm->use_ioctl)
		return lookup_ioctl(pm, addr, 0, v);
	t = pm_text_find(pm, addr);
	if (!t && pm->maps_fd >= 0 && !(pm->flags & USTACK_PROCMAPS_NO_AUTO_REFRESH) &&
	    refreshed && !*refreshed) {
		/* a library loaded since the last read: re-read once per call */
		*refreshed = 1;
		err = pm_text_read(pm);
		if (err)
			return err;
		t = pm_text_find(pm, addr);
	}
	if (!t)
		return -ENOENT;
	*v = *t;
	return 0;
}

static void to_public(const struct ustack_procmaps *pm, const struct pm_vma *v, struct ustack_vma *out)
{
	out->start = v->start;
	out->end = v->end;
	out->pgoff = v->pgoff;
	out->inode = v->inode;
	out->dev_major = v->dev_major;
	out->dev_minor = v->dev_minor;
	out->flags = v->flags;
	out->kind = v->kind;
	out->name = v->name;
	out->file_id = 0;
	if (v->file >= 0 && (size_t)v->file < pm->nr_files) {
		const struct pm_file *f = &pm->files[v->file];

		out->file_id = f->id;
		if (f->path)
			out->name = f->path;
		out->flags |= f->flags & USTACK_VMA_DELETED;
	}
}

int ustack_procmaps__query(struct ustack_procmaps *pm, uint64_t addr, struct ustack_vma *vma)
{
	struct pm_vma v;
	int refreshed = 0, err;

	if (!pm || !vma)
		return -EINVAL;
	err = lookup(pm, addr, &v, &refreshed);
	if (err)
		return err;
	to_public(pm, &v, vma);
	return 0;
}

int ustack_procmaps__bounds(struct ustack_procmaps *pm, uint64_t addr, uint64_t *start,
			    uint64_t *end)
{
	struct pm_vma v;
	int refreshed = 0, err;

	if (!pm)
		return -EINVAL;
	/* the bare answer: lookup() would ask again for an anonymous
	 * mapping's name ([stack], [heap]) */
	err = pm->use_ioctl ? pm_ioctl_query(pm, addr, 0, 0, 0, &v, NULL, NULL)
			    : lookup(pm, addr, &v, &refreshed);
	if (err)
		return err;
	*start = v.start;
	*end = v.end;
	return 0;
}

int ustack_procmaps__next(struct ustack_procmaps *pm, uint64_t addr, uint32_t need,
			  struct ustack_vma *vma)
{
	uint32_t mask = USTACK_VMA_READ | USTACK_VMA_WRITE | USTACK_VMA_EXEC | USTACK_VMA_SHARED;
	struct pm_vma v;
	int err;

	if (!pm || !vma)
		return -EINVAL;
	need &= mask;
	if (pm->use_ioctl) {
		err = lookup_ioctl(pm, addr, PROCMAP_QUERY_COVERING_OR_NEXT_VMA | need, &v);
		if (err)
			return err;
		to_public(pm, &v, vma);
		return 0;
	}
	for (size_t i = pm_text_lower_bound(pm, addr); i < pm->nr_vmas; i++) {
		if ((pm->vmas[i].flags & need) == need) {
			to_public(pm, &pm->vmas[i], vma);
			return 0;
		}
	}
	return -ENOENT;
}

int ustack_procmaps__resolve(struct ustack_procmaps *pm, const uint64_t *pcs, size_t n,
			     struct ustack_resolved *out)
{
	struct pm_vma seen[PM_BATCH_VMAS];
	size_t nr_seen = 0, last = 0;
	int refreshed = 0, found = 0, err;

	if (!pm || (n && (!pcs || !out)))
		return -EINVAL;
	for (size_t k = 0; k < n; k++) {
		uint64_t pc = pcs[k];
		struct ustack_resolved *r = &out[k];
		const struct pm_vma *v = NULL;

		memset(r, 0, sizeof(*r));
		/* stacks revisit the same few mappings: try the last one, then the others */
		if (nr_seen && pc - seen[last].start < seen[last].end - seen[last].start) {
			v = &seen[last];
		} else {
			for (size_t j = 0; j < nr_seen; j++) {
				if (pc - seen[j].start < seen[j].end - seen[j].start) {
					v = &seen[j];
					last = j;
					break;
				}
			}
		}
		if (!v) {
			struct pm_vma nv;

			err = lookup(pm, pc, &nv, &refreshed);
			if (err == -ENOENT) {
				r->kind = USTACK_VMA_UNMAPPED;
				continue;
			}
			if (err)
				return err;
			last = nr_seen < PM_BATCH_VMAS ? nr_seen++ : (last + 1) % PM_BATCH_VMAS;
			seen[last] = nv;
			v = &seen[last];
		}
		found++;
		r->kind = v->kind;
		if (v->file >= 0) {
			r->offset = pc - v->start + v->pgoff;
			r->file_id = pm->files[v->file].id;
			err = pm_file_emit(pm, v->file);
			if (err < 0)
				return err;
			if (err > 0)
				r->flags |= USTACK_RESOLVED_NEW_FILE;
		} else {
			r->offset = pc;
		}
	}
	return found;
}

int ustack_procmaps__file_map(struct ustack_procmaps *pm, uint64_t file_id, struct ustack_file_map *fm)
{
	if (!pm || !fm)
		return -EINVAL;
	for (size_t i = 0; i < pm->nr_files; i++) {
		if (pm->files[i].id == file_id) {
			pm_file_info(pm, &pm->files[i]);
			pm_file_to_map(&pm->files[i], fm);
			return 0;
		}
	}
	return -ENOENT;
}

int ustack_procmaps__next_file_map(struct ustack_procmaps *pm, size_t *iter, struct ustack_file_map *fm)
{
	if (!pm || !iter || !fm)
		return -EINVAL;
	if (*iter >= pm->nr_emitted)
		return -ENOENT;
	pm_file_to_map(&pm->files[pm->emitted[*iter]], fm);
	(*iter)++;
	return 0;
}

int ustack_procmaps__elf_path(struct ustack_procmaps *pm, const struct ustack_vma *vma, char *buf,
			      size_t size)
{
	int n;

	if (!pm || !vma || !buf || !size)
		return -EINVAL;
	if (vma->kind != USTACK_VMA_FILE || pm->maps_fd < 0)
		return -ENOENT; /* recorded maps: the files of this host are not theirs */
	/* the mapping itself: right for deleted files and other mount namespaces */
	n = snprintf(buf, size, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pm->pid, vma->start, vma->end);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	if (!access(buf, R_OK))
		return 0;
	if (!vma->name || vma->name[0] != '/' || (vma->flags & USTACK_VMA_DELETED))
		return -ENOENT;
	n = snprintf(buf, size, "/proc/%d/root%s", pm->pid, vma->name);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	if (!access(buf, R_OK))
		return 0;
	return -ENOENT;
}
