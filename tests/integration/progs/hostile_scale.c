// SPDX-License-Identifier: MIT
/*
 * hostile_scale MAPS THREADS LIB: a process with many mappings and many
 * threads (tests/integration/record_scale.sh).
 *
 * Maps LIB (a hostile_lib.c library: a_outer -> a_spin, position-
 * independent code that needs no loader) MAPS/4 times PROT_READ|PROT_EXEC
 * at distinct addresses, in turn the whole file and only the page of its
 * code (another file offset), and the other 3/4 as anonymous pages, each
 * mapping separate (a page of nothing between them), so that the process
 * has MAPS mappings more than usual, a quarter of them code.
 * Then starts THREADS threads:
 *   4 spinners: hs_spinner -> via_scale -> a_outer -> a_spin in the copy
 *     of LIB numbered by a counter (every copy in turn), then 4 ms asleep,
 *     while spinning is on (SIGUSR1 turns it on, SIGUSR2 off; off at the
 *     start): otherwise asleep in hs_spinner, 20 ms at a time. The test
 *     spins them only while it snapshots or records: they took ~75% of a
 *     CPU for the whole 80 s the test ran, beside the other tests
 *   the others: hs_blocked -> hs_wait -> read() of a pipe nothing is
 *     written to (blocked in the kernel for good)
 * Prints "hostile_scale: MAPS mappings, THREADS threads, ready" once all
 * exist, then waits (the main thread in pause()) until killed.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "hostile_elf.h"
#include "rec_common.h"

typedef unsigned long (*outer_fn)(unsigned long);

static int pipefd[2];
static atomic_int started;
static volatile sig_atomic_t spin_on;
static atomic_ulong next_copy;
static outer_fn *copies;
static int nr_copies;

REC_FN unsigned long via_scale(outer_fn f, unsigned long n)
{
	unsigned long r = f(n);

	rec_sink += r;
	return r;
}

REC_FN void *hs_spinner(void *arg)
{
	struct timespec ts = { 0, 4 * 1000 * 1000 }, off = { 0, 20 * 1000 * 1000 };

	atomic_fetch_add(&started, 1);
	for (;;) {
		if (!spin_on) {
			nanosleep(&off, NULL);
			continue;
		}
		unsigned long k = atomic_fetch_add(&next_copy, 1) % (unsigned long)nr_copies;

		via_scale(copies[k], 200000);
		nanosleep(&ts, NULL);
	}
	return arg;
}

REC_FN long hs_wait(void)
{
	char c;
	long r = read(pipefd[0], &c, 1);

	rec_sink++;
	return r;
}

REC_FN void *hs_blocked(void *arg)
{
	atomic_fetch_add(&started, 1);
	for (;;)
		hs_wait();
	return arg;
}

static void on_usr(int sig)
{
	spin_on = sig == SIGUSR1;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	int maps, threads, fd;
	size_t flen, off, slot;
	struct stat st;
	pthread_attr_t attr;
	char *area, *p;
	void *m;

	if (argc != 4) {
		fprintf(stderr, "usage: hostile_scale MAPS THREADS LIB\n");
		return 2;
	}
	maps = atoi(argv[1]);
	threads = atoi(argv[2]);
	fd = open(argv[3], O_RDONLY | O_CLOEXEC);
	if (maps < 4 || threads < 5 || fd < 0 || fstat(fd, &st) || pipe(pipefd)) {
		perror("hostile_scale: setup");
		return 1;
	}
	flen = ((size_t)st.st_size + page - 1) & ~(size_t)(page - 1);
	m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	off = m == MAP_FAILED ? 0 : hostile_sym_offset(m, st.st_size, "a_outer", SHT_DYNSYM);
	if (!off) {
		fprintf(stderr, "hostile_scale: no a_outer in %s\n", argv[3]);
		return 1;
	}
	munmap(m, st.st_size);
	nr_copies = (maps + 3) / 4;
	copies = calloc(nr_copies, sizeof(*copies));
	/* one reservation: each mapping in a slot of its own, a page apart */
	slot = flen + page;
	area = mmap(NULL, slot * (size_t)maps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		    -1, 0);
	if (!copies || area == MAP_FAILED) {
		perror("hostile_scale: reserve");
		return 1;
	}
	p = area;
	for (int i = 0; i < maps; i++, p += slot) {
		void *got;

		if (i % 8 == 0) {
			/* the whole file */
			got = mmap(p, flen, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0);
			copies[i / 4] = (outer_fn)(p + off);
		} else if (i % 8 == 4) {
			/* only the page of the code: another file offset */
			got = mmap(p, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd,
				   off & ~(size_t)(page - 1));
			copies[i / 4] = (outer_fn)(p + (off & (page - 1)));
		} else {
			got = mmap(p, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS,
				   -1, 0);
			if (got != MAP_FAILED)
				p[0] = (char)i; /* touched: a real page */
		}
		if (got == MAP_FAILED) {
			perror("hostile_scale: mmap (vm.max_map_count?)");
			return 1;
		}
	}
	signal(SIGUSR1, on_usr);
	signal(SIGUSR2, on_usr);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int i = 0; i < threads; i++) {
		pthread_t t;

		if (pthread_create(&t, &attr, i < 4 ? hs_spinner : hs_blocked, NULL)) {
			perror("hostile_scale: pthread_create");
			return 1;
		}
	}
	while (atomic_load(&started) < threads)
		sched_yield();
	printf("hostile_scale: %d mappings, %d threads, ready\n", maps, threads);
	fflush(stdout);
	for (;;)
		pause();
}
