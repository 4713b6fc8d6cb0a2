#!/usr/bin/env bash
# Snapshot benchmark: wall time of one whole-process stack snapshot of a
# 33-thread program (tests/integration/progs/snap_futex32.c: 32 threads in
# futex waits + main, gcc -O2, no frame pointers, no SFrame), by
#
#   ustack      build/ustack snapshot -p PID                (text, the default)
#   ustack-raw  build/ustack snapshot -p PID --format raw
#   eu-stack    eu-stack -p PID
#   gdb         gdb -nx -batch -p PID -ex "thread apply all bt"
#
# each run as a whole process, from spawn to exit, output to /dev/null, by
# bench/snapshot/alternate.c: the tools take turns, RUNS rounds (a multiple
# of 4 keeps the design whole) after 2 warm-up rounds, in the orders of a
# Williams design (ustack, ustack-raw, gdb, eu-stack; ustack-raw, eu-stack,
# ustack, gdb; ...), so that a change of load on a shared machine hits all
# of them alike and each tool comes right after each other one (gdb, whose
# exit slows the next run, included) equally often; 20 ms of quiet after
# each run, not timed. Printed: median, min and max per tool, ratios of
# medians, CPU model, load average before and after. Then the longest time
# one thread was stopped, from `ustack snapshot --stats`.
#
#   bash bench/snapshot/run.sh [RUNS]        (default 20; needs root/ptrace)
#   USTACK=/path/to/ustack bash bench/snapshot/run.sh   (another build)
set -eu
cd "$(dirname "$0")/../.."
RUNS=${1:-20}
CC=${CC:-gcc}
OUT=build/bench/snapshot
mkdir -p "$OUT"

for t in eu-stack gdb; do
	command -v $t >/dev/null || { echo "bench/snapshot: $t not installed" >&2; exit 1; }
done
if [ -z "${USTACK:-}" ]; then
	make -s -j2 build/ustack >/dev/null
	USTACK=build/ustack
	built="build/ustack at $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src include 2>/dev/null || echo '+changes')"
else
	built="$USTACK (given)"
fi
$CC -O2 -pthread -o "$OUT/snap_futex32" tests/integration/progs/snap_futex32.c
$CC -O2 -Wall -o "$OUT/alternate" bench/snapshot/alternate.c

"$OUT/snap_futex32" >"$OUT/target.out" &
pid=$!
trap 'kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 500); do grep -q ready "$OUT/target.out" 2>/dev/null && break; sleep 0.01; done
sleep 0.2
nt=$(ls /proc/$pid/task | wc -l)

GDB_ARGS=(gdb -nx -batch -iex 'set debuginfod enabled off' -p $pid -ex 'thread apply all bt')

# every tool must really see every thread, or the timing means nothing
u=$($USTACK snapshot -p $pid | grep -c '^TID ')
r=$($USTACK snapshot -p $pid --format raw | grep -c '^TID ')
e=$(eu-stack -p $pid | grep -c '^TID ')
g=$("${GDB_ARGS[@]}" 2>/dev/null | grep -c '^Thread ')
if [ "$u" -ne "$nt" ] || [ "$r" -ne "$nt" ] || [ "$e" -ne "$nt" ] || [ "$g" -ne "$nt" ]; then
	echo "bench/snapshot: threads seen: target $nt, ustack $u, ustack raw $r, eu-stack $e, gdb $g" >&2
	exit 1
fi

load0=$(cut -d' ' -f1-3 /proc/loadavg)
"$OUT/alternate" "$RUNS" 2 \
	ustack $USTACK snapshot -p $pid :: \
	ustack-raw $USTACK snapshot -p $pid --format raw :: \
	eu-stack eu-stack -p $pid :: \
	gdb "${GDB_ARGS[@]}" >"$OUT/times"
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# "median min max" in ms of one tool's runs
stats() {
	awk -v t="$1" '$1 == t { print $2 }' "$OUT/times" | sort -n |
		awk '{ v[NR] = $1 } END {
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.2f %.2f %.2f\n", m / 1000, v[1] / 1000, v[NR] / 1000 }'
}
declare -A MED MIN MAX
for t in ustack ustack-raw eu-stack gdb; do
	read -r MED[$t] MIN[$t] MAX[$t] < <(stats $t)
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }

# the longest stop of one thread, as ustack measures it (stderr of --stats)
for _ in $(seq "$RUNS"); do
	$USTACK snapshot -p $pid --stats 2>&1 >/dev/null |
		sed -nE 's/.*longest stop ([0-9.]+) us, total ([0-9.]+) us.*/\1 \2/p'
done >"$OUT/stops"
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
stop_med=$(awk '{ print $1 }' "$OUT/stops" | median)
stop_max=$(awk '{ print $1 }' "$OUT/stops" | sort -n | tail -1)
total_med=$(awk '{ print $2 }' "$OUT/stops" | median)

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "snapshot of snap_futex32 ($nt threads): wall time of the whole process, $RUNS runs each,"
echo "alternated in a Williams design (each tool right after each other one equally often), 20 ms apart, after 2 warm-up rounds"
echo "($built;" \
	"$(eu-stack --version 2>&1 | head -1); $(gdb --version | head -1))"
echo "on $cpu, $(nproc) CPUs, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'),"
echo "load average $load0 before, $load1 after:"
echo
echo "| tool | median | min | max | median / ustack (text) | median / ustack (raw) |"
echo "|---|---:|---:|---:|---:|---:|"
for t in ustack ustack-raw eu-stack gdb; do
	echo "| $t | ${MED[$t]} ms | ${MIN[$t]} ms | ${MAX[$t]} ms |" \
		"$(ratio ${MED[$t]} ${MED[ustack]})x | $(ratio ${MED[$t]} ${MED[ustack-raw]})x |"
done
echo
echo "longest stop of one thread (ustack --stats, text, $RUNS snapshots): median $stop_med us, max $stop_max us;"
echo "all $nt threads together stopped for a median $total_med us per snapshot" \
	"($(awk -v t="$total_med" -v n="$nt" 'BEGIN { printf "%.0f", t / n }') us per thread)"
eu_ratio=$(ratio ${MED[eu-stack]} ${MED[ustack]})
if awk -v r="$eu_ratio" 'BEGIN { exit !(r >= 10) }'; then
	echo "target (text: >= 10x faster than eu-stack, medians): met (${eu_ratio}x)"
else
	echo "target (text: >= 10x faster than eu-stack, medians): NOT met (${eu_ratio}x)"
fi
