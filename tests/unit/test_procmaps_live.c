// SPDX-License-Identifier: MIT
/*
 * procmaps against live processes (this test and a child `sleep`), with
 * oracles from outside the project: the text of /proc/PID/maps read here
 * with sscanf, `readelf -n` for build IDs (also on a dump of the vDSO) and
 * `file` for the main executable. Both lookup paths, the PROCMAP_QUERY ioctl
 * and the forced text fallback, must match the oracles and each other.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ustack/procmaps.h>
#include "procmaps/procmaps.h"
#include "test.h"

struct oline {
	unsigned long long start, end, off, ino;
	unsigned int maj, min;
	char perm[5];
	char name[512];
};

/* The oracle: /proc/PID/maps read and split here, independently. */
static int read_oracle(int pid, struct oline *out, int max)
{
	char path[64], line[1024];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (n < max && fgets(line, sizeof(line), f)) {
		struct oline *o = &out[n];
		int pos = 0;

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &o->start, &o->end, o->perm,
			   &o->off, &o->maj, &o->min, &o->ino, &pos) < 7)
			continue;
		snprintf(o->name, sizeof(o->name), "%s", line + pos);
		n++;
	}
	fclose(f);
	return n;
}

static int readelf_build_id(const char *path, char *hex, size_t size)
{
	char cmd[1200], line[512];
	FILE *p;
	int found = 0;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char *b = strstr(line, "Build ID: ");

		if (b && !found) {
			snprintf(hex, size, "%s", b + 10);
			hex[strcspn(hex, " \n")] = 0;
			found = 1;
		}
	}
	pclose(p);
	return found ? 0 : -ENOENT;
}

static void hex_of(const struct ustack_file_map *fm, char *out)
{
	out[0] = 0;
	for (uint32_t i = 0; i < fm->build_id_size; i++)
		sprintf(out + 2 * i, "%02x", fm->build_id[i]);
}

static int have_tool(const char *t)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", t);
	return system(cmd) == 0;
}

/* Every executable file mapping of @pid, via ioctl and text, against the oracle. */
static void check_process(int pid, int *checked_files)
{
	static struct oline ol[4096];
	struct ustack_procmaps_opts to = { .sz = sizeof(to), .flags = USTACK_PROCMAPS_FORCE_TEXT };
	struct ustack_procmaps *pi = ustack_procmaps__open(pid, NULL);
	struct ustack_procmaps *pt = ustack_procmaps__open(pid, &to);
	int n = read_oracle(pid, ol, 4096), files = 0;

	CHECK(pi && pt);
	CHECK(n > 3);
	if (!ustack_procmaps__uses_ioctl(pi)) {
		ustack_procmaps__close(pi);
		ustack_procmaps__close(pt);
		SKIP("PROCMAP_QUERY ioctl missing (ENOTTY): kernel older than 6.11");
	}
	CHECK(!ustack_procmaps__uses_ioctl(pt));
	for (int i = 0; i < n; i++) {
		struct oline *o = &ol[i];
		uint64_t pcs[3] = { o->start, o->start + (o->end - o->start) / 2, o->end - 1 };
		struct ustack_resolved ri[3], rt[3];
		struct ustack_vma vi, vt;
		struct ustack_file_map fi, ft;
		char want[160], got_i[80], got_t[80];
		uint64_t lo, hi;

		if (o->perm[2] != 'x' || o->name[0] != '/')
			continue;
		/* the bounds, with one bare query (for stacks; checked on
		 * these mappings, which do not change while the test runs) */
		CHECK_EQ(ustack_procmaps__bounds(pi, pcs[1], &lo, &hi), 0);
		CHECK_EQ_U64(lo, o->start);
		CHECK_EQ_U64(hi, o->end);
		CHECK_EQ(ustack_procmaps__bounds(pt, pcs[1], &lo, &hi), 0);
		CHECK_EQ_U64(lo, o->start);
		CHECK_EQ_U64(hi, o->end);
		CHECK_EQ(ustack_procmaps__resolve(pi, pcs, 3, ri), 3);
		CHECK_EQ(ustack_procmaps__resolve(pt, pcs, 3, rt), 3);
		for (int k = 0; k < 3; k++) {
			CHECK_EQ(ri[k].kind, USTACK_VMA_FILE);
			CHECK_EQ_U64(ri[k].offset, pcs[k] - o->start + o->off);
			CHECK_EQ_U64(rt[k].offset, ri[k].offset);
			CHECK_EQ_U64(rt[k].file_id, ri[k].file_id); /* one id key per process */
		}
		CHECK_EQ(ustack_procmaps__query(pi, pcs[1], &vi), 0);
		CHECK_EQ(ustack_procmaps__query(pt, pcs[1], &vt), 0);
		CHECK_EQ_U64(vi.start, o->start);
		CHECK_EQ_U64(vi.end, o->end);
		CHECK_EQ_U64(vi.pgoff, o->off);
		CHECK_EQ_U64(vi.inode, o->ino);
		CHECK_EQ(vi.dev_major, o->maj);
		CHECK_EQ(vi.dev_minor, o->min);
		CHECK_STR(vi.name, o->name);
		CHECK_EQ(vi.flags, vt.flags);
		CHECK_EQ_U64(vt.start, vi.start);
		CHECK_STR(vt.name, vi.name);

		CHECK_EQ(ustack_procmaps__file_map(pi, ri[0].file_id, &fi), 0);
		CHECK_EQ(ustack_procmaps__file_map(pt, rt[0].file_id, &ft), 0);
		hex_of(&fi, got_i);
		hex_of(&ft, got_t);
		if (readelf_build_id(o->name, want, sizeof(want)) == 0) {
			CHECK_STR(got_i, want);
			CHECK_STR(got_t, want);
			CHECK_EQ(ft.build_id_source, USTACK_BUILD_ID_ELF);
		} else {
			CHECK_EQ(fi.build_id_size, 0);
			CHECK_EQ(ft.build_id_size, 0);
		}
		files++;
	}
	CHECK(files >= 2);
	*checked_files = files;

	/* an address in no mapping */
	{
		uint64_t pc = 0x1000;
		struct ustack_resolved r;
		struct ustack_vma v;

		CHECK_EQ(ustack_procmaps__resolve(pi, &pc, 1, &r), 0);
		CHECK_EQ(r.kind, USTACK_VMA_UNMAPPED);
		CHECK_EQ(ustack_procmaps__resolve(pt, &pc, 1, &r), 0);
		CHECK_EQ(r.kind, USTACK_VMA_UNMAPPED);
		CHECK_EQ(ustack_procmaps__query(pi, pc, &v), -ENOENT);
		CHECK_EQ(ustack_procmaps__query(pt, pc, &v), -ENOENT);
		CHECK_EQ(ustack_procmaps__bounds(pi, pc, &v.start, &v.end), -ENOENT);
		CHECK_EQ(ustack_procmaps__bounds(pt, pc, &v.start, &v.end), -ENOENT);
	}
	ustack_procmaps__close(pi);
	ustack_procmaps__close(pt);
}

static void test_self(void)
{
	int files = 0;

	if (!have_tool("readelf"))
		SKIP("readelf not installed");
	check_process(getpid(), &files);
	printf("# self: %d executable file mappings checked\n", files);
}

static pid_t spawn_sleep(void)
{
	pid_t pid = fork();
	char path[64], line[64];

	if (pid == 0) {
		execlp("sleep", "sleep", "300", (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	/* Wait until ld.so is done mapping: sleep blocked in clock_nanosleep
	 * (230) or nanosleep (35). libc appearing in the maps is not enough
	 * (its segments are mapped one after the other), and a fixed delay
	 * is too short on a loaded machine. Polled, for up to 30 s. */
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	for (int tries = 0; tries < 6000; tries++) {
		FILE *f = fopen(path, "r");
		int nr = -1;

		if (f && fgets(line, sizeof(line), f))
			nr = atoi(line);
		if (f)
			fclose(f);
		if (nr == 230 || nr == 35)
			return pid;
		usleep(5000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static void test_child_sleep(void)
{
	pid_t pid;
	int files = 0;

	if (!have_tool("readelf") || !have_tool("sleep"))
		SKIP("readelf or sleep not installed");
	pid = spawn_sleep();
	CHECK(pid > 0);
	check_process(pid, &files);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	printf("# sleep: %d executable file mappings checked\n", files);
}

/* `file` names the build ID too: a second oracle for the main executable. */
static void test_file_oracle(void)
{
	char exe[512], cmd[700], out[1024], hex[80];
	struct ustack_procmaps *pm;
	struct ustack_file_map fm;
	struct ustack_resolved r;
	uint64_t pc = (uint64_t)(uintptr_t)&test_file_oracle;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *p;
	char *b;

	if (!have_tool("file"))
		SKIP("file not installed");
	CHECK(n > 0);
	exe[n] = 0;
	snprintf(cmd, sizeof(cmd), "file -L '%s'", exe);
	p = popen(cmd, "r");
	CHECK(p);
	out[0] = 0;
	if (!fgets(out, sizeof(out), p))
		out[0] = 0;
	pclose(p);
	b = strstr(out, "BuildID[");
	if (!b)
		SKIP("the test binary has no build ID (%.150s)", exe);
	b = strchr(b, '=');
	CHECK(b);
	pm = ustack_procmaps__open(0, NULL);
	CHECK(pm);
	CHECK_EQ(ustack_procmaps__resolve(pm, &pc, 1, &r), 1);
	CHECK_EQ(r.kind, USTACK_VMA_FILE);
	CHECK_EQ(ustack_procmaps__file_map(pm, r.file_id, &fm), 0);
	CHECK_STR(fm.path, exe);
	hex_of(&fm, hex);
	CHECK(!strncmp(b + 1, hex, strlen(hex)) && strlen(hex) == 40);
	ustack_procmaps__close(pm);
}

/* The vDSO has no file: its build ID comes from its image in memory. Oracle:
 * readelf -n on a dump of the same bytes. */
static void test_vdso(void)
{
	struct ustack_procmaps *pm = ustack_procmaps__open(0, NULL);
	struct ustack_vma v;
	struct ustack_file_map fm;
	struct ustack_resolved r;
	char tmp[] = "/tmp/ustack-vdso-XXXXXX", want[80], got[80];
	uint64_t addr = 0, pc;
	int fd, found = 0;

	CHECK(pm);
	while (!ustack_procmaps__next(pm, addr, USTACK_VMA_EXEC, &v) && v.end) {
		if (v.kind == USTACK_VMA_VDSO) {
			found = 1;
			break;
		}
		addr = v.end;
	}
	if (!found) {
		ustack_procmaps__close(pm);
		SKIP("no [vdso] in this process");
	}
	CHECK_STR(v.name, "[vdso]");
	CHECK(v.file_id != 0);
	pc = v.start + 0x10;
	CHECK_EQ(ustack_procmaps__resolve(pm, &pc, 1, &r), 1);
	CHECK_EQ(r.kind, USTACK_VMA_VDSO);
	CHECK_EQ_U64(r.offset, 0x10);
	CHECK_EQ_U64(r.file_id, v.file_id);
	CHECK_EQ(ustack_procmaps__file_map(pm, r.file_id, &fm), 0);
	CHECK_EQ(fm.kind, USTACK_VMA_VDSO);
	fd = mkstemp(tmp);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, (void *)(uintptr_t)v.start, v.end - v.start), (long long)(v.end - v.start));
	close(fd);
	if (readelf_build_id(tmp, want, sizeof(want))) {
		unlink(tmp);
		CHECK_EQ(fm.build_id_size, 0);
		ustack_procmaps__close(pm);
		return;
	}
	unlink(tmp);
	hex_of(&fm, got);
	CHECK_STR(got, want);
	ustack_procmaps__close(pm);
}

/* A mapped file that was then unlinked: still a file, flagged deleted, and
 * its build ID still readable (through map_files). */
static void test_deleted_file(void)
{
	char tmp[] = "/tmp/ustack-deleted-XXXXXX", want[80], got[80], cmd[256];
	const char *src = "/bin/true";
	struct ustack_procmaps_opts to = { .sz = sizeof(to), .flags = USTACK_PROCMAPS_FORCE_TEXT };
	struct ustack_procmaps *pm[2];
	struct stat st;
	void *map;
	int fd;

	if (!have_tool("readelf") || readelf_build_id(src, want, sizeof(want)))
		SKIP("readelf or a build ID in %s missing", src);
	fd = mkstemp(tmp);
	CHECK(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "cp %s %s", src, tmp);
	CHECK_EQ(system(cmd), 0);
	fd = open(tmp, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ(fstat(fd, &st), 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	CHECK(map != MAP_FAILED);
	unlink(tmp);
	pm[0] = ustack_procmaps__open(0, NULL);
	pm[1] = ustack_procmaps__open(0, &to);
	for (int i = 0; i < 2; i++) {
		struct ustack_vma v;
		struct ustack_file_map fm;
		struct ustack_resolved r;
		uint64_t pc = (uint64_t)(uintptr_t)map + 0x40;

		CHECK(pm[i]);
		CHECK_EQ(ustack_procmaps__query(pm[i], pc, &v), 0);
		CHECK_EQ(v.kind, USTACK_VMA_FILE);
		CHECK_STR(v.name, tmp);
		CHECK(v.flags & USTACK_VMA_DELETED);
		CHECK_EQ_U64(v.inode, st.st_ino);
		CHECK_EQ(ustack_procmaps__resolve(pm[i], &pc, 1, &r), 1);
		CHECK_EQ_U64(r.offset, 0x40);
		CHECK_EQ(ustack_procmaps__file_map(pm[i], r.file_id, &fm), 0);
		CHECK(fm.flags & USTACK_VMA_DELETED);
		hex_of(&fm, got);
		CHECK_STR(got, want);
		{
			char p[256];

			CHECK_EQ(ustack_procmaps__elf_path(pm[i], &v, p, sizeof(p)), 0);
			CHECK(strstr(p, "/map_files/") != NULL);
		}
		ustack_procmaps__close(pm[i]);
	}
	munmap(map, (size_t)st.st_size);
}

/* Build IDs come from the kernel when it has them (6.12+). */
static void test_kernel_build_id(void)
{
	struct ustack_procmaps *pm = ustack_procmaps__open(0, NULL);
	struct ustack_file_map fm;
	struct ustack_resolved r;
	uint64_t pc = (uint64_t)(uintptr_t)&printf;

	CHECK(pm);
	if (!ustack_procmaps__uses_ioctl(pm)) {
		ustack_procmaps__close(pm);
		SKIP("PROCMAP_QUERY ioctl missing (ENOTTY)");
	}
	CHECK_EQ(ustack_procmaps__resolve(pm, &pc, 1, &r), 1);
	CHECK_EQ(ustack_procmaps__file_map(pm, r.file_id, &fm), 0);
	if (fm.build_id_source != USTACK_BUILD_ID_KERNEL) {
		ustack_procmaps__close(pm);
		SKIP("kernel returned no build ID for %s (Linux < 6.12?)", fm.path);
	}
	CHECK_EQ(fm.build_id_size, 20);
	ustack_procmaps__close(pm);
}

/* Mapping another file at the same address gives a new id (new file_map);
 * the same file mapped a second time, far away, keeps its id. */
static void map_at(const char *path, void *addr, size_t len)
{
	int fd = open(path, O_RDONLY);
	void *m;

	CHECK(fd >= 0);
	m = mmap(addr, len, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
	close(fd);
	CHECK(m == addr);
}

static void test_remap_live(void)
{
	struct ustack_procmaps_opts to = { .sz = sizeof(to), .flags = USTACK_PROCMAPS_FORCE_TEXT };
	const size_t len = 4096;
	char *area = mmap(NULL, 64 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const char *fa = "/bin/true", *fb = "/bin/false";
	struct stat sa, sb;

	CHECK(area != MAP_FAILED);
	if (stat(fa, &sa) || stat(fb, &sb) || sa.st_ino == sb.st_ino) {
		munmap(area, 64 << 20);
		SKIP("need two distinct files %s and %s", fa, fb);
	}
	for (int mode = 0; mode < 2; mode++) {
		struct ustack_procmaps *pm = ustack_procmaps__open(0, mode ? &to : NULL);
		uint64_t pc = (uint64_t)(uintptr_t)area + 8, far = pc + (32 << 20);
		struct ustack_resolved r;
		struct ustack_file_map fm;
		uint64_t ida;

		CHECK(pm);
		map_at(fa, area, len);
		CHECK_EQ(ustack_procmaps__reload(pm, NULL, 0), 0);
		CHECK_EQ(ustack_procmaps__resolve(pm, &pc, 1, &r), 1);
		CHECK_EQ(r.flags, USTACK_RESOLVED_NEW_FILE);
		ida = r.file_id;
		CHECK_EQ(ustack_procmaps__file_map(pm, ida, &fm), 0);
		CHECK_EQ_U64(fm.inode, sa.st_ino);

		map_at(fb, area, len); /* replaces the first mapping */
		if (mode)
			CHECK_EQ(ustack_procmaps__reload(pm, NULL, 0), 0);
		CHECK_EQ(ustack_procmaps__resolve(pm, &pc, 1, &r), 1);
		CHECK(r.file_id != ida);
		CHECK_EQ(r.flags, USTACK_RESOLVED_NEW_FILE);
		CHECK_EQ(ustack_procmaps__file_map(pm, r.file_id, &fm), 0);
		CHECK_EQ_U64(fm.inode, sb.st_ino);
		CHECK(fm.path && strstr(fm.path, "false"));

		map_at(fa, (void *)(uintptr_t)(far & ~4095ULL), len);
		if (mode)
			CHECK_EQ(ustack_procmaps__reload(pm, NULL, 0), 0);
		CHECK_EQ(ustack_procmaps__resolve(pm, &far, 1, &r), 1);
		CHECK_EQ_U64(r.file_id, ida);
		CHECK_EQ(r.flags, 0);
		ustack_procmaps__close(pm);
		mmap(area, 64 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	}
	munmap(area, 64 << 20);
}

/* .gnu_debuglink name and CRC in the file_map; oracle: the section's bytes
 * dumped by objcopy (NUL-terminated name, padding to 4, CRC32 LE). */
static void test_debuglink(void)
{
	char tmp[] = "/tmp/ustack-dl-XXXXXX", cmd[512];
	struct ustack_procmaps_opts to = { .sz = sizeof(to), .flags = USTACK_PROCMAPS_FORCE_TEXT };
	struct ustack_procmaps *pm[2];
	uint8_t sec[1024];
	uint32_t want_crc;
	size_t n, nl;
	pid_t pid;
	FILE *f;
	int fd;

	if (!have_tool("objcopy") || !have_tool("sleep"))
		SKIP("objcopy or sleep missing");
	pid = spawn_sleep();
	CHECK(pid > 0);
	fd = mkstemp(tmp);
	CHECK(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "objcopy --dump-section .gnu_debuglink=%s /proc/%d/exe /dev/null 2>/dev/null",
		 tmp, (int)pid);
	if (system(cmd)) {
		unlink(tmp);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		SKIP("sleep has no .gnu_debuglink");
	}
	f = fopen(tmp, "rb");
	CHECK(f);
	n = fread(sec, 1, sizeof(sec), f);
	fclose(f);
	unlink(tmp);
	nl = strnlen((char *)sec, n);
	CHECK(nl > 0 && nl < n);
	CHECK(n >= ((nl + 4) & ~(size_t)3) + 4);
	memcpy(&want_crc, sec + ((nl + 4) & ~(size_t)3), 4);
	pm[0] = ustack_procmaps__open(pid, NULL);
	pm[1] = ustack_procmaps__open(pid, &to);
	for (int i = 0; i < 2; i++) {
		struct ustack_vma v;
		struct ustack_file_map fm;
		uint64_t addr = 0;
		int found = 0;

		CHECK(pm[i]);
		while (!ustack_procmaps__next(pm[i], addr, USTACK_VMA_EXEC, &v) && v.end) {
			if (v.kind == USTACK_VMA_FILE && strstr(v.name, "/sleep")) {
				found = 1;
				break;
			}
			addr = v.end;
		}
		CHECK(found);
		CHECK_EQ(ustack_procmaps__resolve(pm[i], &v.start, 1, &(struct ustack_resolved){ 0 }), 1);
		CHECK_EQ(ustack_procmaps__file_map(pm[i], v.file_id, &fm), 0);
		CHECK_STR(fm.debuglink, (char *)sec);
		CHECK_EQ_U64(fm.debuglink_crc, want_crc);
		ustack_procmaps__close(pm[i]);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_errors(void)
{
	struct ustack_procmaps *pm;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	CHECK(pid > 0);
	waitpid(pid, NULL, 0);
	/* reaped: no such process any more */
	errno = 0;
	pm = ustack_procmaps__open(pid, NULL);
	CHECK(!pm);
	CHECK_EQ(errno, ESRCH);
	errno = 0;
	CHECK(!ustack_procmaps__open(-5, NULL));
	CHECK_EQ(errno, EINVAL);
}

int main(void)
{
	RUN(test_self);
	RUN(test_child_sleep);
	RUN(test_file_oracle);
	RUN(test_vdso);
	RUN(test_deleted_file);
	RUN(test_kernel_build_id);
	RUN(test_remap_live);
	RUN(test_debuglink);
	RUN(test_errors);
	TEST_EXIT();
}
