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
#include <inttypes.h>
#include <stdarg.h>
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

#include "common/compiler.h"
#include "common/dl_syms.h"
#include "common/grow.h"
#include "common/log.h"
#include "symbolize/dwarf_cache.h"
#include "symbolize/symbolize_dwarf.h"

/* libdw (and the libelf it loads) opened at the first DWARF file: the
 * default snapshot and report print no lines and never load it. */
#define LIBDW_FNS(X)                                                                           \
	X(dwarf_addrdie) X(dwarf_attr) X(dwarf_attr_integrate) X(dwarf_begin_elf) X(dwarf_end) \
	X(dwarf_errmsg) X(dwarf_filesrc) X(dwarf_formstring) X(dwarf_formudata)                 \
	X(dwarf_get_units) X(dwarf_getscopes) X(dwarf_getscopes_die) X(dwarf_getsrc_die)        \
	X(dwarf_getsrcfiles) X(dwarf_linecol) X(dwarf_lineno) X(dwarf_linesrc) X(dwarf_ranges)  \
	X(dwarf_tag) X(elf_begin) X(elf_end) X(elf_errmsg) X(elf_getshdrstrndx) X(elf_kind)     \
	X(elf_nextscn) X(elf_strptr) X(elf_version) X(gelf_getshdr) X(gelf_update_shdr)         \
	X(dwarf_decl_line) X(dwarf_dieoffset) X(dwarf_getarange_addr) X(dwarf_getarangeinfo)     \
	X(dwarf_getaranges) X(dwarf_getsrclines) X(dwarf_next_unit) X(dwarf_offdie) X(elf_getdata) \
	X(dwarf_child) X(dwarf_siblingof) X(dwarf_haspc) X(dwarf_formref_die)
DL_SYMS_STRUCT(libdw, LIBDW_FNS)
DL_SYMS_LOAD(libdw_load, libdw, LIBDW_FNS, "libdw.so.1")
#define dwarf_addrdie (libdw.dwarf_addrdie)
#define dwarf_child (libdw.dwarf_child)
#define dwarf_siblingof (libdw.dwarf_siblingof)
#define dwarf_haspc (libdw.dwarf_haspc)
#define dwarf_formref_die (libdw.dwarf_formref_die)
#define dwarf_decl_line (libdw.dwarf_decl_line)
#define dwarf_dieoffset (libdw.dwarf_dieoffset)
#define dwarf_getarange_addr (libdw.dwarf_getarange_addr)
#define dwarf_getarangeinfo (libdw.dwarf_getarangeinfo)
#define dwarf_getaranges (libdw.dwarf_getaranges)
#define dwarf_getsrclines (libdw.dwarf_getsrclines)
#define dwarf_next_unit (libdw.dwarf_next_unit)
#define dwarf_offdie (libdw.dwarf_offdie)
#define dwarf_attr (libdw.dwarf_attr)
#define dwarf_attr_integrate (libdw.dwarf_attr_integrate)
#define dwarf_begin_elf (libdw.dwarf_begin_elf)
#define dwarf_end (libdw.dwarf_end)
#define dwarf_errmsg (libdw.dwarf_errmsg)
#define dwarf_filesrc (libdw.dwarf_filesrc)
#define dwarf_formstring (libdw.dwarf_formstring)
#define dwarf_formudata (libdw.dwarf_formudata)
#define dwarf_get_units (libdw.dwarf_get_units)
#define dwarf_getscopes (libdw.dwarf_getscopes)
#define dwarf_getscopes_die (libdw.dwarf_getscopes_die)
#define dwarf_getsrc_die (libdw.dwarf_getsrc_die)
#define dwarf_getsrcfiles (libdw.dwarf_getsrcfiles)
#define dwarf_linecol (libdw.dwarf_linecol)
#define dwarf_lineno (libdw.dwarf_lineno)
#define dwarf_linesrc (libdw.dwarf_linesrc)
#define dwarf_ranges (libdw.dwarf_ranges)
#define dwarf_tag (libdw.dwarf_tag)
#define elf_begin (libdw.elf_begin)
#define elf_end (libdw.elf_end)
#define elf_errmsg (libdw.elf_errmsg)
#define elf_getshdrstrndx (libdw.elf_getshdrstrndx)
#define elf_kind (libdw.elf_kind)
#define elf_nextscn (libdw.elf_nextscn)
#define elf_getdata (libdw.elf_getdata)
#define elf_strptr (libdw.elf_strptr)
#define elf_version (libdw.elf_version)
#define gelf_getshdr (libdw.gelf_getshdr)
#define gelf_update_shdr (libdw.gelf_update_shdr)

struct cu_range {
	uint64_t lo, hi; /* [lo, hi) */
	Dwarf_Die cu;
};

/* One address range of .debug_aranges and the unit it names. */
struct ar_range {
	uint64_t lo, hi; /* [lo, hi) */
	uint64_t cu_off; /* unit header offset in .debug_info */
};

struct ustack_dwarf {
	int fd;
	Elf *elf;
	Dwarf *dw;
	char *path;
	int ranges_built;
	int corrupt; /* a lookup met corrupt DWARF: dropped, said once (corrupt_at()) */
	int units_bad; /* build_ranges() stopped at a unit libdw cannot read */
	uint64_t bad_unit; /* its offset in .debug_info */
	struct cu_range *ranges;
	size_t nranges;
	/* .debug_aranges as read by read_aranges(): 1 read, -1 not usable
	 * (absent, compressed, or not understood: libdw's own look-up then) */
	int ar_state;
	struct ar_range *ar;
	size_t nar;
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

	if (libdw_load()) {
		static int warned;

		if (!warned++)
			pr_warn("libdw.so.1 not found (elfutils): no source lines\n");
		errno = ENOSYS;
		return NULL;
	}
	pr_debug("%s: reading DWARF\n", path);
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
	free(d->ar);
	free(d->path);
	free(d);
}

/*
 * The DWARF of this file is corrupt (not merely absent): say where, once
 * per file, and drop it (CONVENTIONS: reported once, never half-trusted).
 * The caller keeps the names of the ELF symbols. @return -EBADMSG
 */
static int corrupt_at(struct ustack_dwarf *d, const char *fmt, ...)
{
	char where[160];
	va_list ap;

	if (d->corrupt)
		return -EBADMSG;
	d->corrupt = 1;
	va_start(ap, fmt);
	vsnprintf(where, sizeof(where), fmt, ap);
	va_end(ap);
	pr_warn("%s: corrupt DWARF: %s (%s): no source lines from this file, frames keep their symbol names\n",
		d->path, where, dwarf_errmsg(-1));
	return -EBADMSG;
}

/* Offset in .debug_info of the first unit libdw cannot read, found by
 * walking the unit headers (only after dwarf_get_units() failed). */
static uint64_t first_bad_unit(struct ustack_dwarf *d)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_next_unit(d->dw, off, &next, &hsize, NULL, NULL, NULL, NULL, NULL, NULL) == 0) {
		Dwarf_Die die;

		if (!dwarf_offdie(d->dw, off + hsize, &die) || next <= off)
			break;
		off = next;
	}
	return off;
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

	int r;

	d->ranges_built = 1;
	while ((r = dwarf_get_units(d->dw, cu, &cu, NULL, NULL, &cudie, NULL)) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		if (dwarf_tag(&cudie) != DW_TAG_compile_unit &&
		    dwarf_tag(&cudie) != DW_TAG_partial_unit)
			continue;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (d->nranges >= MAX_CU_RANGES ||
			    ustack_grow((void **)&d->ranges, &cap, d->nranges + 1, sizeof(*d->ranges), 64))
				goto done;
			d->ranges[d->nranges++] = (struct cu_range){ lo, hi, cudie };
		}
	}
	/* 1 is the end; -1 a unit header or CU DIE libdw refused */
	if (r < 0) {
		d->units_bad = 1;
		d->bad_unit = first_bad_unit(d);
	}
done:
	if (d->nranges)
		qsort(d->ranges, d->nranges, sizeof(*d->ranges), cmp_range);
}

static int cmp_ar(const void *a, const void *b)
{
	const struct ar_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * .debug_aranges read here rather than by libdw's dwarf_getaranges(), which
 * looks up the unit of every set: on libc's DWARF (1,700 units spread over
 * 12 MB) that touches every unit header, about a tenth of a whole report
 * with lines, to name the one unit of the few addresses a report asks for.
 * Only the plain form is taken (version 2, 8-byte addresses, no segments,
 * units in bounds, ranges that do not overlap); anything else leaves the
 * look-up to libdw, as before, so that an odd or corrupt section is judged
 * where it always was.
 */
static void read_aranges(struct ustack_dwarf *d)
{
	size_t shstrndx, cap = 0;
	Elf_Scn *scn = NULL;
	Elf_Data *data = NULL;
	const uint8_t *p;
	size_t size, off = 0;

	d->ar_state = -1;
	if (elf_getshdrstrndx(d->elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(d->elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(d->elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".debug_aranges"))
			continue;
		if (sh.sh_type == SHT_NOBITS || (sh.sh_flags & SHF_COMPRESSED))
			return;
		data = elf_getdata(scn, NULL);
		break;
	}
	if (!data || !data->d_buf || !data->d_size)
		return;
	p = data->d_buf;
	size = data->d_size;
	while (off < size) {
		uint64_t len, cu_off, end, t, set = off;
		unsigned int osz = 4;

		if (size - off < 4)
			goto bad;
		len = ld_u32(p + off);
		off += 4;
		if (len == 0xffffffffu) {
			if (size - off < 8)
				goto bad;
			len = ld_u64(p + off);
			off += 8;
			osz = 8;
		}
		if (len > size - off || len < 2 + osz + 2)
			goto bad;
		end = off + len;
		if (ld_u16(p + off) != 2 || p[off + 2 + osz] != 8 || p[off + 3 + osz] != 0)
			goto bad;
		cu_off = osz == 8 ? ld_u64(p + off + 2) : ld_u32(p + off + 2);
		/* the tuples start at the first multiple of their size (twice
		 * the address size) from the start of the set, after the
		 * header: version, unit offset, address and segment sizes */
		t = set + (off + 2 + osz + 2 - set + 15) / 16 * 16;
		for (;; t += 16) {
			uint64_t a, n;

			if (t + 16 > end)
				goto bad; /* no terminating (0, 0) */
			a = ld_u64(p + t);
			n = ld_u64(p + t + 8);
			if (!a && !n)
				break;
			if (!n)
				continue;
			if (a + n < a)
				goto bad;
			if (d->nar >= MAX_CU_RANGES ||
			    ustack_grow((void **)&d->ar, &cap, d->nar + 1, sizeof(*d->ar), 256))
				goto bad;
			d->ar[d->nar++] = (struct ar_range){ a, a + n, cu_off };
		}
		off = end;
	}
	if (!d->nar)
		goto bad;
	qsort(d->ar, d->nar, sizeof(*d->ar), cmp_ar);
	/* a range that starts inside an earlier one (of any length: kept as
	 * the furthest end so far) must be of the same unit */
	for (size_t i = 1, far = 0; i < d->nar; i++) {
		if (d->ar[i].lo < d->ar[far].hi && d->ar[i].cu_off != d->ar[far].cu_off)
			goto bad;
		if (d->ar[i].hi > d->ar[far].hi)
			far = i;
	}
	d->ar_state = 1;
	return;
bad:
	free(d->ar);
	d->ar = NULL;
	d->nar = 0;
	d->ar_state = -1;
}

/* The CU DIE of @addr by read_aranges(): 0, or -ENOENT (libdw decides). */
static int aranges_cu(struct ustack_dwarf *d, uint64_t addr, Dwarf_Die *cudie)
{
	size_t n;
	Dwarf_Off next;
	size_t hsize;
	const struct ar_range *r;

	if (!d->ar_state)
		read_aranges(d);
	if (d->ar_state != 1)
		return -ENOENT;
	n = ustack_count_le_u64(d->ar, d->nar, sizeof(*d->ar), offsetof(struct ar_range, lo), addr);
	if (!n || addr >= (r = &d->ar[n - 1])->hi)
		return -ENOENT;
	if (dwarf_next_unit(d->dw, r->cu_off, &next, &hsize, NULL, NULL, NULL, NULL, NULL, NULL) ||
	    !dwarf_offdie(d->dw, r->cu_off + hsize, cudie))
		return -ENOENT;
	return 0;
}

/* The CU DIE covering @addr: 0, -ENOENT (no CU covers it), -EBADMSG (the
 * unit that may cover it is corrupt: said by corrupt_at()) */
static int find_cu(struct ustack_dwarf *d, uint64_t addr, Dwarf_Die *cudie)
{
	size_t lo = 0, hi;
	Dwarf_Aranges *ar;
	size_t nar;

	if (!aranges_cu(d, addr, cudie) || dwarf_addrdie(d->dw, addr, cudie))
		return 0;
	/* .debug_aranges names a unit for @addr, and that unit is unreadable */
	if (!dwarf_getaranges(d->dw, &ar, &nar)) {
		Dwarf_Arange *a = dwarf_getarange_addr(ar, addr);
		Dwarf_Off cuoff;

		if (a && !dwarf_getarangeinfo(a, NULL, NULL, &cuoff))
			return corrupt_at(d, ".debug_info unit of address 0x%" PRIx64
					  " at offset 0x%" PRIx64, addr, (uint64_t)cuoff);
	}
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
	/* no readable unit covers @addr, and one unit could not be read:
	 * it may be the one, so this is not "no information" */
	if (d->units_bad)
		return corrupt_at(d, ".debug_info unit at offset 0x%" PRIx64, d->bad_unit);
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

/*
 * The DIEs holding @addr, from the unit down: a walk that descends only
 * into the first child whose pc ranges hold @addr, among the tags a pc can
 * be inside of (those libdw's dwarf_getscopes() descends into; a namespace
 * or class has no pc, so it is not entered, as there). The children of an
 * imported (partial) unit count as children of the DIE that imports it.
 * libdw's dwarf_getscopes() followed by dwarf_getscopes_die() gave the same
 * chain but walked the whole unit twice more (the inline's abstract origin,
 * then the path to the innermost DIE): most of a first lookup's time in
 * libc's large units.
 */
#define SCOPE_MAX_DIES (1u << 22)  /* DIEs visited per lookup: corrupt beyond */
#define SCOPE_MAX_IMPORT 8         /* nesting of imported units */
#define SCOPE_MAX_DEPTH 256        /* DIE nesting followed (deeper: cut) */

int ustack_dwarf_libdw_scopes; /* tests only: 1 = dwarf_getscopes() as before */

static int may_hold_pc(int tag)
{
	switch (tag) {
	case DW_TAG_compile_unit:
	case DW_TAG_module:
	case DW_TAG_lexical_block:
	case DW_TAG_with_stmt:
	case DW_TAG_catch_block:
	case DW_TAG_try_block:
	case DW_TAG_entry_point:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_subprogram:
	case DW_TAG_namespace:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
		return 1;
	default:
		return 0;
	}
}

/* The first child of @die holding @addr: 1 (in *out), 0 none, -1 corrupt
 * (*bad: the offset of the DIE at fault). */
static int scope_child(Dwarf_Die *die, uint64_t addr, Dwarf_Die *out, unsigned int *visits,
		       int nest, uint64_t *bad)
{
	Dwarf_Die c;
	uint64_t prev = 0;
	int r = dwarf_child(die, &c);

	if (r) {
		*bad = dwarf_dieoffset(die);
		return r < 0 ? -1 : 0;
	}
	do {
		uint64_t off = dwarf_dieoffset(&c);
		int tag = dwarf_tag(&c);

		/* siblings lie one after the other: a sibling reference that
		 * goes back would loop */
		if (++*visits > SCOPE_MAX_DIES || off <= prev) {
			*bad = off;
			return -1;
		}
		prev = off;
		if (tag == DW_TAG_imported_unit) {
			Dwarf_Attribute a;
			Dwarf_Die u;

			if (nest < SCOPE_MAX_IMPORT && dwarf_attr(&c, DW_AT_import, &a) &&
			    dwarf_formref_die(&a, &u)) {
				r = scope_child(&u, addr, out, visits, nest + 1, bad);
				if (r)
					return r;
			}
			continue;
		}
		if (may_hold_pc(tag)) {
			r = dwarf_haspc(&c, addr);
			if (r > 0) {
				*out = c;
				return 1;
			}
			if (r < 0) {
				*bad = off;
				return -1;
			}
		}
	} while ((r = dwarf_siblingof(&c, &c)) == 0);
	if (r < 0)
		*bad = prev;
	return r < 0 ? -1 : 0;
}

/* path[0] the unit, path[1] its child holding @addr, ..., the innermost
 * DIE holding @addr last; at most @max. Returns the count, -1 corrupt
 * (*bad: where). */
static int scope_path(Dwarf_Die *cudie, uint64_t addr, Dwarf_Die *path, int max, uint64_t *bad)
{
	unsigned int visits = 0;
	int n = 1, r = 0;

	path[0] = *cudie;
	while (n < max && (r = scope_child(&path[n - 1], addr, &path[n], &visits, 0, bad)) > 0)
		n++;
	return r < 0 ? -1 : n;
}

int ustack_dwarf__lookup(struct ustack_dwarf *d, uint64_t addr, struct ustack_dwarf_level *out)
{
	Dwarf_Die cudie, *scopes = NULL, *sc, inner, path[SCOPE_MAX_DEPTH];
	Dwarf_Line *line;
	int n, nlv = 0, ret = 0;

	/*
	 * Once libdw found the DIEs corrupt, the file's DWARF is not asked
	 * again: a corrupt table is dropped rather than half-trusted, and
	 * libdw leaks a little memory on some such failures (seen under
	 * fuzzing, in its line and scope readers), which must not grow with
	 * the trace.
	 */
	if (d->corrupt)
		return -EBADMSG;
	ret = find_cu(d, addr, &cudie);
	if (ret)
		return ret == -ENOENT ? 0 : ret;
	memset(&out[0], 0, sizeof(out[0]));
	{
		/* a unit with a line program libdw cannot read is corrupt; one
		 * without DW_AT_stmt_list simply has no lines */
		Dwarf_Attribute a;
		Dwarf_Word stmt;
		Dwarf_Lines *lines;
		size_t nlines;

		if (dwarf_attr(&cudie, DW_AT_stmt_list, &a) && !dwarf_formudata(&a, &stmt) &&
		    dwarf_getsrclines(&cudie, &lines, &nlines))
			return corrupt_at(d, ".debug_line program at offset 0x%" PRIx64
					  " (unit at .debug_info offset 0x%" PRIx64 ")",
					  (uint64_t)stmt, (uint64_t)dwarf_dieoffset(&cudie));
	}
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
	if (!ustack_dwarf_libdw_scopes) {
		uint64_t bad = 0;

		n = scope_path(&cudie, addr, path, SCOPE_MAX_DEPTH, &bad);
		if (n < 0) {
			ret = corrupt_at(d, ".debug_info DIEs of the unit whose DIE is at offset 0x%" PRIx64
					 " (at the DIE at offset 0x%" PRIx64 ")",
					 (uint64_t)dwarf_dieoffset(&cudie), bad);
			goto out;
		}
		/* innermost first, as dwarf_getscopes_die() gives them */
		for (int i = 0; i < n / 2; i++) {
			Dwarf_Die t = path[i];

			path[i] = path[n - 1 - i];
			path[n - 1 - i] = t;
		}
		sc = path;
		goto chain;
	}
	n = dwarf_getscopes(&cudie, addr, &scopes);
	if (n < 0) {
		ret = corrupt_at(d, ".debug_info DIEs of the unit whose DIE is at offset 0x%" PRIx64,
				 (uint64_t)dwarf_dieoffset(&cudie));
		goto out;
	}
	if (n > 0) {
		inner = scopes[0];
		free(scopes);
		scopes = NULL;
		n = dwarf_getscopes_die(&inner, &scopes);
		if (n < 0) {
			ret = corrupt_at(d, ".debug_info DIEs above offset 0x%" PRIx64,
					 (uint64_t)dwarf_dieoffset(&inner));
			goto out;
		}
	}
	sc = scopes;
chain:
	{
		/* the function DIEs of the chain, innermost first; a chain
		 * deeper than the limit keeps its innermost and outermost */
		Dwarf_Die *fn[USTACK_DWARF_MAX_LEVELS];

		for (int i = 0; i < n; i++) {
			int tag = dwarf_tag(&sc[i]);

			if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram &&
			    tag != DW_TAG_entry_point)
				continue;
			if (nlv == USTACK_DWARF_MAX_LEVELS)
				nlv--;
			fn[nlv++] = &sc[i];
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
			{
				/* where the function starts (pprof's start_line):
				 * through DW_AT_abstract_origin / specification */
				int dl = 0;

				lv->decl_line = !dwarf_decl_line(fn[k], &dl) && dl > 0 ? (uint32_t)dl : 0;
			}
		}
	}
	if (!nlv && (out[0].file || out[0].line))
		nlv = 1; /* a line without a function DIE (assembler sources) */
out:
	free(scopes);
	return ret ? ret : nlv;
}
