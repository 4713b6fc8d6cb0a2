// SPDX-License-Identifier: MIT
/*
 * write_storm: threads making many write(2) calls to /dev/null, each from a
 * call path the program chooses and counts itself, so that a recorder's
 * stacks of syscalls:sys_enter_write can be checked one by one
 * (tests/integration/record_storm.sh, bench/record/backends.sh).
 *
 *   write_storm [-t THREADS] [-n WRITES] [-s USEC] [-S SEED] [-o FILE]
 *
 * Defaults: 4 threads, 80000 writes in all (split evenly), no sleep.
 * Thread i (named "storm-i" by itself before its first write) calls, per
 * write, storm_thread -> fa -> fb -> fc -> write(), with (fa, fb, fc) three
 * of the 16 functions f0..f15 drawn by a per-thread PRNG (splitmix64 seeded
 * with SEED and i): the same arguments give the same paths and counts on
 * every run. -s sleeps USEC microseconds after each write (a low, steady
 * event rate). At exit, with -o, FILE gets one line per path taken,
 * "fa;fb;fc COUNT" (in the order f0;f0;f0, f0;f0;f1, ...), then "total N"; standard output gets one line:
 *
 *   write_storm: 4 threads, 80000 writes, 2519 paths, 0.412 s, 194174 writes/s
 *
 * (the time is from the first thread's start to the last join: a
 * recorder's start-up and write-out are not in it).
 *
 * The 16 functions come in four frame shapes, so that the unwinder meets
 * each kind of CFI row (built -O2 -fomit-frame-pointer, no SFrame):
 *   f0..f3    small frame: no local variable in memory, no callee-saved
 *             register (CFA = rsp + 16 at the call)
 *   f4..f7    five or six callee-saved pushes (CFA = rsp + 8 + 8 * pushes)
 *   f8..f11   a 1 KiB local array: a large `sub $N,%rsp`
 *   f12..f15  an alloca of run-time size: the compiler sets up rbp and the
 *             CFA is rbp-based, although frame pointers are off
 * Every function is noinline and noclone (no .isra/.constprop copies under
 * other names), and uses its callee's return value after the call, so that
 * no call becomes a tail call and every frame stays on the stack. The 1 KiB
 * arrays keep the deepest stack (three of them) well under 8 KiB, what
 * `perf record --call-graph dwarf` copies by default.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define NFN 16
#define NPATHS (NFN * NFN * NFN)
#define MAX_THREADS 64
#define FRAME __attribute__((noinline, noclone))
/* the compiler must assume @p's memory is read here */
#define USE(p) __asm__ volatile("" : : "r"(p) : "memory")

struct storm {
	uint64_t rng;
	unsigned int path[3]; /* fa, fb, fc of the current write */
	int fd;
	unsigned int usec;
	uint64_t counts[NPATHS];
	uint64_t writes;
	unsigned int index;
};

typedef long (*storm_fn)(struct storm *s, int depth, uint64_t x);
static const storm_fn fns[NFN];

/* depth 0..1: call the next function of the path; depth 2 (fc): write.
 * A macro, not an inline function: no inlined frame in the debug info,
 * so a symbolizer that shows inlined frames shows the same stack. */
#define next_or_write(s, depth, x, buf, len)                                    \
	((depth) < 2 ? fns[(s)->path[(depth) + 1]]((s), (depth) + 1, (x))       \
		     : (long)write((s)->fd, (buf), (len)))

static const char small_buf[16] = "0123456789abcdef";

/* ---- shape 1: small frame -------------------------------------------------- */
#define SMALL(n)                                                                \
	static FRAME long f##n(struct storm *s, int depth, uint64_t x)          \
	{                                                                       \
		return next_or_write(s, depth, x * 3 + n, small_buf + n, 1) + n; \
	}
SMALL(0)
SMALL(1)
SMALL(2)
SMALL(3)

/* ---- shape 2: callee-saved registers live across the call ------------------- */
#define PUSHES(n)                                                               \
	static FRAME long f##n(struct storm *s, int depth, uint64_t x)          \
	{                                                                       \
		uint64_t a = x * 0x9e3779b97f4a7c15ull, b = x ^ (x >> 7),       \
			 c = x + n, d = a ^ (b << 3), e = (uint64_t)depth * 31;  \
		char ch = (char)a;                                              \
		long r = next_or_write(s, depth, a + b, &ch, 1);                \
		USE(&ch);                                                       \
		/* a..e are needed after the call: callee-saved registers */    \
		return r + (long)(((a ^ b) + (c ^ d) + e) & 1);                  \
	}
PUSHES(4)
PUSHES(5)
PUSHES(6)
PUSHES(7)

/* ---- shape 3: a large local array (sub $0x4.., %rsp) ------------------------ */
#define BIGARRAY(n)                                                             \
	static FRAME long f##n(struct storm *s, int depth, uint64_t x)          \
	{                                                                       \
		char buf[1024];                                                 \
		long r;                                                         \
		buf[0] = (char)x;                                               \
		buf[sizeof(buf) - 1] = (char)n;                                 \
		USE(buf);                                                       \
		r = next_or_write(s, depth, x + buf[0], buf, 16);               \
		USE(buf);                                                       \
		return r + buf[sizeof(buf) - 1];                                \
	}
BIGARRAY(8)
BIGARRAY(9)
BIGARRAY(10)
BIGARRAY(11)

/* ---- shape 4: alloca: rbp-based CFA without frame pointers ------------------ */
#define ALLOCA(n)                                                               \
	static FRAME long f##n(struct storm *s, int depth, uint64_t x)          \
	{                                                                       \
		size_t len = 8 + (x & 0x38);                                    \
		char *p = __builtin_alloca(len);                                \
		long r;                                                         \
		memset(p, n, len);                                              \
		USE(p);                                                         \
		r = next_or_write(s, depth, x ^ len, p, len);                   \
		USE(p);                                                         \
		return r + p[len - 1];                                          \
	}
ALLOCA(12)
ALLOCA(13)
ALLOCA(14)
ALLOCA(15)

static const storm_fn fns[NFN] = { f0, f1, f2, f3, f4, f5, f6, f7,
				   f8, f9, f10, f11, f12, f13, f14, f15 };

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned int nr_threads = 4;
static uint64_t nr_writes = 80000;
static long failed_writes;

static FRAME void *storm_thread(void *arg)
{
	struct storm *s = arg;
	struct timespec ts = { 0, 0 };
	uint64_t sink = 0;
	char name[16];

	/* named before the first write: every event of the thread carries it */
	snprintf(name, sizeof(name), "storm-%u", s->index);
	prctl(PR_SET_NAME, name);
	for (uint64_t i = 0; i < s->writes; i++) {
		uint64_t r = splitmix64(&s->rng);
		long ret;

		s->path[0] = r & 15;
		s->path[1] = (r >> 4) & 15;
		s->path[2] = (r >> 8) & 15;
		ret = fns[s->path[0]](s, 0, r >> 12);
		if (ret < 0)
			__atomic_fetch_add(&failed_writes, 1, __ATOMIC_RELAXED);
		s->counts[(s->path[0] * NFN + s->path[1]) * NFN + s->path[2]]++;
		sink += (uint64_t)ret;
		if (s->usec) {
			ts.tv_nsec = (long)s->usec * 1000;
			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
		}
	}
	USE(&sink);
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned long parse_ulong(const char *s, const char *what, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || v > max) {
		fprintf(stderr, "write_storm: bad %s '%s' (0..%lu)\n", what, s, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static struct storm st[MAX_THREADS];
	pthread_t tids[MAX_THREADS];
	const char *out = NULL;
	uint64_t seed = 1, start, total = 0, npaths = 0;
	unsigned int usec = 0;
	double secs;
	int c, fd;

	while ((c = getopt(argc, argv, "t:n:s:S:o:h")) != -1) {
		switch (c) {
		case 't': nr_threads = parse_ulong(optarg, "thread count", MAX_THREADS); break;
		case 'n': nr_writes = parse_ulong(optarg, "write count", 1000000000); break;
		case 's': usec = parse_ulong(optarg, "sleep", 999999); break;
		case 'S': seed = parse_ulong(optarg, "seed", 1000000000); break;
		case 'o': out = optarg; break;
		default:
			fprintf(stderr, "usage: write_storm [-t THREADS] [-n WRITES] [-s USEC] "
					"[-S SEED] [-o FILE]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind != argc || !nr_threads) {
		fprintf(stderr, "write_storm: 1..%d threads, no other arguments\n", MAX_THREADS);
		return 2;
	}
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		perror("write_storm: /dev/null");
		return 1;
	}
	for (unsigned int i = 0; i < nr_threads; i++) {
		st[i].index = i;
		st[i].rng = seed * 0x100000001b3ull + i;
		st[i].fd = fd;
		st[i].usec = usec;
		st[i].writes = nr_writes / nr_threads + (i < nr_writes % nr_threads);
	}
	start = now_ns();
	for (unsigned int i = 0; i < nr_threads; i++) {
		if ((errno = pthread_create(&tids[i], NULL, storm_thread, &st[i]))) {
			perror("write_storm: pthread_create");
			return 1;
		}
	}
	for (unsigned int i = 0; i < nr_threads; i++)
		pthread_join(tids[i], NULL);
	secs = (now_ns() - start) / 1e9;
	close(fd);
	for (unsigned int p = 0; p < NPATHS; p++) {
		uint64_t n = 0;

		for (unsigned int i = 0; i < nr_threads; i++)
			n += st[i].counts[p];
		st[0].counts[p] = n; /* the sums, in thread 0's table */
		total += n;
		npaths += n != 0;
	}
	if (out) {
		FILE *f = fopen(out, "we");

		if (!f) {
			fprintf(stderr, "write_storm: %s: %s\n", out, strerror(errno));
			return 1;
		}
		for (unsigned int p = 0; p < NPATHS; p++)
			if (st[0].counts[p])
				fprintf(f, "f%u;f%u;f%u %llu\n", p / (NFN * NFN), p / NFN % NFN, p % NFN,
					(unsigned long long)st[0].counts[p]);
		fprintf(f, "total %llu\n", (unsigned long long)total);
		if (fclose(f)) {
			fprintf(stderr, "write_storm: %s: %s\n", out, strerror(errno));
			return 1;
		}
	}
	printf("write_storm: %u threads, %llu writes, %llu paths, %.3f s, %.0f writes/s\n",
	       nr_threads, (unsigned long long)total, (unsigned long long)npaths, secs,
	       secs > 0 ? total / secs : 0.0);
	if (failed_writes) {
		fprintf(stderr, "write_storm: %ld writes failed\n", failed_writes);
		return 1;
	}
	return 0;
}
