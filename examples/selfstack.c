// SPDX-License-Identifier: MIT
/*
 * selfstack: a program built WITHOUT frame pointers (-O2
 * -fomit-frame-pointer -Wa,--gsframe) that prints its own stack three ways:
 * a naive frame-pointer walk (what `perf -g` would do), glibc backtrace(3)
 * (libgcc's DWARF unwinder) and ustack_backtrace_frames() (SFrame).
 * Run by `make demo`.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/ustack.h>

#define DEPTH 32

static void name_of(void *pc, char *out, size_t len)
{
	Dl_info info;

	if (dladdr((char *)pc - 1, &info) && info.dli_sname)
		snprintf(out, len, "%s+0x%lx", info.dli_sname,
			 (unsigned long)((char *)pc - (char *)info.dli_saddr));
	else if (info.dli_fname)
		snprintf(out, len, "?? (%s)", strrchr(info.dli_fname, '/') ?
			 strrchr(info.dli_fname, '/') + 1 : info.dli_fname);
	else
		snprintf(out, len, "??");
}

/* What a frame-pointer unwinder sees: follow rbp while it looks sane. */
static __attribute__((noinline)) int fp_walk(void **out, int max)
{
	uintptr_t *fp = __builtin_frame_address(0);
	int n = 0;

	while (n < max && fp && ((uintptr_t)fp & 7) == 0) {
		Dl_info info;
		uintptr_t ra = fp[1];

		if (!ra || !dladdr((void *)ra, &info))
			break;
		out[n++] = (void *)ra;
		if ((uintptr_t *)fp[0] <= fp)
			break;
		fp = (uintptr_t *)fp[0];
	}
	return n;
}

__attribute__((noipa)) int report(int level)
{
	struct ustack_frame frames[DEPTH];
	void *glibc[DEPTH], *fps[DEPTH];
	unsigned int stop;
	int n, g, f;
	char name[256];

	n = ustack_backtrace_frames(frames, DEPTH, &stop);
	g = backtrace(glibc, DEPTH);
	f = fp_walk(fps, DEPTH);

	printf("frame-pointer walk (what perf -g sees): %d frame%s\n", f, f == 1 ? "" : "s");
	for (int i = 0; i < f; i++) {
		name_of(fps[i], name, sizeof(name));
		printf("  #%-2d %p %s\n", i, fps[i], name);
	}
	printf("\nustack_backtrace_frames(): %d frames, stopped: %s\n", n, ustack_stop_reason_name(stop));
	for (int i = 0; i < n; i++) {
		name_of((void *)(uintptr_t)frames[i].pc, name, sizeof(name));
		printf("  #%-2d 0x%012llx %-28s via %s\n", i, (unsigned long long)frames[i].pc,
		       name, ustack_method_name(frames[i].method));
	}
	printf("\nglibc backtrace(): %d frames (libgcc DWARF unwinder; goes on into libc)\n", g);
	for (int i = 0; i < g; i++) {
		name_of(glibc[i], name, sizeof(name));
		printf("  #%-2d %p %s\n", i, glibc[i], name);
	}
	return n + level;
}

/* A few frames of different shapes, none with a frame pointer. */
__attribute__((noipa)) int recurse(int depth, int acc)
{
	volatile int keep = acc;

	if (depth == 0)
		return report(keep);
	/* the store after the call keeps gcc from turning this into a loop */
	keep = recurse(depth - 1, keep + depth);
	return keep + 1;
}

__attribute__((noipa)) int with_vla(int n)
{
	char buf[n];

	memset(buf, n, n);
	return recurse(3, buf[n - 1]) + buf[0];
}

__attribute__((noipa)) int parse_and_run(const char *arg)
{
	return with_vla(16 + (int)strlen(arg));
}

int main(int argc, char **argv)
{
	return parse_and_run(argc > 1 ? argv[1] : "demo") > 0 ? 0 : 1;
}
