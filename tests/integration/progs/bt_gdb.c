// SPDX-License-Identifier: MIT
/*
 * For backtrace_gdb.sh: gdb is the oracle. One call instruction (in
 * gdb_leaf) calls ustack_backtrace() and then bt_gdb_stop(), where gdb
 * breaks and prints its own backtrace. gdb's frame #1 is the return address
 * of that same call instruction, so ustack's entry i must equal gdb's
 * frame #(i + 1), up to main.
 * Frames: gdb_leaf <- gdb_regs (callee-saved registers) <- gdb_alloca
 * (CFA from rbp) <- gdb_rec x 5 <- gdb_big (70000-byte frame) <- main.
 */
#include <alloca.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <ustack/ustack.h>

#define NOIPA __attribute__((noipa))
#define KEEP(x) __asm__ volatile("" : "+r"(x))
#define MAXF 128

typedef int (*cap_fn)(void **buf, int size);

static void *ubuf[MAXF];
static int un, res[2];
static cap_fn fns[2];
/* reached through volatile pointers of unknown extent, so the loop in
 * gdb_leaf cannot be unrolled into two call instructions */
static cap_fn *volatile fns_p = fns;
static int *volatile res_p = res;
static volatile int nfns;

/* The breakpoint target: prints ustack's result, which gdb's "bt" (taken
 * when this is entered) is compared against. */
NOIPA int bt_gdb_stop(void **buf, int size)
{
	(void)buf;
	(void)size;
	un = res[0];
	for (int i = 0; i < un; i++)
		printf("USTACK %d 0x%" PRIxPTR "\n", i, (uintptr_t)ubuf[i]);
	fflush(stdout);
	return 0;
}

NOIPA int gdb_leaf(int x)
{
	int n = nfns;
	cap_fn *f = fns_p;
	int *out = res_p;

	for (int i = 0; i < n; i++)
		out[i] = f[i](ubuf, MAXF);
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

NOIPA long gdb_regs(const volatile char *p)
{
	long a = p[0], b = p[1], c = p[2], d = p[3], e = p[4], f = p[5], g = p[6];

	KEEP(a); KEEP(b); KEEP(c); KEEP(d); KEEP(e); KEEP(f); KEEP(g);
	long r = gdb_leaf((int)a);
	KEEP(r);
	return r + a * b + c * d + e * f + g;
}

NOIPA int gdb_alloca(int n)
{
	volatile char *p = alloca(n);
	long r;

	for (int i = 0; i < n; i++)
		p[i] = (char)i;
	r = gdb_regs(p);
	KEEP(r);
	return (int)r + p[n - 1];
}

NOIPA int gdb_rec(int n)
{
	int r;

	if (n == 0) {
		r = gdb_alloca(40);
		KEEP(r);
		return r;
	}
	r = gdb_rec(n - 1);
	KEEP(r);
	return r + n;
}

NOIPA int gdb_big(int k)
{
	volatile char big[70000];
	int r;

	big[k] = 1;
	r = gdb_rec(4);
	KEEP(r);
	return r + big[k];
}

int main(void)
{
	int r;

	fns[0] = ustack_backtrace;
	fns[1] = bt_gdb_stop;
	nfns = 2;
	r = gdb_big(nfns);
	KEEP(r);
	printf("DONE %d\n", r);
	return 0;
}
