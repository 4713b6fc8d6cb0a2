/* SPDX-License-Identifier: MIT */
/*
 * The PROCMAP_QUERY ioctl on /proc/PID/maps (Linux 6.11+), defined here
 * because older distribution headers (Debian 12) lack it. Layout and values
 * as in the kernel's include/uapi/linux/fs.h.
 */
#ifndef USTACK_COMMON_PROCMAP_QUERY_H
#define USTACK_COMMON_PROCMAP_QUERY_H

#include <linux/ioctl.h>
#include <stdint.h>

#ifndef PROCMAP_QUERY
enum procmap_query_flags {
	PROCMAP_QUERY_VMA_READABLE = 0x01,
	PROCMAP_QUERY_VMA_WRITABLE = 0x02,
	PROCMAP_QUERY_VMA_EXECUTABLE = 0x04,
	PROCMAP_QUERY_VMA_SHARED = 0x08,
	PROCMAP_QUERY_COVERING_OR_NEXT_VMA = 0x10,
	PROCMAP_QUERY_FILE_BACKED_VMA = 0x20,
};

struct procmap_query {
	uint64_t size;          /* in: sizeof(struct procmap_query) */
	uint64_t query_flags;   /* in: enum procmap_query_flags */
	uint64_t query_addr;    /* in */
	uint64_t vma_start;     /* out */
	uint64_t vma_end;       /* out */
	uint64_t vma_flags;     /* out: enum procmap_query_flags (VMA_*) */
	uint64_t vma_page_size; /* out */
	uint64_t vma_offset;    /* out: file offset of vma_start */
	uint64_t inode;         /* out */
	uint32_t dev_major;     /* out */
	uint32_t dev_minor;     /* out */
	uint32_t vma_name_size; /* in/out */
	uint32_t build_id_size; /* in/out */
	uint64_t vma_name_addr; /* in */
	uint64_t build_id_addr; /* in */
};

#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#endif

_Static_assert(sizeof(struct procmap_query) == 104, "procmap_query is 104 bytes");

#endif
