#!/usr/bin/env bash
# Python frames of `ustack snapshot` against an oracle no one here wrote:
# gdb with CPython's own extension (`py-bt`, Debian's python3.11-dbg).
# progs/py_paths.py (recursion, a class method, a generator, a lambda
# called back by sorted(), a second thread) waits in read(2); both tools
# read it there:
#   snapshot_python_gdb   every thread's Python frames of `thread apply all
#                         py-bt` equal those of `ustack snapshot
#                         --python-only`: function, file and line,
#                         innermost first (lib/pybt_compare.py); the
#                         program runs on and exits 0 after both
# Skipped, saying why, without gdb, Debian's /usr/bin/python3.11 or its gdb
# extension (apt-get install python3.11-dbg).
set -u
USTACK=${USTACK:-build/check/ustack}
TOP=${TOP:-$PWD}
PY=/usr/bin/python3.11
EXT=/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py
skip() { echo "SKIP snapshot_python_gdb: $1"; exit 0; }
fail() { echo "FAIL snapshot_python_gdb: $1"; exit 1; }

[ -x "$USTACK" ] || fail "no $USTACK"
command -v gdb >/dev/null || skip "gdb not installed"
[ -x "$PY" ] || skip "$PY not installed"
[ -f "$EXT" ] || skip "CPython's gdb extension $EXT not installed (apt-get install python3.11-dbg)"
if [ "$(id -u)" != 0 ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" != 0 ]; then
	skip "not root and yama ptrace_scope != 0: cannot trace a sibling"
fi

tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -KILL $pid 2>/dev/null; rm -rf "$tmp"' EXIT
mkfifo "$tmp/fifo"
"$PY" "$TOP/tests/integration/progs/py_paths.py" "$tmp/dump" "$tmp/fifo" 2>"$tmp/py.err" &
pid=$!
for _ in $(seq 3000); do [ -e "$tmp/dump" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.01; done
[ -e "$tmp/dump" ] || fail "$PY never reached its waiting point: $(tail -3 "$tmp/py.err")"

"$USTACK" snapshot -p $pid --python-only >"$tmp/ustack" 2>"$tmp/ustack.err" ||
	fail "ustack snapshot --python-only exited non-zero: $(head -3 "$tmp/ustack.err")"
gdb -p $pid -batch -nx -iex "add-auto-load-safe-path $EXT" -iex "source $EXT" \
	-ex 'thread apply all py-bt' >"$tmp/gdb" 2>&1 </dev/null
grep -q 'File "' "$tmp/gdb" || fail "gdb's py-bt printed no Python frame: $(grep -v '^$' "$tmp/gdb" | tail -3)"
echo x >"$tmp/fifo"
wait $pid
rc=$?
pid=
if ! /usr/bin/python3 "$TOP/tests/integration/lib/pybt_compare.py" "$tmp/gdb" "$tmp/ustack" >"$tmp/cmp"; then
	sed 's/^/#   /' "$tmp/cmp"
	fail "gdb's py-bt and ustack's Python frames differ"
fi
[ $rc = 0 ] || fail "$PY exited $rc after the snapshot and gdb: $(tail -3 "$tmp/py.err")"
echo "PASS snapshot_python_gdb ($(grep -c '^same' "$tmp/cmp") threads, $(grep -c '^#[0-9]* py ' "$tmp/ustack") Python frames equal to py-bt's)"
