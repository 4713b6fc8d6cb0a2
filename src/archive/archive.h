/* SPDX-License-Identifier: MIT */
/*
 * A trace's archive: one file holding every file its frames need to be
 * named on another host (the images and separate debug files, by build ID
 * and content), written by `ustack archive` and read by `ustack report`.
 * The JIT maps and kernel symbols are in the trace itself (JITSYM, KSYM).
 *
 * Format: a POSIX ustar archive whose members are the build-ID cache
 * entries (bidcache.h: .build-id/xx/rest/elf-<sha256>, debug-<sha256>,
 * .content-id/xx/rest/elf), so `tar tf` lists it and `tar xf` into a
 * directory gives a build-ID cache perf can read too.
 * The archive is untrusted input: extraction accepts only member names of
 * that form, regular files, sizes within the archive, and an elf-<sha256>
 * or .content-id member only when its bytes hash to the name.
 */
#ifndef USTACK_ARCHIVE_ARCHIVE_H
#define USTACK_ARCHIVE_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "bidcache/bidcache.h"

/* The name report looks for beside a trace: TRACE + this suffix. */
#define USTACK_ARCHIVE_SUFFIX ".archive"

struct ustack_archive_stats {
	uint64_t files;       /* members written / extracted */
	uint64_t bytes;       /* their bytes */
	uint64_t missing;     /* files the trace needs that were found nowhere */
	uint64_t rejected;    /* extract: members refused (name, type, hash) */
};

/**
 * Write the archive of @trace to @out (atomically: a temporary name and a
 * rename). Each file id with a FILE_CONTENT record is taken from ustack's
 * build-ID cache, else from the recorded path when its build ID and hash
 * match; its separate debug file likewise (the cache's debug-<sha256>, else
 * what the symbolizer finds on this host).
 * @return 0 or -errno; *err (if not NULL) gets one line on failure
 */
int ustack_archive__write(const char *trace, const char *out, struct ustack_archive_stats *st,
			  char *err, size_t errlen);

/**
 * Extract (once: the result is kept, keyed by the archive's SHA-256) the
 * checked members of @archive into a private directory under @cache_root,
 * a build-ID cache the symbolizer can be given.
 * @param dir receives that directory
 * @return 0 or -errno; *err gets the archive, the member offset and why
 */
int ustack_archive__extract(const char *archive, const char *cache_root, char *dir, size_t dirlen,
			    struct ustack_archive_stats *st, char *err, size_t errlen);

/* A member name of an archive, parsed: the only names extraction accepts
 * (.build-id/<xx>/<rest>/{elf,debug}[-<sha256>], .content-id/<xx>/<62 hex>/elf,
 * lower-case hex, a build ID of 2 to USTACK_ARCHIVE_BUILD_ID_MAX bytes). */
#define USTACK_ARCHIVE_BUILD_ID_MAX 64
struct ustack_archive_name {
	enum ustack_bidcache_kind kind;
	uint32_t build_id_size; /* 0: a .content-id member, @sha256 its content */
	uint8_t build_id[USTACK_ARCHIVE_BUILD_ID_MAX];
	int has_sha256;         /* elf-/debug-<sha256>, .content-id */
	uint8_t sha256[USTACK_SHA256_SIZE];
};

/**
 * Parse a member name (the whole name, no "./", no trailing '/').
 * @return 0, -EINVAL when it is not one of the accepted forms
 */
int ustack_archive_name__parse(const char *name, struct ustack_archive_name *out);

/**
 * Format the member name of an entry (the inverse of the parse).
 * @return 0, -EINVAL, -ENAMETOOLONG
 */
int ustack_archive_name__format(const struct ustack_archive_name *n, char *buf, size_t size);

#endif
