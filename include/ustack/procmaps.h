/* SPDX-License-Identifier: MIT */
/*
 * ustack procmaps: which mapping (VMA) of a process holds an address, and
 * the (file offset, file id) pair a trace stores for each stack frame.
 *
 * Lookups use the PROCMAP_QUERY ioctl on /proc/PID/maps (Linux 6.11+) and
 * fall back to parsing the text of /proc/PID/maps when the kernel lacks it
 * (ENOTTY). The same object can be built over a recorded maps text
 * (ustack_procmaps__open_text()), which is how tests replay real maps.
 *
 * A *file id* is a 64-bit opaque number for "this mapped file as it was seen"
 * (see docs/procmaps.md for the scheme and its guarantees). The first time
 * an id is returned by ustack_procmaps__resolve() its result carries
 * USTACK_RESOLVED_NEW_FILE and the optional on_file_map callback runs once,
 * so a trace writer can emit exactly one file_map record per id; every known
 * id can be listed again with ustack_procmaps__next_file_map() (to re-emit
 * them at the start of a trace chunk).
 *
 * An object is not thread-safe: use one per thread, or lock around it.
 */
#ifndef USTACK_PROCMAPS_H
#define USTACK_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/ustack.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ustack_procmaps;

/** What backs a mapping. */
enum ustack_vma_kind {
	USTACK_VMA_UNMAPPED = 0, /**< no mapping covers the address */
	USTACK_VMA_FILE = 1,     /**< a file (possibly deleted, or in another mount namespace) */
	USTACK_VMA_ANON = 2,     /**< anonymous, not executable (including "[anon:name]") */
	USTACK_VMA_JIT = 3,      /**< anonymous and executable: JIT-compiled code */
	USTACK_VMA_HEAP = 4,     /**< "[heap]" */
	USTACK_VMA_STACK = 5,    /**< "[stack]" */
	USTACK_VMA_VDSO = 6,     /**< "[vdso]" */
	USTACK_VMA_VVAR = 7,     /**< "[vvar]", "[vvar_vclock]" */
	USTACK_VMA_VSYSCALL = 8, /**< "[vsyscall]" (text maps only: not a VMA for the ioctl) */
	USTACK_VMA_SPECIAL = 9,  /**< another kernel-named region ("[uprobes]", ...) */
};

/** Flags of a mapping. The first four equal the kernel's PROCMAP_QUERY bits. */
enum ustack_vma_flags {
	USTACK_VMA_READ = 1u << 0,
	USTACK_VMA_WRITE = 1u << 1,
	USTACK_VMA_EXEC = 1u << 2,
	USTACK_VMA_SHARED = 1u << 3,
	/** the backing file was unlinked (the kernel's " (deleted)" suffix) */
	USTACK_VMA_DELETED = 1u << 8,
};

/** One mapping. Strings stay valid until ustack_procmaps__close(). */
struct ustack_vma {
	uint64_t start;      /**< first address */
	uint64_t end;        /**< one past the last address */
	uint64_t pgoff;      /**< file offset of start (0 when not file-backed) */
	uint64_t inode;      /**< inode of the backing file (0 when none) */
	uint64_t file_id;    /**< file id (FILE and VDSO kinds), else 0 */
	uint32_t dev_major;  /**< device of the backing file's file system */
	uint32_t dev_minor;
	uint32_t flags;      /**< enum ustack_vma_flags */
	uint32_t kind;       /**< enum ustack_vma_kind */
	/** FILE: the path as the target process sees it, without " (deleted)";
	 *  other kinds: the kernel's name ("[vdso]", "[anon:foo]") or NULL */
	const char *name;
};

/** Result of resolving one address. */
struct ustack_resolved {
	/** FILE/VDSO: pc - start + pgoff (a file offset); other kinds: the pc
	 *  itself; UNMAPPED: 0 */
	uint64_t offset;
	uint64_t file_id; /**< 0 when the address is not in a file or the vDSO */
	uint32_t kind;    /**< enum ustack_vma_kind */
	uint32_t flags;   /**< enum ustack_resolved_flags */
};

enum ustack_resolved_flags {
	/** first time this object returns this file id: emit its file_map now */
	USTACK_RESOLVED_NEW_FILE = 1u << 0,
};

/** Where a build ID came from. */
enum ustack_build_id_source {
	USTACK_BUILD_ID_NONE = 0,   /**< unknown (no note, or the file could not be read) */
	USTACK_BUILD_ID_KERNEL = 1, /**< PROCMAP_QUERY (Linux 6.12+) */
	USTACK_BUILD_ID_ELF = 2,    /**< the ELF note, read through map_files or /proc/PID/root */
};

#define USTACK_BUILD_ID_MAX 32

/** The file_map record of one file id. Strings valid until close. */
struct ustack_file_map {
	uint64_t file_id;
	uint32_t kind;            /**< USTACK_VMA_FILE or USTACK_VMA_VDSO */
	uint32_t flags;           /**< USTACK_VMA_DELETED when the file was unlinked */
	const char *path;         /**< FILE: path in the target's mount namespace; VDSO: "[vdso]" */
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	uint64_t map_start;       /**< start of the first mapping the id was seen in */
	uint32_t build_id_size;   /**< 0 when unknown */
	uint32_t build_id_source; /**< enum ustack_build_id_source */
	uint8_t build_id[USTACK_BUILD_ID_MAX];
	const char *debuglink;    /**< .gnu_debuglink file name, or NULL */
	uint32_t debuglink_crc;   /**< its CRC32 (valid when debuglink != NULL) */
	uint32_t generation;      /**< times this dev:inode was seen holding another file */
};

/** Called once per new file id, before the resolve call that found it returns. */
typedef void (*ustack_file_map_fn_t)(void *ctx, const struct ustack_file_map *fm);

/** Options of ustack_procmaps__open(); flags below. */
enum ustack_procmaps_open_flags {
	/** never use the ioctl: parse the text of /proc/PID/maps */
	USTACK_PROCMAPS_FORCE_TEXT = 1u << 0,
	/** do not open ELF files (no build ID fallback, no debuglink) */
	USTACK_PROCMAPS_NO_ELF = 1u << 1,
	/** text mode: do not re-read the maps when an address misses */
	USTACK_PROCMAPS_NO_AUTO_REFRESH = 1u << 2,
	/** do not ask the kernel for build IDs (they are then read from the ELF) */
	USTACK_PROCMAPS_NO_KERNEL_BUILD_ID = 1u << 3,
};

struct ustack_procmaps_opts {
	size_t sz;                    /**< sizeof(struct ustack_procmaps_opts) */
	uint32_t flags;               /**< enum ustack_procmaps_open_flags */
	ustack_file_map_fn_t on_file_map; /**< optional */
	void *ctx;                    /**< passed to on_file_map */
	/** siphash key of the file ids; all zero: a random key chosen once per
	 *  process (ids then agree between objects of one process) */
	uint64_t id_key[2];
	/** name of a text buffer in messages (open_text); NULL: "maps" */
	const char *name;
	/** if not NULL, receives a one-line reason when open fails
	 *  ("maps: line 3: bad address range"); since 0.2 */
	char *errbuf;
	size_t errbuf_sz;
};

/**
 * Open the mappings of process @pid (0: the calling process).
 * @param pid process id
 * @param opts options or NULL
 * @return the object, or NULL with errno: ESRCH (no such process), EACCES
 *         (not allowed to read its maps), EBADMSG (unparsable maps text)
 */
USTACK_API struct ustack_procmaps *ustack_procmaps__open(int pid, const struct ustack_procmaps_opts *opts);

/**
 * Build an object over a recorded /proc/PID/maps text. No process is
 * behind it: no ioctl, and no file of this host is ever opened (they are
 * not the recorded process's files), so file_map records carry no build ID
 * or debuglink.
 * @param buf maps text (need not be NUL-terminated)
 * @param len its length in bytes
 * @param opts options or NULL
 * @return the object, or NULL with errno EBADMSG (a malformed line:
 *         opts->errbuf names it, or without an errbuf a warning through
 *         the print callback), ENOMEM
 */
USTACK_API struct ustack_procmaps *ustack_procmaps__open_text(const char *buf, size_t len,
							       const struct ustack_procmaps_opts *opts);

/**
 * Replace the mappings of a text object with another recorded text (file
 * ids of files already seen are kept). For an object over a live process in
 * text mode, re-read /proc/PID/maps when @buf is NULL.
 * @param pm the object
 * @param buf maps text or NULL
 * @param len its length
 * @return 0, -EBADMSG (malformed line), -ESRCH, -EINVAL (ioctl mode with a buffer)
 */
USTACK_API int ustack_procmaps__reload(struct ustack_procmaps *pm, const char *buf, size_t len);

/**
 * Deprecated since 0.2 (kept for the ABI): use opts->errbuf, whose message
 * names the line. Line number (1-based) of the last malformed line met by
 * a text parse in this thread, or 0.
 * @return line number
 */
USTACK_API unsigned int ustack_procmaps__error_line(void);

/** Free everything; NULL is a no-op. @param pm the object */
USTACK_API void ustack_procmaps__close(struct ustack_procmaps *pm);

/**
 * @param pm the object
 * @return non-zero when lookups use the PROCMAP_QUERY ioctl, 0 for text
 */
USTACK_API int ustack_procmaps__uses_ioctl(const struct ustack_procmaps *pm);

/** @param pm the object @return the pid given at open (0 for a text buffer) */
USTACK_API int ustack_procmaps__pid(const struct ustack_procmaps *pm);

/**
 * The mapping covering @addr.
 * @param pm the object
 * @param addr address in the target
 * @param vma receives the mapping
 * @return 0, -ENOENT when @addr is not mapped, -ESRCH when the process is
 *         gone, other negative errno from the kernel
 */
USTACK_API int ustack_procmaps__query(struct ustack_procmaps *pm, uint64_t addr, struct ustack_vma *vma);

/**
 * The mapping covering @addr or, if none, the first one above it, keeping
 * only mappings whose flags contain all of @need (e.g. USTACK_VMA_EXEC).
 * Iterate with addr = vma->end.
 * @param pm the object
 * @param addr lowest address of interest
 * @param need required enum ustack_vma_flags bits (READ/WRITE/EXEC/SHARED)
 * @param vma receives the mapping
 * @return 0, -ENOENT when there is none, negative errno
 */
USTACK_API int ustack_procmaps__next(struct ustack_procmaps *pm, uint64_t addr, uint32_t need,
				      struct ustack_vma *vma);

/**
 * Resolve a batch of addresses (a stack) to (file offset, file id). The
 * last mappings found are reused while walking the batch, so each mapping
 * costs at most one ioctl per call. No allocation except the first time a
 * file is seen (its path, build ID and debuglink are fetched once).
 * Addresses are used as given (pass return address - 1 if that is wanted).
 * @param pm the object
 * @param pcs addresses
 * @param n their number
 * @param out receives n results (kind USTACK_VMA_UNMAPPED for an address in
 *        no mapping)
 * @return number of addresses found in a mapping, or a negative errno
 *         (-ESRCH: the process is gone; -EAGAIN: its mappings kept changing
 *         under the query)
 */
USTACK_API int ustack_procmaps__resolve(struct ustack_procmaps *pm, const uint64_t *pcs, size_t n,
					 struct ustack_resolved *out);

/**
 * The file_map record of @file_id (computing its build ID and debuglink if
 * that was not done yet).
 * @param pm the object
 * @param file_id an id returned by this object
 * @param fm receives the record
 * @return 0 or -ENOENT
 */
USTACK_API int ustack_procmaps__file_map(struct ustack_procmaps *pm, uint64_t file_id,
					  struct ustack_file_map *fm);

/**
 * Iterate over the file ids this object has returned (in first-use order).
 * Start with *iter = 0.
 * @param pm the object
 * @param iter cursor, advanced on success
 * @param fm receives the next record
 * @return 0, or -ENOENT after the last one
 */
USTACK_API int ustack_procmaps__next_file_map(struct ustack_procmaps *pm, size_t *iter,
					       struct ustack_file_map *fm);

/**
 * A path through which the ELF file of @vma can be opened from this
 * process: /proc/PID/map_files/START-END (works for deleted files and other
 * mount namespaces), else /proc/PID/root/PATH, else the path itself.
 * @param pm the object
 * @param vma a file mapping returned by this object
 * @param buf receives the path
 * @param size size of @buf
 * @return 0, -ENOENT when no readable path exists (not a file mapping, or
 *         nothing is accessible), -ENAMETOOLONG
 */
USTACK_API int ustack_procmaps__elf_path(struct ustack_procmaps *pm, const struct ustack_vma *vma,
					  char *buf, size_t size);

/** Name of a kind ("file", "anon", "jit", "vdso", ...). Never NULL. @param kind enum ustack_vma_kind @return name */
USTACK_API const char *ustack_vma_kind_name(unsigned int kind);

#ifdef __cplusplus
}
#endif
#endif /* USTACK_PROCMAPS_H */
