/* SPDX-License-Identifier: MIT */
/*
 * A snapshot thread's source lines (lines[]) and their parallel
 * DW_AT_decl_line array (line_decls[]), grown together: shared by the live
 * (snapshot.c) and the core (core.c) snapshots.
 */
#ifndef USTACK_SNAPSHOT_LINES_H
#define USTACK_SNAPSHOT_LINES_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <ustack/snapshot.h>
#include "common/grow.h"

/* Room for @need entries in both arrays: 0 or -ENOMEM (both stay valid). */
static inline int ustack_snapshot_lines_grow(struct ustack_snapshot_line **lines, uint32_t **decls,
					     size_t *cap_lines, size_t *cap_decls, size_t need)
{
	void *p = *lines;
	int ret = ustack_grow(&p, cap_lines, need, sizeof(**lines), 256);

	*lines = p;
	if (!ret && *cap_decls < *cap_lines) {
		uint32_t *d = realloc(*decls, *cap_lines * sizeof(*d));

		if (!d)
			return -ENOMEM;
		*decls = d;
		*cap_decls = *cap_lines;
	}
	return ret;
}

#endif
