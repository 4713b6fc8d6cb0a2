// SPDX-License-Identifier: MIT
/*
 * hostile_moving MODE CPU_MS SPIN LIBA LIBB: code that moves while it is
 * recorded (tests/integration/record_hostile.sh).
 *
 * Until the process has used CPU_MS ms of CPU time, cycles of
 *     main -> cycle -> via_a -> a_outer -> a_spin (LIBA)
 *     main -> cycle -> via_b -> b_outer -> b_spin (LIBB)
 * with SPIN, SPIN/2, ... SPIN/32 iterations in turn (cycle k: SPIN >> k % 6,
 * the same for both): phases of many lengths, some shorter than the time a
 * recorder takes to read a mapping's record, some longer,
 * where LIBA and LIBB are hostile_lib.c built twice, and each library is
 * gone before the other is mapped:
 *   dl   dlopen(LIBA), call, dlclose(); dlopen(LIBB), call, dlclose(): the
 *        loader usually puts each where the other one just was
 *   raw  mmap(LIBA, PROT_READ|PROT_EXEC) of the whole file at a fixed
 *        address (MAP_FIXED_NOREPLACE), call, munmap(); the same for LIBB
 *        at the same address: no loader, X_outer found by reading the ELF
 *        file's .symtab and program headers here
 * via_a and via_b are in this executable: they never move, so a frame of
 * via_a is always below one of LIBA's and never below one of LIBB's.
 *
 * With $HOSTILE_GO set, first a recorder that lags (lagging(), below).
 *
 * Prints "hostile_moving: MODE N cycles, R same address, a at 0x..., b at
 * 0x..." (R: how often a library was mapped where the other one was just
 * before, in the order they came: b after a, a after the previous b);
 * exit 0. CPU time rather than wall time, so that a loaded machine gets
 * as many samples (of the task's running time) as an idle one.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "hostile_elf.h"
#include "rec_common.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

typedef unsigned long (*outer_fn)(unsigned long);

REC_FN unsigned long via_a(outer_fn f, unsigned long n)
{
	unsigned long r = f(n);

	rec_sink += r;
	return r;
}

REC_FN unsigned long via_b(outer_fn f, unsigned long n)
{
	unsigned long r = f(n);

	rec_sink ^= r;
	return r;
}

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "hostile_moving: %s %s\n", what, arg);
	exit(1);
}

/* one library: its path, its entry, and (raw) its file and entry offset */
struct lib {
	const char *path, *entry;
	int fd;
	size_t size, entry_off;
	uintptr_t base;
};

static void raw_open(struct lib *l)
{
	struct stat st;
	void *m;

	l->fd = open(l->path, O_RDONLY | O_CLOEXEC);
	if (l->fd < 0 || fstat(l->fd, &st))
		die("cannot open", l->path);
	l->size = (st.st_size + 4095) & ~4095UL;
	m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, l->fd, 0);
	if (m == MAP_FAILED)
		die("cannot read", l->path);
	l->entry_off = hostile_sym_offset(m, st.st_size, l->entry, SHT_SYMTAB);
	munmap(m, st.st_size);
	if (!l->entry_off)
		die("no symbol (or not in a PT_LOAD) in", l->path);
}

static outer_fn raw_map(struct lib *l, uintptr_t at)
{
	void *m = mmap((void *)at, l->size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED_NOREPLACE,
		       l->fd, 0);

	if (m == MAP_FAILED || (uintptr_t)m != at)
		die("mmap at the fixed address failed for", l->path);
	l->base = at;
	return (outer_fn)(at + l->entry_off);
}

static outer_fn dl_map(struct lib *l, void **h)
{
	struct link_map *lm;
	outer_fn f;

	*h = dlopen(l->path, RTLD_NOW | RTLD_LOCAL);
	if (!*h)
		die("dlopen:", dlerror());
	f = (outer_fn)dlsym(*h, l->entry);
	if (!f || dlinfo(*h, RTLD_DI_LINKMAP, &lm))
		die("dlsym/dlinfo:", dlerror());
	l->base = lm->l_addr;
	return f;
}

static outer_fn map_lib(int raw, struct lib *l, uintptr_t at, void **h)
{
	return raw ? raw_map(l, at) : dl_map(l, h);
}

static void unmap_lib(int raw, struct lib *l, uintptr_t at, void *h)
{
	if (raw ? munmap((void *)at, l->size) : dlclose(h))
		die("unmap failed:", l->path);
}

REC_FN void cycle(int raw, struct lib *a, struct lib *b, uintptr_t at, unsigned long n)
{
	void *h = NULL;
	outer_fn f;

	f = map_lib(raw, a, at, &h);
	via_a(f, n);
	unmap_lib(raw, a, at, h);
	f = map_lib(raw, b, at, &h);
	via_b(f, n);
	unmap_lib(raw, b, at, h);
	rec_sink++;
}

/* calls through VIA for MS ms of CPU time */
static void spin_for(unsigned long (*via)(outer_fn, unsigned long), outer_fn f, unsigned long n,
		     double ms)
{
	double end = cpu_ms() + ms;

	while (cpu_ms() < end)
		via(f, n);
}

/* "NAME" on stdout, then wait until the file GO.NAME exists */
static void hold(const char *go, const char *name)
{
	char file[4096];

	printf("%s\n", name);
	fflush(stdout);
	snprintf(file, sizeof(file), "%s.%s", go, name);
	rec_wait_for(file);
}

/*
 * With $HOSTILE_GO: a recorder that lags behind. liba mapped and called
 * (30 ms of CPU), then "hold-a" and a wait for $HOSTILE_GO.hold-a (the
 * test stops the recorder meanwhile: SIGSTOP); libb mapped where liba was
 * and called (30 ms), liba mapped there again, "hold-b", a wait for
 * $HOSTILE_GO.hold-b (the test lets the recorder go on meanwhile). So
 * the recorder reads libb's mapping and samples while liba is where libb
 * was: what it opens there now is not libb.
 */
static void lagging(const char *go, int raw, struct lib *a, struct lib *b, uintptr_t at,
		    unsigned long n)
{
	void *h = NULL;
	outer_fn f;

	f = map_lib(raw, a, at, &h);
	spin_for(via_a, f, n, 30);
	hold(go, "hold-a");
	unmap_lib(raw, a, at, h);
	f = map_lib(raw, b, at, &h);
	spin_for(via_b, f, n, 30);
	unmap_lib(raw, b, at, h);
	map_lib(raw, a, at, &h);
	printf("hostile_moving: lag: b at %#lx, a again at %#lx\n", (unsigned long)b->base,
	       (unsigned long)a->base);
	hold(go, "hold-b");
	unmap_lib(raw, a, at, h);
}

int main(int argc, char **argv)
{
	struct lib a = { .entry = "a_outer" }, b = { .entry = "b_outer" };
	uintptr_t at = 0, last_b = 0;
	unsigned long n;
	double budget;
	long cycles = 0, same = 0;
	int raw;

	if (argc != 6 || (strcmp(argv[1], "dl") && strcmp(argv[1], "raw"))) {
		fprintf(stderr, "usage: hostile_moving dl|raw CPU_MS SPIN LIBA LIBB\n");
		return 2;
	}
	raw = !strcmp(argv[1], "raw");
	budget = atof(argv[2]);
	n = strtoul(argv[3], NULL, 0);
	a.path = argv[4];
	b.path = argv[5];
	if (raw) {
		void *res;

		raw_open(&a);
		raw_open(&b);
		/* a free place for the larger of the two, found by the kernel */
		res = mmap(NULL, a.size > b.size ? a.size : b.size, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (res == MAP_FAILED)
			die("mmap", "failed");
		munmap(res, a.size > b.size ? a.size : b.size);
		at = (uintptr_t)res;
	}
	if (getenv("HOSTILE_GO"))
		lagging(getenv("HOSTILE_GO"), raw, &a, &b, at, n);
	while (cpu_ms() < budget) {
		cycle(raw, &a, &b, at, n >> (cycles % 6));
		same += (a.base == b.base) + (cycles > 0 && a.base == last_b);
		last_b = b.base;
		cycles++;
	}
	printf("hostile_moving: %s %ld cycles, %ld same address, a at %#lx, b at %#lx\n", argv[1], cycles,
	       same, (unsigned long)a.base, (unsigned long)b.base);
	return 0;
}
