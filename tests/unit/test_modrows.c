// SPDX-License-Identifier: MIT
/*
 * ustack_modtab__rows() (src/unwind/unwind_rows.c): the exported spans
 * must answer exactly as ustack_modtab__find_row() does. The oracle is
 * find_row itself, asked at every address of every executable section
 * (SHF_EXECINSTR: .init, .plt, .plt.sec, .text, .fini, ...) of each file,
 * with the CFI interpreted and compiled (a fresh cache each time), after
 * the export (which may drop a corrupt .sframe for find_row too).
 * Files: the system libc, the SFrame fixtures (v1/v2/v3) and their
 * damaged copies, a CFI-only program and static executables built here
 * (PLT rule, .eh_frame without a search table), copies with damaged
 * .eh_frame bytes, hand-made oddities (unsorted search table, v3
 * functions without FREs), and random byte changes in the unwind sections
 * of the small fixtures. Also: a crafted 4 GB PCMASK function gives
 * -E2BIG quickly instead of running away.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ustack/ustack.h>
#include "elf/elf_file.h"
#include "unwind/modules.h"
#include "test.h"

static const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
static char tmpdir[] = "/tmp/ustack-modrows-XXXXXX";
static int have_tmpdir;
static unsigned int sframe_warnings, cfi_warnings;

struct result {
	size_t spans;
	unsigned long pcs, bad, none, outermost, by_method[8];
	double export_ms;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int count_warnings(enum ustack_print_level l, const char *f, va_list ap)
{
	char buf[512];

	vsnprintf(buf, sizeof(buf), f, ap);
	if (strstr(buf, ".sframe"))
		sframe_warnings++;
	if (strstr(buf, "eh_frame") || strstr(buf, "debug_frame"))
		cfi_warnings++;
	if (getenv("MODROWS_VERBOSE"))
		fputs(buf, stdout);
	return 0;
}

static const char *top(void)
{
	const char *t = getenv("TOP");

	return t ? t : ".";
}

static const char *cc(void)
{
	const char *c = getenv("CC");

	return c && *c ? c : "cc";
}

static int run(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* [start, end) of every executable section with bytes, from the section
 * headers. */
static int exec_sections(struct ustack_elf *elf, uint64_t (*r)[2], int max)
{
	size_t size;
	const uint8_t *d = ustack_elf__data(elf, &size);
	Elf64_Ehdr eh;
	int n = 0;

	if (size < sizeof(eh))
		return -1;
	memcpy(&eh, d, sizeof(eh));
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
	    eh.e_shnum > (size - eh.e_shoff) / sizeof(Elf64_Shdr))
		return -1;
	for (unsigned int i = 0; i < eh.e_shnum && n < max; i++) {
		Elf64_Shdr sh;

		memcpy(&sh, d + eh.e_shoff + (uint64_t)i * sizeof(sh), sizeof(sh));
		if (!(sh.sh_flags & SHF_EXECINSTR) || !sh.sh_size || sh.sh_type == SHT_NOBITS)
			continue;
		r[n][0] = sh.sh_addr;
		r[n][1] = sh.sh_addr + sh.sh_size;
		n++;
	}
	return n;
}

static const struct ustack_row_span *span_at(const struct ustack_row_span *s, size_t n,
					     uint64_t pc)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* first span starting after pc */
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].row.start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || pc >= s[lo - 1].row.end)
		return NULL;
	return &s[lo - 1];
}

static int same_rules(const struct ustack_row *a, const struct ustack_row *b)
{
	return a->cfa_reg == b->cfa_reg && a->cfa_off == b->cfa_off && a->ra_rule == b->ra_rule &&
	       a->ra_off == b->ra_off && a->fp_rule == b->fp_rule && a->fp_off == b->fp_off &&
	       a->flags == b->flags;
}

static void print_row(const char *who, int ret, unsigned int method, const struct ustack_row *r)
{
	printf("#   %s: ret %d method %u [0x%llx, 0x%llx) cfa %u%+d ra %u%+d fp %u%+d flags 0x%x\n",
	       who, ret, method, (unsigned long long)r->start, (unsigned long long)r->end,
	       r->cfa_reg, r->cfa_off, r->ra_rule, r->ra_off, r->fp_rule, r->fp_off, r->flags);
}

/*
 * Export @path from a fresh cache made with @flags, check the spans' shape
 * and compare them with find_row at every executable address.
 * Any difference fails the test, after printing both answers.
 */
static void check_file(const char *path, unsigned int flags, struct result *res)
{
	struct ustack_modcache *mc = ustack_modcache__new(4, flags);
	struct ustack_row_span *spans = NULL;
	struct ustack_modtab *m;
	uint64_t secs[64][2];
	size_t nr = 0;
	double t0;
	int nsec, err;

	memset(res, 0, sizeof(*res));
	CHECK(mc);
	m = ustack_modcache__get(mc, path);
	if (!m)
		printf("# %s: %s\n", path, strerror(errno));
	CHECK(m);
	t0 = now_ms();
	err = ustack_modtab__rows(m, &spans, &nr);
	res->export_ms = now_ms() - t0;
	CHECK_EQ(err, 0);
	CHECK(nr == 0 || spans);
	res->spans = nr;
	for (size_t i = 0; i < nr; i++) {
		const struct ustack_row_span *s = &spans[i];

		CHECK(s->row.start < s->row.end);
		CHECK(i == 0 || spans[i - 1].row.end <= s->row.start);
		CHECK(s->method == USTACK_METHOD_SFRAME || s->method == USTACK_METHOD_CFI ||
		      s->method == USTACK_METHOD_PLT);
		CHECK(s->bad == 0 || s->bad == 1);
	}
	nsec = exec_sections(ustack_modtab__elf(m), secs, 64);
	CHECK(nsec > 0);
	for (int k = 0; k < nsec; k++) {
		for (uint64_t pc = secs[k][0]; pc < secs[k][1]; pc++) {
			const struct ustack_row_span *s = span_at(spans, nr, pc);
			struct ustack_row row;
			unsigned int method = 0;
			int ret = ustack_modtab__find_row(m, pc, &row, &method);
			int want = !s ? -ENOENT : s->bad ? -EBADMSG : 0;

			res->pcs++;
			if (ret != want ||
			    (!ret && (method != s->method || !same_rules(&row, &s->row)))) {
				printf("# %s (flags %u): pc 0x%llx differs\n", path, flags,
				       (unsigned long long)pc);
				print_row("find_row", ret, method, &row);
				if (s)
					print_row(s->bad ? "span (bad)" : "span", want, s->method,
						  &s->row);
				else
					printf("#   no span\n");
				free(spans);
				ustack_modtab__put(m);
				ustack_modcache__free(mc);
				CHECK(0);
			}
			if (ret == -ENOENT)
				res->none++;
			else if (ret == -EBADMSG)
				res->bad++;
			else
				res->by_method[method & 7]++;
			if (!ret && (row.flags & USTACK_ROW_OUTERMOST))
				res->outermost++;
		}
	}
	free(spans);
	ustack_modtab__put(m);
	ustack_modcache__free(mc);
}

/* Both ways of answering from CFI; @res[0] interpreted, @res[1] compiled. */
static void check_both(const char *path, struct result res[2])
{
	check_file(path, 0, &res[0]);
	check_file(path, USTACK_MODCACHE_COMPILE_CFI, &res[1]);
}

static void summary(const char *path, const struct result *r)
{
	printf("# %s: %zu spans, %lu pcs: %lu sframe, %lu cfi, %lu plt, %lu bad, %lu none\n",
	       path, r->spans, r->pcs, r->by_method[USTACK_METHOD_SFRAME],
	       r->by_method[USTACK_METHOD_CFI], r->by_method[USTACK_METHOD_PLT], r->bad, r->none);
}

static void test_libc(void)
{
	struct result r[2];

	if (access(libc, R_OK))
		SKIP("%s not readable", libc);
	check_both(libc, r);
	for (int i = 0; i < 2; i++) {
		printf("# libc export (%s CFI): %.2f ms, %zu spans (sanitizer build)\n",
		       i ? "compiled" : "interpreted", r[i].export_ms, r[i].spans);
		summary(libc, &r[i]);
		CHECK(r[i].spans > 1000);
		/* almost all of libc's code has CFI */
		CHECK(r[i].by_method[USTACK_METHOD_CFI] > r[i].pcs * 9 / 10);
		CHECK_EQ(r[i].bad, 0);
	}
	CHECK_EQ(r[0].spans, r[1].spans);
}

/* The committed SFrame fixtures: SFrame wins over .eh_frame, PCMASK PLT
 * functions, v3 outermost/flexible rows, DRAP fallbacks. */
static void test_sframe_fixtures(void)
{
	static const char *const vers[] = { "v1", "v2", "v3" };
	static const char *const files[] = { "shapes.so", "big.so", "drap.so", "exe" };
	char path[4096];

	for (int v = 0; v < 3; v++) {
		for (int f = 0; f < 4; f++) {
			struct result r[2];

			snprintf(path, sizeof(path), "%s/tests/data/sframe/%s/%s", top(), vers[v],
				 files[f]);
			sframe_warnings = 0;
			check_both(path, r);
			summary(path, &r[0]);
			CHECK_EQ(sframe_warnings, 0);
			for (int i = 0; i < 2; i++) {
				CHECK(r[i].by_method[USTACK_METHOD_SFRAME] > 0);
				CHECK_EQ(r[i].bad, 0);
			}
		}
	}
}

/* Damaged .sframe (scripts/make-sframe-damaged.py): either refused when
 * the file is opened, or dropped by the export, with one warning; CFI
 * answers everywhere instead. */
static void test_sframe_damaged(void)
{
	char dir[4096], path[8192];
	struct dirent *de;
	int files = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/tests/data/sframe/damaged", top());
	d = opendir(dir);
	CHECK(d);
	while ((de = readdir(d))) {
		struct result r[2];
		size_t len = strlen(de->d_name);

		if (len < 4 || strcmp(de->d_name + len - 3, ".so"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		for (int i = 0; i < 2; i++) {
			sframe_warnings = 0;
			check_file(path, i ? USTACK_MODCACHE_COMPILE_CFI : 0, &r[i]);
			/* one at open (header) or one at export, never more */
			CHECK_EQ(sframe_warnings, 1);
			CHECK_EQ(r[i].by_method[USTACK_METHOD_SFRAME], 0);
			CHECK(r[i].by_method[USTACK_METHOD_CFI] > 0);
		}
		files++;
	}
	closedir(d);
	printf("# %d damaged files\n", files);
	CHECK(files >= 27);
}

static int make_tmpdir(void)
{
	if (!have_tmpdir)
		have_tmpdir = mkdtemp(tmpdir) != NULL;
	return have_tmpdir;
}

/* A program without SFrame (.eh_frame with its search table, .plt and,
 * with IBT, .plt.sec), and a system binary. */
static void test_cfi_only(void)
{
	char out[4200], path[4200];
	struct result r[2];

	CHECK(make_tmpdir());
	snprintf(out, sizeof(out), "%s/cfi_prog", tmpdir);
	snprintf(path, sizeof(path), "%s/tests/data/cfi/cfi_prog.c", top());
	if (run("%s -O2 -fcf-protection=full -Wl,-z,ibtplt -o %s %s 2>/dev/null", cc(), out, path) &&
	    run("%s -O2 -o %s %s", cc(), out, path))
		SKIP("cannot build cfi_prog.c with %s", cc());
	check_both(out, r);
	summary(out, &r[0]);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(r[i].by_method[USTACK_METHOD_SFRAME], 0);
		CHECK(r[i].by_method[USTACK_METHOD_CFI] > 0);
		CHECK_EQ(r[i].bad, 0);
	}
	if (!access("/bin/true", R_OK)) {
		check_both("/bin/true", r);
		summary("/bin/true", &r[0]);
	}
}

static const char static_src[] =
	"#include <stdio.h>\n#include <string.h>\n"
	"int main(int c, char **v) { return (int)strlen(v[0]) + printf(\"%d\", c); }\n";

/* Static executables: .eh_frame without .eh_frame_hdr (the lookup walks
 * the section), IFUNC PLT stubs without CFI (the PLT rule), named .plt or
 * .iplt; with SFrame for main only. */
static void test_static(void)
{
	char src[4200], exe[4200], iplt[4200], sf[4200];
	struct result r[2];
	FILE *f;

	CHECK(make_tmpdir());
	snprintf(src, sizeof(src), "%s/static.c", tmpdir);
	snprintf(exe, sizeof(exe), "%s/static", tmpdir);
	snprintf(iplt, sizeof(iplt), "%s/static-iplt", tmpdir);
	snprintf(sf, sizeof(sf), "%s/static-sframe", tmpdir);
	f = fopen(src, "w");
	CHECK(f);
	fputs(static_src, f);
	fclose(f);
	if (run("%s -O2 -static -o %s %s 2>/dev/null", cc(), exe, src))
		SKIP("%s -static failed (no static libc?)", cc());
	check_both(exe, r);
	summary(exe, &r[0]);
	for (int i = 0; i < 2; i++) {
		CHECK(r[i].by_method[USTACK_METHOD_PLT] > 0);
		CHECK(r[i].by_method[USTACK_METHOD_CFI] > 0);
	}
	/* the walk costs find_row ~20 s per file with sanitizers: these two
	 * differ from the one above in what both ways of answering from CFI
	 * share, so the compiled one is enough */
	if (!run("objcopy --rename-section .plt=.iplt %s %s 2>/dev/null", exe, iplt)) {
		check_file(iplt, USTACK_MODCACHE_COMPILE_CFI, &r[0]);
		summary(iplt, &r[0]);
		CHECK(r[0].by_method[USTACK_METHOD_PLT] > 0);
	}
	if (!run("%s -O2 -static -Wa,--gsframe -o %s %s 2>/dev/null", cc(), sf, src)) {
		check_file(sf, USTACK_MODCACHE_COMPILE_CFI, &r[0]);
		summary(sf, &r[0]);
		CHECK(r[0].by_method[USTACK_METHOD_SFRAME] > 0);
		CHECK(r[0].by_method[USTACK_METHOD_PLT] > 0);
	}
}

/* ---- damaged copies ---- */

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static int spit(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(buf, 1, len, f) == len;
	return fclose(f) || !ok ? -1 : 0;
}

/* File offset and size of section @name of @path. */
static int section_at(const char *path, const char *name, uint64_t *off, uint64_t *size)
{
	struct ustack_elf *elf = ustack_elf__open(path);
	struct ustack_elf_section s;
	int err;

	if (!elf)
		return -errno;
	err = ustack_elf__section(elf, name, &s);
	if (!err) {
		*off = s.offset;
		*size = s.size;
	}
	ustack_elf__close(elf);
	return err;
}

/* Offsets (in the section) of the FDEs of .eh_frame bytes @p. */
static size_t list_fdes(const uint8_t *p, uint64_t size, uint64_t *offs, size_t max)
{
	uint64_t off = 0;
	size_t n = 0;

	while (off + 8 <= size && n < max) {
		uint32_t len, id;

		memcpy(&len, p + off, 4);
		if (!len || len == 0xffffffffu || len > size - off - 4)
			break;
		memcpy(&id, p + off + 4, 4);
		if (id)
			offs[n++] = off;
		off += 4 + (uint64_t)len;
	}
	return n;
}

/*
 * .eh_frame damaged three ways in copies of a CFI-only file: an FDE's
 * instructions from their middle on (rows before the damage stay good,
 * after it bad; the compiled table drops the FDE), an FDE's CIE pointer
 * (the search finds an entry that is no FDE: bad up to the next entry),
 * and, for the walk without a search table, a CIE's length (the walk
 * breaks off: bad wherever no FDE before it answers).
 */
static void test_eh_frame_damaged(void)
{
	char base[4200], path[4200], src[4200];
	uint64_t eh_off, eh_size, fdes[4096];
	struct result r[2];
	uint8_t *img;
	size_t len, nf;

	CHECK(make_tmpdir());
	/* a fixture without its .sframe: every row comes from .eh_frame */
	snprintf(src, sizeof(src), "%s/tests/data/sframe/v2/big.so", top());
	snprintf(base, sizeof(base), "%s/nosframe.so", tmpdir);
	if (run("objcopy --remove-section .sframe %s %s 2>/dev/null", src, base))
		SKIP("objcopy failed");
	CHECK_EQ(section_at(base, ".eh_frame", &eh_off, &eh_size), 0);
	img = slurp(base, &len);
	CHECK(img && eh_off + eh_size <= len);
	nf = list_fdes(img + eh_off, eh_size, fdes, 4096);
	CHECK(nf >= 2);

	/* 1. instructions of the FDE with the most of them, from the middle */
	{
		uint64_t best = 0, best_len = 0;
		uint8_t *copy = malloc(len);

		CHECK(copy);
		for (size_t i = 0; i < nf; i++) {
			uint32_t l;

			memcpy(&l, img + eh_off + fdes[i], 4);
			if (l > best_len)
				best_len = l, best = fdes[i];
		}
		memcpy(copy, img, len);
		/* body: CIE pointer, pc_begin, pc_range (sdata4 each), aug
		 * length 0, then instructions; 0x20 is no DW_CFA opcode */
		for (uint64_t k = 4 + 13 + (best_len - 13) / 2; k < 4 + best_len; k++)
			copy[eh_off + best + k] = 0x20;
		snprintf(path, sizeof(path), "%s/bad-insns.so", tmpdir);
		CHECK_EQ(spit(path, copy, len), 0);
		free(copy);
		cfi_warnings = 0;
		check_both(path, r);
		summary(path, &r[0]);
		summary(path, &r[1]);
		CHECK(r[0].bad > 0);              /* interpreted: -EBADMSG after the damage */
		CHECK_EQ(r[1].bad, 0);            /* compiled: the FDE left out */
		CHECK(r[1].none > r[0].none);
		CHECK(cfi_warnings >= 2);         /* one per cache at least */
	}
	/* 2. the CIE pointer of the second FDE */
	{
		uint8_t *copy = malloc(len);
		uint32_t bogus = 0x7fffff00;

		CHECK(copy);
		memcpy(copy, img, len);
		memcpy(copy + eh_off + fdes[1] + 4, &bogus, 4);
		snprintf(path, sizeof(path), "%s/bad-cie-ptr.so", tmpdir);
		CHECK_EQ(spit(path, copy, len), 0);
		free(copy);
		check_both(path, r);
		summary(path, &r[0]);
		CHECK(r[0].bad > 0);
		CHECK_EQ(r[1].bad, 0);
	}
	free(img);

	/* 3. the walk without a search table (a static executable) */
	{
		char exe[4200], csrc[4200];
		uint64_t off, size, cie = UINT64_MAX, o = 0;
		uint8_t *copy;
		FILE *f;

		snprintf(csrc, sizeof(csrc), "%s/static.c", tmpdir);
		snprintf(exe, sizeof(exe), "%s/static-walk", tmpdir);
		f = fopen(csrc, "w");
		CHECK(f);
		fputs(static_src, f);
		fclose(f);
		if (run("%s -O2 -static -o %s %s 2>/dev/null", cc(), exe, csrc))
			SKIP("%s -static failed (no static libc?)", cc());
		CHECK(section_at(exe, ".eh_frame_hdr", &off, &size) == -ENOENT);
		CHECK_EQ(section_at(exe, ".eh_frame", &off, &size), 0);
		copy = slurp(exe, &len);
		CHECK(copy && off + size <= len);
		/* the third CIE, about a third into the section */
		for (int seen = 0; o + 8 <= size;) {
			uint32_t l, id;

			memcpy(&l, copy + off + o, 4);
			memcpy(&id, copy + off + o + 4, 4);
			if (!l)
				break;
			if (!id && ++seen == 3 && o > 0) {
				cie = o;
				break;
			}
			o += 4 + (uint64_t)l;
		}
		CHECK(cie != UINT64_MAX);
		memset(copy + off + cie, 0xff, 4); /* 64-bit length escape, then garbage */
		memset(copy + off + cie + 4, 0xff, 8);
		snprintf(path, sizeof(path), "%s/static-bad-cie", tmpdir);
		CHECK_EQ(spit(path, copy, len), 0);
		free(copy);
		check_both(path, r);
		summary(path, &r[0]);
		summary(path, &r[1]);
		CHECK(r[0].bad > 0);
		CHECK(r[0].by_method[USTACK_METHOD_CFI] > 0);
	}
}

/* A copy of fixture @name with @edit applied to section @sec's bytes. */
static void edited_copy(const char *name, const char *strip, const char *sec,
			void (*edit)(uint8_t *p, uint64_t size), char *out, size_t out_len)
{
	char src[4200];
	uint64_t off, size;
	uint8_t *img;
	size_t len;

	snprintf(src, sizeof(src), "%s/tests/data/sframe/%s", top(), name);
	snprintf(out, out_len, "%s/edited-%s", tmpdir, sec + 1);
	if (strip) {
		if (run("objcopy --remove-section %s %s %s 2>/dev/null", strip, src, out))
			SKIP("objcopy failed");
		img = slurp(out, &len);
	} else {
		img = slurp(src, &len);
	}
	CHECK(img);
	CHECK_EQ(section_at(strip ? out : src, sec, &off, &size), 0);
	CHECK(off + size <= len);
	edit(img + off, size);
	CHECK_EQ(spit(out, img, len), 0);
	free(img);
}

/* .eh_frame_hdr with the standard encodings: 12 bytes, then (loc, fde)
 * pairs of datarel sdata4. */
static uint32_t hdr_count(const uint8_t *p, uint64_t size)
{
	uint32_t n;

	if (size < 12 || p[0] != 1 || p[2] != 0x03 || p[3] != 0x3b)
		return 0;
	memcpy(&n, p + 8, 4);
	return n <= (size - 12) / 8 ? n : 0;
}

static int edit_ok;

static void swap_hdr_entries(uint8_t *p, uint64_t size)
{
	uint8_t t[8];

	edit_ok = hdr_count(p, size) >= 4;
	if (!edit_ok)
		return;
	memcpy(t, p + 12 + 8 * 1, 8);
	memcpy(p + 12 + 8 * 1, p + 12 + 8 * 2, 8);
	memcpy(p + 12 + 8 * 2, t, 8);
}

static void dup_hdr_location(uint8_t *p, uint64_t size)
{
	edit_ok = hdr_count(p, size) >= 4;
	if (edit_ok) /* entry 2 claims entry 1's location */
		memcpy(p + 12 + 8 * 2, p + 12 + 8 * 1, 4);
}

/* v3: FDE 2 loses its FREs (the header count too, so the section stays
 * valid): a function without rows, an outermost frame. */
static void v3_no_fres(uint8_t *p, uint64_t size)
{
	uint32_t fdeoff, freoff, nfres, fre_off;
	uint16_t n;
	uint64_t hdr, a;

	edit_ok = 0;
	if (size < 28 || p[2] != 3)
		return;
	hdr = 28 + (uint64_t)p[7];
	memcpy(&nfres, p + 12, 4);
	memcpy(&fdeoff, p + 20, 4);
	memcpy(&freoff, p + 24, 4);
	if (hdr + fdeoff + 3 * 16 > size)
		return;
	memcpy(&fre_off, p + hdr + fdeoff + 2 * 16 + 12, 4);
	a = hdr + freoff + fre_off;
	if (a + 2 > size)
		return;
	memcpy(&n, p + a, 2);
	nfres -= n;
	memset(p + a, 0, 2);
	memcpy(p + 12, &nfres, 4);
	edit_ok = n > 0;
}

/* v2 with sorted, absolute starts: the last FDE becomes a PCMASK function
 * of 4 GB reusing FDE 1's two FREs, made identical (so that what the
 * export collects merges into one span and only the work bound stops it). */
static void v2_huge_pcmask(uint8_t *p, uint64_t size)
{
	uint32_t nf, nfr, fdeoff, freoff, f1[5], sz = 0xfffff000u, two = 2, old;
	uint64_t fdes, fres, last;

	edit_ok = 0;
	if (size < 28 || p[2] != 2 || p[3] != 1 || p[7])
		return;
	memcpy(&nf, p + 8, 4);
	memcpy(&nfr, p + 12, 4);
	memcpy(&fdeoff, p + 20, 4);
	memcpy(&freoff, p + 24, 4);
	fdes = 28 + (uint64_t)fdeoff;
	fres = 28 + (uint64_t)freoff;
	if (nf < 3 || fdes + 20ull * nf > size)
		return;
	memcpy(f1, p + fdes + 20, 20);
	last = fdes + 20ull * (nf - 1);
	/* FDE 1: PCMASK, two FREs of 1-byte starts and one 1-byte word */
	if (f1[3] != 2 || (p[fdes + 20 + 16] & 0x1f) != 0x10 || fres + f1[2] + 6 > size ||
	    p[fres + f1[2] + 1] != 0x03 || p[fres + f1[2] + 4] != 0x03)
		return;
	p[fres + f1[2] + 5] = p[fres + f1[2] + 2];
	memcpy(&old, p + last + 12, 4);
	nfr = nfr - old + 2;
	memcpy(p + last + 4, &sz, 4);
	memcpy(p + last + 8, &f1[2], 4);
	memcpy(p + last + 12, &two, 4);
	p[last + 16] = p[fdes + 20 + 16];
	p[last + 17] = p[fdes + 20 + 17];
	memcpy(p + 12, &nfr, 4);
	edit_ok = 1;
}

/* Repetition cannot make the export run away: -E2BIG, and find_row still
 * answers there. */
static void test_work_bound(void)
{
	struct ustack_modcache *mc;
	struct ustack_row_span *spans;
	struct ustack_modtab *m;
	struct ustack_row row;
	unsigned int method = 0;
	char path[4200];
	size_t nr;
	double t0;

	CHECK(make_tmpdir());
	edited_copy("v2/shapes.so", NULL, ".sframe", v2_huge_pcmask, path, sizeof(path));
	CHECK(edit_ok);
	mc = ustack_modcache__new(4, 0);
	CHECK(mc);
	m = ustack_modcache__get(mc, path);
	CHECK(m);
	CHECK_EQ(ustack_modtab__find_row(m, 0x10000000, &row, &method), 0);
	CHECK_EQ(method, USTACK_METHOD_SFRAME);
	t0 = now_ms();
	CHECK_EQ(ustack_modtab__rows(m, &spans, &nr), -E2BIG);
	printf("# -E2BIG after %.0f ms\n", now_ms() - t0);
	CHECK(!spans && !nr);
	ustack_modtab__put(m);
	ustack_modcache__free(mc);
}

/*
 * Hand-made oddities no toolchain emits, where only one way of walking a
 * table gives find_row's answers: an unsorted search table (its binary
 * search goes astray), two entries at one location (the last wins and
 * names an FDE that does not start there), a v3 function without FREs.
 */
static void test_crafted(void)
{
	char path[4200];
	struct result r[2];

	CHECK(make_tmpdir());
	edited_copy("v2/shapes.so", ".sframe", ".eh_frame_hdr", swap_hdr_entries, path,
		    sizeof(path));
	CHECK(edit_ok);
	check_both(path, r);
	summary(path, &r[0]);
	CHECK(r[0].by_method[USTACK_METHOD_CFI] > 0);

	edited_copy("v2/shapes.so", ".sframe", ".eh_frame_hdr", dup_hdr_location, path,
		    sizeof(path));
	CHECK(edit_ok);
	check_both(path, r);
	summary(path, &r[0]);
	CHECK(r[0].bad > 0);
	CHECK_EQ(r[1].bad, 0);

	sframe_warnings = 0;
	edited_copy("v3/shapes.so", NULL, ".sframe", v3_no_fres, path, sizeof(path));
	CHECK(edit_ok);
	check_both(path, r);
	summary(path, &r[0]);
	CHECK_EQ(sframe_warnings, 0);
	for (int i = 0; i < 2; i++)
		CHECK(r[i].outermost > 0);
}

/* ---- random damage ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/*
 * Random byte changes in .eh_frame, .eh_frame_hdr and .sframe of the small
 * fixtures: whatever the damage, the export must answer as find_row.
 */
static void test_random_damage(void)
{
	static const char *const files[] = {
		"v1/shapes.so", "v2/shapes.so", "v3/shapes.so", "v2/exe", "v3/exe", "v3/drap.so",
	};
	static const char *const secs[] = { ".eh_frame", ".eh_frame_hdr", ".sframe" };
	unsigned long mutants = 0, with_bad = 0, dropped = 0;
	char src[4200], path[4200];

	CHECK(make_tmpdir());
	snprintf(path, sizeof(path), "%s/mutant", tmpdir);
	for (size_t fi = 0; fi < sizeof(files) / sizeof(files[0]); fi++) {
		uint64_t off[3], size[3];
		uint8_t *img, *copy;
		size_t len;

		snprintf(src, sizeof(src), "%s/tests/data/sframe/%s", top(), files[fi]);
		img = slurp(src, &len);
		CHECK(img);
		copy = malloc(len);
		CHECK(copy);
		for (int s = 0; s < 3; s++)
			if (section_at(src, secs[s], &off[s], &size[s]) || !size[s])
				size[s] = 0;
		for (int it = 0; it < 150; it++) {
			struct result r[2];
			int s = (int)(next_rand() % 3), n = 1 + (int)(next_rand() % 3);

			if (!size[s])
				continue;
			memcpy(copy, img, len);
			for (int k = 0; k < n; k++) {
				uint64_t at = off[s] + next_rand() % size[s];

				copy[at] = (next_rand() & 1) ? (uint8_t)next_rand()
							    : (uint8_t)(copy[at] ^ (1u << (next_rand() % 8)));
			}
			CHECK_EQ(spit(path, copy, len), 0);
			sframe_warnings = 0;
			check_both(path, r);
			CHECK(sframe_warnings <= 2); /* at most once per cache */
			mutants++;
			with_bad += r[0].bad > 0;
			dropped += r[0].by_method[USTACK_METHOD_SFRAME] == 0;
		}
		free(copy);
		free(img);
	}
	printf("# %lu mutants: %lu with bad CFI spans, %lu without SFrame rows\n", mutants,
	       with_bad, dropped);
	CHECK(mutants > 400);
}

static void cleanup(void)
{
	if (have_tmpdir)
		run("rm -rf %s", tmpdir);
}

int main(void)
{
	ustack_set_print(count_warnings);
	RUN(test_libc);
	RUN(test_sframe_fixtures);
	RUN(test_sframe_damaged);
	RUN(test_cfi_only);
	RUN(test_static);
	RUN(test_eh_frame_damaged);
	RUN(test_crafted);
	RUN(test_work_bound);
	RUN(test_random_damage);
	cleanup();
	TEST_EXIT();
}
