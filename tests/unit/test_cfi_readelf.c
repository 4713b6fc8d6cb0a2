// SPDX-License-Identifier: MIT
/*
 * Oracle test: every row that `readelf --debug-dump=frames-interp` prints
 * for a file must be what ustack_cfi__find_row() (with and without the
 * .eh_frame_hdr search table) and the compiled table return at the row's
 * first byte and at its last byte.
 *
 *   test_cfi_readelf [FILE...]   (default: libc.so.6 and this program)
 *
 * readelf's notation: CFA "rsp+8" / "rbp+16" / "r10+0" / "exp"; register
 * columns "u" (undefined *or* not yet set: readelf prints both as u), "s"
 * (same value), "c-16" (saved at CFA-16), "v..." (value), "r.." (in a
 * register), "exp" / "vexp" (expressions). A FDE without instructions is
 * printed without rows: its rows are the CIE's.
 * The x86-64 PLT CFA expression is evaluated here independently from the
 * operands readelf prints in --debug-dump=frames.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "test.h"
#include "cfi/cfi.h"
#include "elf/elf_file.h"

#define MAX_COLS 40

struct rrow {
	uint64_t loc;
	char cfa[32];
	char rbp[16], ra[16], rsp[16], rbx[16];
};

struct plt_expr {
	int debug;          /* section */
	uint64_t fde_off;
	long base, lit, shift;
};

struct stats {
	unsigned long rows, dbg_rows, pcs, agree, fallback, plt, signal, outermost, walk;
	unsigned long disagree_printed;
};

struct ctx {
	const char *path;
	struct ustack_cfi eh, eh_nohdr, dbg;
	struct ustack_cfi_table *eh_t, *dbg_t;
	int have_eh, have_dbg;
	struct plt_expr *plts;
	size_t nplts;
	struct stats st;
	/* current CIE rows (FDEs without instructions use them) */
	uint64_t cie_off[4096];
	struct rrow cie_row[4096];
	size_t ncie;
	int failed;
};

static void set_col(struct rrow *r, const char *name, const char *val)
{
	if (!strcmp(name, "rbp"))
		snprintf(r->rbp, sizeof(r->rbp), "%s", val);
	else if (!strcmp(name, "ra"))
		snprintf(r->ra, sizeof(r->ra), "%s", val);
	else if (!strcmp(name, "rsp"))
		snprintf(r->rsp, sizeof(r->rsp), "%s", val);
	else if (!strcmp(name, "rbx"))
		snprintf(r->rbx, sizeof(r->rbx), "%s", val);
}

static int parse_row(const char *line, char cols[][16], int ncols, struct rrow *r)
{
	char tok[MAX_COLS + 2][32];
	int n = 0;
	const char *p = line;

	memset(r, 0, sizeof(*r));
	while (*p && n < MAX_COLS + 2) {
		int len = 0;

		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		while (p[len] && !isspace((unsigned char)p[len]))
			len++;
		/* "r9 (r9)": a register rule prints number and name */
		if (p[len] == ' ' && p[len + 1] == '(') {
			len++;
			while (p[len] && !isspace((unsigned char)p[len]))
				len++;
		}
		snprintf(tok[n], sizeof(tok[n]), "%.*s", len, p);
		n++;
		p += len;
	}
	if (n < 2)
		return -1;
	r->loc = strtoull(tok[0], NULL, 16);
	snprintf(r->cfa, sizeof(r->cfa), "%s", tok[1]);
	for (int i = 2; i < n && i - 2 < ncols; i++)
		set_col(r, cols[i - 2], tok[i]);
	return 0;
}

static struct plt_expr *find_plt(struct ctx *c, int debug, uint64_t off)
{
	for (size_t i = 0; i < c->nplts; i++)
		if (c->plts[i].debug == debug && c->plts[i].fde_off == off)
			return &c->plts[i];
	return NULL;
}

static int same_row(const struct ustack_row *a, const struct ustack_row *b)
{
	return a->start == b->start && a->end == b->end && a->cfa_off == b->cfa_off &&
	       a->cfa_reg == b->cfa_reg && a->flags == b->flags && a->ra_rule == b->ra_rule &&
	       a->fp_rule == b->fp_rule && (a->ra_rule != USTACK_RULE_OFFSET || a->ra_off == b->ra_off) &&
	       (a->fp_rule != USTACK_RULE_OFFSET || a->fp_off == b->fp_off) &&
	       a->bx_rule == b->bx_rule && (a->bx_rule != USTACK_BX_OFFSET || a->bx_off == b->bx_off);
}

static void report(struct ctx *c, uint64_t fde_off, uint64_t pc, const struct rrow *r,
		   const struct ustack_row *row, int err, const char *why)
{
	c->failed = 1;
	if (c->st.disagree_printed++ > 20)
		return;
	printf("  %s: FDE 0x%" PRIx64 " pc 0x%" PRIx64 ": readelf cfa=%s rbp=%s ra=%s rsp=%s; "
	       "ustack err=%d [%" PRIx64 ",%" PRIx64 ") cfa=%s%+d ra=%u/%d fp=%u/%d flags=%#x: %s\n",
	       c->path, fde_off, pc, r->cfa, r->rbp, r->ra, r->rsp, err, row->start, row->end,
	       row->cfa_reg == USTACK_CFA_SP ? "rsp" : row->cfa_reg == USTACK_CFA_FP ? "rbp" : "rbx",
	       row->cfa_off, row->ra_rule,
	       row->ra_off, row->fp_rule, row->fp_off, row->flags, why);
}

/* Check one pc of a readelf row [lo, hi). */
static void check_pc(struct ctx *c, int debug, uint64_t fde_off, int signal,
		     const struct rrow *r, uint64_t lo, uint64_t hi, uint64_t pc)
{
	const struct ustack_cfi *cfi = debug ? &c->dbg : &c->eh;
	const struct ustack_cfi_table *t = debug ? c->dbg_t : c->eh_t;
	struct plt_expr *plt = NULL;
	struct ustack_row row, trow;
	int err, fb, expect_fb = 0;
	const char *why = NULL;

	memset(&row, 0, sizeof(row));
	c->st.pcs++;
	err = ustack_cfi__find_row(cfi, pc, &row);
	if (err) {
		report(c, fde_off, pc, r, &row, err, "find_row failed");
		return;
	}
	fb = !!(row.flags & USTACK_ROW_NEEDS_FALLBACK);

	/* CFA */
	if (!strcmp(r->cfa, "exp")) {
		plt = find_plt(c, debug, fde_off);
		if (plt) {
			long want = plt->base + ((long)((pc & 15) >= (uint64_t)plt->lit) << plt->shift);

			c->st.plt++;
			if (fb || row.cfa_reg != USTACK_CFA_SP || row.cfa_off != want)
				why = "PLT expression value";
			else if (pc < row.start || pc >= row.end || row.start < lo || row.end > hi ||
				 ((row.start & 15) != 0 && (row.start & 15) != (uint64_t)plt->lit) ||
				 (row.end != hi && (row.end & 15) != 0 && (row.end & 15) != (uint64_t)plt->lit))
				why = "PLT row range";
		} else {
			expect_fb = 1;
		}
	} else {
		char reg[16];
		long off;

		if (sscanf(r->cfa, "%15[a-z0-9]%ld", reg, &off) != 2) {
			why = "unparsable readelf CFA";
		} else if (!strcmp(reg, "rsp") || !strcmp(reg, "rbp")) {
			if (row.cfa_reg != (strcmp(reg, "rsp") ? USTACK_CFA_FP : USTACK_CFA_SP) ||
			    row.cfa_off != off)
				why = "CFA";
		} else if (!strcmp(reg, "rbx")) {
			/* a realignment through rbx (_dl_runtime_resolve_*) */
			if (row.cfa_reg != USTACK_CFA_BX || row.cfa_off != off)
				why = "CFA (rbx)";
		} else {
			expect_fb = 1; /* DRAP and friends */
		}
	}
	/* rbp */
	if (!why) {
		if (!r->rbp[0] || !strcmp(r->rbp, "u") || !strcmp(r->rbp, "s")) {
			if (row.fp_rule == USTACK_RULE_OFFSET)
				why = "rbp should not be saved";
		} else if (r->rbp[0] == 'c' && (r->rbp[1] == '-' || r->rbp[1] == '+')) {
			if (row.fp_rule != USTACK_RULE_OFFSET || row.fp_off != atol(r->rbp + 1))
				why = "rbp offset";
		} else {
			expect_fb = 1;
		}
	}
	/* rbx: saved at c+-N, else same (readelf's "u" is also "no rule") or
	 * not known (an undefined rule, or one the row form cannot say) */
	if (!why) {
		if (r->rbx[0] == 'c' && (r->rbx[1] == '-' || r->rbx[1] == '+')) {
			if (row.bx_rule != USTACK_BX_OFFSET || row.bx_off != atol(r->rbx + 1))
				why = "rbx offset";
		} else if (!r->rbx[0] || !strcmp(r->rbx, "u") || !strcmp(r->rbx, "s")) {
			if (row.bx_rule == USTACK_BX_OFFSET)
				why = "rbx should not be saved";
		} else if (row.bx_rule != USTACK_BX_UNKNOWN) {
			why = "rbx rule the row cannot say should be unknown";
		}
	}
	/* RA */
	if (!why) {
		if (r->ra[0] == 'c' && (r->ra[1] == '-' || r->ra[1] == '+')) {
			if (row.ra_rule != USTACK_RULE_OFFSET || row.ra_off != atol(r->ra + 1))
				why = "ra offset";
		} else if (!r->ra[0] || !strcmp(r->ra, "u")) {
			/* readelf's u is "undefined" or "no rule": outermost
			 * frame, or a row the unwinder cannot use */
			if (row.flags & USTACK_ROW_OUTERMOST) {
				c->st.outermost++;
				if (row.ra_rule != USTACK_RULE_UNDEFINED)
					why = "outermost row without undefined RA";
			} else if (!fb) {
				why = "RA without rule must be outermost or fallback";
			}
		} else {
			expect_fb = 1;
		}
	}
	/* rsp: the row implies caller rsp == CFA */
	if (!why && r->rsp[0] && strcmp(r->rsp, "u"))
		expect_fb = 1;
	if (!why && expect_fb != fb)
		why = expect_fb ? "expected NEEDS_FALLBACK" : "unexpected NEEDS_FALLBACK";
	if (!why && signal != !!(row.flags & USTACK_ROW_SIGNAL))
		why = "SIGNAL flag";
	if (!why && !plt && (row.start != lo || row.end != hi))
		why = "row range";
	if (!why) {
		memset(&trow, 0, sizeof(trow));
		err = ustack_cfi_table__find_row(t, pc, &trow);
		if (err || !same_row(&row, &trow))
			why = "compiled table differs";
	}
	/* the linear walk (no .eh_frame_hdr) on a sample: it is O(FDEs) */
	if (!why && !debug && c->eh.hdr_count && (c->st.pcs % 61) == 0) {
		struct ustack_row wrow;

		memset(&wrow, 0, sizeof(wrow));
		c->st.walk++;
		err = ustack_cfi__find_row(&c->eh_nohdr, pc, &wrow);
		if (err || !same_row(&row, &wrow))
			why = "linear walk differs";
	}
	if (why) {
		report(c, fde_off, pc, r, &row, 0, why);
		return;
	}
	c->st.agree++;
	c->st.fallback += fb;
	c->st.signal += !!(row.flags & USTACK_ROW_SIGNAL);
}

static void check_fde(struct ctx *c, int debug, uint64_t fde_off, uint64_t cie_off,
		      uint64_t pc_lo, uint64_t pc_hi, int signal, struct rrow *rows, size_t n)
{
	struct rrow cie_row;

	if ((debug ? !c->have_dbg : !c->have_eh) || pc_hi <= pc_lo)
		return;
	if (!n) {
		size_t i;

		for (i = 0; i < c->ncie && c->cie_off[i] != cie_off; i++)
			;
		if (i == c->ncie)
			return; /* CIE without rows either: nothing to compare */
		cie_row = c->cie_row[i];
		cie_row.loc = pc_lo;
		rows = &cie_row;
		n = 1;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t lo = rows[i].loc, hi = i + 1 < n ? rows[i + 1].loc : pc_hi;

		if (hi > pc_hi)
			hi = pc_hi;
		if (hi <= lo)
			continue;
		c->st.rows++;
		c->st.dbg_rows += debug;
		if (!strcmp(rows[i].cfa, "exp") && find_plt(c, debug, fde_off) && hi - lo <= 65536) {
			/* PLT rows: every byte of every slot */
			for (uint64_t pc = lo; pc < hi; pc++)
				check_pc(c, debug, fde_off, signal, &rows[i], lo, hi, pc);
			continue;
		}
		check_pc(c, debug, fde_off, signal, &rows[i], lo, hi, lo);
		if (hi - 1 != lo)
			check_pc(c, debug, fde_off, signal, &rows[i], lo, hi, hi - 1);
	}
}

static FILE *run_readelf(const char *mode, const char *path)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=%s '%s' 2>/dev/null", mode, path);
	return popen(cmd, "r");
}

/* readelf exits 1 after printing complete output for files with any
 * oddity it warns about (libc.so.6 here): only a crash or exit > 1 counts. */
static int readelf_status(int st)
{
	return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) <= 1 ? 0 : -1;
}

static int load_plts(struct ctx *c)
{
	FILE *f = run_readelf("frames", c->path);
	char line[4096];
	int debug = 0;
	uint64_t fde_off = 0;
	size_t cap = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		uint64_t off, len, id;
		char kind[8];
		const char *e;
		long a, b, m, n, s;

		if (strstr(line, "Contents of the .debug_frame"))
			debug = 1;
		else if (strstr(line, "Contents of the .eh_frame"))
			debug = 0;
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %7s", &off, &len, &id, kind) == 4 &&
		    !strcmp(kind, "FDE"))
			fde_off = off;
		e = strstr(line, "DW_CFA_def_cfa_expression (");
		if (!e)
			continue;
		if (sscanf(e, "DW_CFA_def_cfa_expression (DW_OP_breg7 (rsp): %ld; DW_OP_breg16 (rip): %ld; "
			   "DW_OP_lit%ld; DW_OP_and; DW_OP_lit%ld; DW_OP_ge; DW_OP_lit%ld; DW_OP_shl; "
			   "DW_OP_plus)", &a, &b, &m, &n, &s) != 5 || b != 0 || m != 15)
			continue;
		if (c->nplts == cap) {
			cap = cap ? 2 * cap : 16;
			c->plts = realloc(c->plts, cap * sizeof(*c->plts));
			if (!c->plts)
				return -1;
		}
		c->plts[c->nplts++] = (struct plt_expr){ debug, fde_off, a, n, s };
	}
	return readelf_status(pclose(f));
}

static int check_file(const char *path)
{
	struct ctx *c = calloc(1, sizeof(*c));
	struct ustack_elf *elf;
	struct ustack_elf_section sec;
	FILE *f;
	char line[4096], cols[MAX_COLS][16];
	int ncols = 0, debug = 0, in_fde = 0, in_cie = 0, signal = 0, ok;
	uint64_t fde_off = 0, cie_ref = 0, pc_lo = 0, pc_hi = 0, cur_cie = 0;
	struct rrow *rows = NULL;
	size_t nrows = 0, cap = 0;
	char cie_aug[4096][64];

	c->path = path;
	elf = ustack_elf__open(path);
	if (!elf) {
		printf("  %s: cannot open: %s\n", path, strerror(errno));
		free(c);
		return -1;
	}
	if (!ustack_cfi__init_elf(&c->eh, elf, 0)) {
		c->have_eh = 1;
		c->eh_nohdr = c->eh;
		c->eh_nohdr.hdr_count = 0;
		c->eh_t = ustack_cfi_table__build(&c->eh);
	}
	if (!ustack_elf__section(elf, ".debug_frame", &sec) && sec.data) {
		ustack_cfi__init_debug_frame(&c->dbg, sec.data, sec.size);
		c->have_dbg = 1;
		c->dbg_t = ustack_cfi_table__build(&c->dbg);
	}
	if (load_plts(c)) {
		printf("  %s: readelf --debug-dump=frames failed\n", path);
		c->failed = 1;
	}
	f = run_readelf("frames-interp", path);
	memset(cie_aug, 0, sizeof(cie_aug));
	while (f) {
		char *got = fgets(line, sizeof(line), f);
		uint64_t off, len, id, a, b;
		char aug[64];
		int is_cie = 0, is_fde = 0, is_sec = 0;

		if (got) {
			is_sec = !!strstr(line, "Contents of the ");
			is_cie = sscanf(line, "%" SCNx64 " %" SCNx64 " %" SCNx64 " CIE \"%63[^\"]\"",
					&off, &len, &id, aug) >= 3 && strstr(line, " CIE ");
			is_fde = sscanf(line, "%" SCNx64 " %" SCNx64 " %" SCNx64 " FDE cie=%" SCNx64
					" pc=%" SCNx64 "..%" SCNx64, &off, &len, &id, &cie_ref, &a, &b) == 6;
		}
		if (!got || is_sec || is_cie || is_fde) {
			if (in_fde)
				check_fde(c, debug, fde_off, cur_cie, pc_lo, pc_hi, signal, rows, nrows);
			in_fde = in_cie = 0;
			nrows = 0;
		}
		if (!got)
			break;
		if (is_sec) {
			debug = !!strstr(line, ".debug_frame");
			c->ncie = 0;
			continue;
		}
		if (is_cie) {
			in_cie = 1;
			if (c->ncie < 4096) {
				c->cie_off[c->ncie] = off;
				memset(&c->cie_row[c->ncie], 0, sizeof(c->cie_row[0]));
				c->cie_row[c->ncie].cfa[0] = 0;
				snprintf(cie_aug[c->ncie], 64, "%s", strchr(line, '"') ?
					 (strstr(line, "CIE \"\"") ? "" : aug) : "");
				c->ncie++;
			}
			continue;
		}
		if (is_fde) {
			size_t i;

			in_fde = 1;
			fde_off = off;
			cur_cie = cie_ref;
			pc_lo = a;
			pc_hi = b;
			signal = 0;
			for (i = 0; i < c->ncie && c->cie_off[i] != cie_ref; i++)
				;
			if (i < c->ncie)
				signal = !!strchr(cie_aug[i], 'S');
			continue;
		}
		if (strstr(line, "LOC") && strstr(line, "CFA")) {
			char *p = strstr(line, "CFA") + 3, *tok;

			ncols = 0;
			for (tok = strtok(p, " \t\n"); tok && ncols < MAX_COLS; tok = strtok(NULL, " \t\n"))
				snprintf(cols[ncols++], 16, "%s", tok);
			continue;
		}
		if (isxdigit((unsigned char)line[0]) && (in_fde || in_cie) &&
		    !strstr(line, "ZERO terminator")) {
			struct rrow r;

			if (parse_row(line, cols, ncols, &r))
				continue;
			if (in_cie) {
				/* the CIE's (last) row: used by FDEs without rows */
				if (c->ncie && c->ncie <= 4096)
					c->cie_row[c->ncie - 1] = r;
				continue;
			}
			if (nrows == cap) {
				cap = cap ? 2 * cap : 64;
				rows = realloc(rows, cap * sizeof(*rows));
			}
			rows[nrows++] = r;
		}
	}
	if (!f || readelf_status(pclose(f))) {
		printf("  %s: readelf --debug-dump=frames-interp failed\n", path);
		c->failed = 1;
	}
	printf("  %s: %lu readelf rows (%lu .debug_frame), %lu pcs, %lu agree (%lu fallback, %lu plt, %lu signal, "
	       "%lu outermost, %lu also by linear walk); table %zu rows (%zu+%zu FDEs)\n",
	       path, c->st.rows, c->st.dbg_rows, c->st.pcs, c->st.agree, c->st.fallback, c->st.plt, c->st.signal,
	       c->st.outermost, c->st.walk,
	       ustack_cfi_table__nr_rows(c->eh_t) + ustack_cfi_table__nr_rows(c->dbg_t),
	       ustack_cfi_table__nr_fdes(c->eh_t) + ustack_cfi_table__nr_fdes(c->dbg_t),
	       ustack_cfi_table__nr_bad_fdes(c->eh_t) + ustack_cfi_table__nr_bad_fdes(c->dbg_t));
	ok = !c->failed && c->st.rows > 0 && c->st.agree == c->st.pcs;
	if (!c->st.rows)
		printf("  %s: readelf printed no rows\n", path);
	free(rows);
	free(c->plts);
	ustack_cfi_table__free(c->eh_t);
	ustack_cfi_table__free(c->dbg_t);
	ustack_elf__close(elf);
	free(c);
	return ok ? 0 : -1;
}

static char **files;
static int nfiles;

static void test_cfi_readelf_agrees(void)
{
	if (system("readelf --version >/dev/null 2>&1"))
		SKIP("readelf not installed");
	for (int i = 0; i < nfiles; i++) {
		if (access(files[i], R_OK))
			SKIP("%s not readable", files[i]);
		CHECK(check_file(files[i]) == 0);
	}
}

int main(int argc, char **argv)
{
	static char *defaults[] = { "/lib/x86_64-linux-gnu/libc.so.6", "/proc/self/exe" };
	static char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = 0;
		defaults[1] = self;
	}
	files = argc > 1 ? argv + 1 : defaults;
	nfiles = argc > 1 ? argc - 1 : 2;
	RUN(test_cfi_readelf_agrees);
	TEST_EXIT();
}
