#!/usr/bin/env bash
# Recording benchmark, in one run on the same workload: ustack record vs
# perf record --call-graph dwarf vs perf record -g.
#
# Workload: examples/futex_demo.c in its fixed-work mode (-n: each thread
# does ROUNDS rounds of a fixed amount of arithmetic, a little under a pthread
# mutex, most outside), built -O2 -fomit-frame-pointer, no SFrame, system
# libc. Fixed work, so that its wall time grows with whatever a profiler
# costs it. Each of RUNS rounds runs, in turn:
#
#   bare          futex_demo ...         (all four with bash's time)
#   ustack        build/ustack record -e cpu-clock -F 999 -o F -- futex_demo ...
#   ustack 8k     the same with --stack-size 8192 (perf's dwarf default copy)
#   perf dwarf    perf record -q -e cpu-clock -F 999 --call-graph dwarf -o F -- futex_demo ...
#   perf -g       perf record -q -e cpu-clock -F 999 -g -o F -- futex_demo ...
#
# and takes the workload's own elapsed time (printed by futex_demo: thread
# start to the last join, so a profiler's start-up and write-out are not
# counted), the workload's CPU time (getrusage), and the CPU time of the
# recorder and the workload together (bash's time: a recorder may do its
# work in another process, on another CPU). Reported: medians (and the
# minimum of the wall times: on a shared machine the least disturbed run)
# and slowdowns against bare; trace
# bytes per sample (file size / samples; ustack: EVENT records from
# `ustack report --stats`, perf: SAMPLE events from `perf report --stats`);
# the time to turn the traces into symbolized stacks, `ustack report`
# (text) vs `perf script` on the same recording's files, per sample.
#
#   bash bench/record/run.sh [RUNS]     (default 3; needs root or perf_event_paranoid <= 1)
#   env: ROUNDS (default 12000), THREADS (2), CC
set -eu
cd "$(dirname "$0")/../.."
RUNS=${1:-3}
ROUNDS=${ROUNDS:-12000}
THREADS=${THREADS:-2}
CC=${CC:-gcc}
OUT=build/bench/record
mkdir -p "$OUT"
command -v perf >/dev/null || { echo "bench/record: perf not installed" >&2; exit 1; }
[ -x build/ustack ] || make -s -j2 build/ustack >/dev/null
$CC -O2 -fomit-frame-pointer -g -o "$OUT/futex_demo" examples/futex_demo.c -lpthread
WL="$OUT/futex_demo -t $THREADS -n $ROUNDS -l 20 -u 200"
U=build/ustack

now_ns() { date +%s%N; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# elapsed seconds and CPU seconds printed by the workload
# ("futex_demo: 2 threads, 3.012 s, ..., 5.990 s CPU")
elapsed() { awk '/^futex_demo:/ { print $4 }' "$1"; }
cputime() { awk '/^futex_demo:/ { print $(NF - 2) }' "$1"; }
minimum() { sort -n | head -1; }

declare -A T C A
TOOLS="bare ustack ustack8k dwarf fp"
for tool in $TOOLS; do T[$tool]=""; C[$tool]=""; A[$tool]=""; done
run_round() { # tool, command...
	local tool=$1; shift
	# bash's time: user + sys of the command and the children it waited
	# for, i.e. the recorder and the workload together
	{ TIMEFORMAT='%U %S'; time "$@" >"$OUT/$tool.out" 2>"$OUT/$tool.err"; } 2>"$OUT/$tool.time"
	T[$tool]+="$(elapsed "$OUT/$tool.out") "
	C[$tool]+="$(cputime "$OUT/$tool.out") "
	A[$tool]+="$(awk '{ print $1 + $2 }' "$OUT/$tool.time") "
}
for i in $(seq "$RUNS"); do
	run_round bare $WL
	run_round ustack $U record -e cpu-clock -F 999 -o "$OUT/ustack.data" -- $WL
	run_round ustack8k $U record -e cpu-clock -F 999 --stack-size 8192 -o "$OUT/ustack8k.data" -- $WL
	run_round dwarf perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$OUT/perf-dwarf.data" -- $WL
	run_round fp perf record -q -e cpu-clock -F 999 -g -o "$OUT/perf-fp.data" -- $WL
done
declare -A MED MIN CMED AMED
for tool in $TOOLS; do
	AMED[$tool]=$(echo ${A[$tool]} | tr ' ' '\n' | median)
	MED[$tool]=$(echo ${T[$tool]} | tr ' ' '\n' | median)
	MIN[$tool]=$(echo ${T[$tool]} | tr ' ' '\n' | minimum)
	CMED[$tool]=$(echo ${C[$tool]} | tr ' ' '\n' | median)
done

# samples and sizes of the last round's files
perf_samples() { perf report -i "$1" --stats 2>/dev/null | awk '/^ *SAMPLE events:/ { print $3; exit }'; }
declare -A BYTES SAMPLES
BYTES[ustack]=$(stat -c %s "$OUT/ustack.data")
BYTES[ustack8k]=$(stat -c %s "$OUT/ustack8k.data")
SAMPLES[ustack8k]=$($U report -i "$OUT/ustack8k.data" --stats 2>/dev/null | awk '$1 == "events:" { print $2; exit }')
BYTES[dwarf]=$(stat -c %s "$OUT/perf-dwarf.data")
BYTES[fp]=$(stat -c %s "$OUT/perf-fp.data")
SAMPLES[dwarf]=$(perf_samples "$OUT/perf-dwarf.data")
SAMPLES[fp]=$(perf_samples "$OUT/perf-fp.data")
SAMPLES[ustack]=$($U report -i "$OUT/ustack.data" --stats 2>/dev/null | awk '$1 == "events:" { print $2; exit }')
rec_events=$(sed -n 's/.*: \([0-9][0-9]*\) events,.*/\1/p' "$OUT/ustack.err")
if [ "${SAMPLES[ustack]:-x}" != "$rec_events" ]; then
	echo "bench/record: report --stats counts ${SAMPLES[ustack]:-no} events, record wrote $rec_events" >&2
	exit 1
fi

# report times: each tool over its own files of the same round, RUNS times
declare -A RT
time_cmd() { # out, cmd...
	local out=$1 t0 t1 all=""; shift
	for _ in $(seq "$RUNS"); do
		t0=$(now_ns); "$@" >"$out" 2>/dev/null; t1=$(now_ns)
		all+="$(( (t1 - t0) / 1000 )) "
	done
	echo $all | tr ' ' '\n' | median
}
RT[ustack]=$(time_cmd "$OUT/ustack-report.txt" $U report -i "$OUT/ustack.data")
RT[ustack8k]=$(time_cmd "$OUT/ustack8k-report.txt" $U report -i "$OUT/ustack8k.data")
RT[dwarf]=$(time_cmd "$OUT/perf-dwarf-script.txt" perf script -i "$OUT/perf-dwarf.data")
RT[fp]=$(time_cmd "$OUT/perf-fp-script.txt" perf script -i "$OUT/perf-fp.data")
# the reports must hold what was recorded, or the timing means nothing
u_lines=$(grep -c 'spin' "$OUT/ustack-report.txt" || true)
d_lines=$(grep -c 'spin' "$OUT/perf-dwarf-script.txt" || true)

load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "workload: $WL"
echo "kernel $(uname -r), $(nproc) CPUs, load average $load, $(date +%F); $(perf --version); $RUNS runs each, interleaved"
echo
echo "| recorder | wall median | wall min | slowdown (median / min) | workload CPU | CPU slowdown | CPU, recorder + workload | samples | bytes/sample | report time | report us/sample |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
for tool in $TOOLS; do
	case $tool in
	bare) name="none (bare workload)" ;;
	ustack) name="ustack record" ;;
	ustack8k) name="ustack record --stack-size 8192" ;;
	dwarf) name="perf record --call-graph dwarf" ;;
	fp) name="perf record -g" ;;
	esac
	row="| $name | ${MED[$tool]} s | ${MIN[$tool]} s | $(ratio "${MED[$tool]}" "${MED[bare]}")x / $(ratio "${MIN[$tool]}" "${MIN[bare]}")x | ${CMED[$tool]} s | $(ratio "${CMED[$tool]}" "${CMED[bare]}")x | ${AMED[$tool]} s (+$(awk -v a="${AMED[$tool]}" -v b="${AMED[bare]}" 'BEGIN { printf "%.3f", a - b }') s)"
	if [ $tool = bare ]; then
		echo "$row | - | - | - | - |"
		continue
	fi
	s=${SAMPLES[$tool]:-0}
	echo "$row | $s | $(awk -v a="${BYTES[$tool]}" -v s="$s" 'BEGIN { printf "%.1f", s ? a / s : 0 }') |" \
		"$(awk -v t="${RT[$tool]}" 'BEGIN { printf "%.1f ms", t / 1000 }') |" \
		"$(awk -v t="${RT[$tool]}" -v s="$s" 'BEGIN { printf "%.1f", s ? t / s : 0 }') |"
done
echo
awk -v ub="${BYTES[ustack]}" -v us="${SAMPLES[ustack]:-0}" -v db="${BYTES[dwarf]}" -v ds="${SAMPLES[dwarf]:-0}" \
    -v ut="${MED[ustack]}" -v dt="${MED[dwarf]}" -v bt="${MED[bare]}" \
    -v umt="${MIN[ustack]}" -v dmt="${MIN[dwarf]}" -v bmt="${MIN[bare]}" \
    -v uc="${CMED[ustack]}" -v dc="${CMED[dwarf]}" -v bc="${CMED[bare]}" \
    -v ur="${RT[ustack]}" -v dr="${RT[dwarf]}" 'BEGIN {
	ubs = us ? ub / us : 0; dbs = ds ? db / ds : 0
	urs = us ? ur / us : 0; drs = ds ? dr / ds : 0
	printf "bytes/sample: perf dwarf / ustack = %.0fx (target >= 50x)\n", ubs ? dbs / ubs : 0
	printf "wall-time slowdown, median: ustack %+.1f%%, perf dwarf %+.1f%%; min: ustack %+.1f%%, perf dwarf %+.1f%% (target: ustack <= perf dwarf)\n",
		(ut / bt - 1) * 100, (dt / bt - 1) * 100, (umt / bmt - 1) * 100, (dmt / bmt - 1) * 100
	printf "workload CPU time, median: ustack %+.1f%%, perf dwarf %+.1f%%\n", (uc / bc - 1) * 100, (dc / bc - 1) * 100
	printf "report per sample: perf script / ustack report = %.1fx (target >= 10x)\n", urs ? drs / urs : 0
}'
echo "report outputs checked: ustack report has $u_lines lines naming spin, perf script (dwarf) $d_lines"
