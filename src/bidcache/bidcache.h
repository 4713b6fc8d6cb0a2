/* SPDX-License-Identifier: MIT */
/*
 * The build-ID cache: copies of the files a recording ran through, kept by
 * build ID *and* content, so that a trace is named later from the very file
 * that was mapped (a container's libc, a binary deleted since, another
 * host), never from whatever the reporting host has at the same path.
 *
 * Layout (under a root directory; ustack's is ustack_cache_dir(), perf's
 * is ~/.debug), compatible with perf's build-ID cache for reading both ways:
 *
 *   <root>/.build-id/<xx>/<rest>/elf            first content seen with this
 *                                                build ID (perf's name; what
 *                                                perf reads)
 *   <root>/.build-id/<xx>/<rest>/elf-<sha256>    the image whose whole-file
 *                                                SHA-256 is <sha256>
 *   <root>/.build-id/<xx>/<rest>/debug           perf's name for a separate
 *                                                debug file (first seen)
 *   <root>/.build-id/<xx>/<rest>/debug-<sha256>  the separate debug file found
 *                                                for the image whose SHA-256
 *                                                is <sha256> (not the debug
 *                                                file's own hash)
 *   <root>/.content-id/<xx>/<rest>/elf           a file without a GNU build
 *                                                ID, <xx><rest> its SHA-256
 *
 * <xx><rest> is the build ID in lower-case hex (xx its first byte), <sha256>
 * 64 lower-case hex digits. "elf" and "elf-<sha256>" are hard links to one
 * inode when the first content is stored, so the perf name costs no space.
 *
 * Trust: an entry named by content (elf-<sha256>, debug-<sha256>,
 * .content-id) is what its name says because only this code writes into a
 * cache it opened with USTACK_BIDCACHE_WRITE: the root is made 0700, owned by
 * the caller, never followed through a symlink (O_NOFOLLOW on every
 * component under the root, openat() from the root's fd), and every file is
 * written to a temporary name and renamed (a reader sees no partial file).
 * The perf names (elf, debug) are first-come: a later file claiming the same
 * build ID with other content is stored under its own elf-<sha256> only,
 * and the store reports the conflict (a forged build ID, or two builds that
 * share one). ustack reads a perf name only when the trace has no content
 * hash for the file, and then checks the build ID of what it opened.
 *
 * How a store works (bidcache.c): a file the cache holds already (its
 * final name is there: the ELF's is its hash, so it is hashed first; not
 * for a build ID without an entry directory) is only touched, and given its
 * perf name when that is missing: nothing is written. Otherwise one pass of
 * pread() to EOF hashes and
 * copies into an O_EXCL temporary (.tmp-<pid>-<random>, 0600) in the entry
 * directory (.content-id entries: in .content-id/, their name being known
 * only once hashed); the temporary is then linkat()ed to its final name,
 * which never replaces an existing one, so concurrent stores of one file
 * all succeed and exactly one reports NEW; then the perf name is linked
 * the same way. A file larger than max_size is read to its end for the
 * hash, its partial copy removed. trim() removes whole <xx>/<rest>
 * directories (the <xx> directories stay, so as not to race a store
 * creating below them), sizing hard links once, and the temporary files
 * of stores that never finished (no write for an hour: a killed recorder's).
 */
#ifndef USTACK_BIDCACHE_BIDCACHE_H
#define USTACK_BIDCACHE_BIDCACHE_H

#include <stddef.h>
#include <stdint.h>

#define USTACK_SHA256_SIZE 32

struct ustack_bidcache;

/* ustack_bidcache__open() flags */
/* Create the root (0700) and allow stores; refused (-EPERM) when the root
 * exists and is a symlink, is not a directory, is owned by another user or
 * is writable by group or others. (Without WRITE or FOREIGN, an own cache
 * is read only when owned by the caller or root and not writable by group
 * or others; the root may then be reached through a symlink.) */
#define USTACK_BIDCACHE_WRITE 0x1u
/* A cache ustack did not write (perf's ~/.debug, whose .build-id/xx/rest is
 * a symlink to ../../<path>/<build id>): symlinks below the root are
 * followed, and nothing in it is taken as content-checked (find() with a
 * sha256 answers -ENOENT: the caller hashes what it opens). */
#define USTACK_BIDCACHE_FOREIGN 0x2u

/**
 * Open the cache at @root (read-only unless USTACK_BIDCACHE_WRITE).
 * @return the cache, or NULL with errno (ENOENT: no such directory and not
 *         asked to create it; EPERM: unsafe root, see above; ENOMEM)
 */
struct ustack_bidcache *ustack_bidcache__open(const char *root, uint32_t flags);
/** Close; NULL is a no-op. */
void ustack_bidcache__close(struct ustack_bidcache *c);
/** The root directory as given. */
const char *ustack_bidcache__root(const struct ustack_bidcache *c);

/* What an entry is */
enum ustack_bidcache_kind {
	USTACK_BIDCACHE_ELF = 0,   /* the mapped file itself */
	USTACK_BIDCACHE_DEBUG = 1, /* its separate debug file */
};

/* ustack_bidcache__store() results (struct ustack_bidcache_stored.flags) */
#define USTACK_BIDCACHE_STORED_NEW      0x1u /* written now (else it was there) */
#define USTACK_BIDCACHE_STORED_CONFLICT 0x2u /* the perf name of this build ID holds
						other content: left as it was */
#define USTACK_BIDCACHE_STORED_TOO_BIG  0x4u /* larger than max_size: hashed, not stored */

struct ustack_bidcache_stored {
	uint8_t sha256[USTACK_SHA256_SIZE]; /* of the whole file read from the fd */
	uint64_t size;                      /* bytes read */
	uint32_t flags;                     /* USTACK_BIDCACHE_STORED_* */
};

/**
 * Copy the file open at @fd (read from offset 0 with pread to its end, hashed
 * in the same pass) into the cache.
 * @param c a cache opened with USTACK_BIDCACHE_WRITE
 * @param fd the file (a /proc/PID/map_files entry, a file opened inside a
 *        container's root, ...); not closed
 * @param build_id the file's GNU build ID, NULL/0: none (stored under
 *        .content-id by its SHA-256)
 * @param kind USTACK_BIDCACHE_ELF or USTACK_BIDCACHE_DEBUG
 * @param image_sha256 DEBUG: the SHA-256 of the image it was found for
 *        (the entry's name); ELF: NULL
 * @param max_size files larger than this are hashed, not stored (TOO_BIG)
 * @param out the file's hash and size, what was done
 * @return 0, -EINVAL (build ID of 1 or more than 32 bytes; DEBUG without
 *         a build ID or @image_sha256; ELF with @image_sha256), -EROFS (cache
 *         not writable), -ELOOP/-ENOTDIR/-EEXIST (something else than this
 *         code's directories and files in the cache: a planted symlink),
 *         -EIO/-errno of a read or write (no entry is left half written)
 */
int ustack_bidcache__store(struct ustack_bidcache *c, int fd, const uint8_t *build_id,
			   size_t build_id_size, enum ustack_bidcache_kind kind,
			   const uint8_t *image_sha256, uint64_t max_size,
			   struct ustack_bidcache_stored *out);

/**
 * Path of an entry.
 * @param build_id, build_id_size the file's build ID (0: a .content-id entry,
 *        found by @sha256 alone)
 * @param sha256 the content (ELF: the file's own hash; DEBUG: the image's),
 *        or NULL for perf's first-come name (elf, debug)
 * @param path, size receives "<root>/.build-id/xx/rest/elf-<sha256>" etc.
 * @return 0 when the entry exists (a regular file, reached without a
 *         symlink below the root for caches opened without FOREIGN),
 *         -ENOENT, -EINVAL (build ID of 1 or more than 32 bytes, DEBUG
 *         without one, no build ID and no @sha256), -ENAMETOOLONG
 */
int ustack_bidcache__find(const struct ustack_bidcache *c, const uint8_t *build_id,
			  size_t build_id_size, enum ustack_bidcache_kind kind,
			  const uint8_t *sha256, char *path, size_t size);

/**
 * Keep the cache within @max_bytes: remove whole entries (a build-ID
 * directory's files together), least recently used first (the newest mtime
 * of their files; ustack_cache_touch() on use), never one touched after
 * @keep_after (seconds since the epoch: the current recording's). Temporary
 * files no store wrote to for an hour are removed whatever the budget.
 * @return bytes removed, or -errno
 */
int64_t ustack_bidcache__trim(struct ustack_bidcache *c, uint64_t max_bytes, int64_t keep_after);

/** Default budget of ustack's build-ID cache ($USTACK_BUILDID_CACHE_MAX_MB overrides; 0: none) */
#define USTACK_BIDCACHE_MAX_MB 4096ull
/**
 * Bytes ustack's build-ID cache may hold: $USTACK_BUILDID_CACHE_MAX_MB (MiB;
 * 0: no limit, UINT64_MAX), else USTACK_BIDCACHE_MAX_MB (also when the
 * variable is not a number).
 */
uint64_t ustack_bidcache_budget(void);
/** Default largest file stored (--capture-max-size) */
#define USTACK_BIDCACHE_FILE_MAX_MB 512ull

/* ---- SHA-256 (FIPS 180-4), for content identity -------------------------- */

struct ustack_sha256 {
	uint32_t h[8];
	uint64_t len;       /* bytes hashed so far */
	uint8_t buf[64];
	uint32_t fill;
};

void ustack_sha256_init(struct ustack_sha256 *s);
void ustack_sha256_update(struct ustack_sha256 *s, const void *data, size_t len);
void ustack_sha256_final(struct ustack_sha256 *s, uint8_t out[USTACK_SHA256_SIZE]);
/**
 * Which block function hashes: the CPU's SHA extensions when @want and the
 * CPU has them (x86-64 SHA-NI), else plain C. Decided at the first hash
 * otherwise: SHA-NI where there is one, unless $USTACK_SHA256 is "c".
 * @return 1 when SHA-NI is used from now on, 0 for plain C
 */
int ustack_sha256_use_hw(int want);
/** Hash @len bytes of @data in one call. */
void ustack_sha256(const void *data, size_t len, uint8_t out[USTACK_SHA256_SIZE]);

#endif
