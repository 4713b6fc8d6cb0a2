#!/usr/bin/env bash
# Where ustack's BPF program spends its time on kernel_ns.sh's write storm,
# by the CPU's own samples: `perf record -a -g` over the storm while
# `ustack record --backend bpf -e syscalls:sys_enter_write` records it (the
# JIT-compiled program's functions have symbols: bpf_prog_<tag>_<name>).
# Prints the share of the storm's samples inside this recorder's ustack_tp
# run (other recorders' programs of that name are left out) (the program and
# the kernel functions it calls) by symbol, self time: a machine-dependent
# measure (cache misses show where they land), beside bpf_breakdown.sh's
# in-kernel ns.
#
#   bash bench/record/bpf_perf.sh [TOP]    (root, perf; default TOP 25)
#   env: STORM (default "-t 4 -n 1000000": still running when perf stops), USTACK (default build/ustack)
set -euo pipefail
cd "$(dirname "$0")/../.."
TOP=${1:-25}
STORM=${STORM:--t 4 -n 1000000}
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
# the storm: the recorder's child (the programs run in its threads)
storm=
for _ in $(seq 100); do
	storm=$(pgrep -P $rec | head -1 || true)
	[ -n "$storm" ] && break
	sleep 0.1
done
[ -n "$storm" ] || { echo "bpf_perf.sh: the storm did not start" >&2; exit 1; }
sleep 1 # the recorder's program loaded and walking
perf record -q -a -g -F 4999 -o "$OUT/perf.data" -- sleep 2 >/dev/null 2>&1
wait $rec
# samples of the storm's threads whose call chain passes through this
# recorder's program, by the function they were taken in. Its program is
# the ustack_tp that ran most in the storm's threads and walked no other
# process (perf names a program by its first function's tag, not the tag
# bpftool and /proc/kallsyms show; another recorder's program on the
# tracepoint returns early for the storm, or, recording every process
# (-a), walks others' stacks too)
perf script -i "$OUT/perf.data" -F pid,ip,sym 2>/dev/null | python3 -c '
import re, sys
top, storm = int(sys.argv[1]), sys.argv[2]
chains, chain, pid = [], [], None
def end():
    if chain:
        chains.append((pid, chain))
for line in sys.stdin:
    line = line.rstrip()
    if not line:
        end()
        chain, pid = [], None
    elif pid is None:
        pid = line.split()[0]
    else:
        parts = line.split(None, 1)
        chain.append(parts[1] if len(parts) > 1 else parts[0])
end()
here, there = {}, {}
for p, c in chains:
    for f in set(c):
        if re.match(r"bpf_prog_[0-9a-f]+_ustack_tp$", f):
            d = here if p == storm else there
            d[f] = d.get(f, 0) + 1
ok = [f for f in here if there.get(f, 0) * 100 <= here[f]]
if not ok:
    print("no ustack_tp program of the storm alone: %s" % here); sys.exit(1)
mine = max(ok, key=here.get)
print("ustack_tp programs in the storm: " + ", ".join("%s %d (%d elsewhere)" % (f, n, there.get(f, 0)) for f, n in here.items()))
by, total = {}, 0
for p, c in chains:
    if p == storm and mine in c:
        total += 1
        by[c[0]] = by.get(c[0], 0) + 1
print("samples inside %s in the storm (pid %s): %d" % (mine, storm, total))
for s, c in sorted(by.items(), key=lambda kv: -kv[1])[:top]:
    print("%5.1f%%  %s" % (100.0 * c / max(total, 1), s))' "$TOP" "$storm"
