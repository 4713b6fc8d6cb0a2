#!/usr/bin/env bash
# Snapshot benchmark: wall time of one whole-process stack snapshot of a
# 33-thread program (tests/integration/progs/snap_futex32.c: 32 threads in
# futex waits + main, gcc -O2, no frame pointers, no SFrame), by
#
#   ustack    build/ustack snapshot -p PID --format raw
#   eu-stack  eu-stack -p PID
#   gdb       gdb -nx -batch -p PID -ex "thread apply all bt"
#
# in one run, each RUNS times (hyperfine when installed, else a loop timed
# with date +%s%N), medians and ratios printed as a markdown table. Then the
# longest time one thread was stopped, from `ustack snapshot --stats`.
#
#   bash bench/snapshot/run.sh [RUNS]        (default 10; needs root/ptrace)
set -eu
cd "$(dirname "$0")/../.."
RUNS=${1:-10}
CC=${CC:-gcc}
OUT=build/bench/snapshot
mkdir -p "$OUT"

for t in eu-stack gdb; do
	command -v $t >/dev/null || { echo "bench/snapshot: $t not installed" >&2; exit 1; }
done
make -s -j2 build/ustack >/dev/null
$CC -O2 -pthread -o "$OUT/snap_futex32" tests/integration/progs/snap_futex32.c

"$OUT/snap_futex32" >"$OUT/target.out" &
pid=$!
trap 'kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 500); do grep -q ready "$OUT/target.out" 2>/dev/null && break; sleep 0.01; done
sleep 0.2
nt=$(ls /proc/$pid/task | wc -l)

USTACK_CMD="build/ustack snapshot -p $pid --format raw"
EUSTACK_CMD="eu-stack -p $pid"
GDB_CMD="gdb -nx -batch -iex 'set debuginfod enabled off' -p $pid -ex 'thread apply all bt'"

# every tool must really see every thread, or the timing means nothing
u=$($USTACK_CMD | grep -c '^TID ')
e=$(eu-stack -p $pid | grep -c '^TID ')
g=$(eval "$GDB_CMD" 2>/dev/null | grep -c '^Thread ')
if [ "$u" -ne "$nt" ] || [ "$e" -ne "$nt" ] || [ "$g" -ne "$nt" ]; then
	echo "bench/snapshot: threads seen: target $nt, ustack $u, eu-stack $e, gdb $g" >&2
	exit 1
fi

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A MED
if command -v hyperfine >/dev/null; then
	tool="hyperfine $(hyperfine --version | awk '{ print $2 }') -N --warmup 2 --runs $RUNS"
	hyperfine -N --warmup 2 --runs "$RUNS" --export-csv "$OUT/hyperfine.csv" \
		-n ustack "$USTACK_CMD" -n eu-stack "$EUSTACK_CMD" -n gdb "$GDB_CMD" \
		>"$OUT/hyperfine.txt" 2>&1
	# command,mean,stddev,median,user,system,min,max (seconds)
	while IFS=, read -r name _ _ med _; do
		[ "$name" = command ] && continue
		MED[$name]=$(awk -v m="$med" 'BEGIN { printf "%.2f", m * 1000 }')
	done <"$OUT/hyperfine.csv"
else
	tool="a shell loop, $RUNS runs each after 2 warm-up runs (hyperfine not installed)"
	for name in ustack eu-stack gdb; do
		case $name in
		ustack) cmd=$USTACK_CMD ;; eu-stack) cmd=$EUSTACK_CMD ;; gdb) cmd=$GDB_CMD ;;
		esac
		for r in $(seq $((RUNS + 2))); do
			t0=$(date +%s%N)
			eval "$cmd" >/dev/null 2>&1
			t1=$(date +%s%N)
			[ "$r" -gt 2 ] && echo $(((t1 - t0) / 1000))
		done | median | awk '{ printf "%.2f\n", $1 / 1000 }' >"$OUT/med"
		MED[$name]=$(cat "$OUT/med")
	done
fi

# the longest stop of one thread, as ustack measures it (stderr of --stats)
for r in $(seq "$RUNS"); do
	build/ustack snapshot -p $pid --format raw --stats 2>&1 >/dev/null |
		sed -nE 's/.*longest stop ([0-9.]+) us, total ([0-9.]+) us.*/\1 \2/p'
done >"$OUT/stops"
stop_med=$(awk '{ print $1 }' "$OUT/stops" | median)
stop_max=$(awk '{ print $1 }' "$OUT/stops" | sort -n | tail -1)
total_med=$(awk '{ print $2 }' "$OUT/stops" | median)

echo "snapshot of snap_futex32 ($nt threads), median wall time of $RUNS runs ($tool)"
echo "on $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%d):"
echo
echo "| tool | median wall time | time / ustack |"
echo "|---|---:|---:|"
for name in ustack eu-stack gdb; do
	ratio=$(awk -v a="${MED[$name]}" -v b="${MED[ustack]}" 'BEGIN { printf "%.1fx", a / b }')
	echo "| $name | ${MED[$name]} ms | $ratio |"
done
echo
echo "longest stop of one thread (ustack --stats, $RUNS snapshots): median $stop_med us, max $stop_max us;"
echo "all $nt threads together stopped for a median $total_med us per snapshot" \
	"($(awk -v t="$total_med" -v n="$nt" 'BEGIN { printf "%.0f", t / n }') us per thread)"
eu_ratio=$(awk -v a="${MED[eu-stack]}" -v b="${MED[ustack]}" 'BEGIN { printf "%.1f", a / b }')
if awk -v r="$eu_ratio" 'BEGIN { exit !(r >= 5) }'; then
	echo "target (>= 5x faster than eu-stack): met (${eu_ratio}x)"
else
	echo "target (>= 5x faster than eu-stack): NOT met (${eu_ratio}x)"
fi
