#!/usr/bin/env bash
# Python frames of several CPython processes in one `ustack record -a
# --backend bpf -e syscalls:sys_enter_write` (issue 32, item 2): up to
# three interpreters of different versions (lib/python_versions.sh: Debian's
# 3.11, pyenv's 3.12 and 3.13 where installed; 3.11.7 fills in), each
# running progs/py_writes.py with "gate": started and waiting before the
# recording, released by the command once it runs, counting each write's
# path itself, then waiting (alive) until the recorder is done, so that
# the recorder still reads their code objects after its last event.
#
#   record_python_all   per process (the trace's events of its pid), the
#                       recorded Python paths that end in emit equal the
#                       program's own counts for >= 99% of its writes;
#                       lost 0, python_found >= N (a whole-machine
#                       recording also finds other tests' Pythons). The
#                       recorder looks for the interpreters of the
#                       processes running at its start before the first
#                       event: none of their writes lacks its Python frames
#   record_python_all_late  the same, and one more process started by the
#                       command during the recording, slowly (held 0.5 s
#                       at its exec, as on a loaded machine: its
#                       interpreter starts long after the recorder's first
#                       look, which the recorder took for a refusal
#                       before, and recorded no Python frame of the
#                       process). What is
#                       promised for it is that no write gets a wrong
#                       path: each is recorded (lost 0) with the program's
#                       path, or with no Python frame when it was walked
#                       before the recorder found its interpreter, and
#                       those are counted (python_early >= its writes
#                       without Python frames); together >= 99%
# Alone in make check (tests/run-tests.sh ALONE): -a records every other
# test's processes, which would load this one's ring and theirs.
set -u
USTACK=${USTACK:-build/check/ustack}
TOP=${TOP:-$PWD}
. "$TOP/tests/integration/lib/python_versions.sh"
py_test_begin record_python_all bpf
PROG=$TOP/tests/integration/progs/py_writes.py
PATHS=$TOP/tests/integration/lib/py_trace_paths.py
ROUNDS=15 # 12 writes a round in each of 3 threads: 540 writes a process

# up to three interpreters, one per minor version first
PYS=
for v in $PY_VERSIONS; do
	py=${v#*:}
	[ -x "$py" ] || continue
	case " $PYS " in *"/python${py##*python}"*) continue ;; esac
	PYS="$PYS $py"
done
for v in $PY_VERSIONS; do # a second build of a version when fewer are installed
	py=${v#*:}
	[ "$(echo $PYS | wc -w)" -ge 3 ] && break
	[ -x "$py" ] && case " $PYS " in *" $py "*) ;; *) PYS="$PYS $py" ;; esac
done
if [ "$(echo $PYS | wc -w)" -lt 2 ]; then
	skip record_python_all "fewer than two supported CPythons installed (lib/python_versions.sh)"
	exit 0
fi
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT

stat_of() { sed -n "s/^stat $2 //p" "$1"; }

# run_all NAME LATE_PYTHON(or empty)
run_all() {
	local t=$1 late=$2 d=$tmp/$1 i=0 py p n pyps= bad=0 msg= early names=
	mkdir -p "$d"
	for py in $PYS; do
		"$py" "$PROG" "$ROUNDS" threads gate >"$d/out.$i" 2>"$d/err.$i" &
		p=$!
		pids="$pids $p"
		pyps="$pyps $p"
		eval "py_$p=$py"
		names="$names ${py##*/}"
		py_wait_ready "$d/err.$i" || { fail "$t" "$py did not start"; return; }
		mv "$d/out.$i" "$d/out.$p"
		mv "$d/err.$i" "$d/err.$p"
		i=$((i + 1))
	done
	if ! "$USTACK" record --backend bpf -a --stats -e syscalls:sys_enter_write -o "$d/t.data" \
		-- "$PY" "$TOP/tests/integration/lib/py_release.py" "$d" "$late" "$PROG" "$ROUNDS" $pyps 2>"$d/rec.err"; then
		fail "$t" "record failed: $(grep -v '^stat' "$d/rec.err" | tail -3 | tr '\n' ' ')"
		return
	fi
	# the recorder is done: the programs may go
	for p in $pyps $(cat "$d/late.pid" 2>/dev/null); do kill -USR1 "$p" 2>/dev/null; done
	n=0
	for p in $pyps; do
		"$PY" "$PATHS" "$d/t.data" "$p" >"$d/rec.$p" || { fail "$t" "trace unreadable"; return; }
		if ! out=$("$PY" "$TOP/tests/integration/lib/py_paths_compare.py" "$d/out.$p" "$d/rec.$p"); then
			bad=1
			msg="$msg pid $p ($(eval echo \$py_$p)): $out;"
		fi
		n=$((n + 1))
	done
	early=$(stat_of "$d/rec.err" python_early)
	if [ -n "$late" ]; then
		p=$(cat "$d/late.pid")
		"$PY" "$PATHS" "$d/t.data" "$p" >"$d/rec.late" || { fail "$t" "trace unreadable"; return; }
		# the program's writes without a Python frame: allowed up to the
		# early count, never a wrong path
		if ! out=$("$PY" - "$d/out.late" "$d/rec.late" "$early" <<'PYEOF'
import sys
prog, rec = {}, {}
for f, d in ((sys.argv[1], prog), (sys.argv[2], rec)):
    for line in open(f):
        n, _, p = line.rstrip("\n").partition(";")
        if p.endswith(";emit") or (d is rec and p == "-"):
            d[p] = d.get(p, 0) + int(n)
total = sum(prog.values())
same = sum(min(v, rec.get(k, 0)) for k, v in prog.items())
wrong = sum(max(0, v - prog.get(k, 0)) for k, v in rec.items() if k != "-")
bare = rec.get("-", 0)
early = int(sys.argv[3] or 0)
print("%d of %d writes with their path, %d without Python frames (python_early %d), %d with "
      "a wrong path" % (same, total, bare, early, wrong))
# found while it ran: its writes read after its interpreter was (the
# recorder looks again at its next event) have its Python frames
ok = total and same and not wrong and same + min(bare, early) >= 0.99 * total
sys.exit(0 if ok else 1)
PYEOF
		); then
			bad=1
			msg="$msg late pid $p: $out;"
		fi
		n=$((n + 1))
	fi
	if [ $bad = 1 ]; then
		fail "$t" "$msg"
	elif [ "$(stat_of "$d/rec.err" lost)" != 0 ] ||
		[ "$(stat_of "$d/rec.err" python_found)" -lt "$n" ]; then
		fail "$t" "stats: $(grep -E 'stat (lost|python_|copies_skipped)' "$d/rec.err" | tr '\n' ' ')"
	else
		pass "$t ($n processes:$names${late:+ + late ${late##*/}${out:+: $out}}; $(grep -E 'stat python_(found|early|copies|beyond_cut)' "$d/rec.err" | sed 's/stat //' | tr '\n' ' '))"
	fi
}
run_all record_python_all ""
# the late one: a pyenv build (a stub executable and its libpython) where
# installed, started slowly (lib/py_release.py PY_SLOW_START)
late=
for v in $PY_VERSIONS; do [ -x "${v#*:}" ] && late=${v#*:}; done
PY_SLOW_START=1 run_all record_python_all_late "$late"
exit $((fails > 0))
