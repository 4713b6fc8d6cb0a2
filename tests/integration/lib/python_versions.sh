# The CPython interpreters the Python-frame tests run (sourced by
# python_frames.sh and snapshot_python.sh): NAME:PATH, each skipped by the
# caller, saying so, where it is not installed (Debian 12's python3.11;
# pyenv's builds where this machine has them); and an unsupported one,
# which must be refused with one line.
PY_VERSIONS="3.11_debian:/usr/bin/python3.11 3.11.7:/root/.pyenv/versions/3.11.7/bin/python3.11
3.12.1:/root/.pyenv/versions/3.12.1/bin/python3.12 3.13.0:/root/.pyenv/versions/3.13.0/bin/python3.13"
PY_UNSUPPORTED=/root/.pyenv/versions/3.10.13/bin/python3.10

# py_wait_ready FILE: until the program wrote "ready" into FILE (30 s at most)
py_wait_ready() {
	local i
	for i in $(seq 3000); do
		grep -q ready "$1" 2>/dev/null && return 0
		sleep 0.01
	done
	return 1
}

# py_each_version TEST FUNC: FUNC NAME PATH for each installed interpreter,
# "SKIP TEST_NAME: PATH is not installed" for the others
py_each_version() {
	local v name py
	for v in $PY_VERSIONS; do
		name=${v%%:*} py=${v#*:}
		if [ ! -x "$py" ]; then
			echo "SKIP $1_$name: $py is not installed"
			continue
		fi
		"$2" "$name" "$py"
	done
}

# py_start_unsupported OUT: the unsupported interpreter started, waiting,
# its pid in PY_PID once it said "ready" into OUT; 1 when not installed
py_start_unsupported() {
	[ -x "$PY_UNSUPPORTED" ] || return 1
	"$PY_UNSUPPORTED" -c 'import time; print("ready", flush=True); time.sleep(120)' >"$1" &
	PY_PID=$!
	py_wait_ready "$1" || true # not ready: the caller's checks fail on it
}

# py_test_begin NAME bpf|ptrace: how a Python-frame test starts (USTACK set
# before): pass/fail/skip and the count of failures (fails), PY the
# checker's Python (/usr/bin/python3: `python3` on PATH may be a pyenv
# shim); exits with FAIL NAME when ustack is not built, with SKIP NAME when
# the checker is missing or the test cannot run here (bpf: not root, the
# bpf backend needs CAP_BPF and CAP_PERFMON; ptrace: not root and yama
# forbids tracing a sibling)
py_test_begin() {
	fails=0
	pass() { echo "PASS $1"; }
	fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
	skip() { echo "SKIP $1: $2"; }
	[ -x "$USTACK" ] || { fail "$1" "no $USTACK"; exit 1; }
	PY=/usr/bin/python3
	[ -x "$PY" ] || { skip "$1" "no $PY for the checker"; exit 0; }
	if [ "$2" = bpf ] && [ "$(id -u)" != 0 ]; then
		skip "$1" "not root: the bpf backend needs CAP_BPF and CAP_PERFMON"
		exit 0
	fi
	if [ "$2" = ptrace ] && [ "$(id -u)" != 0 ] &&
		[ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" != 0 ]; then
		skip "$1" "not root and yama ptrace_scope != 0: cannot trace a sibling"
		exit 0
	fi
}

# py_subwrites_run TEST DIR CMD...: record --backend bpf of CMD 300, CMD
# running progs/py_subwrites.py (a thread in a sub-interpreter beside the
# main thread), into DIR; PASS or FAIL TEST by lib/py_subwrites_check.py
py_subwrites_run() {
	local t=$1 d=$2 out
	shift 2
	mkdir -p "$d"
	"$USTACK" record --backend bpf -q -e syscalls:sys_enter_write -o "$d/t.data" \
		-- "$@" 300 >"$d/prog.txt" 2>"$d/err.txt"
	"$PY" "$TOP/tests/integration/lib/py_trace_paths.py" "$d/t.data" >"$d/rec.txt" ||
		{ fail "$t" "trace unreadable"; return; }
	if ! grep -q '^main 300$' "$d/prog.txt" || ! grep -q '^sub 300$' "$d/prog.txt"; then
		fail "$t" "the program did not finish: $(tail -2 "$d/err.txt")"
	elif ! out=$("$PY" "$TOP/tests/integration/lib/py_subwrites_check.py" "$d/rec.txt"); then
		fail "$t" "$out"
	else
		pass "$t ($out)"
	fi
}

# py_refused_record TEST DIR LINE CMD...: record --backend bpf of CMD -c
# (100 writes, 8 ms apart), CMD an interpreter the recorder must refuse;
# PASS TEST when stderr holds one line "Python frames not recorded: ..."
# matching the regex LINE, --stats says python_refused 1, every one of the
# 100+ stacks has no Python frame (native stacks as ever); else FAIL
py_refused_record() {
	local t=$1 d=$2 line=$3 n
	shift 3
	mkdir -p "$d"
	"$USTACK" record --backend bpf --stats -e syscalls:sys_enter_write -o "$d/t.data" \
		-- "$@" -c 'import os, time
for i in range(100):
    os.write(1, b"")
    time.sleep(0.008)' >/dev/null 2>"$d/rec.err"
	"$PY" "$TOP/tests/integration/lib/py_trace_paths.py" "$d/t.data" >"$d/rec.txt"
	n=$(grep -c "Python frames not recorded: $line" "$d/rec.err")
	if [ "$n" != 1 ] || [ "$(sed -n 's/^stat python_refused //p' "$d/rec.err")" != 1 ] ||
		grep -qv '^[0-9]*;-$' "$d/rec.txt" ||
		[ "$(sed -n 's/^stat user_stacks //p' "$d/rec.err")" -lt 100 ]; then
		fail "$t" "$n lines; $(grep -E 'python|user_stacks' "$d/rec.err" | head -4 | tr '\n' ' ')"
	else
		pass "$t ($(sed -n 's/^stat python_refused_why //p' "$d/rec.err"))"
	fi
}
