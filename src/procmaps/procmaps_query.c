// SPDX-License-Identifier: MIT
/*
 * PROCMAP_QUERY (Linux 6.11+): one ioctl on an open /proc/PID/maps returns
 * the VMA covering (or following) an address, optionally with its name and,
 * from 6.12, the build ID of its file. Name and build ID cost ~4 us against
 * ~0.7 us for the bare query, so callers ask for them once per file.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/ioctl.h>

#include "common/compiler.h"
#include "procmaps/procmaps.h"

/* The public VMA flags are the ioctl's: ustack_procmaps__next() passes
 * `need` as query flags and the answer's vma_flags are kept as they are. */
_Static_assert((int)USTACK_VMA_READ == (int)PROCMAP_QUERY_VMA_READABLE &&
	       (int)USTACK_VMA_WRITE == (int)PROCMAP_QUERY_VMA_WRITABLE &&
	       (int)USTACK_VMA_EXEC == (int)PROCMAP_QUERY_VMA_EXECUTABLE &&
	       (int)USTACK_VMA_SHARED == (int)PROCMAP_QUERY_VMA_SHARED,
	       "VMA flags match PROCMAP_QUERY's");

/* ENOTTY: the kernel predates the ioctl; anything else means it exists. */
int pm_ioctl_probe(int fd)
{
	struct procmap_query q;

	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_flags = PROCMAP_QUERY_COVERING_OR_NEXT_VMA;
	q.query_addr = 0;
	if (ioctl(fd, PROCMAP_QUERY, &q) == 0)
		return 1;
	return errno == ENOTTY || errno == EINVAL ? 0 : 1;
}

/*
 * Query @addr. @out->name is set (interned) only when @want_name; @out->kind
 * is FILE for file-backed VMAs, else derived from the name when asked for it.
 * Returns 0, -ENOENT (no VMA), -ESRCH (process gone), other -errno.
 */
int pm_ioctl_query(struct ustack_procmaps *pm, uint64_t addr, uint64_t qflags, int want_name,
		   int want_build_id, struct pm_vma *out, uint8_t *build_id, uint32_t *build_id_size)
{
	struct procmap_query q;
	size_t sl = sizeof(" (deleted)") - 1;
	int file_backed;

	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_flags = qflags;
	q.query_addr = addr;
	if (want_name) {
		q.vma_name_size = PATH_MAX;
		q.vma_name_addr = (uint64_t)(uintptr_t)pm->namebuf;
	}
	if (want_build_id) {
		q.build_id_size = USTACK_BUILD_ID_MAX;
		q.build_id_addr = (uint64_t)(uintptr_t)build_id;
	}
	for (;;) {
		if (ioctl(pm->maps_fd, PROCMAP_QUERY, &q) == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno == ENAMETOOLONG && (q.vma_name_size || q.build_id_size)) {
			/* a name longer than PATH_MAX or an odd build ID: go without */
			q.vma_name_size = 0;
			q.vma_name_addr = 0;
			q.build_id_size = 0;
			q.build_id_addr = 0;
			want_name = want_build_id = 0;
			continue;
		}
		return -errno;
	}
	memset(out, 0, sizeof(*out));
	out->file = -1;
	out->start = q.vma_start;
	out->end = q.vma_end;
	out->flags = (uint32_t)q.vma_flags & (USTACK_VMA_READ | USTACK_VMA_WRITE |
					       USTACK_VMA_EXEC | USTACK_VMA_SHARED);
	out->inode = q.inode;
	out->dev_major = q.dev_major;
	out->dev_minor = q.dev_minor;
	file_backed = q.inode || q.dev_major || q.dev_minor;
	out->pgoff = file_backed ? q.vma_offset : 0;
	if (build_id_size)
		*build_id_size = want_build_id ? q.build_id_size : 0;
	if (want_name && q.vma_name_size > 1 && q.vma_name_size <= PATH_MAX) {
		size_t len = strnlen(pm->namebuf, q.vma_name_size - 1);

		if (file_backed && len > sl && !memcmp(pm->namebuf + len - sl, " (deleted)", sl)) {
			out->flags |= USTACK_VMA_DELETED;
			len -= sl;
		}
		out->name = pm_intern(pm, pm->namebuf, len);
		if (!out->name)
			return -ENOMEM;
		out->kind = pm_kind_of_name(out->name, len, out->flags, file_backed);
	} else {
		out->kind = pm_kind_of_name(NULL, 0, out->flags, file_backed);
	}
	return 0;
}
