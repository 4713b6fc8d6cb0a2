// SPDX-License-Identifier: MIT
/*
 * The build-ID cache (bidcache.h has the layout and the trust rules).
 *
 * Every path below the root is walked one component at a time with
 * openat()/mkdirat() from the root's fd, each with O_NOFOLLOW for caches
 * ustack writes: a symlink planted anywhere inside is an error, never a
 * way out. Files appear under their final names only through linkat() of a
 * complete temporary file, which also makes "first come" atomic: linkat()
 * never replaces a name, so two recorders storing the same file race to
 * one winner and the loser sees EEXIST ("was there").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bidcache/bidcache.h"

#define BID_MAX 32
#define READ_CHUNK (256u << 10)

struct ustack_bidcache {
	int rootfd;
	uint32_t flags;
	char root[];
};

/* The names of one entry: <top>/<xx>/<rest>/<file> */
struct bid_names {
	const char *top;
	char xx[3];
	char rest[2 * BID_MAX];
	char file[8 + 2 * USTACK_SHA256_SIZE];
};

static void hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = 0;
}

/* Split an id (build ID, or a SHA-256 for .content-id) into xx and rest. */
static void id_dirs(struct bid_names *n, const uint8_t *id, size_t size)
{
	hex(id, 1, n->xx);
	hex(id + 1, size - 1, n->rest);
}

/* A build ID's entry: .build-id/<xx>/<rest> */
static void build_id_dirs(struct bid_names *n, const uint8_t *build_id, size_t size)
{
	n->top = ".build-id";
	id_dirs(n, build_id, size);
}

/* ---- open, close ------------------------------------------------------------ */

static int mkdir_p(const char *root)
{
	char *p = strdup(root);
	int err = 0;

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; !err; s++) {
		if (*s && *s != '/')
			continue;
		char c = *s;

		*s = 0;
		if (mkdir(p, 0700) && errno != EEXIST)
			err = -errno;
		*s = c;
		if (!c)
			break;
	}
	free(p);
	return err;
}

/* An own cache is trusted because only its owner writes into it. */
static int root_safe(int fd, uint32_t flags)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -EPERM;
	if (flags & USTACK_BIDCACHE_FOREIGN)
		return 0;
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return -EPERM;
	if (st.st_uid != geteuid() && (flags & USTACK_BIDCACHE_WRITE || st.st_uid != 0))
		return -EPERM;
	return 0;
}

struct ustack_bidcache *ustack_bidcache__open(const char *root, uint32_t flags)
{
	struct ustack_bidcache *c;
	int fd, err, oflags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;

	if (!root || !*root || (flags & ~(USTACK_BIDCACHE_WRITE | USTACK_BIDCACHE_FOREIGN)) ||
	    (flags & USTACK_BIDCACHE_WRITE && flags & USTACK_BIDCACHE_FOREIGN)) {
		errno = EINVAL;
		return NULL;
	}
	if (flags & USTACK_BIDCACHE_WRITE) {
		err = mkdir_p(root);
		if (err) {
			errno = -err;
			return NULL;
		}
		oflags |= O_NOFOLLOW;
	}
	fd = open(root, oflags);
	if (fd < 0) {
		/* O_NOFOLLOW on a symlink: ELOOP; a file: ENOTDIR */
		if (errno == ELOOP || errno == ENOTDIR)
			errno = EPERM;
		return NULL;
	}
	err = root_safe(fd, flags);
	c = err ? NULL : malloc(sizeof(*c) + strlen(root) + 1);
	if (!c) {
		close(fd);
		errno = err ? -err : ENOMEM;
		return NULL;
	}
	c->rootfd = fd;
	c->flags = flags;
	strcpy(c->root, root);
	return c;
}

void ustack_bidcache__close(struct ustack_bidcache *c)
{
	if (!c)
		return;
	close(c->rootfd);
	free(c);
}

const char *ustack_bidcache__root(const struct ustack_bidcache *c)
{
	return c->root;
}

/* ---- walking below the root --------------------------------------------------- */

static int open_sub(const struct ustack_bidcache *c, int dfd, const char *name, int create)
{
	int nofollow = c->flags & USTACK_BIDCACHE_FOREIGN ? 0 : O_NOFOLLOW;
	int fd;

	if (create && mkdirat(dfd, name, 0700) && errno != EEXIST)
		return -errno;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | nofollow);
	if (fd < 0)
		return errno == ENOTDIR && nofollow ? -ELOOP : -errno;
	return fd;
}

/* The fd of <top>/<xx>/<rest> (depth 3) or <top>/<xx> (depth 2), or -errno */
static int walk(const struct ustack_bidcache *c, const struct bid_names *n, int depth,
		int create)
{
	const char *parts[3] = { n->top, n->xx, n->rest };
	int dfd = c->rootfd;

	for (int i = 0; i < depth; i++) {
		int fd = open_sub(c, dfd, parts[i], create);

		if (dfd != c->rootfd)
			close(dfd);
		if (fd < 0)
			return fd;
		dfd = fd;
	}
	return dfd;
}

static int entry_dir(const struct ustack_bidcache *c, const struct bid_names *n, int create)
{
	return walk(c, n, 3, create);
}

static int names_for(struct bid_names *n, const uint8_t *build_id, size_t build_id_size,
		     enum ustack_bidcache_kind kind, const uint8_t *sha256)
{
	char shahex[2 * USTACK_SHA256_SIZE + 1];

	if (build_id_size > BID_MAX || build_id_size == 1 || (build_id_size && !build_id) ||
	    (kind != USTACK_BIDCACHE_ELF && kind != USTACK_BIDCACHE_DEBUG))
		return -EINVAL;
	if (!build_id_size) {
		if (kind != USTACK_BIDCACHE_ELF || !sha256)
			return -EINVAL;
		n->top = ".content-id";
		id_dirs(n, sha256, USTACK_SHA256_SIZE);
		strcpy(n->file, "elf");
		return 0;
	}
	build_id_dirs(n, build_id, build_id_size);
	strcpy(n->file, kind == USTACK_BIDCACHE_ELF ? "elf" : "debug");
	if (sha256) {
		hex(sha256, USTACK_SHA256_SIZE, shahex);
		strcat(n->file, "-");
		strcat(n->file, shahex);
	}
	return 0;
}

/* ---- find ------------------------------------------------------------------------ */

int ustack_bidcache__find(const struct ustack_bidcache *c, const uint8_t *build_id,
			  size_t build_id_size, enum ustack_bidcache_kind kind,
			  const uint8_t *sha256, char *path, size_t size)
{
	struct bid_names n;
	struct stat st;
	int dfd, err, foreign = c->flags & USTACK_BIDCACHE_FOREIGN;

	err = names_for(&n, build_id, build_id_size, kind, sha256);
	if (err)
		return err;
	/* nothing in a foreign cache was checked against its content */
	if (foreign && sha256)
		return -ENOENT;
	dfd = entry_dir(c, &n, 0);
	if (dfd < 0)
		return -ENOENT;
	err = fstatat(dfd, n.file, &st, foreign ? 0 : AT_SYMLINK_NOFOLLOW) ? -ENOENT : 0;
	close(dfd);
	if (!err && !S_ISREG(st.st_mode))
		err = -ENOENT;
	if (err)
		return err;
	if ((size_t)snprintf(path, size, "%s/%s/%s/%s/%s", c->root, n.top, n.xx, n.rest, n.file) >=
	    size)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- store ----------------------------------------------------------------------- */

struct store_tmp {
	int dfd;          /* where the temporary file is: the entry dir, or .content-id */
	int fd;
	char name[48];
};

/* O_EXCL: a name another store (or anyone) took is never opened, only retried */
static int tmp_create(struct store_tmp *t)
{
	for (int tries = 0; tries < 8; tries++) {
		uint64_t rnd;

		if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
			rnd = (uint64_t)clock() ^ (uint64_t)time(NULL) << 20 ^ (uint64_t)tries << 60;
		snprintf(t->name, sizeof(t->name), ".tmp-%d-%016llx", (int)getpid(),
			 (unsigned long long)rnd);
		t->fd = openat(t->dfd, t->name,
			       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (t->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	t->name[0] = 0; /* not ours: never unlinked */
	return -errno;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * Read @fd from 0 to EOF, hashing everything and writing to the temporary
 * file while the total stays within @max_size (st_size is only a hint: the
 * file may have changed since). t->fd < 0 on return: TOO_BIG (or never
 * opened because st_size already said so).
 */
static int copy_hash(int fd, struct store_tmp *t, uint64_t max_size,
		     struct ustack_bidcache_stored *out)
{
	struct ustack_sha256 s;
	uint8_t *buf = malloc(READ_CHUNK);
	uint64_t off = 0;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	ustack_sha256_init(&s);
	for (;;) {
		ssize_t r = pread(fd, buf, READ_CHUNK, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (!r)
			break;
		ustack_sha256_update(&s, buf, (size_t)r);
		off += (uint64_t)r;
		if (t->fd >= 0 && off > max_size) {
			close(t->fd);
			t->fd = -1;
			unlinkat(t->dfd, t->name, 0);
		}
		if (t->fd >= 0) {
			err = write_all(t->fd, buf, (size_t)r);
			if (err)
				break;
		}
	}
	free(buf);
	ustack_sha256_final(&s, out->sha256);
	out->size = off;
	if (off > max_size)
		out->flags |= USTACK_BIDCACHE_STORED_TOO_BIG;
	return err;
}

/* Same content as @sha256? Hashes @name in @dfd (a regular file, not followed). */
static int same_content(int dfd, const char *name, const uint8_t sha256[USTACK_SHA256_SIZE])
{
	struct ustack_bidcache_stored got = { { 0 }, 0, 0 };
	struct store_tmp none = { .dfd = -1, .fd = -1 };
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int err;

	if (fd < 0)
		return -errno;
	err = copy_hash(fd, &none, UINT64_MAX, &got);
	close(fd);
	if (err)
		return err;
	return !memcmp(got.sha256, sha256, USTACK_SHA256_SIZE);
}

/*
 * Give the perf name (@perf: elf, debug) to @final unless it has one:
 * first come. Other content there is a conflict, left as it was.
 */
static int link_perf_name(int dfd, const char *final, const char *perf,
			  const uint8_t sha256[USTACK_SHA256_SIZE], uint32_t *flags)
{
	struct stat a, b;
	int same;

	if (!linkat(dfd, final, dfd, perf, 0))
		return 0;
	if (errno != EEXIST)
		return -errno;
	if (fstatat(dfd, final, &a, AT_SYMLINK_NOFOLLOW) ||
	    fstatat(dfd, perf, &b, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (a.st_ino == b.st_ino && a.st_dev == b.st_dev)
		return 0;
	if (!S_ISREG(b.st_mode)) {
		*flags |= USTACK_BIDCACHE_STORED_CONFLICT;
		return 0;
	}
	same = same_content(dfd, perf, sha256);
	if (same < 0)
		return same;
	if (!same)
		*flags |= USTACK_BIDCACHE_STORED_CONFLICT;
	return 0;
}

/* Move the complete temporary file to its final name, first come. */
static int publish(const struct ustack_bidcache *c, struct store_tmp *t, struct bid_names *n,
		   int is_build_id, struct ustack_bidcache_stored *out)
{
	const char *perf = strncmp(n->file, "elf", 3) ? "debug" : "elf";
	struct stat st;
	int edfd = t->dfd, err = 0;

	if (!is_build_id) {
		edfd = entry_dir(c, n, 1);
		if (edfd < 0)
			return edfd;
	}
	if (!linkat(t->dfd, t->name, edfd, n->file, 0)) {
		out->flags |= USTACK_BIDCACHE_STORED_NEW;
	} else if (errno != EEXIST) {
		err = -errno;
	} else if (fstatat(edfd, n->file, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode)) {
		/* something else than our regular file under a content name */
		err = -EEXIST;
	} else {
		/* used again: the trim keeps it longer */
		utimensat(edfd, n->file, NULL, AT_SYMLINK_NOFOLLOW);
	}
	if (!err && is_build_id)
		err = link_perf_name(edfd, n->file, perf, out->sha256, &out->flags);
	if (edfd != t->dfd)
		close(edfd);
	return err;
}

static int store_check(const struct ustack_bidcache *c, const uint8_t *build_id,
		       size_t build_id_size, enum ustack_bidcache_kind kind,
		       const uint8_t *image_sha256)
{
	if (!(c->flags & USTACK_BIDCACHE_WRITE))
		return -EROFS;
	if (build_id_size > BID_MAX || build_id_size == 1 || (build_id_size && !build_id))
		return -EINVAL;
	if (kind == USTACK_BIDCACHE_ELF)
		return image_sha256 ? -EINVAL : 0;
	if (kind == USTACK_BIDCACHE_DEBUG)
		return build_id_size && image_sha256 ? 0 : -EINVAL;
	return -EINVAL;
}

/*
 * A file the cache holds already is not copied again: it is hashed first
 * (the name of an ELF entry is its hash), and when that name is there the
 * store is done: touched for the trim, its perf name given if it has none.
 * A recording stores every file its stacks ran through, each time; before,
 * each was copied into a temporary file and the copy thrown away, as many
 * bytes written as read. A build ID without an entry directory is new: no
 * hash pass, the copy hashes. 1: not in the cache (copy it), 0: there (or
 * too big: hashed only, as the copy would have), or -errno of the read.
 */
static int stored_already(const struct ustack_bidcache *c, int fd, const uint8_t *build_id,
			  size_t build_id_size, enum ustack_bidcache_kind kind,
			  const uint8_t *image_sha256, uint64_t max_size,
			  struct ustack_bidcache_stored *out)
{
	struct store_tmp none = { .dfd = -1, .fd = -1 };
	struct bid_names n;
	struct stat st;
	int edfd, err;

	if (build_id_size) {
		build_id_dirs(&n, build_id, build_id_size);
		edfd = entry_dir(c, &n, 0);
		if (edfd < 0)
			return 1;
		close(edfd);
	}
	err = copy_hash(fd, &none, max_size, out);
	if (err || (out->flags & USTACK_BIDCACHE_STORED_TOO_BIG))
		return err;
	if (names_for(&n, build_id, build_id_size, kind,
		      kind == USTACK_BIDCACHE_DEBUG ? image_sha256 : out->sha256))
		return 1;
	edfd = entry_dir(c, &n, 0);
	if (edfd < 0)
		return 1;
	if (fstatat(edfd, n.file, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode)) {
		close(edfd);
		return 1;
	}
	/* used again: the trim keeps it longer */
	utimensat(edfd, n.file, NULL, AT_SYMLINK_NOFOLLOW);
	err = build_id_size ? link_perf_name(edfd, n.file,
					     kind == USTACK_BIDCACHE_ELF ? "elf" : "debug",
					     out->sha256, &out->flags)
			    : 0;
	close(edfd);
	return err;
}

int ustack_bidcache__store(struct ustack_bidcache *c, int fd, const uint8_t *build_id,
			   size_t build_id_size, enum ustack_bidcache_kind kind,
			   const uint8_t *image_sha256, uint64_t max_size,
			   struct ustack_bidcache_stored *out)
{
	struct store_tmp t = { .dfd = -1, .fd = -1 };
	struct bid_names n;
	struct stat st;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	err = store_check(c, build_id, build_id_size, kind, image_sha256);
	if (err)
		return err;
	if (fstat(fd, &st))
		return -errno;
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size <= max_size) {
		err = stored_already(c, fd, build_id, build_id_size, kind, image_sha256, max_size,
				     out);
		if (err <= 0)
			return err;
		memset(out, 0, sizeof(*out));
	}
	if (build_id_size)
		build_id_dirs(&n, build_id, build_id_size);
	else
		n.top = ".content-id";
	/* a file already known to be too big is only hashed: nothing is made */
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size <= max_size) {
		if (build_id_size)
			t.dfd = entry_dir(c, &n, 1);
		else
			t.dfd = open_sub(c, c->rootfd, n.top, 1);
		if (t.dfd < 0)
			return t.dfd;
		err = tmp_create(&t);
	}
	if (!err)
		err = copy_hash(fd, &t, max_size, out);
	if (t.fd >= 0) {
		if (close(t.fd) && !err)
			err = -EIO;
		t.fd = -1;
	}
	if (!err && !(out->flags & USTACK_BIDCACHE_STORED_TOO_BIG)) {
		/* the name of an ELF entry is the hash just computed */
		err = names_for(&n, build_id, build_id_size, kind,
				kind == USTACK_BIDCACHE_DEBUG ? image_sha256 : out->sha256);
		if (!err)
			err = publish(c, &t, &n, build_id_size != 0, out);
	}
	/* published (linked) or not, the temporary name goes */
	if (t.dfd >= 0 && t.name[0])
		unlinkat(t.dfd, t.name, 0);
	if (t.dfd >= 0)
		close(t.dfd);
	return err;
}

/* ---- budget ----------------------------------------------------------------------- */

uint64_t ustack_bidcache_budget(void)
{
	const char *env = getenv("USTACK_BUILDID_CACHE_MAX_MB");
	char *end;
	unsigned long long mb;

	if (!env || !*env)
		return USTACK_BIDCACHE_MAX_MB << 20;
	errno = 0;
	mb = strtoull(env, &end, 10);
	if (errno || *end || *env == '-' || mb > (UINT64_MAX >> 20))
		return USTACK_BIDCACHE_MAX_MB << 20;
	return mb ? (uint64_t)mb << 20 : UINT64_MAX;
}

/* ---- trim -------------------------------------------------------------------------- */

struct trim_ent {
	const char *top;
	char xx[3];
	char rest[2 * BID_MAX];
	uint64_t bytes;
	struct timespec newest;
};

struct trim_list {
	struct trim_ent *e;
	size_t n, cap;
	uint64_t total;
};

static int hex_name(const char *s, size_t min, size_t max)
{
	size_t n = strlen(s);

	if (n < min || n > max)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

static DIR *dir_of(int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d && fd >= 0)
		close(fd);
	return d;
}

static int newer(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec != b->tv_sec ? a->tv_sec > b->tv_sec : a->tv_nsec > b->tv_nsec;
}

/*
 * A store's temporary file (.tmp-<pid>-<random>) left by a store that never
 * finished (its recorder killed): removed once no byte was written to it
 * for an hour. A store writes its temporary file from start to end without
 * a pause longer than one read of the file it copies, so an hour idle is
 * none in progress; left alone, a partial copy of every file a killed
 * recorder was storing would stay for good (an entry that is used again is
 * never trimmed). 1 when @name was such a file and is gone.
 */
#define TMP_STALE_SECONDS 3600

static int stale_tmp_removed(int dfd, const char *name, const struct stat *st, time_t now)
{
	if (strncmp(name, ".tmp-", 5) || !S_ISREG(st->st_mode) ||
	    st->st_mtim.tv_sec > now - TMP_STALE_SECONDS)
		return 0;
	return !unlinkat(dfd, name, 0);
}

/* Bytes (each inode once: elf and elf-<sha> are one file) and newest mtime;
 * stale temporary files are removed, not counted. */
static void scan_entry(int edfd, struct trim_ent *e, time_t now)
{
	ino_t seen[32];
	size_t nseen = 0;
	struct dirent *de;
	DIR *d = dir_of(edfd);

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;
		size_t i;

		if (fstatat(edfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
		    stale_tmp_removed(edfd, de->d_name, &st, now))
			continue;
		if (newer(&st.st_mtim, &e->newest))
			e->newest = st.st_mtim;
		for (i = 0; i < nseen && seen[i] != st.st_ino; i++)
			;
		if (i < nseen)
			continue;
		if (nseen < sizeof(seen) / sizeof(seen[0]))
			seen[nseen++] = st.st_ino;
		e->bytes += (uint64_t)st.st_size;
	}
	closedir(d);
}

static int trim_add(struct trim_list *l, const struct trim_ent *e)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? 2 * l->cap : 64;
		struct trim_ent *g = realloc(l->e, nc * sizeof(*g));

		if (!g)
			return -ENOMEM;
		l->e = g;
		l->cap = nc;
	}
	l->e[l->n++] = *e;
	l->total += e->bytes;
	return 0;
}

/* Every <top>/<xx>/<rest> directory, sized. */
static int trim_scan_top(const struct ustack_bidcache *c, const char *top, size_t rest_len,
			 struct trim_list *l, time_t now)
{
	int tfd = open_sub(c, c->rootfd, top, 0), err = 0;
	struct dirent *dx;
	DIR *dt;

	if (tfd < 0)
		return tfd == -ENOENT ? 0 : tfd;
	dt = dir_of(tfd);
	while (dt && !err && (dx = readdir(dt))) {
		int xfd = hex_name(dx->d_name, 2, 2) ? open_sub(c, tfd, dx->d_name, 0) : -1;
		struct stat st;
		struct dirent *dr;
		DIR *dx_dir = xfd < 0 ? NULL : dir_of(xfd);

		while (dx_dir && !err && (dr = readdir(dx_dir))) {
			struct trim_ent e = { .top = top };
			int edfd;

			if (!hex_name(dr->d_name, 2, rest_len))
				continue;
			edfd = open_sub(c, xfd, dr->d_name, 0);
			if (edfd < 0)
				continue;
			strcpy(e.xx, dx->d_name);
			strcpy(e.rest, dr->d_name);
			scan_entry(edfd, &e, now);
			close(edfd);
			err = trim_add(l, &e);
		}
		if (dx_dir)
			closedir(dx_dir);
		if (xfd >= 0)
			close(xfd);
		/* .content-id's temporary files are right below it */
		if (xfd < 0 && !fstatat(tfd, dx->d_name, &st, AT_SYMLINK_NOFOLLOW))
			stale_tmp_removed(tfd, dx->d_name, &st, now);
	}
	if (dt)
		closedir(dt);
	close(tfd);
	return err;
}

static int older_first(const void *a, const void *b)
{
	const struct trim_ent *x = a, *y = b;

	if (newer(&x->newest, &y->newest))
		return 1;
	return newer(&y->newest, &x->newest) ? -1 : 0;
}

/* Unlink the files of one entry and its directory, from directory fds only. */
static int trim_remove(const struct ustack_bidcache *c, const struct trim_ent *e)
{
	struct bid_names n = { .top = e->top };
	int xfd, edfd, err = 0;
	struct dirent *de;
	DIR *d;

	strcpy(n.xx, e->xx);
	strcpy(n.rest, e->rest);
	edfd = entry_dir(c, &n, 0);
	if (edfd < 0)
		return edfd;
	d = dir_of(edfd);
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    unlinkat(edfd, de->d_name, 0) && errno != ENOENT)
			err = -errno;
	if (d)
		closedir(d);
	close(edfd);
	/* <xx> stays, even empty: removing it could race a store's mkdirat below it */
	xfd = walk(c, &n, 2, 0);
	if (xfd < 0)
		return xfd;
	if (!err && unlinkat(xfd, n.rest, AT_REMOVEDIR))
		err = -errno;
	close(xfd);
	return err;
}

int64_t ustack_bidcache__trim(struct ustack_bidcache *c, uint64_t max_bytes, int64_t keep_after)
{
	struct trim_list l = { 0 };
	int64_t removed = 0;
	int err;

	if (!(c->flags & USTACK_BIDCACHE_WRITE))
		return -EROFS;
	err = trim_scan_top(c, ".build-id", 2 * BID_MAX - 2, &l, time(NULL));
	if (!err)
		err = trim_scan_top(c, ".content-id", 2 * USTACK_SHA256_SIZE - 2, &l, time(NULL));
	if (err) {
		free(l.e);
		return err;
	}
	if (l.n) /* qsort(NULL, 0) is undefined */
		qsort(l.e, l.n, sizeof(*l.e), older_first);
	for (size_t i = 0; i < l.n && l.total > max_bytes; i++) {
		if (l.e[i].newest.tv_sec >= keep_after)
			continue;
		if (trim_remove(c, &l.e[i]))
			continue;
		l.total -= l.e[i].bytes;
		removed += (int64_t)l.e[i].bytes;
	}
	free(l.e);
	return removed;
}
