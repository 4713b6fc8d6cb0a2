/* SPDX-License-Identifier: MIT */
/*
 * The recorder's picture of each process's executable mappings, kept from
 * perf's MMAP2 / COMM(exec) / FORK / EXIT records (and read from the live
 * process through src/procmaps for processes already running when
 * recording starts), so samples can be unwound and normalized even after
 * their process exited.
 *
 * It is built on src/procmaps: mappings are struct pm_vma in the same
 * sorted arrays as the text mode's, and file identity (ids, dev:inode
 * generations, " (deleted)", build ID, debuglink, file_map records) is one
 * procmaps file table shared by all processes. Its files are numbered
 * 1, 2, ... in first-seen order: opaque, small (compact varints in the
 * trace) and never kernel pointers. All vDSO mappings are one file (the
 * same kernel image in every process).
 */
#ifndef USTACK_RECORD_RECMAPS_H
#define USTACK_RECORD_RECMAPS_H

#include <stdint.h>

#include "procmaps/procmaps.h"
#include "unwind/modules.h"
#include "unwind/unwind.h"

struct ustack_recmaps;

/** An empty picture; tables of files come from @mc (borrowed). */
struct ustack_recmaps *ustack_recmaps__new(struct ustack_modcache *mc);
void ustack_recmaps__free(struct ustack_recmaps *rm);

/**
 * An executable mapping appeared (MMAP2 with PROT_EXEC, or read from /proc).
 * @path: "/..." a file (" (deleted)" marks an unlinked one), "[vdso]", or
 * anything else for anonymous executable memory (JIT code).
 * @return 0, -EINVAL (empty or wrapping range), -ENOMEM
 */
int ustack_recmaps__mmap(struct ustack_recmaps *rm, uint32_t pid, uint64_t start, uint64_t len,
			 uint64_t pgoff, uint32_t maj, uint32_t min, uint64_t ino,
			 const uint8_t *build_id, uint32_t build_id_size, const char *path);
/** A new process @pid forked from @ppid: it starts with the parent's picture. 0 or -ENOMEM */
int ustack_recmaps__fork(struct ustack_recmaps *rm, uint32_t pid, uint32_t ppid);
/** @pid called exec: its old mappings are gone. */
void ustack_recmaps__exec(struct ustack_recmaps *rm, uint32_t pid);
/** @pid exited. */
void ustack_recmaps__exit(struct ustack_recmaps *rm, uint32_t pid);
/**
 * Read the executable mappings of a running process (PROCMAP_QUERY, else
 * the text of /proc/PID/maps).
 * @return the number of mappings, or -ESRCH, -EACCES, -ENOMEM, ...
 */
int ustack_recmaps__synthesize(struct ustack_recmaps *rm, uint32_t pid);

/** Mapping covering @pc in @pid, or NULL. */
const struct pm_vma *ustack_recmaps__find(struct ustack_recmaps *rm, uint32_t pid, uint64_t pc);
/** File of a mapping (index from pm_vma.file), or NULL. */
struct pm_file *ustack_recmaps__file(struct ustack_recmaps *rm, int32_t idx);
/** Fill build ID and debuglink of @f (read from the ELF once). */
void ustack_recmaps__file_info(struct ustack_recmaps *rm, struct pm_file *f, uint32_t pid);
/**
 * The unwind tables of the file of mapping @v of @pid (for the BPF
 * backend's kernel copy).
 * @return a reference (ustack_modtab__put() it), or NULL when the file has
 *         none or cannot be opened
 */
struct ustack_modtab *ustack_recmaps__tables(struct ustack_recmaps *rm, uint32_t pid,
					     const struct pm_vma *v);
/**
 * The file at @path (as the kernel names it) with device @maj:@min and
 * inode @ino, before any process maps it (the BPF backend loads the tables
 * of a command's libraries ahead of its exec): the same file, and id, its
 * mappings will get. *tables: a reference to its tables or NULL.
 */
struct pm_file *ustack_recmaps__file_at_path(struct ustack_recmaps *rm, const char *path,
					     uint32_t maj, uint32_t min, uint64_t ino,
					     struct ustack_modtab **tables);
/** The pseudo file id of Python frames: its file_map is of kind
 *  USTACK_TRACE_FILE_KIND_PYTHON, "[python]" (python_rec.c) */
#define RECMAPS_PY_FILE_ID ((1ull << 55) - 1)
/** The file_map record of @file_id: 0 or -ENOENT. */
int ustack_recmaps__file_map(struct ustack_recmaps *rm, uint64_t file_id, struct ustack_file_map *fm);

/*
 * Capture (capture.h): from now on, keep a descriptor of each mapped file,
 * opened through the mapping of the process that maps it
 * (/proc/PID/map_files, its inode checked) while that process lives, at
 * most @max_fds at once; and for a process whose root is not ours, an
 * O_PATH descriptor of that root with it.
 */
void ustack_recmaps__pin_files(struct ustack_recmaps *rm, unsigned int max_fds);

/* Why a file has no descriptor (ustack_recmaps__take_pin()) */
enum recmaps_pin {
	RECMAPS_PIN_NONE = 0,  /* never tried: no mapping of a live process seen */
	RECMAPS_PIN_HELD,
	RECMAPS_PIN_GONE,      /* the process was gone (or the mapping replaced) first */
	RECMAPS_PIN_CAPPED,    /* refused: max_fds held already */
	RECMAPS_PIN_ERROR,     /* map_files could not be opened (not root?) */
	RECMAPS_PIN_TAKEN,     /* handed out already */
	RECMAPS_PIN_NOT_FILE,  /* vDSO: no file */
};

/*
 * Hand over the kept descriptors of @file_id (the caller closes them):
 * *@fd, *@root_fd (-1: the process's root is ours), the pid that mapped
 * it. Once per file.
 * @return RECMAPS_PIN_HELD with the descriptors, else why there are none
 */
enum recmaps_pin ustack_recmaps__take_pin(struct ustack_recmaps *rm, uint64_t file_id, int *fd,
					  int *root_fd, uint32_t *pid);

/**
 * Row for @pc of process @pid (unwind_ops find_row / is_code), with the
 * pid set by ustack_recmaps__set_pid() before the unwind.
 */
void ustack_recmaps__set_pid(struct ustack_recmaps *rm, uint32_t pid);
int ustack_recmaps__find_row(void *ctx, uint64_t pc, struct ustack_row *row, unsigned int *method);
int ustack_recmaps__is_code(void *ctx, uint64_t pc);

#endif
