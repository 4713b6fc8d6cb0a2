// SPDX-License-Identifier: MIT
/*
 * Source lines and inline chains already read from DWARF, cached by build
 * ID.
 *
 * A text report spends most of its time in libdw: loading it, opening the
 * DWARF of every file with frames (for libc, its 12.7 MB debug file), the
 * CU index, the DIE walks and line programs of the units the frames fall
 * in. Reports of the same program, or of the same trace in another format,
 * ask for the same addresses again. The answers of one DWARF file are kept
 * in <cache>/lines/<build id>.lines (ustack_cache_dir()), and a report whose
 * addresses are all there does not load libdw at all.
 *
 * A cache file says which DWARF file it was read from (path, size, mtime,
 * inode) and is used only for that same file: a replaced, rebuilt or
 * corrupted copy under the same build ID starts a new cache. The file is
 * read whole and checked (CRC, bounds, order) before any of it is used.
 *
 * The file (little-endian, sizes in bytes):
 *   header       128: magic "USLINES1", header size, CRC-32 of the rest,
 *                     counts, the DWARF file's identity, flags, the build ID
 *                     (flag NO_DWARF: the file has no DWARF, and no entries)
 *   entries      16 each: link-time address (strictly increasing), first
 *                     level, number of levels (0..USTACK_DWARF_MAX_LEVELS)
 *   levels       28 each: name, linkage name, file (string offsets or
 *                     NO_STR), line, column, decl line, inlined (0/1)
 *   strings      NUL-terminated, the last byte NUL
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ustack/hashmap.h>

#include "common/cache_dir.h"
#include "common/compiler.h"
#include "common/crc32.h"
#include "common/grow.h"
#include "common/log.h"
#include "elf/elf_file.h"
#include "symbolize/line_cache.h"

#define LC_MAGIC "USLINES1"
#define NO_STR UINT32_MAX
#define LC_NO_DWARF 0x1u
#define MAX_ID 64

struct lc_header {
	char magic[8];
	uint32_t header_size;
	uint32_t crc;         /* of everything after the header */
	uint32_t nentries, nlevels, strtab_size;
	uint32_t dwarf_path;  /* string offset */
	uint64_t dwarf_size, dwarf_ino;
	int64_t dwarf_mtime_sec;
	uint32_t dwarf_mtime_nsec;
	uint8_t id_size, flags, pad[2];
	uint8_t id[MAX_ID];
};

struct lc_entry {
	uint64_t addr;
	uint32_t first, count;
};

struct lc_level {
	uint32_t name, linkage, file;
	uint32_t line, column, decl_line, inlined;
};

_Static_assert(sizeof(struct lc_header) == 128, "line cache header layout");
_Static_assert(sizeof(struct lc_entry) == 16, "line cache entry layout");
_Static_assert(sizeof(struct lc_level) == 28, "line cache level layout");

struct ustack_line_cache {
	char *dir, *file;            /* <cache>/lines and the cache file; NULL: from an image */
	/* the DWARF file the answers come from */
	char *dwarf_path;
	uint64_t dwarf_size, dwarf_ino;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint8_t id[MAX_ID];
	uint8_t id_size;
	/* read from the cache file, checked */
	uint8_t *img;
	const struct lc_entry *ents;
	const struct lc_level *lvls;
	const char *strtab;
	size_t nents;
	/* added since */
	struct lc_entry *add;
	size_t nadd, add_cap;
	struct ustack_dwarf_level *addlv;
	size_t naddlv, addlv_cap;
	struct ustack_u64map *add_idx; /* addr -> index + 1 in add */
	struct ustack_u64map *copies;  /* caller's string pointer -> our copy */
	int dropped;
	int no_dwarf;  /* the DWARF file has no DWARF (read, or found now) */
	int dirty;     /* no_dwarf found now: to be written */
	size_t saved;  /* entries added that a save wrote already */
};

static int corrupt(const char *name, size_t off, const char *what)
{
	pr_warn("%s: corrupt line cache at offset %zu (%s): not used, rewritten from DWARF\n", name,
		off, what);
	errno = EBADMSG;
	return -EBADMSG;
}

/* Check @img (@len bytes, malloc'd, taken by @c on success) and point @c at
 * its parts. */
static int parse(struct ustack_line_cache *c, uint8_t *img, size_t len, const char *name)
{
	struct lc_header h;
	const struct lc_entry *e;
	const struct lc_level *l;
	const char *strtab;
	uint64_t need;

	if (len < sizeof(h))
		return corrupt(name, len, "shorter than its header");
	memcpy(&h, img, sizeof(h));
	if (memcmp(h.magic, LC_MAGIC, 8))
		return corrupt(name, 0, "not a line cache");
	if (h.header_size != sizeof(h))
		return corrupt(name, 8, "header size");
	if (!h.id_size || h.id_size > MAX_ID)
		return corrupt(name, offsetof(struct lc_header, id_size), "build ID size");
	if ((h.flags & ~LC_NO_DWARF) || ((h.flags & LC_NO_DWARF) && h.nentries))
		return corrupt(name, offsetof(struct lc_header, flags), "flags");
	if (h.nentries > USTACK_LINE_CACHE_MAX_ENTRIES)
		return corrupt(name, offsetof(struct lc_header, nentries), "too many entries");
	if (h.nlevels > (uint64_t)h.nentries * USTACK_DWARF_MAX_LEVELS)
		return corrupt(name, offsetof(struct lc_header, nlevels), "too many levels");
	need = sizeof(h) + (uint64_t)h.nentries * sizeof(*e) + (uint64_t)h.nlevels * sizeof(*l) +
	       h.strtab_size;
	if (need != len)
		return corrupt(name, offsetof(struct lc_header, strtab_size),
			       "sizes do not add up to the file's");
	if (ustack_crc32(0, img + sizeof(h), len - sizeof(h)) != h.crc)
		return corrupt(name, offsetof(struct lc_header, crc), "CRC mismatch");
	e = (const struct lc_entry *)(img + sizeof(h));
	l = (const struct lc_level *)(e + h.nentries);
	strtab = (const char *)(l + h.nlevels);
	if (!h.strtab_size || strtab[h.strtab_size - 1])
		return corrupt(name, (size_t)((const uint8_t *)strtab - img), "strings not terminated");
	if (h.dwarf_path >= h.strtab_size)
		return corrupt(name, offsetof(struct lc_header, dwarf_path), "DWARF path");
	for (uint32_t i = 0; i < h.nentries; i++) {
		size_t off = (size_t)((const uint8_t *)&e[i] - img);

		if (i && e[i].addr <= e[i - 1].addr)
			return corrupt(name, off, "addresses out of order");
		if (e[i].count > USTACK_DWARF_MAX_LEVELS || e[i].first > h.nlevels ||
		    e[i].count > h.nlevels - e[i].first)
			return corrupt(name, off + 8, "levels out of bounds");
	}
	for (uint32_t i = 0; i < h.nlevels; i++) {
		size_t off = (size_t)((const uint8_t *)&l[i] - img);

		if ((l[i].name != NO_STR && l[i].name >= h.strtab_size) ||
		    (l[i].linkage != NO_STR && l[i].linkage >= h.strtab_size) ||
		    (l[i].file != NO_STR && l[i].file >= h.strtab_size))
			return corrupt(name, off, "string offset out of bounds");
		if (l[i].inlined > 1)
			return corrupt(name, off + offsetof(struct lc_level, inlined), "inlined flag");
	}
	c->img = img;
	c->ents = e;
	c->nents = h.nentries;
	c->lvls = l;
	c->strtab = strtab;
	return 0;
}

/* The header of a checked image. */
static const struct lc_header *header(const struct ustack_line_cache *c)
{
	return (const struct lc_header *)c->img;
}

static struct ustack_line_cache *cache_new(void)
{
	struct ustack_line_cache *c = calloc(1, sizeof(*c));

	if (c && (!(c->add_idx = ustack_u64map__new()) || !(c->copies = ustack_u64map__new()))) {
		ustack_line_cache__free(c);
		return NULL;
	}
	return c;
}

static int read_whole(int fd, uint8_t **out, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	size_t done = 0;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)USTACK_LINE_CACHE_MAX_BYTES)
		return -EFBIG;
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf)
		return -ENOMEM;
	while (done < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + done, (size_t)st.st_size - done);

		if (r <= 0)
			break;
		done += (size_t)r;
	}
	*out = buf;
	*len = done;
	return 0;
}

struct ustack_line_cache *ustack_line_cache__open(const uint8_t *id, size_t id_size,
						  const char *dwarf_path)
{
	char buf[PATH_MAX], hex[2 * MAX_ID + 1];
	const char *cd = ustack_cache_dir(buf, sizeof(buf));
	struct ustack_line_cache *c;
	struct stat st;
	uint8_t *img = NULL;
	size_t len = 0;
	int fd;

	if (!*cd || !id_size || id_size > MAX_ID || !dwarf_path || stat(dwarf_path, &st))
		return NULL;
	c = cache_new();
	if (!c)
		return NULL;
	ustack_hex(id, id_size, hex);
	c->id_size = (uint8_t)id_size;
	memcpy(c->id, id, id_size);
	c->dwarf_size = (uint64_t)st.st_size;
	c->dwarf_ino = (uint64_t)st.st_ino;
	c->mtime_sec = st.st_mtim.tv_sec;
	c->mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
	{
		char *dir = NULL, *file = NULL;

		if (asprintf(&dir, "%s/lines", cd) < 0)
			dir = NULL;
		else if (asprintf(&file, "%s/%s.lines", dir, hex) < 0)
			file = NULL;
		c->dir = dir;
		c->file = file;
	}
	if (!(c->dwarf_path = strdup(dwarf_path)) || !c->dir || !c->file) {
		ustack_line_cache__free(c);
		return NULL;
	}
	fd = open(c->file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return c; /* none yet */
	if (!read_whole(fd, &img, &len)) {
		if (parse(c, img, len, c->file)) {
			free(img);
		} else {
			const struct lc_header *h = header(c);

			/* written from another file of this build ID, or an
			 * older state of this one: start again */
			if (h->id_size != id_size || memcmp(h->id, id, id_size) ||
			    strcmp(c->strtab + h->dwarf_path, dwarf_path) ||
			    h->dwarf_size != c->dwarf_size || h->dwarf_ino != c->dwarf_ino ||
			    h->dwarf_mtime_sec != c->mtime_sec ||
			    h->dwarf_mtime_nsec != c->mtime_nsec) {
				pr_debug("%s: written from another state of %s: not used\n", c->file,
					 dwarf_path);
				free(c->img);
				c->img = NULL;
				c->ents = NULL;
				c->lvls = NULL;
				c->strtab = NULL;
				c->nents = 0;
			} else {
				ustack_cache_touch(fd); /* trims keep it longer */
				c->no_dwarf = !!(h->flags & LC_NO_DWARF);
				if (c->no_dwarf)
					pr_debug("%s: %s has no DWARF\n", c->file, dwarf_path);
				else
					pr_debug("%s: %zu addresses of %s\n", c->file, c->nents,
						 dwarf_path);
			}
		}
	}
	close(fd);
	return c;
}

struct ustack_line_cache *ustack_line_cache__from_image(const void *img, size_t len,
							const char *name)
{
	struct ustack_line_cache *c = cache_new();
	const struct lc_header *h;
	uint8_t *copy;

	if (!c)
		return NULL;
	copy = malloc(len ? len : 1);
	if (!copy) {
		ustack_line_cache__free(c);
		return NULL;
	}
	memcpy(copy, img, len);
	if (parse(c, copy, len, name)) {
		free(copy);
		ustack_line_cache__free(c);
		errno = EBADMSG;
		return NULL;
	}
	h = header(c);
	c->id_size = h->id_size;
	memcpy(c->id, h->id, sizeof(c->id));
	c->dwarf_size = h->dwarf_size;
	c->dwarf_ino = h->dwarf_ino;
	c->mtime_sec = h->dwarf_mtime_sec;
	c->mtime_nsec = h->dwarf_mtime_nsec;
	c->no_dwarf = !!(h->flags & LC_NO_DWARF);
	if (!(c->dwarf_path = strdup(c->strtab + h->dwarf_path))) {
		ustack_line_cache__free(c);
		return NULL;
	}
	return c;
}

static const char *str_at(const struct ustack_line_cache *c, uint32_t off)
{
	return off == NO_STR ? NULL : c->strtab + off;
}

/* Index of @addr among the entries read, or -1. */
static long find_read(const struct ustack_line_cache *c, uint64_t addr)
{
	size_t n = c->nents ? ustack_count_le_u64(c->ents, c->nents, sizeof(*c->ents),
						  offsetof(struct lc_entry, addr), addr) : 0;

	return n && c->ents[n - 1].addr == addr ? (long)(n - 1) : -1;
}

int ustack_line_cache__get(struct ustack_line_cache *c, uint64_t addr,
			   struct ustack_dwarf_level *out)
{
	long i = find_read(c, addr);
	uint64_t v;

	if (i >= 0) {
		const struct lc_entry *e = &c->ents[i];

		for (uint32_t k = 0; k < e->count; k++) {
			const struct lc_level *l = &c->lvls[e->first + k];

			out[k] = (struct ustack_dwarf_level){
				.name = str_at(c, l->name),
				.linkage = str_at(c, l->linkage),
				.file = str_at(c, l->file),
				.line = l->line,
				.column = l->column,
				.inlined = (int)l->inlined,
				.decl_line = l->decl_line,
			};
		}
		return (int)e->count;
	}
	if (ustack_u64map__get(c->add_idx, addr, &v)) {
		const struct lc_entry *e = &c->add[v - 1];

		memcpy(out, &c->addlv[e->first], e->count * sizeof(*out));
		return (int)e->count;
	}
	return -ENOENT;
}

/* Our copy of the caller's string @s (NULL stays NULL), made once per
 * pointer: libdw hands out the same pointer for the same string. */
static int copy_str(struct ustack_line_cache *c, const char *s, const char **out)
{
	uint64_t *slot;
	int isnew;

	*out = NULL;
	if (!s)
		return 0;
	slot = ustack_u64map__slot(c->copies, (uintptr_t)s, &isnew);
	if (!slot)
		return -ENOMEM;
	if (isnew) {
		char *d = strdup(s);

		if (!d) {
			ustack_u64map__delete(c->copies, (uintptr_t)s, NULL);
			return -ENOMEM;
		}
		*slot = (uintptr_t)d;
	}
	*out = (const char *)(uintptr_t)*slot;
	return 0;
}

int ustack_line_cache__put(struct ustack_line_cache *c, uint64_t addr,
			   const struct ustack_dwarf_level *lv, int n)
{
	struct lc_entry *e;
	int err;

	if (n < 0 || n > USTACK_DWARF_MAX_LEVELS)
		return -EINVAL;
	if (c->dropped || c->no_dwarf || find_read(c, addr) >= 0 ||
	    ustack_u64map__get(c->add_idx, addr, NULL))
		return 0;
	if (c->nents + c->nadd >= USTACK_LINE_CACHE_MAX_ENTRIES)
		return -ENOSPC;
	if (ustack_grow((void **)&c->add, &c->add_cap, c->nadd + 1, sizeof(*c->add), 64) ||
	    ustack_grow((void **)&c->addlv, &c->addlv_cap, c->naddlv + (size_t)n, sizeof(*c->addlv), 64))
		return -ENOMEM;
	for (int k = 0; k < n; k++) {
		struct ustack_dwarf_level *d = &c->addlv[c->naddlv + (size_t)k];

		*d = lv[k];
		d->inlined = !!lv[k].inlined;
		if ((err = copy_str(c, lv[k].name, &d->name)) ||
		    (err = copy_str(c, lv[k].linkage, &d->linkage)) ||
		    (err = copy_str(c, lv[k].file, &d->file)))
			return err;
	}
	if (ustack_u64map__put(c->add_idx, addr, c->nadd + 1))
		return -ENOMEM;
	e = &c->add[c->nadd++];
	e->addr = addr;
	e->first = (uint32_t)c->naddlv;
	e->count = (uint32_t)n;
	c->naddlv += (size_t)n;
	return 0;
}

int ustack_line_cache__no_dwarf(const struct ustack_line_cache *c)
{
	return c->no_dwarf;
}

void ustack_line_cache__set_no_dwarf(struct ustack_line_cache *c)
{
	if (c->no_dwarf || c->nents || c->nadd || c->dropped)
		return;
	c->no_dwarf = 1;
	c->dirty = 1;
}

void ustack_line_cache__drop(struct ustack_line_cache *c)
{
	if (!c || c->dropped)
		return;
	c->dropped = 1;
	/* the file read or written was from this DWARF: it goes with it */
	if ((c->img || c->saved) && c->file)
		unlink(c->file);
}

/* ---- writing ------------------------------------------------------------ */

struct out {
	uint8_t *p;
	size_t len, cap;
	struct ustack_u64map *strs; /* FNV-1a of a string -> its offset in the strings */
	struct lc_entry *ents;
	size_t nents;
	struct lc_level *lvls;
	size_t nlvls;
};

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

/* The offset of @s in the strings being built (NO_STR for NULL). */
static int intern(struct out *o, const char *s, uint32_t *off)
{
	uint64_t h, v;
	size_t n;

	*off = NO_STR;
	if (!s)
		return 0;
	h = fnv1a(s);
	if (ustack_u64map__get(o->strs, h, &v) && !strcmp((const char *)o->p + v, s)) {
		*off = (uint32_t)v;
		return 0;
	}
	n = strlen(s) + 1;
	if (o->len + n > USTACK_LINE_CACHE_MAX_BYTES)
		return -ENOSPC;
	if (ustack_grow((void **)&o->p, &o->cap, o->len + n, 1, 4096))
		return -ENOMEM;
	memcpy(o->p + o->len, s, n);
	*off = (uint32_t)o->len;
	/* a hash collision keeps the first string's offset: the second is
	 * written again when it comes back */
	if (!ustack_u64map__get(o->strs, h, NULL) && ustack_u64map__put(o->strs, h, o->len))
		return -ENOMEM;
	o->len += n;
	return 0;
}

static int emit(struct out *o, uint64_t addr, const struct ustack_dwarf_level *lv, int n)
{
	struct lc_entry *e = &o->ents[o->nents++];
	int err;

	e->addr = addr;
	e->first = (uint32_t)o->nlvls;
	e->count = (uint32_t)n;
	for (int k = 0; k < n; k++) {
		struct lc_level *l = &o->lvls[o->nlvls++];

		if ((err = intern(o, lv[k].name, &l->name)) ||
		    (err = intern(o, lv[k].linkage, &l->linkage)) ||
		    (err = intern(o, lv[k].file, &l->file)))
			return err;
		l->line = lv[k].line;
		l->column = lv[k].column;
		l->decl_line = lv[k].decl_line;
		l->inlined = !!lv[k].inlined;
	}
	return 0;
}

static int cmp_add(const void *a, const void *b, void *arg)
{
	const struct lc_entry *add = arg;
	uint64_t x = add[*(const size_t *)a].addr, y = add[*(const size_t *)b].addr;

	return x < y ? -1 : x > y;
}

int ustack_line_cache__image(struct ustack_line_cache *c, void **img, size_t *len)
{
	struct out o = { 0 };
	struct lc_header h = { 0 };
	size_t total_lv = c->naddlv, *order = NULL, i = 0, j = 0, at;
	uint32_t path_off;
	int err = -ENOMEM;

	/* entries read may share levels: each is written with its own */
	for (size_t k = 0; k < c->nents; k++)
		total_lv += c->ents[k].count;
	/* what would not fit in a cache file is not allocated */
	if (sizeof(h) + (c->nents + c->nadd) * sizeof(*o.ents) + total_lv * sizeof(*o.lvls) >
	    USTACK_LINE_CACHE_MAX_BYTES)
		return -ENOSPC;
	o.strs = ustack_u64map__new();
	o.ents = malloc((c->nents + c->nadd + 1) * sizeof(*o.ents));
	o.lvls = malloc((total_lv + 1) * sizeof(*o.lvls));
	order = malloc((c->nadd + 1) * sizeof(*order));
	if (!o.strs || !o.ents || !o.lvls || !order)
		goto out;
	for (size_t k = 0; k < c->nadd; k++)
		order[k] = k;
	qsort_r(order, c->nadd, sizeof(*order), cmp_add, c->add);
	if ((err = intern(&o, c->dwarf_path, &path_off)))
		goto out;
	/* the entries read and the ones added, merged in address order (an
	 * address is in one or the other, never both) */
	while (i < c->nents || j < c->nadd) {
		struct ustack_dwarf_level lv[USTACK_DWARF_MAX_LEVELS];
		int n;

		if (j >= c->nadd || (i < c->nents && c->ents[i].addr < c->add[order[j]].addr)) {
			n = ustack_line_cache__get(c, c->ents[i].addr, lv);
			err = emit(&o, c->ents[i++].addr, lv, n);
		} else {
			const struct lc_entry *e = &c->add[order[j++]];

			err = emit(&o, e->addr, &c->addlv[e->first], (int)e->count);
		}
		if (err)
			goto out;
	}
	memcpy(h.magic, LC_MAGIC, 8);
	h.header_size = sizeof(h);
	h.nentries = (uint32_t)o.nents;
	h.nlevels = (uint32_t)o.nlvls;
	h.strtab_size = (uint32_t)o.len;
	h.dwarf_path = path_off;
	h.dwarf_size = c->dwarf_size;
	h.dwarf_ino = c->dwarf_ino;
	h.dwarf_mtime_sec = c->mtime_sec;
	h.dwarf_mtime_nsec = c->mtime_nsec;
	h.id_size = c->id_size;
	h.flags = c->no_dwarf && !o.nents ? LC_NO_DWARF : 0;
	memcpy(h.id, c->id, sizeof(h.id));
	*len = sizeof(h) + o.nents * sizeof(*o.ents) + o.nlvls * sizeof(*o.lvls) + o.len;
	if (*len > USTACK_LINE_CACHE_MAX_BYTES) {
		err = -ENOSPC;
		goto out;
	}
	*img = malloc(*len);
	if (!*img) {
		err = -ENOMEM;
		goto out;
	}
	at = sizeof(h);
	memcpy((uint8_t *)*img + at, o.ents, o.nents * sizeof(*o.ents));
	at += o.nents * sizeof(*o.ents);
	memcpy((uint8_t *)*img + at, o.lvls, o.nlvls * sizeof(*o.lvls));
	at += o.nlvls * sizeof(*o.lvls);
	memcpy((uint8_t *)*img + at, o.p, o.len);
	h.crc = ustack_crc32(0, (uint8_t *)*img + sizeof(h), *len - sizeof(h));
	memcpy(*img, &h, sizeof(h));
	err = 0;
out:
	ustack_u64map__free(o.strs);
	free(o.p);
	free(o.ents);
	free(o.lvls);
	free(order);
	return err;
}

int ustack_line_cache__save(struct ustack_line_cache *c)
{
	void *img;
	size_t len;
	int err;

	if (!c || !c->file || c->dropped || (c->nadd == c->saved && !c->dirty))
		return 0;
	err = ustack_line_cache__image(c, &img, &len);
	if (err)
		return err;
	err = ustack_cache_write(c->dir, c->file, img, len);
	free(img);
	if (err) {
		pr_debug("%s: not written: %s\n", c->file, strerror(-err));
		return err;
	}
	c->saved = c->nadd;
	c->dirty = 0;
	{
		static const char *const kind[] = { ".lines", NULL };
		const char *base = strrchr(c->file, '/');

		ustack_cache_trim(c->dir, "", kind, USTACK_LINE_CACHE_DIR_MAX_BYTES,
				  base ? base + 1 : c->file);
	}
	return 0;
}

int ustack_line_cache__entry(const struct ustack_line_cache *c, size_t i, uint64_t *addr)
{
	if (i >= c->nents)
		return -ENOENT;
	*addr = c->ents[i].addr;
	return 0;
}

void ustack_line_cache__free(struct ustack_line_cache *c)
{
	uint64_t k, v;

	if (!c)
		return;
	for (size_t it = 0; c->copies && ustack_u64map__next(c->copies, &it, &k, &v);)
		free((void *)(uintptr_t)v);
	ustack_u64map__free(c->copies);
	ustack_u64map__free(c->add_idx);
	free(c->add);
	free(c->addlv);
	free(c->img);
	free(c->dwarf_path);
	free(c->dir);
	free(c->file);
	free(c);
}
