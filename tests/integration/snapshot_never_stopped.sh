#!/usr/bin/env bash
# `ustack snapshot` never leaves its target stopped, stops one thread at a
# time, and fails cleanly. Oracles: the kernel's view of the target
# (/proc/PID/task/*/stat state letters, TracerPid in .../status) and the
# target's own progress counters (snap_counters: one slot per thread in a
# shared file, one step per millisecond).
#
#   - ustack killed mid-way by SIGKILL, SIGINT, SIGTERM while it holds a
#     thread stopped (USTACK_TEST_HOLD_MS keeps each thread stopped N ms):
#     every thread runs again, no tracer is left, every counter grows, and
#     after SIGINT/SIGTERM ustack stops no further thread
#   - while it runs, at most one thread is ever in ptrace stop ('t')
#   - --stats reports the longest stop, and it covers the stop window and
#     is shorter than the whole run (measured here: no fixed time bound)
#   - threads exiting mid-snapshot: no crash, the rest reported
#   - no such pid, permission denied (as user nobody), bad arguments, --help
# No step waits a fixed time for something to happen: each polls for its
# condition (a thread in ptrace stop, every counter grown, the group stop
# re-entered) with a generous bound, so a slow or loaded machine only
# makes the test slower.
set -u
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $1: $2"; }

[ -x "$USTACK" ] || { fail snapshot_never_stopped "no $USTACK"; exit 1; }

tmp=$(mktemp -d)
chmod 755 "$tmp"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

progs=$TOP/tests/integration/progs
for p in snap_probe snap_counters snap_churn; do
	if ! $CC -O2 -pthread -o "$tmp/$p" "$progs/$p.c"; then
		fail snapshot_never_stopped "cannot build $p"
		exit 1
	fi
done

# --- arguments: no ptrace needed ---------------------------------------------
out=$("$USTACK" snapshot --help 2>&1)
rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q 'usage: ustack snapshot -p PID'; then
	pass snapshot_help
else
	fail snapshot_help "exit $rc: $(echo "$out" | head -2)"
fi
bad=
for args in "-p abc" "-p 0" "" "-p 1 --format xml" "-p 1 extra"; do
	# shellcheck disable=SC2086
	"$USTACK" snapshot $args >/dev/null 2>"$tmp/err"
	rc=$?
	if [ $rc -ne 2 ] || ! [ -s "$tmp/err" ]; then
		bad="'snapshot $args': exit $rc (want 2 and a message)"
		break
	fi
done
if [ -n "$bad" ]; then fail snapshot_bad_args "$bad"; else pass snapshot_bad_args; fi

# a pid that does not exist: one of ours, reaped
true &
gone=$!
wait $gone
if [ -e /proc/$gone ]; then
	skip snapshot_no_such_pid "pid $gone was reused at once"
else
	"$USTACK" snapshot -p $gone >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 1 ] && grep -q "pid $gone" "$tmp/err" && grep -qi 'no such process' "$tmp/err" &&
	   ! [ -s "$tmp/out" ]; then
		pass snapshot_no_such_pid
	else
		fail snapshot_no_such_pid "exit $rc, stderr '$(head -2 "$tmp/err")'"
	fi
fi

# --- can we ptrace and process_vm_readv at all? (our own probe, not ustack)
# (the sleeper is also the target of the permission test at the end: it
# must outlive the whole script however slow the machine is)
sleep 600 &
sleeper=$!
pids+=("$sleeper")
if ! why=$("$tmp/snap_probe" $sleeper); then
	skip snapshot_never_stopped "$why"
	exit 0
fi

# Each wait below is for a condition, polled, with a generous bound
# (a loaded machine only makes the test slower, it does not fail it).
# wait_for SECONDS COMMAND...: until COMMAND succeeds; 1 on timeout
wait_for() {
	local end=$((SECONDS + $1)); shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.01
	done
}
now_us() { echo $(($(date +%s%N) / 1000)); }
# "TID STATE" of every thread of $1, one line each; one sed for all
# threads, so a read is short (comm may hold spaces and parentheses)
tid_states() { sed -E 's/^([0-9]+) .*\) ([A-Za-z]) .*/\1 \2/' /proc/$1/task/*/stat 2>/dev/null; }
states() { tid_states "$1" | awk '{ printf "%s ", $2 } END { print "" }'; } # e.g. "S S R t "
ptrace_stopped() { tid_states "$1" | awk '$2 == "t" { print $1 }'; }         # TIDs in 't'
tracers() { cat /proc/$1/task/*/status 2>/dev/null | awk '/^TracerPid:/ { print $2 }' | sort -u | tr '\n' ' '; }
counters() { od -An -t u8 -v -w8 "$1" | tr -s ' \n' '  '; }
nr_threads() { ls /proc/$1/task | wc -l; }
all_group_stopped() { ! states "$1" | grep -qE '(^| )[^T ] '; }
none_stopped() { ! states "$1" | grep -qE '(^| )[tT] '; }
# every counter in $2 (a counters line) is below the one in file $1 now
all_grew() {
	awk -v a="$2" -v b="$(counters "$1")" 'BEGIN { n = split(a, x); split(b, y)
		for (i = 1; i <= n; i++) if (y[i] + 0 <= x[i] + 0) exit 1 }'
}
# gone_or_zombie PID: the process ended (its zombie not reaped yet counts)
gone_or_zombie() { [ ! -e /proc/$1 ] || grep -q '^State:.*Z' /proc/$1/status 2>/dev/null; }

# running_again NAME PID COUNTERFILE: the target runs: no thread in a stop,
# no tracer, every counter grows. Waits up to 30 s for the stop to clear
# and for every thread to count again.
running_again() {
	local name=$1 pid=$2 file=$3 c0
	if ! wait_for 30 none_stopped "$pid"; then
		fail "$name" "target left stopped: thread states [$(states "$pid")]"
		return 1
	fi
	if [ "$(tracers "$pid")" != "0 " ]; then
		fail "$name" "a tracer is still attached: TracerPid [$(tracers "$pid")]"
		return 1
	fi
	[ -n "$file" ] || return 0
	c0=$(counters "$file")
	if ! wait_for 30 all_grew "$file" "$c0"; then
		fail "$name" "a thread stopped counting for 30 s: [$c0] -> [$(counters "$file")]"
		return 1
	fi
	return 0
}

# --- killed mid-way -------------------------------------------------------------
NTHREADS=6 # + the main thread
HOLD_MS=300
"$tmp/snap_counters" "$tmp/counters" $NTHREADS >"$tmp/counters.out" &
target=$!
pids+=("$target")
if ! wait_for 60 grep -q ready "$tmp/counters.out"; then
	fail snapshot_never_stopped "snap_counters did not start"
	exit 1
fi

max_t=0 seen_t=0
for sig in KILL INT TERM; do
	name=snapshot_killed_sig$sig
	# env --default-signal: a background job of a script starts with SIGINT
	# ignored, and the point is a ustack that SIGINT can end
	# ustack's pid is $u; a subshell waits for it at once and keeps its
	# exit status (bash would print a "Killed" job message for a job it
	# reaped itself while this script polls)
	rm -f "$tmp/u.pid" "$tmp/u.rc"
	( USTACK_TEST_HOLD_MS=$HOLD_MS env --default-signal=INT,TERM \
		"$USTACK" snapshot -p $target >"$tmp/kill.out" 2>"$tmp/kill.err" &
	  echo $! >"$tmp/u.pid"; wait $!; echo $? >"$tmp/u.rc" ) &
	uw=$!
	wait_for 60 test -s "$tmp/u.pid"
	u=$(cat "$tmp/u.pid")
	# Kill while the 3rd thread is held (each is held $HOLD_MS ms, one
	# after the other), or 2 holds after the first one seen: polled,
	# however long ustack takes to start. (On the 3rd alone, a loaded
	# machine whose polls took longer than a hold saw too few, and ustack
	# had finished: 7 threads are held 2.1 s in all.)
	declare -A seen=()
	end=$((SECONDS + 60)) first=
	while [ ${#seen[@]} -lt 3 ] && [ $SECONDS -lt $end ] && ! gone_or_zombie $u &&
		{ [ -z "$first" ] || [ $(( ${EPOCHREALTIME/./} - first )) -lt $((2 * HOLD_MS * 1000)) ]; }; do
		held=$(ptrace_stopped $target)
		n=$(echo $held | wc -w)
		# The threads' stat files are read one after another: a read
		# that spans the moment ustack moves from one thread to the next
		# sees both stopped. Two stops at once are real only if a second
		# read, right after, still sees them (each stop lasts $HOLD_MS ms).
		if [ "$n" -gt 1 ]; then
			n2=$(ptrace_stopped $target | wc -l)
			[ "$n2" -lt "$n" ] && n=$n2
		fi
		[ "$n" -gt $max_t ] && max_t=$n
		[ "$n" -gt 0 ] && seen_t=$((seen_t + 1))
		for t in $held; do seen[$t]=1; done
		[ -z "$first" ] && [ ${#seen[@]} -gt 0 ] && first=${EPOCHREALTIME/./}
		sleep 0.01
	done
	before_kill=" $(ptrace_stopped $target | tr '\n' ' ')"
	held="$(states $target)"
	if gone_or_zombie $u || ! kill -$sig $u 2>/dev/null; then
		wait $uw
		fail $name "ustack ended (exit $(cat "$tmp/u.rc")) before it could be killed: $(head -2 "$tmp/kill.err")"
		unset seen
		continue
	fi
	if [ ${#seen[@]} -lt 3 ]; then
		echo "# SIG$sig: ${#seen[@]} threads seen held before the kill"
	fi
	# Until ustack is gone: the threads it stops after the signal. The one
	# held when the signal came is let go first (the signals are blocked
	# while a thread is stopped); at most one more may show up (read
	# before the kill, ustack may have moved on to it just then). A ustack
	# that went on with its snapshot would stop every thread left (4 or
	# more).
	declare -A after=()
	end=$((SECONDS + 60))
	while ! gone_or_zombie $u && [ $SECONDS -lt $end ]; do
		for t in $(ptrace_stopped $target); do
			[[ $before_kill == *" $t "* ]] || after[$t]=1
		done
		sleep 0.01
	done
	if ! gone_or_zombie $u; then
		fail $name "ustack still alive 60 s after SIG$sig"
		kill -KILL $u 2>/dev/null
		wait $uw 2>/dev/null
		unset seen after
		continue
	fi
	wait $uw
	rc=$(cat "$tmp/u.rc")
	want=$((128 + $(kill -l $sig)))
	if [ $rc -ne $want ]; then
		fail $name "ustack exit $rc, want $want (killed by SIG$sig mid-way); stderr: $(head -2 "$tmp/kill.err")"
	elif [ ${#after[@]} -gt 1 ]; then
		fail $name "after SIG$sig ustack still stopped ${#after[@]} more threads (${!after[*]})"
	elif grep -q '^TID ' "$tmp/kill.out"; then
		fail $name "ustack printed stacks after SIG$sig: it finished the snapshot"
	elif running_again $name $target "$tmp/counters"; then
		echo "# SIG$sig: thread states when killed [$held], ${#seen[@]} threads held before, ${#after[@]} after; all $(nr_threads $target) threads counting again"
		pass $name
	fi
	unset seen after
done
if [ $seen_t -lt 3 ]; then
	fail snapshot_one_thread_at_a_time "ptrace stop seen in only $seen_t samples: hold not in effect?"
elif [ $max_t -gt 1 ]; then
	fail snapshot_one_thread_at_a_time "$max_t threads were in ptrace stop at once"
else
	echo "# $seen_t samples saw a thread in ptrace stop, never more than $max_t at once"
	pass snapshot_one_thread_at_a_time
fi

# --- a group-stopped target, ustack SIGKILLed while it holds a thread: the
# target must be back in group stop (every thread 'T', none in ptrace stop
# 't', no tracer, counters frozen), exactly as before, and SIGCONT-able
name=snapshot_killed_groupstop
kill -STOP $target
if ! wait_for 30 all_group_stopped $target; then
	fail $name "target not group-stopped 30 s after SIGSTOP: [$(states $target)]"
	kill -CONT $target
else
	USTACK_TEST_HOLD_MS=$HOLD_MS "$USTACK" snapshot -p $target >/dev/null 2>"$tmp/kill.err" &
	u=$!
	# killed while it holds a thread (polled: its start-up time varies)
	end=$((SECONDS + 60))
	until [ -n "$(ptrace_stopped $target)" ] || gone_or_zombie $u || [ $SECONDS -ge $end ]; do
		sleep 0.01
	done
	held=$(states $target)
	kill -KILL $u
	{ wait $u; } 2>/dev/null
	# the kernel detaches at once, but the thread re-enters the group
	# stop only when it runs: wait for it (at most 30 s)
	wait_for 30 all_group_stopped $target
	st=$(states $target)
	c0=$(counters "$tmp/counters")
	sleep 0.2 # a frozen counter cannot be waited for: it must stay put
	c1=$(counters "$tmp/counters")
	if ! echo "$held" | grep -q 't'; then
		fail $name "no thread was in ptrace stop when ustack was killed: [$held]"
	elif echo "$st" | grep -qE '(^| )[^T ] '; then
		fail $name "after SIGKILL of ustack, thread states [$st] (want all T: still group-stopped)"
	elif [ "$(tracers $target)" != "0 " ]; then
		fail $name "a tracer is still attached: TracerPid [$(tracers $target)]"
	elif [ "$c0" != "$c1" ]; then
		fail $name "a thread of the stopped target ran: [$c0] -> [$c1]"
	else
		kill -CONT $target
		running_again $name $target "$tmp/counters" && pass $name
	fi
	kill -CONT $target
fi

# --- --stats: the longest stop, measured ------------------------------------------
# The oracle for its size is the wall time of the whole run, measured here:
# no stop can last longer than the run that contains it (a unit error, ns
# for us, would). A fixed bound would depend on the machine's load.
# --stop-all: by default the threads blocked in the kernel (most of them,
# between their steps) are not stopped at all, and the longest stop may be 0.
t0=$(now_us)
"$USTACK" snapshot -p $target --stats --stop-all >"$tmp/out" 2>"$tmp/err"
rc=$?
wall=$(($(now_us) - t0))
st=$(grep 'longest stop' "$tmp/err")
nt=$(nr_threads $target)
# "ustack: pid P: T threads, U unwound, V vanished; F without a stop (...); longest stop X us, total Y us; N page reads"
read -r threads unwound longest < <(echo "$st" |
	sed -nE 's/.*: ([0-9]+) threads, ([0-9]+) unwound, .*longest stop ([0-9.]+) us.*/\1 \2 \3/p')
if [ $rc -ne 0 ] || [ -z "${longest:-}" ]; then
	fail snapshot_stats "exit $rc, stderr '$(head -2 "$tmp/err")'"
elif [ "$threads" -ne "$nt" ] || [ "$unwound" -ne "$nt" ] || [ "$(grep -c '^TID ' "$tmp/out")" -ne "$nt" ]; then
	fail snapshot_stats "target has $nt threads; stats say $threads found, $unwound unwound; $(grep -c '^TID ' "$tmp/out") printed"
elif ! echo "$st" | grep -q '; 0 without a stop'; then
	fail snapshot_stats "--stop-all, yet some threads were read without a stop: '$st'"
elif ! awk -v l="$longest" -v w="$wall" 'BEGIN { exit !(l > 0 && l < w) }'; then
	fail snapshot_stats "longest stop $longest us (want 0 < x < $wall us, the run's wall time)"
else
	echo "# $nt threads, longest stop $longest us in a $wall us run ($(basename "$USTACK") build)"
	pass snapshot_stats
fi
running_again snapshot_stats_running $target "$tmp/counters" && pass snapshot_stats_running

t0=$(now_us)
USTACK_TEST_HOLD_MS=50 "$USTACK" snapshot -p $target --stats >/dev/null 2>"$tmp/err"
wall=$(($(now_us) - t0))
longest=$(sed -nE 's/.*longest stop ([0-9.]+) us.*/\1/p' "$tmp/err")
if [ -z "$longest" ] || ! awk -v l="$longest" -v w="$wall" 'BEGIN { exit !(l >= 50000 && l < w) }'; then
	fail snapshot_stats_covers_hold "with a 50 ms hold the longest stop is '$longest' us (want 50000 <= x < $wall us, the run's wall time)"
else
	pass snapshot_stats_covers_hold
fi

# --- threads that exit mid-snapshot ----------------------------------------------
"$tmp/snap_churn" >"$tmp/churn.out" &
churn=$!
pids+=("$churn")
# ready: the 4 long-lived threads exist; then short-lived ones come and go
more_threads() { [ "$(nr_threads "$1")" -gt "$2" ]; }
vanished=0 bad= runs=0
if ! wait_for 60 grep -q ready "$tmp/churn.out" || ! wait_for 60 more_threads $churn 5; then
	bad="snap_churn did not start its threads"
fi
# 5 runs at least, more (up to 20) while no thread vanished in any: on a
# loaded machine the churn can be slow, and the case must be exercised
for run in $(seq 20); do
	[ -z "$bad" ] || break
	[ $run -gt 5 ] && [ $vanished -gt 0 ] && break
	# a 5 ms hold per thread: threads listed at the start exit before their turn
	USTACK_TEST_HOLD_MS=5 "$USTACK" snapshot -p $churn --stats >"$tmp/out" 2>"$tmp/err"
	rc=$?
	v=$(sed -nE 's/.* ([0-9]+) vanished.*/\1/p' "$tmp/err")
	# --stats: the totals line, then the debug sources of each file
	other=$(grep -v -e 'exited during the snapshot' -e 'longest stop' -e '^symbols: /' -e '^dwarf: /' \
		"$tmp/err" | head -2)
	if [ $rc -ne 0 ] || [ -z "$v" ]; then
		bad="run $run: exit $rc, stderr '$(head -2 "$tmp/err")'"
		break
	elif [ -n "$other" ]; then
		bad="run $run: unexpected message '$other'"
		break
	elif ! grep -q "^TID $churn " "$tmp/out" || [ "$(grep -c '^TID ' "$tmp/out")" -lt 5 ]; then
		bad="run $run: main thread or long-lived threads missing: $(grep '^TID ' "$tmp/out" | tr '\n' ' ')"
		break
	elif [ "$(grep -c 'exited during the snapshot' "$tmp/err")" -ne "$v" ]; then
		bad="run $run: $v vanished in --stats but $(grep -c 'exited during' "$tmp/err") messages"
		break
	fi
	vanished=$((vanished + v)) runs=$run
done
if [ -n "$bad" ]; then
	fail snapshot_threads_exit_midway "$bad"
elif [ $vanished -eq 0 ]; then
	fail snapshot_threads_exit_midway "no thread vanished in 20 runs: the case was not exercised"
else
	echo "# $runs snapshots of snap_churn: $vanished threads vanished between listing and stop, all reported cleanly"
	running_again snapshot_threads_exit_midway $churn "" && pass snapshot_threads_exit_midway
fi

# --- permission denied: user nobody against a root process --------------------------
if [ "$(id -u)" -ne 0 ]; then
	skip snapshot_permission_denied "not root: cannot switch to user nobody"
elif ! command -v setpriv >/dev/null; then
	skip snapshot_permission_denied "setpriv (util-linux) not installed"
elif ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$USTACK"; then
	skip snapshot_permission_denied "user nobody cannot execute $USTACK"
else
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$USTACK" snapshot -p $sleeper >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 1 ] && grep -q "pid $sleeper" "$tmp/err" && grep -qi 'not permitted' "$tmp/err"; then
		running_again snapshot_permission_denied $sleeper "" && pass snapshot_permission_denied
	else
		fail snapshot_permission_denied "exit $rc, stderr '$(head -2 "$tmp/err")'"
	fi
fi
[ $fails -eq 0 ]
