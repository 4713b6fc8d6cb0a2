#!/usr/bin/env bash
# What a recording's capture costs per byte of a file it stores in the
# build-ID cache: SHA-256 of the file (every recording hashes every file
# its stacks ran through, cached already or not), plain C against the CPU's
# SHA extensions (bench_sha256.c), and the named peer in the same run:
# coreutils' sha256sum on the same bytes from the page cache (its time
# includes its start and its reads).
#   bash bench/capture/run.sh [MiB]          (from anywhere)
set -eu
cd "$(dirname "$0")/../.."
mib=${1:-64}
make -s build/libustack_internal.a >/dev/null
out=build/bench/bench_sha256
mkdir -p build/bench
${CC:-gcc} -std=gnu11 -O2 -D_GNU_SOURCE -Iinclude -Isrc -o "$out" bench/capture/bench_sha256.c \
	build/libustack_internal.a -lpthread -ldl
"$out" "$mib" 7
f=$(mktemp)
trap 'rm -f "$f"' EXIT
head -c $((mib << 20)) /dev/urandom >"$f"
cat "$f" >/dev/null
ts=()
for r in 1 2 3 4 5 6 7; do
	t0=$(date +%s%N)
	sha256sum "$f" >/dev/null
	t1=$(date +%s%N)
	ts+=("$(awk -v a="$t0" -v b="$t1" -v n=$((mib << 20)) 'BEGIN {printf "%.3f", (b - a) / n}')")
done
printf '%s\n' "${ts[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "%-9s %10.3f %8.3f %8.3f  (whole command)\n", "sha256sum", v[int((NR + 1) / 2)], v[1], v[NR] }'
