#!/usr/bin/env bash
# Recording backends side by side, in one run: ustack record --backend bpf,
# ustack record --backend copy and perf record --call-graph dwarf (and the
# bare workload where a time is compared), alternating tool by tool
# (bpf copy perf bpf copy perf ...), RUNS rounds; every figure is the median
# of the rounds with [min-max].
#
#   bash bench/record/backends.sh [RUNS]     (default 3; root or perf_event_paranoid <= 1)
#   env: CC, STORM (write_storm arguments, default "-t 4 -n 80000"),
#        FUTEX ("-t 4 -n 10000 -l 20 -u 20"), CPU ("-t 2 -n 30000 -l 20 -u 200":
#        bench/record/run.sh's workload, 2.5x its rounds), PY (python3 binary, default /usr/bin/python3),
#        PY_ARGS ("2 60 4": seconds, depth, every n-th level through C),
#        SECTIONS (which parts to run, default "storm futex cpu py"),
#        CPU_HZ (cpu-clock rates of part 3, default "999 4999")
#
# 1. write storm: tests/integration/progs/write_storm.c (built as
#    tests/integration/record_storm.sh builds it: -O2 -fomit-frame-pointer
#    -fno-optimize-sibling-calls -g, no SFrame), -e syscalls:sys_enter_write.
#    events   events in the trace (ustack: report --stats "events";
#             perf: SAMPLE events of perf report --stats)
#    lost     events the recorder lost (ustack: report --stats "lost
#             records"; perf: LOST_SAMPLES of the event in perf report --stats)
#    right    share of the program's writes recorded with the right stack,
#             judged by tests/integration/lib/record_check.py (the test's
#             checker): right / writes the program made
#    k->u B/ev  bytes from the kernel to user space per event recorded:
#             ustack: the "kernel->user N bytes" of its summary line / events
#             ("-" where the summary has none); perf: perf.data size /
#             samples (what perf wrote, a lower bound of what it read)
#    writes/s the program's own throughput (first thread start to last join)
# 2. futex: examples/futex_demo.c in fixed-work mode (-n), -e
#    syscalls:sys_enter_futex under mutex contention. Same columns; "right"
#    is the share of futex calls with a right lock/unlock/join stack
#    (record_check.py futex) of those recorded + lost (the program does not
#    count its futex calls); rounds/s from its own timing.
# 3. cpu-clock on futex_demo's CPU-bound fixed work (bench/record/run.sh's
#    workload) at each rate of CPU_HZ (default "999 4999": the issue's rate,
#    and five times it, where the recorders' own costs rise above this
#    machine's noise): its own wall time, the slowdown against bare, and the
#    cost of the stacks: the slowdown above "floor", perf record of the same
#    event without any call graph (the timer interrupt and a perf sample,
#    which every recorder pays).
# 4. python3 running bench/record/py_work.py (json, zlib, re under a
#    recursion of depth 60, every 4th level entered through C: ~90 native
#    frames, 8-16 KiB) at cpu-clock -F 999: share of samples whose stack
#    reaches _start (ustack: folded report; perf: perf script).
# perf's stacks: `perf script -F comm,ip,sym --no-inline`, turned into folded
# lines by record_check.py perf2folded, judged by the same code as ustack's.
set -eu
cd "$(dirname "$0")/../.."
RUNS=${1:-3}
CC=${CC:-gcc}
STORM=${STORM:--t 4 -n 80000}
FUTEX=${FUTEX:--t 4 -n 10000 -l 20 -u 20}
CPU=${CPU:--t 2 -n 30000 -l 20 -u 200}
PY=${PY:-/usr/bin/python3}
PY_ARGS=${PY_ARGS:-2 60 4}
SECTIONS=${SECTIONS:-storm futex cpu py}
CPU_HZ=${CPU_HZ:-999 4999}
OUT=build/bench/record/backends
CHECK=tests/integration/lib/record_check.py
U=build/ustack
mkdir -p "$OUT"
command -v perf >/dev/null || { echo "bench/record: perf not installed" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench/record: python3 not installed" >&2; exit 1; }
[ -x "$PY" ] || PY=$(command -v python3)
make -s -j2 build/ustack >/dev/null
$CC -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -g -o "$OUT/write_storm" \
	tests/integration/progs/write_storm.c -lpthread
$CC -O2 -fomit-frame-pointer -g -o "$OUT/futex_demo" examples/futex_demo.c -lpthread

# ---- which backends ----------------------------------------------------------------
has_backend=0
if $U record --help 2>&1 | grep -q -- '--backend'; then
	has_backend=1
	if $U record --backend bpf -q -e syscalls:sys_enter_write -o "$OUT/probe.data" -- true \
		>/dev/null 2>"$OUT/probe.err"; then
		TOOLS="bpf copy perf"
		bpf_note="--backend bpf available"
	else
		TOOLS="copy perf"
		bpf_note="--backend bpf cannot be used here: $(head -1 "$OUT/probe.err")"
	fi
else
	TOOLS="copy perf"
	bpf_note="ustack record has no --backend option (yet): bpf not measured; copy is the recorder as it is"
fi

# ---- one recording -------------------------------------------------------------------
# rec TOOL NAME EVENT-ARGS -- CMD...: records CMD with TOOL into $OUT/NAME.*,
# then NAME.folded (folded stacks), NAME.events, NAME.lost, NAME.k2u (bytes
# kernel->user per event, or -)
rec() {
	local tool=$1 name=$2 o=$OUT/$2
	shift 2
	local ev=()
	while [ "$1" != -- ]; do ev+=("$1"); shift; done
	shift
	case $tool in
	bare)
		"$@" >"$o.out" 2>"$o.err"
		;;
	floor)
		perf record -q "${ev[@]}" -o "$o.data" -- "$@" >"$o.out" 2>"$o.err"
		;;
	bpf | copy)
		local flag=()
		[ $has_backend = 1 ] && flag=(--backend "$tool")
		$U record "${flag[@]}" "${ev[@]}" -o "$o.data" -- "$@" >"$o.out" 2>"$o.err"
		if [ $has_backend = 1 ] && ! grep -q "backend $tool" "$o.err"; then
			echo "bench/record: asked for --backend $tool, the recorder says: $(cat "$o.err")" >&2
			exit 1
		fi
		$U report -i "$o.data" --stats >"$o.stats"
		$U report -i "$o.data" --format folded >"$o.folded"
		awk '$1 == "events:" { print $2; exit }' "$o.stats" >"$o.events"
		awk '/^lost records:/ { print $3; exit }' "$o.stats" >"$o.lost"
		local k2u
		k2u=$(sed -n 's/.*kernel->user \([0-9][0-9]*\) bytes.*/\1/p' "$o.err" | head -1)
		awk -v b="${k2u:--}" -v e="$(cat "$o.events")" 'BEGIN { print (b == "-" || !e) ? "-" : b / e }' >"$o.k2u"
		;;
	perf)
		perf record -q "${ev[@]}" --call-graph dwarf -o "$o.data" -- "$@" >"$o.out" 2>"$o.err"
		perf report -i "$o.data" --stats >"$o.stats" 2>/dev/null
		# the per-event section (after "EVENT stats:") has the samples and the lost samples
		# (not the "Aggregated stats:" before it: those count records)
		awk '/ stats:$/ && !/^Aggregated/ { on = 1 } on && /SAMPLE events:/ && !/LOST/ { print $3; exit }' "$o.stats" >"$o.events"
		awk '/ stats:$/ && !/^Aggregated/ { on = 1 } on && /LOST_SAMPLES events:/ { print $3; f = 1; exit } END { if (!f) print 0 }' \
			"$o.stats" >"$o.lost"
		perf script -i "$o.data" -F comm,ip,sym --no-inline 2>/dev/null | python3 $CHECK perf2folded >"$o.folded"
		awk -v b="$(stat -c %s "$o.data")" -v e="$(cat "$o.events")" 'BEGIN { print e ? b / e : "-" }' >"$o.k2u"
		;;
	esac
}

declare -A V # V[workload,tool,metric] = "value value ..." (one per round)
add() { V[$1,$2,$3]+="$4 "; }

storm_round() {
	local t=$1 o=$OUT/storm-$1
	rec "$t" "storm-$t" -e syscalls:sys_enter_write -- "$OUT/write_storm" $STORM -o "$o.counts"
	add storm "$t" rate "$(awk '/^write_storm:/ { print $(NF - 1) }' "$o.out")"
	[ "$t" = bare ] && return
	python3 $CHECK paths "$o.counts" "$o.folded" --label "$t" >"$o.check" || true
	add storm "$t" events "$(cat "$o.events")"
	add storm "$t" lost "$(cat "$o.lost")"
	add storm "$t" right "$(awk '/^STORM/ { for (i = 3; i <= NF; i++) if ($i ~ /^share=/) print substr($i, 7) }' "$o.check")"
	add storm "$t" wrong "$(awk '/^STORM/ { for (i = 3; i <= NF; i++) if ($i ~ /^wrong=/) print substr($i, 7) }' "$o.check")"
	add storm "$t" k2u "$(cat "$o.k2u")"
}
futex_round() {
	local t=$1 o=$OUT/futex-$1
	rec "$t" "futex-$t" -e syscalls:sys_enter_futex -- "$OUT/futex_demo" $FUTEX
	# "futex_demo: 4 threads, 0.142 s, 12000 rounds, ..."
	add futex "$t" rate "$(awk '/^futex_demo:/ { printf "%.0f\n", $6 / $4 }' "$o.out")"
	[ "$t" = bare ] && return
	python3 $CHECK futex "$o.folded" --lost "$(cat "$o.lost")" --label "$t" >"$o.check"
	add futex "$t" events "$(cat "$o.events")"
	add futex "$t" lost "$(cat "$o.lost")"
	add futex "$t" right "$(awk '/^FUTEX/ { for (i = 3; i <= NF; i++) if ($i ~ /^share=/) print substr($i, 7) }' "$o.check")"
	add futex "$t" k2u "$(cat "$o.k2u")"
}
cpu_round() {
	local t=$1 hz=$2 o=$OUT/cpu$2-$1
	rec "$t" "cpu$hz-$t" -e cpu-clock -F "$hz" -- "$OUT/futex_demo" $CPU
	add cpu$hz "$t" wall "$(awk '/^futex_demo:/ { print $4 }' "$o.out")"
	case $t in bare | floor) return ;; esac
	add cpu$hz "$t" events "$(cat "$o.events")"
	add cpu$hz "$t" lost "$(cat "$o.lost")"
	add cpu$hz "$t" k2u "$(cat "$o.k2u")"
}
py_round() {
	local t=$1 o=$OUT/py-$1
	rec "$t" "py-$t" -e cpu-clock -F 999 -- "$PY" bench/record/py_work.py $PY_ARGS
	# the stacks that did not reach _start, kept per round ($i: the round)
	python3 $CHECK reach "$o.folded" --label "$t" --missed "$o.round$i.missed" >"$o.check"
	add py "$t" events "$(cat "$o.events")"
	add py "$t" lost "$(cat "$o.lost")"
	add py "$t" reach "$(awk '/^REACH/ { for (i = 3; i <= NF; i++) if ($i ~ /^share=/) print substr($i, 7) }' "$o.check")"
	add py "$t" k2u "$(cat "$o.k2u")"
}

on() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }

for i in $(seq "$RUNS"); do
	echo "round $i of $RUNS ..." >&2
	on storm && for t in bare $TOOLS; do storm_round "$t"; done
	on futex && for t in bare $TOOLS; do futex_round "$t"; done
	if on cpu; then
		for hz in $CPU_HZ; do
			for t in bare floor $TOOLS; do cpu_round "$t" "$hz"; done
		done
	fi
	on py && for t in $TOOLS; do py_round "$t"; done
done

# ---- the tables --------------------------------------------------------------------
# stat W T M [FMT]: "median [min-max]" of the rounds' values, - when none
stat() {
	echo "${V[$1,$2,$3]:-}" | tr ' ' '\n' | awk -v f="${4:-%.0f}" '
		NF { if ($1 == "-") dash = 1; else v[++n] = $1 + 0 }
		END {
			if (dash || !n) { print "-"; exit }
			for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
			m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
			printf f " [" f "-" f "]\n", m, v[1], v[n]
		}'
}
med() { echo "${V[$1,$2,$3]:-}" | tr ' ' '\n' | awk 'NF { v[++n] = $1 + 0 } END {
	for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
	print n ? ((n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) : 0 }'; }
name() {
	case $1 in
	bare) echo "none (bare workload)" ;;
	floor) echo "floor: perf record, no call graph" ;;
	bpf) echo "ustack --backend bpf" ;;
	copy) [ $has_backend = 1 ] && echo "ustack --backend copy" || echo "ustack (copy)" ;;
	perf) echo "perf --call-graph dwarf" ;;
	esac
}
bpfflag() { [ $has_backend = 1 ] && echo "--backend bpf|copy " || true; }

echo "command: SECTIONS=\"$SECTIONS\" bash bench/record/backends.sh $RUNS   ($RUNS rounds, tools alternating: bare [floor] $TOOLS)"
echo "CPU$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), kernel $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date +%F); $(perf --version); ustack $(git rev-parse --short HEAD)"
echo "$bpf_note"
echo "figures: median [min-max] of $RUNS rounds"
echo
cmds() { # EVENT-ARGS, workload command
	echo "    $1"
	echo "    ustack record $(bpfflag)$2 -o F -- $1"
	echo "    perf record -q $2 --call-graph dwarf -o F -- $1"
}
if on storm; then
	echo "### write storm: -e syscalls:sys_enter_write"
	cmds "$OUT/write_storm $STORM -o COUNTS" "-e syscalls:sys_enter_write"
	nw=$(awk '/^total/ { print $2 }' "$OUT/storm-bare.counts")
	echo
	echo "| recorder | events recorded | lost | right stack (share of $nw writes) | wrong stacks | kernel->user bytes/event | writes/s |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	for t in bare $TOOLS; do
		if [ $t = bare ]; then
			echo "| $(name $t) | - | - | - | - | - | $(stat storm $t rate) |"
		else
			echo "| $(name $t) | $(stat storm $t events) | $(stat storm $t lost) | $(stat storm $t right %.4f) |" \
				"$(stat storm $t wrong) | $(stat storm $t k2u %.1f) | $(stat storm $t rate) |"
		fi
	done
	echo
fi
if on futex; then
	echo "### futex contention: -e syscalls:sys_enter_futex"
	cmds "$OUT/futex_demo $FUTEX" "-e syscalls:sys_enter_futex"
	echo
	echo "| recorder | events recorded | lost | right stack (share of recorded + lost) | kernel->user bytes/event | rounds/s |"
	echo "|---|---:|---:|---:|---:|---:|"
	for t in bare $TOOLS; do
		if [ $t = bare ]; then
			echo "| $(name $t) | - | - | - | - | $(stat futex $t rate) |"
		else
			echo "| $(name $t) | $(stat futex $t events) | $(stat futex $t lost) | $(stat futex $t right %.4f) |" \
				"$(stat futex $t k2u %.1f) | $(stat futex $t rate) |"
		fi
	done
	echo
fi
if on cpu; then
	for hz in $CPU_HZ; do
		echo "### CPU-bound: -e cpu-clock -F $hz"
		cmds "$OUT/futex_demo $CPU" "-e cpu-clock -F $hz"
		echo "    floor: perf record -q -e cpu-clock -F $hz -o F -- $OUT/futex_demo $CPU"
		echo
		echo "| recorder | wall time s | slowdown (medians) | cost of the stacks (above floor) | samples | lost | kernel->user bytes/sample |"
		echo "|---|---:|---:|---:|---:|---:|---:|"
		bw=$(med cpu$hz bare wall)
		fw=$(med cpu$hz floor wall)
		for t in bare floor $TOOLS; do
			tw=$(med cpu$hz $t wall)
			sl=$(awk -v a="$tw" -v b="$bw" 'BEGIN { printf "%+.1f%%", b ? (a / b - 1) * 100 : 0 }')
			above=$(awk -v a="$tw" -v f="$fw" -v b="$bw" 'BEGIN { printf "%+.0f ms (%+.1f%%)", (a - f) * 1000, b ? (a - f) / b * 100 : 0 }')
			case $t in
			bare) echo "| $(name $t) | $(stat cpu$hz $t wall %.3f) | - | - | - | - | - |" ;;
			floor) echo "| $(name $t) | $(stat cpu$hz $t wall %.3f) | $sl | - | - | - | - |" ;;
			*) echo "| $(name $t) | $(stat cpu$hz $t wall %.3f) | $sl | $above | $(stat cpu$hz $t events) |" \
				"$(stat cpu$hz $t lost) | $(stat cpu$hz $t k2u %.1f) |" ;;
			esac
		done
		echo
	done
fi
if on py; then
	echo "### python3 ($($PY --version 2>&1)): -e cpu-clock -F 999"
	cmds "$PY bench/record/py_work.py $PY_ARGS" "-e cpu-clock -F 999"
	echo
	echo "| recorder | samples | lost | samples reaching _start | kernel->user bytes/sample |"
	echo "|---|---:|---:|---:|---:|"
	for t in $TOOLS; do
		echo "| $(name $t) | $(stat py $t events) | $(stat py $t lost) | $(stat py $t reach %.4f) | $(stat py $t k2u %.1f) |"
	done
	echo
	# which stacks missed, for bpf and copy (perf's are most of its samples)
	for t in $TOOLS; do
		[ "$t" = perf ] && continue
		for f in "$OUT"/py-"$t".round*.missed; do
			[ -s "$f" ] || continue
			echo "$(name $t), ${f##*/py-$t.}: samples that did not reach _start (first 5 stacks):"
			sort -t' ' -k2 -nr "$f" | head -5 | sed 's/^/    /'
		done
	done
	echo
fi
echo "perf's kernel->user bytes are perf.data bytes / samples (what perf wrote; the stacks it read"
echo "are in it, 8 KiB per sample by default); ustack's are its summary's \"kernel->user N bytes\" / events."
