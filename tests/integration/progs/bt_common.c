// SPDX-License-Identifier: MIT
/* Harness of the backtrace test programs; see bt_common.h. */
#include "bt_common.h"

struct bt_snap bt_snap;
static bt_fn tab_fns[3];
static void *tab_bufs[3];
static struct bt_tab tab = { 0, tab_fns, tab_bufs, bt_snap.n };
struct bt_tab *volatile bt_tab = &tab;
const char *bt_variant = "?";
int bt_beyond_ustack, bt_beyond_equal;

static uintptr_t main_lo, main_hi;

extern int main(int argc, char **argv);

int bt_init(const char *variant)
{
	void *glibc_bt = NULL;
	const char *sz = getenv("BT_MAIN_SIZE");

	bt_variant = variant;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!sz || !*sz) {
		printf("FAIL %s: BT_MAIN_SIZE not set (size of main from nm -S)\n", variant);
		return -1;
	}
	main_lo = (uintptr_t)&main;
	main_hi = main_lo + strtoull(sz, NULL, 16);
#ifdef BT_STATIC
	glibc_bt = (void *)backtrace;
#else
	{
		void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);

		if (libc)
			glibc_bt = dlsym(libc, "backtrace");
	}
#endif
	if (!glibc_bt) {
		printf("FAIL %s: cannot find glibc's backtrace: %s\n", variant, dlerror());
		return -1;
	}
	/* Calling backtrace(void **, int) with a third argument is harmless
	 * on x86-64 (the extra register is ignored) and keeps one call site. */
	tab_fns[0] = (bt_fn)(void (*)(void))glibc_bt;
	tab_fns[1] = (bt_fn)(void (*)(void))ustack_backtrace;
	tab_fns[2] = (bt_fn)(void (*)(void))ustack_backtrace_frames;
	tab_bufs[0] = bt_snap.g;
	tab_bufs[1] = bt_snap.u;
	tab_bufs[2] = bt_snap.f;
	tab.count = 3;
	return 0;
}

int bt_in_main(const void *pc)
{
	return (uintptr_t)pc > main_lo && (uintptr_t)pc <= main_hi;
}

const char *bt_describe(const void *pc, char *buf, size_t len)
{
	Dl_info di;

	if (!pc) {
		snprintf(buf, len, "-");
		return buf;
	}
	/* pc - 1: a return address may lie just past its function's end */
	if (dladdr((const char *)pc - 1, &di) && di.dli_fname) {
		const char *mod = strrchr(di.dli_fname, '/');

		mod = mod ? mod + 1 : di.dli_fname;
		if (di.dli_sname)
			snprintf(buf, len, "%s+0x%tx (%s)", di.dli_sname,
				 (const char *)pc - (const char *)di.dli_saddr, mod);
		else
			snprintf(buf, len, "%s+0x%tx", mod,
				 (const char *)pc - (const char *)di.dli_fbase);
	} else if (bt_in_main(pc)) {
		snprintf(buf, len, "main+0x%tx", (uintptr_t)pc - main_lo);
	} else {
		snprintf(buf, len, "?");
	}
	return buf;
}

void bt_skip(const char *scen, const char *reason)
{
	printf("SKIP backtrace_glibc/%s/%s: %s\n", bt_variant, scen, reason);
}

static void print_diff(int upto, int mark)
{
	const struct bt_snap *s = &bt_snap;
	/* the first difference with some context, not a 50-row recursion */
	int from = mark > 12 ? mark - 8 : 0;
	int rows = mark >= 0 && mark + 4 < upto + 3 ? mark + 4 : upto + 3;

	printf("  %-4s %-18s %-18s %-18s %-8s %s\n", "idx", "glibc", "ustack", "ustack_frames",
	       "method", "symbol (of glibc pc)");
	if (from > 0)
		printf("  ... (%d identical rows)\n", from);
	for (int i = from; i < rows && i < BT_MAX; i++) {
		char sym[256], gpc[20] = "-", upc[20] = "-", fpc[20] = "-";
		const char *meth = "-";

		if (i >= s->n[0] && i >= s->n[1] && i >= s->n[2])
			break;
		if (i < s->n[0])
			snprintf(gpc, sizeof(gpc), "%p", s->g[i]);
		if (i < s->n[1])
			snprintf(upc, sizeof(upc), "%p", s->u[i]);
		if (i < s->n[2]) {
			snprintf(fpc, sizeof(fpc), "0x%" PRIx64, s->f[i].pc);
			meth = ustack_method_name(s->f[i].method);
		}
		bt_describe(i < s->n[0] ? s->g[i] : (i < s->n[1] ? s->u[i] : NULL), sym,
			    sizeof(sym));
		printf("  %-4d %-18s %-18s %-18s %-8s %s%s\n", i, gpc, upc, fpc, meth, sym,
		       i == mark ? "   <== first difference" : "");
	}
	printf("  counts: glibc %d, ustack %d, ustack_frames %d (stop: %s)\n", s->n[0], s->n[1],
	       s->n[2], ustack_stop_reason_name(s->stop));
}

int bt_verify(const char *scen, int expect_main, int boundary, int strict_beyond, int quiet,
	      const char *note)
{
	const struct bt_snap *s = &bt_snap;
	int limit = -1, beyond_ok = 0, beyond_n = 0;
	char why[256] = "";
	int bad = -1;

	if (boundary < 0) {
		for (int i = 0; i < s->n[0]; i++)
			if (bt_in_main(s->g[i])) {
				limit = i;
				break;
			}
		if (limit < 0) {
			snprintf(why, sizeof(why), "glibc backtrace never reached main");
			goto fail;
		}
		if (expect_main >= 0 && limit != expect_main) {
			snprintf(why, sizeof(why),
				 "glibc has main at index %d, the call structure says %d "
				 "(test program compiled differently than assumed)", limit, expect_main);
			goto fail;
		}
	} else {
		limit = boundary;
		if (s->n[0] <= limit) {
			snprintf(why, sizeof(why), "glibc returned only %d frames", s->n[0]);
			goto fail;
		}
	}
	for (int i = 0; i <= limit; i++) {
		if (i >= s->n[1] || s->u[i] != s->g[i]) {
			snprintf(why, sizeof(why), "ustack_backtrace differs at index %d%s", i,
				 i >= s->n[1] ? " (ustack stopped)" : "");
			bad = i;
			goto fail;
		}
		if (i >= s->n[2] || s->f[i].pc != (uintptr_t)s->g[i]) {
			snprintf(why, sizeof(why), "ustack_backtrace_frames differs at index %d", i);
			bad = i;
			goto fail;
		}
		/* frame 0 is read from ustack's own frame (REGS); every caller
		 * up to main must have been found with an SFrame row */
		if (i > 0 && s->f[i].method != USTACK_METHOD_SFRAME) {
			snprintf(why, sizeof(why), "frame %d found by method %s, not sframe", i,
				 ustack_method_name(s->f[i].method));
			bad = i;
			goto fail;
		}
		if (i == 0 && s->f[0].method != USTACK_METHOD_REGS &&
		    s->f[0].method != USTACK_METHOD_SFRAME) {
			snprintf(why, sizeof(why), "frame 0 has method %s",
				 ustack_method_name(s->f[0].method));
			bad = 0;
			goto fail;
		}
	}
	/* past the compared range: how far ustack's entries still equal
	 * glibc's (an entry glibc does not have counts as different) */
	beyond_n = s->n[1] > limit + 1 ? s->n[1] - limit - 1 : 0;
	for (int i = limit + 1; i < s->n[1] && i < s->n[0]; i++) {
		if (s->u[i] != s->g[i])
			break;
		beyond_ok++;
	}
	bt_beyond_ustack = beyond_n;
	bt_beyond_equal = beyond_ok;
	if (boundary >= 0 && strict_beyond && beyond_ok < beyond_n) {
		snprintf(why, sizeof(why),
			 "past the signal frame ustack returned a wrong frame at index %d",
			 limit + 1 + beyond_ok);
		bad = limit + 1 + beyond_ok;
		limit = bad;
		goto fail;
	}
	if (!quiet)
		printf("PASS backtrace_glibc/%s/%s: %d frames identical up to %s; "
		       "beyond: ustack %d, glibc %d, equal %d%s%s\n",
		       bt_variant, scen, limit + 1, boundary < 0 ? "main" : "the signal frame",
		       s->n[1] - limit - 1, s->n[0] - limit - 1, beyond_ok, note ? "; " : "",
		       note ? note : "");
	return 0;
fail:
	printf("FAIL backtrace_glibc/%s/%s: %s\n", bt_variant, scen, why);
	print_diff(limit > 0 ? limit : 8, bad);
	return 1;
}
