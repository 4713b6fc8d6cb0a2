// SPDX-License-Identifier: MIT
/*
 * Sorted VMA arrays and a file table without a process: the pieces an
 * event-fed mapping picture is made of (the recorder's, src/record/
 * recmaps.c), shared with the text mode's own table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procmaps/procmaps.h"

size_t pm_vmas_lower_bound(const struct pm_vma *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct pm_vma *pm_vmas_find(const struct pm_vma *v, size_t n, uint64_t addr)
{
	size_t i = pm_vmas_lower_bound(v, n, addr);

	return i < n && v[i].start <= addr ? &v[i] : NULL;
}

int pm_vmas_replace(struct pm_vma **vp, size_t *np, size_t *capp, const struct pm_vma *nv)
{
	struct pm_vma *v = *vp, *out;
	size_t n = *np, k = 0, j;

	if (nv->end <= nv->start)
		return -EINVAL;
	/* the new mapping replaces whatever it overlaps: keep the parts of
	 * the old ones outside it (still sorted), then insert it in order;
	 * at most one old mapping is split in two, hence n + 2 */
	out = malloc((n + 2) * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (v[i].end <= nv->start || v[i].start >= nv->end) {
			out[k++] = v[i];
			continue;
		}
		if (v[i].start < nv->start) {
			out[k] = v[i];
			out[k++].end = nv->start;
		}
		if (v[i].end > nv->end) {
			out[k] = v[i];
			if (out[k].kind == USTACK_VMA_FILE || out[k].kind == USTACK_VMA_VDSO)
				out[k].pgoff += nv->end - v[i].start;
			out[k++].start = nv->end;
		}
	}
	for (j = 0; j < k && out[j].start < nv->start; j++)
		;
	memmove(&out[j + 1], &out[j], (k - j) * sizeof(*out));
	out[j] = *nv;
	free(v);
	*vp = out;
	*np = k + 1;
	*capp = n + 2;
	return 0;
}

struct ustack_procmaps *pm_open_file_table(uint32_t flags)
{
	struct ustack_procmaps_opts o = { .sz = sizeof(o), .flags = flags };
	struct ustack_procmaps *pm = pm_alloc(&o);

	if (pm)
		snprintf(pm->name, sizeof(pm->name), "recorded mappings");
	return pm;
}

struct pm_file *pm_file_at(struct ustack_procmaps *pm, int32_t idx)
{
	return idx >= 0 && (size_t)idx < pm->nr_files ? &pm->files[idx] : NULL;
}
