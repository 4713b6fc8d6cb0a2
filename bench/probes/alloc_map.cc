// SPDX-License-Identifier: MIT
/*
 * The allocation-heavy workload of bench/probes/run.sh: std::map<long,long>
 * insertions and erasures (one malloc and one free per node through
 * operator new/delete), R rounds of N keys, a quarter kept live across
 * rounds. Prints "NS total_ns" (the work alone), "LIVE nodes" and "CALLS
 * mallocs" (its operator new calls in the timed work).
 * With BENCH_STOP=1 it stops itself after printing (see probe_loop.c).
 * usage: alloc_map N R
 */
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <new>

/* operator new counted, then malloc as libstdc++'s own does: the workload
 * states how many malloc calls its work made (CALLS) */
static long new_calls;

void *operator new(std::size_t n)
{
	void *p;

	new_calls++;
	while (!(p = std::malloc(n ? n : 1)))
		if (std::new_handler h = std::get_new_handler())
			h();
		else
			throw std::bad_alloc();
	return p;
}

void operator delete(void *p) noexcept
{
	std::free(p);
}

void operator delete(void *p, std::size_t) noexcept
{
	std::free(p);
}

__attribute__((noinline)) static void churn(std::map<long, long> &m, long n, long r)
{
	for (long i = 0; i < n; i++)
		m[(i * 2654435761L + r) % (4 * n)] = i;
	for (auto it = m.begin(); it != m.end();)
		it = (it->first % 4) ? m.erase(it) : std::next(it);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000, rounds = argc > 2 ? atol(argv[2]) : 10;
	std::map<long, long> m;
	timespec t0, t1;

	new_calls = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long r = 0; r < rounds; r++)
		churn(m, n, r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	std::printf("NS %.0f\nLIVE %zu\nCALLS %ld\n", (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec),
		    m.size(), new_calls);
	std::fflush(stdout);
	if (std::getenv("BENCH_STOP"))
		std::raise(SIGSTOP);
	return 0;
}
