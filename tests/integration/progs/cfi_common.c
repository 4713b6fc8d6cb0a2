// SPDX-License-Identifier: MIT
/* Harness of the CFI backtrace programs; see cfi_common.h. */
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfi_common.h"

#ifndef PT_GNU_SFRAME
#define PT_GNU_SFRAME 0x6474e554
#endif

const char *cfi_variant = "?";
static const char *cfi_prog = "?";
struct cfi_stats cfi_last;

/* ---- the capture point ------------------------------------------------------ */

typedef int (*cap_fn)(void *buf, int size, unsigned int *stop);

/*
 * Reached through pointers of unknown extent: with arrays of known size
 * the compiler could unroll the loop into three call instructions, which
 * would give each capture its own entry 0.
 */
struct cap_tab {
	int count;
	cap_fn *fn;
	size_t *off; /* of each buffer inside struct cfi_snap */
};
static cap_fn cap_fns[3];
static size_t cap_offs[3] = { offsetof(struct cfi_snap, g), offsetof(struct cfi_snap, u),
			      offsetof(struct cfi_snap, f) };
static struct cap_tab cap_store = { 0, cap_fns, cap_offs };
static struct cap_tab *volatile cap_tab = &cap_store;

CFI_NOIPA void cfi_capture(struct cfi_snap *s)
{
	struct cap_tab *t = cap_tab;

	for (int i = 0; i < t->count; i++)
		s->n[i] = t->fn[i]((char *)s + t->off[i], CFI_MAX, &s->stop);
	/* the call is not the last thing here: no tail call */
	__asm__ volatile("" ::: "memory");
}

/* ---- symbols -------------------------------------------------------------------- */

struct sym {
	uintptr_t lo, hi;
	char *name;
};
static struct sym *syms;
static size_t nsyms;
static uintptr_t exe_bias; /* run-time minus link-time address */

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

extern int main(int argc, char **argv);

/* `nm -S --defined-only` of the executable; bias from main's address. */
static int load_nm(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	uintptr_t main_nm = 0;
	size_t cap = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, sz;
		char type, name[900];

		if (sscanf(line, "%llx %llx %c %899s", &a, &sz, &type, name) != 4)
			continue;
		if (type != 't' && type != 'T' && type != 'W' && type != 'w' && type != 'i')
			continue;
		if (!strcmp(name, "main"))
			main_nm = a;
		if (!sz)
			continue;
		if (nsyms == cap) {
			cap = cap ? cap * 2 : 1024;
			syms = realloc(syms, cap * sizeof(*syms));
			if (!syms)
				abort();
		}
		syms[nsyms].lo = a;
		syms[nsyms].hi = a + sz;
		syms[nsyms].name = strdup(name);
		nsyms++;
	}
	fclose(f);
	if (!main_nm)
		return -1;
	exe_bias = (uintptr_t)&main - main_nm;
	for (size_t i = 0; i < nsyms; i++) {
		syms[i].lo += exe_bias;
		syms[i].hi += exe_bias;
	}
	qsort(syms, nsyms, sizeof(*syms), sym_cmp);
	return 0;
}

static const struct sym *exe_sym(uintptr_t a)
{
	size_t lo = 0, hi = nsyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (syms[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* symbols may nest (aliases): take the last start <= a that covers it */
	while (lo > 0) {
		const struct sym *s = &syms[--lo];

		if (a < s->hi)
			return s;
		if (a - s->lo > (1u << 20))
			break;
	}
	return NULL;
}

/* ---- address ranges of the executable from the script ---------------------- */

/* Link-time ranges, "0xSTART SIZE" per line (SIZE decimal or 0x-hex):
 * the FDEs of the executable's .sframe (objdump --sframe) and its PLT
 * sections (readelf -S). */
struct range {
	uintptr_t lo, hi;
};
static struct range *sf_ranges, *plt_ranges;
static size_t n_sf_ranges, n_plt_ranges;

static int load_ranges(const char *path, struct range **out, size_t *n)
{
	FILE *f;
	char line[256];
	size_t cap = 0;

	if (!path || !*path)
		return 0;
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, sz;
		char *end;

		lo = strtoull(line, &end, 0);
		sz = strtoull(end, NULL, 0);
		if (!sz)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			*out = realloc(*out, cap * sizeof(**out));
			if (!*out)
				abort();
		}
		(*out)[*n].lo = lo + exe_bias;
		(*out)[*n].hi = lo + sz + exe_bias;
		(*n)++;
	}
	fclose(f);
	return 0;
}

static int in_ranges(const struct range *r, size_t n, uintptr_t a)
{
	for (size_t i = 0; i < n; i++)
		if (a >= r[i].lo && a < r[i].hi)
			return 1;
	return 0;
}

static int in_plt(uintptr_t a)
{
	return in_ranges(plt_ranges, n_plt_ranges, a);
}

/* ---- modules: which ones carry SFrame ------------------------------------------ */

struct mod {
	uintptr_t lo, hi;
	int sframe, is_exe;
};
static struct mod mods[128];
static int nmods;

static int mod_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct mod m = { UINTPTR_MAX, 0, 0, !info->dlpi_name || !info->dlpi_name[0] };

	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type == PT_GNU_SFRAME)
			m.sframe = 1;
		if (p->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + p->p_vaddr < m.lo)
			m.lo = info->dlpi_addr + p->p_vaddr;
		if (info->dlpi_addr + p->p_vaddr + p->p_memsz > m.hi)
			m.hi = info->dlpi_addr + p->p_vaddr + p->p_memsz;
	}
	if (m.lo < m.hi && nmods < (int)(sizeof(mods) / sizeof(mods[0])))
		mods[nmods++] = m;
	return 0;
}

/* 1: the module holding @a has PT_GNU_SFRAME, 0: it has not, -1: no module */
static int mod_sframe(uintptr_t a)
{
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < nmods; i++)
			if (a >= mods[i].lo && a < mods[i].hi)
				return mods[i].sframe;
		/* a library loaded since: look again */
		nmods = 0;
		dl_iterate_phdr(mod_cb, NULL);
	}
	return -1;
}

/*
 * 1: the pc has an SFrame FDE, 0: it has not, -1: no module.
 * The executable's .sframe covers only the linked-in libustack (built with
 * SFrame) and the PLT that ld described because of it; the test code has
 * none (the script checks): for it, objdump's list of FDEs decides.
 */
static int pc_has_sframe(uintptr_t a)
{
	int sf = mod_sframe(a);

	for (int i = 0; sf > 0 && i < nmods; i++)
		if (a >= mods[i].lo && a < mods[i].hi && mods[i].is_exe)
			return in_ranges(sf_ranges, n_sf_ranges, a);
	return sf;
}

/* ---- describing a frame --------------------------------------------------------- */

int cfi_is_sigreturn(const void *pc)
{
	/* mov $15, %rax; syscall: the x86-64 rt_sigreturn trampoline */
	static const unsigned char code[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	/* only read it when it is mapped code (a static executable's
	 * __restore_rt has no symbol size: look for its module) */
	if (!pc || mod_sframe((uintptr_t)pc) < 0)
		return 0;
	return !memcmp(pc, code, sizeof(code));
}

struct where {
	const char *name; /* symbol or NULL */
	uintptr_t off;    /* from the symbol, or from the module base */
	const char *mod;  /* module basename or NULL */
	int in_exe_table;
};

static void where_is(const void *pc, int exact, struct where *w)
{
	uintptr_t a = (uintptr_t)pc - (exact ? 0 : 1);
	const struct sym *s;
	Dl_info di;

	memset(w, 0, sizeof(*w));
	if (!pc)
		return;
	if (cfi_is_sigreturn(pc)) {
		w->name = "__restore_rt";
		return;
	}
	if (in_plt(a)) {
		w->name = "plt-stub";
		w->mod = "exe";
		return;
	}
	s = exe_sym(a);
	if (s) {
		w->name = s->name;
		w->off = (uintptr_t)pc - s->lo;
		w->in_exe_table = 1;
		w->mod = "exe";
		return;
	}
	if (dladdr((const void *)a, &di) && di.dli_fname) {
		const char *m = strrchr(di.dli_fname, '/');

		w->mod = m ? m + 1 : di.dli_fname;
		if (di.dli_sname) {
			w->name = di.dli_sname;
			w->off = (uintptr_t)pc - (uintptr_t)di.dli_saddr;
		} else {
			w->off = (uintptr_t)pc - (uintptr_t)di.dli_fbase;
		}
	}
}

const char *cfi_describe(const void *pc, int exact, char *buf, unsigned long len)
{
	struct where w;

	where_is(pc, exact, &w);
	if (!pc)
		snprintf(buf, len, "-");
	else if (w.name)
		snprintf(buf, len, "%s+0x%" PRIxPTR " (%s)", w.name, w.off, w.mod ? w.mod : "?");
	else if (w.mod)
		snprintf(buf, len, "%s+0x%" PRIxPTR, w.mod, w.off);
	else
		snprintf(buf, len, "?");
	return buf;
}

static int ours(const struct where *w)
{
	if (w->mod && !strncmp(w->mod, "libcfi_", 7))
		return 1;
	if (!w->in_exe_table)
		return 0;
#ifdef CFI_STATIC
	/* libc and libstdc++ are in the executable too: our code is what
	 * carries our names */
	return w->name && (!strncmp(w->name, "cfi", 3) || strstr(w->name, "Cfi"));
#else
	return 1;
#endif
}

static int token_match(const char *tok, size_t len, const struct where *w)
{
	if (len == 4 && !memcmp(tok, "@sys", 4))
		return w->mod && !ours(w) && strcmp(w->name ? w->name : "", "main") &&
		       strcmp(w->name ? w->name : "", "_start");
	if (len == 4 && !memcmp(tok, "@lib", 4))
		return (w->mod && !strncmp(w->mod, "libcfi_", 7)) ||
		       (w->in_exe_table && w->name && !strncmp(w->name, "cfilib_", 7));
	if (len == 5 && !memcmp(tok, "@libc", 5))
		return w->mod && (!strncmp(w->mod, "libc.so", 7) || (w->in_exe_table && !ours(w)));
	if (len == 4 && !memcmp(tok, "!sig", 4))
		return w->name && !strcmp(w->name, "__restore_rt");
	if (!w->name)
		return 0;
	if (tok[len - 1] == '*')
		return !strncmp(w->name, tok, len - 1);
	return strlen(w->name) == len && !memcmp(w->name, tok, len);
}

/* ---- verification ----------------------------------------------------------------- */

static void print_stack(const struct cfi_snap *s, int mark)
{
	int rows = s->n[0];

	if (s->n[1] > rows)
		rows = s->n[1];
	if (s->n[2] > rows)
		rows = s->n[2];
	printf("  %-4s %-16s %-16s %-16s %-7s %s\n", "idx", "glibc", "ustack", "ustack_frames",
	       "method", "symbol (glibc pc, else ustack pc)");
	for (int i = 0; i < rows && i < CFI_MAX; i++) {
		char sym[640], g[20] = "-", u[20] = "-", f[20] = "-";
		const char *meth = "-";
		const void *pc = i < s->n[0] ? s->g[i] : (i < s->n[1] ? s->u[i] : NULL);
		int exact = i > 0 && i - 1 < s->n[0] && cfi_is_sigreturn(s->g[i - 1]);

		if (i < s->n[0])
			snprintf(g, sizeof(g), "%p", s->g[i]);
		if (i < s->n[1])
			snprintf(u, sizeof(u), "%p", s->u[i]);
		if (i < s->n[2]) {
			snprintf(f, sizeof(f), "0x%" PRIx64, s->f[i].pc);
			meth = ustack_method_name(s->f[i].method);
		}
		cfi_describe(pc, exact, sym, sizeof(sym));
		/* where ustack differs, name its pc too */
		if (i < s->n[0] && i < s->n[1] && s->u[i] != s->g[i]) {
			char usym[300];
			size_t l = strlen(sym);

			cfi_describe(s->u[i], exact, usym, sizeof(usym));
			snprintf(sym + l, sizeof(sym) - l, "  | ustack: %s", usym);
		}
		printf("  %-4d %-16s %-16s %-16s %-7s %s%s\n", i, g, u, f, meth, sym,
		       i == mark ? "   <== here" : "");
	}
	printf("  counts: glibc %d, ustack_backtrace %d, ustack_backtrace_frames %d "
	       "(stop: %s)\n", s->n[0], s->n[1], s->n[2], ustack_stop_reason_name(s->stop));
}

static int verify_fail(const struct cfi_snap *s, const char *scen, int iter, int mark,
		       const char *why)
{
	printf("FAIL %s/%s/%s: %s (iteration %d)\n", cfi_prog, cfi_variant, scen, why, iter);
	print_stack(s, mark);
	return 1;
}

/*
 * Match @pattern (see cfi_common.h) against frames w[0..n-1]; 0, or 1 with
 * the reason in @why and the frame concerned in *mark.
 */
static int match_pattern(const struct where *w, int n, const char *pattern, char *why,
			 size_t whylen, int *mark)
{
	const char *p = pattern;
	int fi = 0, first = 1;

	*mark = -1;
	while (*p) {
		const char *e;
		size_t len;
		int last;

		while (*p == ' ')
			p++;
		e = p;
		while (*e && *e != ' ')
			e++;
		len = (size_t)(e - p);
		if (!len)
			break;
		last = !e[strspn(e, " ")];
		if (first || last) {
			int at = first ? 0 : n - 1;

			if (last && !first && fi > at) {
				snprintf(why, whylen, "no frames left for '%.*s'", (int)len, p);
				*mark = n - 1;
				return 1;
			}
			if (at < 0 || !token_match(p, len, &w[at])) {
				snprintf(why, whylen, "the %s frame is not '%.*s'",
					 first ? "first" : "last", (int)len, p);
				*mark = at;
				return 1;
			}
			fi = at + 1;
		} else {
			while (fi < n - 1 && !token_match(p, len, &w[fi]))
				fi++;
			if (fi >= n - 1) {
				snprintf(why, whylen, "'%.*s' missing or out of order (pattern \"%s\")",
					 (int)len, p, pattern);
				return 1;
			}
			fi++;
		}
		first = 0;
		p = e;
	}
	return 0;
}

/* How frame i of @pcs (glibc's or ustack's array) must have been found. */
static unsigned int want_method(void *const *pcs, int i)
{
	int exact_prev = i > 1 && cfi_is_sigreturn(pcs[i - 2]);

	if (i == 0)
		return USTACK_METHOD_REGS;
	if (cfi_is_sigreturn(pcs[i - 1]))
		return USTACK_METHOD_SIGNAL;
	return pc_has_sframe((uintptr_t)pcs[i - 1] - (exact_prev ? 0 : 1)) > 0 ?
		       USTACK_METHOD_SFRAME : USTACK_METHOD_CFI;
}

/* A PLT stub's entry at or below @stub, within the 16 bytes of one stub. */
static int is_stub_entry(uintptr_t target, uintptr_t stub)
{
	return target <= stub && stub - target < 16 && in_plt(target);
}

/* Function @f jumps to the stub (a tail call: jmp rel32, or jcc rel32).
 * Its bytes are scanned, not decoded: a stray match of both the opcode and
 * the exact 32-bit displacement to the stub is not a practical concern. */
static int tail_jumps_to(const struct sym *f, uintptr_t stub)
{
	const unsigned char *p = (const unsigned char *)f->lo;
	size_t n = f->hi - f->lo;

	for (size_t i = 0; i + 5 <= n; i++) {
		int32_t rel;
		uintptr_t next;

		if (p[i] == 0xe9) {
			memcpy(&rel, p + i + 1, 4);
			next = f->lo + i + 5;
		} else if (p[i] == 0x0f && i + 6 <= n && (p[i + 1] & 0xf0) == 0x80) {
			memcpy(&rel, p + i + 2, 4);
			next = f->lo + i + 6;
		} else {
			continue;
		}
		if (is_stub_entry(next + (intptr_t)rel, stub))
			return 1;
	}
	return 0;
}

/*
 * The interrupted pc @stub lies in a PLT stub and the frame after it is
 * @ret: @ret must follow a `call rel32` whose target is the stub's entry
 * (stubs are at most 16 bytes), or whose target is a function that
 * tail-calls the stub: then the stub returns straight to that function's
 * caller. (A static glibc's qsort does that: msort_with_tmp ends in `jmp`
 * to the IPLT stub of memcpy, so a timer that fires on that stub sees the
 * return address of the recursive msort_with_tmp call.)
 */
static int called_stub(uintptr_t ret, uintptr_t stub)
{
	const unsigned char *c = (const unsigned char *)ret - 5;
	const struct sym *f;
	int32_t rel;
	uintptr_t target;

	if (!exe_sym(ret - 1) || c[0] != 0xe8)
		return 0;
	memcpy(&rel, c + 1, 4);
	target = ret + (intptr_t)rel;
	if (is_stub_entry(target, stub))
		return 1;
	f = exe_sym(target);
	return f && f->lo == target && tail_jumps_to(f, stub);
}

int cfi_plt_stops, cfi_plt_beyond;

int cfi_verify(const struct cfi_snap *s, const char *scen, int iter, int min_depth,
	       const char *pattern)
{
	static struct where w[CFI_MAX];
	struct cfi_stats st;
	char why[600], pwhy[400];
	int n = s->n[0], mark = -1, plt_stop, beyond = 0, total;
	void *const *pcs = s->g;

	if (n >= CFI_MAX)
		return verify_fail(s, scen, iter, -1, "glibc filled the buffer: not the whole stack");
	/*
	 * glibc's unwinder ends without error where no unwind information
	 * exists: an interrupted pc in a PLT stub of a static executable
	 * (ld writes neither CFI nor SFrame for its .plt). ustack must then
	 * give the same frames, and may go on only correctly (checked
	 * without glibc: the next frame must have called the stub, the rest
	 * must follow the pattern down to _start).
	 */
	plt_stop = n >= 3 && cfi_is_sigreturn(s->g[n - 2]) && in_plt((uintptr_t)s->g[n - 1]);
	if (n < min_depth && !plt_stop) {
		snprintf(why, sizeof(why), "glibc returned %d frames, the call structure has "
			 ">= %d", n, min_depth);
		return verify_fail(s, scen, iter, -1, why);
	}

	/* ustack equals glibc over all of glibc's stack */
	for (int i = 0; i < n; i++) {
		if (i >= s->n[1] || s->u[i] != s->g[i]) {
			snprintf(why, sizeof(why), "ustack_backtrace differs at index %d%s", i,
				 i >= s->n[1] ? " (ustack stopped early)" : "");
			return verify_fail(s, scen, iter, i, why);
		}
		if (i >= s->n[2] || s->f[i].pc != (uintptr_t)s->g[i]) {
			snprintf(why, sizeof(why), "ustack_backtrace_frames differs at index %d%s", i,
				 i >= s->n[2] ? " (stopped early)" : "");
			return verify_fail(s, scen, iter, i, why);
		}
	}
	if (s->n[1] != s->n[2]) {
		snprintf(why, sizeof(why), "ustack_backtrace gave %d frames, "
			 "ustack_backtrace_frames %d", s->n[1], s->n[2]);
		return verify_fail(s, scen, iter, n, why);
	}
	total = n;
	if (plt_stop && s->n[1] > n) {
		/* ustack went on where glibc could not */
		if (!called_stub((uintptr_t)s->u[n], (uintptr_t)s->g[n - 1])) {
			snprintf(why, sizeof(why), "past the PLT stub where glibc stops, ustack's "
				 "frame %d is not a return address after a call to that stub", n);
			return verify_fail(s, scen, iter, n, why);
		}
		beyond = 1;
		total = s->n[1];
		pcs = s->u;
	} else if (s->n[1] != n) {
		snprintf(why, sizeof(why), "ustack returned more frames than glibc (%d vs %d)",
			 s->n[1], n);
		return verify_fail(s, scen, iter, n, why);
	}
	if (plt_stop && !beyond) {
		cfi_plt_stops++;
	} else if (s->stop != USTACK_STOP_OUTERMOST) {
		snprintf(why, sizeof(why), "ustack stopped with '%s', not 'outermost'",
			 ustack_stop_reason_name(s->stop));
		return verify_fail(s, scen, iter, total - 1, why);
	}

	for (int i = 0; i < total; i++)
		where_is(pcs[i], i > 0 && cfi_is_sigreturn(pcs[i - 1]), &w[i]);

	/* the stack follows the call structure (glibc's: the oracle is
	 * checked too; ustack's past a PLT stop) */
	if (plt_stop && !beyond) {
		/* up to the trampoline only */
		char head[300];
		const char *sig = strstr(pattern, "!sig");

		snprintf(head, sizeof(head), "%.*s", sig ? (int)(sig - pattern + 4) : 0, pattern);
		if (!sig || match_pattern(w, n - 1, head, pwhy, sizeof(pwhy), &mark)) {
			snprintf(why, sizeof(why), "glibc's stack: %s (test assumption broken)",
				 sig ? pwhy : "stopped in a PLT stub outside a signal frame");
			return verify_fail(s, scen, iter, mark, why);
		}
	} else if (match_pattern(w, total, pattern, pwhy, sizeof(pwhy), &mark)) {
		snprintf(why, sizeof(why), "%s stack: %s%s", beyond ? "ustack's" : "glibc's", pwhy,
			 beyond ? "" : " (test assumption broken)");
		return verify_fail(s, scen, iter, mark, why);
	}

	/* entry 0: the return address into the capture function */
	if (!w[0].name || strcmp(w[0].name, "cfi_capture")) {
		snprintf(why, sizeof(why), "entry 0 is not a return address inside cfi_capture");
		return verify_fail(s, scen, iter, 0, why);
	}

	/* how each frame was found */
	memset(&st, 0, sizeof(st));
	st.depth = total;
	for (int i = 0; i < total; i++) {
		unsigned int m = s->f[i].method, want = want_method(pcs, i);

		if (m == USTACK_METHOD_FP) {
			snprintf(why, sizeof(why), "frame %d was found by the frame-pointer heuristic "
				 "(expected %s)", i, ustack_method_name(want));
			return verify_fail(s, scen, iter, i, why);
		}
		/* the step out of a PLT stub without tables: any other method */
		if (m != want && !(beyond && i == n)) {
			snprintf(why, sizeof(why), "frame %d was found by method %s, expected %s", i,
				 ustack_method_name(m), ustack_method_name(want));
			return verify_fail(s, scen, iter, i, why);
		}
		if ((s->f[i].flags & USTACK_FRAME_EXACT_PC) != (want == USTACK_METHOD_SIGNAL ?
								  USTACK_FRAME_EXACT_PC : 0u)) {
			snprintf(why, sizeof(why), "frame %d: exact-pc flag is %u, expected %u", i,
				 s->f[i].flags & USTACK_FRAME_EXACT_PC,
				 want == USTACK_METHOD_SIGNAL ? 1u : 0u);
			return verify_fail(s, scen, iter, i, why);
		}
		if (m < 5)
			st.by_method[m]++;
		if (token_match("@sys", 4, &w[i]))
			st.sys_frames++;
	}
	if (beyond)
		cfi_plt_beyond++;
	cfi_last = st;
	/* CFI_SHOW=1: the stack of each case's first iteration, for reading */
	if (iter == 0 && getenv("CFI_SHOW")) {
		printf("# %s/%s/%s:\n", cfi_prog, cfi_variant, scen);
		print_stack(s, -1);
	}
	return 0;
}

void cfi_pass(const char *scen, int iters, const char *note)
{
	printf("PASS %s/%s/%s: %d iterations; whole stack (%d frames, %d outside the program) "
	       "identical to glibc's, stop outermost; methods: cfi %d, signal %d, sframe %d, "
	       "fp 0%s%s\n", cfi_prog, cfi_variant, scen, iters, cfi_last.depth,
	       cfi_last.sys_frames, cfi_last.by_method[USTACK_METHOD_CFI],
	       cfi_last.by_method[USTACK_METHOD_SIGNAL], cfi_last.by_method[USTACK_METHOD_SFRAME],
	       note ? "; " : "", note ? note : "");
}

void cfi_skip(const char *scen, const char *reason)
{
	printf("SKIP %s/%s/%s: %s\n", cfi_prog, cfi_variant, scen, reason);
}

void cfi_fail(const char *scen, const char *reason)
{
	printf("FAIL %s/%s/%s: %s\n", cfi_prog, cfi_variant, scen, reason);
}

int cfi_init(const char *prog, const char *variant)
{
	void *glibc_bt = NULL;
	const char *nm = getenv("CFI_NM");
	void *warm[4];

	cfi_prog = prog;
	cfi_variant = variant;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!nm || load_nm(nm)) {
		printf("FAIL %s/%s: CFI_NM (nm -S of the executable) not set or unreadable, "
		       "or has no main\n", prog, variant);
		return -1;
	}
	if (load_ranges(getenv("CFI_SFRAME"), &sf_ranges, &n_sf_ranges) ||
	    load_ranges(getenv("CFI_PLT"), &plt_ranges, &n_plt_ranges)) {
		printf("FAIL %s/%s: CFI_SFRAME or CFI_PLT unreadable\n", prog, variant);
		return -1;
	}
#ifdef CFI_STATIC
	glibc_bt = (void *)backtrace;
#else
	{
		void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);

		if (libc)
			glibc_bt = dlsym(libc, "backtrace");
	}
#endif
	if (!glibc_bt) {
		printf("FAIL %s/%s: cannot find glibc's backtrace: %s\n", prog, variant, dlerror());
		return -1;
	}
	/* Calling backtrace(void **, int) with a third argument is harmless on
	 * x86-64 (the extra register is ignored) and keeps one call site. */
	cap_fns[0] = (cap_fn)(void (*)(void))glibc_bt;
	cap_fns[1] = (cap_fn)(void (*)(void))ustack_backtrace;
	cap_fns[2] = (cap_fn)(void (*)(void))ustack_backtrace_frames;
	cap_store.count = 3;
	/* glibc's first backtrace() dlopen()s libgcc_s: never in a handler */
	((int (*)(void **, int))glibc_bt)(warm, 4);
	nmods = 0;
	dl_iterate_phdr(mod_cb, NULL);
	return 0;
}
