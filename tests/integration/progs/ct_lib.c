/* The "library built twice" of tests/integration/container_names.sh (see
 * ct_prog.c): names end in CT_TAG. */
#define CT_CAT2(a, b) a##b
#define CT_CAT(a, b) CT_CAT2(a, b)
#define CT_NAME(x) CT_CAT(x, CT_TAG)

volatile unsigned long ct_lib_sink;

__attribute__((noinline)) unsigned long CT_NAME(ct_lib_inner_)(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		ct_lib_sink += i * 7 + (ct_lib_sink >> 5);
	return ct_lib_sink;
}

unsigned long CT_NAME(ct_lib_spin_)(unsigned long n)
{
	return CT_NAME(ct_lib_inner_)(n) + 1;
}
