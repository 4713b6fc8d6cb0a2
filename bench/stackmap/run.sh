#!/usr/bin/env bash
# Stackmap insert cost against a mutex-protected hash table, same run.
# Usage: bash bench/stackmap/run.sh [--depth WORDS] [--reps N] [--wall] [--quick]
# Builds with -O2 from the stackmap and common sources (the same flags as
# the release library), so it does not depend on other modules building.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
out="$top/build/bench"
mkdir -p "$out"
${CC:-gcc} -std=gnu11 -O2 -g -D_GNU_SOURCE -fvisibility=hidden -I"$top/include" -I"$top/src" \
	-o "$out/bench_stackmap" "$top/bench/stackmap/bench_stackmap.c" \
	"$top"/src/stackmap/*.c "$top"/src/common/*.c -lpthread
echo "# $(uname -r), $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$out/bench_stackmap" "$@"
