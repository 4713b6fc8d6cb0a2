#!/usr/bin/env bash
# Python frames in `ustack record --backend bpf`, what they cost and how
# right they are, side by side with native-only recording (--no-python) in
# one run, alternating, ROUNDS rounds (default 5), medians [min-max]:
#
#   events     tests/integration/progs/py_writes.py N threads (Debian's
#              python3.11; known call paths to os.write(/dev/null) in three
#              threads, counted by the program itself), recorded with
#              -e syscalls:sys_enter_write: events recorded and lost
#              (--stats), the share of the program's writes whose recorded
#              Python path is the program's own (lib/py_trace_paths.py,
#              the independent trace reader), and the in-kernel ns per
#              event of ustack's program (kernel.bpf_stats_enabled:
#              run_time_ns / run_cnt of ustack_tp, as bench/record/
#              kernel_ns.sh reads it), with and without --no-python
#   slowdown   bench/record/py_work.py 2 (CPU-bound Python, a ~90-frame
#              native stack) under `record --backend bpf -F 99` and
#              `-F 999`, against the same run unrecorded: the program's own
#              elapsed time (it prints it), so no process start is counted
#
# What the figures depend on: the ns per event on the CPU and the load (the
# ratio to --no-python less so); the share right on the events walked in
# the kernel (a write walked from a stack copy, its table not yet loaded,
# has no Python frames); the slowdown on the sampling rate and the stack
# depth. Root (BPF, bpf_stats), bpftool.
#   bash bench/python/record.sh [ROUNDS]      env: PY (default /usr/bin/python3.11), N (rounds of py_writes, default 2000:
#   the counters are read every ~0.2 s while the recorder runs; 400 rounds,
#   under a second here, were over before a reading and gave 0 ns)
set -uo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
PY=${PY:-/usr/bin/python3.11}
N=${N:-2000}
USTACK=${USTACK:-build/ustack}
[ "$(id -u)" -eq 0 ] || { echo "bench/python/record.sh: needs root" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "bench/python/record.sh: needs bpftool" >&2; exit 1; }
[ -x "$PY" ] && [ -x "$USTACK" ] || { echo "bench/python/record.sh: needs $PY and $USTACK (make)" >&2; exit 1; }
OUT=build/bench/python
mkdir -p "$OUT"
WRITES=tests/integration/progs/py_writes.py
PATHS=tests/integration/lib/py_trace_paths.py

old=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q -w kernel.bpf_stats_enabled=$old' EXIT
sysctl -q -w kernel.bpf_stats_enabled=1

. bench/lib/bpf_stats.sh

# one recording of py_writes: "ns_per_event events lost right_percent"
events_run() { # MODE (py|nopy)
	local flag=; [ "$1" = nopy ] && flag=--no-python
	local id0 last now pid
	id0=$(bpf_max_id)
	"$USTACK" record --backend bpf $flag --stats -e syscalls:sys_enter_write -o "$OUT/$1.data" \
		-- "$PY" "$WRITES" "$N" threads >"$OUT/$1.prog" 2>"$OUT/$1.err" &
	pid=$!
	last="0 0"
	while kill -0 $pid 2>/dev/null; do
		now=$(bpf_reading "$id0" ustack_tp)
		[ "${now#* }" != 0 ] && last=$now
		sleep 0.1
	done
	wait $pid || { echo "bench/python/record.sh: record failed: $(tail -3 "$OUT/$1.err")" >&2; exit 1; }
	python3 "$PATHS" "$OUT/$1.data" >"$OUT/$1.paths" || exit 1
	python3 - "$OUT/$1.prog" "$OUT/$1.paths" "$OUT/$1.err" "$last" <<'PYEOF'
import os, sys
sys.path.insert(0, "tests/integration/lib")
from py_paths_compare import share
same, total, _, _, _ = share(sys.argv[1], sys.argv[2])
st = {}
for line in open(sys.argv[3]):
    if line.startswith("stat "):
        k, _, v = line[5:].strip().partition(" ")
        st[k] = v
ns, cnt = (int(x) for x in sys.argv[4].split())
print("%.0f %s %s %.2f" % (ns / max(cnt, 1), st.get("events", "?"), st.get("lost", "?"),
                           100.0 * same / max(total, 1)))
PYEOF
}

# py_work's own elapsed seconds under MODE (bare, F99, F999)
work_run() {
	local out
	case $1 in
	bare) out=$("$PY" bench/record/py_work.py 2) ;;
	F99) out=$("$USTACK" record --backend bpf -q -F 99 -o "$OUT/w99.data" -- "$PY" bench/record/py_work.py 2) ;;
	F999) out=$("$USTACK" record --backend bpf -q -F 999 -o "$OUT/w999.data" -- "$PY" bench/record/py_work.py 2) ;;
	esac
	# "py_work: N rounds, ... T s": rounds per second
	awk '{ print $2 / $(NF - 1) }' <<<"$out"
}

: >"$OUT/results"
for r in $(seq "$ROUNDS"); do
	echo "round $r of $ROUNDS ..." >&2
	if [ $((r % 2)) = 1 ]; then order="py nopy"; else order="nopy py"; fi
	for m in $order; do echo "ev_$m $(events_run $m)" >>"$OUT/results"; done
	for m in bare F99 F999; do echo "work_$m $(work_run $m)" >>"$OUT/results"; done
done
echo "# $ROUNDS rounds, alternating; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg); $(uname -r); $("$PY" -c 'import sys; print(sys.version.split()[0])')"
python3 - "$OUT/results" <<'PYEOF'
import statistics, sys
r = {}
for line in open(sys.argv[1]):
    k, *v = line.split()
    r.setdefault(k, []).append([float(x) for x in v])
def col(k, i):
    v = [x[i] for x in r[k]]
    return statistics.median(v), min(v), max(v)
print("| py_writes, -e syscalls:sys_enter_write | ns per event in the kernel | events | lost | Python path right |")
print("|---|---:|---:|---:|---:|")
for k, name in (("ev_py", "Python frames (default)"), ("ev_nopy", "--no-python")):
    ns, ev, lost, right = (col(k, i) for i in range(4))
    print("| %s | %.0f [%.0f-%.0f] | %.0f | %.0f | %s |" % (name, ns[0], ns[1], ns[2], ev[0], lost[2],
          "%.2f%% [%.2f-%.2f]" % right if k == "ev_py" else "-"))
print("Python frames cost %.0f ns per event in the kernel (%.2fx --no-python)" %
      (col("ev_py", 0)[0] - col("ev_nopy", 0)[0], col("ev_py", 0)[0] / col("ev_nopy", 0)[0]))
bare = col("work_bare", 0)[0]
print("| py_work.py 2 | rounds/s | slowdown |")
print("|---|---:|---:|")
for k, name in (("work_bare", "unrecorded"), ("work_F99", "record --backend bpf -F 99"), ("work_F999", "record --backend bpf -F 999")):
    m, lo, hi = col(k, 0)
    print("| %s | %.1f [%.1f-%.1f] | %+.1f%% |" % (name, m, lo, hi, 100.0 * (bare / m - 1)))
PYEOF
