#!/usr/bin/env bash
# bench/procmaps: PROCMAP_QUERY vs text /proc/PID/maps for resolving the pcs
# of real stacks. Target: python3 with ~60 extension modules (hundreds of
# mappings) running a loop that calls into them; stacks sampled with eu-stack.
# usage: bench/procmaps/run.sh [SAMPLES] [SECONDS_PER_MODE]
set -eu
cd "$(dirname "$0")/../.."
samples=${1:-40}
secs=${2:-1}
out=build/bench
mkdir -p "$out"
command -v eu-stack >/dev/null || { echo "bench/procmaps: eu-stack (elfutils) is needed to sample stacks" >&2; exit 1; }
PY=/usr/bin/python3
[ -x $PY ] || PY=$(command -v python3)
[ -f build/libustack.a ] || make -s build/libustack.a
${CC:-gcc} -std=gnu11 -O2 -D_GNU_SOURCE -Iinclude -o "$out/bench_procmaps" bench/procmaps/bench_procmaps.c \
	build/libustack.a -lpthread -ldl -lbpf

fifo=$(mktemp -u)
mkfifo "$fifo"
$PY bench/procmaps/workload.py >"$fifo" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$fifo"' EXIT
read -r ready loaded <"$fifo"
echo "target: pid $pid, $PY with $loaded extension modules, $(grep -c . /proc/$pid/maps) mappings"

: >"$out/procmaps_stacks.txt"
for _ in $(seq "$samples"); do
	eu-stack -p "$pid" 2>/dev/null | awk '/^#/ { printf "%s ", $2 } END { print "" }' >>"$out/procmaps_stacks.txt"
	sleep 0.02
done
echo
echo "== target busy (its loop allocates and frees: mmap/munmap churn)"
"$out/bench_procmaps" "$pid" "$out/procmaps_stacks.txt" "$secs"
kill -USR1 "$pid"
sleep 0.5
echo
echo "== target idle (sleeping), same stacks"
"$out/bench_procmaps" "$pid" "$out/procmaps_stacks.txt" "$secs"
