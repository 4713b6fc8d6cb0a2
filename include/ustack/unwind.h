/* SPDX-License-Identifier: MIT */
/*
 * The unwinder, for programs that embed ustack: from three registers and
 * a way to read the target's memory, the frames of one thread.
 *
 * Where the code of a pc comes from is pluggable (as libdwfl's callbacks):
 *   - a process's mappings, read from /proc/PID/maps (opts.pid), or
 *   - a list of mappings the embedder adds (ustack_unwinder__add_mapping(),
 *     e.g. from a core file or a recorded maps text), or
 *   - a callback asked once per mapping (opts.find_module).
 * Each mapping names its file (path) or holds an in-memory ELF image (the
 * vDSO); its SFrame and DWARF CFI tables are opened once and cached (at most
 * opts.max_tables files at once, by file identity).
 *
 * Memory is read through a callback (process_vm_readv, a core file...) or
 * from a copy of the stack (bytes and the address they start at), or both
 * (the copy first). The unwinder itself allocates nothing per frame.
 *
 * An unwinder belongs to one thread at a time.
 */
#ifndef USTACK_UNWIND_PUBLIC_H
#define USTACK_UNWIND_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/ustack.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The registers an unwind starts from (x86-64: rip, rsp, rbp). */
struct ustack_regs {
	uint64_t pc, sp, fp;
};

/** Flags of a mapping. */
enum ustack_mapping_flags {
	/** the mapping is executable: a frame-pointer step may return into it */
	USTACK_MAPPING_EXEC = 1u << 0,
};

/** One mapping of the target's address space. */
struct ustack_mapping {
	size_t sz;             /**< sizeof(struct ustack_mapping) */
	uint64_t start, end;   /**< runtime range [start, end) */
	uint64_t file_offset;  /**< offset in the file mapped at @start */
	const char *path;      /**< file to read tables from (NULL: none, or @image);
	                            with @image, only the name its frames get
	                            ("[vdso]"; NULL: "[image]") */
	const void *image;     /**< or an ELF image in memory (the vDSO), @image_size bytes,
	                            mapped from its offset 0 at @start */
	size_t image_size;
	/** expected build ID (NULL: not checked). A file whose build ID
	 *  differs gets no table (and a warning): it is not the file that
	 *  was mapped */
	const uint8_t *build_id;
	size_t build_id_size;
	uint32_t flags;        /**< enum ustack_mapping_flags */
};

/**
 * Which mapping holds @pc. Fill @out (already zeroed, out->sz set) and
 * return 0, or return -ENOENT when nothing is mapped there. Strings and the
 * image are copied before this returns.
 */
typedef int (*ustack_find_mapping_fn)(void *ctx, uint64_t pc, struct ustack_mapping *out);

/** Read @len bytes at @addr of the target: 0 or -EFAULT. */
typedef int (*ustack_read_mem_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/**
 * Where the unwind tables of mapping @m come from (libdwfl's find_elf):
 * write the path of the ELF file to read SFrame and DWARF CFI from into
 * @path (@path_sz bytes, NUL-terminated) and return 0, or return -ENOENT
 * for the default (@m's own path). Called once per file mapping, when a pc
 * first needs its tables. The file must have @m's build ID when @m has one
 * (a copy of the mapped file, or its separate debug file with
 * .debug_frame). Not called for in-memory images.
 */
typedef int (*ustack_find_table_file_fn)(void *ctx, const struct ustack_mapping *m, char *path,
					 size_t path_sz);

struct ustack_unwinder_opts {
	size_t sz;            /**< sizeof(struct ustack_unwinder_opts) */
	/** > 0: the mappings of this live process (/proc/PID/maps), looked up
	 *  as pcs need them */
	int pid;
	/** or this callback (used when pid is 0) */
	ustack_find_mapping_fn find_mapping;
	void *find_mapping_ctx;
	/** files whose tables stay open at once (0: 256) */
	unsigned int max_tables;
	/** where a mapping's tables come from (NULL: its path); since 0.2 */
	ustack_find_table_file_fn find_table_file;
	void *find_table_file_ctx;
};

struct ustack_unwinder;

/**
 * A new unwinder. With neither pid nor find_mapping, mappings come only
 * from ustack_unwinder__add_mapping().
 * @param opts NULL for defaults
 * @return the unwinder, or NULL with errno (EINVAL: bad opts; ENOMEM)
 */
USTACK_API struct ustack_unwinder *ustack_unwinder__new(const struct ustack_unwinder_opts *opts);

/** Free @u and every table it holds; NULL is a no-op. @param u the unwinder */
USTACK_API void ustack_unwinder__free(struct ustack_unwinder *u);

/**
 * Add one mapping (copied: path, image and build ID may be freed after).
 * Mappings must not overlap; a new one replaces those it overlaps.
 * @param u the unwinder
 * @param m the mapping
 * @return 0, -EINVAL (bad sz, start >= end, neither path nor image), -ENOMEM
 */
USTACK_API int ustack_unwinder__add_mapping(struct ustack_unwinder *u, const struct ustack_mapping *m);

/** Flags of one unwind. */
enum ustack_unwind_flags {
	/** regs.pc is a return address, not an exact pc (the caller already
	 *  left the frame it was in) */
	USTACK_UNWIND_FIRST_IS_RETURN = 1u << 0,
	/** regs.fp is not known (only pc and sp are, as /proc/PID/syscall
	 *  gives them for a thread blocked in the kernel): a frame whose CFA
	 *  needs rbp before a deeper frame restored it from the stack, or
	 *  the frame-pointer heuristic, ends the walk with
	 *  USTACK_STOP_NO_INFO instead of using a value that is not there
	 *  (since 0.3) */
	USTACK_UNWIND_FP_UNKNOWN = 1u << 1,
};

struct ustack_unwind_opts {
	size_t sz;              /**< sizeof(struct ustack_unwind_opts) */
	/** memory of the target (NULL: only @stack can be read) */
	ustack_read_mem_fn read;
	void *read_ctx;
	/** a copy of the stack: @stack_size bytes that were at @stack_addr.
	 *  Read before @read; without @read, the CFA must stay inside it */
	const void *stack;
	size_t stack_size;
	uint64_t stack_addr;
	unsigned int flags;     /**< enum ustack_unwind_flags */
	/** rbx of the frame of @regs (x86-64), used when @has_bx is non-zero:
	 *  the rare DWARF CFI rows whose CFA is rbx-based (stack realignment,
	 *  glibc's _dl_runtime_resolve) need it when no frame below saved it;
	 *  without it such a row ends the walk (frame-pointer fallback) */
	uint64_t bx;
	int has_bx;
};

/**
 * Unwind one thread.
 * @param u the unwinder
 * @param regs its registers
 * @param opts how to read its memory (read or stack must be given):
 *        required, NULL gives -EINVAL
 * @param frames receives up to @max frames; frames[0] is the frame of @regs
 *        (method USTACK_METHOD_REGS)
 * @param max capacity of @frames (at most 1024 are produced)
 * @param stop receives the enum ustack_stop_reason (may be NULL)
 * @return the number of frames (>= 0), or -EINVAL (bad opts, no memory
 *         to read)
 */
USTACK_API int ustack_unwinder__unwind(struct ustack_unwinder *u, const struct ustack_regs *regs,
				       const struct ustack_unwind_opts *opts,
				       struct ustack_frame *frames, int max, unsigned int *stop);

/** Where a frame's pc lies. */
struct ustack_frame_info {
	size_t sz;            /**< sizeof(struct ustack_frame_info), set by the caller */
	const char *path;     /**< mapping's path; an image's name ("[vdso]" from a pid
	                           or a core; "[image]" when given without one) */
	uint64_t map_start;   /**< start of the mapping */
	uint64_t file_offset; /**< offset in the file of pc (of pc - 1 for a return address) */
	const char *symbol;   /**< ELF symbol (.symtab, else .dynsym), or NULL */
	uint64_t symbol_off;  /**< pc - symbol start */
	/** build ID of the file (NULL when it has none or has no table) */
	const uint8_t *build_id;
	size_t build_id_size;
	/** non-zero: the file's tables were used for this pc */
	int has_table;
};

/**
 * Describe a frame given by ustack_unwinder__unwind(). Strings stay valid
 * until ustack_unwinder__free().
 * @param u the unwinder
 * @param f the frame (its flags say whether pc is exact)
 * @param info receives the description; set info->sz first (an older,
 *        shorter struct gets the fields it has; a newer one's unknown
 *        fields are zeroed; sz stays as set)
 * @return 0, -ENOENT (no mapping holds the pc), -EINVAL (sz too small to
 *         reach path)
 */
USTACK_API int ustack_unwinder__describe(struct ustack_unwinder *u, const struct ustack_frame *f,
					 struct ustack_frame_info *info);

#ifdef __cplusplus
}
#endif
#endif
