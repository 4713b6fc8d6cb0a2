// SPDX-License-Identifier: MIT
/*
 * The public unwinder (ustack/unwind.h) on this very process: a chain of
 * known functions runs on a thread whose stack is a buffer of ours, takes
 * its registers and glibc's backtrace() at the same point, and the
 * unwinder must give the same return addresses from a copy of that stack,
 * with mappings from the pid, from a list we fill, and from a callback.
 * Also: the opts rules (sz) and a mapping with the wrong build ID.
 */
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ustack/unwind.h>
#include "test.h"

#define STACK_SIZE (256 * 1024)
#define NOINL __attribute__((noinline, noipa))

struct capture {
	struct ustack_regs regs;
	void *bt[64];
	int nbt;
	uint8_t *copy;      /* sp .. top of the thread's stack */
	size_t copy_size;
	uint64_t copy_addr;
	uint8_t *stack;     /* the thread's stack buffer */
};

static struct capture cap;
volatile int unwinder_sink;

/* Registers at a pc inside this function, then backtrace() right after:
 * its entries 1.. are this function's callers, which are the unwinder's
 * frames 1.. (frame 0 is the pc here, entry 0 a pc in here too). */
NOINL void uw_leaf(void)
{
	uint64_t pc, sp, fp;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(pc), "=r"(sp), "=r"(fp));
	cap.regs = (struct ustack_regs){ pc, sp, fp };
	cap.nbt = backtrace(cap.bt, 64);
	cap.copy_addr = sp;
	cap.copy_size = (uint64_t)(uintptr_t)(cap.stack + STACK_SIZE) - sp;
	cap.copy = malloc(cap.copy_size);
	if (cap.copy)
		memcpy(cap.copy, (void *)(uintptr_t)sp, cap.copy_size);
	unwinder_sink++;
}

NOINL void uw_mid(int n)
{
	if (n > 1)
		uw_mid(n - 1);
	else
		uw_leaf();
	unwinder_sink++;
}

static void *uw_thread(void *arg)
{
	uw_mid(3);
	unwinder_sink++;
	return arg;
}

static int take(void)
{
	pthread_attr_t a;
	pthread_t t;

	cap.stack = aligned_alloc(4096, STACK_SIZE);
	if (!cap.stack)
		return -1;
	pthread_attr_init(&a);
	pthread_attr_setstack(&a, cap.stack, STACK_SIZE);
	if (pthread_create(&t, &a, uw_thread, NULL))
		return -1;
	pthread_join(t, NULL);
	pthread_attr_destroy(&a);
	return cap.copy ? 0 : -1;
}

/* frames 1.. against backtrace()'s entries past the one in uw_leaf (under
 * ASan, backtrace() is intercepted and entry 0 is in the interceptor) */
static void check_frames(const struct ustack_frame *f, int n, unsigned int stop)
{
	int k = -1;

	for (int i = 0; i < cap.nbt && k < 0; i++)
		if ((uint64_t)(uintptr_t)cap.bt[i] > cap.regs.pc &&
		    (uint64_t)(uintptr_t)cap.bt[i] - cap.regs.pc < 256)
			k = i;
	CHECK(k >= 0 && k <= 1);
	/* uw_leaf, uw_mid x3, uw_thread, start_thread, clone3 */
	CHECK(n >= 6);
	CHECK(cap.nbt - k >= 6);
	CHECK_EQ(f[0].method, USTACK_METHOD_REGS);
	CHECK(f[0].flags & USTACK_FRAME_EXACT_PC);
	CHECK_EQ_U64(f[0].pc, cap.regs.pc);
	for (int i = 1; k + i < cap.nbt && i < n; i++) {
		CHECK_EQ_U64(f[i].pc, (uint64_t)(uintptr_t)cap.bt[k + i]);
		CHECK(!(f[i].flags & USTACK_FRAME_EXACT_PC));
		CHECK(f[i].method == USTACK_METHOD_CFI || f[i].method == USTACK_METHOD_SFRAME);
	}
	/* as far as backtrace() (which may stop one frame earlier or later) */
	CHECK(n >= cap.nbt - k - 1 && n <= cap.nbt - k + 1);
	CHECK(stop == USTACK_STOP_OUTERMOST);
}

static void check_names(struct ustack_unwinder *u, const struct ustack_frame *f)
{
	static const char *const want[] = { "uw_leaf", "uw_mid", "uw_mid", "uw_mid", "uw_thread" };
	struct ustack_frame_info fi;

	for (int i = 0; i < 5; i++) {
		fi = (struct ustack_frame_info){ .sz = sizeof(fi) };
		CHECK_EQ(ustack_unwinder__describe(u, &f[i], &fi), 0);
		CHECK_STR(fi.symbol, want[i]);
		CHECK(fi.has_table);
		CHECK(fi.path && strstr(fi.path, program_invocation_short_name));
		CHECK(fi.build_id_size == 20);
	}
}

static void test_pid_stack_copy(void)
{
	struct ustack_unwinder_opts o = { .sz = sizeof(o), .pid = getpid() };
	struct ustack_unwind_opts uo = { .sz = sizeof(uo), .stack = cap.copy,
					 .stack_size = cap.copy_size, .stack_addr = cap.copy_addr };
	struct ustack_unwinder *u = ustack_unwinder__new(&o);
	struct ustack_frame f[64];
	unsigned int stop = 99;
	int n;

	CHECK(u);
	n = ustack_unwinder__unwind(u, &cap.regs, &uo, f, 64, &stop);
	check_frames(f, n, stop);
	check_names(u, f);
	/* a buffer shorter than the stack: the depth limit */
	CHECK_EQ(ustack_unwinder__unwind(u, &cap.regs, &uo, f, 3, &stop), 3);
	CHECK_EQ(stop, USTACK_STOP_DEPTH);
	ustack_unwinder__free(u);
}

/* USTACK_UNWIND_FP_UNKNOWN: the value of regs.fp is never used (the same
 * frames with the real rbp and with garbage), and the walk is the one
 * with rbp known, or a prefix of it that ends with no-info where a frame's
 * CFA needed rbp (this file's frames do in a build with frame pointers,
 * as the sanitizer build is) */
static void test_fp_unknown_flag(void)
{
	struct ustack_unwinder_opts o = { .sz = sizeof(o), .pid = getpid() };
	struct ustack_unwind_opts uo = { .sz = sizeof(uo), .stack = cap.copy,
					 .stack_size = cap.copy_size, .stack_addr = cap.copy_addr };
	struct ustack_unwinder *u = ustack_unwinder__new(&o);
	struct ustack_regs bad = cap.regs;
	struct ustack_frame f[64], g[64], h[64];
	unsigned int sf, sg, sh;
	int nf, ng, nh;

	CHECK(u);
	nf = ustack_unwinder__unwind(u, &cap.regs, &uo, f, 64, &sf);
	uo.flags = USTACK_UNWIND_FP_UNKNOWN;
	ng = ustack_unwinder__unwind(u, &cap.regs, &uo, g, 64, &sg);
	bad.fp = cap.copy_addr + 8; /* inside the stack, aligned: plausible */
	nh = ustack_unwinder__unwind(u, &bad, &uo, h, 64, &sh);
	CHECK_EQ(nh, ng);
	CHECK_EQ(sh, sg);
	for (int i = 0; i < ng; i++)
		CHECK_EQ_U64(h[i].pc, g[i].pc);
	CHECK(ng >= 1 && ng <= nf);
	for (int i = 0; i < ng; i++)
		CHECK_EQ_U64(g[i].pc, f[i].pc);
	if (ng < nf)
		CHECK_EQ(sg, USTACK_STOP_NO_INFO);
	else
		CHECK_EQ(sg, sf);
	ustack_unwinder__free(u);
}

/* /proc/self/maps -> file mappings, as an embedder would fill them */
struct maps {
	struct ustack_mapping m[512];
	char paths[512][256];
	int n;
	int asked;
};

static int read_maps(struct maps *mp)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	if (!f)
		return -1;
	mp->n = 0;
	while (mp->n < 512 && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char perm[8], path[256] = "";

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %255s", &s, &e, perm, &off, path) < 4 ||
		    path[0] != '/')
			continue;
		strcpy(mp->paths[mp->n], path);
		mp->m[mp->n] = (struct ustack_mapping){
			.sz = sizeof(struct ustack_mapping), .start = s, .end = e, .file_offset = off,
			.path = mp->paths[mp->n], .flags = perm[2] == 'x' ? USTACK_MAPPING_EXEC : 0 };
		mp->n++;
	}
	fclose(f);
	return mp->n ? 0 : -1;
}

static int self_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	/* our own memory, where the copy says the stack was */
	const struct capture *c = ctx;

	if (addr < c->copy_addr || addr - c->copy_addr + len > c->copy_size)
		return -EFAULT;
	memcpy(buf, c->copy + (addr - c->copy_addr), len);
	return 0;
}

static void test_list_and_read_callback(void)
{
	static struct maps mp;
	struct ustack_unwind_opts uo = { .sz = sizeof(uo), .read = self_read, .read_ctx = &cap };
	struct ustack_unwinder *u = ustack_unwinder__new(NULL);
	struct ustack_frame f[64];
	unsigned int stop;
	int n;

	CHECK(u);
	CHECK_EQ(read_maps(&mp), 0);
	for (int i = 0; i < mp.n; i++)
		CHECK_EQ(ustack_unwinder__add_mapping(u, &mp.m[i]), 0);
	n = ustack_unwinder__unwind(u, &cap.regs, &uo, f, 64, &stop);
	check_frames(f, n, stop);
	check_names(u, f);
	ustack_unwinder__free(u);
}

static int find_cb(void *ctx, uint64_t pc, struct ustack_mapping *out)
{
	struct maps *mp = ctx;

	mp->asked++;
	for (int i = 0; i < mp->n; i++)
		if (pc >= mp->m[i].start && pc < mp->m[i].end) {
			*out = mp->m[i];
			return 0;
		}
	return -ENOENT;
}

static void test_find_callback(void)
{
	static struct maps mp;
	struct ustack_unwinder_opts o = { .sz = sizeof(o), .find_mapping = find_cb,
					  .find_mapping_ctx = &mp };
	struct ustack_unwind_opts uo = { .sz = sizeof(uo), .stack = cap.copy,
					 .stack_size = cap.copy_size, .stack_addr = cap.copy_addr };
	struct ustack_unwinder *u;
	struct ustack_frame f[64];
	unsigned int stop;
	int n, asked;

	CHECK_EQ(read_maps(&mp), 0);
	u = ustack_unwinder__new(&o);
	CHECK(u);
	n = ustack_unwinder__unwind(u, &cap.regs, &uo, f, 64, &stop);
	check_frames(f, n, stop);
	asked = mp.asked;
	/* the test binary's text and libc's: at least 2 mappings, each asked once */
	CHECK(asked >= 2 && asked <= n);
	CHECK_EQ(ustack_unwinder__unwind(u, &cap.regs, &uo, f, 64, &stop), n);
	CHECK_EQ(mp.asked, asked);
	ustack_unwinder__free(u);
}

static void test_build_id_mismatch(void)
{
	static struct maps mp;
	static const uint8_t wrong[20] = { 1, 2, 3 };
	struct ustack_unwind_opts uo = { .sz = sizeof(uo), .stack = cap.copy,
					 .stack_size = cap.copy_size, .stack_addr = cap.copy_addr };
	struct ustack_unwinder *u = ustack_unwinder__new(NULL);
	struct ustack_frame_info fi = { .sz = sizeof(fi) };
	struct ustack_frame f[64];
	ustack_print_fn_t prev;
	unsigned int stop;
	int n;

	CHECK(u);
	CHECK_EQ(read_maps(&mp), 0);
	for (int i = 0; i < mp.n; i++) {
		if (strstr(mp.paths[i], program_invocation_short_name)) {
			mp.m[i].build_id = wrong;
			mp.m[i].build_id_size = sizeof(wrong);
		}
		CHECK_EQ(ustack_unwinder__add_mapping(u, &mp.m[i]), 0);
	}
	/* the warning is expected: not printed */
	prev = ustack_set_print(NULL);
	n = ustack_unwinder__unwind(u, &cap.regs, &uo, f, 64, &stop);
	ustack_set_print(prev);
	/* no table for our own code: uw_leaf's caller is found by the frame
	 * pointer heuristic or not at all; never by CFI/SFrame */
	CHECK(n >= 1);
	CHECK(n < 2 || f[1].method == USTACK_METHOD_FP);
	CHECK_EQ(ustack_unwinder__describe(u, &f[0], &fi), 0);
	CHECK(!fi.has_table);
	CHECK(!fi.symbol);
	CHECK(strstr(fi.path, program_invocation_short_name));
	ustack_unwinder__free(u);
}

/* The table-file hook: our executable's mappings name a path that does
 * not exist; the hook gives the real file, whose tables then unwind
 * every frame (without it, no table: see test_build_id_mismatch). */
struct table_hook {
	const char *real;
	int asked;
};

static int table_file_cb(void *ctx, const struct ustack_mapping *m, char *path, size_t path_sz)
{
	struct table_hook *h = ctx;

	h->asked++;
	if (!m->path || strncmp(m->path, "/nonexistent", 12))
		return -ENOENT;
	return snprintf(path, path_sz, "%s", h->real) < (int)path_sz ? 0 : -ENOENT;
}

static void test_table_file_hook(void)
{
	static struct maps mp;
	static char exe[256];
	struct table_hook h = { .real = exe };
	struct ustack_unwinder_opts o = { .sz = sizeof(o), .find_table_file = table_file_cb,
					  .find_table_file_ctx = &h };
	struct ustack_unwind_opts uo = { .sz = sizeof(uo), .stack = cap.copy,
					 .stack_size = cap.copy_size, .stack_addr = cap.copy_addr };
	struct ustack_unwinder *u;
	struct ustack_frame f[64];
	unsigned int stop;
	int n, moved = 0;

	CHECK_EQ(read_maps(&mp), 0);
	u = ustack_unwinder__new(&o);
	CHECK(u);
	for (int i = 0; i < mp.n; i++) {
		if (strstr(mp.paths[i], program_invocation_short_name)) {
			snprintf(exe, sizeof(exe), "%s", mp.paths[i]);
			mp.m[i].path = "/nonexistent/test_unwinder";
			moved++;
		}
		CHECK_EQ(ustack_unwinder__add_mapping(u, &mp.m[i]), 0);
	}
	CHECK(moved > 0);
	n = ustack_unwinder__unwind(u, &cap.regs, &uo, f, 64, &stop);
	check_frames(f, n, stop);
	CHECK(n >= 2 && f[1].method != USTACK_METHOD_FP);
	CHECK(h.asked >= 2); /* our executable and libc, once each */
	ustack_unwinder__free(u);
}

static void test_opts_sz(void)
{
	struct {
		struct ustack_unwinder_opts o;
		uint64_t newer;
	} big = { .o = { .sz = sizeof(big) } };
	struct ustack_unwinder *u;
	struct ustack_mapping m = { .sz = sizeof(m), .start = 0x1000, .end = 0x2000,
				    .path = "/nonexistent" };
	struct ustack_unwind_opts uo = { .sz = sizeof(uo) };
	struct ustack_frame f[4];
	/* an older caller: only sz and pid */
	struct ustack_unwinder_opts old = { .sz = offsetof(struct ustack_unwinder_opts, find_mapping) };

	/* NULL: defaults */
	u = ustack_unwinder__new(NULL);
	CHECK(u);
	ustack_unwinder__free(u);
	/* a newer caller whose extra fields are zero: accepted */
	u = ustack_unwinder__new(&big.o);
	CHECK(u);
	/* no memory to read: refused */
	CHECK_EQ(ustack_unwinder__unwind(u, &cap.regs, &uo, f, 4, NULL), -EINVAL);
	CHECK_EQ(ustack_unwinder__add_mapping(u, &m), 0);
	m.end = m.start;
	CHECK_EQ(ustack_unwinder__add_mapping(u, &m), -EINVAL);
	m.end = 0x2000;
	m.path = NULL;
	CHECK_EQ(ustack_unwinder__add_mapping(u, &m), -EINVAL);
	ustack_unwinder__free(u);
	/* ... with a non-zero one: -EINVAL */
	big.newer = 1;
	errno = 0;
	CHECK(!ustack_unwinder__new(&big.o));
	CHECK_EQ(errno, EINVAL);
	/* sz smaller than the sz field itself */
	big.o.sz = 4;
	CHECK(!ustack_unwinder__new(&big.o));
	CHECK_EQ(errno, EINVAL);
	/* an older, shorter struct */
	old.pid = 0;
	u = ustack_unwinder__new(&old);
	CHECK(u);
	ustack_unwinder__free(u);
}

int main(void)
{
	if (take()) {
		printf("FAIL test_unwinder: could not run the capture thread\n");
		return 1;
	}
	RUN(test_pid_stack_copy);
	RUN(test_fp_unknown_flag);
	RUN(test_list_and_read_callback);
	RUN(test_find_callback);
	RUN(test_build_id_mismatch);
	RUN(test_table_file_hook);
	RUN(test_opts_sz);
	free(cap.copy);
	free(cap.stack);
	TEST_EXIT();
}
