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
