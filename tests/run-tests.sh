#!/usr/bin/env bash
# Runs every test of make check and prints the closing line
#   N passed, N failed, N skipped
# Unit tests: $CHECK_DIR/tests/test_* (each prints PASS/FAIL/SKIP lines).
# Fuzz corpora: each $CHECK_DIR/fuzz/fuzz_X replays tests/fuzz/corpus/X.
# Integration tests: tests/integration/*.sh, which print PASS/FAIL/SKIP lines
# too and get USTACK, CHECK_DIR, CC, GSFRAME, SAN_FLAGS, BASE_CFLAGS and
# LIB_LDLIBS in the environment.
# A program that exits non-zero without printing a FAIL line counts as one
# failure (a crash must never pass).
# ONLY=REGEX (make check ONLY=...) runs just the tests whose name matches
# (grep -E): test_trace, fuzz_elf-corpus, snapshot_core, ...
# A test that fails is explained in this output alone (a CI log is read as
# text, without the files): its FAIL lines, each with what the test printed
# right around it (the diffs, stacks and '#' notes tests print next to a
# FAIL), then the last 40 lines of its log.
# Each test's line gives its wall seconds and its CPU seconds; a "# time:"
# line before the closing one says how long the tests run at once and
# those of ALONE took, and their CPU seconds in all.
# TEST_TIMEOUT (seconds, default 900) ends a test that hangs; it is no
# speed bound: a loaded machine makes the slowest tests (record_bpf_shapes:
# 238 s seen under load) several times slower.
#
# JOBS (default: the number of CPUs plus one: most tests wait at times, for
# a trace's next write or a program's handshake, and one more test fills
# those gaps; 2 CPUs ran 83% busy at JOBS=2) tests run at once; JOBS=1 runs
# them one after the other. A test's output is held until it ends and is
# printed whole, in the order of the list below, as soon as it and every
# test before it ended: the same output, in the same order, for any JOBS
# (only the seconds differ). The tests of ALONE run after the others, one
# at a time, with nothing else of make check running, because they compete
# with other tests for something other than a CPU share (docs/TESTING.md):
ALONE=(
	# record the whole machine (-a): every process of the other tests is
	# recorded and named too (their hostile names, a million-line JIT map,
	# binaries deleted as they exit), and the checks count what they saw
	record_whole_machine # a busy loop's events and a 0.9..120 s wall time
	record_bpf_more_system # -a -e syscalls:sys_enter_getppid: counts system-wide
	container_names_system # record -a -d 3, then names every libc frame it saw
	record_python_all    # -a: three CPython processes' every write, the others' too
	# need a CPU of their own for what they bound
	record_storm     # >= 99% of 80,000 write events, read as fast as they come
	record_eventloop # no ustack_recorder__read() call over 100 ms
	# the copy backend's stack copies compete for the CPUs with the other
	# tests: offcpu's bounds on each call's off-CPU time (0.2 ms skew) and
	# probes_more's every USDT hit of the copy backend each failed once in
	# a parallel fresh-clone run (2026-11-29); both are the copy backend's
	# cases only (the bpf ones, offcpu_bpf and probes_more_bpf, run with
	# the others)
	offcpu
	probes_more
	# record -a over 2,500 short-lived processes: its memory and counts
	# are of the whole machine's processes (its part that needs no -a is
	# record_scale_threads, run with the others)
	record_scale
)
set -u
: "${ONLY:=}"
: "${CHECK_DIR:=build/check}"
: "${JOBS:=$(($(nproc 2>/dev/null || echo 1) + 1))}"
export CHECK_DIR USTACK="$PWD/$CHECK_DIR/ustack" TOP="$PWD"
# `python3` on PATH may be a pyenv shim (bash, then pyenv's version lookup):
# 0.36 s of CPU per start on this project's machines, against 0.03 s for
# the interpreter, and the tests start ~450 helper scripts. Those need a
# python3, any (the standard library only); a test that needs one in
# particular names it by path. Debian's goes first on PATH.
if [ -x /usr/bin/python3 ] && [ "$(command -v python3)" != /usr/bin/python3 ]; then
	mkdir -p "$CHECK_DIR/pybin" && ln -sf /usr/bin/python3 "$CHECK_DIR/pybin/python3" &&
		PATH="$PWD/$CHECK_DIR/pybin:$PATH"
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "run-tests: JOBS=$JOBS: want a number >= 1" >&2; exit 2; }
pass=0 fail=0 skip=0
failed_names=()
log_dir="$CHECK_DIR/test-logs"
mkdir -p "$log_dir"
per_test_timeout=${TEST_TIMEOUT:-900}

# run_one NAME COMMAND...: runs the test into $log_dir/NAME.log and writes
# what it prints to NAME.out, its counts "P F S" to NAME.tally (written
# last: its presence says the test ended). Runs in a subshell of its own
# when tests run at once, so it keeps no state of this shell.
run_one() {
	local name=$1; shift
	local log="$log_dir/$name.log" t0=$SECONDS tpid rc
	timeout -k 10 "$per_test_timeout" "$@" >"$log" 2>&1 </dev/null &
	tpid=$!
	# the runner stopped (SIGTERM from its trap below): end the test too
	trap 'kill -TERM $tpid 2>/dev/null' TERM
	wait "$tpid"; rc=$?
	[ "$rc" -le 128 ] || ! kill -0 "$tpid" 2>/dev/null || { wait "$tpid"; rc=$?; }
	local p f s cpu
	# `times` here, not in a $(...) subshell, which has no children yet
	times >"$log.times"
	cpu_seconds "$log.times"
	# a shell error in a test script (an arithmetic syntax error, an
	# unbound variable, a failed redirection) ends the command it is in:
	# the check it held would be skipped without a word. Such a line, bash's
	# "SCRIPT: line N: ..." (not a job's "line N: PID Killed ..."), fails
	# the test. One awk finds them and counts the PASS/FAIL/SKIP lines (a
	# process per test, not a dozen: ~1,600 fewer in a make check).
	read -r p f s < <(awk -v name="$name" -v errs="$log.sh-errors" '
		/^[^ :]+\.sh: line [0-9]+: / && !/: line [0-9]+: +[0-9]+ [A-Z]/ {
			print "FAIL " name ": shell error in the test script: " $0 > errs; f++ }
		/^PASS / { p++ } /^FAIL / { f++ } /^SKIP / { s++ }
		END { print p + 0, f + 0, s + 0 }' "$log")
	if [ -s "$log.sh-errors" ]; then
		cat "$log.sh-errors" >>"$log"
		rm -f "$log.sh-errors"
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			echo "FAIL $name: killed after ${per_test_timeout} s (TEST_TIMEOUT; exit status $rc)" >>"$log"
		else
			echo "FAIL $name: exited with status $rc (see $log)" >>"$log"
		fi
	fi
	{
		[ "$f" -eq 0 ] && [ "$s" -eq 0 ] ||
			awk -v name="$name" '/^(FAIL|SKIP) / { print "  [" name "] " $0 }' "$log"
		[ "$f" -eq 0 ] || explain "$log"
		printf '%-40s %3d passed %3d failed %3d skipped  (%ds, %s s CPU)\n' "$name" "$p" "$f" "$s" \
			$((SECONDS - t0)) "$cpu"
	} >"$log_dir/$name.out"
	echo $((SECONDS - t0)) "$cpu" >"$log_dir/$name.time"
	echo "$p $f $s" >"$log_dir/$name.tally"
}

# cpu_seconds FILE: sets cpu to the user + system seconds on the second
# line of bash's `times` output in FILE ("0m1.250s 0m0.310s": the shell's
# waited-for children), to a tenth. run_one runs in a shell of its own, so
# that is its test's CPU time, which the load changes much less than the
# wall time; a process the test left running unwaited is not counted.
# Read by the shell itself: no process.
cpu_seconds() {
	local l u t ms=0
	{ read -r l; read -r u t; } <"$1"
	for l in "$u" "$t"; do
		[[ $l =~ ^([0-9]+)m([0-9]+)\.([0-9]{3})s$ ]] || continue
		ms=$((ms + BASH_REMATCH[1] * 60000 + 10#${BASH_REMATCH[2]} * 1000 + 10#${BASH_REMATCH[3]}))
	done
	ms=$(((ms + 50) / 100))
	cpu="$((ms / 10)).$((ms % 10))"
}

# explain LOG: FAIL lines before the last 40, each with up to 4 lines
# before and 8 after it (PASS/SKIP lines left out), at most 60 lines in
# all, then the last 40 lines
explain() {
	awk -v last=$(($(wc -l <"$1") - 40)) '
		{ l[NR] = $0 }
		/^FAIL / && NR <= last { for (i = NR - 4; i <= NR + 8; i++) if (i >= 1 && i <= last) want[i] = 1 }
		END { for (i = 1; i <= last; i++) if ((i in want) && l[i] !~ /^(PASS|SKIP) /) {
			if (prev && i > prev + 1) print "..."; print l[i]; prev = i } }' "$1" |
		head -n 60 | sed 's/^/    | /'
	echo "    | --- last 40 lines of $1:"
	tail -n 40 "$1" | sed 's/^/    | /'
}

# report NAME: prints an ended test's output and adds up its counts; a
# test without them (its run_one killed) is a failure, never left out
report() {
	local p=0 f=1 s=0
	if [ -f "$log_dir/$1.tally" ]; then
		cat "$log_dir/$1.out"
		read -r p f s <"$log_dir/$1.tally"
	else
		echo "  [$1] FAIL $1: ended without a result (run-tests.sh's job for it was killed)"
		printf '%-40s %3d passed %3d failed %3d skipped\n' "$1" 0 1 0
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	[ "$f" -eq 0 ] || failed_names+=("$1")
}

# ---- the list, in the order of the output -----------------------------------
names=() cmds=()
add() { # NAME COMMAND (one string, run by bash -c)
	[ -z "$ONLY" ] || grep -qE -- "$ONLY" <<<"$1" || return 0
	names+=("$1"); cmds+=("$2")
}
for t in "$CHECK_DIR"/tests/test_*; do
	[ -x "$t" ] || continue
	add "$(basename "$t")" "exec '$t'"
done
for z in "$CHECK_DIR"/fuzz/fuzz_*; do
	[ -x "$z" ] || continue
	n=$(basename "$z"); corpus="tests/fuzz/corpus/${n#fuzz_}"
	if [ -d "$corpus" ]; then
		add "$n-corpus" "'$z' '$corpus' && echo 'PASS $n corpus replay'"
	else
		add "$n-corpus" "echo 'FAIL $n: no corpus at $corpus'; exit 1"
	fi
done
for s in tests/integration/*.sh; do
	[ -f "$s" ] || continue
	add "$(basename "$s" .sh)" "exec bash '$s'"
done

is_alone() { local a; for a in "${ALONE[@]}"; do [ "$a" = "$1" ] && return 0; done; return 1; }
together=() alone=()
for i in "${!names[@]}"; do
	rm -f "$log_dir/${names[$i]}".{tally,out,time}
	if is_alone "${names[$i]}"; then alone+=("$i"); else together+=("$i"); fi
done

# Interrupted: the tests running are ended as well (each run_one passes
# SIGTERM on to its test), not left to run on unseen.
trap 'kill -TERM $(jobs -pr) 2>/dev/null; exit 130' INT TERM

# ---- the others, JOBS at a time ---------------------------------------------
t_start=$SECONDS
# Printed in list order: a test that ended waits until every test before it
# was printed. Started longest first (SLOW: the tests run at once that took
# 45 s or more of wall time, or 30 s or more of CPU, in a make check at
# JOBS=3, by the wall time of the idle fresh-clone .ci/run of 2026-11-29
# 12:16, longest first), then in list order, so that no long test starts
# last and keeps one CPU busy alone at the end.
SLOW=(record_bpf_shapes jit_perfmap_hostile jit_perfmap report_viewers record_scale_threads
	record_bpf_more record_python snapshot_blocked probes_more_bpf alloc sframe_objdump
	container_names offcpu_bpf)
printed=0
print_ended() {
	while [ "$printed" -lt ${#together[@]} ] &&
		[ -e "$log_dir/${names[${together[$printed]}]}.tally" ]; do
		report "${names[${together[$printed]}]}"; printed=$((printed + 1))
	done
}
start_order=()
for n in "${SLOW[@]}"; do
	for i in "${together[@]}"; do [ "${names[$i]}" = "$n" ] && start_order+=("$i"); done
done
for i in "${together[@]}"; do
	[[ " ${start_order[*]} " == *" $i "* ]] || start_order+=("$i")
done
for i in "${start_order[@]}"; do
	while [ "$(jobs -pr | wc -l)" -ge "$JOBS" ]; do
		wait -n
		print_ended
	done
	run_one "${names[$i]}" bash -c "${cmds[$i]}" &
done
while [ -n "$(jobs -pr)" ]; do
	wait -n
	print_ended
done
wait
for ((; printed < ${#together[@]}; printed++)); do
	report "${names[${together[$printed]}]}"
done

# ---- the ALONE tests, one at a time, nothing else running ------------------
t_alone=$SECONDS
for i in "${alone[@]}"; do
	run_one "${names[$i]}" bash -c "${cmds[$i]}" &
	wait $!
	report "${names[$i]}"
done

# where the time went: the part run at once, the part run alone (one test
# at a time: it adds its whole length), and the tests' CPU seconds
awk -v at_once=$((t_alone - t_start)) -v alone=$((SECONDS - t_alone)) -v jobs="$JOBS" '
	{ cpu += $2 } END { printf "# time: %d s at once (JOBS=%d), %d s alone; the tests used %.0f s of CPU\n",
		at_once, jobs, alone, cpu }' $(for n in "${names[@]}"; do
		[ -f "$log_dir/$n.time" ] && echo "$log_dir/$n.time"; done) </dev/null
[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
