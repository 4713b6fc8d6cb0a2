// SPDX-License-Identifier: MIT
/*
 * The symbolizer: file_maps in, (file id, offset) -> function out.
 *
 * Per file id the ELF files are looked for once, at first use, and kept
 * open (an mmap each) until the symbolizer is freed. A build ID recorded in
 * the trace is the identity of the file: a file found by path is used only
 * when its own build ID is the same, since a library upgraded after the
 * recording would otherwise give plausible but wrong names.
 *
 * Every answer is cached per (file id, offset, exactness), so a report over
 * millions of samples symbolizes each distinct frame once.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include <ustack/hashmap.h>
#include <ustack/symbolize.h>

#include "bidcache/bidcache.h"
#include "common/compiler.h"
#include "common/log.h"
#include "common/opts.h"
#include "elf/elf_file.h"
#include "symbolize/line_cache.h"
#include "symbolize/symbolize_dwarf.h"
#include "symbolize/symbolize_internal.h"
#include "symbolize/debugfind.h"
#include "symbolize/image_lookup.h"

struct sym_file {
	uint64_t file_id;
	char *path;
	uint32_t kind;
	uint32_t build_id_size;
	uint8_t build_id[USTACK_BUILD_ID_MAX];
	int opened;
	int status;              /* enum ustack_sym_status, once opened */
	int image_borrowed;      /* image is the caller's (add_file_elf) */
	struct ustack_elf *image; /* offset -> vaddr (and symbols without debug) */
	struct ustack_elf *debug; /* separate debug file: symbols */
	struct ustack_dwarf *dw;  /* DWARF of the symbols' file, opened at first need */
	int dw_tried;
	struct ustack_line_cache *lc; /* answers of that DWARF read before (line_cache.h) */
	int lc_tried;
	int no_dwarf;             /* no DWARF in any place searched (sym_file_dwarf()) */
	char *debug_name;         /* the symbols' file as found, not a decompressed copy */
	/* DWARF from another file than the symbols (ustack_debugfind_dwarf():
	 * names from .symtab or MiniDebugInfo, lines from debuginfod) */
	struct ustack_elf *dwarf_elf;
	char *dwarf_name;
	unsigned int dwarf_source; /* enum ustack_debug_source of the DWARF */
	unsigned int source;     /* enum ustack_debug_source of the symbols */
	/* the recorded content (set_file_content()): only a file with these
	 * bytes names this id */
	int have_content;
	uint8_t sha256[USTACK_SHA256_SIZE];
	uint64_t content_size;
	unsigned int image_source; /* enum ustack_image_source */
	unsigned int dir_index;    /* of opts.buildid_dirs, for GIVEN_DIR */
	unsigned int nrefused;     /* files found for this id but not used */
	struct ustack_image_refusal refused[USTACK_IMAGE_REFUSALS_MAX];
};

/* One cached frame. Frames whose keys (frame_key()) are equal are chained. */
struct sym_slot {
	uint64_t file_id;
	uint64_t offset;
	uint32_t exact;
	uint32_t next;           /* index + 1 of the next frame of its chain, 0: none */
	uint32_t inl_first;      /* its inlined functions: inl[inl_first..+inl_count) */
	uint32_t inl_count;
	struct ustack_sym sym;
};

struct ustack_symbolizer {
	uint32_t flags;
	int debuginfod_failed;   /* asked once, failed: not asked again */
	char *debug_dir;
	struct ustack_image_lookup *lookup; /* where images are (image_lookup.h) */
	struct sym_file *files;
	size_t nfiles, files_cap;
	struct ustack_u64map *file_idx;  /* file id -> index in files */
	struct ustack_u64map *demangled; /* symbol name pointer -> char * (malloc'd) */
	struct ustack_u64map *frame_idx; /* frame_key() -> index + 1 of its chain's first frame */
	struct sym_slot *frames;
	size_t nframes, frames_cap;
	struct ustack_sym *inl;  /* inlined functions of the cached frames */
	size_t ninl, inl_cap;
};

/* One u64 for (file id, offset, exactness): distinct for the frames of
 * one file; frames of different files that meet share a chain. */
static inline uint64_t frame_key(uint64_t file_id, uint64_t offset, uint32_t exact)
{
	return file_id * 0x9e3779b97f4a7c15ull ^ offset ^ (uint64_t)exact << 63;
}

USTACK_API const char *ustack_sym_status_name(unsigned int status)
{
	switch (status) {
	case USTACK_SYM_OK: return "ok";
	case USTACK_SYM_NO_SYMBOL: return "no symbol";
	case USTACK_SYM_NO_FILE: return "file not found";
	case USTACK_SYM_MISMATCH: return "build ID mismatch";
	case USTACK_SYM_ANON: return "not in a file";
	case USTACK_SYM_UNKNOWN_ID: return "unknown file id";
	default: return "unknown";
	}
}

USTACK_API struct ustack_symbolizer *
ustack_symbolizer__new(const struct ustack_symbolizer_opts *opts)
{
	struct ustack_symbolizer *s;
	const char *dir = OPTS_GET(opts, debug_dir, NULL) ?: "/usr/lib/debug";

	if (!OPTS_VALID(opts, struct ustack_symbolizer_opts)) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->flags = OPTS_GET(opts, flags, 0);
	s->debug_dir = strdup(dir);
	s->lookup = ustack_image_lookup__new(OPTS_GET(opts, buildid_dirs, NULL),
					     OPTS_GET(opts, symfs, NULL), dir, s->flags);
	if (!s->lookup) {
		int err = errno;

		ustack_symbolizer__free(s);
		errno = err;
		return NULL;
	}
	s->file_idx = ustack_u64map__new();
	s->demangled = ustack_u64map__new();
	s->frame_idx = ustack_u64map__new();
	if (!s->debug_dir || !s->file_idx || !s->demangled || !s->frame_idx) {
		ustack_symbolizer__free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

USTACK_API void ustack_symbolizer__free(struct ustack_symbolizer *s)
{
	uint64_t name, d;

	if (!s)
		return;
	for (size_t i = 0; i < s->nfiles; i++) {
		struct sym_file *f = &s->files[i];

		/* the debug file may be the image (a debug-only lookup) */
		if (f->debug != f->image)
			ustack_elf__close(f->debug);
		if (!f->image_borrowed)
			ustack_elf__close(f->image);
		ustack_dwarf__close(f->dw);
		ustack_line_cache__save(f->lc);
		ustack_line_cache__free(f->lc);
		ustack_elf__close(f->dwarf_elf);
		free(f->debug_name);
		free(f->dwarf_name);
		free(f->path);
		for (unsigned int k = 0; k < f->nrefused; k++)
			free(f->refused[k].path);
	}
	ustack_image_lookup__free(s->lookup);
	for (size_t it = 0; ustack_u64map__next(s->demangled, &it, &name, &d);)
		if (d != name)
			free((void *)(uintptr_t)d);
	ustack_u64map__free(s->demangled);
	ustack_u64map__free(s->file_idx);
	ustack_u64map__free(s->frame_idx);
	free(s->files);
	free(s->frames);
	free(s->inl);
	free(s->debug_dir);
	free(s);
}

USTACK_API int ustack_symbolizer__add_file(struct ustack_symbolizer *s,
					   const struct ustack_file_map *fm)
{
	struct sym_file *f;
	uint64_t idx;

	if (!s || !fm || !fm->file_id)
		return -EINVAL;
	if (ustack_u64map__get(s->file_idx, fm->file_id, &idx))
		return 0;
	if (s->nfiles == s->files_cap) {
		size_t ncap = s->files_cap ? s->files_cap * 2 : 16;
		void *np = realloc(s->files, ncap * sizeof(*s->files));

		if (!np)
			return -ENOMEM;
		s->files = np;
		s->files_cap = ncap;
	}
	f = &s->files[s->nfiles];
	memset(f, 0, sizeof(*f));
	f->file_id = fm->file_id;
	f->kind = fm->kind;
	f->path = strdup(fm->path ? fm->path : "");
	if (!f->path)
		return -ENOMEM;
	f->build_id_size = fm->build_id_size > USTACK_BUILD_ID_MAX ? USTACK_BUILD_ID_MAX
								  : fm->build_id_size;
	memcpy(f->build_id, fm->build_id, f->build_id_size);
	if (ustack_u64map__put(s->file_idx, fm->file_id, s->nfiles)) {
		free(f->path);
		return -ENOMEM;
	}
	s->nfiles++;
	return 0;
}

int ustack_symbolizer__add_file_elf(struct ustack_symbolizer *s, const struct ustack_file_map *fm,
				    struct ustack_elf *image)
{
	uint64_t idx;
	int err;

	if (!image)
		return -EINVAL;
	if (s && fm && ustack_u64map__get(s->file_idx, fm->file_id, &idx))
		return 0; /* known already: as add_file() */
	err = ustack_symbolizer__add_file(s, fm);
	if (err)
		return err;
	s->files[s->nfiles - 1].image = image;
	s->files[s->nfiles - 1].image_borrowed = 1;
	return 0;
}

/* 1: @elf carries the build ID of @f; 0: another one (or none) */
static int build_id_matches(const struct sym_file *f, const struct ustack_elf *elf)
{
	uint8_t bid[USTACK_BUILD_ID_MAX];
	int n = ustack_elf__build_id(elf, bid, sizeof(bid));

	return n > 0 && (uint32_t)n == f->build_id_size && !memcmp(bid, f->build_id, (size_t)n);
}

/* The vDSO of this process, when it is the one that was recorded (same
 * kernel build): kernels keep no vDSO file a report could open. */
static struct ustack_elf *open_own_vdso(const struct sym_file *f, int *seen)
{
	const uint8_t *base = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	Elf64_Ehdr eh;
	size_t size;
	struct ustack_elf *elf;

	if (!base)
		return NULL;
	memcpy(&eh, base, sizeof(eh));
	/* the image ends with its section header table; a vDSO is a few
	 * pages, anything larger is not one we understand */
	size = (size_t)eh.e_shoff + (size_t)eh.e_shnum * eh.e_shentsize;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || size < sizeof(eh) || size > 64 * 1024)
		return NULL;
	elf = ustack_elf__open_mem(base, size, "[vdso]");
	if (!elf)
		return NULL;
	if (build_id_matches(f, elf))
		return elf;
	*seen = 1;
	ustack_elf__close(elf);
	return NULL;
}

/* Where debugfind may look, as this symbolizer was told. */
static struct ustack_debugfind_opts debugfind_opts(const struct ustack_symbolizer *s)
{
	return (struct ustack_debugfind_opts){
		.sz = sizeof(struct ustack_debugfind_opts),
		.debug_dir = s->debug_dir,
		.flags = (s->flags & USTACK_SYMBOLIZER_NO_DEBUG_DIR ? USTACK_DEBUGFIND_NO_DEBUG_DIR : 0) |
			 (s->debuginfod_failed ? USTACK_DEBUGFIND_NO_DEBUGINFOD : 0),
	};
}

/* Which file holds the symbols (and DWARF) of @f: debugfind.h. */
static void sym_file_find_debug(struct ustack_symbolizer *s, struct sym_file *f)
{
	struct ustack_debugfind_opts o = debugfind_opts(s);
	struct ustack_debug_found d;
	const char *at = f->image ? ustack_elf__path(f->image) : NULL;

	/* a copy in a build-ID cache: its .gnu_debuglink names a file beside
	 * the recorded path, not beside the copy (CRC and build ID still
	 * checked, as for the file found at that path) */
	if (f->image && (f->image_source == USTACK_IMAGE_SRC_GIVEN_DIR ||
			 f->image_source == USTACK_IMAGE_SRC_USTACK_CACHE ||
			 f->image_source == USTACK_IMAGE_SRC_PERF_CACHE))
		at = f->path;
	if (!ustack_debugfind(&o, at, f->image, f->build_id, f->build_id_size, &d, NULL, 0)) {
		f->debug = d.elf;
		f->source = d.source;
		f->debug_name = d.path[0] ? strdup(d.path) : NULL;
	} else {
		f->source = f->image ? USTACK_DEBUG_SRC_DYNSYM : USTACK_DEBUG_SRC_NONE;
	}
	if (d.flags & USTACK_DEBUG_FOUND_DEBUGINFOD_FAILED)
		s->debuginfod_failed = 1;
}

static struct ustack_image_want sym_file_want(const struct sym_file *f)
{
	return (struct ustack_image_want){
		.path = f->path,
		.build_id = f->build_id,
		.build_id_size = f->build_id_size,
		.sha256 = f->have_content ? f->sha256 : NULL,
		.size = f->content_size,
	};
}

static int sym_file_refused(const struct sym_file *f, unsigned int reason)
{
	for (unsigned int i = 0; i < f->nrefused; i++)
		if (f->refused[i].reason == reason)
			return 1;
	return 0;
}

/* The image of @f (image_lookup.h, then this process's vDSO), and when it
 * came from a build-ID cache, the debug file captured beside it. */
static void sym_file_find_image(struct ustack_symbolizer *s, struct sym_file *f)
{
	struct ustack_image_want w = sym_file_want(f);
	struct ustack_image_found found;
	char dpath[PATH_MAX];
	int seen = 0;

	if (!ustack_image_lookup__find(s->lookup, &w, &found)) {
		f->image = found.elf;
		f->image_source = found.source;
		f->dir_index = found.dir_index;
		if (!ustack_image_lookup__cached_debug(s->lookup, &w, &found, &f->debug, dpath,
						       sizeof(dpath))) {
			f->source = USTACK_DEBUG_SRC_BUILDID_CACHE;
			f->debug_name = strdup(dpath);
		}
	}
	/* the refusals are the file's now (report --stats shows them) */
	f->nrefused = found.nrefused;
	memcpy(f->refused, found.refused, sizeof(found.refused));
	if (!f->image && f->kind == USTACK_VMA_VDSO && f->build_id_size) {
		f->image = open_own_vdso(f, &seen);
		if (f->image)
			f->image_source = USTACK_IMAGE_SRC_VDSO;
		else if (seen && f->nrefused < USTACK_IMAGE_REFUSALS_MAX &&
			 (f->refused[f->nrefused].path = strdup("[vdso]"))) {
			f->refused[f->nrefused].reason = USTACK_IMAGE_REFUSED_BUILD_ID;
			f->refused[f->nrefused++].source = USTACK_IMAGE_SRC_VDSO;
		}
	}
}

static void sym_file_open(struct ustack_symbolizer *s, struct sym_file *f)
{
	f->opened = 1;
	if (f->image)
		f->image_source = USTACK_IMAGE_SRC_CALLER;
	else
		sym_file_find_image(s, f);
	if (f->image && !f->build_id_size && !(s->flags & USTACK_SYMBOLIZER_NO_DEBUG_DIR)) {
		/* no build ID recorded: the file's own finds its separate
		 * debug file for the symbols */
		uint8_t id[USTACK_BUILD_ID_MAX];
		int n = ustack_elf__build_id(f->image, id, sizeof(id));

		if (n >= 2 && n <= USTACK_BUILD_ID_MAX) {
			memcpy(f->build_id, id, n);
			f->build_id_size = n;
		}
	}
	/* a file found with the recorded build ID but other content says the
	 * build ID names more than one file: nothing is looked up by it alone */
	if (!f->debug && (f->image || (f->build_id_size &&
				       !sym_file_refused(f, USTACK_IMAGE_REFUSED_CONTENT))))
		sym_file_find_debug(s, f);
	/* a debug file alone: only usable when its PT_LOADs still describe
	 * the file (not an --only-keep-debug copy); lookups say NO_SYMBOL
	 * otherwise */
	if (!f->image && f->debug) {
		f->image = f->debug;
		/* where that file is, the symbols' source says */
		f->image_source = USTACK_IMAGE_SRC_DEBUG_DIR;
	}
	if (f->image)
		f->status = USTACK_SYM_OK;
	else
		f->status = f->nrefused ? USTACK_SYM_MISMATCH : USTACK_SYM_NO_FILE;
}

static struct sym_file *sym_file_get(struct ustack_symbolizer *s, uint64_t file_id)
{
	uint64_t idx;
	struct sym_file *f;

	if (!ustack_u64map__get(s->file_idx, file_id, &idx))
		return NULL;
	f = &s->files[idx];
	if (!f->opened)
		sym_file_open(s, f);
	return f;
}

void ustack_symbolizer__expect(struct ustack_symbolizer *s, uint64_t file_id,
			       const uint64_t *looks, size_t n)
{
	struct sym_file *f = s ? sym_file_get(s, file_id) : NULL;
	uint64_t *v;
	size_t m = 0;

	if (!f || f->status != USTACK_SYM_OK || !n)
		return;
	v = malloc(n * sizeof(*v));
	if (!v)
		return;
	/* as resolve() turns them into addresses */
	for (size_t i = 0; i < n; i++)
		if (!ustack_elf__offset_to_vaddr(f->image, looks[i], &v[m]))
			m++;
	/* the table resolve() asks first */
	ustack_elf__expect_addrs(f->debug ? f->debug : f->image, v, m);
	free(v);
}

USTACK_API int ustack_symbolizer__file_status(struct ustack_symbolizer *s, uint64_t file_id,
					      const char **elf_path)
{
	struct sym_file *f;

	if (elf_path)
		*elf_path = NULL;
	if (!s)
		return -EINVAL;
	if (!file_id)
		return USTACK_SYM_ANON;
	f = sym_file_get(s, file_id);
	if (!f)
		return USTACK_SYM_UNKNOWN_ID;
	if (elf_path && f->image)
		*elf_path = f->debug_name ? f->debug_name
					  : ustack_elf__path(f->debug ? f->debug : f->image);
	return f->status;
}

USTACK_API int ustack_symbolizer__file_source(struct ustack_symbolizer *s, uint64_t file_id)
{
	struct sym_file *f;

	if (!s || !file_id)
		return USTACK_DEBUG_SRC_NONE;
	f = sym_file_get(s, file_id);
	return f && f->status == USTACK_SYM_OK ? (int)f->source : USTACK_DEBUG_SRC_NONE;
}

USTACK_API const char *ustack_debug_source_name(unsigned int source)
{
	switch (source) {
	case USTACK_DEBUG_SRC_NONE: return "none";
	case USTACK_DEBUG_SRC_DYNSYM: return "dynsym";
	case USTACK_DEBUG_SRC_SELF: return "self";
	case USTACK_DEBUG_SRC_BUILD_ID_DIR: return "build-id dir";
	case USTACK_DEBUG_SRC_DEBUGLINK: return "debuglink";
	case USTACK_DEBUG_SRC_MINIDEBUGINFO: return "minidebuginfo";
	case USTACK_DEBUG_SRC_DEBUGINFOD: return "debuginfod";
	case USTACK_DEBUG_SRC_BUILDID_CACHE: return "build-ID cache";
	default: return "unknown";
	}
}

USTACK_API const char *ustack_image_source_name(unsigned int source)
{
	switch (source) {
	case USTACK_IMAGE_SRC_NONE: return "none";
	case USTACK_IMAGE_SRC_GIVEN_DIR: return "build-ID dir";
	case USTACK_IMAGE_SRC_USTACK_CACHE: return "ustack cache";
	case USTACK_IMAGE_SRC_PERF_CACHE: return "perf cache";
	case USTACK_IMAGE_SRC_SYMFS: return "symfs";
	case USTACK_IMAGE_SRC_PATH: return "path";
	case USTACK_IMAGE_SRC_DEBUG_DIR: return "debug dir";
	case USTACK_IMAGE_SRC_VDSO: return "vdso";
	case USTACK_IMAGE_SRC_CALLER: return "caller";
	default: return "unknown";
	}
}

USTACK_API int ustack_symbolizer__set_file_content(struct ustack_symbolizer *s, uint64_t file_id,
						   const uint8_t *sha256, uint64_t size)
{
	struct sym_file *f;
	uint64_t idx;

	if (!s || !sha256 || !file_id)
		return -EINVAL;
	if (!ustack_u64map__get(s->file_idx, file_id, &idx))
		return -ENOENT;
	f = &s->files[idx];
	if (f->have_content)
		/* every chunk repeats it; another hash for the same id is a
		 * trace that contradicts itself */
		return f->content_size == size && !memcmp(f->sha256, sha256, USTACK_SHA256_SIZE)
		       ? 0 : -EEXIST;
	if (f->opened)
		return -EBUSY; /* looked up already without it: too late to refuse */
	memcpy(f->sha256, sha256, USTACK_SHA256_SIZE);
	f->content_size = size;
	f->have_content = 1;
	return 0;
}

USTACK_API int ustack_symbolizer__file_image_source(struct ustack_symbolizer *s, uint64_t file_id,
						    const char **path, unsigned int *dir_index)
{
	struct sym_file *f;

	if (path)
		*path = NULL;
	if (dir_index)
		*dir_index = 0;
	if (!s || !file_id || !(f = sym_file_get(s, file_id)) || !f->image)
		return USTACK_IMAGE_SRC_NONE;
	if (path)
		*path = ustack_elf__path(f->image);
	if (dir_index)
		*dir_index = f->dir_index;
	return (int)f->image_source;
}

int ustack_symbolizer__file_refusal(struct ustack_symbolizer *s, uint64_t file_id, unsigned int i,
				    const char **path, unsigned int *source)
{
	struct sym_file *f = s && file_id ? sym_file_get(s, file_id) : NULL;

	if (!f || i >= f->nrefused)
		return 0;
	*path = f->refused[i].path;
	*source = f->refused[i].source;
	return (int)f->refused[i].reason;
}

/* The name to show for symbol @name: demangled, and without the symbol
 * version that debug files' .symtab appends ("memcpy@@GLIBC_2.14"), so that
 * a function has the same name whether it came from .dynsym or .symtab.
 * Cached per name pointer (names live in the mapped files). */
static const char *display_name(struct ustack_symbolizer *s, const char *name)
{
	const char *at = strchr(name, '@');
	int mangled = !(s->flags & USTACK_SYMBOLIZER_NO_DEMANGLE) && name[0] == '_' && name[1] == 'Z';
	uint64_t v;
	char *d = NULL, *base = NULL;

	if (!mangled && (!at || at == name))
		return name;
	if (ustack_u64map__get(s->demangled, (uintptr_t)name, &v))
		return (const char *)(uintptr_t)v;
	if (at && at != name)
		base = strndup(name, (size_t)(at - name));
	if (mangled)
		d = ustack_demangle(base ? base : name);
	if (d)
		free(base);
	else
		d = base;
	/* a failure is remembered too (value == key: the name itself) */
	if (ustack_u64map__put(s->demangled, (uintptr_t)name, (uintptr_t)(d ? d : name))) {
		free(d);
		return name;
	}
	return d ? d : name;
}

/* The file whose DWARF describes @f: the one its symbols are read from
 * (the separate debug file when there is one, else the image). Kept to this
 * one function so that other ways of finding debug files change only it. */
static const char *dwarf_file_path(const struct sym_file *f)
{
	const struct ustack_elf *e = f->dwarf_elf ? f->dwarf_elf : f->debug ? f->debug : f->image;

	/* the vDSO is read from this process's memory: no file to open */
	if (!e || f->kind == USTACK_VMA_VDSO)
		return NULL;
	return ustack_elf__path(e);
}

static struct ustack_dwarf *sym_file_dwarf(struct ustack_symbolizer *s, struct sym_file *f)
{
	const char *path;

	if (f->dw_tried)
		return f->dw;
	f->dw_tried = 1;
	if (s->flags & USTACK_SYMBOLIZER_NO_LINES)
		return NULL;
	path = dwarf_file_path(f);
	/* a corrupt file is reported by the open, corrupt units by the
	 * lookup that meets them (once per file) */
	if (path)
		f->dw = ustack_dwarf__open(path);
	if (f->dw) {
		f->dwarf_source = f->source;
	} else if (path && errno == ENOENT) {
		/* names without DWARF (.symtab, MiniDebugInfo): lines may
		 * still be elsewhere (debugfind.h) */
		struct ustack_debugfind_opts o = debugfind_opts(s);
		struct ustack_debug_found d;

		if (!ustack_debugfind_dwarf(&o, f->source, ustack_elf__path(f->image), f->image,
					    f->build_id, f->build_id_size, &d)) {
			f->dwarf_elf = d.elf;
			f->dwarf_name = strdup(d.path);
			f->dw = ustack_dwarf__open(ustack_elf__path(d.elf));
			if (f->dw)
				f->dwarf_source = d.source;
		} else if (!(d.flags & USTACK_DEBUG_FOUND_DEBUGINFOD_FAILED)) {
			f->no_dwarf = 1;
		}
		if (d.flags & USTACK_DEBUG_FOUND_DEBUGINFOD_FAILED)
			s->debuginfod_failed = 1;
	}
	return f->dw;
}

USTACK_API int ustack_symbolizer__file_dwarf_source(struct ustack_symbolizer *s, uint64_t file_id,
						    const char **path)
{
	struct sym_file *f;

	if (path)
		*path = NULL;
	if (!s || !file_id)
		return USTACK_DEBUG_SRC_NONE;
	f = sym_file_get(s, file_id);
	if (!f || f->status != USTACK_SYM_OK || !sym_file_dwarf(s, f))
		return USTACK_DEBUG_SRC_NONE;
	if (path)
		*path = f->dwarf_name ? f->dwarf_name
		      : f->debug_name ? f->debug_name : dwarf_file_path(f);
	return (int)f->dwarf_source;
}

/* The name to show for a DWARF function: its linkage name when it has one
 * (the assembler name: demangled for C++, as the ELF symbol shows it; for C
 * an asm("...") label, as addr2line and eu-addr2line print it), else its
 * DW_AT_name. */
static const char *dwarf_display_name(struct ustack_symbolizer *s,
				      const struct ustack_dwarf_level *lv)
{
	if (lv->linkage && *lv->linkage)
		return display_name(s, lv->linkage);
	return lv->name;
}

/* The line cache of @f's DWARF, opened at first need. Only for DWARF read
 * from the file of @f's symbols (the image or its debug file, the usual
 * case), whose path is known before the DWARF is opened; lines found
 * elsewhere (ustack_debugfind_dwarf()) are not cached. */
static struct ustack_line_cache *sym_file_lines(struct ustack_symbolizer *s, struct sym_file *f)
{
	if (f->lc_tried)
		return f->lc;
	f->lc_tried = 1;
	if (!(s->flags & USTACK_SYMBOLIZER_NO_LINES) && f->build_id_size && !f->dwarf_elf &&
	    dwarf_file_path(f))
		f->lc = ustack_line_cache__open(f->build_id, f->build_id_size, dwarf_file_path(f));
	return f->lc;
}

/*
 * "This file has no DWARF" is kept in the line cache only for the search
 * that found it so: the default debug directory, no debuginfod server
 * (whose answer may change). A debug file installed later is another file
 * to read the DWARF from, so it is not hidden by the mark.
 */
static int no_dwarf_cacheable(const struct ustack_symbolizer *s)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return !(s->flags & USTACK_SYMBOLIZER_NO_DEBUG_DIR) &&
	       !strcmp(s->debug_dir, "/usr/lib/debug") && (!urls || !*urls);
}

void ustack_symbolizer__save_line_caches(struct ustack_symbolizer *s)
{
	for (size_t i = 0; s && i < s->nfiles; i++)
		ustack_line_cache__save(s->files[i].lc);
}

/* The inline chain at @vlook: from the line cache, else from the DWARF
 * (and then into the cache). @return the levels, 0 when none. */
static int dwarf_levels(struct ustack_symbolizer *s, struct sym_file *f, uint64_t vlook,
			struct ustack_dwarf_level *lv)
{
	struct ustack_line_cache *lc = sym_file_lines(s, f);
	struct ustack_dwarf *dw;
	int n = lc ? ustack_line_cache__get(lc, vlook, lv) : -ENOENT;

	if (n != -ENOENT)
		return n;
	if (lc && ustack_line_cache__no_dwarf(lc) && no_dwarf_cacheable(s))
		return 0;
	dw = sym_file_dwarf(s, f);
	if (!dw) {
		if (lc && f->no_dwarf && !f->dwarf_elf && no_dwarf_cacheable(s))
			ustack_line_cache__set_no_dwarf(lc);
		return 0;
	}
	n = ustack_dwarf__lookup(dw, vlook, lv);
	if (n < 0) {
		/* corrupt: the lookup said where, once per file; nothing of
		 * this DWARF is cached, as nothing of it is used any more */
		ustack_line_cache__drop(lc);
		return 0;
	}
	/* the DWARF came from the file the cache was opened for */
	if (lc && !f->dwarf_elf)
		ustack_line_cache__put(lc, vlook, lv, n); /* a full cache only costs time */
	return n;
}

/* Source lines and inlined functions of @out (the outer frame, resolved
 * from ELF symbols) at link-time address @vlook. The inlined functions go
 * to s->inl; *first and *count say where. */
static int resolve_lines(struct ustack_symbolizer *s, struct sym_file *f, uint64_t vlook,
			 struct ustack_sym *out, uint32_t *first, uint32_t *count)
{
	struct ustack_dwarf_level lv[USTACK_DWARF_MAX_LEVELS];
	const struct ustack_dwarf_level *last;
	int n;

	*first = (uint32_t)s->ninl;
	*count = 0;
	if (s->flags & USTACK_SYMBOLIZER_NO_LINES)
		return 0;
	n = dwarf_levels(s, f, vlook, lv);
	if (n <= 0)
		return 0;
	last = &lv[n - 1];
	out->file = last->file;
	out->line = last->line;
	out->column = last->column;
	out->decl_line = last->decl_line;
	/* no ELF symbol (stripped static function): the DWARF name */
	if (!out->name && !last->inlined && dwarf_display_name(s, last)) {
		out->name = dwarf_display_name(s, last);
		out->elf_path = dwarf_file_path(f);
		out->status = USTACK_SYM_OK;
	}
	if (n == 1)
		return 0;
	if (s->ninl + (size_t)n - 1 > s->inl_cap) {
		size_t ncap = s->inl_cap ? s->inl_cap * 2 : 256;
		void *np;

		while (ncap < s->ninl + (size_t)n - 1)
			ncap *= 2;
		np = ncap < UINT32_MAX ? realloc(s->inl, ncap * sizeof(*s->inl)) : NULL;
		if (!np)
			return -ENOMEM;
		s->inl = np;
		s->inl_cap = ncap;
	}
	for (int i = 0; i < n - 1; i++) {
		struct ustack_sym *in = &s->inl[s->ninl++];

		*in = *out;
		in->name = dwarf_display_name(s, &lv[i]);
		if (!in->name)
			in->name = "??";
		in->sym_offset = 0;
		in->file = lv[i].file;
		in->line = lv[i].line;
		in->column = lv[i].column;
		in->decl_line = lv[i].decl_line;
		in->inlined = 1;
		in->status = USTACK_SYM_OK;
	}
	*count = (uint32_t)n - 1;
	return 0;
}

static int resolve(struct ustack_symbolizer *s, struct sym_file *f, uint64_t offset, int exact,
		   struct ustack_sym *out, uint32_t *first, uint32_t *count)
{
	uint64_t look = exact || !offset ? offset : offset - 1;
	uint64_t vlook, start;
	const char *name;
	int err = -ENOENT;

	memset(out, 0, sizeof(*out));
	*first = (uint32_t)s->ninl;
	*count = 0;
	out->path = f->path;
	out->status = f->status;
	if (f->status != USTACK_SYM_OK)
		return 0;
	out->status = USTACK_SYM_NO_SYMBOL;
	if (ustack_elf__offset_to_vaddr(f->image, offset, &out->vaddr) ||
	    ustack_elf__offset_to_vaddr(f->image, look, &vlook)) {
		out->vaddr = 0;
		return 0;
	}
	if (f->debug) {
		err = ustack_elf__symbolize_sized(f->debug, vlook, &name, &start);
		out->elf_path = f->debug_name ? f->debug_name : ustack_elf__path(f->debug);
	}
	if (err && f->image != f->debug) {
		err = ustack_elf__symbolize_sized(f->image, vlook, &name, &start);
		out->elf_path = ustack_elf__path(f->image);
	}
	if (err) {
		/* a zero-size symbol (hand-written assembly), from the file
		 * whose nearest symbol is closest: one of the debug file must
		 * not reach over a sized symbol of the image, or the reverse */
		const char *n2 = NULL;
		uint64_t s2 = 0, near1 = 0, near2 = 0;
		int e1 = -ENOENT, e2 = -ENOENT;

		if (f->debug)
			e1 = ustack_elf__symbolize_zero_size(f->debug, vlook, &name, &start, &near1);
		if (f->image != f->debug)
			e2 = ustack_elf__symbolize_zero_size(f->image, vlook, &n2, &s2, &near2);
		if (!e1 && near1 >= near2) {
			err = 0;
			out->elf_path = f->debug_name ? f->debug_name : ustack_elf__path(f->debug);
		} else if (!e2 && near2 >= near1) {
			err = 0;
			name = n2;
			start = s2;
			out->elf_path = ustack_elf__path(f->image);
		}
	}
	if (err) {
		out->elf_path = NULL;
	} else {
		out->name = display_name(s, name);
		out->sym_offset = out->vaddr - start;
		out->status = USTACK_SYM_OK;
	}
	return resolve_lines(s, f, vlook, out, first, count);
}

/* The cached frame of (file id, offset, exactness), resolved at first use.
 * *tmp receives uncached answers (file id 0, a file id not added yet). */
static int lookup_frame(struct ustack_symbolizer *s, uint64_t file_id, uint64_t offset,
			uint32_t flags, const struct sym_slot **slot, struct sym_slot *tmp)
{
	uint32_t exact = !!(flags & USTACK_SYM_EXACT_PC);
	struct sym_file *f;
	struct sym_slot *sl;
	uint64_t *head;
	int err;

	memset(tmp, 0, sizeof(*tmp));
	*slot = tmp;
	if (!file_id) {
		tmp->sym.vaddr = offset;
		tmp->sym.status = USTACK_SYM_ANON;
		return 0;
	}
	/* *head: the chain of this key, 0 when empty (also when just added) */
	head = ustack_u64map__slot(s->frame_idx, frame_key(file_id, offset, exact), NULL);
	if (!head)
		return -ENOMEM;
	for (uint64_t i = *head; i; i = sl->next) {
		sl = &s->frames[i - 1];
		if (sl->file_id == file_id && sl->offset == offset && sl->exact == exact) {
			*slot = sl;
			return 0;
		}
	}
	f = sym_file_get(s, file_id);
	if (!f) {
		/* not cached: its file_map may still be added */
		tmp->sym.status = USTACK_SYM_UNKNOWN_ID;
		return 0;
	}
	if (s->nframes == s->frames_cap) {
		size_t ncap = s->frames_cap ? s->frames_cap * 2 : 1024;
		void *np = s->nframes < UINT32_MAX - 1 ? realloc(s->frames, ncap * sizeof(*s->frames))
						      : NULL;

		if (!np)
			return -ENOMEM;
		s->frames = np;
		s->frames_cap = ncap;
	}
	err = resolve(s, f, offset, exact, &tmp->sym, &tmp->inl_first, &tmp->inl_count);
	if (err)
		return err;
	sl = &s->frames[s->nframes++];
	*sl = *tmp;
	sl->file_id = file_id;
	sl->offset = offset;
	sl->exact = exact;
	sl->next = (uint32_t)*head;
	*head = s->nframes;
	*slot = sl;
	return 0;
}

USTACK_API int ustack_symbolizer__symbolize(struct ustack_symbolizer *s, uint64_t file_id,
					    uint64_t offset, uint32_t flags,
					    struct ustack_sym *out)
{
	const struct sym_slot *sl;
	struct sym_slot tmp;
	int err;

	if (!s || !out)
		return -EINVAL;
	err = lookup_frame(s, file_id, offset, flags, &sl, &tmp);
	if (err)
		return err;
	/* callers built before file/line existed have a struct this long */
	memcpy(out, &sl->sym, USTACK_SYM_SIZE_V1);
	return 0;
}

USTACK_API int ustack_symbolizer__symbolize_frames(struct ustack_symbolizer *s,
						   uint64_t file_id, uint64_t offset,
						   uint32_t flags, struct ustack_sym *out,
						   size_t max, size_t sym_sz)
{
	const struct sym_slot *sl;
	struct sym_slot tmp;
	size_t n, cp = sym_sz < sizeof(struct ustack_sym) ? sym_sz : sizeof(struct ustack_sym);
	int err;

	if (!s || (max && !out) || sym_sz < USTACK_SYM_SIZE_V1)
		return -EINVAL;
	err = lookup_frame(s, file_id, offset, flags, &sl, &tmp);
	if (err)
		return err;
	n = (size_t)sl->inl_count + 1;
	for (size_t i = 0; i < n && i < max; i++) {
		const struct ustack_sym *src = i < sl->inl_count ? &s->inl[sl->inl_first + i]
								 : &sl->sym;

		memcpy((char *)out + i * sym_sz, src, cp);
		/* a newer caller's fields this library does not know: zero */
		if (sym_sz > cp)
			memset((char *)out + i * sym_sz + cp, 0, sym_sz - cp);
	}
	return (int)n;
}
