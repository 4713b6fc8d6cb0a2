/* SPDX-License-Identifier: MIT */
/*
 * The recorder's picture of each process's executable mappings, kept from
 * perf's MMAP2 / COMM(exec) / FORK / EXIT records (and synthesized from
 * /proc/PID/maps for processes already running when recording starts), so
 * samples can be unwound and normalized even after their process exited.
 *
 * Files get sequential file ids (1, 2, ...) in first-use order: opaque,
 * small (compact varints in the trace) and never kernel pointers.
 */
#ifndef USTACK_SOURCES_PERF_MAPS_H
#define USTACK_SOURCES_PERF_MAPS_H

#include <stdint.h>

#include "unwind/modules.h"
#include "unwind/unwind.h"

enum recmaps_file_kind {
	RECMAPS_FILE = 1,
	RECMAPS_VDSO = 2,
};

struct recmaps_file {
	uint64_t file_id;
	uint32_t kind;          /* enum recmaps_file_kind */
	uint32_t maj, min;
	uint64_t ino;
	char *path;             /* as the process saw it ("[vdso]" for the vDSO) */
	uint8_t build_id[20];
	uint32_t build_id_size; /* 0: unknown */
	char *debuglink;        /* or NULL */
	uint32_t debuglink_crc;
	int deleted;
	/* unwind tables, opened on first use; a weak reference, so the
	 * cache can evict them (they are opened again when needed) */
	struct ustack_modref mod;
	int mod_failed;         /* the file cannot be opened: not tried again */
	int info_done;          /* build ID / debuglink looked up */
};

struct recmaps_vma {
	uint64_t start, end, pgoff;
	int32_t file; /* index into files, -1: anonymous executable memory (JIT) */
};

struct ustack_recmaps;

struct ustack_recmaps *ustack_recmaps__new(struct ustack_modcache *mc);
void ustack_recmaps__free(struct ustack_recmaps *rm);

/** An executable mapping appeared (MMAP2 with PROT_EXEC, or synthesized). */
int ustack_recmaps__mmap(struct ustack_recmaps *rm, uint32_t pid, uint64_t start, uint64_t len,
			 uint64_t pgoff, uint32_t maj, uint32_t min, uint64_t ino,
			 const uint8_t *build_id, uint32_t build_id_size, const char *path);
/** A new process @pid forked from @ppid: it starts with the parent's picture. */
int ustack_recmaps__fork(struct ustack_recmaps *rm, uint32_t pid, uint32_t ppid);
/** @pid called exec: its old mappings are gone. */
void ustack_recmaps__exec(struct ustack_recmaps *rm, uint32_t pid);
/** @pid exited. */
void ustack_recmaps__exit(struct ustack_recmaps *rm, uint32_t pid);
/** Read the executable mappings of a running process from /proc. */
int ustack_recmaps__synthesize(struct ustack_recmaps *rm, uint32_t pid);

/** Mapping covering @pc in @pid, or NULL. */
const struct recmaps_vma *ustack_recmaps__find(struct ustack_recmaps *rm, uint32_t pid, uint64_t pc);
/** File of a mapping (index from recmaps_vma.file). */
struct recmaps_file *ustack_recmaps__file(struct ustack_recmaps *rm, int32_t idx);
/** File by file id, or NULL. */
struct recmaps_file *ustack_recmaps__file_by_id(struct ustack_recmaps *rm, uint64_t file_id);
/** Fill build ID and debuglink of @f (reads the ELF once). */
void ustack_recmaps__file_info(struct ustack_recmaps *rm, struct recmaps_file *f, uint32_t pid);

/**
 * Row for @pc of process @pid (unwind_ops find_row / is_code), with the
 * pid set by ustack_recmaps__set_pid() before the unwind.
 */
void ustack_recmaps__set_pid(struct ustack_recmaps *rm, uint32_t pid);
int ustack_recmaps__find_row(void *ctx, uint64_t pc, struct ustack_row *row, unsigned int *method);
int ustack_recmaps__is_code(void *ctx, uint64_t pc);

#endif
