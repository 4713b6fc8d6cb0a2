#!/usr/bin/env bash
# `ustack snapshot` of a CPython 3.12+ started with -X perf (issue 32: each
# Python function named once). Under -X perf every Python call runs through
# a trampoline the interpreter writes into anonymous memory and names in
# /tmp/perf-PID.map ("py::leaf:/path/py_paths.py"); the Python frame beside
# it names the same function. tests/integration/progs/py_paths.py waits at a
# known point and dumps its own view of its frames:
#
#   snapshot_python_xperf_<v>  text: the Python frames equal the program's
#                              own (lib/py_dump_compare.py), no [jit]
#                              'py::' trampoline left beside them, the
#                              walk whole; folded, speedscope: no
#                              trampoline either; json keeps them (the
#                              data as read: "jit": true frames named
#                              'py::...')
# Versions: pyenv's 3.12 and 3.13 where installed (lib/python_versions.sh),
# SKIP naming each one that is not; 3.11 has no -X perf.
set -u
USTACK=${USTACK:-build/check/ustack}
TOP=${TOP:-$PWD}
. "$TOP/tests/integration/lib/python_versions.sh"
py_test_begin snapshot_python_xperf ptrace
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
		rm -f "/tmp/perf-$p.map"
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

run() { # name python
	local name=snapshot_python_xperf_$1 py=$2 d=$tmp/$1 pid f
	case $1 in 3.11* | 3.10* | 3.[0-9].*) echo "# $name: CPython $1 has no -X perf (3.12+): not a case"; return ;; esac
	mkdir -p "$d"
	mkfifo "$d/fifo"
	"$py" -X perf "$TOP/tests/integration/progs/py_paths.py" "$d/dump" "$d/fifo" 2>"$d/py.err" &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 3000); do [ -e "$d/dump" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
	if [ ! -e "$d/dump" ]; then
		fail "$name" "$py -X perf never reached its waiting point: $(tail -3 "$d/py.err")"
		return
	fi
	for f in text:-ftext folded:-ffolded json:-fjson speedscope:-fspeedscope; do
		if ! "$USTACK" snapshot -p "$pid" "${f#*:}" >"$d/${f%%:*}" 2>"$d/${f%%:*}.err"; then
			fail "$name" "snapshot ${f#*:} exited non-zero: $(head -3 "$d/${f%%:*}.err")"
			echo x >"$d/fifo"
			return
		fi
	done
	echo x >"$d/fifo"
	wait "$pid" 2>/dev/null
	# the trampolines are there to be left out: the map names them, and
	# json, which shows frames as read, has them
	if ! grep -q '"function": "py::[^"]*:/[^"]*py_paths.py"' "$d/json"; then
		fail "$name" "json has no -X perf trampoline frame: the case tests nothing ($(grep -c '"jit": true' "$d/json") jit frames)"
		return
	fi
	if ! "$PY" "$TOP/tests/integration/lib/py_dump_compare.py" "$d/dump" "$d/text" >"$d/cmp"; then
		fail "$name" "the text's Python frames and the program's differ"
		sed 's/^/#   /' "$d/cmp"
		return
	fi
	if grep -q '\[jit\].*py::\|py::.*\[jit\]' "$d/text" || grep -q ' py::[^ ]*:/' "$d/text"; then
		fail "$name" "text names a trampoline beside its Python frame: $(grep -m1 'py::' "$d/text")"
		return
	fi
	if grep -q '^# stopped' "$d/text"; then
		fail "$name" "a walk stopped early: $(grep -m1 '^# stopped' "$d/text")"
		return
	fi
	if grep -q 'py::[^;]*_\[j\]' "$d/folded"; then
		fail "$name" "folded names a trampoline: $(grep -o 'py::[^;]*_\[j\]' "$d/folded" | head -1)"
		return
	fi
	if ! grep -q 'py::leaf (py_paths.py:[0-9]*)' "$d/folded"; then
		fail "$name" "folded has no Python frame leaf: $(head -c 300 "$d/folded")"
		return
	fi
	if grep -q '"name": *"py::[^"]*:/' "$d/speedscope"; then
		fail "$name" "speedscope names a trampoline: $(grep -o '"name": *"py::[^"]*:/[^"]*"' "$d/speedscope" | head -1)"
		return
	fi
	pass "$name ($(grep -c '^#[0-9]* py ' "$d/text") Python frames, $(grep -c '"jit": true' "$d/json") trampolines in json, none in text, folded, speedscope)"
}

py_each_version snapshot_python_xperf run
exit $((fails > 0))
