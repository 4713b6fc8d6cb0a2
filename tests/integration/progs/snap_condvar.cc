// SPDX-License-Identifier: MIT
/*
 * Target of the snapshot tests: C++ threads blocked in
 * std::condition_variable::wait (with and without a predicate) and in
 * std::condition_variable::wait_for, under a few levels of templates and
 * lambdas. Built with plain `g++ -O2`: the unwinder walks libstdc++'s CFI.
 * Prints "ready" once every thread is about to block.
 */
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace {

std::mutex mu;
std::condition_variable cv;
bool go = false;
std::atomic<int> started{0};

struct Waiter {
	int kind;

	__attribute__((noinline)) void wait_here()
	{
		std::unique_lock<std::mutex> lk(mu);
		started++;
		switch (kind) {
		case 0:
			cv.wait(lk, [] { return go; });
			break;
		case 1:
			while (!go)
				cv.wait(lk);
			break;
		default:
			while (!go)
				cv.wait_for(lk, std::chrono::hours(1));
			break;
		}
	}
};

template <int N> __attribute__((noinline)) void nest(Waiter &w)
{
	nest<N - 1>(w);
	asm volatile("" ::: "memory");
}
template <> __attribute__((noinline)) void nest<0>(Waiter &w)
{
	w.wait_here();
	asm volatile("" ::: "memory");
}

} // namespace

int main()
{
	std::vector<std::thread> threads;

	for (int i = 0; i < 6; i++)
		threads.emplace_back([i] {
			Waiter w{i % 3};
			if (i & 1)
				nest<3>(w);
			else
				nest<1>(w);
		});
	while (started.load() < 6)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	std::printf("ready\n");
	std::fflush(stdout);
	for (auto &t : threads)
		t.join();
	return 0;
}
