/* Fixture: stack realignment with a dynamic array makes GCC use a DRAP
 * register (CFA = *(rbp - 8) style rules): SFrame v3 encodes such
 * functions with flexible FDEs; older versions skip them. */
extern void sink(void *, int);

int drap(int n)
{
	char vla[n + 1];
	char aligned[64] __attribute__((aligned(64)));

	sink(vla, n);
	sink(aligned, n);
	return vla[0] + aligned[1];
}

int plain_after_drap(int a)
{
	return a * 7;
}
