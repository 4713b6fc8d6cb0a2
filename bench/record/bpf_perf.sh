#!/usr/bin/env bash
# Where ustack's BPF program spends its time on kernel_ns.sh's write storm,
# by the CPU's own samples: `perf record -a -g` over the storm while
# `ustack record --backend bpf -e syscalls:sys_enter_write` records it (the
# JIT-compiled program's functions have symbols: bpf_prog_<tag>_<name>).
# Prints the share of the samples inside ustack_tp's run (the program and
# the kernel functions it calls) by symbol, self time: a machine-dependent
# measure (cache misses show where they land), beside bpf_breakdown.sh's
# in-kernel ns.
#
#   bash bench/record/bpf_perf.sh [TOP]    (root, perf; default TOP 25)
#   env: STORM (default "-t 4 -n 400000"), USTACK (default build/ustack)
set -euo pipefail
cd "$(dirname "$0")/../.."
TOP=${1:-25}
STORM=${STORM:--t 4 -n 400000}
CC=${CC:-gcc}
[ "$(id -u)" -eq 0 ] || { echo "bpf_perf.sh: needs root" >&2; exit 1; }
command -v perf >/dev/null || { echo "bpf_perf.sh: needs perf" >&2; exit 1; }
if [ -z "${USTACK:-}" ]; then
	make -s -j2 build/ustack >/dev/null
	USTACK=build/ustack
fi
OUT=build/bench/record/bpf_perf
mkdir -p "$OUT"
$CC -O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls -g -o "$OUT/storm-fp" \
	tests/integration/progs/write_storm.c -lpthread
"$USTACK" record --backend bpf -q -e syscalls:sys_enter_write -o "$OUT/ustack.data" -- \
	"$OUT/storm-fp" $STORM >"$OUT/ustack.out" 2>&1 &
rec=$!
sleep 0.5 # the program loaded and the storm running
perf record -q -a -g -F 4999 -o "$OUT/perf.data" -- sleep 2 >/dev/null 2>&1
wait $rec
# samples whose call chain passes through the tracepoint program, by the
# function they were taken in
perf script -i "$OUT/perf.data" -F ip,sym 2>/dev/null | python3 -c '
import sys
top = int(sys.argv[1])
by, total, chain = {}, 0, []
def flush():
    global total
    if chain and any("_ustack_tp" in f for f in chain):
        total += 1
        by[chain[0]] = by.get(chain[0], 0) + 1
for line in sys.stdin:
    line = line.strip()
    if not line:
        flush(); chain = []; continue
    parts = line.split(None, 1)
    chain.append(parts[1] if len(parts) > 1 else parts[0])
flush()
print("samples inside ustack_tp: %d" % total)
for s, c in sorted(by.items(), key=lambda kv: -kv[1])[:top]:
    print("%5.1f%%  %s" % (100.0 * c / max(total, 1), s))' "$TOP"
