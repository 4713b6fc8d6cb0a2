#!/usr/bin/env bash
# `ustack snapshot -p PID --format raw` against the oracle `eu-stack -p PID`
# (elfutils), on real processes no one here wrote and on two small programs
# of ours built with plain -O2 (no frame pointers, no SFrame):
#
#   sleep          blocked in clock_nanosleep
#   bash           `read x` on a pipe held open
#   python3        a busy loop                      (SIGSTOPped, 3 times)
#   gzip           compressing /dev/urandom         (SIGSTOPped, 3 times)
#   snap_futex32   33 threads, 32 of them in futex waits
#   snap_condvar   C++ threads in std::condition_variable::wait
#
# Threads are matched by TID (the tools may list them in different orders)
# and the pc lists compared frame by frame: frame 0 is the exact pc, every
# later frame a return address, in both tools. A thread's frames compared
# are the longer of its two lists; a thread only one tool saw counts all its
# frames as disagreeing. PASS needs 100%: no difference is tolerated.
#
# A busy process moves between the two snapshots, so python3 and gzip are
# group-stopped (SIGSTOP) before either tool runs. That also tests that
# ustack handles a stopped process: every thread must still be in group
# stop ('T', not the ptrace stop 't', TracerPid 0) after it, and run again
# (state leaves 'T', CPU time grows) after SIGCONT.
set -u
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
CXX=${CXX:-g++}
TOP=${TOP:-$PWD}
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $1: $2"; }

command -v eu-stack >/dev/null || { skip snapshot_eustack "eu-stack (elfutils) not installed"; exit 0; }
[ -x "$USTACK" ] || { fail snapshot_eustack "no $USTACK"; exit 1; }

tmp=$(mktemp -d)
pids=()
cleanup() {
	exec 9>&- 2>/dev/null
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

progs=$TOP/tests/integration/progs
if ! $CC -O2 -o "$tmp/snap_probe" "$progs/snap_probe.c" ||
   ! $CC -O2 -pthread -o "$tmp/snap_futex32" "$progs/snap_futex32.c" ||
   ! $CXX -O2 -pthread -o "$tmp/snap_condvar" "$progs/snap_condvar.cc"; then
	fail snapshot_eustack "cannot build the target programs"
	exit 1
fi

# --- can we ptrace and process_vm_readv at all? (our own probe, not ustack)
sleep 60 &
pids+=($!)
if ! why=$("$tmp/snap_probe" $!); then
	skip snapshot_eustack "$why"
	exit 0
fi

# Thread states ("R", "S", "T", "t", ...) of every thread of $1, one line.
states() {
	local s out=
	for s in /proc/$1/task/*/stat; do
		# the state follows the ")" that closes comm (comm may hold spaces)
		out+="$(sed -E 's/^.*\) ([A-Za-z]) .*/\1/' "$s" 2>/dev/null) "
	done
	echo "$out"
}
tracers() { cat /proc/$1/task/*/status 2>/dev/null | awk '/^TracerPid:/ { print $2 }' | sort -u | tr '\n' ' '; }
# utime + stime of the whole process, in clock ticks
cputime() { sed -E 's/^.*\) //' /proc/$1/stat | awk '{ print $12 + $13 }'; }

# Every wait below polls for its condition with a generous bound (30 s):
# a slow or loaded machine only makes the test slower.
# wait_states PID REGEX: until every thread's state matches
wait_states() {
	local end=$((SECONDS + 30)) st
	while [ $SECONDS -lt $end ]; do
		st=$(states "$1")
		[ -n "$st" ] && ! echo "$st" | tr ' ' '\n' | grep -v '^$' | grep -qvE "^($2)\$" && return 0
		sleep 0.01
	done
	return 1
}
# syscalls PID, wait_blocked PID NRS [N]
. "${TOP:-$PWD}/tests/integration/lib/wait_blocked.sh"
# wait_cpu PID TICKS: until the process has used more than TICKS clock ticks
wait_cpu() {
	local end=$((SECONDS + 30))
	while [ $SECONDS -lt $end ]; do
		[ "$(cputime "$1" 2>/dev/null || echo 0)" -gt "$2" ] && return 0
		sleep 0.01
	done
	return 1
}

# Both tools' pc lists as "tid idx pc" (pc in lower-case hex without 0x and
# leading zeros), then the per-thread comparison. Prints
# "threads_both threads_one_side frames agree" and writes the differences.
compare() { # ustack_out eustack_out diff_out
	awk -v diff="$3" '
	FNR == 1 { file++ }
	file == 1 && /^TID [0-9]+/ { tid = $2; UT[tid] = 1; NU[tid] += 0; next }
	file == 2 && /^TID [0-9]+:/ { tid = $2; sub(/:$/, "", tid); ET[tid] = 1; NE[tid] += 0; next }
	/^#[0-9]+ +0x[0-9a-fA-F]+/ {
		i = substr($1, 2) + 0; pc = tolower($2); sub(/^0x0*/, "", pc)
		if (file == 1) { U[tid, i] = pc; if (i + 1 > NU[tid]) NU[tid] = i + 1 }
		else { E[tid, i] = pc; if (i + 1 > NE[tid]) NE[tid] = i + 1 }
	}
	END {
		for (t in UT) ALL[t] = 1
		for (t in ET) ALL[t] = 1
		both = one = frames = agree = 0
		for (t in ALL) {
			if ((t in UT) && (t in ET)) both++; else one++
			n = NU[t] > NE[t] ? NU[t] : NE[t]
			first = -1
			for (i = 0; i < n; i++) {
				if (((t, i) in U) && ((t, i) in E) && U[t, i] == E[t, i]) agree++
				else if (first < 0) first = i
			}
			frames += n
			if (!(t in UT)) print "TID " t ": only eu-stack saw it (" NE[t] " frames)" > diff
			else if (!(t in ET)) print "TID " t ": only ustack saw it (" NU[t] " frames)" > diff
			else if (first >= 0)
				printf "TID %s: frame #%d: ustack %s, eu-stack %s (ustack %d frames, eu-stack %d)\n",
					t, first, ((t, first) in U) ? "0x" U[t, first] : "-",
					((t, first) in E) ? "0x" E[t, first] : "-", NU[t], NE[t] > diff
		}
		print both, one, frames, agree
	}' "$1" "$2"
}

total_frames=0 total_agree=0 total_threads=0
summary=()

# check_target NAME PID STOPPED: both tools on PID, compare, report.
check_target() {
	local name=$1 pid=$2 stopped=$3 both one frames agree pct before after
	local u=$tmp/$name.ustack e=$tmp/$name.eustack d=$tmp/$name.diff

	"$USTACK" snapshot -p "$pid" --format raw >"$u" 2>"$u.err"
	local rc=$?
	if [ "$stopped" = 1 ]; then
		# still exactly as before: group-stopped, no tracer left behind
		if ! wait_states "$pid" T || [ "$(tracers "$pid")" != "0 " ]; then
			fail "snapshot_eustack_${name}_stays_stopped" \
				"after ustack: states [$(states "$pid")], TracerPid [$(tracers "$pid")]"
		else
			pass "snapshot_eustack_${name}_stays_stopped"
		fi
	fi
	eu-stack -p "$pid" >"$e" 2>"$e.err"
	if [ $rc -ne 0 ]; then
		fail "snapshot_eustack_$name" "ustack exit $rc: $(head -3 "$u.err")"
		return
	fi
	if ! grep -q '^TID ' "$e"; then
		fail "snapshot_eustack_$name" "eu-stack printed no thread: $(head -3 "$e.err")"
		return
	fi
	: >"$d"
	read -r both one frames agree < <(compare "$u" "$e" "$d")
	pct=$(awk -v a="$agree" -v f="$frames" 'BEGIN { printf "%.1f", f ? 100 * a / f : 0 }')
	echo "# $name (pid $pid$([ "$stopped" = 1 ] && echo ', SIGSTOPped')): threads $both (+$one seen by one tool only), frames compared $frames, agree $agree: $pct%"
	summary+=("$(printf '%-14s %7s %8s %7s %7s%%' "$name" "$((both + one))" "$frames" "$agree" "$pct")")
	total_frames=$((total_frames + frames))
	total_agree=$((total_agree + agree))
	total_threads=$((total_threads + both + one))
	if [ "$frames" -lt 2 ]; then
		fail "snapshot_eustack_$name" "fewer than 2 frames compared"
	elif [ "$agree" -ne "$frames" ] || [ "$one" -ne 0 ]; then
		fail "snapshot_eustack_$name" "$pct% agreement; $(head -5 "$d" | tr '\n' ';')"
	else
		pass "snapshot_eustack_$name"
	fi

	if [ "$stopped" = 1 ]; then
		before=$(cputime "$pid")
		kill -CONT "$pid"
		# runs again: uses CPU (polled: it may wait for a CPU a while)
		wait_cpu "$pid" "$before"
		after=$(cputime "$pid")
		if ! echo "$(states "$pid")" | grep -qvE '(^| )[tT] '; then
			fail "snapshot_eustack_${name}_resumes" "still stopped after SIGCONT: $(states "$pid")"
		elif [ "$after" -le "$before" ]; then
			fail "snapshot_eustack_${name}_resumes" "no CPU time used in 30 s after SIGCONT ($before -> $after ticks)"
		else
			pass "snapshot_eustack_${name}_resumes"
		fi
	fi
}

# busy_rounds NAME PID: stop a busy process at three random points (each
# round SIGSTOP, both tools, SIGCONT, run on), so frame 0 lands on
# different instructions: prologues, epilogues, leaf functions
busy_rounds() {
	local r
	for r in 1 2 3; do
		kill -STOP "$2"
		if wait_states "$2" T; then
			check_target "$1.$r" "$2" 1
		else
			fail "snapshot_eustack_$1" "$1 did not stop on SIGSTOP: $(states "$2")"
			kill -CONT "$2"
			return
		fi
		sleep 0.1
	done
}

# wait until /proc/PID/exe is $2 (the exec happened)
wait_exe() {
	local end=$((SECONDS + 30))
	while [ $SECONDS -lt $end ]; do
		[ "$(readlink /proc/$1/exe 2>/dev/null)" = "$2" ] && return 0
		sleep 0.01
	done
	return 1
}
wait_ready() { # file: until the program printed "ready"
	local end=$((SECONDS + 30))
	while [ $SECONDS -lt $end ]; do grep -q ready "$1" 2>/dev/null && return 0; sleep 0.01; done
	return 1
}

# --- sleep ---------------------------------------------------------------
sleep_bin=$(readlink -f "$(command -v sleep)")
sleep 300 &
pid=$!; pids+=("$pid")
# blocked in clock_nanosleep (230) or nanosleep (35)
if wait_exe $pid "$sleep_bin" && wait_blocked $pid '230|35'; then
	check_target sleep $pid 0
else
	fail snapshot_eustack_sleep "sleep did not start: exe $(readlink /proc/$pid/exe), states [$(states $pid)], syscalls $(syscalls $pid | awk '{ print $2 }' | tr '\n' ' ')"
fi

# --- bash in `read`, its pipe held open by us --------------------------------
bash_bin=$(readlink -f "$(command -v bash)")
mkfifo "$tmp/fifo"
bash -c 'read x' <"$tmp/fifo" &
pid=$!; pids+=("$pid")
exec 9>"$tmp/fifo"
# blocked in read (0)
if wait_exe $pid "$bash_bin" && wait_blocked $pid 0; then
	check_target bash $pid 0
else
	fail snapshot_eustack_bash "bash did not start: exe $(readlink /proc/$pid/exe), states [$(states $pid)], syscalls $(syscalls $pid | awk '{ print $2 }' | tr '\n' ' ')"
fi

# --- python3 busy loop, stopped --------------------------------------------
py=/usr/bin/python3
[ -x $py ] || py=$(command -v python3)
if [ -z "$py" ]; then
	skip snapshot_eustack_python3 "python3 not installed"
else
	py_bin=$(readlink -f "$py")
	"$py" -c '
def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
work(100000)
print("ready", flush=True)
while True:
    work(100000)
' >"$tmp/python3.out" &
	pid=$!; pids+=("$pid")
	# in the busy loop: past start-up, one work() done
	if wait_exe $pid "$py_bin" && wait_ready "$tmp/python3.out"; then
		busy_rounds python3 $pid
	else
		fail snapshot_eustack_python3 "python3 did not start: exe $(readlink /proc/$pid/exe), states [$(states $pid)], CPU $(cputime $pid) ticks"
	fi
fi

# --- gzip compressing random bytes, stopped -------------------------------------
gzip_bin=$(readlink -f "$(command -v gzip)")
gzip -c </dev/urandom >/dev/null &
pid=$!; pids+=("$pid")
# compressing: past start-up, 50 ms of CPU used
if wait_exe $pid "$gzip_bin" && wait_cpu $pid 5; then
	busy_rounds gzip $pid
else
	fail snapshot_eustack_gzip "gzip did not start: exe $(readlink /proc/$pid/exe), states [$(states $pid)], CPU $(cputime $pid) ticks"
fi

# --- our two programs, blocked -------------------------------------------------
for prog in snap_futex32 snap_condvar; do
	"$tmp/$prog" >"$tmp/$prog.out" &
	pid=$!; pids+=("$pid")
	# every thread blocked in futex (202), for good
	if wait_ready "$tmp/$prog.out" && wait_blocked $pid 202; then
		check_target $prog $pid 0
	else
		fail "snapshot_eustack_$prog" "$prog did not get ready: $(states $pid); $(syscalls $pid | awk '{ print $1, $2 }' | tr '\n' ' ')"
	fi
done

# --- 300 threads: more than a snapshot unwinds before naming (256) --------------
# Frames against eu-stack as above; then the names of the text output, which
# are looked up a group of threads at a time: every thread there, every
# frame of a pc named as in every other thread, and each worker below
# block_forever, thread_main and start_thread.
"$tmp/snap_futex32" 300 >"$tmp/snap300.out" &
pid=$!; pids+=("$pid")
if wait_ready "$tmp/snap300.out" && wait_blocked $pid 202; then
	check_target snap_futex32_300 $pid 0
	if ! "$USTACK" snapshot -p "$pid" >"$tmp/snap300.txt" 2>"$tmp/snap300.err"; then
		fail snapshot_eustack_300_names "ustack exit $?: $(head -3 "$tmp/snap300.err")"
	else
		bad=$(awk '
			/^TID / { tid = $2; threads++; next }
			/^#[0-9]+ 0x/ {
				name = $3; sub(/\+0x[0-9a-f]+$/, "", name)
				if ($2 in N && N[$2] != name) { print "pc " $2 " named " N[$2] " and " name; exit }
				N[$2] = name
				if (name == "block_forever") bf[tid] = 1
				if (name == "thread_main") tm[tid] = 1
				if (name == "start_thread") st[tid] = 1
			}
			END {
				for (t in bf) workers++
				for (t in bf) if (!(t in tm) || !(t in st)) { print "TID " t ": no thread_main/start_thread"; exit }
				if (threads != 301 || workers != 300)
					print threads " threads, " workers " below block_forever (want 301, 300)"
			}' "$tmp/snap300.txt")
		if [ -n "$bad" ]; then
			fail snapshot_eustack_300_names "$bad"
		else
			pass snapshot_eustack_300_names
		fi
	fi
else
	fail snapshot_eustack_snap_futex32_300 "snap_futex32 300 did not get ready: $(states $pid)"
fi

pct=$(awk -v a=$total_agree -v f=$total_frames 'BEGIN { printf "%.1f", f ? 100 * a / f : 0 }')
echo "# program        threads   frames   agree   rate"
for l in "${summary[@]}"; do echo "# $l"; done
echo "# overall: $total_threads threads, $total_frames frames compared, $total_agree agree: $pct%"
if [ "$total_frames" -gt 0 ] && [ "$total_agree" -eq "$total_frames" ]; then
	pass snapshot_eustack_overall
else
	fail snapshot_eustack_overall "$pct% agreement with eu-stack (must be 100%)"
fi
[ $fails -eq 0 ]
