/* SPDX-License-Identifier: MIT */
/*
 * ustack symbolizer: (file id, file offset) -> function + offset + path,
 * and source file:line with the chain of inlined functions (DWARF, libdw).
 *
 * A trace stores each user frame as a file offset plus an opaque file id,
 * and one file_map (path, build ID, ...) per id. The symbolizer is given
 * those file_maps, then resolves frames. For each file id it looks for an
 * ELF file, once (cached per id):
 *   1. the *image* (the file that was mapped, for file offset -> vaddr),
 *      first hit wins (since 0.4):
 *      a. each of opts.buildid_dirs, in order, then ustack's build-ID
 *         cache (the recorder's, under the cache directory below), then
 *         perf's ($PERF_BUILDID_DIR, else ~/.debug); the last two not with
 *         USTACK_SYMBOLIZER_NO_BUILDID_CACHE. When the content of the file
 *         is known (ustack_symbolizer__set_file_content()), the entry
 *         named by it (elf-<sha256>); else the first-come entry (elf) with
 *         its build ID checked. perf's cache names nothing by content: its
 *         entry is hashed;
 *      b. opts.symfs + the recorded path when a symfs is given (resolved
 *         inside the symfs: its symlinks do not leave it), else the
 *         recorded path;
 *      c. <debug_dir>/.build-id/xx/rest (the distributions' link to the
 *         binary);
 *      d. this process's vDSO, for a recorded vDSO of the same kernel.
 *      A file found in b, c or perf's cache is used only when its build ID
 *      equals the recorded one and, when the content is known, its size
 *      and SHA-256 too (each file hashed once per symbolizer); when the
 *      trace has no build ID, the recorded path as it is;
 *      ustack_symbolizer__file_image_source() says which place served;
 *   2. the *symbols* (and DWARF), in this order: the debug file captured
 *      beside the image in the build-ID cache that served it (debug-<image
 *      sha256> when the content is known, else "debug" with its build ID
 *      checked); the image itself when it has .debug_info; <debug_dir>/.build-id/xx/rest.debug with the same
 *      build ID; the image's .gnu_debuglink (CRC32 checked) in the image's
 *      directory, its .debug/ subdirectory and <debug_dir>/<image's dir>/;
 *      the image itself when it has .symtab; its .gnu_debugdata
 *      (MiniDebugInfo, xz); debuginfod by build ID when DEBUGINFOD_URLS is
 *      set (DEBUGINFOD_CACHE_PATH honoured; the wait is bounded by
 *      DEBUGINFOD_TIMEOUT seconds, default 10; after one failure the server
 *      is not asked again); else the image's .dynsym.
 *      ustack_symbolizer__file_source() says which one served a file.
 *      The DWARF (source lines, inlined functions) comes from the same file
 *      when it has any; names from .symtab or MiniDebugInfo get their
 *      DWARF from debuginfod when it has it (asked only when lines are
 *      wanted): ustack_symbolizer__file_dwarf_source().
 *      zstd-compressed sections get a decompressed copy under the cache
 *      directory ($USTACK_CACHE_DIR, else /var/cache/ustack for root, else
 *      ~/.cache/ustack), keyed by build ID.
 *      What the DWARF said for each address is kept there too
 *      (lines/<build id>.lines, for the DWARF file it was read from: path,
 *      size, mtime, inode), written by ustack_symbolizer__free(), so that
 *      a later symbolizer asking for the same addresses opens no DWARF.
 *      USTACK_CACHE_DIR set to "" turns all of it off.
 * A file replaced since recording (another build ID at the path) is never
 * trusted: its frames get USTACK_SYM_MISMATCH and no name.
 *
 * Results are cached per (file id, offset, exactness); every pointer handed
 * out stays valid until ustack_symbolizer__free(). Not thread-safe.
 */
#ifndef USTACK_SYMBOLIZE_H
#define USTACK_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/ustack.h>
#include <ustack/procmaps.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What a symbolization found. */
enum ustack_sym_status {
	USTACK_SYM_OK = 0,         /**< name found */
	USTACK_SYM_NO_SYMBOL = 1,  /**< ELF found, but no function symbol covers the
	                                address (or no PT_LOAD holds the offset) */
	USTACK_SYM_NO_FILE = 2,    /**< no usable ELF file for this file id */
	USTACK_SYM_MISMATCH = 3,   /**< the file found has another build ID than
	                                the recorded one: not trusted */
	USTACK_SYM_ANON = 4,       /**< file id 0: an absolute address in no file */
	USTACK_SYM_UNKNOWN_ID = 5, /**< no file_map was added for this file id */
};

/** Where the symbols of a file came from (ustack_symbolizer__file_source()). */
enum ustack_debug_source {
	USTACK_DEBUG_SRC_NONE = 0,          /**< no file found (or not opened) */
	USTACK_DEBUG_SRC_DYNSYM = 1,        /**< the image, which has only .dynsym */
	USTACK_DEBUG_SRC_SELF = 2,          /**< the image's own .symtab / .debug_info */
	USTACK_DEBUG_SRC_BUILD_ID_DIR = 3,  /**< <debug_dir>/.build-id/xx/rest.debug */
	USTACK_DEBUG_SRC_DEBUGLINK = 4,     /**< .gnu_debuglink, CRC checked */
	USTACK_DEBUG_SRC_MINIDEBUGINFO = 5, /**< .gnu_debugdata (xz) */
	USTACK_DEBUG_SRC_DEBUGINFOD = 6,    /**< a debuginfod server */
	USTACK_DEBUG_SRC_BUILDID_CACHE = 7, /**< the debug file captured beside the
	                                         image in the build-ID cache that
	                                         served it (since 0.4) */
};

/** Options of ustack_symbolizer__new(). */
struct ustack_symbolizer_opts {
	size_t sz;              /**< sizeof(struct ustack_symbolizer_opts) */
	uint32_t flags;         /**< USTACK_SYMBOLIZER_* */
	/** root of separate debug files; NULL: "/usr/lib/debug" */
	const char *debug_dir;
	/** since 0.4: build-ID caches (src/bidcache layout: an extracted
	 *  archive, --buildid-dir) looked in before ustack's own cache and
	 *  perf's, NULL-terminated; NULL: none */
	const char *const *buildid_dirs;
	/** since 0.4: directory prefixed to recorded paths (perf's --symfs);
	 *  NULL: the recorded paths as they are */
	const char *symfs;
};

/** Where the image of a file (for offset -> address, and its own
 *  symbols) was found: ustack_symbolizer__file_image_source(). Since 0.4. */
enum ustack_image_source {
	USTACK_IMAGE_SRC_NONE = 0,         /**< not found (or not opened yet) */
	USTACK_IMAGE_SRC_GIVEN_DIR = 1,    /**< one of opts.buildid_dirs */
	USTACK_IMAGE_SRC_USTACK_CACHE = 2, /**< ustack's build-ID cache */
	USTACK_IMAGE_SRC_PERF_CACHE = 3,   /**< perf's (~/.debug, $PERF_BUILDID_DIR) */
	USTACK_IMAGE_SRC_SYMFS = 4,        /**< opts.symfs + the recorded path */
	USTACK_IMAGE_SRC_PATH = 5,         /**< the recorded path */
	USTACK_IMAGE_SRC_DEBUG_DIR = 6,    /**< <debug_dir>/.build-id/xx/rest */
	USTACK_IMAGE_SRC_VDSO = 7,         /**< this process's own vDSO */
	USTACK_IMAGE_SRC_CALLER = 8,       /**< handed in by the caller */
};

/** Do not look in ustack's or perf's build-ID caches (opts.buildid_dirs
 *  still are). Since 0.4. */
#define USTACK_SYMBOLIZER_NO_BUILDID_CACHE 0x8u
/** Leave C++ (Itanium ABI) names mangled. */
#define USTACK_SYMBOLIZER_NO_DEMANGLE 0x1u
/** Do not look into debug_dir at all (only the recorded paths). */
#define USTACK_SYMBOLIZER_NO_DEBUG_DIR 0x2u
/** Read no DWARF: no source lines, no inlined frames (names only, faster). */
#define USTACK_SYMBOLIZER_NO_LINES 0x4u

/** Flags of ustack_symbolizer__symbolize(). */
/** The offset is an exact instruction address (frame 0, an interrupted pc
 *  restored from a signal frame); otherwise it is a return address and the
 *  name is looked up at offset - 1 (the call instruction). */
#define USTACK_SYM_EXACT_PC 0x1u

/** One resolved frame. Pointers are valid until ustack_symbolizer__free(). */
struct ustack_sym {
	const char *name;    /**< function (demangled unless NO_DEMANGLE); NULL unless OK */
	uint64_t sym_offset; /**< pc - start of the function (OK only) */
	uint64_t vaddr;      /**< link-time address of the pc (0 when unknown) */
	const char *path;    /**< recorded path of the file (NULL for ANON/UNKNOWN_ID) */
	const char *elf_path;/**< file the name came from (NULL when none) */
	uint32_t status;     /**< enum ustack_sym_status */
	/* Fields below were added in 0.2: ustack_symbolizer__symbolize() does
	 * not write them (a caller built before them has a smaller struct);
	 * ustack_symbolizer__symbolize_frames() does. */
	const char *file;    /**< source file of the pc in this function (DWARF),
	                          NULL when unknown */
	uint32_t line;       /**< source line, 0 when unknown */
	uint32_t column;     /**< source column, 0 when unknown */
	uint32_t inlined;    /**< 1: this function was inlined into the next
	                          frame of the chain (no machine frame of its own) */
	uint32_t reserved;   /**< 0 */
	/* Added in 0.3 (after the 0.2 fields; written by
	 * ustack_symbolizer__symbolize_frames() when sym_sz covers it): */
	uint32_t decl_line;  /**< the line where this entry's function is
	                          declared (DW_AT_decl_line; pprof's
	                          Function.start_line), 0 when unknown */
};

/** Size of struct ustack_sym before file/line/inlined were added. */
#define USTACK_SYM_SIZE_V1 offsetof(struct ustack_sym, file)

struct ustack_symbolizer;

/**
 * Create a symbolizer.
 * @param opts options or NULL for defaults
 * @return the symbolizer, or NULL with errno (ENOMEM, EINVAL; the errno of
 *         opening one of opts.buildid_dirs or opts.symfs, after a warning
 *         naming it, e.g. ENOENT)
 */
USTACK_API struct ustack_symbolizer *
ustack_symbolizer__new(const struct ustack_symbolizer_opts *opts);

/**
 * Free a symbolizer, its cache and every file it opened. NULL is a no-op.
 * @param s the symbolizer
 */
USTACK_API void ustack_symbolizer__free(struct ustack_symbolizer *s);

/**
 * Tell the symbolizer what a file id stands for (the contents are copied).
 * Nothing is opened yet: files are looked for at first use. A second call
 * for the same id is ignored (ids name one file for a whole trace).
 * @param s the symbolizer
 * @param fm the file_map (file_id != 0)
 * @return 0, -EINVAL (file_id 0), -ENOMEM
 */
USTACK_API int ustack_symbolizer__add_file(struct ustack_symbolizer *s,
					   const struct ustack_file_map *fm);

/**
 * Tell the symbolizer what a file id's file held when it was recorded (a
 * trace's FILE_CONTENT record). The file is then named only from a file with
 * this content: the build-ID cache's copy of it, or a file found by build ID
 * or path whose SHA-256 is the same; any other is refused (MISMATCH). Call
 * before the first lookup of that id. Since 0.4.
 * @param s the symbolizer
 * @param file_id a file id given to ustack_symbolizer__add_file()
 * @param sha256 SHA-256 of the whole file (32 bytes)
 * @param size its size in bytes
 * @return 0 (also for the same content given again), -EINVAL, -ENOENT
 *         (unknown id), -EEXIST (another content was given for the id: the
 *         first is kept), -EBUSY (the id was looked up already: too late)
 */
USTACK_API int ustack_symbolizer__set_file_content(struct ustack_symbolizer *s, uint64_t file_id,
						   const uint8_t *sha256, uint64_t size);

/**
 * Where the image of @file_id was found (opens it when not done yet).
 * Since 0.4.
 * @param s the symbolizer
 * @param file_id the file id
 * @param path receives the file opened (NULL when none); valid until
 *        ustack_symbolizer__free()
 * @param dir_index receives, for USTACK_IMAGE_SRC_GIVEN_DIR, the index in
 *        opts.buildid_dirs (may be NULL)
 * @return enum ustack_image_source
 */
USTACK_API int ustack_symbolizer__file_image_source(struct ustack_symbolizer *s, uint64_t file_id,
						    const char **path, unsigned int *dir_index);

/**
 * Resolve one frame.
 * @param s the symbolizer
 * @param file_id the frame's file id (0: @offset is an absolute address)
 * @param offset file offset of the pc (or the address when file_id is 0)
 * @param flags USTACK_SYM_EXACT_PC when the pc is not a return address
 * @param out receives the result (see its status): the fields up to
 *        status (USTACK_SYM_SIZE_V1 bytes); file, line and inlined are not
 *        written (see ustack_symbolizer__symbolize_frames())
 * @return 0 (even when nothing was found: see out->status), -EINVAL, -ENOMEM
 */
USTACK_API int ustack_symbolizer__symbolize(struct ustack_symbolizer *s, uint64_t file_id,
					    uint64_t offset, uint32_t flags,
					    struct ustack_sym *out);

/**
 * Resolve one frame with its source lines and inlined functions (DWARF).
 * A pc inside inlined code is several functions: out[0] is the innermost
 * (inlined: 1, file:line of the pc), each next one the function it was
 * inlined into (file:line of the call site), the last the function that
 * holds the machine code (inlined: 0, name and sym_offset from the ELF
 * symbol, as ustack_symbolizer__symbolize() gives them). A frame without
 * DWARF is one entry with file NULL and line 0. Inlined entries have
 * sym_offset 0 and the outer entry's vaddr, path, elf_path and status.
 * As ustack_symbolizer__symbolize(), the lookup is at offset - 1 unless
 * USTACK_SYM_EXACT_PC, and cached per (file id, offset, exactness).
 * @param s the symbolizer
 * @param file_id the frame's file id (0: @offset is an absolute address)
 * @param offset file offset of the pc (or the address when file_id is 0)
 * @param flags USTACK_SYM_EXACT_PC when the pc is not a return address
 * @param out array of @max entries, each @sym_sz bytes apart
 * @param max entries @out has room for (0: only count)
 * @param sym_sz sizeof(struct ustack_sym) as the caller was built with (at
 *        least USTACK_SYM_SIZE_V1; fields past it are left alone)
 * @return the number of entries of the chain (>= 1; more than @max when
 *         @out was too small: the first @max were written), -EINVAL, -ENOMEM
 */
USTACK_API int ustack_symbolizer__symbolize_frames(struct ustack_symbolizer *s,
						   uint64_t file_id, uint64_t offset,
						   uint32_t flags, struct ustack_sym *out,
						   size_t max, size_t sym_sz);

/**
 * How the file of @file_id was found (opens it when not done yet).
 * @param s the symbolizer
 * @param file_id the file id
 * @param elf_path if not NULL, receives the file the symbols come from (or NULL)
 * @return an enum ustack_sym_status: OK (usable), NO_FILE, MISMATCH,
 *         UNKNOWN_ID, ANON (file id 0)
 */
USTACK_API int ustack_symbolizer__file_status(struct ustack_symbolizer *s, uint64_t file_id,
					      const char **elf_path);

/**
 * Which source served the symbols of @file_id (opens it when not done yet).
 * @param s the symbolizer
 * @param file_id the file id
 * @return an enum ustack_debug_source (USTACK_DEBUG_SRC_NONE for an unknown
 *         id, file id 0, or no file found)
 */
USTACK_API int ustack_symbolizer__file_source(struct ustack_symbolizer *s, uint64_t file_id);

/**
 * Which source serves the DWARF (source lines, inlined functions) of
 * @file_id: the symbols' own source when that file has DWARF; else, for
 * names from .symtab or MiniDebugInfo, the source found for DWARF alone
 * (debuginfod; .gnu_debuglink after a build-ID file without DWARF). Looks
 * for it now when not done yet (may ask debuginfod).
 * @param s the symbolizer
 * @param file_id the file id
 * @param path if not NULL, receives the file the DWARF comes from, as found
 *        (not a decompressed copy), or NULL
 * @return an enum ustack_debug_source; USTACK_DEBUG_SRC_NONE when no DWARF
 *         was found, with USTACK_SYMBOLIZER_NO_LINES, or for an unusable id
 */
USTACK_API int ustack_symbolizer__file_dwarf_source(struct ustack_symbolizer *s,
						    uint64_t file_id, const char **path);

/**
 * Name of a debug source: "none", "dynsym", "self", "build-id dir",
 * "debuglink", "minidebuginfo", "debuginfod", "build-ID cache".
 * @param source enum ustack_debug_source
 * @return the name, never NULL ("unknown" for other values)
 */
USTACK_API const char *ustack_debug_source_name(unsigned int source);

/**
 * Name of an image source: "none", "build-ID dir" (opts.buildid_dirs),
 * "ustack cache", "perf cache", "symfs", "path", "debug dir", "vdso",
 * "caller". Since 0.4.
 * @param source enum ustack_image_source
 * @return the name, never NULL ("unknown" for other values)
 */
USTACK_API const char *ustack_image_source_name(unsigned int source);

/**
 * Name of a status ("ok", "no symbol", "no file", "build ID mismatch", ...).
 * @param status enum ustack_sym_status
 * @return the name, never NULL
 */
USTACK_API const char *ustack_sym_status_name(unsigned int status);

/**
 * Demangle a C++ (Itanium ABI, "_Z...") name with the C++ runtime's
 * __cxa_demangle, found at run time (libstdc++ is not a link dependency).
 * @param name the mangled name
 * @return a malloc'd demangled name the caller frees, or NULL (not a
 *         mangled name, no C++ runtime on this host, or invalid)
 */
USTACK_API char *ustack_demangle(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* USTACK_SYMBOLIZE_H */
