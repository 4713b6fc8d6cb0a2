#!/usr/bin/env bash
# Python frames in `ustack snapshot` (issue 32), against the program's own
# view: tests/integration/progs/py_paths.py reaches a waiting point through
# paths it knows (recursion, a class method, a generator, a lambda called
# back by sorted(), a second thread waiting elsewhere), writes every
# thread's frames as sys._current_frames() gives them, and waits (both
# threads blocked in read(2): snapshots of it agree with each other).
#
#   snapshot_python_<version>  json: every thread's Python frames equal the
#                              program's (qualname, file, line, innermost
#                              first); each run of them right before a
#                              native _PyEval_EvalFrameDefault frame, each
#                              such frame after a run (or, for a build
#                              without the symbol, none placed and the
#                              reason given); the native frames the same
#                              as --no-python's, in order. text: the same
#                              frames as '#N py  QUALNAME (FILE:LINE)'
#                              lines, and without them (renumbered) the
#                              text of --no-python; --python-only: exactly
#                              the Python frames. folded: the frames as
#                              py::QUALNAME (BASE:LINE) after the eval
#                              function. --stats names the CPython.
#                              -d 1 (no eval frame left): every Python
#                              frame unplaced, in order, with the reason
#                              speedscope: the Python frames (functions
#                              with file and line) after the eval function
#                              pprof (go tool pprof -traces, where
#                              installed): the same frames, in order
#   snapshot_python_refused    CPython 3.10: the snapshot works, its native
#                              frames are there, and one line says why no
#                              Python frames ("not supported")
#   snapshot_python_stripped   Debian's 3.11 with its runtime's symbol names
#                              changed (lib/py_strip.py): native frames as
#                              ever, one line saying no symbol _PyRuntime,
#                              no Python frame
#   snapshot_python_core_<version>
#                              gdb's gcore of the waiting program (Debian's
#                              3.11 and pyenv's 3.13): `snapshot --core
#                              --python-only` shows exactly the program's
#                              own view; the whole text places every run
#   snapshot_python_subinterp_<version>
#                              progs/py_subinterp.py, a thread running code
#                              in a sub-interpreter: --python-only shows for
#                              each thread exactly the program's own view,
#                              the sub-interpreter's frames above the main
#                              interpreter's call into it; every run placed
#                              (no note) where the eval function has a symbol
#   snapshot_python_container_bind
#                              the same checks, of pyenv's 3.13 run chrooted
#                              in a mount namespace of its own at /opt/py, a
#                              path the host does not have: the interpreter
#                              is found and read through the files it mapped
#   snapshot_python_container_trixie
#                              the same, of Debian 13's python3.13 in its
#                              own root (bench/container/rootfs.sh, cached in
#                              build/rootfs; skipped when not there)
# Versions: Debian's /usr/bin/python3.11 and pyenv's 3.12.1 and 3.13.0
# where installed (SKIP naming each one that is not).
set -u
USTACK=${USTACK:-build/check/ustack}
TOP=${TOP:-$PWD}
. "$TOP/tests/integration/lib/python_versions.sh"
py_test_begin snapshot_python ptrace

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
P=$TOP/tests/integration/progs
CHECKER=$TOP/tests/integration/lib/snapshot_python_check.py

# 1 when the interpreter (or the libpython it maps) has the eval function
# among its symbols: the Python frames can then be placed
has_eval() { # python
	local f
	for f in "$1" $(ldd "$1" 2>/dev/null | awk '/libpython/ { print $3 }'); do
		readelf -Ws "$f" 2>/dev/null | grep -q ' _PyEval_EvalFrameDefault$' && { echo 1; return; }
	done
	echo 0
}

snap() { # name dir pid outfile args...: one snapshot, its stderr kept
	local name=$1 d=$2 pid=$3 out=$4
	shift 4
	if ! "$USTACK" snapshot -p "$pid" "$@" >"$d/$out" 2>"$d/$out.err"; then
		fail "snapshot_python_$name" "ustack snapshot $* exited non-zero: $(head -3 "$d/$out.err")"
		return 1
	fi
}

run_version() { # name python [root python-in-root]: with a root, chrooted
	local name=$1 py=$2 root=${3:-} d=$tmp/$1 placed
	[ -z "$root" ] || d=$root/ustack-test
	mkdir -p "$d"
	mkfifo "$d/fifo"
	if [ -z "$root" ]; then
		"$py" "$P/py_paths.py" "$d/dump" "$d/fifo" 2>"$d/py.err" &
	else
		cp "$P/py_paths.py" "$d/"
		ct_start "$root" "$4" /ustack-test/py_paths.py /ustack-test/dump /ustack-test/fifo 2>"$d/py.err" &
	fi
	local pid=$!
	pids+=("$pid")
	for _ in $(seq 3000); do [ -e "$d/dump" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
	if [ ! -e "$d/dump" ]; then
		fail "snapshot_python_$name" "$py never reached its waiting point: $(tail -3 "$d/py.err")"
		return
	fi
	placed=$(has_eval "$py")
	snap "$name" "$d" "$pid" json -f json &&
		snap "$name" "$d" "$pid" nopy.json -f json --no-python &&
		snap "$name" "$d" "$pid" short.json -f json -d 1 &&
		snap "$name" "$d" "$pid" speedscope.json -f speedscope &&
		snap "$name" "$d" "$pid" snap.pb.gz -f pprof &&
		snap "$name" "$d" "$pid" text --stats &&
		snap "$name" "$d" "$pid" nopy.text --no-python &&
		snap "$name" "$d" "$pid" only.text --python-only &&
		snap "$name" "$d" "$pid" folded -f folded || return
	echo x >"$d/fifo"
	wait "$pid" 2>/dev/null
	local prc=$?
	# pprof's reader, where installed (else that part is not checked: said)
	if command -v go >/dev/null && go tool pprof -traces "$d/snap.pb.gz" >"$d/pprof.traces" 2>"$d/pprof.err"; then
		:
	else
		rm -f "$d/pprof.traces"
		echo "# $name: go tool pprof not available: pprof's Python frames not checked"
	fi
	if ! "$PY" "$CHECKER" "$d/dump" "$d" "$placed" >"$d/cmp"; then
		fail "snapshot_python_$name" "the snapshot and the program disagree (placed=$placed)"
		cat "$d/cmp"
		sed 's/^/#   text: /' "$d/text"
		return
	fi
	if ! grep -q "CPython 3\.[0-9]*\.[0-9]*.*threads with Python frames, 0 not placed" "$d/text.err" &&
		[ "$placed" = 1 ]; then
		fail "snapshot_python_$name" "--stats does not name the CPython: $(cat "$d/text.err")"
		return
	fi
	[ "$prc" = 0 ] || fail "snapshot_python_$name" "$py exited $prc after the snapshots: $(tail -3 "$d/py.err")"
	pass "snapshot_python_$name ($(grep -o 'CPython [^:]*' "$d/text.err" | head -1); $(grep -c '^F ' "$d/dump") Python frames in $(grep -c '^T ' "$d/dump") threads, placed=$placed)"
}

py_each_version snapshot_python run_version

# start_waiting DIR PYTHON PROG: PROG (progs/) run by PYTHON with DIR/dump and
# DIR/fifo, its pid in WPID; 0 once it wrote its dump (its waiting point)
start_waiting() {
	mkdir -p "$1"
	mkfifo "$1/fifo"
	"$2" "$P/$3" "$1/dump" "$1/fifo" 2>"$1/py.err" &
	WPID=$!
	pids+=("$WPID")
	for _ in $(seq 3000); do [ -e "$1/dump" ] && break; kill -0 "$WPID" 2>/dev/null || break; sleep 0.01; done
	[ -e "$1/dump" ]
}

# --- a build whose runtime has no symbol: refused, naming it, never misread -------
# (Debian's python3.11 with its _PyRuntime and Py_Version names changed in
# .dynstr, lib/py_strip.py; it runs as before)
if [ ! -x /usr/bin/python3.11 ]; then
	skip snapshot_python_stripped "/usr/bin/python3.11 is not installed"
else
	mkdir -p "$tmp/stripped"
	cp /usr/bin/python3.11 "$tmp/stripped/python3.11"
	if ! "$PY" "$TOP/tests/integration/lib/py_strip.py" "$tmp/stripped/python3.11"; then
		fail snapshot_python_stripped "could not make the copy"
	elif ! start_waiting "$tmp/stripped" "$tmp/stripped/python3.11" py_paths.py; then
		fail snapshot_python_stripped "the copy never reached its waiting point: $(tail -2 "$tmp/stripped/py.err")"
	else
		"$USTACK" snapshot -p "$WPID" >"$tmp/stripped/text" 2>"$tmp/stripped/err"
		rc=$?
		echo x >"$tmp/stripped/fifo"
		if [ $rc = 0 ] && [ "$(wc -l <"$tmp/stripped/err")" = 1 ] &&
			grep -q "Python frames not read: .*python3.11: no symbol _PyRuntime" "$tmp/stripped/err" &&
			! grep -q '^#[0-9]* py ' "$tmp/stripped/text" && grep -q ' _PyEval_EvalFrameDefault+' "$tmp/stripped/text"; then
			pass "snapshot_python_stripped ($(cat "$tmp/stripped/err"))"
		else
			fail snapshot_python_stripped "exit $rc, stderr: $(cat "$tmp/stripped/err")"
		fi
		wait "$WPID" 2>/dev/null
	fi
fi

# --- a core dump (gdb's gcore) of the same waiting program ------------------------
# --python-only of the core: exactly the program's own view; the whole text
# with every run placed where the eval function has a symbol. Two versions
# (a table's and a debug_offsets'), each core deleted at once (~80 MB).
run_core() { # name python
	local name=$1 py=$2 d=$tmp/core_$1 pid
	start_waiting "$d" "$py" py_paths.py
	pid=$WPID
	if [ ! -e "$d/dump" ] || ! gcore -o "$d/core" "$pid" >"$d/gcore.log" 2>&1 || [ ! -f "$d/core.$pid" ]; then
		fail "snapshot_python_core_$name" "no core of $py: $(tail -2 "$d/py.err" "$d/gcore.log" 2>/dev/null)"
		return
	fi
	echo x >"$d/fifo"
	wait "$pid" 2>/dev/null
	"$USTACK" snapshot --core "$d/core.$pid" --python-only >"$d/only.text" 2>"$d/only.err" &&
		"$USTACK" snapshot --core "$d/core.$pid" >"$d/text" 2>"$d/text.err"
	local rc=$?
	rm -f "$d/core.$pid"
	if [ $rc != 0 ]; then
		fail "snapshot_python_core_$name" "ustack snapshot --core exited $rc: $(cat "$d/only.err" "$d/text.err" | head -3)"
		return
	fi
	if ! "$PY" "$TOP/tests/integration/lib/py_dump_compare.py" "$d/dump" "$d/only.text" >"$d/cmp"; then
		fail "snapshot_python_core_$name" "the core's Python frames and the program's differ"
		sed 's/^/#   /' "$d/cmp"
		return
	fi
	if [ "$(has_eval "$py")" = 1 ] && grep -q '^# .*not placed' "$d/text"; then
		fail "snapshot_python_core_$name" "a run not placed: $(grep '^# ' "$d/text" | head -2)"
		return
	fi
	pass "snapshot_python_core_$name ($(grep -c '^#[0-9]* py ' "$d/text") Python frames among the native ones)"
}
if ! command -v gcore >/dev/null; then
	skip snapshot_python_core "gcore (gdb) not installed"
else
	PY_VERSIONS_ALL=$PY_VERSIONS
	PY_VERSIONS=$(printf '%s\n' $PY_VERSIONS_ALL | grep -E '^(3\.11_debian|3\.13\.0):' | tr '\n' ' ')
	py_each_version snapshot_python_core run_core
	PY_VERSIONS=$PY_VERSIONS_ALL
fi

# --- a thread that entered a sub-interpreter: both interpreters' frames ---------
# progs/py_subinterp.py: the sub-interpreter's frames, then those of the
# main interpreter's call into it, on one thread (its thread state in the
# sub-interpreter may name another thread); each run placed
run_subinterp() { # name python
	local name=$1 py=$2 d=$tmp/sub_$1 pid
	start_waiting "$d" "$py" py_subinterp.py
	pid=$WPID
	if [ ! -e "$d/dump" ]; then
		fail "snapshot_python_subinterp_$name" "$py never reached its waiting point: $(tail -3 "$d/py.err")"
		return
	fi
	snap "subinterp_$name" "$d" "$pid" only.text --python-only &&
		snap "subinterp_$name" "$d" "$pid" text || return
	echo x >"$d/fifo"
	wait "$pid" 2>/dev/null
	if ! "$PY" "$TOP/tests/integration/lib/py_dump_compare.py" "$d/dump" "$d/only.text" >"$d/cmp"; then
		fail "snapshot_python_subinterp_$name" "the snapshot and the program disagree"
		sed 's/^/#   /' "$d/cmp"
		return
	fi
	if [ "$(has_eval "$py")" = 1 ] && grep -q '^# .*\(not placed\|interpreters\)' "$d/text"; then
		fail "snapshot_python_subinterp_$name" "a note where every run should be placed: $(grep '^# ' "$d/text" | head -2)"
		return
	fi
	pass "snapshot_python_subinterp_$name ($(grep -c '^F ' "$d/dump") Python frames, $(grep -c '<string>' "$d/dump") of them the sub-interpreter's)"
}
py_each_version snapshot_python_subinterp run_subinterp

# --- CPython in a container: its files are those of its own root ------------------
# ct_start ROOT PYTHON ARGS...: PYTHON (a path inside ROOT) run chrooted in
# ROOT in a mount namespace of its own, the same pid as this job's
ct_start() {
	local root=$1
	shift
	exec unshare -m --propagation private sh -c '
		r=$1; shift
		[ -d "$r/opt/py" ] && [ -n "$CT_PY_PREFIX" ] && { mount --bind "$CT_PY_PREFIX" "$r/opt/py" || exit 111; }
		[ -d "$r/usr" ] && [ -n "$CT_BIND_USR" ] && { mount --rbind /usr "$r/usr" || exit 111; }
		[ -n "$CT_PY_PREFIX" ] && export LD_LIBRARY_PATH=/opt/py/lib
		exec chroot "$r" "$@"' ct "$root" "$@"
}
# "bind": a root of the host's /usr and pyenv's 3.13 at /opt/py, a path the
# host does not have (names must come through /proc/PID/root, libpython too)
py313=/root/.pyenv/versions/3.13.0
if [ "$(id -u)" != 0 ]; then
	skip snapshot_python_container_bind "not root: no mount namespace or chroot"
	skip snapshot_python_container_trixie "not root: no mount namespace or chroot"
elif ! command -v unshare >/dev/null || ! command -v chroot >/dev/null; then
	skip snapshot_python_container_bind "unshare or chroot not installed"
elif [ ! -x "$py313/bin/python3.13" ]; then
	skip snapshot_python_container_bind "$py313/bin/python3.13 is not installed"
elif [ -e /opt/py/bin/python3.13 ]; then
	skip snapshot_python_container_bind "the host has /opt/py/bin/python3.13: the container's path would not be its own"
else
	ct=$tmp/ct_bind
	mkdir -p "$ct/usr" "$ct/opt/py" "$ct/tmp" "$ct/proc"
	for l in bin lib lib64 sbin; do ln -s "usr/$l" "$ct/$l"; done
	CT_BIND_USR=1 CT_PY_PREFIX=$py313 run_version container_bind "$py313/bin/python3.13" "$ct" /opt/py/bin/python3.13
fi
# "trixie": Debian 13's own python3.13 in its own root (bench/container/rootfs.sh)
ROOTFS=${ROOTFS:-$TOP/build/rootfs/trixie}
if [ "$(id -u)" != 0 ]; then
	:
elif [ ! -x "$ROOTFS/usr/bin/python3" ]; then
	skip snapshot_python_container_trixie "no Debian 13 root with python3 at $ROOTFS (bench/container/rootfs.sh makes it; needs the network)"
else
	rm -rf "$ROOTFS/ustack-test"
	CT_BIND_USR= CT_PY_PREFIX= run_version container_trixie "$ROOTFS/usr/bin/python3" "$ROOTFS" /usr/bin/python3
	rm -rf "$ROOTFS/ustack-test"
fi

# --- an unsupported CPython: native frames as ever, one line why ----------------
py310=$PY_UNSUPPORTED
if ! py_start_unsupported "$tmp/310.out"; then
	skip snapshot_python_refused "$py310 is not installed (no unsupported CPython to try)"
else
	pid=$PY_PID
	pids+=("$pid")
	"$USTACK" snapshot -p "$pid" >"$tmp/310.text" 2>"$tmp/310.err"
	rc=$?
	if [ "$rc" = 0 ] && grep -q ' _PyEval_EvalFrameDefault+0x' "$tmp/310.text" &&
		! grep -q '^#[0-9]* py  ' "$tmp/310.text" && [ "$(wc -l <"$tmp/310.err")" = 1 ] &&
		grep -q "^ustack: pid $pid: Python frames not read: .*CPython 3\.10 is not supported" "$tmp/310.err"; then
		pass "snapshot_python_refused ($(cat "$tmp/310.err"))"
	else
		fail snapshot_python_refused "exit $rc, stderr: $(cat "$tmp/310.err")"
		sed 's/^/#   /' "$tmp/310.text"
	fi
fi
[ "$fails" = 0 ]
