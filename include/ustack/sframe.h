/* SPDX-License-Identifier: MIT */
/*
 * ustack - SFrame sections of ELF files: dump, validate, look up rows.
 *
 * A read-only view of the .sframe section (SFrame v1, v2 or v3) of an ELF
 * file on disk. Addresses are the file's own virtual addresses (sh_addr
 * space). Functions returning int return 0 or a negative errno;
 * -ENOENT means "no information", -EBADMSG "corrupt information".
 */
#ifndef USTACK_SFRAME_H
#define USTACK_SFRAME_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/ustack.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An ELF file with its .sframe section (opaque). */
struct ustack_sframe_file;

/** Base register of the CFA. */
enum ustack_sframe_reg {
	USTACK_SFRAME_REG_SP = 0,
	USTACK_SFRAME_REG_FP = 1,
};

/** How RA or FP of the caller is found. */
enum ustack_sframe_rule {
	USTACK_SFRAME_RULE_SAME = 0,      /**< not saved: unchanged */
	USTACK_SFRAME_RULE_OFFSET = 1,    /**< saved at CFA + offset */
	USTACK_SFRAME_RULE_UNDEFINED = 2, /**< none (outermost frame) */
};

/** Flags of a row. */
enum ustack_sframe_row_flags {
	USTACK_SFRAME_ROW_OUTERMOST = 1u << 0,      /**< no caller */
	USTACK_SFRAME_ROW_NEEDS_FALLBACK = 1u << 1, /**< rule not expressible as a row */
	USTACK_SFRAME_ROW_SIGNAL = 1u << 2,         /**< signal trampoline */
};

/** PC types of a function. */
enum ustack_sframe_pc_type {
	USTACK_SFRAME_PCINC = 0,  /**< row starts are offsets from the function start */
	USTACK_SFRAME_PCMASK = 1, /**< row starts repeat every rep_size bytes (PLT) */
};

/** Section-wide facts from the SFrame header. */
struct ustack_sframe_header {
	unsigned int version;    /**< 1, 2 or 3 */
	unsigned int flags;      /**< raw preamble flags (1 SORTED, 2 FRAME_POINTER, 4 PCREL) */
	unsigned int abi;        /**< 2 AArch64 LE, 3 AMD64 LE */
	int fixed_fp_offset;     /**< 0 when FREs carry the FP offset */
	int fixed_ra_offset;     /**< 0 when FREs carry the RA offset (-8 on AMD64) */
	unsigned int auxhdr_len;
	unsigned int nr_fdes;
	unsigned int nr_fres;
	unsigned int fre_len;    /**< bytes of the FRE sub-section */
	uint64_t section_addr;   /**< sh_addr of .sframe */
	uint64_t section_size;
	uint64_t section_offset; /**< sh_offset of .sframe */
};

/** One function (FDE). */
struct ustack_sframe_func {
	uint64_t start;        /**< first address (file vaddr) */
	uint32_t size;         /**< bytes */
	uint32_t nr_rows;      /**< FREs */
	unsigned int pc_type;  /**< enum ustack_sframe_pc_type */
	unsigned int rep_size; /**< repetition block size (PCMASK) */
	unsigned int fre_type; /**< 0, 1, 2: row starts stored in 1, 2, 4 bytes */
	unsigned int fde_type; /**< v3: 0 default, 1 flexible */
	unsigned int info;     /**< raw info byte */
	unsigned int info2;    /**< raw v3 info2 byte, else 0 */
	int signal;            /**< v3: signal trampoline */
	uint64_t offset;       /**< byte offset of the FDE in the section */
};

/** One row (FRE) of a function, or the result of a lookup. */
struct ustack_sframe_row {
	uint64_t start;        /**< first address covered (file vaddr); for a PCMASK
	                            function in __func_row(): offset in the block */
	uint64_t end;          /**< one past the last address covered */
	uint32_t start_off;    /**< raw FRE start offset */
	uint64_t offset;       /**< byte offset of the FRE in the section */
	unsigned int cfa_reg;  /**< enum ustack_sframe_reg */
	int cfa_off;           /**< CFA = reg + cfa_off */
	unsigned int ra_rule;  /**< enum ustack_sframe_rule */
	int ra_off;            /**< RA at CFA + ra_off (rule OFFSET) */
	unsigned int fp_rule;  /**< enum ustack_sframe_rule */
	int fp_off;            /**< FP at CFA + fp_off (rule OFFSET) */
	unsigned int flags;    /**< enum ustack_sframe_row_flags */
	unsigned int info;     /**< raw FRE info byte */
	unsigned int nr_words; /**< data words in the FRE */
	unsigned int word_size;/**< bytes per data word */
	int words[15];         /**< the data words (sign-extended) */
};

/**
 * Open @path (ELF), find its .sframe section and check the SFrame header.
 * @param path ELF file
 * @return the file, or NULL with errno: ENODATA when the file has no .sframe
 *         section, EBADMSG for a corrupt header, ENOTSUP for an unsupported
 *         version or ABI, or the error of opening the file
 */
USTACK_API struct ustack_sframe_file *ustack_sframe_file__open(const char *path);

/** Options of ustack_sframe_file__open_opts() (set sz = sizeof(opts)). */
struct ustack_sframe_file_opts {
	size_t sz;
	/** if not NULL, receives a one-line reason on failure
	 *  (".sframe: bad magic", "no .sframe section") */
	char *errbuf;
	size_t errbuf_sz;
};

/**
 * ustack_sframe_file__open() with options (since 0.2).
 * @param path ELF file
 * @param opts options or NULL
 * @return the file, or NULL with errno as for ustack_sframe_file__open(),
 *         or EINVAL (NULL path, opts from a newer header asking for
 *         something unknown)
 */
USTACK_API struct ustack_sframe_file *
ustack_sframe_file__open_opts(const char *path, const struct ustack_sframe_file_opts *opts);

/**
 * Deprecated (0.1): ustack_sframe_file__open_opts() with opts.errbuf.
 * @param path ELF file
 * @param errbuf receives a NUL-terminated message (may be NULL)
 * @param errlen size of @errbuf
 * @return as ustack_sframe_file__open_opts()
 */
__attribute__((deprecated("use ustack_sframe_file__open_opts()")))
USTACK_API struct ustack_sframe_file *ustack_sframe_file__open_ex(const char *path, char *errbuf,
								  size_t errlen);

/**
 * Close the file. NULL is a no-op.
 * @param f file or NULL
 */
USTACK_API void ustack_sframe_file__close(struct ustack_sframe_file *f);

/**
 * SFrame format version.
 * @param f open file
 * @return 1, 2 or 3
 */
USTACK_API unsigned int ustack_sframe_file__version(const struct ustack_sframe_file *f);

/**
 * Preamble flags.
 * @param f open file
 * @return raw flags (1 SORTED, 2 FRAME_POINTER, 4 FDE_FUNC_START_PCREL)
 */
USTACK_API unsigned int ustack_sframe_file__flags(const struct ustack_sframe_file *f);

/**
 * Header facts.
 * @param f open file
 * @param hdr receives them
 * @return 0
 */
USTACK_API int ustack_sframe_file__header(const struct ustack_sframe_file *f,
					  struct ustack_sframe_header *hdr);

/**
 * Number of functions (FDEs).
 * @param f open file
 * @return count
 */
USTACK_API unsigned int ustack_sframe_file__nr_funcs(const struct ustack_sframe_file *f);

/**
 * Function @i.
 * @param f open file
 * @param i index, < ustack_sframe_file__nr_funcs()
 * @param out receives it
 * @return 0, -ERANGE, -EBADMSG
 */
USTACK_API int ustack_sframe_file__func(const struct ustack_sframe_file *f, unsigned int i,
					struct ustack_sframe_func *out);

/**
 * Row @j of function @i. For PCINC functions start/end are file vaddrs;
 * for PCMASK functions they are offsets inside the repetition block.
 * @param f open file
 * @param i function index
 * @param j row index, < nr_rows of the function
 * @param out receives the row
 * @return 0, -ERANGE, -EBADMSG
 */
USTACK_API int ustack_sframe_file__func_row(const struct ustack_sframe_file *f, unsigned int i,
					    unsigned int j, struct ustack_sframe_row *out);

/**
 * The row covering @addr (file vaddr); start/end are the range where it
 * holds (for PCMASK, inside the block containing @addr). The raw fields
 * (start_off, offset, info, words) are not filled by a lookup.
 * @param f open file
 * @param addr address
 * @param out receives the row
 * @return 0, -ENOENT (no row covers addr), -EBADMSG (corrupt table)
 */
USTACK_API int ustack_sframe_file__lookup(const struct ustack_sframe_file *f, uint64_t addr,
					  struct ustack_sframe_row *out);

/**
 * Check every function and row (bounds, sort order, row starts increasing
 * and inside their function, encodings, counts).
 * A check whose result is its message, so errbuf is an argument rather
 * than an option (the same two names as every opts' errbuf).
 * @param f open file
 * @param errbuf receives e.g. "FDE 3 FRE 7 at offset 0x1a4: offset beyond
 *        section" on failure (may be NULL)
 * @param errbuf_sz size of @errbuf
 * @return 0 or the first error (-EBADMSG)
 */
USTACK_API int ustack_sframe_file__validate(const struct ustack_sframe_file *f, char *errbuf,
					    size_t errbuf_sz);

#ifdef __cplusplus
}
#endif
#endif /* USTACK_SFRAME_H */
