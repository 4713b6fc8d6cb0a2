// SPDX-License-Identifier: MIT
/*
 * A library or program named without a '/' ("libc", "libssl.so.3",
 * "python3"), found where the process would find it: among the files it
 * maps, else through its root's ld.so.cache and library directories (or,
 * for a program, its program directories). Everything read (/proc/PID/maps,
 * ld.so.cache) is untrusted.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/compiler.h"
#include "probe/probe_internal.h"

#define LDCACHE_NEW "glibc-ld.so.cache1.1"
#define LDCACHE_OLD "ld.so-1.7.0"
#define LDCACHE_NEW_HDR 48  /* magic+version 20, nlibs, len_strings, flags, pad, ext, 3 unused */
#define LDCACHE_NEW_ENT 24  /* flags, key, value, osversion, hwcap (u64) */
#define LDCACHE_OLD_HDR 16  /* magic 11 + pad, nlibs */
#define LDCACHE_OLD_ENT 12
/* ldconfig's entry flags: an ELF libc6 library for x86-64 */
#define LD_FLAG_TYPE_MASK 0x00ff
#define LD_FLAG_ELF_LIBC6 0x0003
#define LD_FLAG_REQ_MASK 0xff00
#define LD_FLAG_X8664_LIB64 0x0300

#define MAX_READ (64u << 20)

static const char *const lib_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib",
	"/usr/lib",
};
static const char *const bin_dirs[] = {
	"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin",
};

/* where the new-format table starts: 0 (alone) or after the old table */
static int ldcache_new_at(const uint8_t *p, size_t size, uint64_t *at)
{
	uint64_t n;

	if (size >= sizeof(LDCACHE_NEW) - 1 && !memcmp(p, LDCACHE_NEW, sizeof(LDCACHE_NEW) - 1)) {
		*at = 0;
		return 0;
	}
	if (size < LDCACHE_OLD_HDR || memcmp(p, LDCACHE_OLD, sizeof(LDCACHE_OLD) - 1))
		return -ENOENT;
	n = ld_u32(p + 12);
	/* glibc aligns the new table to 8 bytes after the old entries */
	*at = (LDCACHE_OLD_HDR + n * LDCACHE_OLD_ENT + 7) & ~7ull;
	if (*at + sizeof(LDCACHE_NEW) - 1 > size ||
	    memcmp(p + *at, LDCACHE_NEW, sizeof(LDCACHE_NEW) - 1))
		return -ENOENT;
	return 0;
}

/* the string at @off of the table at @base, NUL-terminated inside the file */
static const char *ldcache_str(const uint8_t *p, size_t size, uint64_t base, uint32_t off)
{
	uint64_t at = base + off;

	if (at >= size || !memchr(p + at, 0, size - at))
		return NULL;
	return (const char *)p + at;
}

int ustack_ldcache_walk(const uint8_t *p, size_t size,
			int (*fn)(void *ctx, const char *soname, const char *path), void *ctx)
{
	uint64_t base, nlibs;
	int ret = ldcache_new_at(p, size, &base);

	if (ret)
		return ret;
	if (!in_bounds(base, LDCACHE_NEW_HDR, size))
		return -EBADMSG;
	nlibs = ld_u32(p + base + 20);
	if (nlibs > (size - base - LDCACHE_NEW_HDR) / LDCACHE_NEW_ENT)
		return -EBADMSG;
	for (uint64_t i = 0; i < nlibs; i++) {
		const uint8_t *e = p + base + LDCACHE_NEW_HDR + i * LDCACHE_NEW_ENT;
		uint32_t flags = ld_u32(e);
		const char *key, *val;

		if ((flags & LD_FLAG_TYPE_MASK) != LD_FLAG_ELF_LIBC6 ||
		    (flags & LD_FLAG_REQ_MASK) != LD_FLAG_X8664_LIB64)
			continue;
		/* string offsets count from the new table's header */
		key = ldcache_str(p, size, base, ld_u32(e + 4));
		val = ldcache_str(p, size, base, ld_u32(e + 8));
		if (!key || !val)
			return -EBADMSG;
		ret = fn(ctx, key, val);
		if (ret)
			return ret;
	}
	return 0;
}

int ustack_lib_name_matches(const char *base, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(base, name, n))
		return 0;
	return !base[n] || !strncmp(base + n, ".so", 3) ||
	       (base[n] == '-' && base[n + 1] >= '0' && base[n + 1] <= '9');
}

/* a whole small file into a malloc'd buffer */
static int read_all(const char *path, uint8_t **out, size_t *len)
{
	size_t cap = 65536, n = 0;
	uint8_t *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r;

		if (n == cap || !buf) {
			uint8_t *nb = cap >= MAX_READ ? NULL : realloc(buf, cap *= 2);

			if (!nb) {
				free(buf);
				close(fd);
				return -EFBIG;
			}
			buf = nb;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? -errno : 0;

			close(fd);
			if (e) {
				free(buf);
				return e;
			}
			break;
		}
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	return 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* a regular file at ROOT/PATH */
static int is_file(const char *root, const char *path)
{
	char full[PATH_MAX * 2];
	struct stat st;

	snprintf(full, sizeof(full), "%s%s", root, path);
	return !stat(full, &st) && S_ISREG(st.st_mode);
}

static int set_shown(char *shown, size_t sz, const char *path)
{
	if (strlen(path) >= sz)
		return -ENAMETOOLONG;
	strcpy(shown, path);
	return 0;
}

static int name_is(const char *base, const char *name)
{
	return ustack_lib_name_matches(base, name);
}

static int find_in_maps(const char *name, pid_t pid, char *shown, size_t sz)
{
	return ustack_lib_find_mapped(name, name_is, pid, shown, sz);
}

int ustack_lib_find_mapped(const char *name, int (*match)(const char *base, const char *name),
			   pid_t pid, char *shown, size_t sz)
{
	char path[64];
	uint8_t *buf;
	size_t len;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	ret = read_all(path, &buf, &len);
	if (ret)
		return ret;
	ret = -ENOENT;
	for (size_t at = 0; at < len && ret == -ENOENT;) {
		uint8_t *nl = memchr(buf + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - buf) : len;
		/* the path is the sixth field: from the first '/' of the line
		 * (a name of a file may hold blanks, no field before it a '/') */
		uint8_t *slash = memchr(buf + at, '/', end - at);

		if (slash) {
			char *file = (char *)slash;

			buf[end] = 0; /* the '\n', or one past the read bytes: cap > len */
			if (!strstr(file, " (deleted)") &&
			    match(base_name(file), name))
				ret = set_shown(shown, sz, file);
		}
		at = end + 1;
	}
	free(buf);
	return ret;
}

struct cache_find {
	const char *name, *root;
	char *shown;
	size_t sz;
	int found;
};

static int cache_entry(void *ctx, const char *soname, const char *path)
{
	struct cache_find *c = ctx;

	if (!ustack_lib_name_matches(soname, c->name) || path[0] != '/' ||
	    !is_file(c->root, path))
		return 0;
	c->found = set_shown(c->shown, c->sz, path) ? -ENAMETOOLONG : 1;
	return 1;
}

static int find_in_cache(const char *name, const char *root, char *shown, size_t sz,
			 char *err, size_t errlen)
{
	struct cache_find c = { .name = name, .root = root, .shown = shown, .sz = sz };
	char path[PATH_MAX];
	uint8_t *buf;
	size_t len;
	int ret;

	snprintf(path, sizeof(path), "%s/etc/ld.so.cache", root);
	if (read_all(path, &buf, &len))
		return -ENOENT; /* no cache: the directories alone */
	ret = ustack_ldcache_walk(buf, len, cache_entry, &c);
	free(buf);
	if (ret == -EBADMSG) {
		snprintf(err, errlen, "%s: corrupt (a count or string offset outside the file)",
			 path);
		return ret;
	}
	return c.found > 0 ? 0 : c.found < 0 ? c.found : -ENOENT;
}

/* @name in one of @dirs of @root: exactly, else the first entry matching */
static int find_in_dirs(const char *name, const char *root, const char *const *dirs, size_t nd,
			char *shown, size_t sz)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < nd; i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], name);
		if (is_file(root, path))
			return set_shown(shown, sz, path);
	}
	for (size_t i = 0; i < nd; i++) {
		/* "libfoo" -> libfoo.so.N: the .so.N files ldconfig would list */
		for (int v = 0; v < 10; v++) {
			snprintf(path, sizeof(path), "%s/%s.so.%d", dirs[i], name, v);
			if (is_file(root, path))
				return set_shown(shown, sz, path);
		}
		snprintf(path, sizeof(path), "%s/%s.so", dirs[i], name);
		if (is_file(root, path))
			return set_shown(shown, sz, path);
	}
	return -ENOENT;
}

int ustack_lib_find(const char *name, pid_t pid, const char *root, char *shown, size_t shown_sz,
		    char *err, size_t errlen)
{
	int lib = !strncmp(name, "lib", 3), ret;

	if (pid > 0) {
		ret = find_in_maps(name, pid, shown, shown_sz);
		if (ret != -ENOENT) {
			if (ret)
				snprintf(err, errlen, "process %d: /proc/%d/maps: %s", (int)pid,
					 (int)pid, strerror(-ret));
			return ret;
		}
	}
	if (lib) {
		ret = find_in_cache(name, root, shown, shown_sz, err, errlen);
		if (ret != -ENOENT)
			return ret;
		ret = find_in_dirs(name, root, lib_dirs, sizeof(lib_dirs) / sizeof(lib_dirs[0]),
				   shown, shown_sz);
	} else {
		ret = find_in_dirs(name, root, bin_dirs, sizeof(bin_dirs) / sizeof(bin_dirs[0]),
				   shown, shown_sz);
	}
	if (ret == -ENOENT) {
		char who[48] = "";

		if (pid > 0)
			snprintf(who, sizeof(who), "process %d's mappings, ", (int)pid);
		snprintf(err, errlen, "no %s '%s' in %s%s", lib ? "library" : "program", name, who,
			 lib ? "ld.so.cache or the library directories"
			     : "the program directories (/usr/local/bin, /usr/bin, /bin, ...)");
	}
	return ret;
}
