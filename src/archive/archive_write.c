// SPDX-License-Identifier: MIT
/*
 * A trace's archive, write side (ustack_archive__write(), archive.h): for
 * every file id of the trace, the very file that was mapped (by its
 * content hash when the trace has one) and its separate debug file, as
 * build-ID cache members of a ustar file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elf.h>

#include <ustack/hashmap.h>
#include <ustack/trace.h>
#include "archive/archive.h"
#include "archive/tar.h"
#include "common/cache_dir.h"
#include "common/log.h"
#include "elf/elf_file.h"
#include "symbolize/debugfind.h"

/* What the trace says of one file id */
struct want {
	uint64_t id;
	uint32_t kind;           /* USTACK_VMA_FILE / USTACK_VMA_VDSO */
	char *path;
	uint32_t bid_size;
	uint8_t bid[USTACK_BUILD_ID_MAX];
	int has_content;
	uint8_t sha[USTACK_SHA256_SIZE];
	uint64_t size;
};

/* Where one file's bytes are */
struct image {
	int fd;                  /* or -1 with mem */
	const void *mem;
	uint64_t size;
	uint8_t sha[USTACK_SHA256_SIZE];
	char path[PATH_MAX];
};

struct awriter {
	const char *trace;
	int out;
	struct want *w;
	size_t n, cap;
	struct ustack_u64map *ids;     /* file id -> index in w */
	char **names;                  /* members written */
	size_t nnames;
	struct ustack_bidcache *cache; /* ustack's, read-only; NULL: none */
	struct ustack_archive_stats *st;
};

static int hash_image(struct image *im)
{
	struct ustack_sha256 s;
	uint8_t buf[1 << 16];
	uint64_t done = 0;

	ustack_sha256_init(&s);
	if (im->mem) {
		ustack_sha256_update(&s, im->mem, im->size);
		ustack_sha256_final(&s, im->sha);
		return 0;
	}
	for (;;) {
		ssize_t n = pread(im->fd, buf, sizeof(buf), (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;
		ustack_sha256_update(&s, buf, (size_t)n);
		done += (uint64_t)n;
	}
	im->size = done;
	ustack_sha256_final(&s, im->sha);
	return 0;
}

/* ---- what the trace needs ---------------------------------------------- */

static int want_add(struct awriter *a, const struct ustack_file_map *fm)
{
	struct want *w;
	int isnew;
	uint64_t *slot = ustack_u64map__slot(a->ids, fm->file_id, &isnew);

	if (!slot)
		return -ENOMEM;
	if (!isnew)
		return 0; /* file maps repeat in every chunk */
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct want *p = realloc(a->w, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		a->w = p;
		a->cap = cap;
	}
	*slot = a->n;
	w = &a->w[a->n];
	memset(w, 0, sizeof(*w));
	w->id = fm->file_id;
	w->kind = fm->kind;
	w->path = strdup(fm->path ? fm->path : "");
	if (!w->path)
		return -ENOMEM;
	w->bid_size = fm->build_id_size <= USTACK_BUILD_ID_MAX ? fm->build_id_size : 0;
	memcpy(w->bid, fm->build_id, w->bid_size);
	a->n++;
	return 0;
}

static void want_content(struct awriter *a, const struct ustack_trace_file_content *c)
{
	uint64_t i;

	if (c->algo != USTACK_TRACE_HASH_SHA256 || ustack_u64map__get(a->ids, c->file_id, &i))
		return;
	a->w[i].has_content = 1;
	memcpy(a->w[i].sha, c->hash, sizeof(a->w[i].sha));
	a->w[i].size = c->size;
}

static int collect(struct awriter *a, char *err, size_t errlen)
{
	struct ustack_trace_reader_opts o = { .sz = sizeof(o),
					      .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_trace_reader *r = ustack_trace_reader__open(a->trace, &o);
	struct ustack_trace_record rec;
	int rc;

	if (!r) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", a->trace, strerror(errno));
		return rc;
	}
	while ((rc = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		if (rec.type == USTACK_TRACE_FILE_MAP && rec.file_map.file_id &&
		    (rec.file_map.kind == USTACK_VMA_FILE || rec.file_map.kind == USTACK_VMA_VDSO))
			rc = want_add(a, &rec.file_map);
		else if (rec.type == USTACK_TRACE_FILE_CONTENT)
			want_content(a, &rec.file_content);
		if (rc < 0)
			break;
	}
	if (rc < 0)
		snprintf(err, errlen, "%s: %s", a->trace,
			 rc == -ENOMEM ? strerror(ENOMEM) : ustack_trace_reader__error(r));
	ustack_trace_reader__close(r);
	return rc < 0 ? rc : 0;
}

/* ---- finding the files -------------------------------------------------- */

static int build_id_is(struct ustack_elf *elf, const struct want *w)
{
	uint8_t id[USTACK_BUILD_ID_MAX];
	int len = elf ? ustack_elf__build_id(elf, id, sizeof(id)) : -1;

	return len == (int)w->bid_size && !memcmp(id, w->bid, w->bid_size);
}

/* @path holds @w's file: its build ID and, when the trace has one, its hash */
static int try_path(const struct want *w, const char *path, struct image *im)
{
	struct ustack_elf *elf;
	int ok;

	im->mem = NULL;
	im->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (im->fd < 0)
		return 0;
	snprintf(im->path, sizeof(im->path), "%s", path);
	elf = w->bid_size ? ustack_elf__open_fd(im->fd, path) : NULL;
	ok = !w->bid_size || build_id_is(elf, w);
	ustack_elf__close(elf);
	if (ok && !hash_image(im))
		ok = !w->has_content || (im->size == w->size && !memcmp(im->sha, w->sha, sizeof(im->sha)));
	else
		ok = 0;
	if (!ok) {
		close(im->fd);
		im->fd = -1;
	}
	return ok;
}

/* This kernel's vDSO, when it is the one the trace saw */
static int try_vdso(const struct want *w, struct image *im)
{
	const uint8_t *base = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	struct ustack_elf *elf;
	Elf64_Ehdr eh;
	int ok;

	if (!base || !w->bid_size)
		return 0;
	memcpy(&eh, base, sizeof(eh));
	/* the image ends with its section headers (as symbolize.c reads it) */
	im->size = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || im->size < sizeof(eh) || im->size > 64 * 1024)
		return 0;
	elf = ustack_elf__open_mem(base, im->size, "[vdso]");
	ok = build_id_is(elf, w);
	ustack_elf__close(elf);
	if (!ok)
		return 0;
	im->fd = -1;
	im->mem = base;
	snprintf(im->path, sizeof(im->path), "[vdso]");
	return !hash_image(im);
}

static int find_image(struct awriter *a, const struct want *w, struct image *im)
{
	char path[PATH_MAX];

	if (w->kind == USTACK_VMA_VDSO)
		return try_vdso(w, im);
	/* the recorder's copy: by content when known, else perf's name */
	if (a->cache && (w->bid_size || w->has_content) &&
	    !ustack_bidcache__find(a->cache, w->bid_size ? w->bid : NULL, w->bid_size,
				   USTACK_BIDCACHE_ELF, w->has_content ? w->sha : NULL, path,
				   sizeof(path)) &&
	    try_path(w, path, im))
		return 1;
	return w->path[0] == '/' && try_path(w, w->path, im);
}

/* ---- members -------------------------------------------------------------- */

static int seen_name(struct awriter *a, const char *name)
{
	char **p;

	for (size_t i = 0; i < a->nnames; i++)
		if (!strcmp(a->names[i], name))
			return 1;
	p = realloc(a->names, (a->nnames + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	a->names = p;
	a->names[a->nnames] = strdup(name);
	return a->names[a->nnames] ? (a->nnames++, 0) : -ENOMEM;
}

static int put_member(struct awriter *a, const struct ustack_archive_name *n, int fd,
		      const void *mem, uint64_t size)
{
	char name[USTACK_TAR_NAME_MAX];
	int err = ustack_archive_name__format(n, name, sizeof(name));

	if (!err)
		err = seen_name(a, name);
	if (err)
		return err < 0 ? err : 0;
	err = ustack_tar__write_member(a->out, name, fd, mem, size);
	if (!err) {
		a->st->files++;
		a->st->bytes += size;
	}
	return err;
}

static void missing(struct awriter *a, const struct want *w, const char *what)
{
	a->st->missing++;
	pr_warn("%s: file id %" PRIx64 " %s: %s not found (no copy with its build ID%s)\n",
		a->trace, w->id, w->path, what, w->has_content ? " and content" : "");
}

/* The separate debug file of an image found: the cache's, else what the
 * symbolizer finds on this host (build-ID directory, debuglink, debuginfod). */
static int add_debug(struct awriter *a, const struct want *w, const struct image *im,
		     const struct ustack_archive_name *img_name)
{
	struct ustack_archive_name n = *img_name;
	struct ustack_debugfind_opts o = { .sz = sizeof(o) };
	struct ustack_debug_found *d;
	struct ustack_elf *elf;
	char path[PATH_MAX];
	int fd, err = 0;

	n.kind = USTACK_BIDCACHE_DEBUG;
	if (a->cache && !ustack_bidcache__find(a->cache, w->bid, w->bid_size, USTACK_BIDCACHE_DEBUG,
					       im->sha, path, sizeof(path))) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		goto have;
	}
	elf = im->mem ? ustack_elf__open_mem(im->mem, im->size, im->path)
		      : ustack_elf__open_fd(im->fd, im->path);
	d = calloc(1, sizeof(*d));
	if (!d || !elf) {
		ustack_elf__close(elf);
		free(d);
		return 0;
	}
	fd = -1;
	if (!ustack_debugfind(&o, w->path, elf, w->bid, w->bid_size, d, NULL, 0) &&
	    (d->source == USTACK_DEBUG_SRC_BUILD_ID_DIR || d->source == USTACK_DEBUG_SRC_DEBUGLINK ||
	     d->source == USTACK_DEBUG_SRC_DEBUGINFOD))
		fd = open(d->path, O_RDONLY | O_CLOEXEC);
	ustack_elf__close(d->elf);
	ustack_elf__close(elf);
	free(d);
have:
	if (fd >= 0) {
		struct stat sb;

		if (!fstat(fd, &sb))
			err = put_member(a, &n, fd, NULL, (uint64_t)sb.st_size);
		close(fd);
	}
	return err;
}

static int add_file(struct awriter *a, const struct want *w)
{
	struct ustack_archive_name n = { .kind = USTACK_BIDCACHE_ELF, .has_sha256 = 1 };
	struct image im = { .fd = -1 };
	int err;

	if (!w->bid_size && !w->has_content) {
		/* nothing a reporting host could look it up by */
		missing(a, w, "image (no build ID or content hash recorded)");
		return 0;
	}
	if (!find_image(a, w, &im)) {
		missing(a, w, "image");
		return 0;
	}
	n.build_id_size = w->bid_size;
	memcpy(n.build_id, w->bid, w->bid_size);
	memcpy(n.sha256, im.sha, sizeof(n.sha256));
	err = put_member(a, &n, im.fd, im.mem, im.size);
	if (!err && w->bid_size >= 2 && w->kind == USTACK_VMA_FILE)
		err = add_debug(a, w, &im, &n);
	if (im.fd >= 0)
		close(im.fd);
	return err;
}

/* ---- the whole ------------------------------------------------------------- */

static int write_members(struct awriter *a, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	const char *root = ustack_cache_dir(buf, sizeof(buf));
	int rc = 0;

	if (root && *root)
		a->cache = ustack_bidcache__open(root, 0);
	for (size_t i = 0; i < a->n && !rc; i++) {
		rc = add_file(a, &a->w[i]);
		if (rc)
			snprintf(err, errlen, "%s: writing the member of %s: %s", a->trace,
				 a->w[i].path, strerror(-rc));
		else
			pr_info("archive: %zu/%zu files\n", i + 1, a->n);
	}
	ustack_bidcache__close(a->cache);
	a->cache = NULL;
	if (!rc) {
		rc = ustack_tar__write_end(a->out);
		if (rc)
			snprintf(err, errlen, "writing the archive: %s", strerror(-rc));
	}
	return rc;
}

static void awriter_free(struct awriter *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->w[i].path);
	free(a->w);
	for (size_t i = 0; i < a->nnames; i++)
		free(a->names[i]);
	free(a->names);
	ustack_u64map__free(a->ids);
}

int ustack_archive__write(const char *trace, const char *out, struct ustack_archive_stats *st,
			  char *err, size_t errlen)
{
	struct ustack_archive_stats local = { 0 };
	struct awriter a = { .trace = trace, .out = -1, .st = st ? st : &local };
	char tmp[PATH_MAX], scratch[1];
	int rc;

	if (!err || !errlen)
		err = scratch, errlen = sizeof(scratch);
	err[0] = 0;
	memset(a.st, 0, sizeof(*a.st));
	a.ids = ustack_u64map__new();
	if (!a.ids)
		return -ENOMEM;
	rc = collect(&a, err, errlen);
	if (rc)
		goto out;
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", out) >= (int)sizeof(tmp)) {
		rc = -ENAMETOOLONG;
		snprintf(err, errlen, "%s: name too long", out);
		goto out;
	}
	a.out = mkostemp(tmp, O_CLOEXEC);
	if (a.out < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	rc = write_members(&a, err, errlen);
	if (!rc && (fsync(a.out) || rename(tmp, out))) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
	}
	close(a.out);
	if (rc)
		unlink(tmp);
out:
	awriter_free(&a);
	return rc;
}
