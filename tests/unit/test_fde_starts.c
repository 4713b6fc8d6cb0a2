// SPDX-License-Identifier: MIT
/*
 * ustack_py_fde_starts() (src/python/pyeval_cold.c), the reader of an
 * ELF's .eh_frame_hdr search table that finds CPython's cold eval part,
 * against readelf: the table's starts are the pc= starts of the FDEs
 * `readelf --debug-dump=frames` prints for .eh_frame, in ascending order,
 * for this test's own executable, libc and (where installed) python3.
 * A damaged header: no table (-ENOENT), a count past the section
 * (-EBADMSG). fuzz_elf feeds it any bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "elf/elf_file.h"
#include "python/pyproc.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* the FDE starts readelf prints for .eh_frame, sorted; -1 if readelf
 * is missing or failed */
static long readelf_starts(const char *path, uint64_t **out)
{
	char cmd[4200], line[512];
	size_t n = 0, cap = 0;
	int in_eh = 0, st;
	uint64_t *v = NULL;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames '%s' 2>/dev/null", path);
	if (!(f = popen(cmd, "r")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *pc;

		if (!strncmp(line, "Contents of the ", 16)) {
			in_eh = !strncmp(line + 16, ".eh_frame section", 17);
			continue;
		}
		if (!in_eh || !strstr(line, " FDE ") || !(pc = strstr(line, "pc=")))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				break;
		}
		v[n++] = strtoull(pc + 3, NULL, 16);
	}
	st = pclose(f);
	/* readelf exits 1 after complete output for files it warns about */
	if (!v || st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) > 1 || !n) {
		free(v);
		return -1;
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	*out = v;
	return (long)n;
}

/* @path's table against readelf's: 1 checked, 0 skipped (no file, no
 * readelf) */
static int same_as_readelf(const char *path)
{
	struct ustack_elf *e;
	uint64_t *ours = NULL, *theirs = NULL;
	char real[4096];
	size_t n = 0;
	long m;

	/* /proc/self/exe in readelf's command line would be readelf */
	if (access(path, R_OK) || !realpath(path, real))
		return 0;
	path = real;
	m = readelf_starts(path, &theirs);
	if (m < 0)
		return 0;
	e = ustack_elf__open(path);
	CHECK(e);
	CHECK_EQ(ustack_py_fde_starts(e, &ours, &n), 0);
	CHECK_EQ(n, m);
	for (size_t i = 0; i < n; i++) {
		if (ours[i] != theirs[i])
			fprintf(stderr, "%s: start %zu: 0x%" PRIx64 ", readelf 0x%" PRIx64 "\n", path, i,
				ours[i], theirs[i]);
		CHECK_EQ_U64(ours[i], theirs[i]);
	}
	free(ours);
	free(theirs);
	ustack_elf__close(e);
	return 1;
}

static void test_fde_starts_readelf(void)
{
	const char *paths[] = { "/proc/self/exe", "/lib/x86_64-linux-gnu/libc.so.6",
				"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3" };
	int checked = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		checked += same_as_readelf(paths[i]);
	if (!checked)
		SKIP("readelf (binutils) not installed");
	CHECK(checked >= 2);
}

/* a copy of this executable with its .eh_frame_hdr changed at @off */
static struct ustack_elf *patched(uint8_t **buf, size_t off, uint8_t byte, size_t *size)
{
	FILE *f = fopen("/proc/self/exe", "rb");
	long sz;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	sz = ftell(f);
	rewind(f);
	*buf = malloc((size_t)sz);
	if (!*buf || fread(*buf, 1, (size_t)sz, f) != (size_t)sz) {
		fclose(f);
		return NULL;
	}
	fclose(f);
	*size = (size_t)sz;
	(*buf)[off] = byte;
	return ustack_elf__open_mem(*buf, *size, "patched");
}

static void test_fde_starts_damaged(void)
{
	struct ustack_elf *e = ustack_elf__open("/proc/self/exe");
	struct ustack_elf_section h;
	uint64_t *starts = NULL;
	uint8_t *buf = NULL;
	size_t n = 0, size, hoff;
	uint64_t off;

	CHECK(e);
	CHECK_EQ(ustack_elf__section(e, ".eh_frame_hdr", &h), 0);
	CHECK(h.data && h.size >= 12);
	CHECK_EQ(ustack_elf__vaddr_to_offset(e, h.addr, &off), 0);
	hoff = (size_t)off;
	ustack_elf__close(e);

	/* another version: not a table this reads */
	e = patched(&buf, hoff, 2, &size);
	CHECK(e);
	CHECK_EQ(ustack_py_fde_starts(e, &starts, &n), -ENOENT);
	ustack_elf__close(e);
	free(buf);
	/* a count whose table runs past the section (its high byte set) */
	e = patched(&buf, hoff + 11, 0x7f, &size);
	CHECK(e);
	CHECK_EQ(ustack_py_fde_starts(e, &starts, &n), -EBADMSG);
	ustack_elf__close(e);
	free(buf);
}

int main(void)
{
	RUN(test_fde_starts_readelf);
	RUN(test_fde_starts_damaged);
	TEST_EXIT();
}
