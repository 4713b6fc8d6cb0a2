#!/usr/bin/env bash
# Symbolization benchmark: what source lines and inlined frames cost.
#
# (a) report: a trace of bench/symbolize/inline_work.c (gcc -O2 -g; every
#     getppid() marker inside a three-level always_inline chain, 128 distinct
#     stacks; libc with lines when libc6-dbg is installed), N events
#     (default 100000), printed as text by
#       ustack report            (lines and inlined frames)
#       ustack report --no-lines (names only)
#     against perf on perf's own trace of the same run of the workload
#     (perf record -m 256M --call-graph dwarf,2048: no sample lost):
#       perf script -F comm,tid,time,event,ip,sym,srcline --inline
#       perf script -F comm,tid,time,event,ip,sym      (no lines)
#       perf report --stdio --inline -s sym,srcline -g caller,0.5,callee,address
#     (perf 6.1 has no 'perf report --srcline'; the srcline sort key and
#     address callchains are the same information in report form). perf
#     report takes about a minute per run here, so it runs only with
#     PERF_REPORT=1 in the environment.
# (b) snapshot: one whole-process snapshot of snap_futex32 (33 threads, gcc
#     -O2 -g) by
#       ustack snapshot -p PID            ustack snapshot -p PID --lines
#       eu-stack -p PID                   eu-stack -p PID -s -i
#
# Peers run alternately (A B C ... A B C ...) for ROUNDS rounds (default 7,
# at least 5) after one warm-up round; wall times with bash's EPOCHREALTIME,
# printed as median [min-max] and the ratio of medians to ustack with lines.
#
#   bash bench/symbolize/run.sh [ROUNDS] [EVENTS]   (root: perf, ptrace)
set -eu
cd "$(dirname "$0")/../.."
ROUNDS=${1:-7}
EVENTS=${2:-100000}
CC=${CC:-gcc}
OUT=build/bench/symbolize
mkdir -p "$OUT"
[ "$ROUNDS" -ge 5 ] || { echo "bench/symbolize: at least 5 rounds" >&2; exit 1; }
for t in perf eu-stack; do
	command -v $t >/dev/null || { echo "bench/symbolize: $t not installed" >&2; exit 1; }
done
make -s -j2 build/ustack >/dev/null
U=$PWD/build/ustack
$CC -O2 -g -o "$OUT/inline_work" bench/symbolize/inline_work.c
$CC -O2 -g -pthread -o "$OUT/snap_futex32" tests/integration/progs/snap_futex32.c

# run "name|command" peers alternately; prints one table row per peer
# ($1: per-unit divisor and unit for an extra column, e.g. "100000 event")
bench() {
	local per=$1 unit=$2; shift 2
	local -a names cmds
	local i r t0 t1
	for p in "$@"; do names+=("${p%%|*}"); cmds+=("${p#*|}"); done
	: >"$OUT/times"
	for r in $(seq 0 "$ROUNDS"); do
		for i in "${!cmds[@]}"; do
			t0=$EPOCHREALTIME
			eval "${cmds[$i]}" >/dev/null 2>&1
			t1=$EPOCHREALTIME
			[ "$r" -gt 0 ] && echo "$i ${t0/./} ${t1/./}" >>"$OUT/times"
		done
	done
	python3 - "$per" "$unit" "$OUT/times" "${names[@]}" <<'PY'
import sys, statistics
per, unit, path, names = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
t = {}
for l in open(path):
    i, a, b = l.split()
    t.setdefault(int(i), []).append((int(b) - int(a)) / 1000.0)  # ms
ref = statistics.median(t[0])
for i, n in enumerate(names):
    v = t[i]; m = statistics.median(v)
    extra = " | %.2f us" % (m * 1000 / per) if per > 1 else ""
    print("| %s | %.1f ms [%.1f-%.1f]%s | %.2fx |" % (n, m, min(v), max(v), extra, m / ref))
PY
}

echo "CPU: $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo), $(nproc) CPUs;" \
	"kernel $(uname -r); perf $(perf --version | awk '{print $3}');" \
	"$(eu-stack --version 2>&1 | head -1); $(date -u +%Y-%m-%d);" \
	"load average $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds, alternating"
echo

# ---- (a) report -----------------------------------------------------------------
"$U" record -q -o "$OUT/iw.data" -e syscalls:sys_enter_getppid -- "$OUT/inline_work" "$EVENTS" >/dev/null
perf record -q -m 256M --call-graph dwarf,2048 -e syscalls:sys_enter_getppid \
	-o "$OUT/perf.data" -- "$OUT/inline_work" "$EVENTS" >/dev/null 2>&1
ue=$("$U" report -i "$OUT/iw.data" --stats | awk '$1=="events:"{print $2}')
pe=$(perf report -i "$OUT/perf.data" --stats 2>/dev/null | awk '$1=="SAMPLE" && $2=="events:"{print $3; exit}')
pl=$(perf report -i "$OUT/perf.data" --stats 2>/dev/null | awk '$1=="LOST_SAMPLES" && $2=="events:"{print $3; exit}')
# both must really hold every event and show the inlined frames
ni=$("$U" report -i "$OUT/iw.data" | grep -c 'lvl2 .* at .*inline_work.c:[0-9]* \[inlined\]' || true)
pi=$(perf script -i "$OUT/perf.data" -F ip,sym,srcline --inline 2>/dev/null | grep -A1 ' lvl2$' | grep -c 'inline_work.c:[0-9]* (inlined)' || true)
if [ "$ue" != "$EVENTS" ] || [ "$pe" != "$EVENTS" ] || [ "$ni" != "$EVENTS" ] || [ "$pi" != "$EVENTS" ]; then
	echo "bench/symbolize: events: ustack $ue ($ni with lvl2 inlined), perf $pe (lost ${pl:-0}, $pi with lvl2 inlined), want $EVENTS" >&2
	exit 1
fi
echo "(a) text report of a $EVENTS-event trace of inline_work (-O2 -g, 128 distinct stacks):"
echo
echo "| command | median [min-max] | per event | / ustack report |"
echo "|---|---:|---:|---:|"
peers=("ustack report|$U report -i $OUT/iw.data"
	"ustack report --no-lines|$U report -i $OUT/iw.data --no-lines"
	"perf script +srcline --inline|perf script -i $OUT/perf.data -F comm,tid,time,event,ip,sym,srcline --inline"
	"perf script (no srcline)|perf script -i $OUT/perf.data -F comm,tid,time,event,ip,sym")
[ "${PERF_REPORT:-0}" = 1 ] &&
	peers+=("perf report -s sym,srcline -g address --inline|perf report -i $OUT/perf.data --stdio --inline -s sym,srcline -g caller,0.5,callee,address")
bench "$EVENTS" event "${peers[@]}"
echo

# ---- (b) snapshot ---------------------------------------------------------------
"$OUT/snap_futex32" >"$OUT/target.out" &
pid=$!
trap 'kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 500); do grep -q ready "$OUT/target.out" 2>/dev/null && break; sleep 0.01; done
sleep 0.2
nt=$(ls /proc/$pid/task | wc -l)
u=$("$U" snapshot -p $pid --lines | grep -c '^TID ' || true)
e=$(eu-stack -p $pid -s -i | grep -c '^TID ' || true)
if [ "$u" -ne "$nt" ] || [ "$e" -ne "$nt" ]; then
	echo "bench/symbolize: threads seen: target $nt, ustack $u, eu-stack $e" >&2
	exit 1
fi
echo "(b) snapshot of snap_futex32 ($nt threads, -O2 -g):"
echo
echo "| command | median [min-max] | / ustack --lines |"
echo "|---|---:|---:|"
bench 1 snapshot \
	"ustack snapshot --lines|$U snapshot -p $pid --lines" \
	"ustack snapshot|$U snapshot -p $pid" \
	"eu-stack -s -i|eu-stack -p $pid -s -i" \
	"eu-stack|eu-stack -p $pid"
