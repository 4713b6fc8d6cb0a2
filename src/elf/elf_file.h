/* SPDX-License-Identifier: MIT */
/*
 * ELF file access: a read-only view of an ELF64 little-endian file (mapped
 * from disk or given as memory), its sections, segments, notes and symbols.
 * Every field is validated before use; a corrupt file gives -EBADMSG (or
 * NULL with errno = EBADMSG) and a warning naming the file and the offset.
 */
#ifndef USTACK_ELF_ELF_FILE_H
#define USTACK_ELF_ELF_FILE_H

#include <stddef.h>
#include <stdint.h>

struct ustack_elf;

struct ustack_elf_section {
	const uint8_t *data; /* NULL for SHT_NOBITS */
	uint64_t size;       /* bytes available at data */
	uint64_t addr;       /* sh_addr (vaddr when loaded) */
	uint64_t offset;     /* sh_offset in the file */
	uint32_t type;       /* sh_type */
	uint64_t flags;      /* sh_flags */
};

struct ustack_elf_segment {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz, align;
};

/**
 * Map @path read-only and validate its ELF header, program and section
 * header tables.
 * @return the file, or NULL with errno (ENOENT, EACCES, EBADMSG for a file
 *         that is not a valid ELF64 little-endian file, ...)
 */
struct ustack_elf *ustack_elf__open(const char *path);

/**
 * The same for a file the caller opened (and closes: the mapping outlives
 * the descriptor). @name is the file's path in messages and
 * ustack_elf__path(). What is read is the file @fd is, whatever the path
 * names by now.
 */
struct ustack_elf *ustack_elf__open_fd(int fd, const char *name);

/**
 * The same over memory the caller keeps alive (no copy). @name is used in
 * messages.
 */
struct ustack_elf *ustack_elf__open_mem(const void *data, size_t size, const char *name);

/**
 * The same over a malloc'd buffer that the file then owns (freed by
 * ustack_elf__close(); on failure the caller keeps it): a decompressed
 * file that exists only in memory.
 */
struct ustack_elf *ustack_elf__open_mem_owned(void *data, size_t size, const char *name);

/** Unmap and free; NULL is a no-op. */
void ustack_elf__close(struct ustack_elf *elf);

/** Name given at open (path or @name). */
const char *ustack_elf__path(const struct ustack_elf *elf);
/** Whole file contents and size. */
const uint8_t *ustack_elf__data(const struct ustack_elf *elf, size_t *size);
/** e_type (ET_EXEC, ET_DYN, ...) and e_machine. */
unsigned int ustack_elf__type(const struct ustack_elf *elf);
unsigned int ustack_elf__machine(const struct ustack_elf *elf);
/** e_entry: where the kernel starts a program made of this file (0: none). */
uint64_t ustack_elf__entry(const struct ustack_elf *elf);

/**
 * Find a section by name.
 * @return 0, -ENOENT when absent, -EBADMSG when its header is corrupt
 *         (its bytes lie outside the file)
 */
int ustack_elf__section(const struct ustack_elf *elf, const char *name,
			struct ustack_elf_section *out);

/** Number of program headers; @i-th header into @out (0 or -ERANGE). */
unsigned int ustack_elf__nr_segments(const struct ustack_elf *elf);
int ustack_elf__segment(const struct ustack_elf *elf, unsigned int i,
			struct ustack_elf_segment *out);
/** First program header of type @p_type: 0 or -ENOENT. */
int ustack_elf__find_segment(const struct ustack_elf *elf, uint32_t p_type,
			     struct ustack_elf_segment *out);
/**
 * Bytes of a segment's file image (p_offset .. p_offset + p_filesz).
 * @return pointer or NULL when the segment lies outside the file
 */
const uint8_t *ustack_elf__segment_data(const struct ustack_elf *elf,
					const struct ustack_elf_segment *seg);

/**
 * Translate a file offset inside a PT_LOAD segment to the vaddr it is loaded
 * at (and back). @return 0 or -ENOENT when no PT_LOAD covers it.
 */
int ustack_elf__offset_to_vaddr(const struct ustack_elf *elf, uint64_t off, uint64_t *vaddr);
int ustack_elf__vaddr_to_offset(const struct ustack_elf *elf, uint64_t vaddr, uint64_t *off);

/**
 * GNU build ID (NT_GNU_BUILD_ID) from the notes.
 * @return its length (copied up to @size bytes into @buf), -ENOENT when the
 *         file has none, -EBADMSG when the notes are corrupt
 */
int ustack_elf__build_id(const struct ustack_elf *elf, uint8_t *buf, size_t size);

/**
 * .gnu_debuglink: file name and CRC32 of the separate debug file.
 * @return 0, -ENOENT, -EBADMSG
 */
int ustack_elf__debuglink(const struct ustack_elf *elf, const char **name, uint32_t *crc);

/**
 * Function symbol covering @vaddr, from .symtab, else .dynsym (the symbol
 * index is built on first use: a cold path that allocates).
 * @param name receives the symbol name (valid while the file is open)
 * @param sym_start receives the symbol's value
 * @return 0, -ENOENT when no symbol covers it
 */
int ustack_elf__symbolize(struct ustack_elf *elf, uint64_t vaddr, const char **name,
			  uint64_t *sym_start);

/**
 * ustack_elf__symbolize() in two halves, for a caller that looks in two
 * files (a debug file, then the image): first the sized symbols of both,
 * then the zero-size fallback of the file whose nearest symbol start is
 * the closest, so that a zero-size symbol of one file never reaches over
 * a symbol of the other.
 */
int ustack_elf__symbolize_sized(struct ustack_elf *elf, uint64_t vaddr, const char **name,
				uint64_t *sym_start);
/**
 * The caller is about to look up @n addresses it has not asked before
 * (a snapshot names its threads' frames in groups). When scanning for
 * each would cost more than building the symbol index, the index is
 * built now instead of after the scans the unknown case pays first.
 */
void ustack_elf__expect_lookups(struct ustack_elf *elf, size_t n);
/**
 * The caller is about to look up these @n addresses (not yet known to be
 * distinct): they are answered now, by one pass over the symbol tables,
 * and ustack_elf__symbolize_sized() then gives each answer without a scan
 * (the same answer as a scan or the index: each symbol is offered to the
 * addresses it covers by the same rule). Replaces the addresses of an
 * earlier call. An index already built answers any address at once, and
 * for many addresses one is built instead (ustack_elf__expect_lookups()).
 */
void ustack_elf__expect_addrs(struct ustack_elf *elf, const uint64_t *vaddrs, size_t n);
/**
 * The zero-size code symbol reaching @vaddr (see elf_file.c), if any.
 * @param nearest receives the start of the closest code symbol at or
 *        before @vaddr (within the reach), 0 when none: compare files by it
 * @return 0, -ENOENT
 */
int ustack_elf__symbolize_zero_size(struct ustack_elf *elf, uint64_t vaddr, const char **name,
				    uint64_t *sym_start, uint64_t *nearest);

/** A defined function symbol (ustack_elf__for_each_func()). */
struct ustack_elf_symbol {
	const char *name;    /* as stored ("name@VERSION" where the table has it) */
	uint64_t value, size;
	uint8_t type, bind;  /* STT_FUNC or STT_GNU_IFUNC; STB_* */
	uint8_t table;       /* 0: .symtab, 1: .dynsym */
};

/**
 * Call @fn for every defined, named function symbol (STT_FUNC,
 * STT_GNU_IFUNC) of .symtab, then of .dynsym, in table order: a lookup by
 * name (probes), where the symbolizer's index looks up by address.
 * @return 0 when every symbol was offered, the first non-zero value @fn
 *         returned, -ENOENT when the file has neither table
 */
int ustack_elf__for_each_func(struct ustack_elf *elf,
			      int (*fn)(void *ctx, const struct ustack_elf_symbol *sym), void *ctx);

/** Format a build ID as lowercase hex into @out (2*len+1 bytes). */
void ustack_hex(const uint8_t *bytes, size_t len, char *out);

#endif
