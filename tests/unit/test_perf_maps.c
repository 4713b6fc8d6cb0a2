// SPDX-License-Identifier: MIT
/* The recorder's mapping picture (src/record/recmaps.c). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ustack/ustack.h>
#include "record/recmaps.h"
#include "test.h"

static struct ustack_modcache *mc;

static uint64_t file_of(struct ustack_recmaps *rm, uint32_t pid, uint64_t pc, uint64_t *pgoff)
{
	const struct pm_vma *v = ustack_recmaps__find(rm, pid, pc);
	struct pm_file *f;

	if (!v)
		return 0;
	*pgoff = v->pgoff + (pc - v->start);
	f = ustack_recmaps__file(rm, v->file);
	return f ? f->id : ~0ull;
}

static void test_overlap_split(void)
{
	struct ustack_recmaps *rm = ustack_recmaps__new(mc);
	struct ustack_file_map fm;
	uint64_t off;

	CHECK(rm);
	CHECK_EQ(ustack_recmaps__mmap(rm, 10, 0x1000, 0x9000, 0, 8, 1, 100, NULL, 0, "/a"), 0);
	CHECK_EQ(file_of(rm, 10, 0x1000, &off), 1);
	CHECK_EQ(file_of(rm, 10, 0x9fff, &off), 1);
	CHECK_EQ_U64(off, 0x8fff);
	/* a new file in the middle splits /a in two */
	CHECK_EQ(ustack_recmaps__mmap(rm, 10, 0x4000, 0x2000, 0x10000, 8, 1, 200, NULL, 0, "/b"), 0);
	CHECK_EQ(file_of(rm, 10, 0x3fff, &off), 1);
	CHECK_EQ_U64(off, 0x2fff);
	CHECK_EQ(file_of(rm, 10, 0x4000, &off), 2);
	CHECK_EQ_U64(off, 0x10000);
	CHECK_EQ(file_of(rm, 10, 0x6000, &off), 1);
	CHECK_EQ_U64(off, 0x5000); /* the right part keeps its file offsets */
	CHECK(!ustack_recmaps__find(rm, 10, 0xa000));
	CHECK(!ustack_recmaps__find(rm, 11, 0x1000));
	/* the same file again: same id; anonymous exec memory: no file */
	CHECK_EQ(ustack_recmaps__mmap(rm, 10, 0x20000, 0x1000, 0, 8, 1, 100, NULL, 0, "/a"), 0);
	CHECK_EQ(file_of(rm, 10, 0x20000, &off), 1);
	CHECK_EQ(ustack_recmaps__mmap(rm, 10, 0x30000, 0x1000, 0, 0, 0, 0, NULL, 0, ""), 0);
	CHECK_EQ_U64(file_of(rm, 10, 0x30000, &off), ~0ull);
	/* deleted file: name without the suffix, flagged */
	CHECK_EQ(ustack_recmaps__mmap(rm, 10, 0x40000, 0x1000, 0, 8, 1, 300, NULL, 0, "/c (deleted)"), 0);
	CHECK_EQ(ustack_recmaps__file_map(rm, 3, &fm), 0);
	CHECK_STR(fm.path, "/c");
	CHECK(fm.flags & USTACK_VMA_DELETED);
	CHECK_EQ(fm.inode, 300);
	CHECK_EQ(fm.kind, USTACK_VMA_FILE);
	CHECK_EQ(ustack_recmaps__file_map(rm, 4, &fm), -ENOENT);
	CHECK_EQ(ustack_recmaps__file_map(rm, 0, &fm), -ENOENT);
	/* the same inode under another path: the inode was recycled, a
	 * new file (procmaps' generation rule) */
	CHECK_EQ(ustack_recmaps__mmap(rm, 11, 0x1000, 0x1000, 0, 8, 1, 100, NULL, 0, "/a2"), 0);
	CHECK_EQ(file_of(rm, 11, 0x1000, &off), 4);
	CHECK_EQ(ustack_recmaps__file_map(rm, 4, &fm), 0);
	CHECK_EQ(fm.generation, 1);
	/* every vDSO is one file, whatever its address */
	CHECK_EQ(ustack_recmaps__mmap(rm, 10, 0x50000, 0x2000, 0, 0, 0, 0, NULL, 0, "[vdso]"), 0);
	CHECK_EQ(ustack_recmaps__mmap(rm, 11, 0x70000, 0x2000, 0, 0, 0, 0, NULL, 0, "[vdso]"), 0);
	CHECK_EQ(file_of(rm, 10, 0x50000, &off), 5);
	CHECK_EQ(file_of(rm, 11, 0x71000, &off), 5);
	CHECK_EQ_U64(off, 0x1000);
	/* an empty or wrapping range is refused */
	CHECK_EQ(ustack_recmaps__mmap(rm, 10, 0x1000, 0, 0, 8, 1, 100, NULL, 0, "/a"), -EINVAL);
	CHECK_EQ(ustack_recmaps__mmap(rm, 10, ~0ull - 10, 0x1000, 0, 8, 1, 100, NULL, 0, "/a"), -EINVAL);
	ustack_recmaps__free(rm);
}

static void test_fork_exec_exit(void)
{
	struct ustack_recmaps *rm = ustack_recmaps__new(mc);
	uint64_t off;

	CHECK(rm);
	CHECK_EQ(ustack_recmaps__mmap(rm, 10, 0x1000, 0x1000, 0, 8, 1, 100, NULL, 0, "/a"), 0);
	CHECK_EQ(ustack_recmaps__fork(rm, 20, 10), 0);
	CHECK_EQ(file_of(rm, 20, 0x1000, &off), 1);
	ustack_recmaps__exec(rm, 20);
	CHECK(!ustack_recmaps__find(rm, 20, 0x1000));
	CHECK_EQ(file_of(rm, 10, 0x1000, &off), 1); /* the parent is untouched */
	ustack_recmaps__exit(rm, 10);
	CHECK(!ustack_recmaps__find(rm, 10, 0x1000));
	/* pid reuse: a fork to an old pid starts from the new parent */
	CHECK_EQ(ustack_recmaps__mmap(rm, 30, 0x5000, 0x1000, 0, 8, 1, 400, NULL, 0, "/d"), 0);
	CHECK_EQ(ustack_recmaps__mmap(rm, 20, 0x9000, 0x1000, 0, 8, 1, 100, NULL, 0, "/a"), 0);
	CHECK_EQ(ustack_recmaps__fork(rm, 20, 30), 0);
	CHECK(!ustack_recmaps__find(rm, 20, 0x9000));
	CHECK_EQ(file_of(rm, 20, 0x5000, &off), 2);
	ustack_recmaps__free(rm);
}

/* This process, from /proc: our own code resolves to our file and has a row. */
static void test_synthesize_self(void)
{
	struct ustack_recmaps *rm = ustack_recmaps__new(mc);
	uint64_t pc = (uintptr_t)&test_synthesize_self, off;
	const struct pm_vma *v;
	struct pm_file *f;
	struct ustack_row row;
	unsigned int method = 0;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	CHECK(rm && n > 0);
	exe[n] = 0;
	CHECK(ustack_recmaps__synthesize(rm, getpid()) > 0);
	v = ustack_recmaps__find(rm, getpid(), pc);
	CHECK(v);
	f = ustack_recmaps__file(rm, v->file);
	CHECK(f);
	CHECK_STR(f->path, exe);
	CHECK(file_of(rm, getpid(), pc, &off) == f->id);
	ustack_recmaps__set_pid(rm, getpid());
	CHECK_EQ(ustack_recmaps__find_row(rm, pc + 4, &row, &method), 0);
	CHECK(method == USTACK_METHOD_CFI || method == USTACK_METHOD_SFRAME);
	CHECK(ustack_recmaps__is_code(rm, pc));
	ustack_recmaps__file_info(rm, f, getpid());
	CHECK(f->build_id_size == 20);
	/* libc is there too */
	v = ustack_recmaps__find(rm, getpid(), (uintptr_t)&getpid);
	CHECK(v && strstr(ustack_recmaps__file(rm, v->file)->path, "libc"));
	CHECK_EQ(ustack_recmaps__synthesize(rm, 0x7ffffff0), -ESRCH);
	ustack_recmaps__free(rm);
}

int main(void)
{
	mc = ustack_modcache__new(0, USTACK_MODCACHE_COMPILE_CFI);
	RUN(test_overlap_split);
	RUN(test_fork_exec_exit);
	RUN(test_synthesize_self);
	ustack_modcache__free(mc);
	TEST_EXIT();
}
