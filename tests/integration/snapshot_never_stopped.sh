#!/usr/bin/env bash
# `ustack snapshot` never leaves its target stopped, stops one thread at a
# time, and fails cleanly. Oracles: the kernel's view of the target
# (/proc/PID/task/*/stat state letters, TracerPid in .../status) and the
# target's own progress counters (snap_counters: one slot per thread in a
# shared file, one step per millisecond).
#
#   - ustack killed mid-way by SIGKILL, SIGINT, SIGTERM while it holds a
#     thread stopped (USTACK_TEST_HOLD_MS keeps each thread stopped N ms):
#     every thread runs again, no tracer is left, every counter grows
#   - while it runs, at most one thread is ever in ptrace stop ('t')
#   - --stats reports the longest stop, and it covers the stop window
#   - threads exiting mid-snapshot: no crash, the rest reported
#   - no such pid, permission denied (as user nobody), bad arguments, --help
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
sleep 60 &
sleeper=$!
pids+=("$sleeper")
sleep 0.1
if ! why=$("$tmp/snap_probe" $sleeper); then
	skip snapshot_never_stopped "$why"
	exit 0
fi

states() { # state letters of every thread of $1, e.g. "S S R t "
	local s out=
	for s in /proc/$1/task/*/stat; do
		out+="$(sed -E 's/^.*\) ([A-Za-z]) .*/\1/' "$s" 2>/dev/null) "
	done
	echo "$out"
}
tracers() { cat /proc/$1/task/*/status 2>/dev/null | awk '/^TracerPid:/ { print $2 }' | sort -u | tr '\n' ' '; }
counters() { od -An -t u8 -v -w8 "$1" | tr -s ' \n' '  '; }
nr_threads() { ls /proc/$1/task | wc -l; }

# running_again NAME PID COUNTERFILE: the target runs: no thread in a stop,
# no tracer, every counter grows. Waits up to 1 s for the stop to clear.
running_again() {
	local name=$1 pid=$2 file=$3 st c0 c1
	for _ in $(seq 100); do
		st=$(states "$pid")
		echo "$st" | grep -qE '(^| )[tT] ' || break
		sleep 0.01
	done
	if echo "$st" | grep -qE '(^| )[tT] '; then
		fail "$name" "target left stopped: thread states [$st]"
		return 1
	fi
	if [ "$(tracers "$pid")" != "0 " ]; then
		fail "$name" "a tracer is still attached: TracerPid [$(tracers "$pid")]"
		return 1
	fi
	[ -n "$file" ] || return 0
	c0=$(counters "$file")
	sleep 0.3
	c1=$(counters "$file")
	if ! awk -v a="$c0" -v b="$c1" 'BEGIN { n = split(a, x); split(b, y)
		for (i = 1; i <= n; i++) if (y[i] + 0 <= x[i] + 0) exit 1 }'; then
		fail "$name" "a thread stopped counting: [$c0] -> [$c1]"
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
for _ in $(seq 300); do grep -q ready "$tmp/counters.out" 2>/dev/null && break; sleep 0.01; done
if ! grep -q ready "$tmp/counters.out"; then
	fail snapshot_never_stopped "snap_counters did not start"
	exit 1
fi

max_t=0 seen_t=0
for sig in KILL INT TERM; do
	name=snapshot_killed_sig$sig
	# env --default-signal: a background job of a script starts with SIGINT
	# ignored, and the point is a ustack that SIGINT can end
	USTACK_TEST_HOLD_MS=$HOLD_MS env --default-signal=INT,TERM \
		"$USTACK" snapshot -p $target >"$tmp/kill.out" 2>"$tmp/kill.err" &
	u=$!
	t_end=$(($(date +%s%N) + 800000000)) # kill while the 3rd thread is held
	while [ "$(date +%s%N)" -lt $t_end ]; do
		n=$(states $target | tr ' ' '\n' | grep -c '^t$')
		# The threads' stat files are read one after another: a read
		# that spans the moment ustack moves from one thread to the next
		# sees both stopped. Two stops at once are real only if a second
		# read, right after, still sees them (each stop lasts $HOLD_MS ms).
		if [ "$n" -gt 1 ]; then
			n2=$(states $target | tr ' ' '\n' | grep -c '^t$')
			[ "$n2" -lt "$n" ] && n=$n2
		fi
		[ "$n" -gt $max_t ] && max_t=$n
		[ "$n" -gt 0 ] && seen_t=$((seen_t + 1))
		sleep 0.01
	done
	held=$(states $target)
	t0=$(date +%s%N)
	if ! kill -$sig $u 2>/dev/null; then
		wait $u
		fail $name "ustack ended (exit $?) before it could be killed: $(head -2 "$tmp/kill.err")"
		continue
	fi
	{ wait $u; } 2>/dev/null # no "Killed" job message
	rc=$?
	dt=$((($(date +%s%N) - t0) / 1000000))
	want=$((128 + $(kill -l $sig)))
	if [ $rc -ne $want ]; then
		fail $name "ustack exit $rc, want $want (killed by SIG$sig mid-way); stderr: $(head -2 "$tmp/kill.err")"
	elif [ $dt -gt $((HOLD_MS + 1000)) ]; then
		fail $name "ustack took $dt ms to die of SIG$sig (hold $HOLD_MS ms)"
	elif running_again $name $target "$tmp/counters"; then
		echo "# SIG$sig: thread states when killed [$held], ustack gone after $dt ms, all $(nr_threads $target) threads counting again"
		pass $name
	fi
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
for _ in $(seq 200); do
	states $target | grep -qE '(^| )[^T ] ' || break
	sleep 0.01
done
USTACK_TEST_HOLD_MS=$HOLD_MS "$USTACK" snapshot -p $target >/dev/null 2>"$tmp/kill.err" &
u=$!
sleep 0.5
held=$(states $target)
kill -KILL $u
{ wait $u; } 2>/dev/null
sleep 0.1
st=$(states $target)
c0=$(counters "$tmp/counters")
sleep 0.2
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

# --- --stats: the longest stop, measured ------------------------------------------
"$USTACK" snapshot -p $target --stats >"$tmp/out" 2>"$tmp/err"
rc=$?
st=$(grep 'longest stop' "$tmp/err")
nt=$(nr_threads $target)
# "ustack: pid P: T threads, U unwound, V vanished; longest stop X us, total Y us; N page reads"
read -r threads unwound longest < <(echo "$st" |
	sed -nE 's/.*: ([0-9]+) threads, ([0-9]+) unwound, .*longest stop ([0-9.]+) us.*/\1 \2 \3/p')
if [ $rc -ne 0 ] || [ -z "${longest:-}" ]; then
	fail snapshot_stats "exit $rc, stderr '$(head -2 "$tmp/err")'"
elif [ "$threads" -ne "$nt" ] || [ "$unwound" -ne "$nt" ] || [ "$(grep -c '^TID ' "$tmp/out")" -ne "$nt" ]; then
	fail snapshot_stats "target has $nt threads; stats say $threads found, $unwound unwound; $(grep -c '^TID ' "$tmp/out") printed"
elif ! awk -v l="$longest" 'BEGIN { exit !(l > 0 && l < 1000000) }'; then
	fail snapshot_stats "longest stop $longest us (want 0 < x < 1 s)"
else
	echo "# $nt threads, longest stop $longest us ($(basename "$USTACK") build)"
	pass snapshot_stats
fi
running_again snapshot_stats_running $target "$tmp/counters" && pass snapshot_stats_running

USTACK_TEST_HOLD_MS=50 "$USTACK" snapshot -p $target --stats >/dev/null 2>"$tmp/err"
longest=$(sed -nE 's/.*longest stop ([0-9.]+) us.*/\1/p' "$tmp/err")
if [ -z "$longest" ] || ! awk -v l="$longest" 'BEGIN { exit !(l >= 50000 && l < 1050000) }'; then
	fail snapshot_stats_covers_hold "with a 50 ms hold the longest stop is '$longest' us"
else
	pass snapshot_stats_covers_hold
fi

# --- threads that exit mid-snapshot ----------------------------------------------
"$tmp/snap_churn" >"$tmp/churn.out" &
churn=$!
pids+=("$churn")
for _ in $(seq 300); do grep -q ready "$tmp/churn.out" 2>/dev/null && break; sleep 0.01; done
sleep 0.1
vanished=0 bad=
for run in 1 2 3 4 5; do
	# a 5 ms hold per thread: threads listed at the start exit before their turn
	USTACK_TEST_HOLD_MS=5 "$USTACK" snapshot -p $churn --stats >"$tmp/out" 2>"$tmp/err"
	rc=$?
	v=$(sed -nE 's/.* ([0-9]+) vanished.*/\1/p' "$tmp/err")
	other=$(grep -v -e 'exited during the snapshot' -e 'longest stop' "$tmp/err" | head -2)
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
	vanished=$((vanished + v))
done
if [ -n "$bad" ]; then
	fail snapshot_threads_exit_midway "$bad"
elif [ $vanished -eq 0 ]; then
	fail snapshot_threads_exit_midway "no thread vanished in 5 runs: the case was not exercised"
else
	echo "# 5 snapshots of snap_churn: $vanished threads vanished between listing and stop, all reported cleanly"
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
