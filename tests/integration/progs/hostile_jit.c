// SPDX-License-Identifier: MIT
/*
 * Target of jit_perfmap_hostile.sh: a process with JIT code of its own, and
 * (optionally) a perf map that fights back while it is read.
 *
 * Two functions are copied into anonymous memory made executable:
 *   spin   (SPIN_SIZE bytes)  push rbp; mov rbp, rsp; then for ever: call a
 *          function of this binary (movabs rax, CB; call rax), spin on
 *          `pause` a while, loop. Samples land both in it (leaf) and in the
 *          callback, with spin as the caller (return address spin + 16,
 *          inside the symbol).
 *   noret  (NORET_SIZE bytes) push rbp; mov rbp, rsp; movabs rax, CB;
 *          call rax, and nothing after: the call is the last instruction,
 *          so the return address on the stack is one past the end of the
 *          symbol (the classic off-by-one: the caller of a noreturn call).
 *          Its callback, noret_callee(), sleeps in pause(2) for ever, or
 *          with GO spins for ever (so that it is sampled too).
 * The main thread runs spin; a thread "jit_block" runs noret.
 *
 * usage: hostile_jit INFO [GO CPU_MS]
 *        hostile_jit INFO rewrite
 * Writes "PID SPIN_START SPIN_SIZE NORET_START NORET_SIZE" (hex addresses,
 * decimal sizes) to INFO (written to INFO.tmp, then renamed) once both
 * threads are on their way. Without "rewrite" it writes no perf map: the
 * test does.
 * With GO and CPU_MS: both threads sleep until the file GO exists (the
 * test writes the map meanwhile), then both spin (noret_callee too, so
 * that noret's caller frame is sampled) until the main thread has run
 * CPU_MS milliseconds of its own CPU time; then the process exits 0 (for
 * `ustack record -- hostile_jit`: a workload measured in CPU time, not
 * wall time, gives enough samples under any load).
 * With "rewrite": the spin callback is the writer of a hostile
 * /tmp/perf-PID.map instead (rewrite_step(): each call does one step of
 * it): it truncates the file and writes a generation of 100-2000 lines at
 * once, all covering spin, appends a few more lines in two write()s each
 * (a reader meets half lines), then truncates and writes a generation
 * covering nothing of spin, keeps it a few steps, and again (6 generations
 * of each kind, made in advance). Every line's name is self-checking:
 *     START SIZE hj_START_SIZE_gGEN_nN_PAD_cHASH
 * START and SIZE (hex) repeated inside the name, PAD 0..199 'x' (lines of
 * varied lengths), HASH = FNV-1a 32 of the name up to "_c" (8 hex digits).
 * A line torn between two generations or two lines fails the hash or its
 * START/SIZE do not match the entry's.
 * Runs until killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REGION (64 << 10)
#define SPIN_OFF 0x1000
#define NORET_OFF 0x2000

static const char *go_path;
static long cpu_ms;
static volatile unsigned long sink;
static uintptr_t spin_start;

/* spin: 29 bytes */
static const unsigned char spin_code[] = {
	0x55,                                     /* 0  push %rbp */
	0x48, 0x89, 0xe5,                         /* 1  mov %rsp,%rbp */
	0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0,       /* 4  movabs $CB,%rax (imm at 6) */
	0xff, 0xd0,                               /* 14 call *%rax */
	0xb9, 0, 0, 0, 0,                         /* 16 mov $N,%ecx (imm at 17) */
	0xf3, 0x90,                               /* 21 pause */
	0xff, 0xc9,                               /* 23 dec %ecx */
	0x75, 0xfa,                               /* 25 jnz 21 */
	0xeb, 0xe7,                               /* 27 jmp 4 */
};
/* noret: 16 bytes, ends with the call */
static const unsigned char noret_code[] = {
	0x55,                                     /* 0  push %rbp */
	0x48, 0x89, 0xe5,                         /* 1  mov %rsp,%rbp */
	0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0,       /* 4  movabs $CB,%rax (imm at 6) */
	0xff, 0xd0,                               /* 14 call *%rax */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t go_at;

static void wait_go(void)
{
	struct stat st;
	struct timespec ts = { 0, 5000000 };

	while (stat(go_path, &st))
		nanosleep(&ts, NULL);
}

/* the callback of spin in the default mode: some work, and the exit rule */
static void __attribute__((noinline)) spin_some(void)
{
	for (int i = 0; i < 20000; i++)
		sink += (unsigned long)i;
	if (go_path && thread_cpu_ns() - go_at >= (uint64_t)cpu_ms * 1000000u)
		_exit(0);
}

static void __attribute__((noinline)) noret_callee(void)
{
	if (go_path) {
		wait_go();
		for (;;)
			__asm__ volatile("pause");
	}
	for (;;)
		pause();
}

/* ---- the rewriting writer --------------------------------------------------- */

static int map_fd = -1;
static unsigned gen, nline, left, state;
static char pending[512];
static size_t pending_len;
static uint64_t rnd = 88172645463325252ull;

static uint64_t xorshift(void)
{
	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return rnd;
}

static uint32_t fnv1a(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static void write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(map_fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(3);
		p += w;
		n -= (size_t)w;
	}
}

/* One self-checking line into @out (room for 512 bytes): with @cover it
 * covers the whole of spin, else it lies elsewhere in the region. */
static size_t make_line(char *out, int cover)
{
	char name[400], pad[200];
	uint64_t start, size;
	size_t len;
	int n;

	if (cover) {
		uint64_t before = xorshift() % 0x100, after = xorshift() % 0x100;

		start = spin_start - before;
		size = before + sizeof(spin_code) + after;
	} else {
		start = spin_start - SPIN_OFF + 0x8000 + (xorshift() % 0x700) * 16;
		size = 16;
	}
	n = (int)(xorshift() % sizeof(pad));
	memset(pad, 'x', (size_t)n);
	len = (size_t)snprintf(name, sizeof(name), "hj_%llx_%llx_g%u_n%u_%.*s",
			       (unsigned long long)start, (unsigned long long)size, gen, nline++, n,
			       pad);
	return (size_t)snprintf(out, 512, "%llx %llx %s_c%08x\n", (unsigned long long)start,
				(unsigned long long)size, name, fnv1a(name, len));
}

/* Generations written in advance (building one takes longer than writing
 * it, and the file must not sit empty meanwhile): NGEN covering spin, NGEN
 * covering nothing of it, 100 to 2000 lines each. */
#define NGEN 6
static char *gens[2][NGEN];
static size_t gen_len[2][NGEN];

static int make_generations(void)
{
	for (int cover = 0; cover < 2; cover++)
		for (int g = 0; g < NGEN; g++) {
			unsigned lines = 100 + (unsigned)(xorshift() % 1900);
			size_t len = 0;
			char *t = malloc((size_t)lines * 512);

			if (!t)
				return -1;
			gen++;
			nline = 0;
			for (unsigned i = 0; i < lines; i++)
				len += make_line(t + len, cover);
			gens[cover][g] = t;
			gen_len[cover][g] = len;
		}
	gen++;
	return 0;
}

/* the file truncated and a generation written in its place at once */
static void new_generation(int cover)
{
	int g = (int)(xorshift() % NGEN);

	if (ftruncate(map_fd, 0))
		_exit(3);
	write_all(gens[cover][g], gen_len[cover][g]);
}

/* One step of the writer, a cycle of three states:
 *   0  a generation covering spin, at once
 *   1  2-9 steps of it; at most 4 lines appended to it, each in two
 *      writes cut anywhere (a reader meets half lines), one a step; the
 *      steps before them sleep 2 ms each (the file holding still: a
 *      reader then meets no rewrite and must name spin)
 *   2  a generation covering nothing of spin, at once, then kept for 0-3
 *      steps of 2 ms sleep
 * A reader that went on after a truncation would glue the start of a
 * covering line to the end of a line of the next generation, covering
 * nothing: the glued line, torn, would then be the newest to cover spin. */
static void __attribute__((noinline)) rewrite_step(void)
{
	size_t len, cut;

	switch (state) {
	case 0:
		new_generation(1);
		left = 2 + (unsigned)(xorshift() % 8);
		state = 1;
		break;
	case 1:
		if (!left && !pending_len) {
			new_generation(0);
			left = (unsigned)(xorshift() % 4);
			state = 2;
		} else if (pending_len) {
			write_all(pending, pending_len);
			pending_len = 0;
		} else if (left-- <= 4) {
			len = make_line(pending, 1);
			cut = 1 + xorshift() % (len - 1);
			write_all(pending, cut);
			memmove(pending, pending + cut, len - cut);
			pending_len = len - cut;
		} else {
			/* the file holds still a while: a reader that meets no
			 * rewrite must name spin from it */
			struct timespec ts = { 0, 2000000 };

			nanosleep(&ts, NULL);
		}
		break;
	default:
		if (!left) {
			state = 0;
		} else {
			struct timespec ts = { 0, 2000000 };

			left--;
			nanosleep(&ts, NULL);
		}
		break;
	}
}

static void *jit_block(void *arg)
{
	((void (*)(void))arg)();
	return NULL;
}

int main(int argc, char **argv)
{
	void (*cb)(void) = spin_some;
	unsigned char *base;
	uint64_t imm;
	uint32_t count = 2000;
	char tmp[4096];
	pthread_t th;
	FILE *f;

	if (argc == 3 && !strcmp(argv[2], "rewrite")) {
		char path[64];

		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
		map_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
		if (map_fd < 0) {
			perror(path);
			return 2;
		}
		rnd ^= (uint64_t)getpid() << 20;
		cb = rewrite_step;
		count = 50;
	} else if (argc == 4) {
		go_path = argv[2];
		cpu_ms = atol(argv[3]);
	} else if (argc != 2) {
		fprintf(stderr, "usage: hostile_jit INFO [GO CPU_MS | rewrite]\n");
		return 2;
	}
	/* written, then made executable: W^X where the kernel insists */
	base = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	memset(base, 0xcc, REGION); /* int3 everywhere else */
	memcpy(base + SPIN_OFF, spin_code, sizeof(spin_code));
	imm = (uint64_t)(uintptr_t)cb;
	memcpy(base + SPIN_OFF + 6, &imm, 8);
	memcpy(base + SPIN_OFF + 17, &count, 4);
	memcpy(base + NORET_OFF, noret_code, sizeof(noret_code));
	imm = (uint64_t)(uintptr_t)noret_callee;
	memcpy(base + NORET_OFF + 6, &imm, 8);
	if (mprotect(base, REGION, PROT_READ | PROT_EXEC)) {
		perror("mprotect");
		return 2;
	}
	spin_start = (uintptr_t)(base + SPIN_OFF);
	if (cb == rewrite_step && make_generations())
		return 2;
	if (pthread_create(&th, NULL, jit_block, base + NORET_OFF)) {
		fprintf(stderr, "pthread_create failed\n");
		return 2;
	}
	pthread_setname_np(th, "jit_block");
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	f = fopen(tmp, "w");
	if (!f)
		return 2;
	fprintf(f, "%d %lx %zu %lx %zu\n", (int)getpid(), (unsigned long)(base + SPIN_OFF),
		sizeof(spin_code), (unsigned long)(base + NORET_OFF), sizeof(noret_code));
	if (fclose(f) || rename(tmp, argv[1]))
		return 2;
	if (go_path) {
		wait_go();
		go_at = thread_cpu_ns();
	}
	((void (*)(void))(base + SPIN_OFF))();
	return 0;
}
