#!/usr/bin/env bash
# `ustack record --off-cpu` against an oracle, for both backends. Each
# PASS/FAIL line is `offcpu/CASE/BACKEND`; a backend that cannot record
# off-CPU time gives `SKIP offcpu/BACKEND: REASON` with the recorder's line.
#
# The oracle is progs/offcpu_paths.c: threads block in known call paths
# (path_NAME -> do_NAME_wait -> libc) and log each blocking call's start and
# end (CLOCK_MONOTONIC, the trace's clock) and the CPU time they used in it.
# progs/offcpu_events.c prints every event of the trace (cpu, end time,
# weight, named user stack), and lib/offcpu_check.py judges them: every
# interval of a measured thread inside one of its calls, with that call's
# whole stack, or wholly outside the span of its calls; per path, the
# switched-out time of the calls (wall - CPU) minus what was recorded in
# them within short_ns + steal + lost * call + 20 us per call (derived
# there); --stats agrees with the trace. No sleep is a synchronization.
#
#   paths     --off-cpu --off-cpu-preempt: nanosleep, a condition variable,
#             a pipe fed on a timer, a contended mutex; 20 calls each
#   (paths, xcpu, reuse, pre and mixed record --off-cpu-preempt as well: a
#   call's wall - CPU time includes the time it waited preempted)
#   xcpu      a thread blocked on CPU A is moved to CPU B (affinity) while
#             blocked, then woken: one whole interval covering the time the
#             other thread saw it blocked, with cpu B
#   exit      a thread blocked in read() when the process exits: its one
#             interval from its block to the exit, stack path_exit
#   reuse     threads blocking once each, then processes reusing one pid
#             (clone3 set_tid) in turn with two paths: no interval straddles
#             two of them, each has its own path
#   pre       `record -p` of a process whose p-pre is already blocked: the
#             wake-up from that wait is not an interval (the contract: its
#             switch-out was not seen); its later sleeps are
#   thresh    --off-cpu-min 10ms, sleeps of 2 and 60 ms: nothing below 10 ms
#             recorded, every 60 ms one is, offcpu_short counts the 2 ms ones
#   alt       thresh's program under --off-cpu alone: one thread blocks in
#             turn from two callers into one nanosleep at one depth (the
#             same registers at each kernel entry): each interval with its
#             own caller's stack (the bpf backend gave all of them the
#             first one's, its entry test taking them for one entry)
#   mixed     -e cpu-clock --off-cpu: both events, each with its stacks
#   preempt   --off-cpu --off-cpu-preempt, three CPU-bound threads on one
#             CPU: their waits under off-cpu-preempt with the busy stack,
#             never under off-cpu
#   stop      a short sleep then a 1.5 s stop (SIGSTOP) in one system call,
#             --off-cpu-min 1s: the stop is written with its whole stack
#             (the short one's unwind not shared away); every off-cpu
#             kernel stack starts where the thread blocked, not in the
#             recorder's tracing frames (BPF program, bpf_trace_run*)
#   freq      (bpf run only) -F 999 --off-cpu: one warning that -F samples
#             nothing (--off-cpu without -e is the only event) and no
#             cpu-clock event; with -e cpu-clock or without -F, no warning
#   folded    (paths trace) report -f folded [--event off-cpu]: per function
#             of ours, the folded sum = the events' weights (exact)
#   pprof     go tool pprof -top -sample_index=off_cpu = folded, per function
#
# Env (from make check): USTACK CC TOP CHECK_DIR SAN_FLAGS BASE_CFLAGS
# LIB_LDLIBS; KEEP_TMP=1 keeps the files; OFFCPU_BACKENDS: "copy" (the
# default: make check runs it alone, tests/run-tests.sh), "bpf" (what
# offcpu_bpf.sh runs, with the other tests), or both.
set -u
T=offcpu
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
: "${SAN_FLAGS:=-fsanitize=address,undefined}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf -ldw -lelf}"
: "${BASE_CFLAGS:=-std=gnu11 -g -O2 -D_GNU_SOURCE}"
fails=0
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $T/$1: $2"; }

[ -x "$USTACK" ] || { fail setup "no $USTACK"; exit 1; }
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
	skip all "needs root or kernel.perf_event_paranoid <= 1"
	exit 0
fi
tmp=$(mktemp -d /tmp/ustack-offcpu-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	[ -n "${KEEP_TMP:-}" ] && echo "# files kept in $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
P=$TOP/tests/integration/progs
CHECK=$TOP/tests/integration/lib/offcpu_check.py

if ! $CC -O2 -fomit-frame-pointer -Wall -pthread -o "$tmp/paths" "$P/offcpu_paths.c" 2>"$tmp/build.log" ||
   ! $CC $BASE_CFLAGS $SAN_FLAGS -I"$TOP/include" -o "$tmp/events" "$P/offcpu_events.c" \
	"$TOP/$CHECK_DIR/libustack.a" $LIB_LDLIBS 2>>"$tmp/build.log"; then
	fail build "$(head -5 "$tmp/build.log" | tr '\n' '|')"
	exit 1
fi

# record NAME BACKEND RECORD_OPTS... -- PROGRAM_ARGS...: the program under
# `ustack record --stats`; its log, events and stats in $tmp/NAME.*
record() {
	local name=$1 b=$2; shift 2
	local ro=()
	while [ "$1" != -- ]; do ro+=("$1"); shift; done
	shift
	if ! "$USTACK" record -q --stats --backend "$b" "${ro[@]}" -o "$tmp/${name//\//.}.data" \
		-- "$tmp/paths" -o "$tmp/${name//\//.}.log" "$@" >"$tmp/${name//\//.}.out" 2>"$tmp/${name//\//.}.stats"; then
		fail "$name" "record failed: $(grep -v '^stat ' "$tmp/${name//\//.}.stats" | head -3 | tr '\n' '|')"
		return 1
	fi
	events "$name"
}
events() {
	if ! "$tmp/events" "$tmp/${1//\//.}.data" >"$tmp/${1//\//.}.ev" 2>"$tmp/${1//\//.}.everr"; then
		fail "$1" "offcpu_events: $(head -3 "$tmp/${1//\//.}.everr" | tr '\n' '|')"
		return 1
	fi
}
# judge NAME CASE [checker options]
judge() {
	local name=$1 c=$2; shift 2
	python3 "$CHECK" "$c" "$tmp/${name//\//.}.log" "$tmp/${name//\//.}.ev" "$tmp/${name//\//.}.stats" --label "$name" "$@" \
		>"$tmp/${name//\//.}.check" 2>&1
	grep -v '^RESULT' "$tmp/${name//\//.}.check"
	if grep -q '^RESULT ok' "$tmp/${name//\//.}.check"; then
		pass "$name"
	else
		fail "$name" "$(grep -m1 '^RESULT' "$tmp/${name//\//.}.check" | cut -d' ' -f3- | cut -c1-400)"
	fi
}

# ---- pre: record -p a process whose thread is blocked already -----------------
# tid_of PID COMM: the thread of PID named COMM
tid_of() { grep -lx "$2" /proc/"$1"/task/*/comm 2>/dev/null | head -1 | awk -F/ '{ print $5 }'; }
# pre_blocked PID: p-pre's tid once it is blocked in read(2) (syscall 0)
# and asleep; "" when that has not happened within 30 s
pre_blocked() {
	local end=$((SECONDS + 30)) t
	while [ $SECONDS -lt $end ]; do
		t=$(tid_of "$1" p-pre)
		[ -n "$t" ] && [ "$(cut -d' ' -f1 /proc/$1/task/$t/syscall 2>/dev/null)" = 0 ] &&
			[ "$(awk '{ print $3 }' /proc/$1/task/$t/stat 2>/dev/null)" = S ] && { echo "$t"; return; }
		sleep 0.05
	done
}
case_pre() {
	local b=$1 name=pre/$1 end tid beat rpid ppid
	mkfifo "$tmp/ctl.$b"
	"$tmp/paths" -r 5 -t 10 -o "$tmp/${name//\//.}.log" pre <"$tmp/ctl.$b" &
	ppid=$!; pids+=("$ppid")
	exec 7>"$tmp/ctl.$b"
	# p-pre blocked before recording, and h-beat (created after it) running
	tid=$(pre_blocked "$ppid") end=$((SECONDS + 30)) beat=
	while [ -n "$tid" ] && [ -z "$beat" ] && [ $SECONDS -lt $end ]; do
		beat=$(tid_of "$ppid" h-beat)
		[ -n "$beat" ] || sleep 0.05
	done
	if [ -z "$tid" ] || [ -z "$beat" ]; then
		fail "$name" "p-pre never blocked in read(2) within 30 s"
		exec 7>&-; return
	fi
	"$USTACK" record -q --stats --backend "$b" --off-cpu --off-cpu-preempt -p "$ppid" -o "$tmp/${name//\//.}.data" \
		>/dev/null 2>"$tmp/${name//\//.}.stats" &
	rpid=$!; pids+=("$rpid")
	# recording: h-beat's sleeps appear in the trace (written once a second)
	end=$((SECONDS + 30))
	until "$tmp/events" "$tmp/${name//\//.}.data" 2>/dev/null | grep -q "^V off-cpu $beat "; do
		if [ $SECONDS -ge $end ] || ! kill -0 "$rpid" 2>/dev/null; then
			fail "$name" "no interval of h-beat in the trace within 30 s: $(grep -v '^stat' "$tmp/${name//\//.}.stats" | head -2 | tr '\n' '|')"
			exec 7>&-; return
		fi
		sleep 0.2
	done
	echo go >&7
	exec 7>&-
	wait "$ppid"
	if ! wait "$rpid"; then
		fail "$name" "record -p failed: $(grep -v '^stat' "$tmp/${name//\//.}.stats" | head -3 | tr '\n' '|')"
		return
	fi
	events "$name" && judge "$name" pre
}

# ---- stop: a short sleep, then a long stop, in one kernel entry ---------------
# p-pre blocks in read(2) (recorded from exec, so its switch-out is seen);
# SIGSTOP while it is blocked: the same system call, not yet restarted, goes
# on to the stop (state T) with the same user registers. Under
# --off-cpu-min 1s the read's first sleep (short) is not written, the stop
# (1.5 s) is: its user stack must be whole, through path_pre. The short one
# opened the entry's unwind; a recorder that let the stop share that
# unwind's cookie wrote the stop with a cookie no USER_STACK answers (the
# bpf backend did). When the machine is so slow that the first sleep
# itself lasts 1 s, both are written and the case checks less, not wrongly.
case_stop() {
	local b=$1 name=stop/$1 f end pid tid rpid
	f=$tmp/stop.$b
	mkfifo "$f.ctl"
	"$USTACK" record -q --stats --backend "$b" --off-cpu --off-cpu-min 1s -o "$f.data" -- \
		"$tmp/paths" -r 1 -t 1 -o "$f.log" pre <"$f.ctl" >/dev/null 2>"$f.stats" &
	rpid=$!; pids+=("$rpid")
	exec 8>"$f.ctl"
	end=$((SECONDS + 30)) pid=
	while [ -z "$pid" ] && [ $SECONDS -lt $end ]; do
		pid=$(pgrep -P "$rpid" | head -1) # the command (its main thread renames itself)
		[ -n "$pid" ] || sleep 0.05
	done
	tid=${pid:+$(pre_blocked "$pid")}
	if [ -z "$tid" ]; then
		fail "$name" "p-pre never blocked in read(2) within 30 s"
		exec 8>&-; return
	fi
	kill -STOP "$pid"; sleep 1.5; kill -CONT "$pid"
	echo go >&8
	exec 8>&-
	if ! wait "$rpid"; then
		fail "$name" "record failed: $(grep -v '^stat' "$f.stats" | head -3 | tr '\n' '|')"
		return
	fi
	events "$name" || return
	# the intervals of p-pre of 1 s or more: the stop at least
	awk -v t="$tid" '$1 == "V" && $2 == "off-cpu" && $3 == t && $6 >= 1000000000' "$f.ev" >"$f.long"
	if [ ! -s "$f.long" ]; then
		fail "$name" "no off-cpu interval of p-pre (tid $tid) of 1 s or more (its 1.5 s stop)"
	elif awk '$9 == "-" || $9 !~ /path_pre;do_pre_wait;/' "$f.long" | grep -q .; then
		fail "$name" "an interval of p-pre without its whole stack: $(awk '$9 == "-" || $9 !~ /path_pre;do_pre_wait;/' "$f.long" | head -1)"
	elif ! "$USTACK" report -q --no-lines -i "$f.data" >"$f.txt" 2>"$f.rerr"; then
		fail "$name" "report: $(head -2 "$f.rerr" | tr '\n' '|')"
	elif awk '/: off-cpu / { first = 1; next } first && /^ => / { print; first = 0 }' "$f.txt" |
		grep -E 'bpf_trace_run|__bpf_trace_|bpf_prog_|\[unknown\]' >"$f.kleaf"; then
		# the thread's kernel stack starts where it blocked (__schedule):
		# the recorder's own tracing frames are not the thread's
		fail "$name" "an off-cpu kernel stack starting in the tracing machinery: $(head -1 "$f.kleaf")"
	else
		pass "$name"
		echo "  $name: $(wc -l <"$f.long") intervals of 1 s or more, each through path_pre; kernel stacks from $(awk '/: off-cpu / { f = 1; next } f && /^ => / { print $2; f = 0 }' "$f.txt" | sort | uniq -c | sort -rn | head -1 | awk '{ print $2 }'); $(grep -E 'offcpu_(short|intervals) ' "$f.stats" | tr '\n' ' ')"
	fi
}

# ---- the report's outputs carry the weights ------------------------------------
case_outputs() {
	local b=$1 name=paths/$1 sel=() total
	"$USTACK" report --help 2>&1 | grep -q -- '--event' && sel=(--event off-cpu)
	if ! "$USTACK" report -i "$tmp/${name//\//.}.data" -f folded "${sel[@]}" -o "$tmp/${name//\//.}.folded" 2>"$tmp/${name//\//.}.rerr"; then
		fail "folded/$b" "report -f folded ${sel[*]}: $(head -2 "$tmp/${name//\//.}.rerr" | tr '\n' '|')"
		return
	fi
	# %.0f: mawk prints a sum over 2^31 as 2.51505e+09
	total=$(awk '{ s += $NF } END { printf "%.0f\n", s }' "$tmp/${name//\//.}.folded")
	if [ "$total" -eq "$(grep -c '^V off-cpu' "$tmp/${name//\//.}.ev")" ]; then
		skip "folded/$b" "report -f folded counts events, not their weights (the report's weights have not landed)"
		return
	fi
	if [ ${#sel[@]} -eq 0 ]; then
		skip "folded/$b" "report has no --event: the trace mixes off-cpu and off-cpu-preempt"
		return
	fi
	python3 "$CHECK" folded "$tmp/${name//\//.}.ev" "$tmp/${name//\//.}.folded" off-cpu >"$tmp/${name//\//.}.fcheck" 2>&1
	grep -v '^RESULT' "$tmp/${name//\//.}.fcheck"
	if grep -q '^RESULT ok' "$tmp/${name//\//.}.fcheck"; then pass "folded/$b"; else
		fail "folded/$b" "$(grep -m1 '^RESULT' "$tmp/${name//\//.}.fcheck" | cut -d' ' -f3-)"; fi

	if ! command -v go >/dev/null; then
		skip "pprof/$b" "go tool pprof not installed (Debian golang-go)"
		return
	fi
	if ! "$USTACK" report -i "$tmp/${name//\//.}.data" -f pprof "${sel[@]}" -o "$tmp/${name//\//.}.pb.gz" 2>"$tmp/${name//\//.}.rerr"; then
		fail "pprof/$b" "report -f pprof: $(head -2 "$tmp/${name//\//.}.rerr" | tr '\n' '|')"
		return
	fi
	if ! HOME=$tmp GOCACHE=$tmp/gocache GOFLAGS= go tool pprof -top -nodecount=1000 -sample_index=off_cpu \
		"$tmp/${name//\//.}.pb.gz" >"$tmp/${name//\//.}.top" 2>"$tmp/${name//\//.}.perr"; then
		if grep -q 'sample_index' "$tmp/${name//\//.}.perr"; then
			skip "pprof/$b" "the profile has no off_cpu sample type (the viewers' weights have not landed)"
		else
			fail "pprof/$b" "go tool pprof: $(head -2 "$tmp/${name//\//.}.perr" | tr '\n' '|')"
		fi
		return
	fi
	python3 "$CHECK" pprof "$tmp/${name//\//.}.folded" "$tmp/${name//\//.}.top" >"$tmp/${name//\//.}.pcheck" 2>&1
	grep -v '^RESULT' "$tmp/${name//\//.}.pcheck"
	if grep -q '^RESULT ok' "$tmp/${name//\//.}.pcheck"; then pass "pprof/$b"; else
		fail "pprof/$b" "$(grep -m1 '^RESULT' "$tmp/${name//\//.}.pcheck" | cut -d' ' -f3-)"; fi
}

# freq: --off-cpu without -e is the only event, so a -F with it samples
# nothing: the recorder says so in one warning, and records no cpu-clock
# event; -e cpu-clock beside it, or no -F, no warning. Once (the bpf run).
case_freq() {
	local b=$1 f=$tmp/freq w1 w2 w3 n1 n2
	# ~20-50 ms of CPU, then a sleep: samples where they are asked for
	local work='i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; sleep 0.05'
	"$USTACK" record --backend "$b" -F 999 --off-cpu -o "$f.1.data" -- sh -c "$work" >/dev/null 2>"$f.1.err"
	"$USTACK" record --backend "$b" -F 999 -e cpu-clock --off-cpu -o "$f.2.data" -- sh -c "$work" >/dev/null 2>"$f.2.err"
	"$USTACK" record --backend "$b" --off-cpu -o "$f.3.data" -- sh -c 'sleep 0.05' >/dev/null 2>"$f.3.err"
	w1=$(grep -c 'warning: -F 999 has no event to sample: --off-cpu records only where threads wait' "$f.1.err")
	w2=$(grep -c 'warning' "$f.2.err")
	w3=$(grep -c 'warning' "$f.3.err")
	n1=$("$USTACK" report -i "$f.1.data" --stats 2>/dev/null | grep -c '^events of cpu-clock')
	n2=$("$USTACK" report -i "$f.2.data" --stats 2>/dev/null | grep -c '^events of cpu-clock')
	if [ "$w1" -ne 1 ] || [ "$w2" -ne 0 ] || [ "$w3" -ne 0 ]; then
		fail "freq/$b" "warnings: $w1 with -F --off-cpu (want 1), $w2 with -e cpu-clock, $w3 without -F (want 0): $(head -2 "$f.1.err" | tr '\n' '|')"
	elif [ "$n1" -ne 0 ] || [ "$n2" -ne 1 ]; then
		fail "freq/$b" "cpu-clock events recorded: $n1 with -F --off-cpu (want none), $n2 with -e cpu-clock (want some)"
	else
		pass "freq/$b"
	fi
}

for b in ${OFFCPU_BACKENDS:-copy}; do
	if ! "$USTACK" record -q --backend "$b" --off-cpu -o "$tmp/probe.data" -- true >/dev/null 2>"$tmp/probe.err"; then
		why=$(grep -m1 . "$tmp/probe.err")
		skip "$b" "${why:-record --backend $b --off-cpu failed without a reason}"
		continue
	fi
	record paths/$b "$b" --off-cpu --off-cpu-preempt -- -r 20 -t 10 paths && judge paths/$b paths &&
		case_outputs "$b"
	if [ "$(nproc)" -lt 2 ]; then
		skip "xcpu/$b" "one CPU: no other CPU to move a thread to"
	else
		record xcpu/$b "$b" --off-cpu --off-cpu-preempt -- -r 6 -t 5 xcpu && judge xcpu/$b xcpu
	fi
	record exit/$b "$b" --off-cpu -- -t 20 exit && judge exit/$b exit
	record reuse/$b "$b" --off-cpu --off-cpu-preempt -- -r 10 -t 2 reuse && judge reuse/$b reuse
	case_pre "$b"
	record thresh/$b "$b" --off-cpu --off-cpu-min 10ms -- -r 5 -t 20 thresh &&
		judge thresh/$b thresh --min 10000000
	record alt/$b "$b" --off-cpu -- -r 5 -t 10 thresh && judge alt/$b alt
	record mixed/$b "$b" -e cpu-clock --off-cpu --off-cpu-preempt -- -r 5 -t 20 mixed && judge mixed/$b mixed
	record preempt/$b "$b" --off-cpu --off-cpu-preempt -- -r 10 -t 20 preempt && judge preempt/$b preempt
	case_stop "$b"
	[ "$b" = bpf ] && case_freq "$b"
done
[ $fails -eq 0 ]
