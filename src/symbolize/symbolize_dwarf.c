// SPDX-License-Identifier: MIT
/*
 * Source lines and inline chains from DWARF, read with elfutils libdw.
 *
 * Everything is lazy: opening reads only the section headers (libdw's
 * dwarf_begin_elf), and a lookup reads one CU: its line program (libdw
 * caches it per CU) and the DIEs on the way to the pc. The CU of an address
 * comes from .debug_aranges through dwarf_addrdie(); objects built without
 * .debug_aranges (clang's default, some toolchains' partial aranges) get a
 * table of the CUs' own DW_AT_ranges instead, built once per file at the
 * first address that .debug_aranges does not cover.
 */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

#include <ustack/hashmap.h>

#include "common/log.h"
#include "symbolize/dwarf_cache.h"
#include "symbolize/symbolize_dwarf.h"

struct cu_range {
	uint64_t lo, hi; /* [lo, hi) */
	Dwarf_Die cu;
};

struct ustack_dwarf {
	int fd;
	Elf *elf;
	Dwarf *dw;
	char *path;
	int ranges_built;
	int corrupt; /* a lookup failed on bad DIEs: the DWARF is dropped */
	struct cu_range *ranges;
	size_t nranges;
	struct ustack_u64map *joined; /* relative file name pointer -> malloc'd full path */
};

/* a bound on what a hostile file can make us allocate for the CU table */
#define MAX_CU_RANGES (1u << 22)

/* Sections libdw would read (and inflate, when compressed) at
 * dwarf_begin_elf() but lines and inline chains never use: variable
 * locations, macros, CFI, name indexes. */
static const char *const unused_sections[] = {
	".debug_loc", ".debug_loclists", ".debug_macro", ".debug_macinfo", ".debug_frame",
	".debug_pubnames", ".debug_pubtypes", ".debug_gnu_pubnames", ".debug_gnu_pubtypes",
	".debug_names", ".debug_cu_index", ".debug_tu_index",
};

static int is_unused_section(const char *name)
{
	/* ".zdebug_*": the old GNU compression, same names after the z */
	size_t skip = !strncmp(name, ".zdebug_", 8) ? 7 : !strncmp(name, ".debug_", 7) ? 6 : 0;

	if (!skip)
		return 0;
	for (size_t i = 0; i < sizeof(unused_sections) / sizeof(unused_sections[0]); i++)
		if (!strcmp(name + skip, unused_sections[i] + 6))
			return 1;
	return 0;
}

/*
 * 1: @elf has a .debug_info section (compressed or not). On the way, the
 * sections in unused_sections[] become SHT_NOBITS in our private copy of
 * the headers, which libdw skips: a distribution's debug file compresses
 * every section, and libdw inflates all of them when it opens the file,
 * location lists included (a fifth of libc's DWARF).
 */
static int has_debug_info(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	int found = 0;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")) {
			found = 1;
		} else if (is_unused_section(name)) {
			sh.sh_type = SHT_NOBITS;
			gelf_update_shdr(scn, &sh); /* a failure only costs time */
		}
	}
	return found;
}

struct ustack_dwarf *ustack_dwarf__open(const char *path)
{
	struct ustack_dwarf *d;
	Elf *copy;
	int err, cfd;

	elf_version(EV_CURRENT);
	d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(path)) || !(d->joined = ustack_u64map__new())) {
		if (d)
			free(d->path);
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	d->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0) {
		err = errno;
		goto fail;
	}
	/* a private mapping: has_debug_info() edits section headers */
	d->elf = elf_begin(d->fd, ELF_C_READ_MMAP_PRIVATE, NULL);
	if (!d->elf || elf_kind(d->elf) != ELF_K_ELF) {
		pr_warn("%s: not an ELF file for DWARF: %s\n", path, elf_errmsg(-1));
		err = EBADMSG;
		goto fail;
	}
	if (!has_debug_info(d->elf)) {
		/* stripped libraries are common: no lines, and nothing wrong */
		err = ENOENT;
		goto fail;
	}
	/* compressed DWARF: read from its inflated copy (dwarf_cache.c) */
	copy = ustack_dwarf_cache__open(d->elf, path, &cfd, has_debug_info);
	if (copy) {
		elf_end(d->elf);
		close(d->fd);
		d->elf = copy;
		d->fd = cfd;
	}
	d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
	if (!d->dw) {
		pr_warn("%s: DWARF unusable, no source lines: %s\n", path, dwarf_errmsg(-1));
		err = EBADMSG;
		goto fail;
	}
	return d;
fail:
	ustack_dwarf__close(d);
	errno = err;
	return NULL;
}

void ustack_dwarf__close(struct ustack_dwarf *d)
{
	if (!d)
		return;
	if (d->dw)
		dwarf_end(d->dw);
	if (d->elf)
		elf_end(d->elf);
	if (d->fd >= 0)
		close(d->fd);
	if (d->joined) {
		uint64_t k, v;

		for (size_t it = 0; ustack_u64map__next(d->joined, &it, &k, &v);)
			if (v != k)
				free((void *)(uintptr_t)v);
		ustack_u64map__free(d->joined);
	}
	free(d->ranges);
	free(d->path);
	free(d);
}

static int cmp_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Every CU's address ranges, sorted, once per file. */
static void build_ranges(struct ustack_dwarf *d)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	size_t cap = 0;

	d->ranges_built = 1;
	while (dwarf_get_units(d->dw, cu, &cu, NULL, NULL, &cudie, NULL) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		if (dwarf_tag(&cudie) != DW_TAG_compile_unit &&
		    dwarf_tag(&cudie) != DW_TAG_partial_unit)
			continue;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (d->nranges == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				void *np;

				if (ncap > MAX_CU_RANGES)
					goto done;
				np = realloc(d->ranges, ncap * sizeof(*d->ranges));
				if (!np)
					goto done;
				d->ranges = np;
				cap = ncap;
			}
			d->ranges[d->nranges++] = (struct cu_range){ lo, hi, cudie };
		}
	}
done:
	if (d->nranges)
		qsort(d->ranges, d->nranges, sizeof(*d->ranges), cmp_range);
}

/* The CU DIE covering @addr: 0, or -ENOENT */
static int find_cu(struct ustack_dwarf *d, uint64_t addr, Dwarf_Die *cudie)
{
	size_t lo = 0, hi;

	if (dwarf_addrdie(d->dw, addr, cudie))
		return 0;
	if (!d->ranges_built)
		build_ranges(d);
	/* last range starting at or below addr; ranges may nest (a CU's
	 * ranges inside another's gap), so look back over a few */
	hi = d->nranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->ranges[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, n = 0; i-- > 0 && n < 16; n++) {
		if (addr < d->ranges[i].hi) {
			*cudie = d->ranges[i].cu;
			return 0;
		}
	}
	return -ENOENT;
}

/* @file as addr2line and eu-addr2line show it: a name relative to the
 * compilation directory gets that directory in front. Cached per name. */
static const char *full_path(struct ustack_dwarf *d, Dwarf_Die *cudie, const char *file)
{
	Dwarf_Attribute a;
	const char *dir;
	uint64_t v;
	char *j;

	if (!file || file[0] == '/')
		return file;
	if (ustack_u64map__get(d->joined, (uintptr_t)file, &v))
		return (const char *)(uintptr_t)v;
	dir = dwarf_attr(cudie, DW_AT_comp_dir, &a) ? dwarf_formstring(&a) : NULL;
	if (!dir || !*dir || asprintf(&j, "%s/%s", dir, file) < 0)
		j = NULL;
	/* a failure is remembered too (value == key: the name itself) */
	if (ustack_u64map__put(d->joined, (uintptr_t)file, (uintptr_t)(j ? j : file))) {
		free(j);
		return file;
	}
	return j ? j : file;
}

static const char *attr_string(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute a;

	return dwarf_attr_integrate(die, name, &a) ? dwarf_formstring(&a) : NULL;
}

static uint32_t attr_u32(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (!dwarf_attr(die, name, &a) || dwarf_formudata(&a, &w) || w > UINT32_MAX)
		return 0;
	return (uint32_t)w;
}

/* The call site of inlined instance @die: its file (through the CU's file
 * table) and line. */
static void call_site(struct ustack_dwarf *d, Dwarf_Die *cudie, Dwarf_Die *die, struct ustack_dwarf_level *lv)
{
	Dwarf_Files *files;
	size_t nfiles;
	Dwarf_Attribute a;
	Dwarf_Word idx;

	lv->line = attr_u32(die, DW_AT_call_line);
	lv->column = attr_u32(die, DW_AT_call_column);
	if (dwarf_attr(die, DW_AT_call_file, &a) && !dwarf_formudata(&a, &idx) &&
	    !dwarf_getsrcfiles(cudie, &files, &nfiles) && idx < nfiles)
		lv->file = full_path(d, cudie, dwarf_filesrc(files, idx, NULL, NULL));
}

int ustack_dwarf__lookup(struct ustack_dwarf *d, uint64_t addr, struct ustack_dwarf_level *out)
{
	Dwarf_Die cudie, *scopes = NULL, inner;
	Dwarf_Line *line;
	int n, nlv = 0, ret = 0;

	/*
	 * Once libdw found the DIEs corrupt, the file's DWARF is not asked
	 * again: a corrupt table is dropped rather than half-trusted, and
	 * libdw's scope walk leaks a little memory on each such failure
	 * (seen under fuzzing), which must not grow with the trace.
	 */
	if (d->corrupt)
		return -EBADMSG;
	if (find_cu(d, addr, &cudie))
		return 0;
	memset(&out[0], 0, sizeof(out[0]));
	line = dwarf_getsrc_die(&cudie, addr);
	if (line) {
		int l = 0, c = 0;

		out[0].file = full_path(d, &cudie, dwarf_linesrc(line, NULL, NULL));
		if (!dwarf_lineno(line, &l) && l > 0)
			out[0].line = (uint32_t)l;
		if (!dwarf_linecol(line, &c) && c > 0)
			out[0].column = (uint32_t)c;
	}
	/* innermost scope holding addr, then the DIEs that contain it: the
	 * chain of (lexical blocks,) inlined instances and their subprogram */
	n = dwarf_getscopes(&cudie, addr, &scopes);
	if (n < 0) {
		ret = -EBADMSG;
		goto out;
	}
	if (n > 0) {
		inner = scopes[0];
		free(scopes);
		scopes = NULL;
		n = dwarf_getscopes_die(&inner, &scopes);
		if (n < 0) {
			ret = -EBADMSG;
			goto out;
		}
	}
	{
		/* the function DIEs of the chain, innermost first; a chain
		 * deeper than the limit keeps its innermost and outermost */
		Dwarf_Die *fn[USTACK_DWARF_MAX_LEVELS];

		for (int i = 0; i < n; i++) {
			int tag = dwarf_tag(&scopes[i]);

			if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram &&
			    tag != DW_TAG_entry_point)
				continue;
			if (nlv == USTACK_DWARF_MAX_LEVELS)
				nlv--;
			fn[nlv++] = &scopes[i];
			if (tag != DW_TAG_inlined_subroutine)
				break;
		}
		for (int k = 0; k < nlv; k++) {
			struct ustack_dwarf_level *lv = &out[k];

			if (k) {
				memset(lv, 0, sizeof(*lv));
				/* where level k-1 was inlined into this one */
				call_site(d, &cudie, fn[k - 1], lv);
			}
			lv->name = attr_string(fn[k], DW_AT_name);
			lv->linkage = attr_string(fn[k], DW_AT_linkage_name);
			if (!lv->linkage)
				lv->linkage = attr_string(fn[k], DW_AT_MIPS_linkage_name);
			lv->inlined = dwarf_tag(fn[k]) == DW_TAG_inlined_subroutine;
		}
	}
	if (!nlv && (out[0].file || out[0].line))
		nlv = 1; /* a line without a function DIE (assembler sources) */
out:
	free(scopes);
	if (ret)
		d->corrupt = 1;
	return ret ? ret : nlv;
}
