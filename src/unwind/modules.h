/* SPDX-License-Identifier: MIT */
/*
 * Unwind tables of mapped files, for unwinding other processes: one entry
 * per file (ELF mapped read-only, its .sframe and its DWARF CFI), cached by
 * file identity (dev, inode, size, mtime) so a library shared by many
 * processes or threads is opened and parsed once.
 *
 * Ownership (why no holder can see a freed table):
 * - a table is reference counted. The cache holds one reference while the
 *   table is cached; every pointer handed out (__get, __get_mem, __lookup,
 *   ustack_modtab__get) is a reference of its own, released with
 *   ustack_modtab__put(). Eviction only drops the cache's reference.
 * - a long-lived association (the recorder's file -> tables, a snapshot's
 *   mapping cache) keeps a *weak* struct ustack_modref instead, and turns
 *   it into a reference with ustack_modcache__lookup() when it needs the
 *   tables; that fails once the table was evicted, and the holder opens
 *   the file again. Weak refs pin nothing.
 * Memory budget: at most max_files tables are cached; beyond those, only
 *   tables that a caller holds a reference to at that moment stay alive
 *   (a walk holds one for the duration of a row lookup; a snapshot pins
 *   the tables that named one thread's frames until its callback returns).
 * A cache and its tables belong to one thread.
 */
#ifndef USTACK_UNWIND_MODULES_H
#define USTACK_UNWIND_MODULES_H

#include <stddef.h>
#include <stdint.h>

#include "common/unwind_row.h"

struct ustack_elf;
struct ustack_modtab;
struct ustack_modcache;

enum ustack_modcache_flags {
	/*
	 * Compile each file's DWARF CFI into a sorted row table on its first
	 * CFI lookup, and answer later lookups from it (a binary search
	 * instead of interpreting the FDE each time). Worth it for many
	 * lookups (recording); a one-shot snapshot is faster without.
	 */
	USTACK_MODCACHE_COMPILE_CFI = 1u << 0,
};

#define USTACK_MODCACHE_DEFAULT_MAX 256

/** A weak reference to a cached table: pins nothing, checked on use. */
struct ustack_modref {
	uint64_t serial; /* 0: none */
	int slot;
};

/** An empty cache holding at most @max_files open files (0: 256). */
struct ustack_modcache *ustack_modcache__new(unsigned int max_files, unsigned int flags);
void ustack_modcache__free(struct ustack_modcache *mc);

/**
 * Tables of the file at @path (opened through /proc/PID/map_files or
 * /proc/PID/root by the caller). Cached; a file that is not a usable ELF
 * is remembered as such too, so it is reported once (a file that cannot
 * be opened right now, e.g. its process exited, is not remembered).
 * @return a new reference to the tables (release with ustack_modtab__put()),
 *         or NULL with errno
 */
struct ustack_modtab *ustack_modcache__get(struct ustack_modcache *mc, const char *path);

/**
 * Tables of an ELF image held in memory (the vDSO, copied from the
 * target). @key distinguishes images (e.g. the vDSO's address + size).
 */
struct ustack_modtab *ustack_modcache__get_mem(struct ustack_modcache *mc, uint64_t key,
					       const void *image, size_t size, const char *name);

/** One more reference to @m (NULL passes through). */
struct ustack_modtab *ustack_modtab__get(struct ustack_modtab *m);
/** Release a reference; the last one frees the table. NULL is a no-op. */
void ustack_modtab__put(struct ustack_modtab *m);

/** A weak reference to @m (NULL gives the empty one). */
struct ustack_modref ustack_modtab__ref(const struct ustack_modtab *m);
/**
 * The table @ref names, if it is still cached.
 * @return a new reference, or NULL (evicted, never cached, or unusable)
 */
struct ustack_modtab *ustack_modcache__lookup(struct ustack_modcache *mc, struct ustack_modref ref);

/** Tables opened (cache misses) and evicted so far. */
void ustack_modcache__stats(const struct ustack_modcache *mc, uint64_t *opened, uint64_t *evicted);

/**
 * Row for @vaddr (the file's own virtual address): SFrame first, then DWARF
 * CFI (.eh_frame, else .debug_frame).
 * @param method receives USTACK_METHOD_SFRAME, USTACK_METHOD_CFI or
 *        USTACK_METHOD_PLT (a PLT section no table covers)
 * @return 0, -ENOENT (no table covers it), -EBADMSG (corrupt table; that
 *         table is reported once and not used again)
 */
int ustack_modtab__find_row(struct ustack_modtab *m, uint64_t vaddr, struct ustack_row *row,
			    unsigned int *method);

/*
 * One span of a module's table: for every vaddr in [row.start, row.end),
 * ustack_modtab__find_row() answers exactly this row and method
 * (USTACK_METHOD_SFRAME, USTACK_METHOD_CFI or USTACK_METHOD_PLT), or, when
 * bad != 0, -EBADMSG (a corrupt part of the table: the unwinder must stop;
 * method then names the table, the rule fields are 0). Vaddrs that no span
 * covers get -ENOENT.
 */
struct ustack_row_span {
	struct ustack_row row;   /* row.start/row.end give the span */
	uint8_t method;
	uint8_t bad;
};

/* ustack_modtab__rows() refuses a module with more spans than this, or
 * four times as many before adjacent ones merge (-E2BIG): 160 MB of spans,
 * far beyond any real file, reachable only by repetition (PCMASK
 * functions, PLT sections and expressions) in a crafted one. */
#define USTACK_MODTAB_MAX_SPANS (1u << 22)

/**
 * Every span of @m, sorted by start, non-overlapping (adjacent spans with
 * identical rules may be merged), as find_row answers them. A corrupt
 * .sframe is reported once and dropped for good, here as in find_row
 * (then DWARF CFI answers); corrupt CFI gives bad spans where find_row
 * gives -EBADMSG. The very last address, UINT64_MAX, is never covered.
 * Cold path: reads the whole table (and compiles the CFI when the cache
 * was made with USTACK_MODCACHE_COMPILE_CFI, as find_row would).
 * @param spans receives a malloc'd array (NULL when *nr is 0), caller frees
 * @return 0 with *spans and *nr, or a negative errno (-ENOMEM, -E2BIG)
 */
int ustack_modtab__rows(struct ustack_modtab *m, struct ustack_row_span **spans, size_t *nr);

/** The ELF file, for symbols and offset <-> vaddr translation. */
struct ustack_elf *ustack_modtab__elf(struct ustack_modtab *m);

/**
 * The file the tables were read from, as fstat() gave it when it was
 * opened (st_dev, st_ino); 0, 0 for an image in memory or NULL.
 */
void ustack_modtab__file(const struct ustack_modtab *m, uint64_t *dev, uint64_t *ino);

#endif
