#!/usr/bin/env bash
# `ustack snapshot` reads a thread blocked in the kernel without stopping
# it (sp and pc from /proc/PID/task/TID/syscall, the stack while it stays
# blocked, its schedstat unchanged before and after), and stops every other
# thread as before. Oracles: `--stop-all` (every thread stopped by ptrace,
# the way all threads were read before), the kernel's view of which threads
# are blocked (/proc/PID/task/TID/syscall, lib/wait_blocked.sh), and the
# call chains the target's own code makes.
#
#   snapshot_blocked_same       snap_futex32 (33 threads, every one blocked
#                               for good): the default text output is
#                               byte-identical to --stop-all's, --stats says
#                               33 without a stop, json says "stopped": false
#   snapshot_blocked_under_gdb  the same process while gdb holds every thread
#                               in its ptrace stop ('t'): ptrace cannot attach
#                               (--stop-all fails, "already traced"), yet the
#                               default snapshot reads all 33 threads, with
#                               the same output as before gdb came
#   snapshot_blocked_fp         snap_blocked's fp_block thread, blocked in a
#                               syscall whose frame's CFA is rbp-based (rbp
#                               is not in /proc): stopped after all, in every
#                               snapshot, with the right frames
#   snapshot_blocked_flip       snap_blocked's six flip_a/flip_b threads wake
#                               every 20-40 us and sleep again under the
#                               other of two call chains: over 40 snapshots,
#                               a thread read without a stop always shows
#                               one whole chain, never a mix (a thread that
#                               ran between its registers and its stack
#                               read must have been noticed and stopped),
#                               and some were read without a stop
#   snapshot_blocked_spinner    a thread that never blocks is always stopped
#   snapshot_blocked_fp_all     `snap_blocked fp 12`: main and 12 fp_block
#                               threads: after 8 in a row needed a stop, the
#                               other 4 are stopped without trying /proc
#                               first (--stats: 1 without a stop, 8 more
#                               blocked but needed one), the same output as
#                               --stop-all
set -u
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $1: $2"; }

[ -x "$USTACK" ] || { fail snapshot_blocked "no $USTACK"; exit 1; }
command -v python3 >/dev/null || { skip snapshot_blocked "python3 missing (json oracle)"; exit 0; }
# what the path needs of the kernel: per-thread run counts and syscall
if [ ! -r /proc/self/syscall ]; then
	skip snapshot_blocked "no /proc/PID/syscall on this kernel (CONFIG_HAVE_ARCH_TRACEHOOK)"
	exit 0
fi
# (of this shell, which has run and slept: a process that has not yet left
# its CPU, as `cut` reading its own, shows a run time of 0 either way)
if [ ! -r /proc/$$/schedstat ] || [ "$(cut -d' ' -f1 /proc/$$/schedstat)" = 0 ]; then
	skip snapshot_blocked "no run counts in /proc/PID/schedstat (CONFIG_SCHED_INFO)"
	exit 0
fi
. "$TOP/tests/integration/lib/wait_blocked.sh"
. "$TOP/tests/integration/lib/libc_names.sh"

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
progs=$TOP/tests/integration/progs
$CC -O2 -pthread -o "$tmp/snap_futex32" "$progs/snap_futex32.c" &&
	$CC -O2 -pthread -o "$tmp/snap_blocked" "$progs/snap_blocked.c" ||
	{ fail snapshot_blocked "cannot build the targets"; exit 1; }

# --- every thread blocked for good: the same output either way ------------------
"$tmp/snap_futex32" >"$tmp/f.out" &
f=$!
pids+=("$f")
for _ in $(seq 3000); do grep -q ready "$tmp/f.out" 2>/dev/null && break; sleep 0.01; done
# futex (202) for all 33, the same calls 0.1 s apart: nothing moves any more
if ! wait_blocked $f 202 33; then
	fail snapshot_blocked_same "snap_futex32's threads did not all block in futex waits (TID syscall): $(syscalls $f | awk '{ print $1, $2 }' | head -40 | tr '\n' ' ')"
else
	# --stop-all last: the threads it stops leave their waits and may
	# not be back in them at once on a loaded machine
	"$USTACK" snapshot -p $f --stats >"$tmp/free.txt" 2>"$tmp/free.err"
	r1=$?
	"$USTACK" snapshot -p $f --format json >"$tmp/free.json"
	r3=$?
	"$USTACK" snapshot -p $f --stop-all >"$tmp/stop.txt"
	r2=$?
	st=$(head -1 "$tmp/free.err")
	nfalse=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sum(1 for t in d["threads"] if t["stopped"] is False and t["stopped_us"] == 0))' "$tmp/free.json")
	if [ $r1 -ne 0 ] || [ $r2 -ne 0 ] || [ $r3 -ne 0 ]; then
		fail snapshot_blocked_same "exit $r1/$r2/$r3: $(head -2 "$tmp/free.err")"
	elif [ "$(grep -c '^TID ' "$tmp/free.txt")" -ne 33 ] || ! cmp -s "$tmp/free.txt" "$tmp/stop.txt"; then
		fail snapshot_blocked_same "default and --stop-all outputs differ: $(diff "$tmp/free.txt" "$tmp/stop.txt" | head -4)"
	elif ! grep -q ' 33 unwound, 0 vanished; 33 without a stop (blocked in the kernel; 0 more' <<<"$st"; then
		fail snapshot_blocked_same "--stats: '$st' (want all 33 without a stop)"
	elif [ "$nfalse" != 33 ]; then
		fail snapshot_blocked_same "json: $nfalse of 33 threads \"stopped\": false with stopped_us 0"
	else
		pass snapshot_blocked_same
	fi
fi

# --- the same process held by gdb: ptrace is taken, /proc is not -----------------
if ! command -v gdb >/dev/null; then
	skip snapshot_blocked_under_gdb "gdb not installed"
elif [ -s "$tmp/stop.txt" ] && ! wait_blocked $f 202 33; then
	# the threads --stop-all released must be back in their waits first
	fail snapshot_blocked_under_gdb "snap_futex32's threads did not block again (TID syscall): $(syscalls $f | awk '{ print $1, $2 }' | head -40 | tr '\n' ' ')"
elif [ -s "$tmp/stop.txt" ]; then
	# gdb attaches (every thread in ptrace stop) and waits for $tmp/go
	gdb -nx -batch -iex 'set debuginfod enabled off' \
		-ex "shell while [ ! -e '$tmp/go' ]; do sleep 0.05; done" -p $f >/dev/null 2>&1 &
	g=$!
	pids+=("$g")
	all_t() { [ "$(cat /proc/$f/task/*/stat 2>/dev/null | awk '$3 != "t"' | wc -l)" -eq 0 ] &&
		grep -Eq 'TracerPid:[[:space:]]*[1-9]' /proc/$f/status; }
	for _ in $(seq 3000); do all_t && break; sleep 0.01; done
	if ! all_t; then
		fail snapshot_blocked_under_gdb "gdb did not hold every thread in ptrace stop: states $(cat /proc/$f/task/*/stat 2>/dev/null | awk '{ print $3 }' | sort | uniq -c | tr '\n' ' '), $(grep TracerPid /proc/$f/status)"
	else
		"$USTACK" snapshot -p $f --stats >"$tmp/gdb.txt" 2>"$tmp/gdb.err"
		r1=$?
		"$USTACK" snapshot -p $f --stop-all >/dev/null 2>"$tmp/gdb-stop.err"
		r2=$?
		if [ $r1 -ne 0 ] || ! cmp -s "$tmp/gdb.txt" "$tmp/stop.txt"; then
			fail snapshot_blocked_under_gdb "exit $r1, output differs from before gdb: $(head -1 "$tmp/gdb.err")"
		elif ! grep -q ' 33 without a stop' "$tmp/gdb.err"; then
			fail snapshot_blocked_under_gdb "--stats: '$(head -1 "$tmp/gdb.err")'"
		elif [ $r2 -ne 1 ] || ! grep -q 'already traced' "$tmp/gdb-stop.err"; then
			fail snapshot_blocked_under_gdb "--stop-all under gdb: exit $r2, '$(head -1 "$tmp/gdb-stop.err")' (want 1, already traced)"
		else
			pass snapshot_blocked_under_gdb
		fi
	fi
	touch "$tmp/go"
	wait $g 2>/dev/null
fi

# --- snap_blocked: 40 snapshots, each thread checked against its code -------------
"$tmp/snap_blocked" >"$tmp/b.out" &
b=$!
pids+=("$b")
for _ in $(seq 3000); do grep -q ready "$tmp/b.out" 2>/dev/null && break; sleep 0.01; done
# fp_block must be in its read (0) before the snapshots start
fp_tid=
for _ in $(seq 3000); do
	for t in /proc/$b/task/*; do
		[ "$(cat $t/comm 2>/dev/null)" = fp_block ] && fp_tid=${t##*/}
	done
	[ -n "$fp_tid" ] && [ "$(cut -d' ' -f1 /proc/$b/task/$fp_tid/syscall 2>/dev/null)" = 0 ] && break
	sleep 0.01
done
for i in $(seq 40); do
	"$USTACK" snapshot -p $b --format json >"$tmp/b$i.json" 2>>"$tmp/b.err" || {
		fail snapshot_blocked "snapshot $i failed: $(tail -1 "$tmp/b.err")"
		exit 1
	}
done
# libc's functions under any of their names (lib/libc_names.sh)
aliases=
for fn in clock_nanosleep nanosleep start_thread clone3; do
	aliases+="$fn=$(libc_aliases $fn "$(libc_path "$tmp/snap_blocked")") "
done
LIBC_ALIASES=$aliases python3 - "$tmp" <<'PY' >"$tmp/verdict"
import json, os, sys
tmp = sys.argv[1]
fp_bad = flip_bad = spin_bad = 0
fp_n = flip_free = flip_stopped = spin_n = 0
notes = []
# "fn=(a|b|c) ...": each libc function's set of names
libc = {}
for kv in os.environ.get("LIBC_ALIASES", "").split():
	k, _, v = kv.partition("=")
	libc[k] = set(v.strip("()").replace("\\.", ".").split("|")) - {""}
def same(names, want):
	"""names matches want: our functions by name, libc's (key of libc) by any alias"""
	return len(names) == len(want) and all(n in (libc.get(w) or {w}) for n, w in zip(names, want))
tail = ["flipper", "start_thread", "clone3"]
def chain(x):
	return ["clock_nanosleep", "nanosleep", "flip_%s_3" % x, "flip_%s_2" % x, "flip_%s_1" % x] + tail
def flip_ok(names, free):
	if free:  # blocked in its nanosleep: one whole chain
		return same(names, chain("a")) or same(names, chain("b"))
	# stopped while running: anywhere in the loop, one chain's frames in order
	if not same(names[-3:], tail):
		return False
	flips = [n for n in names if n.startswith("flip_")]
	if len({n[5] for n in flips}) > 1:
		return False
	order = [n[-1] for n in flips]
	return order == sorted(order, reverse=True) and len(set(order)) == len(order)
for i in range(1, 41):
	d = json.load(open("%s/b%d.json" % (tmp, i)))
	for t in d["threads"]:
		names = [f.get("function") or "?" for f in t["frames"]]
		names = [n.split(".")[0] for n in names]  # fp_read_forever.isra.0
		free = t["stopped"] is False
		if t["comm"] == "fp_block":
			fp_n += 1
			if free or not same(names, ["fp_read_forever", "fp_block", "start_thread", "clone3"]):
				fp_bad += 1
				notes.append("fp_block (snapshot %d, stopped %s): %s" % (i, t["stopped"], names))
		elif t["comm"] in ("flip_a", "flip_b"):
			if free:
				flip_free += 1
			else:
				flip_stopped += 1
			if not flip_ok(names, free):
				flip_bad += 1
				notes.append("%s (snapshot %d, stopped %s): %s" % (t["comm"], i, t["stopped"], names))
		elif t["comm"] == "spinner":
			spin_n += 1
			if free or not same(names[-3:], ["spinner", "start_thread", "clone3"]):
				spin_bad += 1
				notes.append("spinner (snapshot %d, stopped %s): %s" % (i, t["stopped"], names))
print("fp", fp_n, fp_bad)
print("flip", flip_free, flip_stopped, flip_bad)
print("spin", spin_n, spin_bad)
for n in notes[:6]:
	print("note", n)
PY
read -r _ fp_n fp_bad < <(grep '^fp ' "$tmp/verdict")
read -r _ flip_free flip_stopped flip_bad < <(grep '^flip ' "$tmp/verdict")
read -r _ spin_n spin_bad < <(grep '^spin ' "$tmp/verdict")
notes=$(grep '^note ' "$tmp/verdict" | cut -c6- | head -3 | tr '\n' ';')
if [ "${fp_n:-0}" -ne 40 ] || [ "$fp_bad" -ne 0 ]; then
	fail snapshot_blocked_fp "fp_block seen in ${fp_n:-0} of 40 snapshots, $fp_bad wrong: $notes"
else
	pass snapshot_blocked_fp
fi
if [ $((${flip_free:-0} + ${flip_stopped:-0})) -ne 240 ] || [ "$flip_bad" -ne 0 ]; then
	fail snapshot_blocked_flip "flippers: $flip_free read without a stop, $flip_stopped stopped, $flip_bad wrong (of 240): $notes"
elif [ "$flip_free" -eq 0 ]; then
	fail snapshot_blocked_flip "not one flipper of 240 was read without a stop: the path was not exercised"
else
	echo "# flippers over 40 snapshots: $flip_free read without a stop, $flip_stopped stopped"
	pass snapshot_blocked_flip
fi
if [ "${spin_n:-0}" -ne 40 ] || [ "$spin_bad" -ne 0 ]; then
	fail snapshot_blocked_spinner "spinner seen in ${spin_n:-0} of 40 snapshots, $spin_bad wrong: $notes"
else
	pass snapshot_blocked_spinner
fi
# --- every thread needs rbp: after 8 such in a row, the rest just stopped --------
"$tmp/snap_blocked" fp 12 >"$tmp/fp.out" &
fa=$!
pids+=("$fa")
for _ in $(seq 3000); do grep -q ready "$tmp/fp.out" 2>/dev/null && break; sleep 0.01; done
# main in its join (futex, 202), the 12 others in their read (0)
if ! wait_blocked $fa "0|202" 13; then
	fail snapshot_blocked_fp_all "snap_blocked fp 12 did not block (TID syscall): $(syscalls $fa | awk '{ print $1, $2 }' | tr '\n' ' ')"
else
	"$USTACK" snapshot -p $fa --stats >"$tmp/fa.txt" 2>"$tmp/fa.err"
	r1=$?
	"$USTACK" snapshot -p $fa --stop-all >"$tmp/fa-stop.txt" 2>/dev/null
	st=$(head -1 "$tmp/fa.err")
	if [ $r1 -ne 0 ] || ! cmp -s "$tmp/fa.txt" "$tmp/fa-stop.txt" ||
		[ "$(grep -c '^TID ' "$tmp/fa.txt")" -ne 13 ]; then
		fail snapshot_blocked_fp_all "exit $r1, or not the output of --stop-all: $(diff "$tmp/fa.txt" "$tmp/fa-stop.txt" | head -3)"
	elif ! grep -q ' 13 unwound, 0 vanished; 1 without a stop (blocked in the kernel; 8 more blocked but needed one)' <<<"$st"; then
		fail snapshot_blocked_fp_all "--stats: '$st' (want 1 without a stop, 8 more that needed one)"
	else
		pass snapshot_blocked_fp_all
	fi
fi
exit $((fails > 0))
