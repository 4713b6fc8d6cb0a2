// SPDX-License-Identifier: MIT
/* src/common/cache_dir.c: the cache directory is kept within its budget,
 * least recently used first, and never loses the file just written or a
 * file of another kind. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cache_dir.h"
#include "test.h"

static char dir[] = "/tmp/ustack-cache-XXXXXX";

/* a file of @size bytes whose mtime is @age seconds ago */
static void put(const char *name, size_t size, time_t age)
{
	char path[256];
	struct timespec ts[2];
	void *buf = calloc(1, size ? size : 1);
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && buf);
	CHECK_EQ(write(fd, buf, size), (ssize_t)size);
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= age;
	ts[1] = ts[0];
	CHECK_EQ(futimens(fd, ts), 0);
	close(fd);
	free(buf);
}

static int there(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static void test_trim_oldest_first(void)
{
	static const char *const kinds[] = { ".dwarf", ".zstd-dec", NULL };

	put("aa.dwarf", 4000, 400);     /* oldest */
	put("bb.zstd-dec", 3000, 300);
	put("cc.dwarf", 2000, 200);
	put("dd.dwarf", 1000, 100);     /* newest */
	put("ee.dwarf", 5000, 1000);    /* oldest of all, but just written */
	put("notes.txt", 9000, 5000);   /* another kind: never counted */
	put("ff.dwarf.123.tmp", 9000, 5000); /* being written */
	/* 15000 bytes of copies; at most 8000: aa, then bb go, ee is kept */
	CHECK_EQ(ustack_cache_trim(dir, "", kinds, 8000, "ee.dwarf"), 2);
	CHECK(!there("aa.dwarf") && !there("bb.zstd-dec"));
	CHECK(there("cc.dwarf") && there("dd.dwarf") && there("ee.dwarf"));
	CHECK(there("notes.txt") && there("ff.dwarf.123.tmp"));
	/* within the budget: nothing goes */
	CHECK_EQ(ustack_cache_trim(dir, "", kinds, 8000, NULL), 0);
	/* a file used is touched: it outlives an older-written one */
	{
		char path[256];
		int fd;

		snprintf(path, sizeof(path), "%s/cc.dwarf", dir);
		fd = open(path, O_RDONLY);
		CHECK(fd >= 0);
		ustack_cache_touch(fd);
		close(fd);
	}
	CHECK_EQ(ustack_cache_trim(dir, "", kinds, 7000, "ee.dwarf"), 1);
	CHECK(there("cc.dwarf") && !there("dd.dwarf") && there("ee.dwarf"));
}

static void test_trim_by_prefix(void)
{
	put("kallsyms-0000000000000001", 3000, 300);
	put("kallsyms-0000000000000002", 3000, 200);
	put("kallsyms-0000000000000003", 3000, 100);
	put("other-0000000000000001", 3000, 900);
	CHECK_EQ(ustack_cache_trim(dir, "kallsyms-", NULL, 6000, "kallsyms-0000000000000003"), 1);
	CHECK(!there("kallsyms-0000000000000001"));
	CHECK(there("kallsyms-0000000000000002") && there("kallsyms-0000000000000003"));
	CHECK(there("other-0000000000000001"));
	CHECK(ustack_cache_trim("/nonexistent-ustack-dir", "", NULL, 0, NULL) < 0);
}

static void test_budget_from_env(void)
{
	unsetenv("USTACK_CACHE_MAX_MB");
	CHECK_EQ_U64(ustack_cache_debug_budget(), USTACK_CACHE_DEBUG_MAX_MB << 20);
	setenv("USTACK_CACHE_MAX_MB", "3", 1);
	CHECK_EQ_U64(ustack_cache_debug_budget(), 3ull << 20);
	setenv("USTACK_CACHE_MAX_MB", "0", 1);
	CHECK_EQ_U64(ustack_cache_debug_budget(), UINT64_MAX);
	setenv("USTACK_CACHE_MAX_MB", "lots", 1);
	CHECK_EQ_U64(ustack_cache_debug_budget(), USTACK_CACHE_DEBUG_MAX_MB << 20);
	unsetenv("USTACK_CACHE_MAX_MB");
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(dir))
		return 1;
	RUN(test_trim_oldest_first);
	RUN(test_trim_by_prefix);
	RUN(test_budget_from_env);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		return 1;
	TEST_EXIT();
}
