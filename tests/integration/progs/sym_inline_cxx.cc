// SPDX-License-Identifier: MIT
// C++ inlined code for tests/integration/symbolize_lines.sh: templates,
// a lambda and a namespace, built -O2 -g, so names come from linkage names
// and inline chains cross template instances.
#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" __attribute__((noinline)) void cxx_touch(unsigned long v)
{
	static volatile unsigned long s;
	s += v;
}

namespace shapes {
template <typename T> struct box {
	T v;
	inline T grow(T by)
	{
		cxx_touch((unsigned long)by);
		return v += by;
	}
};

template <typename T> inline T twice(box<T> &b, T by)
{
	T r = b.grow(by);
	cxx_touch((unsigned long)r);
	return b.grow(by) + r;
}

template <typename T> __attribute__((noinline)) T run(std::vector<T> &xs)
{
	box<T> b{ 1 };
	T sum = 0;
	auto add = [&](T x) {
		sum += twice(b, x);
		cxx_touch((unsigned long)sum);
	};
	for (T x : xs)
		add(x);
	return sum;
}
} // namespace shapes

int main(int argc, char **argv)
{
	std::vector<long> xs;
	std::vector<int> ys;
	long n = argc > 1 ? std::strtol(argv[1], nullptr, 0) : 3;

	for (long i = 0; i < n; i++) {
		xs.push_back(i);
		ys.push_back((int)i);
	}
	std::printf("%ld %d\n", shapes::run(xs), shapes::run(ys));
	return 0;
}
