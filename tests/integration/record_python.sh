#!/usr/bin/env bash
# Python frames in `ustack record --backend bpf` (issue 32), against the
# program's own count: tests/integration/progs/py_writes.py reaches
# os.write(/dev/null) through paths it knows (recursion, a class method, a
# generator, a lambda, callbacks from sorted(key=...) and
# functools.reduce), in its main thread and two more, counts each write's
# path as the interpreter sees it (sys._getframe), and prints the counts.
# Recorded with -e syscalls:sys_enter_write (every write is an event), the
# trace is read by the independent reader (tests/data/trace/read_trace.py,
# through lib/py_trace_paths.py: PYFUNC names of each user stack's Python
# frames):
#
#   record_python_<version>  (the program alive 1 s after its writes,
#                            "linger": python_314 says why) the histogram of
#                            recorded Python paths that
#                            end in emit equals the program's for >= 99% of
#                            its writes; no lost
#                            records; --stats: python_found 1, no code
#                            object unreadable
#   record_python_refused    CPython 3.10: one line says why (not
#                            supported), stats python_refused 1, the native
#                            stacks are recorded, no Python frame
#   record_python_short      a program that makes 12 writes in a few ms
#                            and exits 1 s later: its paths as above, every
#                            code object read while it lived
#   record_python_xperf_<v>  -X perf (3.12+), gated and recorded with -p (alive
#                            until the recorder is done): the paths as above through the
#                            interpreter's perf trampolines; report's folded
#                            names no trampoline beside a Python frame
#   record_python_subinterp_<v>  a thread in a sub-interpreter beside the
#                            main thread: the main thread's path right, the
#                            second thread's with both its chains (the
#                            sub-interpreter's under the main one's), no
#                            other path mixing the interpreters
#   record_python_stripped   Debian's 3.11 with its runtime's symbol names
#                            changed (lib/py_strip.py): refused with one
#                            line, python_refused 1, native stacks only
#   record_python_child      the same program started by the command
#                            through a shell (sh -c '...; true'), its
#                            interpreter's table held out of the kernel
#                            (USTACK_BPF_HOLD_TABLE=python3: as before the
#                            table of a new program is loaded, in every
#                            run, not only in those where the program
#                            writes before the recorder loads it): its
#                            writes are walked from stack copies, whose
#                            Python frames the kernel sends with the copy:
#                            >= 99% of the writes
#                            with the program's path, no code object
#                            unreadable
#                            and python_copies (the stat) between 1 and
#                            the stacks finished from copies
#   record_python_partial    the same child and hold, with
#                            USTACK_BPF_NO_COPIES=1 (the kernel sends no
#                            copy, as when the ring is half full): the
#                            walks that stop at the python3.X not loaded
#                            keep their partial
#                            native stack (stop not-loaded) and the Python
#                            frames above it, after its last native frame:
#                            >= 99% of the writes with the program's path,
#                            python_beyond_cut > 0, no copy
#   record_python_container  Debian 13's python3.13 in its own root
#                            (ROOTFS, default build/rootfs/trixie, made by
#                            bench/container/rootfs.sh, read only: the
#                            program comes in by a bind mount on its /tmp in
#                            a mount namespace of its own), chrooted,
#                            recorded from the host with -p: its paths as
#                            above, python_found 1, and report names
#                            py::emit (py_writes.py:LINE) after the process
#                            is gone; SKIP naming a missing root
#   record_python_nopython   --no-python: no Python frame, python_found 0
#   record_python_copy       --backend copy of a CPython: the line saying
#                            it cannot ("use --backend bpf"), python_copy 1,
#                            no Python frame
# Versions: Debian's /usr/bin/python3.11 and pyenv's builds where installed
# (lib/python_versions.sh; SKIP naming each one that is not).
set -u
USTACK=${USTACK:-build/check/ustack}
TOP=${TOP:-$PWD}
. "$TOP/tests/integration/lib/python_versions.sh"
py_test_begin record_python bpf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PROG=$TOP/tests/integration/progs/py_writes.py
PATHS=$TOP/tests/integration/lib/py_trace_paths.py
ROUNDS=60

# compare NAME PROGRAM_COUNTS RECORDED_PATHS: >= 99% of the program's
# writes recorded with the same path
compare() {
	"$PY" "$TOP/tests/integration/lib/py_paths_compare.py" "$2" "$3"
}

stat_of() { sed -n "s/^stat $2 //p" "$1"; }

# run_version NAME PYTHON
run_version() {
	local t=record_python_$1 d=$tmp/$1
	mkdir -p "$d"
	if ! "$USTACK" record --backend bpf --stats -e syscalls:sys_enter_write -o "$d/t.data" \
		-- "$2" "$PROG" "$ROUNDS" threads linger >"$d/prog.txt" 2>"$d/err.txt"; then
		fail "$t" "record failed: $(tail -3 "$d/err.txt")"
		return
	fi
	"$PY" "$PATHS" "$d/t.data" >"$d/rec.txt" || { fail "$t" "trace unreadable"; return; }
	if ! out=$(compare "$t" "$d/prog.txt" "$d/rec.txt"); then
		fail "$t" "$out"
	elif [ "$(stat_of "$d/err.txt" lost)" != 0 ] || [ "$(stat_of "$d/err.txt" python_found)" != 1 ] ||
		[ "$(stat_of "$d/err.txt" python_code_unreadable)" != 0 ]; then
		fail "$t" "stats: $(grep -E 'stat (lost|python_)' "$d/err.txt" | tr '\n' ' ')"
	else
		pass "$t"
	fi
}
py_each_version record_python run_version

# the other cases with the first interpreter installed
PY1=
for v in $PY_VERSIONS; do [ -x "${v#*:}" ] && { PY1=${v#*:}; break; }; done
if [ -z "$PY1" ]; then
	skip record_python_nopython "no supported CPython installed"
else
	d=$tmp/nopy
	mkdir -p "$d"
	"$USTACK" record --backend bpf --no-python --stats -e syscalls:sys_enter_write \
		-o "$d/t.data" -- "$PY1" "$PROG" 5 >/dev/null 2>"$d/err.txt"
	"$PY" "$PATHS" "$d/t.data" >"$d/rec.txt"
	if grep -qv '^[0-9]*;-$' "$d/rec.txt" || ! grep -q '^[0-9]*;-$' "$d/rec.txt" ||
		[ "$(stat_of "$d/err.txt" python_found)" != 0 ]; then
		fail record_python_nopython "$(head -3 "$d/rec.txt"; grep 'stat python_found' "$d/err.txt")"
	else
		pass record_python_nopython
	fi

	d=$tmp/copy
	mkdir -p "$d"
	"$USTACK" record --backend copy --stats -e syscalls:sys_enter_write \
		-o "$d/t.data" -- "$PY1" "$PROG" 5 >/dev/null 2>"$d/err.txt"
	"$PY" "$PATHS" "$d/t.data" >"$d/rec.txt"
	if ! grep -q "Python frames cannot be recorded with the copy backend.*use --backend bpf" "$d/err.txt" ||
		[ "$(stat_of "$d/err.txt" python_copy)" != 1 ] || grep -qv '^[0-9]*;-$' "$d/rec.txt"; then
		fail record_python_copy "$(grep -i 'python' "$d/err.txt" | head -3)"
	else
		pass record_python_copy
	fi
fi

# the Python process a child of the command: not known before its exec, so
# its first stacks come as copies until its interpreter's table is loaded;
# that table held out (USTACK_BPF_HOLD_TABLE), every one does, whether the
# program or the recorder is quicker (a run where the recorder loaded the
# table before the first write had no copy and failed, 2026-11-30).
# 8 rounds in 3 threads: ~290 writes, whose copies (22 KiB each) fit in
# half of the 16 MiB ring, past which a walk keeps its partial stack and
# sends no copy (those are not what this case checks). "linger": the
# program waits a second before it exits, as the recorder reads its code
# objects only after it has loaded the first tables (~0.3 s here).
CHILD_ROUNDS=8
if [ -n "$PY1" ]; then
	d=$tmp/child
	mkdir -p "$d"
	USTACK_BPF_HOLD_TABLE=python3 "$USTACK" record --backend bpf --stats \
		-e syscalls:sys_enter_write -o "$d/t.data" \
		-- sh -c '"$0" "$1" "$2" threads linger; true' "$PY1" "$PROG" "$CHILD_ROUNDS" \
		>"$d/prog.txt" 2>"$d/err.txt"
	"$PY" "$PATHS" "$d/t.data" >"$d/rec.txt" || fail record_python_child "trace unreadable"
	copied=$(sed -n 's/.*(\([0-9]*\) finished from a stack copy.*/\1/p' "$d/err.txt")
	if ! out=$(compare record_python_child "$d/prog.txt" "$d/rec.txt"); then
		fail record_python_child "$out (${copied:-?} stacks from copies)"
	elif [ "$(stat_of "$d/err.txt" python_code_unreadable)" != 0 ] ||
		[ "$(stat_of "$d/err.txt" python_found)" != 1 ]; then
		fail record_python_child "stats: $(grep -E 'stat python_' "$d/err.txt" | tr '\n' ' ')"
	else
		pass "record_python_child ($(awk -F';' '{ s += $1 } END { print s }' "$d/prog.txt") writes, ${copied:-?} stacks from copies)"
	fi
	pc=$(stat_of "$d/err.txt" python_copies)
	if [ "${pc:-0}" -lt 1 ] || [ "${pc:-0}" -gt "${copied:-0}" ]; then
		fail record_python_child_copies "python_copies ${pc:-none}, ${copied:-?} stacks from copies"
	else
		pass "record_python_child_copies (python_copies $pc of ${copied:-?} copies)"
	fi
	d=$tmp/partial
	mkdir -p "$d"
	USTACK_BPF_HOLD_TABLE=python3 USTACK_BPF_NO_COPIES=1 "$USTACK" record --backend bpf \
		--stats -e syscalls:sys_enter_write \
		-o "$d/t.data" -- sh -c '"$0" "$1" "$2" threads linger; true' "$PY1" "$PROG" \
		"$CHILD_ROUNDS" >"$d/prog.txt" 2>"$d/err.txt"
	"$PY" "$PATHS" "$d/t.data" >"$d/rec.txt" || fail record_python_partial "trace unreadable"
	kept=$(sed -n 's/.* \([0-9]*\) kept partial.*/\1/p' "$d/err.txt")
	beyond=$(stat_of "$d/err.txt" python_beyond_cut)
	if ! out=$(compare record_python_partial "$d/prog.txt" "$d/rec.txt"); then
		fail record_python_partial "$out (${kept:-?} kept partial)"
	elif [ "${beyond:-0}" -lt 1 ] || [ "$(stat_of "$d/err.txt" python_copies)" != 0 ] ||
		[ "$(stat_of "$d/err.txt" python_code_unreadable)" != 0 ]; then
		fail record_python_partial "stats: $(grep -E 'stat python_|kept partial' "$d/err.txt" | tr '\n' ' ')"
	else
		pass "record_python_partial (${kept:-?} stacks kept partial, $beyond distinct with Python frames above the cut)"
	fi
fi

# a program that makes its 12 writes in a few milliseconds and exits soon
# after: its code objects read while it lived (a new Python stack wakes the
# recorder at once), so the trace names its frames after it is gone. It
# lingers 1 s (runpy, then a sleep): a wakeup is not a deadline, and a
# loaded machine may take that long to run the recorder.
if [ -n "$PY1" ]; then
	d=$tmp/short
	mkdir -p "$d"
	"$USTACK" record --backend bpf --stats -e syscalls:sys_enter_write -o "$d/t.data" \
		-- "$PY1" -c 'import runpy, sys, time
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    sys.stdout.flush()
    time.sleep(1)' "$PROG" 1 >"$d/prog.txt" 2>"$d/err.txt"
	"$PY" "$PATHS" "$d/t.data" >"$d/rec.txt"
	if ! out=$(compare record_python_short "$d/prog.txt" "$d/rec.txt"); then
		fail record_python_short "$out"
	elif [ "$(stat_of "$d/err.txt" python_code_unreadable)" != 0 ] ||
		[ "$(stat_of "$d/err.txt" python_code_read)" = 0 ]; then
		fail record_python_short "stats: $(grep -E 'stat python_code' "$d/err.txt" | tr '\n' ' ')"
	else
		pass "record_python_short ($(awk -F';' '{ s += $1 } END { print s }' "$d/prog.txt") writes, every one named)"
	fi
fi

if [ ! -x "$PY_UNSUPPORTED" ]; then
	skip record_python_refused "$PY_UNSUPPORTED is not installed"
else
	py_refused_record record_python_refused "$tmp/refused" ".*CPython 3.10 is not supported" \
		"$PY_UNSUPPORTED"
fi
# -X perf (3.12+): the interpreter runs each function through a trampoline
# of its own in anonymous memory (no unwind table, no frame pointer), named
# by its perf map; the walk goes through them (CPython's stub rule), the
# paths are the program's, and report names each function once: no
# trampoline name (py::emit:FILE from the perf map) beside its Python frame
xperf_version() { # name python
	local t=record_python_xperf_$1 d=$tmp/xperf_$1
	case $1 in 3.11*) return ;; esac # -X perf is 3.12+
	mkdir -p "$d"
	# gated, as the container case below: alive until the recorder is
	# done, so that its code objects are read on a loaded machine too
	# (20 rounds end before an ASan recorder has loaded its tables there)
	"$2" -X perf "$PROG" 20 threads gate >"$d/prog.txt" 2>"$d/gate.err" &
	local ppid=$!
	if ! py_wait_ready "$d/gate.err"; then
		fail "$t" "python -X perf did not start: $(tail -2 "$d/gate.err")"
		kill $ppid 2>/dev/null
		return
	fi
	mv "$d/gate.err" "$d/err.$ppid"
	"$USTACK" record --backend bpf --stats -p $ppid -e syscalls:sys_enter_write -o "$d/t.data" \
		-- "$PY" "$TOP/tests/integration/lib/py_release.py" "$d" "" "$PROG" 20 $ppid 2>"$d/err.txt"
	local rc=$?
	kill -USR1 $ppid
	wait $ppid
	# -X perf's map of this pid, in the trace by now: not left in /tmp
	rm -f "/tmp/perf-$ppid.map"
	if [ $rc -ne 0 ]; then
		fail "$t" "record failed: $(tail -3 "$d/err.txt")"
		return
	fi
	"$PY" "$PATHS" "$d/t.data" >"$d/rec.txt" || { fail "$t" "trace unreadable"; return; }
	"$USTACK" report -i "$d/t.data" -f folded >"$d/folded" 2>"$d/report.err"
	if ! out=$(compare "$t" "$d/prog.txt" "$d/rec.txt"); then
		fail "$t" "$out"
	elif ! grep -q 'py::emit (py_writes.py:' "$d/folded"; then
		fail "$t" "no Python frame named py::emit in the folded report"
	elif anon=$("$USTACK" report -i "$d/t.data" -f raw 2>/dev/null | grep -c '^ => .* : 0x0$') &&
		jit=$("$USTACK" report -i "$d/t.data" --stats 2>/dev/null | sed -n 's/^jit symbols: //p') &&
		{ [ "$anon" -lt 720 ] || [ "${jit:-0}" -eq 0 ]; }; then
		# each of the 720 writes goes through emit's trampoline at least
		fail "$t" "$anon frames in anonymous memory (the trampolines), ${jit:-no} JIT symbols from the perf map: was -X perf on?"
	elif grep 'py::[^;]* (py_writes.py:' "$d/folded" | grep -q 'py::[^ ;]*:/'; then
		fail "$t" "a trampoline named beside its Python frame: $(grep 'py::[^;]* (py_writes.py:' "$d/folded" | grep -o 'py::[^ ;]*:/[^;]*' | head -2 | tr '\n' ' ')"
	else
		pass "$t"
	fi
}
py_each_version record_python_xperf xperf_version

# a thread in a sub-interpreter beside the main thread (progs/py_subwrites.py):
# the main thread's writes carry its own path, the second thread's the
# path of both its chains, the sub-interpreter's under the main
# interpreter's that called into it (Thread._bootstrap ... Thread.run, then
# the sub-interpreter's <module>, sub_outer, sub_leaf), each >= 99%; no
# recorded path mixes the two otherwise or gives the sub-interpreter's
# functions to the main thread (3.11/3.12 name a sub-interpreter's thread
# state after the thread that created it: the kernel takes the thread
# states whose cframe lies on the recorded thread's stack; 3.13 binds it
# to the thread that runs it, and the chains are ordered by their entry
# frames' places on that stack).
subinterp_version() { # name python
	py_subwrites_run "record_python_subinterp_$1" "$tmp/subinterp_$1" \
		"$2" "$TOP/tests/integration/progs/py_subwrites.py"
}
py_each_version record_python_subinterp subinterp_version

# Debian 13's python3.13 in a root of its own, gated (progs/py_writes.py
# "gate": released by the recording's command, lib/py_release.py, and
# alive until the recorder is done), recorded from the host
ROOTFS=${ROOTFS:-$TOP/build/rootfs/trixie}
if [ ! -x "$ROOTFS/usr/bin/python3" ] || [ ! -d "$ROOTFS/tmp" ]; then
	skip record_python_container "no Debian 13 root with python3 at $ROOTFS (bench/container/rootfs.sh makes it; needs the network)"
elif ! command -v unshare >/dev/null || ! command -v chroot >/dev/null; then
	skip record_python_container "unshare or chroot not installed"
else
	d=$tmp/ct
	mkdir -p "$d/in"
	cp "$PROG" "$d/in/"
	# one pid from unshare to python3: each execs the next
	unshare -m --propagation private sh -c 'mount --bind "$1" "$2/tmp" || exit 111
		exec chroot "$2" /usr/bin/python3 /tmp/py_writes.py "$3" threads gate' \
		ct "$d/in" "$ROOTFS" 20 >"$d/out.ct" 2>"$d/err.ct" &
	ctpid=$!
	if ! py_wait_ready "$d/err.ct"; then
		fail record_python_container "the container's python3 did not start: $(tail -2 "$d/err.ct")"
		kill $ctpid 2>/dev/null
	else
		mv "$d/err.ct" "$d/err.$ctpid"
		"$USTACK" record --backend bpf --stats -p $ctpid -e syscalls:sys_enter_write \
			-o "$d/t.data" -- "$PY" "$TOP/tests/integration/lib/py_release.py" "$d" "" \
			"$PROG" 20 $ctpid 2>"$d/rec.err"
		kill -USR1 $ctpid
		wait $ctpid
		"$PY" "$PATHS" "$d/t.data" >"$d/rec.txt" || fail record_python_container "trace unreadable"
		"$USTACK" report -i "$d/t.data" -f folded >"$d/folded" 2>"$d/report.err"
		if ! out=$(compare record_python_container "$d/out.ct" "$d/rec.txt"); then
			fail record_python_container "$out"
		elif [ "$(stat_of "$d/rec.err" python_found)" != 1 ] ||
			[ "$(stat_of "$d/rec.err" lost)" != 0 ] ||
			[ "$(stat_of "$d/rec.err" python_code_unreadable)" != 0 ]; then
			fail record_python_container "stats: $(grep -E 'stat (lost|python_)' "$d/rec.err" | tr '\n' ' ')"
		elif ! grep -q 'py::emit (py_writes.py:[0-9]' "$d/folded"; then
			fail record_python_container "report after the process exited names no py::emit: $(head -c 300 "$d/folded")"
		else
			pass "record_python_container ($(awk -F';' '{ s += $1 } END { print s }' "$d/out.ct") writes of $(chroot "$ROOTFS" /usr/bin/python3 -V 2>/dev/null || echo python3) in $ROOTFS)"
		fi
	fi
fi

# a build whose runtime has no symbol (lib/py_strip.py on Debian's 3.11):
# refused once with the finder's line, native stacks recorded
if [ ! -x /usr/bin/python3.11 ]; then
	skip record_python_stripped "/usr/bin/python3.11 is not installed"
else
	d=$tmp/stripped
	mkdir -p "$d"
	cp /usr/bin/python3.11 "$d/python3.11"
	"$PY" "$TOP/tests/integration/lib/py_strip.py" "$d/python3.11" &&
		"$USTACK" record --backend bpf --stats -e syscalls:sys_enter_write -o "$d/t.data" \
			-- "$d/python3.11" "$PROG" 5 >/dev/null 2>"$d/err.txt"
	"$PY" "$PATHS" "$d/t.data" >"$d/rec.txt"
	n=$(grep -c "Python frames not recorded: .*python3.11: no symbol _PyRuntime" "$d/err.txt")
	if [ "$n" != 1 ] || [ "$(stat_of "$d/err.txt" python_refused)" != 1 ] ||
		grep -qv '^[0-9]*;-$' "$d/rec.txt" || ! grep -q '^[0-9]*;-$' "$d/rec.txt"; then
		fail record_python_stripped "$n lines; $(grep -E 'python' "$d/err.txt" | head -4 | tr '\n' ' ')"
	else
		pass record_python_stripped
	fi
fi
exit $((fails > 0))
