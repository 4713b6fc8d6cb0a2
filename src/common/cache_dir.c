// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cache_dir.h"

const char *ustack_cache_dir(char *buf, size_t size)
{
	const char *env = getenv("USTACK_CACHE_DIR"), *home = getenv("HOME");

	if (env)
		return env;
	if (geteuid() == 0)
		return "/var/cache/ustack";
	if (!home || !*home)
		return "";
	snprintf(buf, size, "%s/.cache/ustack", home);
	return buf;
}

uint64_t ustack_cache_debug_budget(void)
{
	const char *env = getenv("USTACK_CACHE_MAX_MB");
	char *end;
	unsigned long long mb;

	if (!env || !*env)
		return USTACK_CACHE_DEBUG_MAX_MB << 20;
	errno = 0;
	mb = strtoull(env, &end, 10);
	if (errno || *end || mb > (UINT64_MAX >> 20))
		return USTACK_CACHE_DEBUG_MAX_MB << 20;
	return mb ? (uint64_t)mb << 20 : UINT64_MAX;
}

void ustack_cache_touch(int fd)
{
	if (fd >= 0)
		futimens(fd, NULL);
}

struct cache_ent {
	char name[NAME_MAX + 1];
	uint64_t size;
	struct timespec mtime;
};

static int ent_older(const void *a, const void *b)
{
	const struct cache_ent *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cache_name(const char *name, const char *prefix, const char *const *suffixes)
{
	size_t n = strlen(name), p = strlen(prefix);

	if (n < p || strncmp(name, prefix, p))
		return 0;
	if (n > 4 && !strcmp(name + n - 4, ".tmp"))
		return 0; /* another process is writing it */
	if (!suffixes)
		return 1;
	for (; *suffixes; suffixes++) {
		size_t s = strlen(*suffixes);

		if (n > s && !strcmp(name + n - s, *suffixes))
			return 1;
	}
	return 0;
}

int ustack_cache_trim(const char *dir, const char *prefix, const char *const *suffixes,
		      uint64_t max_bytes, const char *keep)
{
	struct cache_ent *e = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;
	int removed = 0, dfd;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		struct stat st;

		if (!cache_name(de->d_name, prefix, suffixes) ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		total += (uint64_t)st.st_size;
		if (keep && !strcmp(de->d_name, keep))
			continue;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct cache_ent *g = realloc(e, nc * sizeof(*g));

			if (!g)
				break;
			e = g;
			cap = nc;
		}
		snprintf(e[n].name, sizeof(e[n].name), "%s", de->d_name);
		e[n].size = (uint64_t)st.st_size;
		e[n].mtime = st.st_mtim;
		n++;
	}
	if (total > max_bytes && n) {
		qsort(e, n, sizeof(*e), ent_older);
		for (size_t i = 0; i < n && total > max_bytes; i++) {
			if (unlinkat(dfd, e[i].name, 0))
				continue;
			total -= e[i].size;
			removed++;
		}
	}
	closedir(d);
	free(e);
	return removed;
}

void ustack_debug_cache_trim(const char *dir, const char *path)
{
	static const char *const kinds[] = { ".dwarf", ".zstd-dec", ".gnu_debugdata", NULL };
	const char *base = strrchr(path, '/');

	ustack_cache_trim(dir, "", kinds, ustack_cache_debug_budget(), base ? base + 1 : path);
}

int ustack_cache_write(const char *dir, const char *path, const void *buf, size_t len)
{
	char tmp[PATH_MAX + 32];
	int fd, err = 0;

	if (mkdir(dir, 0755) && errno == ENOENT) {
		/* the cache directory itself is new: made too (one level) */
		char *up = strdup(dir), *slash = up ? strrchr(up, '/') : NULL;

		if (slash && slash != up) {
			*slash = 0;
			mkdir(up, 0755);
		}
		free(up);
		mkdir(dir, 0755);
	}
	if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	for (size_t done = 0; done < len && !err;) {
		ssize_t w = write(fd, (const char *)buf + done, len - done);

		if (w <= 0)
			err = w < 0 ? -errno : -EIO;
		else
			done += (size_t)w;
	}
	if (close(fd) && !err)
		err = -EIO;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
