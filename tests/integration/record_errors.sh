#!/usr/bin/env bash
# `ustack record` failures: one clear line each on stderr, a non-zero exit,
# and whatever was recorded before a failure stays readable by
# `ustack report`. Also: SIGINT and SIGTERM during `record -p PID` finish
# the file properly and leave the recorded process running.
#
#   - unknown events: a tracepoint that does not exist (-e nosuch:event),
#     a name that is no event (-e bogus): the line names the event
#   - a pid that does not exist: the line names the pid, "no such process"
#   - no permission: as user nobody (setpriv) with kernel.perf_event_paranoid
#     at 2 (set for the test when it is not, restored after): the line says
#     "permission denied", and the command to record never ran
#   - a full disk: a 320 KiB tmpfs in a private mount namespace (unshare -m),
#     recording the demo (-p) until the disk is full, however long that
#     takes on this machine (at most 120 s): the line names the file and
#     says "No space left on device"; the partial file is read by `ustack
#     report`, which shows the events of the chunks written before the
#     failure, then names the damage, exit 1
#   - SIGINT, SIGTERM during record -p PID, once >= 10 events are on disk:
#     exit 0, `ustack report` reads the file without an error and shows
#     its events, and the process is still running
#   - SIGKILL of the recorder once a chunk with events is on disk: the
#     chunks written so far (one at least every second) are read by
#     `ustack report`, which then names the damage (no END record)
# The workload is examples/futex_demo.c (threads on a pthread mutex).
# Nothing waits a fixed time: each step waits for its condition (the demo's
# threads exist, events are on disk) with a generous upper bound, so a
# slow or loaded machine only makes the test slower.
set -u
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $1: $2"; }

[ -x "$USTACK" ] || { fail record_errors "no $USTACK"; exit 1; }
USTACK=$(cd "$(dirname "$USTACK")" && pwd)/$(basename "$USTACK")
. "$TOP/tests/integration/lib/tracepoint.sh"
# the futex tracepoint: the workload's event in every test below that records
tp_why=$(tracepoint_why syscalls:sys_enter_futex)

tmp=$(mktemp -d)
. "$TOP/tests/integration/lib/poll.sh"
chmod 755 "$tmp"
pids=()
paranoid_saved=
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	[ -n "$paranoid_saved" ] && sysctl -q -w kernel.perf_event_paranoid="$paranoid_saved"
	rm -rf "$tmp"
}
trap cleanup EXIT

if ! $CC -O2 -fomit-frame-pointer -o "$tmp/futex_demo" "$TOP/examples/futex_demo.c" -lpthread; then
	fail record_errors "cannot build examples/futex_demo.c"
	exit 1
fi

# one_line NAME RC ERRFILE REGEX...: exit non-zero, exactly one line on
# stderr, "ustack: ...", matching every (case-insensitive) extended REGEX
one_line() {
	local name=$1 rc=$2 err=$3 re; shift 3
	local n
	n=$(wc -l <"$err")
	if [ "$rc" -eq 0 ]; then
		fail "$name" "exit 0, want non-zero (stderr '$(head -3 "$err")')"; return 1
	fi
	if [ "$n" -ne 1 ] || ! grep -q '^ustack: ' "$err"; then
		fail "$name" "want one 'ustack: ' line on stderr, got $n: '$(head -5 "$err" | tr '\n' '|')'"; return 1
	fi
	for re in "$@"; do
		if ! grep -qiE -- "$re" "$err"; then
			fail "$name" "stderr '$(cat "$err")' does not match /$re/"; return 1
		fi
	done
	pass "$name"
}

# report_check NAME FILE: runs `ustack report` (text) on FILE; sets
# $report_rc and $events. Returns 1 when report is missing.
report_unavailable=
report_check() {
	"$USTACK" report -i "$2" >"$tmp/report.out" 2>"$tmp/report.err"
	report_rc=$?
	if grep -q 'not implemented' "$tmp/report.err"; then
		report_unavailable=1
		return 1
	fi
	# event lines of the text format: "comm pid/tid [cpu] time event: ..."
	events=$(grep -cE '(cpu-clock|sys_enter_futex)' "$tmp/report.out")
	return 0
}

# start_demo SECONDS: the demo in the background ($wp), once its four
# worker threads exist (at most 60 s: a loaded machine may be slow to fork
# and exec, and record -p should see the workload, not a shell in exec)
start_demo() {
	local end=$((SECONDS + 60))
	"$tmp/futex_demo" -s "$1" >/dev/null &
	wp=$!
	pids+=($wp)
	while [ $SECONDS -lt $end ]; do
		[ "$(readlink /proc/$wp/exe 2>/dev/null)" = "$tmp/futex_demo" ] &&
			[ "$(ls /proc/$wp/task 2>/dev/null | wc -l)" -ge 5 ] && return 0
		sleep 0.05
	done
	return 1
}
stop_demo() { kill -KILL $wp 2>/dev/null; wait $wp 2>/dev/null; }

# wait_events FILE MIN RPID: until the complete chunks of FILE, which the
# recorder RPID is still writing, hold at least MIN events (report --stats
# reads a file up to its unfinished end). The recorder writes a chunk at
# least once a second once it records; its start-up (event set-up, kernel
# symbols, ASan) takes longer on a loaded machine, so this polls for the
# condition rather than sleeping a fixed time. At most 60 s; returns 1 if
# the recorder ended first or time ran out.
wait_events() {
	local end=$((SECONDS + 60)) n
	while [ $SECONDS -lt $end ] && kill -0 "$3" 2>/dev/null; do
		n=$("$POLL_USTACK" report -i "$1" --stats 2>/dev/null | sed -n 's/^events: \([0-9]*\).*/\1/p')
		[ "${n:-0}" -ge "$2" ] && return 0
		sleep 0.2
	done
	return 1
}

# --- unknown events ------------------------------------------------------------
if [ -n "$tp_why" ]; then
	skip record_unknown_tracepoint "$tp_why"
else
	"$USTACK" record -q -o "$tmp/a.data" -e nosuch:event -- true >/dev/null 2>"$tmp/err"
	one_line record_unknown_tracepoint $? "$tmp/err" 'nosuch' 'unknown|no such|not found'
fi
"$USTACK" record -q -o "$tmp/a.data" -e bogus -- true >/dev/null 2>"$tmp/err"
one_line record_unknown_event $? "$tmp/err" "'bogus'|bogus:|: bogus" 'unknown'

# --- a pid that does not exist ---------------------------------------------------
true &
gone=$!
wait $gone
if [ -e /proc/$gone ]; then
	skip record_no_such_pid "pid $gone was reused at once"
else
	"$USTACK" record -q -o "$tmp/a.data" -p $gone >/dev/null 2>"$tmp/err"
	one_line record_no_such_pid $? "$tmp/err" "pid $gone([^0-9]|$)" 'no such process'
fi

# --- no permission ---------------------------------------------------------------
if [ "$(id -u)" -ne 0 ]; then
	skip record_no_permission "needs root to run as nobody and set perf_event_paranoid"
elif ! command -v setpriv >/dev/null; then
	skip record_no_permission "setpriv (util-linux) not installed"
else
	cur=$(sysctl -n kernel.perf_event_paranoid)
	if [ "$cur" != 2 ]; then
		paranoid_saved=$cur
		sysctl -q -w kernel.perf_event_paranoid=2
	fi
	nb=$tmp/nobody
	mkdir -p "$nb" && chmod 777 "$nb"
	for ev in cpu-clock syscalls:sys_enter_futex; do
		name=record_no_permission_${ev%%:*}
		if [ "$ev" != cpu-clock ] && [ -n "$tp_why" ]; then
			skip $name "$tp_why"
			continue
		fi
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$USTACK" record -q -o "$nb/p.data" -e $ev -- touch "$nb/ran" >/dev/null 2>"$tmp/err"
		if one_line $name $? "$tmp/err" 'permission denied|not permitted' "$ev|tracefs"; then
			if [ -e "$nb/ran" ]; then
				fail ${name}_command "the command ran although nothing could be recorded"
			fi
		fi
	done
	if [ -n "$paranoid_saved" ]; then
		sysctl -q -w kernel.perf_event_paranoid="$paranoid_saved"
		paranoid_saved=
	fi
fi

# --- a full disk -----------------------------------------------------------------
if [ "$(id -u)" -ne 0 ]; then
	skip record_full_disk "needs root for a tmpfs in a private mount namespace"
elif ! command -v unshare >/dev/null; then
	skip record_full_disk "unshare (util-linux) not installed"
elif [ -n "$tp_why" ]; then
	skip record_full_disk "$tp_why"
elif ! start_demo 120; then
	fail record_full_disk "futex_demo did not start its threads: $(ls /proc/$wp/task 2>/dev/null | wc -l) threads"
else
	# The disk must fill whatever the machine's speed or load, and only
	# after the first chunk is on it. A chunk goes out when 256 KiB are
	# full (or each second), so the first one is never much above 256
	# KiB: a 320 KiB tmpfs always holds it and never holds all of what
	# follows. The demo runs (at most 120 s) until the recorder fails;
	# cpu-clock at 10 kHz (or the kernel's limit) makes the trace grow
	# ~300 KB for each second of CPU the demo gets, also on a loaded
	# machine where its threads rarely contend. --duration is the upper
	# bound: a recorder that never sees the disk full exits 0 and fails
	# the test.
	freq=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo 1000)
	[ "$freq" -gt 10000 ] && freq=10000
	unshare -m bash -c '
		set -u
		d=$1/disk
		mkdir -p "$d"
		mount -t tmpfs -o size=320k tmpfs "$d" || exit 99
		"$2" record -q -o "$d/full.data" -e syscalls:sys_enter_futex -e cpu-clock -F "$4" \
			--duration 120 -p "$3" >/dev/null 2>"$1/full.err"
		echo $? >"$1/full.rc"
		cp "$d/full.data" "$1/full.data" 2>/dev/null
		umount "$d"
	' _ "$tmp" "$USTACK" "$wp" "$freq"
	urc=$?
	stop_demo
	if [ $urc -eq 99 ]; then
		skip record_full_disk "cannot mount a tmpfs in a private mount namespace"
	elif ! [ -s "$tmp/full.rc" ]; then
		fail record_full_disk "unshare -m failed (exit $urc)"
	else
		one_line record_full_disk "$(cat "$tmp/full.rc")" "$tmp/full.err" \
			'full\.data' 'no space left on device'
		if ! [ -s "$tmp/full.data" ]; then
			fail record_full_disk_readable "no partial file left"
		elif report_check x "$tmp/full.data"; then
			# a damaged tail: report may say so (one line), but must show
			# the events of the complete chunks
			damage=$(grep -E 'full\.data.*(damaged|truncated)' "$tmp/report.err" | head -1)
			if [ "$events" -gt 0 ] && [ -n "$damage" ] && [ "$report_rc" -ne 0 ]; then
				pass record_full_disk_readable
				echo "  full disk: $(stat -c %s "$tmp/full.data") bytes left, report shows $events events, then (exit $report_rc): $damage"
			else
				fail record_full_disk_readable "want events, then a line naming the damage and exit 1: report shows $events events of the $(stat -c %s "$tmp/full.data")-byte partial file (exit $report_rc: $(grep -v debug "$tmp/report.err" | head -2 | tr '\n' '|'))"
			fi
		else
			skip record_full_disk_readable "ustack report is not implemented yet"
		fi
	fi
fi

# --- SIGINT and SIGTERM during record -p PID --------------------------------------
if [ "$(id -u)" -ne 0 ] && [ "$(sysctl -n kernel.perf_event_paranoid)" -gt 1 ]; then
	skip record_signals "needs root or kernel.perf_event_paranoid <= 1"
elif [ -n "$tp_why" ]; then
	skip record_signals "$tp_why"
else
	for sig in INT TERM; do
		name=record_sig$(echo $sig | tr A-Z a-z)
		if ! start_demo 120; then
			fail $name "futex_demo did not start its threads"
			stop_demo
			continue
		fi
		rm -f "$tmp/sig.data"
		"$USTACK" record -q -o "$tmp/sig.data" -e syscalls:sys_enter_futex -e cpu-clock \
			-p $wp >/dev/null 2>"$tmp/err" &
		rp=$!
		# the signal comes once the recorder has written >= 10 events
		# (whatever its start-up took), not after a fixed time
		if ! wait_events "$tmp/sig.data" 10 $rp; then
			kill -KILL $rp 2>/dev/null
			wait $rp 2>/dev/null
			fail $name "no 10 events written within 60 s (stderr '$(head -3 "$tmp/err" | tr '\n' '|')')"
			stop_demo
			continue
		fi
		kill -$sig $rp
		wait $rp
		rc=$?
		# the one line a loaded machine may add: the capture of the files
		# into the build-ID cache outlasted the recording by over a second
		grep -v '^ustack: waiting for the capture of [0-9]* files* into the build-ID cache' \
			"$tmp/err" > "$tmp/err.other"
		if [ $rc -ne 0 ] || [ -s "$tmp/err.other" ]; then
			fail $name "record exit $rc after SIG$sig, stderr '$(head -3 "$tmp/err" | tr '\n' '|')'"
		elif ! kill -0 $wp 2>/dev/null; then
			fail $name "the recorded process $wp died with the recorder"
		elif ! report_check x "$tmp/sig.data"; then
			skip $name "ustack report is not implemented yet"
		elif [ $report_rc -ne 0 ] || grep -qE 'sig\.data|damaged|truncated' "$tmp/report.err"; then
			# (warnings about other files, e.g. a debug file, are not the trace's)
			fail $name "report of the file: exit $report_rc, '$(head -2 "$tmp/report.err" | tr '\n' '|')'"
		elif [ "$events" -lt 10 ]; then
			fail $name "report shows $events events (want >= 10)"
		else
			pass $name
			echo "  SIG$sig: report shows $events events of pid $wp"
		fi
		stop_demo
	done
fi

# --- SIGKILL: no chance to finish the file; what was written stays readable ---
if [ "$(id -u)" -ne 0 ] && [ "$(sysctl -n kernel.perf_event_paranoid)" -gt 1 ]; then
	skip record_sigkill "needs root or kernel.perf_event_paranoid <= 1"
elif ! start_demo 120; then
	fail record_sigkill "futex_demo did not start its threads"
	stop_demo
else
	"$USTACK" record -q -o "$tmp/kill.data" -e cpu-clock -p $wp >/dev/null 2>"$tmp/err" &
	rp=$!
	# killed once a chunk with events is on disk (a chunk goes out at
	# least once a second while recording)
	wait_events "$tmp/kill.data" 1 $rp
	waited=$?
	kill -KILL $rp 2>/dev/null
	wait $rp 2>/dev/null
	if [ $waited -ne 0 ]; then
		fail record_sigkill "no event written within 60 s (stderr '$(head -3 "$tmp/err" | tr '\n' '|')')"
	elif ! report_check x "$tmp/kill.data"; then
		skip record_sigkill "ustack report is not implemented yet"
	else
		damage=$(grep -E 'kill\.data.*(damaged|truncated|END)' "$tmp/report.err" | head -1)
		if [ "$events" -gt 0 ] && [ -n "$damage" ]; then
			pass record_sigkill
			echo "  SIGKILL: report shows $events events, then: $damage"
		else
			fail record_sigkill "report shows $events events of a SIGKILLed recorder, stderr '$(grep -v debug "$tmp/report.err" | head -2 | tr '\n' '|')'"
		fi
	fi
	stop_demo
fi

[ $fails -eq 0 ]
