/* SPDX-License-Identifier: MIT */
/*
 * The resolver's parts, exposed for its tests and fuzz target: the USDT
 * note walker, the ld.so.cache reader and the library/program lookup.
 * Each reads untrusted bytes and checks every field against their end.
 */
#ifndef USTACK_PROBE_INTERNAL_H
#define USTACK_PROBE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One stapsdt note (owner "stapsdt", type 3) of .note.stapsdt, as stored:
 * the strings point into the caller's bytes and are NUL-terminated there. */
struct ustack_usdt_note {
	uint64_t pc, base, semaphore; /* link-time addresses */
	const char *provider, *name, *args; /* args "" when the note has none */
	uint64_t off;                 /* of the note in its section */
};

/* Call @fn for each stapsdt note of the section bytes @p[0..@size) (other
 * notes skipped). 0, @fn's first non-zero return, or -EBADMSG with *@bad
 * the offset of the first malformed note (nothing after it is offered). */
int ustack_usdt_notes_walk(const uint8_t *p, size_t size,
			   int (*fn)(void *ctx, const struct ustack_usdt_note *n), void *ctx,
			   uint64_t *bad);

/* Call @fn with (soname, path) for each x86-64 libc6 entry of an
 * ld.so.cache (format "glibc-ld.so.cache1.1", alone or after the old
 * "ld.so-1.7.0" table) in @p[0..@size), in file order. 0, @fn's first
 * non-zero return, -ENOENT when no new-format table is there, -EBADMSG when
 * a count or string offset points outside the file. */
int ustack_ldcache_walk(const uint8_t *p, size_t size,
			int (*fn)(void *ctx, const char *soname, const char *path), void *ctx);

/* @base (a file's base name) is the library or program @name: equal, or
 * @name followed by ".so" ("libc" -> "libc.so.6") or by "-" and a digit
 * ("libc" -> "libc-2.31.so"). */
int ustack_lib_name_matches(const char *base, const char *name);

/* The first file /proc/@pid/maps names (not deleted) whose base name
 * @match accepts with @name, as the process sees it, into @shown. 0,
 * -ENOENT, -errno. */
int ustack_lib_find_mapped(const char *name, int (*match)(const char *base, const char *name),
			   pid_t pid, char *shown, size_t sz);

/*
 * Where the file @name (no '/') is for process @pid (0: this one):
 * first among the files @pid maps, then, for a name starting with "lib",
 * in @root's /etc/ld.so.cache and library directories, else in its
 * program directories. @root: "" or "/proc/PID/root". *@shown gets the
 * path as the process sees it. 0, -ENOENT, -errno; @err says what.
 */
int ustack_lib_find(const char *name, pid_t pid, const char *root, char *shown, size_t shown_sz,
		    char *err, size_t errlen);

#endif
