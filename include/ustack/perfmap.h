/* SPDX-License-Identifier: MIT */
/*
 * JIT symbol maps in the perf convention (/tmp/perf-PID.map): one symbol per
 * line, "START SIZE name", START and SIZE in hex (an optional 0x prefix), the
 * name running to the end of the line. Written by V8 (--perf-basic-prof),
 * CPython 3.12 (-X perf) and JVM agents while the process runs.
 *
 * Overlap rule: when entries overlap (a JIT reuses code space after a GC, or
 * writes a symbol twice), the entry added LAST that covers an address names
 * it. Entries are added in file order, so the later line of the file wins.
 * Not thread-safe.
 */
#ifndef USTACK_PERFMAP_H
#define USTACK_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/ustack.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Longest name kept, in bytes (V8 names can embed whole URLs). A longer
 *  one is cut to its first USTACK_PERFMAP_MAX_NAME - 3 bytes (1 to 3 fewer
 *  rather than end inside a UTF-8 sequence) followed by
 *  USTACK_PERFMAP_CUT_MARK, "...": never a prefix passed off as the name. */
#define USTACK_PERFMAP_MAX_NAME 1024
#define USTACK_PERFMAP_CUT_MARK "..."
#define USTACK_PERFMAP_CUT_MARK_LEN 3
/** Most entries of one map, and most bytes read from one file: a runaway
 *  map costs bounded memory (a long-running JVM writes a few MB). */
#define USTACK_PERFMAP_MAX_ENTRIES (4u << 20)
#define USTACK_PERFMAP_MAX_FILE (256u << 20)

struct ustack_perfmap;

/** One JIT symbol: [start, start + size). */
struct ustack_perfmap_entry {
	uint64_t start, size;
	const char *name;
};

/** @return an empty map, or NULL with errno ENOMEM */
USTACK_API struct ustack_perfmap *ustack_perfmap__new(void);
/** Free; NULL is a no-op. @param m the map */
USTACK_API void ustack_perfmap__free(struct ustack_perfmap *m);

/**
 * Add one symbol (the name is copied; one longer than
 * USTACK_PERFMAP_MAX_NAME is cut and ends with USTACK_PERFMAP_CUT_MARK).
 * @param m the map
 * @param start first address
 * @param size bytes (not 0: an empty symbol covers nothing)
 * @param name its name
 * @return 0, -EINVAL, -E2BIG (map full) or -ENOMEM
 */
USTACK_API int ustack_perfmap__add(struct ustack_perfmap *m, uint64_t start, uint64_t size,
				   const char *name);

/**
 * Parse @len bytes of map text. Complete lines only: a last line without
 * '\n' is left alone (the writer may be in the middle of it), and the bytes
 * consumed are returned so that a caller reading a growing file can resume.
 * Malformed lines are skipped with a warning naming @fname and the line
 * number (counted from @first_line); the first 10 are said, then one line.
 * @param m the map
 * @param buf the text
 * @param len its length
 * @param fname file name for the warnings
 * @param first_line line number of the first line of @buf
 * @return bytes consumed (>= 0), or -EINVAL, -ENOMEM, -E2BIG
 */
USTACK_API long ustack_perfmap__parse(struct ustack_perfmap *m, const char *buf, size_t len,
				      const char *fname, unsigned long first_line);

/**
 * Read and parse the file @path (at most USTACK_PERFMAP_MAX_FILE bytes).
 * Only a regular file is read: a FIFO, a device or a directory at @path is
 * refused with a warning (never opened for blocking reads). The text is
 * read twice and used only if the file still begins with what was read the
 * first time (lines appended meanwhile are fine: a JIT writes while we
 * read): a file truncated and written anew during the read would otherwise
 * glue the start of an old line to the end of a new one. If it changes so
 * three times in a row, only the part the last two reads agree on is used,
 * with a warning ("rewritten while being read").
 * @param m the map
 * @param path file name (symbolic links are not followed)
 * @return 0, -ENOENT (no such file), -ELOOP (a symbolic link), -EINVAL (not
 *         a regular file), another negative errno
 */
USTACK_API int ustack_perfmap__read_file(struct ustack_perfmap *m, const char *path);

/**
 * As ustack_perfmap__read_file(), and the file must be owned by @uid (the
 * uid of the process whose map it is), by root or by the caller's euid:
 * anyone can create /tmp/perf-PID.map before the process does, and its
 * names would then be trusted (perf ignores a map not owned by its own user
 * or root). Another owner: a warning and -EPERM.
 * @param m the map
 * @param path file name
 * @param uid the owner accepted besides root and the caller ((uint32_t)-1:
 *        no owner check, as ustack_perfmap__read_file())
 * @return as ustack_perfmap__read_file(), or -EPERM
 */
USTACK_API int ustack_perfmap__read_file_owned(struct ustack_perfmap *m, const char *path,
					       uint32_t uid);

/**
 * Read the JIT map process @pid wrote for itself: /tmp/perf-N.map, N being
 * its pid in its own PID namespace (the last field of NStgid in
 * /proc/PID/status), looked up inside its own root and mount namespace
 * (openat2() on /proc/PID/root with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
 * so that a symbolic link in a container resolves in the container, never
 * on the host). A process of the host is the same case: N = @pid, root "/".
 * The file is then read as ustack_perfmap__read_file_owned() reads it
 * (regular file, owner, no final symbolic link, size, rewrites).
 * @param m the map
 * @param pid the process, as this process sees it
 * @param uid as for ustack_perfmap__read_file_owned()
 * @param name receives the file's name for messages (may be NULL):
 *        "/tmp/perf-PID.map" for a process that shares our PID namespace,
 *        root and mounts, else "/proc/PID/root/tmp/perf-N.map"; when the
 *        failure is in /proc/PID/status, that file's name
 * @param name_sz size of @name
 * @return as ustack_perfmap__read_file_owned(); -ESRCH: no such process;
 *         -EBADMSG: /proc/PID/status has no well-formed NStgid line
 *         (warned); -ENOSYS: no openat2() (Linux < 5.6)
 */
USTACK_API int ustack_perfmap__read_pid(struct ustack_perfmap *m, int pid, uint32_t uid,
					char *name, size_t name_sz);

/** @param m the map @return number of entries */
USTACK_API size_t ustack_perfmap__count(const struct ustack_perfmap *m);
/** @param m the map @param i index @return entry @i in the order added, or NULL */
USTACK_API const struct ustack_perfmap_entry *ustack_perfmap__entry(const struct ustack_perfmap *m,
								    size_t i);
/** @param m the map @return malformed lines skipped so far */
USTACK_API unsigned long ustack_perfmap__bad_lines(const struct ustack_perfmap *m);

/**
 * The symbol covering @addr (the overlap rule above).
 * @param m the map
 * @param addr address
 * @return the entry (valid until the next __add/__parse/__free), or NULL
 */
USTACK_API const struct ustack_perfmap_entry *ustack_perfmap__lookup(struct ustack_perfmap *m,
								     uint64_t addr);

/* ---- per-process tables ----------------------------------------------- */

/** The JIT maps of many processes (a trace's JITSYM records), by pid. */
struct ustack_jitsyms;

/** @return an empty table, or NULL with errno ENOMEM */
USTACK_API struct ustack_jitsyms *ustack_jitsyms__new(void);
/** Free; NULL is a no-op. @param t the table */
USTACK_API void ustack_jitsyms__free(struct ustack_jitsyms *t);
/**
 * Add a symbol of process @pid (later additions win where they overlap).
 * @param t the table @param pid process @param start address @param size bytes
 * @param name symbol name
 * @return 0, -EINVAL, -E2BIG, -ENOMEM
 */
USTACK_API int ustack_jitsyms__add(struct ustack_jitsyms *t, uint32_t pid, uint64_t start,
				   uint64_t size, const char *name);
/**
 * @param t the table (may be NULL) @param pid process
 * @return a small number (1, 2 ...) naming the map of @pid, 0 when @pid has
 *         none: callers caching rendered stacks key them by it
 */
USTACK_API uint32_t ustack_jitsyms__map_index(const struct ustack_jitsyms *t, uint32_t pid);
/**
 * The JIT symbol of @pid covering @addr.
 * @param t the table (may be NULL) @param pid process @param addr address
 * @return the entry (valid until the next __add or __free), or NULL
 */
USTACK_API const struct ustack_perfmap_entry *ustack_jitsyms__lookup(struct ustack_jitsyms *t,
								     uint32_t pid, uint64_t addr);
/**
 * Read the JITSYM records of the trace @path into @t: a pass over the file
 * before the one that prints, because the recorder writes a process's
 * symbols when it exits, after its samples. Damage ends this pass quietly
 * (the printing pass says where it is).
 * @param t the table @param path trace file
 * @return number of symbols added, or a negative errno (-ENOMEM, open errors)
 */
USTACK_API long ustack_jitsyms__load_trace(struct ustack_jitsyms *t, const char *path);

#ifdef __cplusplus
}
#endif
#endif
