// SPDX-License-Identifier: MIT
/*
 * ELF64 little-endian file access over a read-only mapping. The headers are
 * validated once at open; every later access re-checks its own bounds
 * against the file size, because section and program headers are input.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/log.h"
#include "elf/elf_file.h"

struct elf_sym_entry {
	uint64_t start, size;
	const char *name;
	int rank; /* which alias to print: lower is preferred */
};

/* A symbol table section and its string table, checked once. */
struct elf_symtab {
	const uint8_t *data;  /* Elf64_Sym[n]; NULL: none */
	uint64_t n;
	const uint8_t *strtab;
	uint64_t strsize;
};

/*
 * Lookups answered by scanning the symbol tables before the index is
 * built. A scan reads each symbol once, in the file's own mapping (libc's
 * debug .symtab: 10k symbols, 11-20 us); building the index costs about
 * four scans (two passes over the tables, two small fresh arrays: 50-70
 * us), after which a lookup costs about a microsecond. Building after as
 * many scans as the index costs keeps any file's lookups within twice
 * the cheaper of the two ways.
 */
#define ELF_SYM_SCANS 4
/* Up to this many addresses announced at once are answered by one pass
 * over the symbols (ustack_elf__expect_addrs()); more build the index. */
#define ELF_EXPECT_MAX 4096
/* Pages of the addresses' span marked for the pass (4 KiB of bits: 128
 * MiB of address space; a wider span offers every symbol to the
 * addresses by binary search instead) */
#define EXPECT_PAGE_BITS (1u << 15)

/*
 * The index: the function symbols by block of 2^shift bytes of address.
 * Each symbol is listed under every block its extent [start, start +
 * max(size, 1)) meets, in table order; block b's list is bucket b & mask
 * (a power of two about an eighth of the symbol count: libc's 1.6 MB of
 * code is 1600 blocks, 2048 buckets), so blocks far apart may share a
 * bucket. A lookup reads the list of vaddr's block and tests each
 * symbol there as a scan does: a symbol of another block fails the test.
 * A symbol longer than ELF_IDX_SPAN blocks is listed once, in the list
 * after the buckets, which every lookup reads. Entries are tab << 31 |
 * symbol index. No sort: two passes over the tables.
 */
#define ELF_IDX_SHIFT 10 /* 1 KiB blocks: ~4 libc functions each */
#define ELF_IDX_SPAN 64

struct ustack_elf {
	const uint8_t *data;
	size_t size;
	int mapped;           /* 1: data is our mmap, 2: our malloc */
	char *path;
	Elf64_Ehdr ehdr;
	const uint8_t *shstrtab;
	uint64_t shstrtab_size;
	/* function symbols: .symtab and .dynsym, located at the first
	 * symbolize; the first lookups scan them, later ones use an index
	 * built once (ELF_SYM_SCANS) */
	struct elf_symtab symtabs[2];
	int symtabs_found;
	unsigned int sym_scans;
	uint32_t *idx_start; /* [buckets + 2]: bucket b is refs[start[b], start[b + 1]),
			      * the long symbols refs[start[buckets], start[buckets + 1]) */
	uint32_t *idx_refs;
	uint32_t idx_buckets, idx_shift;
	int syms_built;
	/* answers found ahead, by one pass for a set of addresses
	 * (ustack_elf__expect_addrs()): pre_vaddr[] sorted, pre_best[i].name
	 * NULL where no sized symbol covers pre_vaddr[i] */
	uint64_t *pre_vaddr;
	struct elf_sym_entry *pre_best;
	size_t pre_n;
};

static int elf_bad(const struct ustack_elf *elf, uint64_t off, const char *what)
{
	pr_warn("%s: offset 0x%llx: %s\n", elf->path, (unsigned long long)off, what);
	return -EBADMSG;
}

static int elf_validate(struct ustack_elf *elf)
{
	const Elf64_Ehdr *eh = &elf->ehdr;
	Elf64_Shdr sh;

	if (elf->size < sizeof(Elf64_Ehdr) || memcmp(elf->data, ELFMAG, SELFMAG))
		return elf_bad(elf, 0, "not an ELF file");
	memcpy(&elf->ehdr, elf->data, sizeof(elf->ehdr));
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return elf_bad(elf, EI_CLASS, "not a 64-bit little-endian ELF file");
	if (eh->e_phnum && (eh->e_phentsize != sizeof(Elf64_Phdr) ||
			    !in_bounds(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr), elf->size)))
		return elf_bad(elf, eh->e_phoff, "program header table outside the file");
	if (eh->e_shnum && (eh->e_shentsize != sizeof(Elf64_Shdr) ||
			    !in_bounds(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr), elf->size)))
		return elf_bad(elf, eh->e_shoff, "section header table outside the file");
	if (eh->e_shnum && eh->e_shstrndx != SHN_UNDEF && eh->e_shstrndx < eh->e_shnum) {
		memcpy(&sh, elf->data + eh->e_shoff + (uint64_t)eh->e_shstrndx * sizeof(sh), sizeof(sh));
		if (sh.sh_type != SHT_NOBITS && in_bounds(sh.sh_offset, sh.sh_size, elf->size)) {
			elf->shstrtab = elf->data + sh.sh_offset;
			elf->shstrtab_size = sh.sh_size;
		}
	}
	return 0;
}

static struct ustack_elf *elf_new(const void *data, size_t size, const char *name, int mapped)
{
	struct ustack_elf *elf = calloc(1, sizeof(*elf));
	int err;

	if (!elf)
		return NULL;
	elf->data = data;
	elf->size = size;
	elf->mapped = mapped;
	elf->path = strdup(name ? name : "(memory)");
	if (!elf->path) {
		free(elf);
		errno = ENOMEM;
		return NULL;
	}
	err = elf_validate(elf);
	if (err) {
		elf->mapped = 0; /* the caller unmaps */
		ustack_elf__close(elf);
		errno = -err;
		return NULL;
	}
	return elf;
}

struct ustack_elf *ustack_elf__open_fd(int fd, const char *name)
{
	struct ustack_elf *elf;
	struct stat st;
	void *map;
	int err;

	if (fstat(fd, &st))
		return NULL;
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		pr_warn("%s: not an ELF file\n", name);
		errno = S_ISREG(st.st_mode) ? EBADMSG : EINVAL;
		return NULL;
	}
	map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return NULL;
	elf = elf_new(map, st.st_size, name, 1);
	if (!elf) {
		err = errno;
		munmap(map, st.st_size);
		errno = err;
	}
	return elf;
}

struct ustack_elf *ustack_elf__open(const char *path)
{
	struct ustack_elf *elf;
	int fd, err;

	/* O_NONBLOCK: a path from untrusted input (a core's NT_FILE) may name
	 * a FIFO, whose open would wait for a writer; it is refused below */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	elf = ustack_elf__open_fd(fd, path);
	err = errno;
	close(fd);
	errno = err;
	return elf;
}

struct ustack_elf *ustack_elf__open_mem(const void *data, size_t size, const char *name)
{
	if (!data) {
		errno = EINVAL;
		return NULL;
	}
	return elf_new(data, size, name, 0);
}

struct ustack_elf *ustack_elf__open_mem_owned(void *data, size_t size, const char *name)
{
	if (!data) {
		errno = EINVAL;
		return NULL;
	}
	return elf_new(data, size, name, 2);
}

void ustack_elf__close(struct ustack_elf *elf)
{
	if (!elf)
		return;
	if (elf->mapped == 1)
		munmap((void *)elf->data, elf->size);
	else if (elf->mapped == 2)
		free((void *)elf->data);
	free(elf->idx_start);
	free(elf->pre_vaddr);
	free(elf->pre_best);
	free(elf->idx_refs);
	free(elf->path);
	free(elf);
}

const char *ustack_elf__path(const struct ustack_elf *elf)
{
	return elf->path;
}

const uint8_t *ustack_elf__data(const struct ustack_elf *elf, size_t *size)
{
	if (size)
		*size = elf->size;
	return elf->data;
}

unsigned int ustack_elf__type(const struct ustack_elf *elf)
{
	return elf->ehdr.e_type;
}

unsigned int ustack_elf__machine(const struct ustack_elf *elf)
{
	return elf->ehdr.e_machine;
}

uint64_t ustack_elf__entry(const struct ustack_elf *elf)
{
	return elf->ehdr.e_entry;
}

static void elf_shdr(const struct ustack_elf *elf, unsigned int i, Elf64_Shdr *sh)
{
	memcpy(sh, elf->data + elf->ehdr.e_shoff + (uint64_t)i * sizeof(*sh), sizeof(*sh));
}

static const char *elf_sec_name(const struct ustack_elf *elf, uint32_t off)
{
	if (!elf->shstrtab || off >= elf->shstrtab_size)
		return NULL;
	/* the name must be NUL-terminated inside the table */
	if (!memchr(elf->shstrtab + off, 0, elf->shstrtab_size - off))
		return NULL;
	return (const char *)elf->shstrtab + off;
}

static int elf_fill_section(const struct ustack_elf *elf, const Elf64_Shdr *sh,
			    struct ustack_elf_section *out, uint64_t hdr_off)
{
	out->addr = sh->sh_addr;
	out->offset = sh->sh_offset;
	out->type = sh->sh_type;
	out->flags = sh->sh_flags;
	out->size = sh->sh_size;
	out->data = NULL;
	if (sh->sh_type == SHT_NOBITS)
		return 0;
	if (!in_bounds(sh->sh_offset, sh->sh_size, elf->size))
		return elf_bad(elf, hdr_off, "section contents outside the file");
	out->data = elf->data + sh->sh_offset;
	return 0;
}

int ustack_elf__section(const struct ustack_elf *elf, const char *name,
			struct ustack_elf_section *out)
{
	Elf64_Shdr sh;

	for (unsigned int i = 1; i < elf->ehdr.e_shnum; i++) {
		const char *n;

		elf_shdr(elf, i, &sh);
		n = elf_sec_name(elf, sh.sh_name);
		if (n && !strcmp(n, name))
			return elf_fill_section(elf, &sh, out,
						elf->ehdr.e_shoff + (uint64_t)i * sizeof(sh));
	}
	return -ENOENT;
}

unsigned int ustack_elf__nr_segments(const struct ustack_elf *elf)
{
	return elf->ehdr.e_phnum;
}

int ustack_elf__segment(const struct ustack_elf *elf, unsigned int i,
			struct ustack_elf_segment *out)
{
	Elf64_Phdr ph;

	if (i >= elf->ehdr.e_phnum)
		return -ERANGE;
	memcpy(&ph, elf->data + elf->ehdr.e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
	out->type = ph.p_type;
	out->flags = ph.p_flags;
	out->offset = ph.p_offset;
	out->vaddr = ph.p_vaddr;
	out->filesz = ph.p_filesz;
	out->memsz = ph.p_memsz;
	out->align = ph.p_align;
	return 0;
}

int ustack_elf__find_segment(const struct ustack_elf *elf, uint32_t p_type,
			     struct ustack_elf_segment *out)
{
	for (unsigned int i = 0; i < elf->ehdr.e_phnum; i++)
		if (!ustack_elf__segment(elf, i, out) && out->type == p_type)
			return 0;
	return -ENOENT;
}

const uint8_t *ustack_elf__segment_data(const struct ustack_elf *elf,
					const struct ustack_elf_segment *seg)
{
	if (!in_bounds(seg->offset, seg->filesz, elf->size))
		return NULL;
	return elf->data + seg->offset;
}

int ustack_elf__offset_to_vaddr(const struct ustack_elf *elf, uint64_t off, uint64_t *vaddr)
{
	struct ustack_elf_segment s;

	for (unsigned int i = 0; i < elf->ehdr.e_phnum; i++) {
		if (ustack_elf__segment(elf, i, &s) || s.type != PT_LOAD)
			continue;
		if (off >= s.offset && off - s.offset < s.filesz) {
			*vaddr = s.vaddr + (off - s.offset);
			return 0;
		}
	}
	return -ENOENT;
}

int ustack_elf__vaddr_to_offset(const struct ustack_elf *elf, uint64_t vaddr, uint64_t *off)
{
	struct ustack_elf_segment s;

	for (unsigned int i = 0; i < elf->ehdr.e_phnum; i++) {
		if (ustack_elf__segment(elf, i, &s) || s.type != PT_LOAD)
			continue;
		if (vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz) {
			*off = s.offset + (vaddr - s.vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Walk the notes of one SHT_NOTE section or PT_NOTE segment looking for
 * (name, type). Returns the descriptor length, -ENOENT or -EBADMSG.
 */
static int elf_find_note(const struct ustack_elf *elf, const uint8_t *p, uint64_t size,
			 uint64_t file_off, const char *name, uint32_t type,
			 const uint8_t **desc)
{
	uint64_t off = 0, namelen = strlen(name) + 1;

	while (off + 12 <= size) {
		uint32_t nsz = ld_u32(p + off), dsz = ld_u32(p + off + 4), t = ld_u32(p + off + 8);
		uint64_t name_off = off + 12;
		uint64_t desc_off = name_off + (((uint64_t)nsz + 3) & ~3ull);
		uint64_t next = desc_off + (((uint64_t)dsz + 3) & ~3ull);

		if (!in_bounds(name_off, nsz, size) || !in_bounds(desc_off, dsz, size))
			return elf_bad(elf, file_off + off, "note extends past its section");
		if (t == type && nsz == namelen && !memcmp(p + name_off, name, namelen)) {
			*desc = p + desc_off;
			return (int)dsz;
		}
		off = next;
	}
	return -ENOENT;
}

int ustack_elf__build_id(const struct ustack_elf *elf, uint8_t *buf, size_t size)
{
	const uint8_t *desc = NULL;
	int ret = -ENOENT;
	Elf64_Shdr sh;

	/* Sections first (named .note.gnu.build-id normally), then PT_NOTE
	 * segments for files whose section headers were stripped. */
	for (unsigned int i = 1; i < elf->ehdr.e_shnum && ret == -ENOENT; i++) {
		elf_shdr(elf, i, &sh);
		if (sh.sh_type != SHT_NOTE)
			continue;
		if (!in_bounds(sh.sh_offset, sh.sh_size, elf->size))
			return elf_bad(elf, sh.sh_offset, "note section outside the file");
		ret = elf_find_note(elf, elf->data + sh.sh_offset, sh.sh_size, sh.sh_offset,
				    "GNU", NT_GNU_BUILD_ID, &desc);
	}
	for (unsigned int i = 0; i < elf->ehdr.e_phnum && ret == -ENOENT; i++) {
		struct ustack_elf_segment s;

		if (ustack_elf__segment(elf, i, &s) || s.type != PT_NOTE)
			continue;
		if (!in_bounds(s.offset, s.filesz, elf->size))
			return elf_bad(elf, s.offset, "note segment outside the file");
		ret = elf_find_note(elf, elf->data + s.offset, s.filesz, s.offset,
				    "GNU", NT_GNU_BUILD_ID, &desc);
	}
	if (ret < 0)
		return ret;
	if (ret == 0)
		return -ENOENT;
	memcpy(buf, desc, (size_t)ret < size ? (size_t)ret : size);
	return ret;
}

int ustack_elf__debuglink(const struct ustack_elf *elf, const char **name, uint32_t *crc)
{
	struct ustack_elf_section s;
	const uint8_t *nul;
	uint64_t crc_off;
	int err;

	err = ustack_elf__section(elf, ".gnu_debuglink", &s);
	if (err)
		return err;
	if (!s.data || !s.size)
		return elf_bad(elf, s.offset, ".gnu_debuglink: empty");
	nul = memchr(s.data, 0, s.size);
	if (!nul)
		return elf_bad(elf, s.offset, ".gnu_debuglink: name not terminated");
	crc_off = ((uint64_t)(nul - s.data) + 1 + 3) & ~3ull;
	if (!in_bounds(crc_off, 4, s.size))
		return elf_bad(elf, s.offset, ".gnu_debuglink: CRC missing");
	*name = (const char *)s.data;
	*crc = ld_u32(s.data + crc_off);
	return 0;
}

/*
 * Among aliases of one address, the name a person expects: global over
 * weak over local (pthread_cond_wait, not __GI___pthread_cond_wait), then
 * fewer leading underscores (clone3, not __clone3), then shorter.
 */
static int sym_rank(const Elf64_Sym *sym, const char *name)
{
	int bind = ELF64_ST_BIND(sym->st_info);
	int rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
	int underscores = 0;

	while (name[underscores] == '_' && underscores < 15)
		underscores++;
	return rank << 4 | underscores;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct elf_sym_entry *x = a, *y = b;
	size_t lx, ly;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* prefer the larger (function over its local labels) */
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	lx = strlen(x->name);
	ly = strlen(y->name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Find and check one symbol table section and its string table. */
static int elf_symtab_locate(struct ustack_elf *elf, const char *secname, struct elf_symtab *t)
{
	struct ustack_elf_section symtab, strtab;
	Elf64_Shdr sh;
	int err;

	memset(t, 0, sizeof(*t));
	err = ustack_elf__section(elf, secname, &symtab);
	if (err)
		return err;
	/* separate debug files keep the section header but not the bytes
	 * (SHT_NOBITS): no symbols here, nothing wrong */
	if (symtab.type == SHT_NOBITS || !symtab.data)
		return -ENOENT;
	if (symtab.size % sizeof(Elf64_Sym))
		return elf_bad(elf, symtab.offset, "symbol table size not a multiple of entries");
	/* sh_link of the symbol table names its string table */
	for (unsigned int i = 1; i < elf->ehdr.e_shnum; i++) {
		elf_shdr(elf, i, &sh);
		if (sh.sh_offset == symtab.offset && sh.sh_type == symtab.type)
			break;
	}
	if (sh.sh_link == 0 || sh.sh_link >= elf->ehdr.e_shnum)
		return elf_bad(elf, symtab.offset, "symbol table without string table");
	elf_shdr(elf, sh.sh_link, &sh);
	err = elf_fill_section(elf, &sh, &strtab, sh.sh_offset);
	if (err || !strtab.data)
		return -EBADMSG;
	t->data = symtab.data;
	t->n = symtab.size / sizeof(Elf64_Sym);
	t->strtab = strtab.data;
	t->strsize = strtab.size;
	return 0;
}

static void elf_symtabs_find(struct ustack_elf *elf)
{
	if (elf->symtabs_found)
		return;
	elf->symtabs_found = 1;
	elf_symtab_locate(elf, ".symtab", &elf->symtabs[0]);
	elf_symtab_locate(elf, ".dynsym", &elf->symtabs[1]);
}

/* Symbol @i of @t as an index entry; 0 when it is not a named function. */
static int elf_sym_entry(const struct elf_symtab *t, uint64_t i, struct elf_sym_entry *e)
{
	Elf64_Sym sym;

	memcpy(&sym, t->data + i * sizeof(sym), sizeof(sym));
	if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC && ELF64_ST_TYPE(sym.st_info) != STT_GNU_IFUNC)
		return 0;
	if (sym.st_shndx == SHN_UNDEF || sym.st_name >= t->strsize ||
	    !memchr(t->strtab + sym.st_name, 0, t->strsize - sym.st_name))
		return 0;
	*e = (struct elf_sym_entry){
		.start = sym.st_value,
		.size = sym.st_size,
		.name = (const char *)t->strtab + sym.st_name,
		.rank = sym_rank(&sym, (const char *)t->strtab + sym.st_name),
	};
	return 1;
}

int ustack_elf__for_each_func(struct ustack_elf *elf,
			      int (*fn)(void *ctx, const struct ustack_elf_symbol *sym), void *ctx)
{
	elf_symtabs_find(elf);
	if (!elf->symtabs[0].data && !elf->symtabs[1].data)
		return -ENOENT;
	for (int k = 0; k < 2; k++) {
		const struct elf_symtab *t = &elf->symtabs[k];

		for (uint64_t i = 0; t->data && i < t->n; i++) {
			struct ustack_elf_symbol s;
			struct elf_sym_entry e;
			Elf64_Sym sym;
			int ret;

			if (!elf_sym_entry(t, i, &e) || !e.name[0])
				continue;
			memcpy(&sym, t->data + i * sizeof(sym), sizeof(sym));
			s = (struct ustack_elf_symbol){
				.name = e.name, .value = e.start, .size = e.size,
				.type = ELF64_ST_TYPE(sym.st_info),
				.bind = ELF64_ST_BIND(sym.st_info), .table = (uint8_t)k,
			};
			ret = fn(ctx, &s);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* (value, size) covers vaddr: without short-circuit, one branch */
static inline int sym_covers(uint64_t value, uint64_t size, uint64_t vaddr)
{
	return (value <= vaddr) & ((vaddr - value < size) | ((size == 0) & (vaddr == value)));
}

/*
 * The symbol a lookup gives, by one pass over the tables:
 * among the symbols covering @vaddr the one that starts last, then the
 * smallest (a local label inside a function), then the first in sym_cmp()
 * order (the alias a person expects). Cheap checks first: most symbols are
 * rejected by their address alone, without touching the string table.
 */
static inline void sym_consider(const struct elf_symtab *t, uint64_t i, uint64_t vaddr,
				struct elf_sym_entry *best, int *found)
{
	const uint8_t *p = t->data + i * sizeof(Elf64_Sym);
	uint64_t value = ld_u64(p + offsetof(Elf64_Sym, st_value));
	uint64_t size = ld_u64(p + offsetof(Elf64_Sym, st_size));
	struct elf_sym_entry e;

	/* one well-predicted branch: symbols are not in address order, so a
	 * branch on "value > vaddr" mispredicts half the time */
	if (!sym_covers(value, size, vaddr))
		return;
	if (*found && (value < best->start || (value == best->start && size > best->size)))
		return;
	if (!elf_sym_entry(t, i, &e))
		return;
	/* same start and size (checked above): sym_cmp() decides */
	if (!*found || value > best->start || size < best->size || sym_cmp(&e, best) < 0) {
		*best = e;
		*found = 1;
	}
}

static int elf_scan_symbols(struct ustack_elf *elf, uint64_t vaddr, struct elf_sym_entry *best)
{
	int found = 0;

	for (int k = 0; k < 2; k++) {
		const struct elf_symtab *t = &elf->symtabs[k];

		for (uint64_t i = 0; t->data && i < t->n; i++)
			sym_consider(t, i, vaddr, best, &found);
	}
	return found ? 0 : -ENOENT;
}

/* Symbol @i of @t for the index: a function (or IFUNC) defined in some
 * section; elf_sym_entry() checks the rest at lookup. Its first and last
 * block; 0: not indexed, 1: listed per block, 2: long. */
static inline __attribute__((always_inline)) int idx_blocks(const struct elf_symtab *t, uint64_t i,
							   uint32_t shift, uint64_t *b0, uint64_t *b1)
{
	const uint8_t *p = t->data + i * sizeof(Elf64_Sym);
	unsigned int type = ELF64_ST_TYPE(p[offsetof(Elf64_Sym, st_info)]);
	uint64_t start, size, last;

	if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
	    ld_u16(p + offsetof(Elf64_Sym, st_shndx)) == SHN_UNDEF)
		return 0;
	start = ld_u64(p + offsetof(Elf64_Sym, st_value));
	size = ld_u64(p + offsetof(Elf64_Sym, st_size));
	last = size ? start + (size - 1) : start;
	if (last < start) /* wraps: reaches the top */
		return 2;
	*b0 = start >> shift;
	*b1 = last >> shift;
	return *b1 - *b0 >= ELF_IDX_SPAN ? 2 : 1;
}

static int elf_build_index(struct ustack_elf *elf)
{
	uint64_t nsym = 0, total, nlong, b0, b1;
	uint32_t nb = 64, mask, shift = ELF_IDX_SHIFT, *start = NULL, *refs;

	/* buckets: an eighth of the symbols of any type (not counting the
	 * function symbols saves a pass; more buckets than blocks of code
	 * would be empty, and their counts a larger array to clear) */
	for (int k = 0; k < 2; k++) {
		const struct elf_symtab *t = &elf->symtabs[k];

		if (t->data && t->n >= 1u << 31)
			return -E2BIG;
		nsym += t->data ? t->n : 0;
	}
	if (!nsym)
		return 0;
	while (nb < nsym / 8 && nb < 1u << 22)
		nb *= 2;
	mask = nb - 1;
	start = malloc(((size_t)nb + 2) * sizeof(*start));
	if (!start)
		return -ENOMEM;
	/* count per bucket; blocks twice as long while the lists would hold
	 * more than 4 entries a symbol (a table of long functions) */
	for (;;) {
		memset(start, 0, ((size_t)nb + 2) * sizeof(*start));
		total = nlong = 0;
		for (uint32_t k = 0; k < 2; k++) {
			const struct elf_symtab *t = &elf->symtabs[k];

			for (uint64_t i = 0; t->data && i < t->n; i++) {
				int r = idx_blocks(t, i, shift, &b0, &b1);

				if (r == 2)
					nlong++;
				else if (r == 1)
					for (uint64_t b = b0; b <= b1; b++, total++)
						start[(b & mask) + 1]++;
			}
		}
		if (total + nlong <= 4 * nsym + 4096 || shift >= 40)
			break;
		shift++;
	}
	if (total + nlong > UINT32_MAX) {
		free(start);
		return -E2BIG;
	}
	for (uint32_t b = 0; b < nb; b++)
		start[b + 1] += start[b];
	start[nb + 1] = start[nb] + (uint32_t)nlong;
	refs = malloc((size_t)(total + nlong + 1) * sizeof(*refs));
	if (!refs) {
		free(start);
		return -ENOMEM;
	}
	/* fill: start[b] moves to the end of bucket b (the start of b + 1),
	 * then everything moves back one */
	nlong = total;
	for (uint32_t k = 0; k < 2; k++) {
		const struct elf_symtab *t = &elf->symtabs[k];

		for (uint64_t i = 0; t->data && i < t->n; i++) {
			int r = idx_blocks(t, i, shift, &b0, &b1);
			uint32_t ref = k << 31 | (uint32_t)i;

			if (r == 2)
				refs[nlong++] = ref;
			else if (r == 1)
				for (uint64_t b = b0; b <= b1; b++)
					refs[start[b & mask]++] = ref;
		}
	}
	for (uint32_t b = nb; b > 0; b--)
		start[b] = start[b - 1];
	start[0] = 0;
	elf->idx_start = start;
	elf->idx_refs = refs;
	elf->idx_buckets = nb;
	elf->idx_shift = shift;
	return 0;
}

/* The same choice as elf_scan_symbols(), from the index. */
static int elf_index_lookup(struct ustack_elf *elf, uint64_t vaddr, struct elf_sym_entry *best)
{
	uint32_t b = (uint32_t)((vaddr >> elf->idx_shift) & (elf->idx_buckets - 1));
	int found = 0;

	for (int pass = 0; pass < 2; pass++) {
		uint32_t from = elf->idx_start[b], to = elf->idx_start[b + 1];

		for (uint32_t j = from; j < to; j++) {
			uint32_t ref = elf->idx_refs[j];

			sym_consider(&elf->symtabs[ref >> 31], ref & 0x7fffffffu, vaddr, best, &found);
		}
		b = elf->idx_buckets; /* then the long symbols */
	}
	return found ? 0 : -ENOENT;
}

/*
 * Hand-written assembly often has symbols without a size: ld.so's `_start`
 * and `_dl_start_user` (the outermost frame of every process while ld.so
 * runs), glibc's `__restore_rt`. When no sized symbol covers @vaddr, the
 * code symbol (FUNC, or NOTYPE in an executable section) with a size of 0
 * that starts last at or before @vaddr reaches it, unless a sized symbol
 * starts there too or any symbol starts in between: the next symbol ends
 * it, as gdb's minimal symbols and perf's symbol-end fix-up take it. At
 * most ZERO_SIZE_REACH bytes, so that padding after the last symbol of a
 * section is not taken for it. One more pass, on the lookups that found
 * nothing only.
 */
#define ZERO_SIZE_REACH 4096

static int elf_symbolize_sized(struct ustack_elf *elf, uint64_t vaddr, struct elf_sym_entry *out);

static int elf_exec_section(const struct ustack_elf *elf, unsigned int shndx)
{
	Elf64_Shdr sh;

	if (shndx == SHN_UNDEF || shndx >= SHN_LORESERVE || shndx >= elf->ehdr.e_shnum)
		return 0;
	elf_shdr(elf, shndx, &sh);
	return (sh.sh_flags & SHF_EXECINSTR) != 0;
}

static int elf_zero_size_symbol(struct ustack_elf *elf, uint64_t vaddr, struct elf_sym_entry *best,
				uint64_t *nearest)
{
	uint64_t last = 0;
	int have = 0, found = 0, blocked = 0;

	elf_symtabs_find(elf);

	for (int k = 0; k < 2; k++) {
		const struct elf_symtab *t = &elf->symtabs[k];

		for (uint64_t i = 0; t->data && i < t->n; i++) {
			Elf64_Sym sym;
			unsigned int type;
			const char *nm;
			struct elf_sym_entry e;

			memcpy(&sym, t->data + i * sizeof(sym), sizeof(sym));
			if (sym.st_value > vaddr || vaddr - sym.st_value >= ZERO_SIZE_REACH ||
			    (have && sym.st_value < last))
				continue;
			type = ELF64_ST_TYPE(sym.st_info);
			if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
				continue;
			if (sym.st_name == 0 || sym.st_name >= t->strsize ||
			    !memchr(t->strtab + sym.st_name, 0, t->strsize - sym.st_name) ||
			    !elf_exec_section(elf, sym.st_shndx))
				continue;
			if (!have || sym.st_value > last) {
				last = sym.st_value;
				have = 1;
				found = blocked = 0;
			}
			if (sym.st_size) { /* a sized symbol here did not cover vaddr */
				blocked = 1;
				continue;
			}
			nm = (const char *)t->strtab + sym.st_name;
			e = (struct elf_sym_entry){ .start = sym.st_value, .size = 0, .name = nm,
						    .rank = sym_rank(&sym, nm) };
			if (!found || sym_cmp(&e, best) < 0) {
				*best = e;
				found = 1;
			}
		}
	}
	*nearest = have ? last : 0;
	return found && !blocked ? 0 : -ENOENT;
}

int ustack_elf__symbolize_sized(struct ustack_elf *elf, uint64_t vaddr, const char **name,
				uint64_t *sym_start)
{
	struct elf_sym_entry best;
	int err = elf_symbolize_sized(elf, vaddr, &best);

	if (err)
		return err;
	*name = best.name;
	*sym_start = best.start;
	return 0;
}

int ustack_elf__symbolize_zero_size(struct ustack_elf *elf, uint64_t vaddr, const char **name,
				    uint64_t *sym_start, uint64_t *nearest)
{
	struct elf_sym_entry best;
	int err = elf_zero_size_symbol(elf, vaddr, &best, nearest);

	if (err)
		return err;
	*name = best.name;
	*sym_start = best.start;
	return 0;
}

int ustack_elf__symbolize(struct ustack_elf *elf, uint64_t vaddr, const char **name,
			  uint64_t *sym_start)
{
	uint64_t nearest;

	if (!ustack_elf__symbolize_sized(elf, vaddr, name, sym_start))
		return 0;
	return ustack_elf__symbolize_zero_size(elf, vaddr, name, sym_start, &nearest);
}

void ustack_elf__expect_lookups(struct ustack_elf *elf, size_t n)
{
	elf_symtabs_find(elf);
	if (!elf->syms_built && elf->sym_scans + n > ELF_SYM_SCANS) {
		elf->syms_built = 1;
		elf_build_index(elf);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* First index of @v (sorted, @n entries) whose value is >= @x. */
static size_t lower_bound_u64(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void ustack_elf__expect_addrs(struct ustack_elf *elf, const uint64_t *vaddrs, size_t n)
{
	struct elf_sym_entry *best;
	uint64_t *v, pages[EXPECT_PAGE_BITS / 64] = { 0 }, lo_page, npages;
	uint8_t *found;
	size_t m = 0;

	elf_symtabs_find(elf);
	/* an index answers any address at once already; many addresses:
	 * build it (a pass per address range would cost more) */
	if (elf->syms_built || n > ELF_EXPECT_MAX || !n) {
		ustack_elf__expect_lookups(elf, n);
		return;
	}
	v = malloc(n * sizeof(*v));
	best = malloc(n * sizeof(*best));
	found = calloc(n, 1);
	if (!v || !best || !found) {
		free(v);
		free(best);
		free(found);
		return;
	}
	memcpy(v, vaddrs, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (!m || v[i] != v[m - 1])
			v[m++] = v[i];
	/* the 4 KiB pages holding an address, as bits from v[0]'s page on
	 * (most symbols lie in one or two pages, none of them asked for) */
	lo_page = v[0] >> 12;
	npages = (v[m - 1] >> 12) - lo_page + 1;
	if (npages <= EXPECT_PAGE_BITS)
		for (size_t j = 0; j < m; j++)
			pages[((v[j] >> 12) - lo_page) / 64] |= 1ull << (((v[j] >> 12) - lo_page) % 64);
	/* one pass: each symbol is offered to the addresses it covers, in
	 * the order and by the rule of a scan (sym_consider()) */
	for (int k = 0; k < 2; k++) {
		const struct elf_symtab *t = &elf->symtabs[k];

		for (uint64_t i = 0; t->data && i < t->n; i++) {
			const uint8_t *p = t->data + i * sizeof(Elf64_Sym);
			uint64_t value = ld_u64(p + offsetof(Elf64_Sym, st_value));
			uint64_t size = ld_u64(p + offsetof(Elf64_Sym, st_size));
			size_t j;

			/* wholly before the first address or after the last
			 * (a size that wraps reaches every address) */
			if (value > v[m - 1] ||
			    (size && value + size > value && value + size <= v[0]) ||
			    (!size && value < v[0]))
				continue;
			if (npages <= EXPECT_PAGE_BITS && size < 65536 && value >= v[0]) {
				/* pages value .. value + size - 1, all inside the
				 * span: none holds an address, nothing to offer */
				uint64_t p0 = (value >> 12) - lo_page;
				uint64_t p1 = ((size ? value + size - 1 : value) >> 12) - lo_page;
				int any = 0;

				if (p1 >= npages)
					p1 = npages - 1;
				for (uint64_t q = p0; q <= p1 && !any; q++)
					any = !!(pages[q / 64] & (1ull << (q % 64)));
				if (!any)
					continue;
			}
			for (j = lower_bound_u64(v, m, value); j < m; j++) {
				int f = found[j];

				if (!sym_covers(value, size, v[j]))
					break;
				sym_consider(t, i, v[j], &best[j], &f);
				found[j] = (uint8_t)f;
			}
		}
	}
	for (size_t j = 0; j < m; j++)
		if (!found[j])
			best[j].name = NULL;
	free(found);
	free(elf->pre_vaddr);
	free(elf->pre_best);
	elf->pre_vaddr = v;
	elf->pre_best = best;
	elf->pre_n = m;
}

/* The answer found ahead for @vaddr: 1 (*out filled), 0 (none covers it),
 * -1 (not asked ahead). */
static int elf_pre_answer(const struct ustack_elf *elf, uint64_t vaddr, struct elf_sym_entry *out)
{
	size_t j;

	if (!elf->pre_n)
		return -1;
	j = lower_bound_u64(elf->pre_vaddr, elf->pre_n, vaddr);
	if (j == elf->pre_n || elf->pre_vaddr[j] != vaddr)
		return -1;
	if (!elf->pre_best[j].name)
		return 0;
	*out = elf->pre_best[j];
	return 1;
}

static int elf_symbolize_sized(struct ustack_elf *elf, uint64_t vaddr, struct elf_sym_entry *out)
{
	struct elf_sym_entry best;
	int pre;

	elf_symtabs_find(elf);
	pre = elf_pre_answer(elf, vaddr, out);
	if (pre >= 0)
		return pre ? 0 : -ENOENT;
	if (!elf->syms_built && elf->sym_scans < ELF_SYM_SCANS) {
		elf->sym_scans++;
		if (elf_scan_symbols(elf, vaddr, &best))
			return -ENOENT;
	} else {
		if (!elf->syms_built) {
			elf->syms_built = 1;
			elf_build_index(elf);
		}
		/* no index (out of memory, a table too large): scans */
		if (elf->idx_start ? elf_index_lookup(elf, vaddr, &best)
				   : elf_scan_symbols(elf, vaddr, &best))
			return -ENOENT;
	}
	*out = best;
	return 0;
}

void ustack_hex(const uint8_t *bytes, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * len] = 0;
}
