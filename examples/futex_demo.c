// SPDX-License-Identifier: MIT
/*
 * futex_demo: threads contending on one pthread mutex, the bundled workload
 * of `make demo` (recorded with -e syscalls:sys_enter_futex -e cpu-clock),
 * of tests/integration/record_futex_demo.sh and of bench/record.
 *
 * Built like most distribution code: -O2 -fomit-frame-pointer, no SFrame,
 * linked to the system libc (which has neither frame pointers nor SFrame),
 * so every user stack has to be unwound from DWARF CFI.
 *
 *   futex_demo [-t THREADS] [-s SECONDS | -n ROUNDS] [-l LOCKED_US] [-u UNLOCKED_US]
 *
 * Defaults: 4 threads, 1.5 s, 100 us of work under the lock, 200 us outside.
 * With -n each thread does ROUNDS rounds of a fixed amount of arithmetic
 * (a "microsecond" is then a fixed count of multiplications, about 1 us)
 * instead of spinning on the clock, so that the wall time grows with any
 * overhead a profiler adds: bench/record measures slowdowns that way.
 * Each thread loops: locked_section() (pthread_mutex_lock, do_locked_work,
 * pthread_mutex_unlock), then do_unlocked_work(). A contended lock blocks
 * in the kernel: futex(FUTEX_WAIT) from __lll_lock_wait, and the unlock of a
 * contended lock wakes a waiter: futex(FUTEX_WAKE) from __lll_lock_wake.
 * With -l 0 the threads never take the lock (a CPU-bound variant of the
 * same shape, for benchmarks).
 *
 * The functions are noinline, and an empty asm after each call keeps the
 * compiler from turning the last call into a jump (a tail call would drop
 * the caller from the stack), so the stacks read as the source does.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
/* not a tail call: the caller stays on the stack */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t shared_counter;
static uint64_t deadline_ns;
static unsigned int locked_us = 100, unlocked_us = 200;
static uint64_t fixed_rounds; /* -n: fixed work instead of a deadline */

struct worker_result {
	uint64_t rounds;
	uint64_t sink;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Burn about @us microseconds of CPU (a little arithmetic, timed). */
static NOINLINE uint64_t spin(unsigned int us, uint64_t seed)
{
	uint64_t end = now_ns() + (uint64_t)us * 1000, x = seed | 1;

	if (fixed_rounds) {
		/* five dependent 64-step LCG blocks: about 1 us here */
		for (uint64_t n = (uint64_t)us * 5; n; n--)
			for (int i = 0; i < 64; i++)
				x = x * 6364136223846793005ull + 1442695040888963407ull;
		return x;
	}
	do {
		for (int i = 0; i < 64; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	} while (now_ns() < end);
	return x;
}

static NOINLINE uint64_t do_locked_work(uint64_t seed)
{
	uint64_t x = spin(locked_us, seed);

	shared_counter++;
	KEEP_FRAME();
	return x;
}

static NOINLINE uint64_t do_unlocked_work(uint64_t seed)
{
	uint64_t x = spin(unlocked_us, seed);

	KEEP_FRAME();
	return x;
}

static NOINLINE uint64_t locked_section(uint64_t seed)
{
	uint64_t x;

	pthread_mutex_lock(&lock);
	KEEP_FRAME();
	x = do_locked_work(seed);
	pthread_mutex_unlock(&lock);
	KEEP_FRAME();
	return x;
}

static NOINLINE void *worker(void *arg)
{
	struct worker_result *res = arg;
	uint64_t x = (uint64_t)(uintptr_t)arg;

	while (fixed_rounds ? res->rounds < fixed_rounds : now_ns() < deadline_ns) {
		if (locked_us)
			x ^= locked_section(x);
		x ^= do_unlocked_work(x);
		res->rounds++;
	}
	res->sink = x;
	KEEP_FRAME();
	return NULL;
}

static unsigned int parse_uint(const char *s, const char *what)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (!*s || *end || v > 1000000) {
		fprintf(stderr, "futex_demo: bad %s '%s'\n", what, s);
		exit(2);
	}
	return (unsigned int)v;
}

int main(int argc, char **argv)
{
	unsigned int nr_threads = 4;
	double seconds = 1.5;
	pthread_t tids[64];
	struct worker_result res[64];
	uint64_t total = 0, start_ns;
	struct rusage ru;
	int c;

	while ((c = getopt(argc, argv, "t:s:n:l:u:h")) != -1) {
		switch (c) {
		case 't':
			nr_threads = parse_uint(optarg, "thread count");
			if (!nr_threads || nr_threads > 64) {
				fprintf(stderr, "futex_demo: 1..64 threads\n");
				return 2;
			}
			break;
		case 's':
			seconds = strtod(optarg, NULL);
			if (!(seconds > 0 && seconds < 3600)) {
				fprintf(stderr, "futex_demo: bad duration '%s'\n", optarg);
				return 2;
			}
			break;
		case 'n':
			fixed_rounds = parse_uint(optarg, "round count");
			break;
		case 'l':
			locked_us = parse_uint(optarg, "locked work");
			break;
		case 'u':
			unlocked_us = parse_uint(optarg, "unlocked work");
			break;
		default:
			fprintf(stderr, "usage: futex_demo [-t THREADS] [-s SECONDS | -n ROUNDS] "
					"[-l LOCKED_US] [-u UNLOCKED_US]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	memset(res, 0, sizeof(res));
	start_ns = now_ns();
	deadline_ns = start_ns + (uint64_t)(seconds * 1e9);
	for (unsigned int i = 0; i < nr_threads; i++) {
		char name[16];

		if (pthread_create(&tids[i], NULL, worker, &res[i])) {
			perror("futex_demo: pthread_create");
			return 1;
		}
		snprintf(name, sizeof(name), "worker-%u", i);
		pthread_setname_np(tids[i], name);
	}
	for (unsigned int i = 0; i < nr_threads; i++) {
		pthread_join(tids[i], NULL);
		total += res[i].rounds;
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("futex_demo: %u threads, %.3f s, %llu rounds, %llu under the lock, %.3f s CPU\n",
	       nr_threads, (now_ns() - start_ns) / 1e9, (unsigned long long)total,
	       (unsigned long long)shared_counter,
	       ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	return 0;
}
