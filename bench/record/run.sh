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
# (text and folded) vs `perf script` on the last round's files, per sample,
# peers run alternately (see "Report times" below).
#
#   bash bench/record/run.sh [RUNS]     (default 3; needs root or perf_event_paranoid <= 1)
#   env: ROUNDS (default 12000), THREADS (2), CC, HZ (cpu-clock rate, 999),
#        REPORT_RUNS (report rounds, default 2 * RUNS + 1),
#        REPORT_ONLY=1 (no recordings: time the reports of the files the
#        last run left in build/bench/record)
set -eu
cd "$(dirname "$0")/../.."
RUNS=${1:-3}
ROUNDS=${ROUNDS:-12000}
THREADS=${THREADS:-2}
HZ=${HZ:-999}
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
# REPORT_ONLY=1: no recordings, only the report timings, on the files a
# previous run left in build/bench/record
[ -n "${REPORT_ONLY:-}" ] && RECORD_RUNS=0 || RECORD_RUNS=$RUNS
for i in $(seq "$RECORD_RUNS"); do
	run_round bare $WL
	run_round ustack $U record -e cpu-clock -F $HZ -o "$OUT/ustack.data" -- $WL
	run_round ustack8k $U record -e cpu-clock -F $HZ --stack-size 8192 -o "$OUT/ustack8k.data" -- $WL
	run_round dwarf perf record -q -e cpu-clock -F $HZ --call-graph dwarf -o "$OUT/perf-dwarf.data" -- $WL
	run_round fp perf record -q -e cpu-clock -F $HZ -g -o "$OUT/perf-fp.data" -- $WL
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
if [ -z "${REPORT_ONLY:-}" ] && [ "${SAMPLES[ustack]:-x}" != "$rec_events" ]; then
	echo "bench/record: report --stats counts ${SAMPLES[ustack]:-no} events, record wrote $rec_events" >&2
	exit 1
fi

# Report times, peers alternately: each round runs, in this order,
#   ustack report (text)          on ustack.data       [utext]
#   perf script                   on perf-dwarf.data   [pdwarf]
#   ustack report (text), no line cache yet: its <cache>/lines removed
#                                 before each run      [ucold]
#   ustack report --format folded on ustack.data       [ufold]
#   perf script                   on perf-fp.data      [pfp]
#   ustack report --no-lines      on ustack.data       [unolines]
#   ustack report (text)          on ustack8k.data     [u8k]
#   /bin/true, ustack --version, perf --version          [true uver pver]
#                                 what starting each process costs here,
#                                 in the same run: "work" below is a
#                                 report's median minus its program's
#                                 --version median, per sample, a ratio
#                                 that does not move with the machine's
#                                 process start-up as the whole-process one does
# (REPORT_RUNS rounds, default 2 * RUNS + 1, after one warm-up round that
# is not counted), each a whole process from start to exit: wall time
# and CPU time (user + sys from the process's rusage). Every command, ours
# and perf's, writes to its standard output, a file this loop opens (and
# truncates) before the clock starts and closes after it stops: with -o,
# ustack alone would pay for truncating the last round's file and for
# ext4's flush of a truncated-and-rewritten file on close (0.2-0.3 ms
# for the 1.2 MB text report), which perf script's redirected output
# pays outside its process. perf script is
# the peer of both ustack formats: text and folded are compared with the
# same perf script run (perf script | stackcollapse-perf.pl would only add
# to perf's side). All but ucold run with the line cache (docs/cli/report.md)
# as the warm-up round left it: the trace's addresses all in it. ucold has
# its own cache directory, whose decompressed debug copies stay and whose
# line cache is removed before each of its runs: the first report of a
# trace of new addresses.
REPORT_RUNS=${REPORT_RUNS:-$((2 * RUNS + 1))}
RPEERS="utext pdwarf ucold ufold pfp unolines u8k true uver pver"
rcmd() {
	case $1 in
	utext) echo "$U report -i $OUT/ustack.data" ;;
	pdwarf) echo "perf script -i $OUT/perf-dwarf.data" ;;
	ucold) echo "$U report -i $OUT/ustack.data" ;;
	ufold) echo "$U report -i $OUT/ustack.data --format folded" ;;
	pfp) echo "perf script -i $OUT/perf-fp.data" ;;
	unolines) echo "$U report -i $OUT/ustack.data --no-lines" ;;
	u8k) echo "$U report -i $OUT/ustack8k.data" ;;
	true) echo "/bin/true" ;;
	uver) echo "$U --version" ;;
	pver) echo "perf --version" ;;
	esac
}
: >"$OUT/report-times"
for r in $(seq 0 "$REPORT_RUNS"); do
	for p in $RPEERS; do
		cenv=
		if [ $p = ucold ]; then
			rm -rf "$OUT/cache-cold/lines"
			cenv=USTACK_CACHE_DIR=$OUT/cache-cold
		fi
		# wall time around the whole process, CPU time (user + sys, to the
		# microsecond) from its rusage (wait4)
		env $cenv python3 -c '
import os, sys, time, shlex
out = open(sys.argv[2], "wb")
t0 = time.time_ns()
pid = os.posix_spawnp(sys.argv[3], sys.argv[3:], os.environ, file_actions=[
    (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
    (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)])
_, status, ru = os.wait4(pid, 0)
t1 = time.time_ns()
if status:
    sys.exit("bench/record: %s exited with status %d" % (" ".join(sys.argv[3:]), status))
print(sys.argv[1], t0 // 1000, t1 // 1000, round((ru.ru_utime + ru.ru_stime) * 1e6))
' "$p" "$OUT/$p.stdout" $(rcmd $p) >"$OUT/$p.t"
		[ "$r" -gt 0 ] && cat "$OUT/$p.t" >>"$OUT/report-times"
	done
done
cp "$OUT/pdwarf.stdout" "$OUT/perf-dwarf-script.txt"
cp "$OUT/utext.stdout" "$OUT/ustack-report.txt"
cp "$OUT/ucold.stdout" "$OUT/ustack-report-cold.txt"
cp "$OUT/ufold.stdout" "$OUT/ustack-report.folded"
cp "$OUT/unolines.stdout" "$OUT/ustack-report-nolines.txt"
cp "$OUT/u8k.stdout" "$OUT/ustack8k-report.txt"
# median [min-max] of a peer's wall (field 2) or CPU (field 3) times, us
rstat() { awk -v p="$1" -v f="$2" '$1 == p { print f == 2 ? $3 - $2 : $4 }' "$OUT/report-times" | sort -n |
	awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%d %d %d\n", m, v[1], v[NR] }'; }
declare -A RT RTC
for p in $RPEERS; do RT[$p]=$(rstat $p 2); RTC[$p]=$(rstat $p 3); done
RT[ustack]=${RT[utext]%% *}; RT[ustack8k]=${RT[u8k]%% *}; RT[dwarf]=${RT[pdwarf]%% *}; RT[fp]=${RT[pfp]%% *}
# the reports must hold what was recorded, or the timing means nothing
cmp -s "$OUT/ustack-report.txt" "$OUT/ustack-report-cold.txt" ||
	{ echo "bench/record: ustack report differs with the line cache warm and cold" >&2; exit 1; }
u_lines=$(grep -c 'spin' "$OUT/ustack-report.txt" || true)
d_lines=$(grep -c 'spin' "$OUT/perf-dwarf-script.txt" || true)
f_count=$(awk '/spin/ { n += $NF } END { print n + 0 }' "$OUT/ustack-report.folded")

load=$(cut -d' ' -f1-3 /proc/loadavg)
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
echo "workload: $WL; cpu-clock -F $HZ"
echo "CPU $cpu, $(nproc) CPUs; kernel $(uname -r); $(perf --version); $(date -u +%F); commit $(git rev-parse --short HEAD 2>/dev/null || echo -)"
echo "load average at the end: $load; recordings: $RECORD_RUNS runs each, interleaved; reports: $REPORT_RUNS rounds, alternating"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
if [ "$RECORD_RUNS" -gt 0 ]; then
echo
echo "| recorder | wall median | wall min | slowdown (median / min) | workload CPU | CPU slowdown | CPU, recorder + workload | samples | bytes/sample | report time | report us/sample |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
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
    -v uc="${CMED[ustack]}" -v dc="${CMED[dwarf]}" -v bc="${CMED[bare]}" 'BEGIN {
	ubs = us ? ub / us : 0; dbs = ds ? db / ds : 0
	printf "bytes/sample: perf dwarf / ustack = %.0fx (target >= 50x)\n", ubs ? dbs / ubs : 0
	printf "wall-time slowdown, median: ustack %+.1f%%, perf dwarf %+.1f%%; min: ustack %+.1f%%, perf dwarf %+.1f%% (target: ustack <= perf dwarf)\n",
		(ut / bt - 1) * 100, (dt / bt - 1) * 100, (umt / bmt - 1) * 100, (dmt / bmt - 1) * 100
	printf "workload CPU time, median: ustack %+.1f%%, perf dwarf %+.1f%%\n", (uc / bc - 1) * 100, (dc / bc - 1) * 100
}'
fi

# the report table: median [min-max] per whole process, and per sample
echo
echo "| report command | trace | samples | wall, median [min-max] | wall us/sample | CPU (user+sys), median [min-max] | CPU us/sample |"
echo "|---|---|---:|---:|---:|---:|---:|"
for p in $RPEERS; do
	case $p in
	utext) name="ustack report"; tr=ustack.data; s=${SAMPLES[ustack]} ;;
	ucold) name="ustack report, line cache cold"; tr=ustack.data; s=${SAMPLES[ustack]} ;;
	pdwarf) name="perf script"; tr=perf-dwarf.data; s=${SAMPLES[dwarf]} ;;
	ufold) name="ustack report --format folded"; tr=ustack.data; s=${SAMPLES[ustack]} ;;
	pfp) name="perf script"; tr=perf-fp.data; s=${SAMPLES[fp]} ;;
	unolines) name="ustack report --no-lines"; tr=ustack.data; s=${SAMPLES[ustack]} ;;
	u8k) name="ustack report"; tr=ustack8k.data; s=${SAMPLES[ustack8k]} ;;
	true) name="/bin/true (start-up)"; tr=-; s=0 ;;
	uver) name="ustack --version (start-up)"; tr=-; s=0 ;;
	pver) name="perf --version (start-up)"; tr=-; s=0 ;;
	esac
	set -- ${RT[$p]}; w=$1 wmin=$2 wmax=$3
	set -- ${RTC[$p]}; c=$1 cmin=$2 cmax=$3
	awk -v n="$name" -v tr="$tr" -v s="$s" -v w=$w -v wmin=$wmin -v wmax=$wmax -v c=$c -v cmin=$cmin -v cmax=$cmax 'BEGIN {
		printf "| %s | %s | %s | %.2f ms [%.2f-%.2f] | %s | %.2f ms [%.2f-%.2f] | %s |\n",
			n, tr, s ? s : "-", w / 1e3, wmin / 1e3, wmax / 1e3, s ? sprintf("%.2f", w / s) : "-",
			c / 1e3, cmin / 1e3, cmax / 1e3, s ? sprintf("%.2f", c / s) : "-" }'
done
echo
# per-sample ratios against perf script of the perf --call-graph dwarf trace
per() { awk -v t="$1" -v s="$2" 'BEGIN { printf "%.6f", s ? t / s : 0 }'; }
for f in 2 3; do
	[ $f = 2 ] && { what=wall; set -- "${RT[pdwarf]%% *}" "${RT[utext]%% *}" "${RT[ufold]%% *}" "${RT[unolines]%% *}" "${RT[ucold]%% *}"; } ||
		{ what="CPU"; set -- "${RTC[pdwarf]%% *}" "${RTC[utext]%% *}" "${RTC[ufold]%% *}" "${RTC[unolines]%% *}" "${RTC[ucold]%% *}"; }
	pd=$(per "$1" "${SAMPLES[dwarf]}")
	echo "report per sample ($what, medians): perf script / ustack report: text $(ratio "$pd" "$(per "$2" "${SAMPLES[ustack]}")")x," \
		"folded $(ratio "$pd" "$(per "$3" "${SAMPLES[ustack]}")")x, text --no-lines $(ratio "$pd" "$(per "$4" "${SAMPLES[ustack]}")")x," \
		"text with the line cache cold $(ratio "$pd" "$(per "$5" "${SAMPLES[ustack]}")")x (target >= 50x)"
done
# the work alone: each median minus its own program's --version median
work() { awk -v t="$1" -v v="$2" -v s="$3" 'BEGIN { printf "%.6f", s ? (t - v) / s : 0 }'; }
for f in 2 3; do
	[ $f = 2 ] && { what=wall; declare -n M=RT; } || { what=CPU; declare -n M=RTC; }
	pw=$(work "${M[pdwarf]%% *}" "${M[pver]%% *}" "${SAMPLES[dwarf]}")
	uw=$(work "${M[utext]%% *}" "${M[uver]%% *}" "${SAMPLES[ustack]}")
	fw=$(work "${M[ufold]%% *}" "${M[uver]%% *}" "${SAMPLES[ustack]}")
	echo "the work per sample ($what, medians minus the program's --version: ustack $((${M[uver]%% *})) us," \
		"perf $((${M[pver]%% *})) us; /bin/true $((${M[true]%% *})) us): perf script $(awk -v w=$pw 'BEGIN { printf "%.2f", w }') us," \
		"ustack text $(awk -v w=$uw 'BEGIN { printf "%.2f", w }') us, folded $(awk -v w=$fw 'BEGIN { printf "%.2f", w }') us;" \
		"perf script / ustack: text $(ratio "$pw" "$uw")x, folded $(ratio "$pw" "$fw")x"
	unset -n M
done
echo "report outputs checked: ustack report has $u_lines lines naming spin, its folded output $f_count samples in stacks naming spin, perf script (dwarf) $d_lines lines naming spin"
