#!/usr/bin/env bash
# Time inside the kernel per event, ustack's BPF unwinder against bpftrace,
# on one tracepoint (syscalls:sys_enter_write) of a 4-thread write storm
# (tests/integration/progs/write_storm.c, built as bench/record/backends.sh
# builds it). From kernel.bpf_stats_enabled: run_time_ns / run_cnt of the
# tool's own program on the tracepoint (bpftool prog show -j: the program
# of the tool's name loaded after the tool started, sys_enter_write for
# bpftrace, ustack_tp for ustack; if another process loads one of that name
# meanwhile, the one that ran most), read every 0.1 s while the storm
# runs; the last reading counts. Tools alternating, ROUNDS rounds, medians
# [min-max]:
#
#   count      bpftrace '... /pid == cpid/ { @ = count(); }'         (the floor:
#              a program that only counts)
#   kstack     bpftrace '... /pid == cpid/ { @[kstack] = count(); }'
#   ustack-fp  bpftrace '... /pid == cpid/ { @[ustack(127)] = count(); }' on
#              the storm built with frame pointers (bpftrace walks only those)
#   ustack     ustack record --backend bpf -e syscalls:sys_enter_write on the
#              storm built without frame pointers (unwound from its CFI)
#   ustack-fpbin  the same on the frame-pointer build: the very binary and
#              stacks bpftrace's ustack walks (ustack still unwinds from CFI)
#
# The order rotates by one tool each round, so that no tool always runs
# first or right after the same one. What each walk found is checked on
# the last round's output and printed: the frames per event and how many
# events carry the whole call path the storm chose (storm_thread -> fa ->
# fb -> fc -> write, three of f0..f15): a cheaper walk that stops early or
# skips a frame does less work, so the ns compare only with the depths.
#
# Both tools' tracepoint programs run for every process's writes (a
# tracepoint program is attached to the whole machine) and return early
# for those of other processes: bpftrace by pid, ustack by its set of
# recorded processes. Others' writes are cheap runs that lower an average
# a little (ustack's run count came out 0.3M above the storm's 1M writes
# once, under other helpers' builds).
#
#   bash bench/record/kernel_ns.sh [ROUNDS]    (default 5; root, bpftool, bpftrace)
#   env: STORM (write_storm arguments, default "-t 4 -n 1000000": long enough to be read while it runs), USTACK
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
STORM=${STORM:--t 4 -n 1000000}
CC=${CC:-gcc}
[ "$(id -u)" -eq 0 ] || { echo "bench/record/kernel_ns.sh: needs root (kernel.bpf_stats_enabled)" >&2; exit 1; }
for t in bpftool bpftrace; do
	command -v $t >/dev/null || { echo "bench/record/kernel_ns.sh: needs $t" >&2; exit 1; }
done
if [ -z "${USTACK:-}" ]; then
	make -s -j2 build/ustack >/dev/null
	USTACK=build/ustack
fi
OUT=build/bench/record/kernel_ns
mkdir -p "$OUT"
$CC -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -g -o "$OUT/storm" \
	tests/integration/progs/write_storm.c -lpthread
$CC -O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls -g -o "$OUT/storm-fp" \
	tests/integration/progs/write_storm.c -lpthread

old=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q -w kernel.bpf_stats_enabled=$old' EXIT
sysctl -q -w kernel.bpf_stats_enabled=1

TP=tracepoint:syscalls:sys_enter_write
start() {
	case $1 in
	count) bpftrace -e "$TP /pid == cpid/ { @ = count(); }" -c "$OUT/storm $STORM" ;;
	kstack) bpftrace -e "$TP /pid == cpid/ { @[kstack] = count(); }" -c "$OUT/storm $STORM" ;;
	ustack-fp) bpftrace -e "$TP /pid == cpid/ { @[ustack(127)] = count(); }" -c "$OUT/storm-fp $STORM" ;;
	ustack) $USTACK record --backend bpf -q -e syscalls:sys_enter_write -o "$OUT/ustack.data" -- \
		"$OUT/storm" $STORM ;;
	ustack-fpbin) $USTACK record --backend bpf -q -e syscalls:sys_enter_write -o "$OUT/ustack-fpbin.data" -- \
		"$OUT/storm-fp" $STORM ;;
	esac
}
# the highest program id now (programs loaded later have higher ids)
. bench/lib/bpf_stats.sh


TOOLS="count kstack ustack-fp ustack ustack-fpbin"
ntools=$(wc -w <<<"$TOOLS")
# the tools from the (r mod ntools)-th on, then the first ones
rotated() { local a=($TOOLS) i; for i in $(seq 0 $((ntools - 1))); do echo "${a[(i + $1) % ntools]}"; done; }
: >"$OUT/ns"
for r in $(seq "$ROUNDS"); do
	echo "round $r of $ROUNDS ..." >&2
	for t in $(rotated $((r - 1))); do
		name=sys_enter_write
		case $t in ustack | ustack-fpbin) name=ustack_tp ;; esac
		id0=$(bpf_max_id)
		start $t >"$OUT/$t.out" 2>&1 &
		pid=$!
		last="0 0"
		while kill -0 $pid 2>/dev/null; do
			now=$(bpf_reading "$id0" $name)
			[ "${now#* }" != 0 ] && last=$now
			sleep 0.1
		done
		wait $pid || { echo "bench/record/kernel_ns.sh: $t failed:" >&2; cat "$OUT/$t.out" >&2; exit 1; }
		read -r ns cnt <<<"$last"
		[ "$cnt" -gt 0 ] || { echo "bench/record/kernel_ns.sh: no reading of $t's program" >&2; exit 1; }
		echo "$t $ns $cnt" >>"$OUT/ns"
	done
done

stat() { awk -v t="$1" '$1 == t { printf "%.0f\n", $2 / $3 }' "$OUT/ns" | sort -n |
	awk '{ v[NR] = $1 } END { printf "%s [%s-%s]", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[1], v[NR] }'; }
runs() { awk -v t="$1" '$1 == t { print $3 }' "$OUT/ns" | sort -n | awk '{ v[NR] = $1 } END { print v[1] "-" v[NR] }'; }
echo "command: bash bench/record/kernel_ns.sh $ROUNDS   (STORM=\"$STORM\")"
echo "CPU $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), kernel $(uname -r), $(nproc) CPUs;" \
	"$(bpftrace --version); $($USTACK --version | head -1); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| program on $TP | ns per event, median [min-max] of $ROUNDS | events counted in a reading |"
echo "|---|---:|---:|"
echo "| bpftrace @ = count() | $(stat count) | $(runs count) |"
echo "| bpftrace @[kstack] = count() | $(stat kstack) | $(runs kstack) |"
echo "| bpftrace @[ustack(127)] = count(), frame pointers | $(stat ustack-fp) | $(runs ustack-fp) |"
echo "| ustack record --backend bpf, no frame pointers | $(stat ustack) | $(runs ustack) |"
echo "| ustack record --backend bpf, the frame-pointer build (same binary as bpftrace's) | $(stat ustack-fpbin) | $(runs ustack-fpbin) |"

# What each walk found, last round: frames per event (share of events at
# each depth, the most frequent first). bpftrace prints its map after the
# storm has exited, so its user frames stay addresses; the depth says what
# it walked. ustack's stacks come named: "whole" counts the events whose
# stack is clone3;start_thread;storm_thread;fa;fb;fc;write.
depths() { python3 -c '
import re, sys
kind, path = sys.argv[1], sys.argv[2]
depth, whole, total = {}, 0, 0
if kind == "bpftrace":
    for m in re.finditer(r"@\[\n(.*?)\n\]: (\d+)", open(path).read(), re.S):
        n, c = len(m.group(1).split("\n")), int(m.group(2))
        depth[n] = depth.get(n, 0) + c; total += c
else:
    for line in open(path):
        stack, c = line.rsplit(" ", 1)
        frames, c = stack.split(";")[1:], int(c)   # the first is the thread
        depth[len(frames)] = depth.get(len(frames), 0) + c; total += c
        if re.fullmatch(r"clone3;start_thread;storm_thread;f\d+;f\d+;f\d+;write", ";".join(frames)):
            whole += c
top = sorted(depth.items(), key=lambda kv: -kv[1])[:3]
if len(sys.argv) > 3:   # "mode": the most frequent depth alone
    print(top[0][0]); sys.exit(0)
print(", ".join("%d frames %.1f%%" % (n, 100.0 * c / total) for n, c in top) +
      ("; whole path %.1f%%" % (100.0 * whole / total) if kind != "bpftrace" else "") +
      " (%d events)" % total)' "$@"; }
for t in ustack ustack-fpbin; do
	$USTACK report -i "$OUT/$t.data" --format folded >"$OUT/$t.folded"
done
echo
echo "frames per event, last round (storm_thread -> fa -> fb -> fc -> write(), 7 frames whole):"
echo "  bpftrace ustack(127), frame pointers: $(depths bpftrace "$OUT/ustack-fp.out")"
echo "  ustack, no frame pointers:            $(depths ustack "$OUT/ustack.folded")"
echo "  ustack, frame-pointer build:          $(depths ustack "$OUT/ustack-fpbin.folded")"
# the same binary, the same events: ustack against bpftrace's walk, whole
# and above the counting floor, and per frame each walk returned
med() { stat "$1" | cut -d' ' -f1; }
awk -v u="$(med ustack-fpbin)" -v b="$(med ustack-fp)" -v f="$(med count)" \
	-v ud="$(depths ustack "$OUT/ustack-fpbin.folded" mode)" -v bd="$(depths bpftrace "$OUT/ustack-fp.out" mode)" 'BEGIN {
	printf "ustack / bpftrace ustack(127), the same binary: %.2fx (above the count floor: %.2fx); ", u / b, (u - f) / (b - f)
	printf "per frame returned, above the floor: ustack %.0f ns (%d frames), bpftrace %.0f ns (%d frames)\n",
		(u - f) / ud, ud, (b - f) / bd, bd }'
