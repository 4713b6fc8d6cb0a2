// SPDX-License-Identifier: MIT
/*
 * The image lookup order (image_lookup.h). Each place yields at most one
 * candidate; a candidate is used only after the checks its place needs, and
 * one that fails them is remembered as a refusal (report --stats says why).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ustack/symbolize.h>

#include "bidcache/bidcache.h"
#include "common/cache_dir.h"
#include "common/log.h"
#include "elf/elf_file.h"
#include "symbolize/image_lookup.h"

/* A file hashed once: its identity as fstat() saw it, and the hash. */
struct hashed_file {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	uint8_t sha256[USTACK_SHA256_SIZE];
};

struct ustack_image_lookup {
	uint32_t flags;
	char *debug_dir;
	struct ustack_bidcache **given;
	size_t ngiven;
	struct ustack_bidcache *ustack_cache, *perf_cache;
	int ustack_tried, perf_tried;
	int symfs_fd;          /* -1: no symfs */
	char *symfs;
	struct hashed_file *hashed;
	size_t nhashed, hashed_cap;
};

struct ustack_image_lookup *ustack_image_lookup__new(const char *const *dirs, const char *symfs,
						     const char *debug_dir, uint32_t flags)
{
	struct ustack_image_lookup *l = calloc(1, sizeof(*l));
	size_t n = 0;
	int err;

	if (!l)
		goto nomem;
	l->symfs_fd = -1;
	l->flags = flags;
	l->debug_dir = strdup(debug_dir);
	while (dirs && dirs[n])
		n++;
	l->given = n ? calloc(n, sizeof(*l->given)) : NULL;
	if (!l->debug_dir || (n && !l->given))
		goto nomem;
	for (; l->ngiven < n; l->ngiven++) {
		l->given[l->ngiven] = ustack_bidcache__open(dirs[l->ngiven], 0);
		if (!l->given[l->ngiven]) {
			err = errno;
			pr_warn("%s: build-ID directory: %s\n", dirs[l->ngiven], strerror(err));
			goto fail;
		}
	}
	if (symfs) {
		/* a directory fd: recorded paths are resolved inside it */
		l->symfs_fd = open(symfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		l->symfs = strdup(symfs);
		if (l->symfs_fd < 0) {
			err = errno;
			pr_warn("%s: symfs: %s\n", symfs, strerror(err));
			goto fail;
		}
		if (!l->symfs)
			goto nomem;
	}
	return l;
nomem:
	err = ENOMEM;
fail:
	ustack_image_lookup__free(l);
	errno = err;
	return NULL;
}

void ustack_image_lookup__free(struct ustack_image_lookup *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->ngiven; i++)
		ustack_bidcache__close(l->given[i]);
	ustack_bidcache__close(l->ustack_cache);
	ustack_bidcache__close(l->perf_cache);
	if (l->symfs_fd >= 0)
		close(l->symfs_fd);
	free(l->given);
	free(l->symfs);
	free(l->debug_dir);
	free(l->hashed);
	free(l);
}

void ustack_image_found__release(struct ustack_image_found *f)
{
	for (unsigned int i = 0; i < f->nrefused; i++)
		free(f->refused[i].path);
	f->nrefused = 0;
}

/* ustack's cache, opened at first need: a report that never needs it (all
 * names from a given cache) does not depend on it. */
static struct ustack_bidcache *ustack_cache(struct ustack_image_lookup *l)
{
	char buf[PATH_MAX];
	const char *dir;

	if (l->ustack_tried)
		return l->ustack_cache;
	l->ustack_tried = 1;
	dir = ustack_cache_dir(buf, sizeof(buf));
	if (*dir)
		l->ustack_cache = ustack_bidcache__open(dir, 0);
	return l->ustack_cache;
}

/* perf's build-ID cache: $PERF_BUILDID_DIR, else $HOME/.debug (perf's
 * own rule) */
static struct ustack_bidcache *perf_cache(struct ustack_image_lookup *l)
{
	char buf[PATH_MAX];
	const char *dir = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");

	if (l->perf_tried)
		return l->perf_cache;
	l->perf_tried = 1;
	if ((!dir || !*dir) && home && *home &&
	    snprintf(buf, sizeof(buf), "%s/.debug", home) < (int)sizeof(buf))
		dir = buf;
	if (dir && *dir)
		l->perf_cache = ustack_bidcache__open(dir, USTACK_BIDCACHE_FOREIGN);
	return l->perf_cache;
}

static void refuse(struct ustack_image_found *out, unsigned int reason, unsigned int source,
		   const char *path)
{
	struct ustack_image_refusal *r;

	if (out->nrefused == USTACK_IMAGE_REFUSALS_MAX)
		return;
	r = &out->refused[out->nrefused];
	r->path = strdup(path);
	if (!r->path)
		return; /* the refusal still holds; only its line is lost */
	r->reason = reason;
	r->source = source;
	out->nrefused++;
}

static int same_stat(const struct hashed_file *h, const struct stat *st)
{
	return h->dev == st->st_dev && h->ino == st->st_ino && h->size == st->st_size &&
	       h->mtime.tv_sec == st->st_mtim.tv_sec && h->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       h->ctime.tv_sec == st->st_ctim.tv_sec && h->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* SHA-256 of the bytes @elf holds (the file @st describes), computed once
 * per file: many file ids (one libc in many processes) meet one file. */
static void elf_sha256(struct ustack_image_lookup *l, const struct stat *st,
		       const struct ustack_elf *elf, uint8_t out[USTACK_SHA256_SIZE])
{
	size_t size;
	const uint8_t *data = ustack_elf__data(elf, &size);
	struct hashed_file *h;

	for (size_t i = 0; i < l->nhashed; i++)
		if (same_stat(&l->hashed[i], st)) {
			memcpy(out, l->hashed[i].sha256, USTACK_SHA256_SIZE);
			return;
		}
	ustack_sha256(data, size, out);
	if (l->nhashed == l->hashed_cap) {
		size_t ncap = l->hashed_cap ? l->hashed_cap * 2 : 16;
		void *np = realloc(l->hashed, ncap * sizeof(*l->hashed));

		if (!np)
			return; /* hashed again next time */
		l->hashed = np;
		l->hashed_cap = ncap;
	}
	h = &l->hashed[l->nhashed++];
	h->dev = st->st_dev;
	h->ino = st->st_ino;
	h->size = st->st_size;
	h->mtime = st->st_mtim;
	h->ctime = st->st_ctim;
	memcpy(h->sha256, out, USTACK_SHA256_SIZE);
}

static int build_id_is(const struct ustack_image_want *w, const struct ustack_elf *elf)
{
	uint8_t bid[64];
	int n = ustack_elf__build_id(elf, bid, sizeof(bid));

	return n > 0 && (size_t)n == w->build_id_size && !memcmp(bid, w->build_id, (size_t)n);
}

/* Open a candidate: relative to the symfs (inside it: an absolute symlink
 * of a copied root file system stays in that root) or as a path. Never a
 * FIFO or device: the open does not block and the type is checked. */
static int open_candidate(struct ustack_image_lookup *l, int in_symfs, const char *path,
			  int nofollow, struct stat *st)
{
	int fd;

	if (in_symfs) {
		struct open_how how = {
			.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK,
			.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
		};

		fd = (int)syscall(SYS_openat2, l->symfs_fd, path, &how, sizeof(how));
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0));
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* What a place needs checked */
#define CHECK_BUILD_ID 0x1u
#define CHECK_CONTENT  0x2u
#define NOFOLLOW       0x4u
#define IN_SYMFS       0x8u

/*
 * Open @path and keep it when it passes @checks (what is known of @w).
 * @return 0 (out->elf set), -ENOENT (nothing there, or refused: then in
 *         out->refused)
 */
static int try_file(struct ustack_image_lookup *l, const struct ustack_image_want *w,
		    const char *path, const char *name, unsigned int checks, unsigned int source,
		    struct ustack_image_found *out)
{
	uint8_t sha[USTACK_SHA256_SIZE];
	struct ustack_elf *elf;
	struct stat st;
	size_t size;
	int fd = open_candidate(l, !!(checks & IN_SYMFS), path, !!(checks & NOFOLLOW), &st);

	if (fd < 0)
		return -ENOENT;
	elf = ustack_elf__open_fd(fd, name);
	close(fd);
	if (!elf)
		return -ENOENT;
	if ((checks & CHECK_BUILD_ID) && w->build_id_size && !build_id_is(w, elf)) {
		pr_debug("%s: build ID differs from the recorded one: not used\n", name);
		refuse(out, USTACK_IMAGE_REFUSED_BUILD_ID, source, name);
		goto refused;
	}
	if ((checks & CHECK_CONTENT) && w->sha256) {
		ustack_elf__data(elf, &size);
		if (size == w->size)
			elf_sha256(l, &st, elf, sha);
		if (size != w->size || memcmp(sha, w->sha256, USTACK_SHA256_SIZE)) {
			/* same build ID, other bytes: a rebuilt file that kept
			 * its ID, or a forged note; its names would be wrong */
			pr_warn("%s: the recorded build ID but other content than recorded (%s"
				"): not used\n", name, w->path);
			refuse(out, USTACK_IMAGE_REFUSED_CONTENT, source, name);
			goto refused;
		}
	}
	out->elf = elf;
	out->source = source;
	return 0;
refused:
	ustack_elf__close(elf);
	return -ENOENT;
}

/* One build-ID cache: by content when known (trusted by name, unless the
 * cache is perf's, where names say nothing), else its perf name checked. */
static int try_cache(struct ustack_image_lookup *l, const struct ustack_image_want *w,
		     const struct ustack_bidcache *c, int foreign, unsigned int source,
		     struct ustack_image_found *out)
{
	char path[PATH_MAX];
	unsigned int checks = NOFOLLOW;

	if (!c)
		return -ENOENT;
	if (w->sha256 && !foreign) {
		if (ustack_bidcache__find(c, w->build_id, w->build_id_size, USTACK_BIDCACHE_ELF,
					  w->sha256, path, sizeof(path)))
			return -ENOENT;
		/* the build ID costs nothing to compare and catches a cache
		 * entry filed under the wrong directory */
		checks |= CHECK_BUILD_ID;
	} else {
		if (!w->build_id_size ||
		    ustack_bidcache__find(c, w->build_id, w->build_id_size, USTACK_BIDCACHE_ELF, NULL,
					  path, sizeof(path)))
			return -ENOENT;
		checks |= CHECK_BUILD_ID | CHECK_CONTENT;
	}
	if (try_file(l, w, path, path, checks, source, out))
		return -ENOENT;
	out->cache = c;
	out->cache_foreign = foreign;
	return 0;
}

/* Steps 4 and 5: the recorded path (under the symfs when given), then the
 * debug directory's link by build ID. */
static int try_paths(struct ustack_image_lookup *l, const struct ustack_image_want *w,
		     struct ustack_image_found *out)
{
	char path[PATH_MAX], hex[129];
	unsigned int checks = CHECK_BUILD_ID | CHECK_CONTENT;

	if (w->path[0] == '/') {
		if (l->symfs_fd >= 0) {
			if (snprintf(path, sizeof(path), "%s%s", l->symfs, w->path) < (int)sizeof(path) &&
			    !try_file(l, w, w->path, path, checks | IN_SYMFS, USTACK_IMAGE_SRC_SYMFS,
				      out))
				return 0;
		} else if (!try_file(l, w, w->path, w->path, checks, USTACK_IMAGE_SRC_PATH, out)) {
			return 0;
		}
	}
	if ((l->flags & USTACK_SYMBOLIZER_NO_DEBUG_DIR) || w->build_id_size < 2 ||
	    w->build_id_size > 64)
		return -ENOENT;
	ustack_hex(w->build_id, w->build_id_size, hex);
	if (snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s", l->debug_dir, hex, hex + 2) >=
	    (int)sizeof(path))
		return -ENOENT;
	return try_file(l, w, path, path, checks, USTACK_IMAGE_SRC_DEBUG_DIR, out);
}

int ustack_image_lookup__find(struct ustack_image_lookup *l, const struct ustack_image_want *w,
			      struct ustack_image_found *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < l->ngiven; i++)
		if (!try_cache(l, w, l->given[i], 0, USTACK_IMAGE_SRC_GIVEN_DIR, out)) {
			out->dir_index = (unsigned int)i;
			return 0;
		}
	if (!(l->flags & USTACK_SYMBOLIZER_NO_BUILDID_CACHE)) {
		if (!try_cache(l, w, ustack_cache(l), 0, USTACK_IMAGE_SRC_USTACK_CACHE, out))
			return 0;
		if (!try_cache(l, w, perf_cache(l), 1, USTACK_IMAGE_SRC_PERF_CACHE, out))
			return 0;
	}
	return try_paths(l, w, out);
}

int ustack_image_lookup__cached_debug(struct ustack_image_lookup *l,
				      const struct ustack_image_want *w,
				      const struct ustack_image_found *found,
				      struct ustack_elf **debug, char *path, size_t size)
{
	/* debug-<sha256> is named by the image's content, which only ustack's
	 * kind of cache vouches for; "debug" is perf's first-come name */
	const uint8_t *sha = w->sha256 && !found->cache_foreign ? w->sha256 : NULL;
	struct stat st;
	int fd;

	*debug = NULL;
	if (!found->cache || !w->build_id_size ||
	    ustack_bidcache__find(found->cache, w->build_id, w->build_id_size, USTACK_BIDCACHE_DEBUG,
				  sha, path, size))
		return -ENOENT;
	fd = open_candidate(l, 0, path, 1, &st);
	if (fd < 0)
		return -ENOENT;
	*debug = ustack_elf__open_fd(fd, path);
	close(fd);
	if (*debug && build_id_is(w, *debug))
		return 0;
	if (*debug)
		pr_debug("%s: build ID differs from the recorded one: not used\n", path);
	ustack_elf__close(*debug);
	*debug = NULL;
	return -ENOENT;
}
