/* Fixture: varied frame shapes for the SFrame decoder tests.
 * Built with -O2 -Wa,--gsframe into a small shared object (see
 * scripts/make-sframe-fixtures.sh). */
#include <alloca.h>
#include <string.h>

extern int ext(int);          /* undefined: calls go through the PLT (PCMASK FDE) */
extern void sink(void *, int);

int leaf(int x)
{
	return x * 3 + 1;
}

/* Several callee-saved registers: a push per row. */
int pushes(int a, int b, int c, int d)
{
	int x = ext(a), y = ext(b), z = ext(c), w = ext(d);

	return ext(x + y) + ext(z * w) + x + y + z + w + a + b + c + d;
}

/* alloca and a VLA: the CFA moves to the frame pointer. */
int with_alloca(int n)
{
	char *p = alloca(n + 1);

	memset(p, 1, n + 1);
	sink(p, n);
	return p[n / 2];
}

int with_vla(int n)
{
	char buf[n + 8];

	sink(buf, n);
	return buf[0];
}

/* An rbp-based frame kept even at -O2. */
__attribute__((optimize("no-omit-frame-pointer"))) int fp_frame(int a)
{
	volatile int v[4] = { a, a + 1, a + 2, a + 3 };

	return ext(v[0] + v[3]);
}

/* Large frames: CFA offsets that need 2 and 4 bytes. */
int frame2(int a)
{
	char buf[1000];

	sink(buf, a);
	return buf[a & 255];
}

int frame4(int a)
{
	char buf[100000];

	sink(buf, a);
	return buf[a & 255];
}

/* A function long enough (> 256 bytes before its epilogue) for FRE start
 * offsets of 2 bytes. */
#define STEP(i) acc = acc * 31 + ext(acc ^ (i));
int medium(int a)
{
	int acc = a;

	STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8)
	STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15) STEP(16)
	STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23) STEP(24)
	return acc;
}
