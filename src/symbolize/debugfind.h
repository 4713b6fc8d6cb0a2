/* SPDX-License-Identifier: MIT */
/*
 * Where the symbols and DWARF of one ELF file are: the file itself, the
 * build-ID tree of a debug directory, .gnu_debuglink, MiniDebugInfo
 * (.gnu_debugdata) or a debuginfod server. Internal to the library: the
 * symbolizer calls ustack_debugfind() once per file and keeps the result.
 *
 * Order (each step only when the previous found nothing usable):
 *   1. the file itself when it has .debug_info (full DWARF);
 *   2. <debug_dir>/.build-id/xx/rest.debug with the same build ID;
 *   3. .gnu_debuglink, its CRC32 checked, in the file's directory, its
 *      .debug/ subdirectory and <debug_dir>/<directory of the file>/;
 *   4. the file itself when it has .symtab (a file stripped of DWARF only:
 *      steps 2-3 come first so that a separate debug file still gives
 *      lines to the DWARF reader);
 *   5. .gnu_debugdata: an xz-compressed ELF holding a .symtab;
 *   6. debuginfod by build ID, only when DEBUGINFOD_URLS is set.
 * Nothing found: -ENOENT (the caller falls back to the file's .dynsym).
 *
 * Steps 4 and 5 give names but no DWARF (Fedora ships MiniDebugInfo in
 * every binary, Debian strips to .symtab): for source lines and inline
 * chains, ustack_debugfind_dwarf() then looks in the sources that come
 * after, which ustack_debugfind() never reached (debuginfod). Called only
 * when lines are wanted, since it may download.
 *
 * Sections compressed with zstd (SHF_COMPRESSED, ELFCOMPRESS_ZSTD) are not
 * readable by the elfutils of Debian 12, so a file holding any gets a
 * decompressed copy in the cache directory, and that copy is what
 * out->path names. zlib-compressed sections are left to the DWARF reader.
 */
#ifndef USTACK_SYMBOLIZE_DEBUGFIND_H
#define USTACK_SYMBOLIZE_DEBUGFIND_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <ustack/symbolize.h>

struct ustack_elf;

/* Do not look into debug_dir (build-ID tree, debuglink's third place). */
#define USTACK_DEBUGFIND_NO_DEBUG_DIR  0x1u
/* Do not ask debuginfod (set after a server failed once, so that one
 * unreachable server costs one warning and one timeout, not one per file). */
#define USTACK_DEBUGFIND_NO_DEBUGINFOD 0x2u
/* ustack_debugfind_dwarf(): do not look at .gnu_debuglink (tests) */
#define USTACK_DEBUGFIND_NO_DEBUGLINK  0x4u

struct ustack_debugfind_opts {
	size_t sz;             /* sizeof(struct ustack_debugfind_opts) */
	uint32_t flags;        /* USTACK_DEBUGFIND_* */
	const char *debug_dir; /* NULL: /usr/lib/debug */
	/* where decompressed copies go; NULL: $USTACK_CACHE_DIR, else
	 * /var/cache/ustack for root, else $HOME/.cache/ustack; "": none
	 * (copies then live in memory only: symbols work, DWARF does not) */
	const char *cache_dir;
	/* longest wait for debuginfod, in ms; 0: $DEBUGINFOD_TIMEOUT (s) or 10 s */
	unsigned int debuginfod_timeout_ms;
};

/* Set in ustack_debug_found.flags */
#define USTACK_DEBUG_FOUND_DEBUGINFOD_FAILED 0x1u /* server unreachable / timed out */

struct ustack_debug_found {
	unsigned int source;  /* enum ustack_debug_source */
	uint32_t flags;       /* USTACK_DEBUG_FOUND_* */
	/* the file holding the symbols / DWARF as found (what to tell a
	 * person: the debug file itself, "IMAGE:.gnu_debugdata" for
	 * MiniDebugInfo), even when what is read is a decompressed copy */
	char path[PATH_MAX];
	/* the real file whose bytes @elf holds: @path, or its decompressed
	 * copy in the cache ("" when that lives in memory only) */
	char read_path[PATH_MAX];
	/* that file, opened; the caller closes it. NULL when source is
	 * USTACK_DEBUG_SRC_SELF and no copy was made: use the image itself. */
	struct ustack_elf *elf;
};

/**
 * Look for the symbols of one file.
 * @param o options (NULL: defaults)
 * @param image_path path of the file (for .gnu_debuglink's directories); may be NULL
 * @param image the file, opened; may be NULL (only build-ID lookups then)
 * @param build_id its build ID (the recorded one); may be NULL when @len is 0
 * @param warn if not NULL, receives the first warning (also logged)
 * @return 0 (see @out), -ENOENT when nothing beyond .dynsym was found,
 *         -ENOMEM
 */
int ustack_debugfind(const struct ustack_debugfind_opts *o, const char *image_path,
		     const struct ustack_elf *image, const uint8_t *build_id, size_t len,
		     struct ustack_debug_found *out, char *warn, size_t warnlen);

/**
 * Look for DWARF (.debug_info) for a file whose symbols came from
 * @sym_source without any: the sources after it that ustack_debugfind()
 * did not reach or skipped for want of symbols (.gnu_debuglink after a
 * build-ID file with only .symtab; debuginfod after .symtab or
 * MiniDebugInfo). Files without .debug_info are not returned.
 * @param o options (NULL: defaults; USTACK_DEBUGFIND_NO_DEBUGINFOD honoured)
 * @param sym_source enum ustack_debug_source that served the symbols
 * @param image_path, image, build_id, len as for ustack_debugfind()
 * @param out the DWARF file (out->elf opened: the caller closes it)
 * @return 0, or -ENOENT (out->flags may say debuginfod failed)
 */
int ustack_debugfind_dwarf(const struct ustack_debugfind_opts *o, unsigned int sym_source,
			   const char *image_path, const struct ustack_elf *image,
			   const uint8_t *build_id, size_t len, struct ustack_debug_found *out);

/* ---- the parts that read untrusted bytes (exposed for tests and fuzzing) */

/**
 * Check a .gnu_debuglink name: a plain file name (no '/', not "." or "..",
 * printable, shorter than NAME_MAX). @return 0 or -EBADMSG
 */
int ustack_debuglink_name_check(const char *name);

/**
 * Decode an xz stream (MiniDebugInfo) into a malloc'd buffer of at most
 * @max_out bytes. @return 0, -EBADMSG (corrupt), -EFBIG (larger than
 * @max_out), -ENOMEM
 */
int ustack_xz_decode(const uint8_t *in, size_t in_size, size_t max_out, uint8_t **out,
		     size_t *out_size);

/** A compressed section's header (Elf64_Chdr) */
struct ustack_chdr {
	uint32_t type;      /* ELFCOMPRESS_ZLIB (1) or ELFCOMPRESS_ZSTD (2) */
	uint64_t size;      /* uncompressed size */
	uint64_t align;
	uint64_t hdr_size;  /* bytes of header before the compressed data */
};

/** Parse an Elf64_Chdr at the start of a section. @return 0 or -EBADMSG */
int ustack_chdr_parse(const uint8_t *data, size_t size, struct ustack_chdr *out);

/**
 * Decompress an SHF_COMPRESSED section's bytes (header included) into a
 * malloc'd buffer of exactly ch_size bytes, refusing more than @max_out.
 * @return 0, -EBADMSG, -EFBIG, -EOPNOTSUPP (unknown ch_type), -ENOMEM
 */
int ustack_section_decompress(const uint8_t *data, size_t size, size_t max_out, uint8_t **out,
			      size_t *out_size);

/**
 * A copy of ELF file @elf whose zstd-compressed sections are decompressed
 * (new section bytes and section header table appended, the old bytes left
 * in place). @return 0 (*out malloc'd), -ENOENT when it has none,
 * -EBADMSG, -EFBIG, -ENOMEM
 */
int ustack_elf_decompress_copy(const struct ustack_elf *elf, size_t max_out, uint8_t **out,
			       size_t *out_size);

#endif
