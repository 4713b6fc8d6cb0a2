/* SPDX-License-Identifier: MIT */
/*
 * ELF core dumps (x86-64), as the kernel and gdb's gcore write them:
 * threads (NT_PRSTATUS), the process name (NT_PRPSINFO), file mappings
 * (NT_FILE), the auxiliary vector (NT_AUXV: the vDSO and the entry point),
 * and memory (PT_LOAD). A segment the core left out (filesz < memsz, as
 * the kernel does for unmodified file-backed mappings) is read from the
 * mapped file.
 *
 * Every note and segment is bounds-checked; a malformed core is refused
 * with a message naming the file and the offset of the bad part.
 */
#ifndef USTACK_SNAPSHOT_CORE_FILE_H
#define USTACK_SNAPSHOT_CORE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include <ustack/unwind.h>

struct ustack_core_thread {
	int tid;
	int signo;             /* pr_cursig: the signal that killed it (0: none) */
	struct ustack_regs regs;
	uint64_t bx;           /* rbx: for rbx-based CFA rows (DWARF CFI) */
};

struct ustack_core_map {
	uint64_t start, end, file_offset;
	const char *path;      /* as NT_FILE names it, or --exe for the executable */
	uint32_t flags;        /* USTACK_MAPPING_EXEC from the covering PT_LOAD */
	/* the build ID the core recorded (from the file's first page, dumped
	 * in the core), 0: unknown */
	uint8_t build_id[32];
	size_t build_id_size;
	int fd;                /* for reads the core left out; -1: not opened yet, -2: failed */
};

struct ustack_core_load {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags;        /* PF_* */
};

struct ustack_core {
	char *name;
	const uint8_t *data;
	size_t size;
	int mapped;            /* data is an mmap of the file */
	char comm[16];         /* NT_PRPSINFO pr_fname */
	int pid;
	struct ustack_core_thread *threads;
	size_t nr_threads;
	struct ustack_core_map *maps;   /* sorted by start */
	size_t nr_maps;
	struct ustack_core_load *loads; /* sorted by vaddr */
	size_t nr_loads;
	uint64_t vdso, entry;           /* AT_SYSINFO_EHDR, AT_ENTRY (0: unknown) */
	char **strings;                 /* owned path strings */
	size_t nr_strings;
};

/**
 * Parse a core held in memory (@data must outlive the object).
 * @param name file name for messages
 * @param exe if not NULL, the path that replaces the executable's in NT_FILE
 * @param err receives a one-line reason on failure ("FILE: offset 0x..: ...")
 * @return the object, or NULL with errno (ENOEXEC: not a core or another
 *         machine's; EBADMSG: malformed or truncated; ENOMEM)
 */
struct ustack_core *ustack_core__parse(const void *data, size_t size, const char *name,
				       const char *exe, char *err, size_t err_sz);
/** Open and parse the core file at @path (mapped, not read). */
struct ustack_core *ustack_core__open(const char *path, const char *exe, char *err,
				      size_t err_sz);
void ustack_core__close(struct ustack_core *c);

/** Read target memory: the core's bytes, else the mapped file's. 0 or -EFAULT. */
int ustack_core__read(void *core, uint64_t addr, void *buf, size_t len);

#endif
