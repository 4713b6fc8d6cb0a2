#!/usr/bin/env bash
# What the bpf backend costs, per binary, binaries alternating in one call:
#   1. the sampling program's time per sample in the kernel
#      (kernel.bpf_stats_enabled: run_time_ns / run_cnt of ustack_sample,
#      read 5 s into a cpu-clock -F 4999 recording of futex_demo's CPU-bound
#      work, 2 threads);
#   2. the whole `ustack record --backend bpf -- true`, start to exit (mostly
#      loading the programs: the verifier).
# Medians [min-max] of ROUNDS rounds.
#
#   bash bench/record/bpf_cost.sh [-r ROUNDS] USTACK-BINARY...
#   (default: build/ustack; root: bpf_stats and the BPF backend need it)
#
# To compare with an older commit: build it in a worktree and give both
# binaries, e.g. git worktree add /tmp/old COMMIT && make -C /tmp/old build/ustack.
set -euo pipefail
ROUNDS=3
if [ "${1:-}" = -r ]; then ROUNDS=$2; shift 2; fi
[ $# -gt 0 ] || set -- build/ustack
[ "$(id -u)" -eq 0 ] || { echo "bench/record/bpf_cost.sh: needs root (kernel.bpf_stats_enabled)" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "bench/record/bpf_cost.sh: needs bpftool" >&2; exit 1; }
OUT=build/bench/record/bpf_cost
mkdir -p "$OUT"
CC=${CC:-gcc}
$CC -O2 -fomit-frame-pointer -g -o "$OUT/futex_demo" examples/futex_demo.c -lpthread

old=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q -w kernel.bpf_stats_enabled=$old' EXIT
sysctl -q -w kernel.bpf_stats_enabled=1

declare -A NS START
for r in $(seq "$ROUNDS"); do
	echo "round $r of $ROUNDS ..." >&2
	for b in "$@"; do
		"$b" record --backend bpf -q -e cpu-clock -F 4999 -o "$OUT/run.data" -- \
			"$OUT/futex_demo" -t 2 -n 60000 -l 20 -u 200 >/dev/null 2>&1 &
		pid=$!
		sleep 5
		ns=$(bpftool prog show | awk '/ustack_sample/ {
			for (i = 1; i <= NF; i++) { if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) }
			if (c) printf "%.0f\n", t / c }' | tail -1)
		wait "$pid"
		NS[$b]+="${ns:-0} "
		s=$(date +%s%N)
		"$b" record --backend bpf -q -e cpu-clock -F 999 -o "$OUT/true.data" -- true >/dev/null 2>&1
		e=$(date +%s%N)
		START[$b]+="$(((e - s) / 1000000)) "
	done
done

stat() { tr ' ' '\n' <<<"$1" | awk 'NF { v[++n] = $1 } END {
	for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
	printf "%s [%s-%s]", (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2, v[1], v[n] }'; }
echo "command: bash bench/record/bpf_cost.sh -r $ROUNDS $*"
echo "CPU $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), kernel $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| binary | ns per sample in ustack_sample | record -- true, ms |"
echo "|---|---:|---:|"
for b in "$@"; do
	echo "| $b | $(stat "${NS[$b]}") | $(stat "${START[$b]}") |"
done
