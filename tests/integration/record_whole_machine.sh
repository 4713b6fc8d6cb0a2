#!/usr/bin/env bash
# perf's conventions for a command beside -a or -p: the command is the
# timer. A busy loop (BUSY) runs before the recording starts; the command is
# a shell that burns CPU briefly, prints its pid and exits with status 3.
#
# Lines (PASS/FAIL/SKIP record_whole_machine/...):
#   all/BACKEND   `record -a -- sh -c LOOP` ends when the shell ends (wall time
#                 between 0.9 s and 120 s; the shell sleeps 1 s first), exit
#                 status 0 with "sh exited with status 3" (as `-- CMD`), and
#                 `report` shows events of BUSY's pid and of the shell's;
#                 the idle tasks' events (pid 0) are named swapper, not <...>
#   pid/BACKEND   `record -p BUSY -- sh -c LOOP`: the same end, events of
#                 BUSY's pid and none of the shell's
#   refused       -a with -p: exit 2 and one line saying so; no target at
#                 all: exit 2
# BACKEND is copy and bpf (SKIP with the recorder's reason when bpf does
# not load). Pids are read from `report`'s event lines "COMM-TID [CPU]"
# (both processes are single-threaded: tid = pid).
# Env (from make check): USTACK; KEEP_TMP=1 keeps the files.
set -u
T=record_whole_machine
USTACK=${USTACK:-build/check/ustack}
fails=0
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $T/$1: $2"; }

[ -x "$USTACK" ] || { fail setup "no $USTACK"; exit 1; }
tmp=$(mktemp -d)
busy=
cleanup() {
	[ -n "$busy" ] && kill -KILL "$busy" 2>/dev/null && wait "$busy" 2>/dev/null
	[ -n "${KEEP_TMP:-}" ] && echo "# files kept in $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

# ---- refused combinations (need no permission) --------------------------------
"$USTACK" record -a -p 1 -o "$tmp/x.data" -- true >"$tmp/ap.out" 2>"$tmp/ap.err"
rc=$?
if [ $rc -ne 2 ] || ! grep -q "give -p PID or -a, not both" "$tmp/ap.err"; then
	fail refused "-a -p: exit $rc, $(head -c 300 "$tmp/ap.err")"
elif [ -e "$tmp/x.data" ]; then
	fail refused "-a -p wrote a trace"
else
	"$USTACK" record -o "$tmp/x.data" >/dev/null 2>"$tmp/none.err"
	rc=$?
	if [ $rc -ne 2 ] || ! grep -q "nothing to record" "$tmp/none.err"; then
		fail refused "no target: exit $rc, $(head -c 300 "$tmp/none.err")"
	else
		pass refused
	fi
fi

if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
	skip all "needs root or perf_event_paranoid <= 1 (-a)"
	exit $((fails > 0))
fi
bpf_skip=
if ! "$USTACK" record -q --backend bpf -o "$tmp/probe.data" -- true >/dev/null 2>"$tmp/probe.err"; then
	bpf_skip=$(grep -m1 . "$tmp/probe.err")
	bpf_skip=${bpf_skip:-record --backend bpf failed without a reason}
fi

# the busy loop: a shell of its own, running before any recording starts
sh -c 'while :; do :; done' &
busy=$!
# LOOP: sleep 1 s (the lower bound of the wall time), then burn CPU until
# the shell has run 0.3 s of its own CPU time (enough samples under any
# load at 999 Hz), then exit 3
# (read and set are builtins: the CPU is the shell's own, no child's)
loop='echo "cmdpid $$"; sleep 1; while :; do read -r l </proc/$$/stat; set -- $l; [ $(( ${14} + ${15} )) -ge 30 ] && break; done; exit 3'

# events NAME TRACE: "pid count" lines of the trace's events
events() {
	"$USTACK" report -i "$2" 2>"$tmp/$1.rerr" |
		sed -n 's/^[^ ].*-\([0-9][0-9]*\) \[[0-9]*\] .*/\1/p' | sort | uniq -c |
		awk '{ print $2, $1 }' >"$tmp/$1.pids"
}
count_of() { awk -v p="$2" '$1 == p { print $2 }' "$1"; }

# run NAME ARGS...: record ARGS -- sh -c LOOP; sets cmdpid, secs; 0 if it
# ended well
run() {
	local name=$1 t0 t1
	shift
	t0=$(date +%s%N)
	timeout -k 10 240 "$USTACK" record -q -o "$tmp/$name.data" "$@" -- sh -c "$loop" \
		>"$tmp/$name.out" 2>"$tmp/$name.err"
	rc=$?
	t1=$(date +%s%N)
	secs=$(( (t1 - t0) / 1000000 ))
	cmdpid=$(sed -n 's/^cmdpid //p' "$tmp/$name.out")
	if [ $rc -ne 0 ]; then
		fail "$name" "record exited $rc: $(head -c 400 "$tmp/$name.err")"
	elif [ -z "$cmdpid" ]; then
		fail "$name" "the command did not run: $(head -c 300 "$tmp/$name.out")"
	elif ! grep -q "ustack: sh exited with status 3" "$tmp/$name.err"; then
		fail "$name" "no 'sh exited with status 3': $(head -c 400 "$tmp/$name.err")"
	elif [ "$secs" -lt 900 ] || [ "$secs" -gt 120000 ]; then
		fail "$name" "took $secs ms (bounds 900..120000: it ends with the command)"
	elif kill -0 "$cmdpid" 2>/dev/null; then
		fail "$name" "the command (pid $cmdpid) still runs after the recording"
	else
		return 0
	fi
	return 1
}

for be in copy bpf; do
	if [ $be = bpf ] && [ -n "$bpf_skip" ]; then
		skip all/$be "$bpf_skip"
		skip pid/$be "$bpf_skip"
		continue
	fi
	if run all_$be -a --backend $be; then
		events all_$be "$tmp/all_$be.data"
		nb=$(count_of "$tmp/all_$be.pids" "$busy")
		nc=$(count_of "$tmp/all_$be.pids" "$cmdpid")
		# the idle tasks' samples (pid 0, a CPU idle while the command
		# sleeps) are named swapper, as perf names them, not <...>
		nidle=$("$USTACK" report -i "$tmp/all_$be.data" 2>/dev/null | grep -c '^swapper-0 ')
		nanon=$("$USTACK" report -i "$tmp/all_$be.data" 2>/dev/null | grep '^<\.\.\.>-0 ' | grep -vc ': lost: ')
		if [ -z "$nb" ] || [ -z "$nc" ]; then
			fail all/$be "events of the busy loop $busy: ${nb:-0}, of the command $cmdpid: ${nc:-0} (want both > 0); pids: $(head -20 "$tmp/all_$be.pids" | tr '\n' ' ')"
		elif [ "$nanon" -ne 0 ]; then
			fail all/$be "$nanon events of pid 0 named <...> (want swapper, as perf)"
		else
			echo "# all/$be: ${secs} ms, busy loop $nb events, command $nc, idle (swapper) $nidle"
			pass all/$be
		fi
	fi
	if run pid_$be -p "$busy" --backend $be; then
		events pid_$be "$tmp/pid_$be.data"
		nb=$(count_of "$tmp/pid_$be.pids" "$busy")
		nc=$(count_of "$tmp/pid_$be.pids" "$cmdpid")
		others=$(awk -v p="$busy" '$1 != p' "$tmp/pid_$be.pids" | tr '\n' ' ')
		if [ -z "$nb" ] || [ -n "$nc" ] || [ -n "$others" ]; then
			fail pid/$be "events of the busy loop $busy: ${nb:-0} (want > 0), of the command $cmdpid: ${nc:-0} (want 0); other pids: $others"
		else
			echo "# pid/$be: ${secs} ms, busy loop $nb events"
			pass pid/$be
		fi
	fi
done
exit $((fails > 0))
