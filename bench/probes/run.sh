#!/usr/bin/env bash
# Probes and allocation profiling side by side, one run, tools alternating
# in each round, ROUNDS rounds, medians [min-max]. Every workload is the
# tool's command (ustack record -- CMD, bpftrace -c CMD, perf record --
# CMD); it times its own work (CLOCK_MONOTONIC around the loop: process
# start and the tools' set-up are not in the figure) and then stops itself
# (SIGSTOP, BENCH_STOP=1) so that the tool's BPF programs are read, and
# bpftrace symbolizes, while the process still exists; then it goes on.
#
# Workloads (built without frame pointers, as distributions build):
#   loop   bench/probes/probe_loop.c: main -> loop_a -> loop_b -> loop_c ->
#          bench_probed, LOOP_N times; the probe is on bench_probed
#   map    bench/probes/alloc_map.cc: std::map<long,long> insertions and
#          erasures (operator new/delete -> malloc/free), MAP_ARGS; probes
#          on libc's malloc (every process's libc is the same file)
#   mapl   the same at ALLOC_MAP_ARGS, ten times the work: --alloc's
#          slowdown there is a few percent, which map's ~25 ms cannot resolve
#   py     python3 building dicts of strings (PY_N keys, PY_R rounds):
#          CPython's own allocator serves small objects, libc's the rest
# Tools:
#   bare   the workload alone
#   bpf    ustack record --backend bpf -e uprobe:BIN:bench_probed (loop),
#          -e uprobe:libc:malloc (map)
#   copy   the same with --backend copy (perf's uprobe PMU + stack copies)
#   alloc  ustack record --alloc (bpf; default mean) (map, py): a command
#          gets libustack-alloc.so (--alloc-via=preload, the default), which
#          samples in the program
#   allocu the same with --alloc-via=uprobes: every allocator call traps
#   bt     bpftrace 'uprobe:...{ @[ustack] = count(); }' (frame pointers
#          only), /pid == cpid/ for malloc (bpftrace attaches libc's malloc
#          for every process)
#   btfp   bt on the loop built with frame pointers (bpftrace's best case)
#   perf   perf probe -x BIN (libc) + perf record --call-graph dwarf (8 KiB
#          stack copy per hit), the probe removed after; on the workload at
#          PERF_LOOP_N / PERF_MAP_ARGS (its data is ~8.4 KB a hit), against
#          bare-small, the bare workload at that size
# Figures:
#   work     the workload's own time (ms); slowdown: / bare's median
#   hits     the probe's hits: ustack stat probe_hits (alloc: alloc_calls),
#            bpftrace's counts, perf's samples
#   us/hit   (work - bare work) / calls, calls the probed calls the
#            workload made in its timed work (its own count: loop iterations,
#            operator new calls; py: ustack's alloc_calls): the whole cost of
#            a hit (trap, program, the tool's user space when it competes
#            for the CPUs)
#   kns/hit  kernel.bpf_stats_enabled: run_time_ns / run_cnt summed over
#            the tool's BPF programs (its fds' prog_id), read while the
#            workload is stopped at its end; copy and perf have none
#   share    the hits whose user stack is whole and right: loop, the frames
#            main;loop_a;loop_b;loop_c;bench_probed; map, a stack reaching
#            main (bench/probes/share.py)
#   dropped  ustack: probe_rate_dropped + lost records (alloc: sampled
#            allocations; live_dropped)
#
#   bash bench/probes/run.sh [ROUNDS]   (default 3; root; bpftool; bpftrace,
#   perf for their columns)
#   env: LOOP_N (default 30000), MAP_ARGS ("20000 5"), ALLOC_MAP_ARGS
#   ("200000 5"), LOOP_TOOLS, MAP_TOOLS, MAPL_TOOLS, PY_TOOLS (which tools,
#   space-separated; "none" for none), PY_N (200000),
#   PY_R (5), PERF_LOOP_N (5000), PERF_MAP_ARGS ("1500 4"), USTACK, TOOLS
set -uo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
LOOP_N=${LOOP_N:-30000}
MAP_ARGS=${MAP_ARGS:-20000 5}
ALLOC_MAP_ARGS=${ALLOC_MAP_ARGS:-200000 5}
PY_N=${PY_N:-200000}
PY_R=${PY_R:-5}
PERF_LOOP_N=${PERF_LOOP_N:-5000}
PERF_MAP_ARGS=${PERF_MAP_ARGS:-1500 4}
CC=${CC:-gcc}
CXX=${CXX:-g++}
me=bench/probes/run.sh
[ "$(id -u)" -eq 0 ] || { echo "$me: needs root" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "$me: needs bpftool" >&2; exit 1; }
if [ -z "${USTACK:-}" ]; then
	make -s -j2 build/ustack build/libustack.a >/dev/null || exit 1
	USTACK=build/ustack
fi
OUT=build/bench/probes
mkdir -p "$OUT"
LIBC=$(ldd /bin/true | awk '/libc\.so/ { print $3 }')
$CC -O2 -g -fomit-frame-pointer -o "$OUT/loop" bench/probes/probe_loop.c || exit 1
$CC -O2 -g -fno-omit-frame-pointer -o "$OUT/loop-fp" bench/probes/probe_loop.c || exit 1
$CXX -O2 -g -fomit-frame-pointer -o "$OUT/map" bench/probes/alloc_map.cc || exit 1
$CC -std=gnu11 -O2 -D_GNU_SOURCE -Iinclude -o "$OUT/events" tests/integration/progs/probes_more_events.c \
	build/libustack.a -lpthread -ldl -lbpf -ldw -lelf || exit 1

old=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	sysctl -q -w kernel.bpf_stats_enabled="$old"
	perf probe -q -d 'ustackbench:*' >/dev/null 2>&1
}
trap cleanup EXIT
sysctl -q -w kernel.bpf_stats_enabled=1

# prog_ns PID: "run_time_ns run_cnt" summed over the BPF programs PID holds
# (the prog_id of its fds' fdinfo: bpftool here lists no pids)
prog_ns() {
	bpftool prog show -j 2>/dev/null | python3 -c '
import glob, json, sys
ids = set()
for fd in glob.glob("/proc/%s/fdinfo/*" % sys.argv[1]):
    try:
        for l in open(fd):
            if l.startswith("prog_id:"):
                ids.add(int(l.split()[1]))
    except OSError:
        pass
t = n = 0
for p in json.load(sys.stdin):
    if p["id"] in ids:
        t += p.get("run_time_ns", 0); n += p.get("run_cnt", 0)
print(t, n)' "$1"
}

# stopped_child PID: the pid of PID or its descendant that stopped itself
# (state T); waits while PID lives
stopped_child() {
	local p c
	while kill -0 "$1" 2>/dev/null; do
		for c in "$1" $(pgrep -P "$1"; for p in $(pgrep -P "$1"); do pgrep -P "$p"; done); do
			[ "$(awk '{ print $3 }' /proc/$c/stat 2>/dev/null)" = T ] && { echo "$c"; return; }
		done
		sleep 0.05
	done
}

# cmd WL SIZE: the workload's command line (SIZE: full or small)
cmd() {
	case $1.$2 in
	loop.full) echo "$OUT/loop $LOOP_N" ;;
	loop.small) echo "$OUT/loop $PERF_LOOP_N" ;;
	loopfp.full) echo "$OUT/loop-fp $LOOP_N" ;;
	map.full) echo "$OUT/map $MAP_ARGS" ;;
	map.small) echo "$OUT/map $PERF_MAP_ARGS" ;;
	mapl.full) echo "$OUT/map $ALLOC_MAP_ARGS" ;;
	py.full) echo "python3 bench/probes/py_dicts.py $PY_N $PY_R" ;;
	esac
}

# one TOOL WL R: one measurement, "key=value" words on one line
one() {
	local tool=$1 wl=$2 r=$3 f=$OUT/$1.$2.$3 tp wp spec want c
	rm -f "$f".*
	case $wl in
	loop) spec="uprobe:$PWD/$OUT/loop:bench_probed" want="main;loop_a;loop_b;loop_c;bench_probed" ;;
	*) spec="uprobe:libc:malloc" want=main ;;
	esac
	c=$(cmd "$wl" full)
	export BENCH_STOP=1
	case $tool in
	bare | bare-small)
		[ $tool = bare-small ] && c=$(cmd "$wl" small)
		sh -c "exec $c" >"$f.out" 2>"$f.err" & tp=$! ;;
	bpf | copy)
		"$USTACK" record -q --stats --backend "$tool" -e "$spec" -o "$f.data" -- $c >"$f.out" 2>"$f.stats" &
		tp=$! ;;
	alloc | allocu)
		local via=preload
		[ $tool = allocu ] && via=uprobes
		"$USTACK" record -q --stats --backend bpf --alloc --alloc-via=$via -o "$f.data" -- $c \
			>"$f.out" 2>"$f.stats" &
		tp=$! ;;
	bt | btfp)
		local prog="uprobe:$PWD/$OUT/loop:bench_probed { @[ustack] = count(); }"
		[ $tool = btfp ] && c=$(cmd loopfp full) prog="uprobe:$PWD/$OUT/loop-fp:bench_probed { @[ustack] = count(); }"
		[ $wl = map ] && prog="uprobe:$LIBC:malloc /pid == cpid/ { @[ustack] = count(); }"
		bpftrace -e "$prog" -c "$c" >"$f.bt" 2>"$f.err" & tp=$! ;;
	perf)
		c=$(cmd "$wl" small)
		perf probe -q -d 'ustackbench:*' >/dev/null 2>&1
		if [ $wl = loop ]; then
			perf probe -q -x "$OUT/loop" -a 'ustackbench:hit=bench_probed' 2>"$f.err"
		else
			perf probe -q -x "$LIBC" -a 'ustackbench:hit=malloc' 2>"$f.err"
		fi
		perf record -q -e ustackbench:hit --call-graph dwarf -o "$f.perf" -- $c >"$f.out" 2>>"$f.err" &
		tp=$! ;;
	esac
	unset BENCH_STOP
	wp=$(stopped_child "$tp")
	if [ -z "$wp" ]; then
		wait "$tp"
		echo "$tool $wl failed: $(cat "$f.err" "$f.stats" 2>/dev/null | grep -v '^stat ' | head -3 | tr '\n' '|')" >&2
		return
	fi
	prog_ns "$tp" >"$f.ns"
	if [ "${tool#bt}" != "$tool" ]; then
		kill -INT "$tp"
		wait "$tp"
		kill -CONT "$wp" 2>/dev/null # bpftrace -c may have ended it
	else
		kill -CONT "$wp"
		wait "$tp" || echo "$tool $wl: exit status $? $(grep -v '^stat ' "$f.stats" 2>/dev/null | head -2 | tr '\n' '|')" >&2
	fi
	printf '%s %s ' "$tool" "$wl"
	cat "$f.out" "$f.bt" 2>/dev/null | awk '/^(NS|CALLS) / { printf "%s=%s ", tolower($1), $2 }'
	awk '{ if ($2 > 0) printf "kns=%.0f ", $1 / $2 }' "$f.ns" 2>/dev/null
	case $tool in
	bpf | copy | alloc | allocu)
		awk '$1 == "stat" && $2 ~ /^(probe_hits|probe_kept|probe_rate_dropped|lost|alloc_calls|alloc_sampled|alloc_live_dropped)$/ {
			printf "%s=%s ", $2, $3 }' "$f.stats"
		[ "${tool#alloc}" != "$tool" ] && awk '$1 == "stat" && $2 == "alloc_calls" { printf "hits=%s ", $3 }' "$f.stats"
		if [ "${tool#alloc}" = "$tool" ] && "$OUT/events" "$f.data" >"$f.ev" 2>/dev/null; then
			python3 bench/probes/share.py ustack "$f.ev" "$want" | tr '\n' ' '
		fi
		[ "${tool#alloc}" != "$tool" ] || rm -f "$f.data" ;;
	bt | btfp)
		python3 bench/probes/share.py bt "$f.bt" "$want" | tr '\n' ' ' ;;
	perf)
		perf script -i "$f.perf" -F comm,tid,ip,sym >"$f.script" 2>/dev/null
		python3 bench/probes/share.py perf "$f.script" "$want" | tr '\n' ' '
		perf probe -q -d 'ustackbench:*' >/dev/null 2>&1
		rm -f "$f.perf" "$f.script" ;;
	esac
	echo
}

LOOP_TOOLS=${LOOP_TOOLS:-bare bpf copy bt btfp perf bare-small}
MAP_TOOLS=${MAP_TOOLS:-bare alloc allocu bpf copy bt perf bare-small}
MAPL_TOOLS=${MAPL_TOOLS:-bare alloc}
PY_TOOLS=${PY_TOOLS:-bare alloc allocu}
command -v bpftrace >/dev/null || { echo "# bpftrace not installed: bt, btfp not measured"; LOOP_TOOLS=${LOOP_TOOLS//bt/}; MAP_TOOLS=${MAP_TOOLS//bt/}; }
command -v perf >/dev/null || { echo "# perf not installed: perf not measured"; LOOP_TOOLS=${LOOP_TOOLS//perf/}; MAP_TOOLS=${MAP_TOOLS//perf/}; }
: >"$OUT/results"
for r in $(seq "$ROUNDS"); do
	echo "round $r of $ROUNDS ..." >&2
	for t in $LOOP_TOOLS; do [ "$t" = none ] || one "$t" loop "$r" | tee -a "$OUT/results" >&2; done
	for t in $MAP_TOOLS; do [ "$t" = none ] || one "$t" map "$r" | tee -a "$OUT/results" >&2; done
	for t in $MAPL_TOOLS; do [ "$t" = none ] || one "$t" mapl "$r" | tee -a "$OUT/results" >&2; done
	for t in $PY_TOOLS; do [ "$t" = none ] || one "$t" py "$r" | tee -a "$OUT/results" >&2; done
done

echo "command: bash $me $ROUNDS   (LOOP_N=$LOOP_N MAP_ARGS=\"$MAP_ARGS\" ALLOC_MAP_ARGS=\"$ALLOC_MAP_ARGS\" PY_N=$PY_N PY_R=$PY_R PERF_LOOP_N=$PERF_LOOP_N PERF_MAP_ARGS=\"$PERF_MAP_ARGS\")"
echo "CPU $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), kernel $(uname -r), $(nproc) CPUs;" \
	"$(bpftrace --version 2>/dev/null); $(perf --version 2>/dev/null); $($USTACK --version | head -1); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/probes/table.py "$OUT/results"
