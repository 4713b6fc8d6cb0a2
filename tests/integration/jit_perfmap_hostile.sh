#!/usr/bin/env bash
# JIT maps that fight back: /tmp/perf-PID.map files a hostile or broken
# writer makes, read by `snapshot` and copied by `record` (both backends),
# against a process whose JIT code is known exactly (progs/hostile_jit.c:
# two functions copied into anonymous executable memory; INFO gives their
# addresses). The oracle (lib/jit_hostile.py check) looks at every frame in
# the JIT region: each must be named by the right line, with the right
# offset, and never by a malformed, older, neighbouring or torn line.
#
# Lines (PASS/FAIL/SKIP jit_perfmap_hostile/...):
#   hostile/snapshot   a map of 18 lines: an older entry overlapping the
#                      code (a decoy), a 1 MiB name (for noret), the real
#                      lines and their neighbours (HJ_SPIN ends in CRLF),
#                      then, newer (each would win if it were taken), 11
#                      malformed lines naming the code WRONG_* (garbage after
#                      a number, size 0, an end past 2^64, no name, no size,
#                      bad hex, NUL bytes, binary garbage, a lone 0x), and a
#                      last line without its newline naming it WRONG too:
#                      spin's frames are HJ_SPIN+0x(pc - start), noret's
#                      return address (one past its end, where HJ_AFTER_NORET
#                      starts) is the 1 MiB name cut to 1024 bytes ending
#                      "..."; stderr lists malformed lines 7-16 by number,
#                      then one "more ... not listed" line, and no good line
#   hostile/record/B   `record --backend B -- hostile_jit` (B = copy, bpf;
#                      bpf SKIPs with the recorder's reason where it does not
#                      load), the map written while it runs, read at its
#                      exit: `report -f perf-script` names the same way (at
#                      least 20 frames in spin), the recorder warned as above
#   million/snapshot   1,000,000 symbols (999,995 fake ones in a scrambled
#                      order, the 5 real ones in the middle): named right,
#                      within 120 s, peak RSS under 1 GiB (ASan build;
#                      figures: docs/cli/snapshot.md)
#   million/record/B   the same map copied at exit into the trace: record
#                      and report each within 120 s and 1 GiB, named right
#   rewrite/snapshot   `hostile_jit INFO rewrite` rewrites its own map while
#                      it runs (truncates it, writes a generation covering
#                      its code or one covering nothing of it, appends lines
#                      in pieces: progs/hostile_jit.c): over 20 snapshots
#                      or more (on until one names a frame, at most 400 or
#                      120 s), no crash, every named JIT frame is a whole
#                      line of the writer (hash and START/SIZE in the name
#                      match), at least one frame named
#   rewrite/record/B   `record -p PID -d 1` of it (the map read once, at the
#                      end of the recording, while it is rewritten): no
#                      crash, samples through the JIT code, and every one
#                      named (none may be: the read may meet a generation
#                      covering nothing) is named by a whole line
# Env (from make check): USTACK CC TOP; KEEP_TMP=1 keeps the files;
# PARTS="hostile million rewrite" (the default) runs only the parts named.
set -u
T=jit_perfmap_hostile
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
fails=0
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $T/$1: $2"; }

[ -x "$USTACK" ] || { fail setup "no $USTACK"; exit 1; }
command -v python3 >/dev/null || { skip all "python3 missing (maps and oracle)"; exit 0; }
case $USTACK in /*) ;; *) USTACK=$PWD/$USTACK ;; esac
LIB=$TOP/tests/integration/lib/jit_hostile.py
PARTS=" ${PARTS:-hostile million rewrite} "
part() { [[ $PARTS == *" $1 "* ]]; }

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; rm -f "/tmp/perf-$p.map"; done
	[ -n "${KEEP_TMP:-}" ] && echo "# files kept in $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

$CC -O2 -pthread -o "$tmp/hostile_jit" "$TOP/tests/integration/progs/hostile_jit.c" ||
	{ fail setup "cannot build progs/hostile_jit.c"; exit 1; }

can_record=1
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
	can_record=
fi
bpf_skip=
if [ -n "$can_record" ] &&
	! "$USTACK" record -q --backend bpf -o "$tmp/probe.data" -- true >/dev/null 2>"$tmp/probe.err"; then
	bpf_skip=$(grep -m1 . "$tmp/probe.err")
	bpf_skip=${bpf_skip:-record --backend bpf failed without a reason}
fi

# wait_info FILE: until hostile_jit wrote it (30 s at most)
wait_info() {
	local i
	for i in $(seq 300); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# peak KB OUT ERR CMD...: run CMD (stdout OUT, stderr ERR), its peak RSS
# (of it and its children, KB) and wall time (s) into KB.rss and KB.time;
# the command's exit status
peak() {
	local kb=$1 out=$2 err=$3
	shift 3
	python3 - "$kb" "$out" "$err" "$@" <<'EOF'
import resource, subprocess, sys, time
kb, out, err, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
t0 = time.monotonic()
with open(out, "wb") as o, open(err, "wb") as e:
    rc = subprocess.call(cmd, stdout=o, stderr=e)
open(kb + ".time", "w").write("%.1f\n" % (time.monotonic() - t0))
open(kb + ".rss", "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc if rc >= 0 else 128 - rc)
EOF
}

# warned NAME ERR PID BAD...: the warnings of ERR are those of the hostile
# map: each of the first 10 malformed lines said by number, then one line
# for the rest, and no other line number
warned() {
	local name=$1 err=$2 pid=$3 l n=0
	shift 3
	for l in "$@"; do
		n=$((n + 1))
		[ $n -gt 10 ] && break
		if ! grep -q "/tmp/perf-$pid.map:$l: malformed perf map line skipped" "$err"; then
			fail "$name" "no warning for malformed line $l: $(head -c 600 "$err")"
			return 1
		fi
	done
	if [ $# -gt 10 ] && ! grep -q "/tmp/perf-$pid.map: more malformed lines skipped" "$err"; then
		fail "$name" "no 'more malformed lines skipped' after 10 warnings: $(head -c 600 "$err")"
		return 1
	fi
	l=$(grep -o "/tmp/perf-$pid.map:[0-9]*:" "$err" | cut -d: -f2 | sort -un |
		grep -vxF -f <(printf '%s\n' "${@:1:10}") | head -3 | tr '\n' ' ')
	if [ -n "$l" ]; then
		fail "$name" "warnings for lines that are not among the first 10 malformed ones: $l"
		return 1
	fi
	return 0
}

# ---- snapshots of a map written once ---------------------------------------------
# snap_case NAME KIND MAKE_MAP...: hostile_jit (no GO: spin runs, noret
# sleeps), its map made by MAKE_MAP (gets INFO and MAP appended), one
# snapshot, checked
snap_case() {
	local name=$1 kind=$2 info=$tmp/$1.info p v
	shift 2
	rm -f "$info"
	# it spins: at the lowest priority, not to slow the rest
	nice -n 19 "$tmp/hostile_jit" "$info" >/dev/null 2>&1 &
	p=$!
	pids+=("$p")
	if ! wait_info "$info"; then
		fail "$name" "hostile_jit wrote no $info within 30 s"
		return 1
	fi
	"$@" "$info" "/tmp/perf-$p.map" >"$tmp/$name.bad" || { fail "$name" "cannot write the map"; return 1; }
	if ! peak "$tmp/$name" "$tmp/$name.out" "$tmp/$name.err" \
		timeout -k 10 120 "$USTACK" snapshot -p "$p" -m; then
		fail "$name" "snapshot failed ($(cat "$tmp/$name.time") s): $(head -c 400 "$tmp/$name.err")"
		return 1
	fi
	if ! v=$(python3 "$LIB" check "$kind" snap "$tmp/$name.out" "$info"); then
		fail "$name" "$v; snapshot: $(grep -E '^(TID|#)' "$tmp/$name.out" | head -12 | cut -c1-160 | cat -v | tr '\n' '|')"
		return 1
	fi
	echo "# $name: $v; $(cat "$tmp/$name.time") s, peak RSS $(cat "$tmp/$name.rss") KB"
	kill -KILL "$p" 2>/dev/null
	return 0
}
make_hostile() { python3 "$LIB" hostile "$2" "$1"; }
make_million() { python3 "$LIB" million "$2" "$1" "$tmp/fake"; }

mkdir -p "$tmp/hostile/record" "$tmp/million/record" "$tmp/rewrite" "$tmp/fake"
if part hostile && snap_case hostile/snapshot hostile make_hostile; then
	# shellcheck disable=SC2046
	warned hostile/snapshot "$tmp/hostile/snapshot.err" "$(cut -d' ' -f1 "$tmp/hostile/snapshot.info")" \
		$(cat "$tmp/hostile/snapshot.bad") && pass hostile/snapshot
fi

part million && { python3 "$LIB" fake "$tmp/fake" || fail million "cannot write the fake symbols"; }
# bounds: time 40x what an idle machine takes (ASan build, 2-CPU VM: 3 s
# or less for each command), memory 2.5x (300 to 405 MB; load does not
# change it)
check_bounds() { # NAME FILE-PREFIX WHAT
	local t r
	t=$(cat "$2.time")
	r=$(cat "$2.rss")
	if [ "${t%.*}" -ge 120 ]; then
		fail "$1" "$3 took $t s (bound 120 s)"
		return 1
	fi
	if [ "$r" -ge $((1 << 20)) ]; then
		fail "$1" "$3: peak RSS $r KB (bound 1 GiB)"
		return 1
	fi
	return 0
}
if part million && snap_case million/snapshot million make_million &&
	check_bounds million/snapshot "$tmp/million/snapshot" snapshot; then
	pass million/snapshot
fi

# ---- record + report of a map written once -----------------------------------------
# rec_case NAME KIND BACKEND MAKE_MAP: `record -- hostile_jit INFO GO 150`:
# once INFO is there, the map is written, then GO: both threads spin until
# the main one has run 150 ms, then it exits and the recorder reads the map
rec_case() {
	local name=$1 kind=$2 b=$3 make=$4 info=$tmp/$1.info go=$tmp/$1.go p v rc
	rm -f "$info" "$go"
	peak "$tmp/$name.rec" "$tmp/$name.recout" "$tmp/$name.recerr" timeout -k 10 120 \
		"$USTACK" record -q --backend "$b" -e cpu-clock -o "$tmp/$name.data" -- \
		"$tmp/hostile_jit" "$info" "$go" 150 &
	local rp=$!
	if ! wait_info "$info"; then
		wait $rp
		fail "$name" "hostile_jit wrote no $info within 30 s: $(head -c 400 "$tmp/$name.recerr")"
		return 1
	fi
	p=$(cut -d' ' -f1 "$info")
	pids+=("$p")
	$make "$info" "/tmp/perf-$p.map" >"$tmp/$name.bad" || { fail "$name" "cannot write the map"; return 1; }
	touch "$go"
	wait $rp
	rc=$?
	# the trace stands alone
	rm -f "/tmp/perf-$p.map"
	if [ $rc -ne 0 ]; then
		fail "$name" "record exited $rc ($(cat "$tmp/$name.rec.time") s): $(head -c 400 "$tmp/$name.recerr")"
		return 1
	fi
	if ! peak "$tmp/$name.rep" "$tmp/$name.script" "$tmp/$name.reperr" timeout -k 10 120 \
		"$USTACK" report -i "$tmp/$name.data" -f perf-script; then
		fail "$name" "report failed: $(head -c 400 "$tmp/$name.reperr")"
		return 1
	fi
	if ! v=$(python3 "$LIB" check "$kind" script "$tmp/$name.script" "$info" 20); then
		fail "$name" "$v; report: $(grep -B1 -A3 "perf-$p.map" "$tmp/$name.script" | head -12 | cut -c1-160 | cat -v | tr '\n' '|')"
		return 1
	fi
	echo "# $name: $v; record $(cat "$tmp/$name.rec.time") s, peak RSS $(cat "$tmp/$name.rec.rss") KB; report $(cat "$tmp/$name.rep.time") s, peak RSS $(cat "$tmp/$name.rep.rss") KB"
	return 0
}

for b in copy bpf; do
	if [ -z "$can_record" ]; then
		skip "hostile/record/$b" "needs root or kernel.perf_event_paranoid <= 1"
		skip "million/record/$b" "needs root or kernel.perf_event_paranoid <= 1"
		continue
	fi
	if [ "$b" = bpf ] && [ -n "$bpf_skip" ]; then
		skip "hostile/record/$b" "$bpf_skip"
		skip "million/record/$b" "$bpf_skip"
		continue
	fi
	if part hostile && rec_case "hostile/record/$b" hostile "$b" make_hostile; then
		# shellcheck disable=SC2046
		warned "hostile/record/$b" "$tmp/hostile/record/$b.recerr" \
			"$(cut -d' ' -f1 "$tmp/hostile/record/$b.info")" \
			$(cat "$tmp/hostile/record/$b.bad") && pass "hostile/record/$b"
	fi
	if part million && rec_case "million/record/$b" million "$b" make_million &&
		check_bounds "million/record/$b" "$tmp/million/record/$b.rec" record &&
		check_bounds "million/record/$b" "$tmp/million/record/$b.rep" report; then
		pass "million/record/$b"
	fi
done
rm -rf "$tmp/fake"

# ---- a map rewritten while it is read ------------------------------------------------
rewrite_part() {
	local info=$tmp/rewrite/info rwp ok i rc b d v
	"$tmp/hostile_jit" "$info" rewrite >/dev/null 2>"$tmp/rewrite/prog.err" &
	rwp=$!
	pids+=("$rwp")
	if ! wait_info "$info"; then
		fail rewrite "hostile_jit rewrite wrote no $info within 30 s: $(head -c 300 "$tmp/rewrite/prog.err")"
	else
		ok=1
		: >"$tmp/rewrite/snap.all"
		# at least 20 snapshots; then on until one names a frame (a snapshot
		# names none when the map it reads was just truncated or covers
		# nothing of spin, or was rewritten while read), at most 400
		# snapshots or 120 s
		local t0=$SECONDS
		for i in $(seq 400); do
			timeout -k 10 60 "$USTACK" snapshot -p "$rwp" -m >"$tmp/rewrite/snap.out" 2>"$tmp/rewrite/snap.err"
			rc=$?
			if [ $rc -ne 0 ]; then
				fail rewrite/snapshot "snapshot $i exited $rc: $(head -c 400 "$tmp/rewrite/snap.err")"
				ok=
				break
			fi
			cat "$tmp/rewrite/snap.out" >>"$tmp/rewrite/snap.all"
			if [ "$i" -ge 20 ]; then
				v=$(python3 "$LIB" check rewrite snap "$tmp/rewrite/snap.all" "$info")
				case $v in "bad 0 JIT frames named"*) ;; *) break ;; esac
				[ $((SECONDS - t0)) -ge 120 ] && break
			fi
		done
		if [ -n "$ok" ]; then
			if v=$(python3 "$LIB" check rewrite snap "$tmp/rewrite/snap.all" "$info"); then
				pass rewrite/snapshot
				echo "# rewrite/snapshot: $i snapshots: $v"
			else
				fail rewrite/snapshot "$i snapshots: $v"
			fi
		fi
		for b in copy bpf; do
			if [ -z "$can_record" ]; then
				skip "rewrite/record/$b" "needs root or kernel.perf_event_paranoid <= 1"
				continue
			fi
			if [ "$b" = bpf ] && [ -n "$bpf_skip" ]; then
				skip "rewrite/record/$b" "$bpf_skip"
				continue
			fi
			d=$tmp/rewrite/$b
			if ! timeout -k 10 120 "$USTACK" record -q --backend "$b" -e cpu-clock -p "$rwp" -d 1 \
				-o "$d.data" >/dev/null 2>"$d.recerr"; then
				fail "rewrite/record/$b" "record -p failed: $(head -c 400 "$d.recerr")"
			elif ! timeout -k 10 120 "$USTACK" report -i "$d.data" -f perf-script >"$d.script" 2>"$d.reperr"; then
				fail "rewrite/record/$b" "report failed: $(head -c 400 "$d.reperr")"
			elif ! v=$(python3 "$LIB" check rewrite script "$d.script" "$info" 0); then
				fail "rewrite/record/$b" "$v"
			else
				pass "rewrite/record/$b"
				echo "# rewrite/record/$b: $v"
			fi
		done
		if ! kill -0 "$rwp" 2>/dev/null; then
			fail rewrite "hostile_jit rewrite died during the test: $(head -c 300 "$tmp/rewrite/prog.err")"
		fi
	fi
}
part rewrite && rewrite_part

[ $fails -eq 0 ]
