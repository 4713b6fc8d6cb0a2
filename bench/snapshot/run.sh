#!/usr/bin/env bash
# Snapshot benchmark: wall time of one whole-process stack snapshot of a
# 33-thread program (tests/integration/progs/snap_futex32.c: 32 threads in
# futex waits + main, gcc -O2, no frame pointers, no SFrame), by
#
#   ustack      build/ustack snapshot -p PID                (text, the default)
#   ustack-raw  build/ustack snapshot -p PID --format raw
#   ustack-stop-all  build/ustack snapshot -p PID --stop-all (text; every
#               thread stopped, as before threads blocked in the kernel were
#               read without a stop)
#   eu-stack    eu-stack -p PID
#   gdb         gdb -nx -batch -p PID -ex "thread apply all bt"
#
# and, to split a whole-process time into start-up and work per thread:
#
#   true        /bin/true (what starting and ending a process costs here)
#   ustack-2t   ustack snapshot of the same program with 1 thread + main
#   eu-stack-2t eu-stack -p of it
#
# each run as a whole process, from spawn to exit, output to /dev/null, by
# bench/snapshot/alternate.c: the tools take turns, RUNS rounds (a multiple
# of 8 keeps the design whole: 8 tools, an even count, take 8 orders)
# after 2 warm-up rounds, in the orders of a Williams design, so that a
# change of load on a shared machine hits all
# of them alike and each tool comes right after each other one (gdb, whose
# exit slows the next run, included) equally often; 20 ms of quiet after
# each run, not timed. Printed: median, min and max per tool, ratios of
# medians, CPU model, load average before and after; the time per thread
# unwound, (median with 33 threads - median with 2) / 31, and the ratio of
# the medians with /bin/true's subtracted: a whole-process ratio of two
# short commands moves with the machine's process start-up cost, these do
# not. Then, from
# `ustack snapshot --stats`, how many threads were read without a stop and
# the longest time one thread was stopped, by default and with --stop-all.
#
#   bash bench/snapshot/run.sh [RUNS]        (default 24; needs root/ptrace)
#   USTACK=/path/to/ustack bash bench/snapshot/run.sh   (another build)
set -eu
cd "$(dirname "$0")/../.."
RUNS=${1:-24}
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
$CC -O2 -Wall -o "$OUT/alternate" bench/snapshot/alternate.c
. bench/snapshot/targets.sh
start_targets

GDB_ARGS=(gdb -nx -batch -iex 'set debuginfod enabled off' -p $pid -ex 'thread apply all bt')

# every tool must really see every thread, or the timing means nothing
u=$($USTACK snapshot -p $pid | grep -c '^TID ')
r=$($USTACK snapshot -p $pid --format raw | grep -c '^TID ')
a=$($USTACK snapshot -p $pid --stop-all | grep -c '^TID ')
e=$(eu-stack -p $pid | grep -c '^TID ')
g=$("${GDB_ARGS[@]}" 2>/dev/null | grep -c '^Thread ')
u2=$($USTACK snapshot -p $pid2 | grep -c '^TID ')
e2=$(eu-stack -p $pid2 | grep -c '^TID ')
if [ "$u" -ne "$nt" ] || [ "$r" -ne "$nt" ] || [ "$a" -ne "$nt" ] || [ "$e" -ne "$nt" ] ||
	[ "$g" -ne "$nt" ] || [ "$u2" -ne "$nt2" ] || [ "$e2" -ne "$nt2" ]; then
	echo "bench/snapshot: threads seen: target $nt, ustack $u, ustack raw $r, ustack --stop-all $a," \
		"eu-stack $e, gdb $g; second target $nt2, ustack $u2, eu-stack $e2" >&2
	exit 1
fi

load0=$(cut -d' ' -f1-3 /proc/loadavg)
"$OUT/alternate" "$RUNS" 2 \
	ustack $USTACK snapshot -p $pid :: \
	ustack-raw $USTACK snapshot -p $pid --format raw :: \
	ustack-stop-all $USTACK snapshot -p $pid --stop-all :: \
	eu-stack eu-stack -p $pid :: \
	gdb "${GDB_ARGS[@]}" :: \
	true /bin/true :: \
	ustack-2t $USTACK snapshot -p $pid2 :: \
	eu-stack-2t eu-stack -p $pid2 >"$OUT/times"
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# "median min max" in ms of one tool's runs
stats() {
	awk -v t="$1" '$1 == t { print $2 }' "$OUT/times" | sort -n |
		awk '{ v[NR] = $1 } END {
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.2f %.2f %.2f\n", m / 1000, v[1] / 1000, v[NR] / 1000 }'
}
declare -A MED MIN MAX
for t in ustack ustack-raw ustack-stop-all eu-stack gdb true ustack-2t eu-stack-2t; do
	read -r MED[$t] MIN[$t] MAX[$t] < <(stats $t)
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }

# threads read without a stop, and the longest stop of one thread, as
# ustack measures them (stderr of --stats), by default and with --stop-all
stop_stats() {
	for _ in $(seq "$RUNS"); do
		$USTACK snapshot -p $pid --stats "$@" 2>&1 >/dev/null |
			sed -nE 's/.* ([0-9]+) without a stop .*longest stop ([0-9.]+) us, total ([0-9.]+) us.*/\1 \2 \3/p'
	done
}
stop_stats >"$OUT/stops"
stop_stats --stop-all >"$OUT/stops-all"
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# "median max" of column $1 of file $2
med_max() { echo "$(awk -v c="$1" '{ print $c }' "$2" | median) $(awk -v c="$1" '{ print $c }' "$2" | sort -n | tail -1)"; }
read -r free_med free_max < <(med_max 1 "$OUT/stops")
read -r stop_med stop_max < <(med_max 2 "$OUT/stops")
read -r all_med all_max < <(med_max 2 "$OUT/stops-all")
read -r all_total _ < <(med_max 3 "$OUT/stops-all")

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
for t in ustack ustack-raw ustack-stop-all eu-stack gdb true ustack-2t eu-stack-2t; do
	echo "| $t | ${MED[$t]} ms | ${MIN[$t]} ms | ${MAX[$t]} ms |" \
		"$(ratio ${MED[$t]} ${MED[ustack]})x | $(ratio ${MED[$t]} ${MED[ustack-raw]})x |"
done
# work per thread: the slope between the two targets (each median already
# holds one process start); start-up: /bin/true's median
per_thread() { awk -v a="$1" -v b="$2" -v n=$((nt - nt2)) 'BEGIN { printf "%.1f", (a - b) * 1000 / n }'; }
minus_true() { awk -v a="$1" -v t="${MED[true]}" 'BEGIN { printf "%.2f", a - t }'; }
pt_u=$(per_thread ${MED[ustack]} ${MED[ustack-2t]})
pt_e=$(per_thread ${MED[eu-stack]} ${MED[eu-stack-2t]})
echo
echo "per thread unwound (median with $nt threads - median with $nt2, / $((nt - nt2))):" \
	"ustack text $pt_u us, eu-stack $pt_e us: eu-stack / ustack $(ratio $pt_e $pt_u)x"
echo "start-up (/bin/true, whole process): median ${MED[true]} ms; medians minus it:" \
	"ustack text $(minus_true ${MED[ustack]}) ms, eu-stack $(minus_true ${MED[eu-stack]}) ms:" \
	"eu-stack / ustack $(ratio "$(minus_true ${MED[eu-stack]})" "$(minus_true ${MED[ustack]})")x"
echo
echo "ustack --stats, $RUNS text snapshots each: threads read without a stop (blocked in the kernel):" \
	"median $free_med of $nt (max $free_max); longest stop of one thread: median $stop_med us, max $stop_max us;"
echo "with --stop-all: longest stop median $all_med us, max $all_max us; all $nt threads together" \
	"stopped for a median $all_total us ($(awk -v t="$all_total" -v n="$nt" 'BEGIN { printf "%.0f", t / n }') us per thread)"
eu_ratio=$(ratio ${MED[eu-stack]} ${MED[ustack]})
if awk -v r="$eu_ratio" 'BEGIN { exit !(r >= 10) }'; then
	echo "target (text: >= 10x faster than eu-stack, medians of the whole process): met (${eu_ratio}x)"
else
	echo "target (text: >= 10x faster than eu-stack, medians of the whole process): NOT met (${eu_ratio}x)"
fi
