#!/usr/bin/env bash
# Compile cost of .eh_frame -> ustack_cfi_table per MB, lookup cost, and the
# named peer in the same run: readelf --debug-dump=frames-interp, which
# also interprets every FDE (and prints each row).
#   bash bench/cfi/run.sh [FILE...]      (from the top directory)
set -eu
cd "$(dirname "$0")/../.."
make -s build/libustack_internal.a >/dev/null
out=build/bench/bench_cfi
mkdir -p build/bench
${CC:-gcc} -std=gnu11 -O2 -D_GNU_SOURCE -Iinclude -Isrc -o "$out" bench/cfi/bench_cfi.c build/libustack_internal.a -lpthread -ldl -lbpf
if [ $# -eq 0 ]; then
	set -- /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/bin/gdb
	# each libLLVM once (the .so.1 names are symlinks)
	for f in $(readlink -f /usr/lib/x86_64-linux-gnu/libLLVM-1[0-9]*.so.1 2>/dev/null | sort -u); do
		[ -r "$f" ] && set -- "$@" "$f"
	done
fi
"$out" "$@"
echo
printf '%-48s %10s %10s %8s\n' file ustack_ms readelf_ms ratio
for f in "$@"; do
	u=$("$out" "$f" | awk 'NR==2 {print $5}')
	t0=$(date +%s%N)
	readelf --debug-dump=frames-interp "$f" >/dev/null 2>&1 || :
	t1=$(date +%s%N)
	r=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", (b - a) / 1e6}')
	printf '%-48s %10s %10s %8s\n' "$f" "$u" "$r" "$(awk -v u="$u" -v r="$r" 'BEGIN {printf "%.0fx", r / u}')"
done
