#!/usr/bin/env bash
# `ustack record` and `ustack snapshot` at scale: 2,500 short-lived
# processes under `record -a`, and a process with 10,000 more mappings and
# 2,000 threads under `snapshot -p` and `record -p`. Record cases with
# --backend copy and --backend bpf (SKIP with the recorder's reason where
# bpf cannot load).
#
#   many/B/...   progs/hostile_forker.c makes 2,500 children (at most 4
#                alive, at most 1,000 a second), half exec a copy of
#                /bin/true (hostile_true), half rename themselves
#                hostile_child and exit from main -> hf_spawn -> hf_child;
#                before that it maps its own file 400 times more
#                (PROT_EXEC), so every child inherits a large picture of
#                mappings. `record -a -e syscalls:sys_enter_exit_group`
#                records the whole machine meanwhile (started once the
#                trace shows a marker process's exit, stopped with SIGINT
#                once the forker is done), with the release build
#                (build/ustack: the memory measured is that of the program
#                users run). No CPU samples: on a busy machine, every
#                other program's distinct stacks would make the recorder
#                grow with the recording's length, which is not what is
#                measured here.
#     exit       the recorder exits 0 and prints its summary
#     counts     the summary's events and lost records are report
#                --stats's; events with and without user stack add up;
#                the children's exit_group() calls (each makes exactly
#                one) are all there when nothing was lost, and at least
#                N - LOST otherwise (lib/hostile_check.py children):
#                nothing is lost without being counted
#     stacks     hostile_child's calls: main -> hf_spawn -> hf_child
#                named from the forker (or no user stack), never another
#                name or the exec'd image; hostile_true's: no frame of
#                the forker (the parent's picture is dropped at exec)
#     memory     the recorder's peak RSS after 2,500 children (wait4's
#                ru_maxrss) is at most MANY_MIB MiB above its peak once
#                the first 500 had exited (VmHWM; the forker waits
#                there): memory does not grow with dead processes (each
#                child's picture of 400+ mappings is ~13 KiB: a
#                recorder that keeps the pictures of dead processes
#                grows by 25-31 MiB over the last 2,000 children (with
#                ustack_recmaps__exit() emptied), one that drops them by
#                0.8-1.4 MiB idle; 0.8-6.5 MiB over 4,000 beside
#                stress-ng). The children's cost is not linear in their
#                mappings: 2,500 of 400 take 8-9 s, of 800 21-22 s.
#                Earlier sizes: 10,000 children with 200 mappings cost
#                160 s of CPU, alone, and its bound of 64 MiB let that
#                leak (59-64 MiB) pass; 5,000 of 400, 70 s of CPU
#   scale/...    progs/hostile_scale.c: 10,000 mappings more (a quarter
#                of them code of a hostile_lib.c library, mapped 2,500
#                times at two file offsets, the rest anonymous pages) and
#                2,000 threads (4 calling that code through via_scale
#                while a snapshot or a recording runs, asleep otherwise,
#                the rest blocked in read()).
#     snapshot         exit 0, one block per thread of /proc/PID/task
#                      (the threads do not change), every blocked thread
#                      through hs_blocked -> hs_wait, the 4 spinners
#                      through hs_spinner, within SNAP_S s
#     snapshot-memory  peak RSS of the release build at most SNAP_MIB MiB
#     record/B         `record -p` under a soft limit of 1,024 open files
#                      (it needs one per thread and CPU: the recorder
#                      raises the limit), ASan build: exit 0, the first
#                      events on disk within START_S s of the start, the
#                      spinners' stacks via_scale -> a_outer -> a_spin
#                      named from the library (lib/hostile_check.py
#                      moving), stopped by SIGINT once 50 such stacks are
#                      on disk, gone within STOP_S s
#     record-memory/B  the same with the release build: peak RSS at most
#                      RECP_MIB MiB
# Time bounds are generous (a loaded machine is slow; they catch a hang
# or a quadratic walk, not a slowdown); no step waits a fixed time.
#
# Env (from make check): USTACK CC TOP; USTACK_RELEASE (default
# $TOP/build/ustack); KEEP_TMP=1 keeps the files; PARTS: "many" (the
# default: make check runs it alone, tests/run-tests.sh), "scale" (what
# record_scale_threads.sh runs, with the other tests: it records one
# process) or both.
set -u
T=record_scale
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
REL=${USTACK_RELEASE:-$TOP/build/ustack}
fails=0
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $T/$1: $2"; }
CHECK=$TOP/tests/integration/lib/hostile_check.py
RSS=$TOP/tests/integration/lib/rss_run.py
N=2500 K=500 RATE=1000 MAPS=400
PARTS=${PARTS:-many}
MANY_MIB=12 SNAP_MIB=64 RECP_MIB=256 SNAP_S=60 START_S=60 STOP_S=60

[ -x "$USTACK" ] || { fail setup "no $USTACK"; exit 1; }
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
	skip all "needs root or kernel.perf_event_paranoid <= 1"
	exit 0
fi
if ! command -v python3 >/dev/null; then
	skip all "python3 not installed (tests/integration/lib/hostile_check.py)"
	exit 0
fi
rel_why=
[ -x "$REL" ] || rel_why="no release build at $REL (make)"
. "$TOP/tests/integration/lib/tracepoint.sh"
# POLL_USTACK
. "$TOP/tests/integration/lib/poll.sh"

tmp=$(mktemp -d)
chmod 755 "$tmp"
O=$tmp/out
mkdir -p "$O"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	[ -n "${KEEP_TMP:-}" ] && echo "# files kept in $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
P=$TOP/tests/integration/progs

bpf_skip=
if ! "$USTACK" record -q --backend bpf -o "$tmp/probe.data" -- true >/dev/null 2>"$tmp/probe.err"; then
	bpf_skip=$(grep -m1 . "$tmp/probe.err")
	bpf_skip=${bpf_skip:-record --backend bpf failed without a reason}
fi

CF=(-O2 -fomit-frame-pointer -Wall -Wextra -I"$P")
build() { # what, command...
	local what=$1; shift
	if ! "$@" >"$tmp/build.log" 2>&1; then
		fail "build/$what" "$* failed: $(head -5 "$tmp/build.log" | tr '\n' '|')"
		exit 1
	fi
}
build many "$CC" "${CF[@]}" -o "$tmp/hostile_forker" "$P/hostile_forker.c"
build scale "$CC" "${CF[@]}" -fPIC -shared -o "$tmp/liba.so" "$P/hostile_lib.c"
build scale "$CC" "${CF[@]}" -pthread -o "$tmp/hostile_scale" "$P/hostile_scale.c"
cp /bin/true "$tmp/hostile_true" && cp /bin/true "$tmp/hostile_mark" || { fail build/true "no /bin/true"; exit 1; }

# until CMD succeeds, at most S seconds (0 when it did), a try every
# $STEP s (0.05 unless set)
wait_until() {
	local end=$((SECONDS + $1)); shift
	while [ $SECONDS -lt $end ]; do
		"$@" && return 0
		sleep "${STEP:-0.05}"
	done
	return 1
}
script_has() { "$1" report -i "$2" --format perf-script 2>/dev/null | grep -q -- "$3"; }
# the pid of the command rss_run.py runs (its only child)
child_of() { cat "/proc/$1/task/$1/children" 2>/dev/null | awk '{ print $1 }'; }
hwm_kib() { awk '$1 == "VmHWM:" { print $2 }' "/proc/$1/status" 2>/dev/null; }
# the numbers of the summary line "ustack: wrote F: E events, ..., L lost, T s"
summary() { sed -n 's/^ustack: wrote .*: \([0-9]*\) events, .* \([0-9]*\) lost, .*/\1 \2/p' "$1"; }
stat_of() { sed -n "s/^$2: \([0-9]*\).*/\1/p" "$1"; }

# ---- 2,500 short-lived processes under record -a ---------------------------------
tp_why=$(tracepoint_why syscalls:sys_enter_exit_group)
for b in copy bpf; do
	tag=many/$b
	mkdir -p "$O/many"
	[[ " $PARTS " == *" many "* ]] || break
	if [ -n "$rel_why" ] || [ -n "$tp_why" ]; then
		skip "$tag" "${rel_why:-$tp_why}"
		continue
	fi
	if [ "$b" = bpf ] && [ -n "$bpf_skip" ]; then
		skip "$tag" "$bpf_skip"
		continue
	fi
	f=$O/$tag
	python3 "$RSS" "$f.rss" "$REL" record -a --backend "$b" -o "$f.data" \
		-e syscalls:sys_enter_exit_group >/dev/null 2>"$f.err" &
	wp=$!; pids+=("$wp")
	# recording: a marker process's exit_group() is in the trace
	if ! wait_until 120 eval '"$tmp/hostile_mark"; script_has "$REL" "$f.data" "^hostile_mark .*exit_group"'; then
		fail "$tag/exit" "the trace never showed the marker's exit within 120 s: $(head -3 "$f.err" | tr '\n' '|')"
		kill -INT "$wp"; wait "$wp"
		continue
	fi
	rpid=$(child_of "$wp")
	t0=$SECONDS
	"$tmp/hostile_forker" $N $MAPS "$tmp/hostile_true" $RATE $K "$f.go" >"$f.out" 2>&1 &
	fp=$!; pids+=("$fp")
	hwm1=
	if wait_until 300 grep -qs checkpoint "$f.out"; then
		hwm1=$(hwm_kib "$rpid")
	fi
	: >"$f.go"
	wait "$fp"
	frc=$?
	kill -INT "$wp"
	wait "$wp"
	rc=$?
	echo "# $tag: $(tail -1 "$f.out") in $((SECONDS - t0)) s; recorder peak RSS $(cut -d' ' -f1 "$f.rss" 2>/dev/null) KiB, at $K children ${hwm1:-?} KiB"
	grep '^ustack: \(wrote\|backend\)' "$f.err" | sed 's/^/# /'
	if [ $frc -ne 0 ]; then
		fail "$tag/exit" "the forker failed: $(tail -2 "$f.out" | tr '\n' '|')"
		continue
	fi
	read -r sev slost < <(summary "$f.err")
	if [ $rc -ne 0 ] || [ -z "${sev:-}" ]; then
		fail "$tag/exit" "recorder exit $rc, summary '$(grep -m1 wrote "$f.err")': $(grep -v 'perf-[0-9]*\.map' "$f.err" | head -4 | tr '\n' '|')"
		continue
	fi
	pass "$tag/exit"
	"$REL" report -i "$f.data" --stats >"$f.stats" 2>&1
	rev=$(stat_of "$f.stats" events) rlost=$(stat_of "$f.stats" "lost records")
	with=$(stat_of "$f.stats" "events with user stack") without=$(stat_of "$f.stats" "events without user stack")
	"$REL" report -i "$f.data" --format perf-script -o "$f.ps" 2>"$f.rerr"
	out=$(python3 "$CHECK" children "$f.ps" "$tmp/hostile_forker" "$tmp/hostile_true" $N "${rlost:-0}" 2>&1)
	crc=$?
	tail -1 <<<"$out" | sed "s/^/# /"
	exits=$(sed -n 's/.* exits=\([0-9]*\).*/\1/p' <<<"$out")
	if [ "$rev" != "$sev" ] || [ "$rlost" != "$slost" ] || [ $((with + without)) != "${rev:-x}" ] ||
		[ -z "$exits" ] || [ "$exits" -gt $N ] || [ "$exits" -lt $((N - rlost)) ]; then
		fail "$tag/counts" "summary: $sev events, $slost lost; report --stats: $rev events, $rlost lost, $with with and $without without user stack; $exits of $N children's exits in the trace"
	else
		pass "$tag/counts"
	fi
	if [ $crc -ne 0 ]; then
		fail "$tag/stacks" "$(tr '\n' '|' <<<"$out" | cut -c1-700)"
	else
		pass "$tag/stacks"
	fi
	peak=$(cut -d' ' -f1 "$f.rss" 2>/dev/null)
	if [ -z "$hwm1" ] || [ -z "$peak" ]; then
		fail "$tag/memory" "no measure: VmHWM at $K '${hwm1}', peak '${peak}'"
	elif [ $((peak - hwm1)) -gt $((MANY_MIB * 1024)) ]; then
		fail "$tag/memory" "peak RSS $peak KiB after $N children, $hwm1 KiB after $K: grew by $(((peak - hwm1) / 1024)) MiB (bound $MANY_MIB MiB)"
	else
		pass "$tag/memory"
	fi
done

# ---- 10,000 mappings, 2,000 threads -----------------------------------------------
[[ " $PARTS " == *" scale "* ]] || exit $((fails > 0))
THREADS=2000
"$tmp/hostile_scale" 10000 $THREADS "$tmp/liba.so" >"$O/scale.out" 2>&1 &
sp=$!; pids+=("$sp")
if ! wait_until 120 grep -qs ready "$O/scale.out"; then
	fail scale/setup "hostile_scale never got ready: $(head -3 "$O/scale.out" | tr '\n' '|')"
	exit 1
fi
ntask=$(ls "/proc/$sp/task" | wc -l)
echo "# scale: $(cat "$O/scale.out"); $(wc -l <"/proc/$sp/maps") lines in /proc/$sp/maps, $ntask threads"

# the spinners spin only while a snapshot or a recording runs (SIGUSR1 on,
# SIGUSR2 off: progs/hostile_scale.c); asleep, they are still in hs_spinner
spin() { kill "-USR$1" "$sp"; }
# snapshot, ASan build: every thread, the right stacks, in time
spin 1
t0=$SECONDS
"$USTACK" snapshot -p "$sp" >"$O/snap.out" 2>"$O/snap.err"
rc=$? dt=$((SECONDS - t0))
ntask2=$(ls "/proc/$sp/task" | wc -l)
blocks=$(grep -c '^TID ' "$O/snap.out")
blocked=$(awk '/^TID /{ if (w && b) n++; w = b = 0 } / hs_wait\+/{ w = 1 } / hs_blocked\+/{ b = 1 }
	END { if (w && b) n++; print n + 0 }' "$O/snap.out")
spinners=$(awk '/^TID /{ if (s) n++; s = 0 } / hs_spinner\+/{ s = 1 } END { if (s) n++; print n + 0 }' "$O/snap.out")
echo "# scale/snapshot: $blocks blocks, $blocked blocked in hs_wait, $spinners in hs_spinner, $dt s"
if [ $rc -ne 0 ] || [ "$blocks" != "$ntask" ] || [ "$ntask" != "$ntask2" ] ||
	[ "$blocked" != $((THREADS - 4)) ] || [ "$spinners" != 4 ] || [ $dt -gt $SNAP_S ]; then
	fail scale/snapshot "exit $rc, $blocks blocks for $ntask threads ($ntask2 after), $blocked through hs_wait (want $((THREADS - 4))), $spinners through hs_spinner (want 4), $dt s (bound $SNAP_S): $(head -3 "$O/snap.err" | tr '\n' '|')"
else
	pass scale/snapshot
fi
if [ -n "$rel_why" ]; then
	skip scale/snapshot-memory "$rel_why"
else
	python3 "$RSS" "$O/snap.rss" "$REL" snapshot -p "$sp" >/dev/null 2>"$O/snap-rel.err"
	rc=$?
	read -r kib secs <"$O/snap.rss"
	echo "# scale/snapshot-memory: peak RSS $kib KiB, $secs s (release build)"
	if [ $rc -ne 0 ] || [ "$kib" -gt $((SNAP_MIB * 1024)) ]; then
		fail scale/snapshot-memory "exit $rc, peak RSS $kib KiB (bound $SNAP_MIB MiB): $(head -2 "$O/snap-rel.err" | tr '\n' '|')"
	else
		pass scale/snapshot-memory
	fi
fi
spin 2

# record -p TAG BINARY BACKEND: under $O/TAG.*; the soft limit of open
# files at 1,024 (the recorder needs one per thread and CPU and raises it)
record_p() {
	local tag=$1 bin=$2 b=$3 f=$O/$1 wp t0 ts tstop rc
	mkdir -p "$(dirname "$f")"
	spin 1
	(ulimit -Sn 1024 && exec python3 "$RSS" "$f.rss" "$bin" record -p "$sp" --backend "$b" \
		-o "$f.data" >/dev/null 2>"$f.err") &
	wp=$!; pids+=("$wp")
	t0=$SECONDS ts= tstop=
	# (a recorder that is gone has nothing more to write: no waiting then)
	# the looks at the trace: the release build ($POLL_USTACK,
	# lib/poll.sh), 5 a second (with the ASan build, 20 a second, they
	# took a CPU of their own while the recorder started)
	if STEP=0.2 wait_until $START_S eval '! kill -0 $wp 2>/dev/null || [ "$("$POLL_USTACK" report -i "$f.data" --stats 2>/dev/null | sed -n "s/^events: //p")" -gt 0 ] 2>/dev/null' &&
		kill -0 "$wp" 2>/dev/null; then
		ts=$((SECONDS - t0))
		STEP=0.2 wait_until 120 eval '! kill -0 $wp 2>/dev/null || [ "$("$POLL_USTACK" report -i "$f.data" --format perf-script 2>/dev/null | grep -c " a_spin+")" -ge 50 ]'
	fi
	tstop=$SECONDS
	kill -INT "$wp"
	wait "$wp"
	rc=$?
	spin 2
	tstop=$((SECONDS - tstop))
	echo "# $tag: first events after ${ts:-?} s, stopped in $tstop s, peak RSS $(cut -d' ' -f1 "$f.rss" 2>/dev/null) KiB"
	grep '^ustack: \(wrote\|backend\)' "$f.err" | sed 's/^/# /'
	rec_rc=$rc rec_ts=$ts rec_tstop=$tstop
}
ncpu=$(getconf _NPROCESSORS_CONF)
need=$((ntask * ncpu * 2 + 64))
hard=$(ulimit -Hn)
for b in copy bpf; do
	if [ "$b" = bpf ] && [ -n "$bpf_skip" ]; then
		skip "scale/record/$b" "$bpf_skip"
		skip "scale/record-memory/$b" "$bpf_skip"
		continue
	fi
	if [ "$hard" != unlimited ] && [ "$hard" -lt $need ]; then
		skip "scale/record/$b" "the hard limit of open files ($hard) is below the $need descriptors $ntask threads on $ncpu CPUs need"
		skip "scale/record-memory/$b" "the hard limit of open files ($hard) is too low"
		continue
	fi
	record_p "scale/record/$b" "$USTACK" "$b"
	f=$O/scale/record/$b
	"$USTACK" report -i "$f.data" --format perf-script -o "$f.ps" 2>/dev/null
	out=$(python3 "$CHECK" moving "$f.ps" --min 50 --via "via_scale=$tmp/liba.so:a_outer,a_spin" 2>&1)
	crc=$?
	sed -n 's/^MOVING/# MOVING/p' <<<"$out"
	if [ $rec_rc -ne 0 ] || [ -z "$rec_ts" ] || [ $rec_tstop -gt $STOP_S ] || [ $crc -ne 0 ]; then
		fail "scale/record/$b" "exit $rec_rc, first events after ${rec_ts:-never (bound $START_S)} s, stopped in $rec_tstop s (bound $STOP_S); $(tr '\n' '|' <<<"$out" | cut -c1-400); $(grep -v 'perf-[0-9]*\.map' "$f.err" | head -3 | tr '\n' '|')"
	else
		pass "scale/record/$b"
	fi
	if [ -n "$rel_why" ]; then
		skip "scale/record-memory/$b" "$rel_why"
		continue
	fi
	record_p "scale/record-memory/$b" "$REL" "$b"
	kib=$(cut -d' ' -f1 "$O/scale/record-memory/$b.rss" 2>/dev/null)
	if [ $rec_rc -ne 0 ] || [ -z "$kib" ] || [ "$kib" -gt $((RECP_MIB * 1024)) ]; then
		fail "scale/record-memory/$b" "exit $rec_rc, peak RSS ${kib:-?} KiB (bound $RECP_MIB MiB): $(grep -v 'perf-[0-9]*\.map' "$O/scale/record-memory/$b.err" | head -3 | tr '\n' '|')"
	else
		pass "scale/record-memory/$b"
	fi
done

exit $((fails > 0))
