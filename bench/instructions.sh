#!/usr/bin/env bash
# Instructions executed (valgrind --tool=callgrind, user space only), ustack
# against its peers, for the figures whose wall time this kind of machine
# (2 CPUs, shared, VM) cannot resolve: an instruction count does not move
# with load, CPU frequency or the cost of a process start, so it
# reproduces on any machine with the same binaries and debug files.
#
#   snapshot  ustack snapshot -p PID (text, raw) and eu-stack -p PID, of
#             tests/integration/progs/snap_futex32.c with 32 threads + main
#             and with 1 + main: whole process, and per thread unwound
#             ((33 threads - 2) / 31)
#   report    ustack report (text, line cache warm; folded) and perf script
#             on the traces bench/record/run.sh left in build/bench/record
#             (skipped with a reason when they are missing): per sample
#   lines     ustack snapshot --lines and eu-stack -p -s -i (source lines,
#             inlined frames) of snap_futex32 built -O2 -g, 33 threads, as
#             bench/symbolize/run.sh times them (ustack's line cache warm)
#   start-up  /bin/true, `ustack --version`, `eu-stack --version` and
#             `perf --version`: what starting each process costs in
#             instructions before any work (dynamic linking, libraries'
#             constructors); "work" below is a whole command minus the
#             start-up of the same program, so that a ratio of work does not
#             move with how heavy a program is to start
#
# Not counted: the kernel (ptrace stops, /proc reads, page faults, system
# calls), which is most of a snapshot's wall time (docs/PERFORMANCE.md).
#
#   bash bench/instructions.sh            (root: ptrace of the targets)
#   USTACK=path/to/ustack bash bench/instructions.sh
set -eu
cd "$(dirname "$0")/.."
CC=${CC:-gcc}
OUT=build/bench/instructions
mkdir -p "$OUT"
command -v valgrind >/dev/null || { echo "bench/instructions: valgrind not installed" >&2; exit 1; }
command -v eu-stack >/dev/null || { echo "bench/instructions: eu-stack not installed" >&2; exit 1; }
if [ -z "${USTACK:-}" ]; then
	make -s -j2 build/ustack >/dev/null
	USTACK=build/ustack
fi

# instructions of one command (stdout to /dev/null), from callgrind's totals
ir() {
	rm -f "$OUT/cg.out"
	valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.out" "$@" >/dev/null 2>"$OUT/cg.err" ||
		{ echo "bench/instructions: failed under valgrind: $*" >&2; cat "$OUT/cg.err" >&2; exit 1; }
	awk '/^(summary|totals):/ { print $2; exit }' "$OUT/cg.out"
}
fmt() { awk -v n="$1" 'BEGIN { printf "%.2fM", n / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }

. bench/snapshot/targets.sh
start_targets
p33=$pid p2=$pid2 n33=$nt n2=$nt2
for p in $p33 $p2; do
	[ "$($USTACK snapshot -p $p | grep -c '^TID ')" -eq "$(ls /proc/$p/task | wc -l)" ] &&
		[ "$(eu-stack -p $p | grep -c '^TID ')" -eq "$(ls /proc/$p/task | wc -l)" ] ||
		{ echo "bench/instructions: a tool did not see every thread of $p" >&2; exit 1; }
done

true_ir=$(ir /bin/true)
ver_ir=$(ir $USTACK --version)
euver_ir=$(ir eu-stack --version)
u33=$(ir $USTACK snapshot -p $p33)
u2=$(ir $USTACK snapshot -p $p2)
r33=$(ir $USTACK snapshot -p $p33 --format raw)
r2=$(ir $USTACK snapshot -p $p2 --format raw)
e33=$(ir eu-stack -p $p33)
e2=$(ir eu-stack -p $p2)
d=$((n33 - n2))
per() { echo $((($1 - $2) / d)); }

echo "instructions executed in user space (callgrind), $(valgrind --version),"
echo "$($USTACK --version | head -1), $(eu-stack --version 2>&1 | head -1); $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "start-up: /bin/true $(fmt $true_ir), ustack --version $(fmt $ver_ir), eu-stack --version $(fmt $euver_ir)"
echo
echo "| snapshot of snap_futex32 | $n33 threads | $n2 threads | per thread unwound |"
echo "|---|---:|---:|---:|"
echo "| ustack (text) | $(fmt $u33) | $(fmt $u2) | $(per $u33 $u2) |"
echo "| ustack --format raw | $(fmt $r33) | $(fmt $r2) | $(per $r33 $r2) |"
echo "| eu-stack | $(fmt $e33) | $(fmt $e2) | $(per $e33 $e2) |"
echo
echo "eu-stack / ustack text: whole process $(ratio $e33 $u33)x ($n33 threads), $(ratio $e2 $u2)x ($n2 threads);" \
	"per thread $(ratio "$(per $e33 $e2)" "$(per $u33 $u2)")x"
echo "work (whole minus the program's own --version), $n33 threads: ustack text $(fmt $((u33 - ver_ir))), raw $(fmt $((r33 - ver_ir)))," \
	"eu-stack $(fmt $((e33 - euver_ir))): eu-stack / ustack text $(ratio $((e33 - euver_ir)) $((u33 - ver_ir)))x," \
	"/ raw $(ratio $((e33 - euver_ir)) $((r33 - ver_ir)))x"

# source lines and inlined frames: the program with debug information
$CC -O2 -g -pthread -o "$OUT/snap_futex32_g" tests/integration/progs/snap_futex32.c
"$OUT/snap_futex32_g" >"$OUT/target_g.out" &
pg=$!
trap 'kill -KILL $pid $pid2 $pg 2>/dev/null; wait $pid $pid2 $pg 2>/dev/null || true' EXIT
for _ in $(seq 500); do grep -q ready "$OUT/target_g.out" 2>/dev/null && break; sleep 0.01; done
sleep 0.2
$USTACK snapshot -p $pg --lines >/dev/null # fills the line cache: the warm case
ul=$(ir $USTACK snapshot -p $pg --lines)
un=$(ir $USTACK snapshot -p $pg)
el=$(ir eu-stack -p $pg -s -i)
en=$(ir eu-stack -p $pg)
echo
echo "| snapshot of snap_futex32 -O2 -g, $(ls /proc/$pg/task | wc -l) threads | instructions | the work (minus --version) |"
echo "|---|---:|---:|"
echo "| ustack snapshot --lines | $(fmt $ul) | $(fmt $((ul - ver_ir))) |"
echo "| ustack snapshot | $(fmt $un) | $(fmt $((un - ver_ir))) |"
echo "| eu-stack -s -i | $(fmt $el) | $(fmt $((el - euver_ir))) |"
echo "| eu-stack | $(fmt $en) | $(fmt $((en - euver_ir))) |"
echo
echo "eu-stack -s -i / ustack --lines: whole $(ratio $el $ul)x, the work $(ratio $((el - euver_ir)) $((ul - ver_ir)))x"

R=build/bench/record
if [ ! -f $R/ustack.data ] || [ ! -f $R/perf-dwarf.data ] || ! command -v perf >/dev/null; then
	echo
	echo "report: skipped (no traces in $R: run bash bench/record/run.sh first; needs perf)"
	exit 0
fi
samples=$($USTACK report -i $R/ustack.data --stats 2>/dev/null | awk '$1 == "events:" { print $2; exit }')
psamples=$(perf report -i $R/perf-dwarf.data --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')
$USTACK report -i $R/ustack.data >/dev/null # fills the line cache: the warm case
ut=$(ir $USTACK report -i $R/ustack.data)
uf=$(ir $USTACK report -i $R/ustack.data --format folded)
pd=$(ir perf script -i $R/perf-dwarf.data)
pver=$(ir perf --version)
ps() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.0f", n / s }'; }
echo
echo "| report of bench/record's traces | samples | instructions | per sample |"
echo "|---|---:|---:|---:|"
echo "| ustack report (text, line cache warm) | $samples | $(fmt $ut) | $(ps $ut $samples) |"
echo "| ustack report --format folded | $samples | $(fmt $uf) | $(ps $uf $samples) |"
echo "| perf script (--call-graph dwarf trace) | $psamples | $(fmt $pd) | $(ps $pd $psamples) |"
echo
echo "perf script / ustack, per sample: text $(ratio "$(ps $pd $psamples)" "$(ps $ut $samples)")x," \
	"folded $(ratio "$(ps $pd $psamples)" "$(ps $uf $samples)")x"
echo "start-up: ustack --version $(fmt $ver_ir), perf --version $(fmt $pver); the work per sample (whole minus --version):" \
	"ustack text $(ps $((ut - ver_ir)) $samples), folded $(ps $((uf - ver_ir)) $samples), perf script $(ps $((pd - pver)) $psamples);" \
	"perf script / ustack text $(ratio "$(ps $((pd - pver)) $psamples)" "$(ps $((ut - ver_ir)) $samples)")x," \
	"folded $(ratio "$(ps $((pd - pver)) $psamples)" "$(ps $((uf - ver_ir)) $samples)")x"
