// SPDX-License-Identifier: MIT
/*
 * A stand-in for a preloaded allocator (built as libjemalloc.so.2 by
 * tests/integration/alloc.sh, the name record --alloc looks for): every
 * function hands the work to glibc's, and realloc(NULL, n) calls this
 * library's own malloc through a real call (glibc 2.36 makes it a tail
 * jump, so its nesting never shows), the case of one allocator call inside
 * another that record --alloc must count once.
 */
#include <errno.h>
#include <stddef.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t n);
extern void *__libc_valloc(size_t n);
extern void *__libc_pvalloc(size_t n);

void *malloc(size_t n)
{
	return __libc_malloc(n);
}

void free(void *p)
{
	__libc_free(p);
}

void *calloc(size_t n, size_t size)
{
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	void *r;

	if (p)
		return __libc_realloc(p, n);
	r = malloc(n);
	/* not a tail call: malloc runs inside realloc */
	__asm__ volatile("" : "+r"(r));
	return r;
}

void *memalign(size_t align, size_t n)
{
	return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p = __libc_memalign(align, n);

	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *valloc(size_t n)
{
	return __libc_valloc(n);
}

void *pvalloc(size_t n)
{
	return __libc_pvalloc(n);
}
