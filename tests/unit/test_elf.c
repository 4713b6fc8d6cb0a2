// SPDX-License-Identifier: MIT
/* src/elf against readelf and nm (oracles outside the project), plus
 * damaged files for the error paths. */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ustack/ustack.h>
#include "elf/elf_file.h"
#include "test.h"

static char self_path[4096];

/* Run a shell command and return its first output line (static buffer). */
static const char *sh1(const char *fmt, const char *arg)
{
	static char line[4096];
	char cmd[8192];
	FILE *p;

	snprintf(cmd, sizeof(cmd), fmt, arg);
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	if (!fgets(line, sizeof(line), p))
		line[0] = 0;
	pclose(p);
	line[strcspn(line, "\n")] = 0;
	return line;
}

static void test_build_id_matches_readelf(void)
{
	const char *files[] = { self_path, "/bin/sh", "/lib/x86_64-linux-gnu/libc.so.6" };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct ustack_elf *e = ustack_elf__open(files[i]);
		uint8_t id[64];
		char hex[129];
		const char *want;
		int n;

		CHECK(e);
		n = ustack_elf__build_id(e, id, sizeof(id));
		want = sh1("readelf -n %s 2>/dev/null | sed -n 's/.*Build ID: *//p'", files[i]);
		if (!want[0]) {
			CHECK_EQ(n, -ENOENT);
		} else {
			CHECK(n > 0 && n <= 64);
			ustack_hex(id, n, hex);
			CHECK_STR(hex, want);
		}
		ustack_elf__close(e);
	}
}

static void test_section_matches_readelf(void)
{
	struct ustack_elf *e = ustack_elf__open("/lib/x86_64-linux-gnu/libc.so.6");
	struct ustack_elf_section s;
	unsigned long long addr, off, size;
	const char *line;

	CHECK(e);
	CHECK_EQ(ustack_elf__section(e, ".eh_frame", &s), 0);
	/* readelf -SW: [Nr] Name Type Address Off Size ... */
	line = sh1("readelf -SW %s | awk '$2==\".eh_frame\"{print $4, $5, $6}'",
		   "/lib/x86_64-linux-gnu/libc.so.6");
	CHECK_EQ(sscanf(line, "%llx %llx %llx", &addr, &off, &size), 3);
	CHECK_EQ_U64(s.addr, addr);
	CHECK_EQ_U64(s.offset, off);
	CHECK_EQ_U64(s.size, size);
	CHECK(s.data != NULL);
	CHECK_EQ(ustack_elf__section(e, ".no-such-section", &s), -ENOENT);
	ustack_elf__close(e);
}

static void test_offset_vaddr_roundtrip(void)
{
	struct ustack_elf *e = ustack_elf__open("/lib/x86_64-linux-gnu/libc.so.6");
	struct ustack_elf_section s;
	uint64_t v, o;

	CHECK(e);
	CHECK_EQ(ustack_elf__section(e, ".text", &s), 0);
	CHECK_EQ(ustack_elf__offset_to_vaddr(e, s.offset + 0x10, &v), 0);
	CHECK_EQ_U64(v, s.addr + 0x10);
	CHECK_EQ(ustack_elf__vaddr_to_offset(e, v, &o), 0);
	CHECK_EQ_U64(o, s.offset + 0x10);
	CHECK_EQ(ustack_elf__offset_to_vaddr(e, ~0ull - 5, &v), -ENOENT);
	ustack_elf__close(e);
}

static void test_symbolize_matches_nm(void)
{
	const char *lib = "/lib/x86_64-linux-gnu/libc.so.6";
	const char *names[] = { "qsort", "malloc", "pthread_mutex_lock", "__libc_start_main" };
	struct ustack_elf *e = ustack_elf__open(lib);

	CHECK(e);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char cmd[256];
		unsigned long long addr, size;
		const char *name, *line;
		uint64_t start;

		snprintf(cmd, sizeof(cmd), "nm -D -S --defined-only %%s | awk '$4==\"%s\"||$4==\"%s@@GLIBC_2.2.5\"||$4~/^%s@@/{print $1, $2; exit}'",
			 names[i], names[i], names[i]);
		line = sh1(cmd, lib);
		CHECK_EQ(sscanf(line, "%llx %llx", &addr, &size), 2);
		/* an address inside the function symbolizes to a symbol at its start */
		CHECK_EQ(ustack_elf__symbolize(e, addr + size / 2, &name, &start), 0);
		CHECK_EQ_U64(start, addr);
	}
	ustack_elf__close(e);
}

/* One lookup by a scan of the symbol tables (a file opened afresh, whose
 * first lookups scan) and by the sorted index (a file that answered more
 * than the scans allow) must give the same symbol. */
static int sym_both(const char *path, struct ustack_elf **scan, unsigned int *nscan,
		    struct ustack_elf *index, uint64_t vaddr)
{
	const char *n1 = NULL, *n2 = NULL;
	uint64_t s1 = 0, s2 = 0;
	int r1, r2;

	if (*nscan == 1) { /* a first lookup is always a scan */
		ustack_elf__close(*scan);
		*scan = ustack_elf__open(path);
		*nscan = 0;
	}
	(*nscan)++;
	r1 = ustack_elf__symbolize(*scan, vaddr, &n1, &s1);
	r2 = ustack_elf__symbolize(index, vaddr, &n2, &s2);
	if (r1 != r2 || (!r1 && (s1 != s2 || strcmp(n1, n2)))) {
		printf("  %s 0x%llx: scan %d %s 0x%llx, index %d %s 0x%llx\n", path,
		       (unsigned long long)vaddr, r1, r1 ? "-" : n1, (unsigned long long)s1, r2,
		       r2 ? "-" : n2, (unsigned long long)s2);
		return 1;
	}
	return 0;
}

/* libc's separate debug file, when installed (a large .symtab), into
 * @dbg; "" when not */
static void libc_debug_file(const char *lib, char *dbg, size_t size)
{
	struct ustack_elf *e = ustack_elf__open(lib);
	uint8_t id[64];
	int n = e ? ustack_elf__build_id(e, id, sizeof(id)) : -1;

	dbg[0] = 0;
	if (n > 2) {
		char hex[129];

		ustack_hex(id, n, hex);
		snprintf(dbg, size, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
		if (access(dbg, R_OK))
			dbg[0] = 0;
	}
	ustack_elf__close(e);
}

static void test_symbolize_scan_matches_index(void)
{
	char dbg[4096];
	const char *lib = "/lib/x86_64-linux-gnu/libc.so.6";
	const char *files[] = { self_path, lib, dbg };

	libc_debug_file(lib, dbg, sizeof(dbg));
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct ustack_elf *scan, *index;
		struct ustack_elf_section text;
		unsigned int nscan = 0, bad = 0, found = 0;
		const char *name;
		uint64_t start;

		if (!files[i][0])
			continue;
		scan = ustack_elf__open(files[i]);
		index = ustack_elf__open(files[i]);
		CHECK(scan && index);
		if (!scan || !index)
			break;
		CHECK_EQ(ustack_elf__section(index, ".text", &text), 0);
		/* past the scans: the index is built */
		for (int k = 0; k < 40; k++)
			ustack_elf__symbolize(index, text.addr + k, &name, &start);
		for (uint64_t a = text.addr; a < text.addr + text.size; a += text.size / 1500 + 7) {
			bad += sym_both(files[i], &scan, &nscan, index, a);
			if (!ustack_elf__symbolize(index, a, &name, &start)) {
				found++;
				/* aliases and zero-sized symbols at a start */
				bad += sym_both(files[i], &scan, &nscan, index, start);
				bad += sym_both(files[i], &scan, &nscan, index, start - 1);
			}
		}
		CHECK(found > 100);
		CHECK_EQ(bad, 0);
		ustack_elf__close(scan);
		ustack_elf__close(index);
	}
}

/* Addresses announced ahead (ustack_elf__expect_addrs(), one pass over
 * the symbols) get the answers of the index, for the same three files:
 * 1500 addresses across .text, each found symbol's start and the byte
 * before it, and addresses not announced (answered the usual way). */
static void test_symbolize_expect_matches_index(void)
{
	char dbg[4096];
	const char *lib = "/lib/x86_64-linux-gnu/libc.so.6";
	const char *files[] = { self_path, lib, dbg };
	static uint64_t addrs[4096];

	libc_debug_file(lib, dbg, sizeof(dbg));
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct ustack_elf *batch, *index;
		struct ustack_elf_section text;
		unsigned int na = 0, bad = 0, found = 0;
		const char *name;
		uint64_t start;

		if (!files[i][0])
			continue;
		batch = ustack_elf__open(files[i]);
		index = ustack_elf__open(files[i]);
		CHECK(batch && index);
		CHECK_EQ(ustack_elf__section(index, ".text", &text), 0);
		for (int k = 0; k < 40; k++)
			ustack_elf__symbolize(index, text.addr + k, &name, &start);
		for (uint64_t a = text.addr; a < text.addr + text.size && na < 4093;
		     a += text.size / 1300 + 7) {
			addrs[na++] = a;
			if (!ustack_elf__symbolize_sized(index, a, &name, &start)) {
				addrs[na++] = start;
				addrs[na++] = start - 1;
			}
		}
		/* every address twice: duplicates are expected too */
		ustack_elf__expect_addrs(batch, addrs, na);
		ustack_elf__expect_addrs(batch, addrs, na);
		for (unsigned int k = 0; k < na + 64; k++) {
			/* the last 64: not announced */
			uint64_t a = k < na ? addrs[k] : text.addr + text.size / 2 + 3 * k;
			const char *n1 = NULL, *n2 = NULL;
			uint64_t s1 = 0, s2 = 0;
			int r1 = ustack_elf__symbolize_sized(batch, a, &n1, &s1);
			int r2 = ustack_elf__symbolize_sized(index, a, &n2, &s2);

			found += !r1;
			if (r1 != r2 || (!r1 && (strcmp(n1, n2) || s1 != s2))) {
				if (bad++ < 5)
					printf("  %s 0x%llx: ahead %d %s, index %d %s\n", files[i],
					       (unsigned long long)a, r1, r1 ? "-" : n1, r2, r2 ? "-" : n2);
			}
		}
		CHECK(found > 100);
		CHECK_EQ(bad, 0);
		/* few addresses, each in a later 4 KiB page than the start of
		 * its symbol: the pass must not skip a symbol because its first
		 * page holds no address (a fresh object: the lookups above that
		 * were not announced built the index of this one) */
		ustack_elf__close(batch);
		batch = ustack_elf__open(files[i]);
		CHECK(batch);
		{
			uint64_t sparse[8];
			unsigned int ns = 0;

			for (unsigned int k = 0; k < na && ns < 8; k += 3)
				if (!ustack_elf__symbolize_sized(index, addrs[k], &name, &start) &&
				    start >> 12 != addrs[k] >> 12 &&
				    (!ns || addrs[k] >> 12 > (sparse[ns - 1] >> 12) + 16))
					sparse[ns++] = addrs[k];
			ustack_elf__expect_addrs(batch, sparse, ns);
			for (unsigned int k = 0; k < ns; k++) {
				const char *n1 = NULL, *n2 = NULL;
				uint64_t s1 = 0, s2 = 0;
				int r1 = ustack_elf__symbolize_sized(batch, sparse[k], &n1, &s1);
				int r2 = ustack_elf__symbolize_sized(index, sparse[k], &n2, &s2);

				CHECK_EQ(r1, r2);
				CHECK(!r1 && !strcmp(n1, n2) && s1 == s2);
			}
			/* the own test binary is small: libc has such functions */
			if (i == 1)
				CHECK(ns >= 4);
		}
		ustack_elf__close(batch);
		ustack_elf__close(index);
	}
}

static void test_debuglink(void)
{
	struct ustack_elf *e = ustack_elf__open(self_path);
	const char *name;
	uint32_t crc;

	CHECK(e);
	/* our test binary has no debuglink */
	CHECK_EQ(ustack_elf__debuglink(e, &name, &crc), -ENOENT);
	ustack_elf__close(e);
}

static void test_damaged(void)
{
	size_t size;
	const uint8_t *orig;
	struct ustack_elf *e = ustack_elf__open(self_path), *d;
	uint8_t *copy;
	Elf64_Ehdr *eh;

	CHECK(e);
	orig = ustack_elf__data(e, &size);
	copy = malloc(size);
	CHECK(copy);
	eh = (Elf64_Ehdr *)copy;

	memcpy(copy, orig, size);
	copy[0] = 'X';
	errno = 0;
	d = ustack_elf__open_mem(copy, size, "bad-magic");
	CHECK(!d && errno == EBADMSG);

	memcpy(copy, orig, size);
	eh->e_phoff = size - 8;
	errno = 0;
	d = ustack_elf__open_mem(copy, size, "phdrs-out");
	CHECK(!d && errno == EBADMSG);

	memcpy(copy, orig, size);
	eh->e_shoff = ~0ull - 100;
	errno = 0;
	d = ustack_elf__open_mem(copy, size, "shdrs-wrap");
	CHECK(!d && errno == EBADMSG);

	/* truncated: section headers live at the end of the file */
	errno = 0;
	d = ustack_elf__open_mem(orig, size - 100, "truncated");
	CHECK(!d && errno == EBADMSG);

	/* a section whose contents lie outside the file */
	memcpy(copy, orig, size);
	for (unsigned int i = 1; i < eh->e_shnum; i++) {
		Elf64_Shdr *sh = (Elf64_Shdr *)(copy + eh->e_shoff) + i;

		if (sh->sh_type == SHT_PROGBITS)
			sh->sh_offset = size + 1;
	}
	d = ustack_elf__open_mem(copy, size, "sections-out");
	CHECK(d);
	{
		struct ustack_elf_section s;

		CHECK_EQ(ustack_elf__section(d, ".text", &s), -EBADMSG);
	}
	ustack_elf__close(d);
	free(copy);
	ustack_elf__close(e);

	errno = 0;
	CHECK(!ustack_elf__open("/nonexistent/file") && errno == ENOENT);
}

static int quiet(enum ustack_print_level l, const char *f, va_list ap) { return 0; }

/* Zero-size code symbols, as hand-written assembly leaves them (ld.so's
 * _start and _dl_start_user): each reaches up to the next symbol. The
 * addresses come from nm, the oracle. */
__asm__(".text\n"
	".globl ustack_test_zs_a\n"
	"ustack_test_zs_a: nop; nop; nop; nop\n"
	".globl ustack_test_zs_b\n"
	"ustack_test_zs_b: nop; nop; nop; nop; ret\n"
	".type ustack_test_zs_sized, @function\n"
	"ustack_test_zs_sized: ret\n"
	".size ustack_test_zs_sized, 1\n"
	"nop; nop; nop\n");

static uint64_t nm_addr(const char *sym)
{
	char cmd[512];
	const char *v;

	snprintf(cmd, sizeof(cmd), "nm %%s 2>/dev/null | awk '$3 == \"%s\" { print $1 }'", sym);
	v = sh1(cmd, self_path);
	return v && *v ? strtoull(v, NULL, 16) : 0;
}

/* A synthetic ELF for the symbol index: .symtab and .dynsym with their
 * string tables, the symbols of @syms. */
struct tsym {
	const char *name;
	uint64_t value, size;
	int type, shndx, dyn;
};

static void *make_symelf(const struct tsym *syms, size_t n, size_t *len)
{
	/* sections: 0 null, 1 .text, 2 .symtab, 3 .strtab, 4 .dynsym,
	 * 5 .dynstr, 6 .shstrtab */
	static const char shstr[] = "\0.text\0.symtab\0.strtab\0.dynsym\0.dynstr\0.shstrtab";
	size_t cap = 65536, off = sizeof(Elf64_Ehdr);
	uint8_t *b = calloc(1, cap);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
	Elf64_Shdr sh[7];
	Elf64_Sym *tab[2];
	char *str[2];
	size_t nsym[2] = { 1, 1 }, nstr[2] = { 1, 1 }, symoff[2], stroff[2];

	memset(sh, 0, sizeof(sh));
	for (int t = 0; t < 2; t++) {
		symoff[t] = off;
		tab[t] = (Elf64_Sym *)(b + off);
		off += (n + 1) * sizeof(Elf64_Sym);
		stroff[t] = off;
		str[t] = (char *)(b + off);
		off += 4096;
	}
	for (size_t i = 0; i < n; i++) {
		int t = syms[i].dyn;
		Elf64_Sym *y = &tab[t][nsym[t]++];

		y->st_name = (Elf64_Word)nstr[t];
		strcpy(str[t] + nstr[t], syms[i].name);
		nstr[t] += strlen(syms[i].name) + 1;
		y->st_info = ELF64_ST_INFO(STB_GLOBAL, syms[i].type);
		y->st_shndx = (Elf64_Section)syms[i].shndx;
		y->st_value = syms[i].value;
		y->st_size = syms[i].size;
	}
	memcpy(b + off, shstr, sizeof(shstr));
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_NOBITS,
			      .sh_flags = SHF_ALLOC | SHF_EXECINSTR, .sh_addr = 0x100000,
			      .sh_offset = off, .sh_size = 0x500000 };
	sh[2] = (Elf64_Shdr){ .sh_name = 7, .sh_type = SHT_SYMTAB, .sh_offset = symoff[0],
			      .sh_size = nsym[0] * sizeof(Elf64_Sym), .sh_link = 3,
			      .sh_entsize = sizeof(Elf64_Sym) };
	sh[3] = (Elf64_Shdr){ .sh_name = 15, .sh_type = SHT_STRTAB, .sh_offset = stroff[0],
			      .sh_size = nstr[0] };
	sh[4] = (Elf64_Shdr){ .sh_name = 23, .sh_type = SHT_DYNSYM, .sh_offset = symoff[1],
			      .sh_size = nsym[1] * sizeof(Elf64_Sym), .sh_link = 5,
			      .sh_entsize = sizeof(Elf64_Sym) };
	sh[5] = (Elf64_Shdr){ .sh_name = 31, .sh_type = SHT_STRTAB, .sh_offset = stroff[1],
			      .sh_size = nstr[1] };
	sh[6] = (Elf64_Shdr){ .sh_name = 39, .sh_type = SHT_STRTAB, .sh_offset = off,
			      .sh_size = sizeof(shstr) };
	off += sizeof(shstr);
	off = (off + 7) & ~(size_t)7;
	memcpy(b + off, sh, sizeof(sh));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_shoff = off;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 7;
	eh->e_shstrndx = 6;
	*len = off + sizeof(sh);
	return b;
}

/* The index (built after the first lookups) against the scans and against
 * the names expected: symbols longer than 64 KiB (listed apart), one that
 * wraps, blocks far apart in the same bucket, nested functions, aliases
 * in both tables, symbols the index must skip. */
static void test_symbol_index_shapes(void)
{
	const struct tsym syms[] = {
		{ "big", 0x100000, 0x40000, STT_FUNC, 1, 0 },    /* 256 KiB: long */
		{ "inner", 0x110000, 0x100, STT_FUNC, 1, 0 },    /* inside big */
		{ "inner", 0x110000, 0x100, STT_FUNC, 1, 1 },    /* its .dynsym twin */
		{ "span64", 0x180000, 0x10000, STT_FUNC, 1, 0 }, /* 64 blocks: listed per block */
		{ "span65", 0x1a0000, 0x10001, STT_FUNC, 1, 0 }, /* 65 blocks: long */
		{ "zz_alias", 0x200000, 0x80, STT_FUNC, 1, 0 },
		{ "a_alias", 0x200000, 0x80, STT_FUNC, 1, 1 },
		{ "far", 0x210000, 0x40, STT_FUNC, 1, 0 },      /* 64 KiB on: same bucket */
		{ "edge", 0x220000, 0x401, STT_FUNC, 1, 0 },    /* its last byte in a block of its own */
		{ "farther", 0x4200000, 0x40, STT_GNU_IFUNC, 1, 1 },
		{ "zs", 0x300000, 0, STT_FUNC, 1, 0 },           /* no size: its start only */
		{ "undef", 0x200010, 0x10, STT_FUNC, 0, 0 },     /* not defined: skipped */
		{ "object", 0x200020, 0x10, STT_OBJECT, 1, 0 },  /* not code: skipped */
		{ "wrap", 0xfffffffffffff000ull, 0x2000, STT_FUNC, 1, 0 },
	};
	const struct {
		uint64_t addr;
		const char *name; /* NULL: none */
	} want[] = {
		{ 0x100000, "big" },     { 0x10ffff, "big" },   { 0x110000, "inner" },
		{ 0x1100ff, "inner" },   { 0x110100, "big" },   { 0x13ffff, "big" },
		{ 0x140000, NULL },      { 0x180000, "span64" }, { 0x18ffff, "span64" },
		{ 0x190000, NULL },      { 0x1a0000, "span65" }, { 0x1b0000, "span65" },
		{ 0x1b0001, NULL },      { 0x200000, "a_alias" }, { 0x200015, "a_alias" },
		{ 0x200025, "a_alias" }, { 0x200080, NULL },    { 0x210000, "far" },
		{ 0x21003f, "far" },     { 0x210040, NULL },    { 0x220400, "edge" },
		{ 0x220401, NULL },    { 0x4200010, "farther" },
		{ 0x300000, "zs" },      { 0x300001, NULL },    { 0xfffffffffffff000ull, "wrap" },
		{ 0xffffffffffffffffull, "wrap" }, { 0x10, NULL },
	};
	size_t len;
	void *img = make_symelf(syms, sizeof(syms) / sizeof(syms[0]), &len);
	struct ustack_elf *index = ustack_elf__open_mem(img, len, "symelf");
	const char *name;
	uint64_t start;

	CHECK(index);
	if (!index) {
		free(img);
		return;
	}
	/* past the scans: the index is built */
	for (int k = 0; k < 8; k++)
		ustack_elf__symbolize_sized(index, 0x100000 + k, &name, &start);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct ustack_elf *scan = ustack_elf__open_mem(img, len, "symelf");
		const char *n1 = NULL, *n2 = NULL;
		uint64_t s1 = 0, s2 = 0;
		int r1 = scan ? ustack_elf__symbolize_sized(scan, want[i].addr, &n1, &s1) : -1;
		int r2 = ustack_elf__symbolize_sized(index, want[i].addr, &n2, &s2);

		if (want[i].name) {
			CHECK_EQ(r1, 0);
			CHECK_EQ(r2, 0);
			CHECK(n1 && !strcmp(n1, want[i].name));
			CHECK(n2 && !strcmp(n2, want[i].name));
			CHECK_EQ_U64(s1, s2);
		} else {
			CHECK(r1 != 0);
			CHECK(r2 != 0);
		}
		if ((want[i].name != NULL) != !r2 || (!r2 && strcmp(n2, want[i].name)))
			printf("  0x%llx: want %s, index %s\n", (unsigned long long)want[i].addr,
			       want[i].name ? want[i].name : "-", r2 ? "-" : n2);
		ustack_elf__close(scan);
	}
	ustack_elf__close(index);
	/* the same answers when announced ahead (one pass), all at once and
	 * one at a time (each alone in its span of pages) */
	for (int alone = 0; alone < 2; alone++) {
		struct ustack_elf *batch = ustack_elf__open_mem(img, len, "symelf");
		uint64_t addrs[sizeof(want) / sizeof(want[0])];
		size_t n = sizeof(want) / sizeof(want[0]);

		CHECK(batch);
		for (size_t i = 0; i < n; i++)
			addrs[i] = want[i].addr;
		if (!alone)
			ustack_elf__expect_addrs(batch, addrs, n);
		for (size_t i = 0; i < n; i++) {
			const char *nm = NULL;
			uint64_t st = 0;
			int r;

			if (alone)
				ustack_elf__expect_addrs(batch, &addrs[i], 1);
			r = ustack_elf__symbolize_sized(batch, want[i].addr, &nm, &st);
			if (want[i].name)
				CHECK(!r && !strcmp(nm, want[i].name));
			else
				CHECK(r != 0);
		}
		ustack_elf__close(batch);
	}
	free(img);
}

static void test_symbolize_zero_size(void)
{
	struct ustack_elf *e = ustack_elf__open(self_path);
	uint64_t a = nm_addr("ustack_test_zs_a"), b = nm_addr("ustack_test_zs_b");
	uint64_t z = nm_addr("ustack_test_zs_sized"), start;
	const char *name;

	CHECK(e);
	CHECK(a && b && z);
	if (!e || !a || !b || !z) {
		ustack_elf__close(e);
		return;
	}
	CHECK_EQ(b, a + 4);
	for (uint64_t v = a; v < b; v++) {
		CHECK_EQ(ustack_elf__symbolize(e, v, &name, &start), 0);
		CHECK(!strcmp(name, "ustack_test_zs_a"));
		CHECK_EQ_U64(start, a);
	}
	for (uint64_t v = b; v < z; v++) {
		CHECK_EQ(ustack_elf__symbolize(e, v, &name, &start), 0);
		CHECK(!strcmp(name, "ustack_test_zs_b"));
	}
	CHECK_EQ(ustack_elf__symbolize(e, z, &name, &start), 0);
	CHECK(!strcmp(name, "ustack_test_zs_sized"));
	/* past a sized symbol's end: no zero-size symbol reaches over it */
	CHECK(ustack_elf__symbolize(e, z + 2, &name, &start) != 0 ||
	      strcmp(name, "ustack_test_zs_b") != 0);
	ustack_elf__close(e);
}

int main(void)
{
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);

	if (n > 0)
		self_path[n] = 0;
	ustack_set_print(quiet);
	RUN(test_build_id_matches_readelf);
	RUN(test_section_matches_readelf);
	RUN(test_offset_vaddr_roundtrip);
	RUN(test_symbolize_matches_nm);
	RUN(test_symbolize_scan_matches_index);
	RUN(test_symbolize_expect_matches_index);
	RUN(test_symbol_index_shapes);
	RUN(test_symbolize_zero_size);
	RUN(test_debuglink);
	RUN(test_damaged);
	TEST_EXIT();
}
