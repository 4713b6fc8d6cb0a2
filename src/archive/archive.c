// SPDX-License-Identifier: MIT
/*
 * A trace's archive, read side (archive.h): member names and their
 * extraction into a private build-ID cache. The archive comes from another
 * host: every member is checked before a byte of it is stored, and what is
 * stored goes through src/bidcache (no symlink followed, atomic writes).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/archive.h"
#include "archive/tar.h"
#include "common/log.h"
#include "elf/elf_file.h"

#define COMPLETE_MARKER "complete"

/* ---- member names ---------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* exactly @n hex digits (n even) at @p into @out */
static int unhex(const char *p, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i += 2) {
		int hi = hexval(p[i]), lo = hexval(p[i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static size_t hex_run(const char *p)
{
	size_t n = 0;

	while (hexval(p[n]) >= 0)
		n++;
	return n;
}

/* "elf", "debug", "elf-<sha256>", "debug-<sha256>" */
static int parse_leaf(const char *p, struct ustack_archive_name *out)
{
	const char *rest;

	if (!strncmp(p, "elf", 3)) {
		out->kind = USTACK_BIDCACHE_ELF;
		rest = p + 3;
	} else if (!strncmp(p, "debug", 5)) {
		out->kind = USTACK_BIDCACHE_DEBUG;
		rest = p + 5;
	} else {
		return -EINVAL;
	}
	if (!*rest)
		return 0;
	if (*rest != '-' || hex_run(rest + 1) != 2 * USTACK_SHA256_SIZE ||
	    rest[1 + 2 * USTACK_SHA256_SIZE])
		return -EINVAL;
	out->has_sha256 = 1;
	return unhex(rest + 1, 2 * USTACK_SHA256_SIZE, out->sha256);
}

int ustack_archive_name__parse(const char *name, struct ustack_archive_name *out)
{
	int content = 0;
	const char *p;
	size_t n;
	char id[2 * USTACK_ARCHIVE_BUILD_ID_MAX];

	memset(out, 0, sizeof(*out));
	if (!strncmp(name, ".build-id/", 10))
		p = name + 10;
	else if (!strncmp(name, ".content-id/", 12))
		p = name + 12, content = 1;
	else
		return -EINVAL;
	if (hex_run(p) != 2 || p[2] != '/')
		return -EINVAL;
	memcpy(id, p, 2);
	p += 3;
	n = hex_run(p);
	if (p[n] != '/' || n % 2 || n < 2 || n + 2 > sizeof(id))
		return -EINVAL;
	memcpy(id + 2, p, n);
	p += n + 1;
	if (content) {
		/* a whole SHA-256, and only the image itself */
		if (n + 2 != 2 * USTACK_SHA256_SIZE || strcmp(p, "elf"))
			return -EINVAL;
		out->kind = USTACK_BIDCACHE_ELF;
		out->has_sha256 = 1;
		return unhex(id, n + 2, out->sha256);
	}
	out->build_id_size = (uint32_t)(n + 2) / 2;
	if (unhex(id, n + 2, out->build_id))
		return -EINVAL;
	return parse_leaf(p, out);
}

int ustack_archive_name__format(const struct ustack_archive_name *n, char *buf, size_t size)
{
	char id[2 * USTACK_ARCHIVE_BUILD_ID_MAX + 1], sha[2 * USTACK_SHA256_SIZE + 1];
	int len;

	if (n->build_id_size > USTACK_ARCHIVE_BUILD_ID_MAX ||
	    (!n->build_id_size && (!n->has_sha256 || n->kind != USTACK_BIDCACHE_ELF)) ||
	    n->build_id_size == 1)
		return -EINVAL;
	if (n->has_sha256)
		ustack_hex(n->sha256, USTACK_SHA256_SIZE, sha);
	if (!n->build_id_size) {
		len = snprintf(buf, size, ".content-id/%.2s/%s/elf", sha, sha + 2);
	} else {
		ustack_hex(n->build_id, n->build_id_size, id);
		len = snprintf(buf, size, ".build-id/%.2s/%s/%s%s%s", id, id + 2,
			       n->kind == USTACK_BIDCACHE_DEBUG ? "debug" : "elf",
			       n->has_sha256 ? "-" : "", n->has_sha256 ? sha : "");
	}
	return len < 0 || (size_t)len >= size ? -ENAMETOOLONG : 0;
}

/* ---- extraction ------------------------------------------------------- */

struct extract {
	const char *archive;
	struct ustack_tar_reader tar;
	struct ustack_bidcache *cache;
	struct ustack_archive_stats *st;
	char *err;
	size_t errlen;
};

static int hash_fd(int fd, uint64_t size, uint8_t out[USTACK_SHA256_SIZE])
{
	struct ustack_sha256 s;
	uint8_t buf[1 << 16];
	uint64_t done = 0;

	ustack_sha256_init(&s);
	while (done < size) {
		ssize_t n = pread(fd, buf, size - done < sizeof(buf) ? size - done : sizeof(buf),
				  (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		ustack_sha256_update(&s, buf, (size_t)n);
		done += (uint64_t)n;
	}
	ustack_sha256_final(&s, out);
	return 0;
}

static void reject(struct extract *x, const struct ustack_tar_member *m, const char *why)
{
	x->st->rejected++;
	pr_warn("%s: offset %" PRIu64 ": member '%s': %s; not used\n", x->archive,
		m->header_off, m->name, why);
}

/* The member's bytes into an anonymous file, hashed on the way. */
static int member_copy(struct extract *x, const struct ustack_tar_member *m, int *fd_out,
		       uint8_t sha[USTACK_SHA256_SIZE])
{
	struct ustack_sha256 s;
	uint8_t buf[1 << 16];
	uint64_t done = 0;
	int fd = memfd_create("ustack-archive-member", MFD_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	ustack_sha256_init(&s);
	while (done < m->size && !err) {
		size_t n = m->size - done < sizeof(buf) ? (size_t)(m->size - done) : sizeof(buf);

		err = ustack_tar_reader__pread(&x->tar, m, buf, n, done);
		errno = 0;
		if (!err && pwrite(fd, buf, n, (off_t)done) != (ssize_t)n)
			err = errno ? -errno : -EIO;
		ustack_sha256_update(&s, buf, n);
		done += n;
	}
	if (err) {
		close(fd);
		return err;
	}
	ustack_sha256_final(&s, sha);
	*fd_out = fd;
	return 0;
}

/* a member with a build ID in its name must carry that build ID */
static int build_id_agrees(int fd, const struct ustack_archive_name *n)
{
	uint8_t id[USTACK_ARCHIVE_BUILD_ID_MAX];
	struct ustack_elf *elf = ustack_elf__open_fd(fd, "archive member");
	int len;

	if (!elf)
		return 0;
	len = ustack_elf__build_id(elf, id, sizeof(id));
	ustack_elf__close(elf);
	return len == (int)n->build_id_size && !memcmp(id, n->build_id, (size_t)len);
}

/* One member: checked, then stored. Only an I/O error of the cache fails
 * the whole extraction; a bad member is counted and skipped. */
static int extract_member(struct extract *x, const struct ustack_tar_member *m)
{
	struct ustack_archive_name n;
	struct ustack_bidcache_stored out;
	uint8_t sha[USTACK_SHA256_SIZE];
	int fd, err;

	if (m->type != '0') {
		reject(x, m, "not a regular file");
		return 0;
	}
	if (ustack_archive_name__parse(m->name, &n)) {
		reject(x, m, "not a build-ID cache name");
		return 0;
	}
	err = member_copy(x, m, &fd, sha);
	if (err)
		return err;
	if (n.kind == USTACK_BIDCACHE_ELF && n.has_sha256 && memcmp(sha, n.sha256, sizeof(sha))) {
		reject(x, m, "its bytes do not hash to the SHA-256 in its name");
	} else if (n.build_id_size && !build_id_agrees(fd, &n)) {
		reject(x, m, "not an ELF file with the build ID in its name");
	} else {
		err = ustack_bidcache__store(x->cache, fd, n.build_id_size ? n.build_id : NULL,
					     n.build_id_size, n.kind,
					     n.kind == USTACK_BIDCACHE_DEBUG && n.has_sha256 ? n.sha256 : NULL,
					     UINT64_MAX, &out);
		if (err == -EINVAL) {
			reject(x, m, "not storable (a debug file without the image's hash)");
			err = 0;
		} else if (!err) {
			x->st->files++;
			x->st->bytes += m->size;
		}
	}
	close(fd);
	return err;
}

static int fmt_err(struct extract *x, int rc, uint64_t off, const char *why)
{
	if (x->err && x->errlen)
		snprintf(x->err, x->errlen, "%s: offset %" PRIu64 ": %s", x->archive, off, why);
	return rc;
}

static int extract_all(struct extract *x)
{
	struct ustack_tar_member m;
	int rc;

	while ((rc = ustack_tar_reader__next(&x->tar, &m)) == 1) {
		int err = extract_member(x, &m);

		if (err)
			return fmt_err(x, err, m.header_off, strerror(-err));
	}
	if (rc == -EBADMSG)
		return fmt_err(x, rc, x->tar.err_off, x->tar.err);
	return rc ? fmt_err(x, rc, x->tar.off, strerror(-rc)) : 0;
}

/* <cache_root>/archives, made private; an fd of it, never through a symlink */
static int open_archives_dir(const char *cache_root)
{
	int root, fd;

	if (mkdir(cache_root, 0700) && errno != EEXIST)
		return -errno;
	root = open(cache_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	if (mkdirat(root, "archives", 0700) && errno != EEXIST) {
		fd = -errno;
	} else {
		fd = openat(root, "archives", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
	}
	close(root);
	return fd;
}

/* The marker holds the counts of the extraction it closes. */
static int read_marker(int adir, const char *key, struct ustack_archive_stats *st)
{
	char path[128], buf[256];
	unsigned long long f, b, r;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/" COMPLETE_MARKER, key);
	fd = openat(adir, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EBADMSG;
	buf[n] = 0;
	if (sscanf(buf, "files %llu bytes %llu rejected %llu", &f, &b, &r) != 3)
		return -EBADMSG;
	*st = (struct ustack_archive_stats){ .files = f, .bytes = b, .rejected = r };
	return 0;
}

static int write_marker(int adir, const char *key, const struct ustack_archive_stats *st)
{
	char tmp[160], path[128], buf[256];
	int fd, len, err = 0;

	snprintf(path, sizeof(path), "%s/" COMPLETE_MARKER, key);
	snprintf(tmp, sizeof(tmp), "%s/." COMPLETE_MARKER ".%d.tmp", key, (int)getpid());
	len = snprintf(buf, sizeof(buf), "files %" PRIu64 " bytes %" PRIu64 " rejected %" PRIu64 "\n",
		       st->files, st->bytes, st->rejected);
	fd = openat(adir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, (size_t)len) != len || fsync(fd))
		err = errno ? -errno : -EIO;
	close(fd);
	if (!err && renameat(adir, tmp, adir, path))
		err = -errno;
	if (err)
		unlinkat(adir, tmp, 0);
	return err;
}

static int extract_into(struct extract *x, int adir, const char *key, const char *dir)
{
	int err;

	x->cache = ustack_bidcache__open(dir, USTACK_BIDCACHE_WRITE);
	if (!x->cache)
		return fmt_err(x, -errno, 0, "cannot make its build-ID cache directory");
	err = extract_all(x);
	ustack_bidcache__close(x->cache);
	if (!err)
		err = write_marker(adir, key, x->st);
	return err;
}

int ustack_archive__extract(const char *archive, const char *cache_root, char *dir, size_t dirlen,
			    struct ustack_archive_stats *st, char *err, size_t errlen)
{
	struct ustack_archive_stats local = { 0 };
	struct extract x = { .archive = archive, .st = st ? st : &local, .err = err,
			     .errlen = errlen };
	uint8_t sha[USTACK_SHA256_SIZE];
	char key[2 * USTACK_SHA256_SIZE + 1];
	struct stat sb;
	int fd, adir = -1, rc;

	memset(x.st, 0, sizeof(*x.st));
	if (err && errlen)
		err[0] = 0;
	fd = open(archive, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb)) {
		rc = fmt_err(&x, -errno, 0, strerror(errno));
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		rc = fmt_err(&x, -EINVAL, 0, "not a regular file");
		goto out;
	}
	rc = hash_fd(fd, (uint64_t)sb.st_size, sha);
	if (rc) {
		fmt_err(&x, rc, 0, strerror(-rc));
		goto out;
	}
	ustack_hex(sha, sizeof(sha), key);
	if (snprintf(dir, dirlen, "%s/archives/%s", cache_root, key) >= (int)dirlen) {
		rc = fmt_err(&x, -ENAMETOOLONG, 0, "cache directory name too long");
		goto out;
	}
	adir = open_archives_dir(cache_root);
	if (adir < 0) {
		rc = adir;
		if (err && errlen)
			snprintf(err, errlen, "%s/archives: %s", cache_root, strerror(-adir));
		goto out;
	}
	/* extracted before (the same bytes): done */
	if (!read_marker(adir, key, x.st)) {
		rc = 0;
		goto out;
	}
	ustack_tar_reader__init_fd(&x.tar, fd, (uint64_t)sb.st_size);
	rc = extract_into(&x, adir, key, dir);
out:
	if (adir >= 0)
		close(adir);
	if (fd >= 0)
		close(fd);
	return rc;
}
