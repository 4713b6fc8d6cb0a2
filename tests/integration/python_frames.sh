#!/usr/bin/env bash
# The CPython frame reader (src/python/) against the program's own view:
# tests/integration/progs/py_paths.py reaches a waiting point through paths
# it knows (recursion, a class method, a generator, a lambda called back by
# sorted()), a second thread waits in another function, and the program
# writes every thread's frames as sys._current_frames() and f_back give
# them (qualname, file, line) before it waits. py_frames_dump reads the
# process from outside (stopped meanwhile) through the internal API.
#
#   python_frames_<version>   every thread of the dump: the same frames,
#                             innermost first, the chain read to its end;
#                             the lambda sorted() called and <module> are
#                             marked ENTRY (a C-level eval call ran them),
#                             leaf (called from Python) is not
#   python_frames_refused     CPython 3.10: ENOTSUP and one line naming it
# Versions: Debian's /usr/bin/python3.11 and pyenv's 3.11.7, 3.12.1, 3.13.0
# where installed (SKIP naming each one that is not).
set -u
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
. "$TOP/tests/integration/lib/python_versions.sh"
CHECK_DIR=${CHECK_DIR:-build/check}
: "${BASE_CFLAGS:=-std=gnu11 -g -O2 -D_GNU_SOURCE}" "${SAN_FLAGS:=-fsanitize=address,undefined}" "${LIB_LDLIBS:=-lpthread -ldl}"
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $1: $2"; }

PY=/usr/bin/python3 # the comparison; `python3` on PATH may be a pyenv shim
[ -x "$PY" ] || { skip python_frames "no $PY for the comparison"; exit 0; }
if [ "$(id -u)" != 0 ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" != 0 ]; then
	skip python_frames "not root and yama ptrace_scope != 0: process_vm_readv of a sibling is refused"
	exit 0
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
P=$TOP/tests/integration/progs
if ! $CC $BASE_CFLAGS $SAN_FLAGS -I"$TOP/include" -I"$TOP/src" -o "$tmp/py_frames_dump" \
	"$P/py_frames_dump.c" "$TOP/$CHECK_DIR/libustack.a" $LIB_LDLIBS 2>"$tmp/cc.err"; then
	fail python_frames "cannot build py_frames_dump: $(head -5 "$tmp/cc.err")"
	exit 1
fi

# compare.py DUMP READ: the program's threads must be in the reader's
# output with the same frames (flags aside) and no early stop; then the
# ENTRY marks of the main thread's path
cat >"$tmp/compare.py" <<'PYEOF'
import sys
def blocks(path, with_flags):
    out, cur = {}, None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("T "):
            cur = out.setdefault(int(line[2:]), [])
        elif line.startswith("F ") and cur is not None:
            cur.append(line[2:] if with_flags else line[2:])
        elif line.startswith("S ") and cur is not None:
            cur.append("STOP " + line[2:])
    return out
want, got = blocks(sys.argv[1], False), blocks(sys.argv[2], True)
bad = 0
for tid, frames in want.items():
    g = got.get(tid)
    if g is None:
        print("# thread %d: not in the reader's output (threads: %s)" % (tid, sorted(got))); bad += 1; continue
    plain = [f if f.startswith("STOP") else f.rsplit("|", 1)[0] for f in g]
    if plain != frames:
        print("# thread %d differs:\n#   program: %s\n#   reader:  %s" % (tid, frames, plain)); bad += 1
extra = [t for t in got if t not in want and got[t]]
if extra:
    print("# threads with frames the program did not list: %s" % extra); bad += 1
main = next((g for g in got.values() if any(f.startswith("leaf|") for f in g)), None)
if main is None:
    print("# no thread in leaf()"); bad += 1
else:
    flags = {f.split("|")[0]: int(f.rsplit("|", 1)[1]) for f in main if not f.startswith("STOP")}
    for name, want_entry in (("Walker.step.<locals>.<lambda>", 1), ("<module>", 1), ("leaf", 0)):
        if (flags.get(name, -1) & 1) != want_entry:
            print("# %s: flags %s, ENTRY wanted %s" % (name, flags.get(name), bool(want_entry))); bad += 1
sys.exit(1 if bad else 0)
PYEOF

run_version() { # name python
	local name=$1 py=$2 d=$tmp/$1
	mkdir -p "$d"
	mkfifo "$d/fifo"
	"$py" "$P/py_paths.py" "$d/dump" "$d/fifo" 2>"$d/py.err" &
	local pid=$!
	pids+=("$pid")
	for _ in $(seq 3000); do [ -e "$d/dump" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
	if [ ! -e "$d/dump" ]; then
		fail "python_frames_$name" "$py never reached its waiting point: $(tail -3 "$d/py.err")"
		return
	fi
	"$tmp/py_frames_dump" "$pid" >"$d/read" 2>"$d/read.err"
	local rc=$?
	echo x >"$d/fifo"
	wait "$pid" 2>/dev/null
	local prc=$?
	if [ "$rc" != 0 ]; then
		fail "python_frames_$name" "py_frames_dump exited $rc: $(cat "$d/read.err")"
		return
	fi
	if "$PY" "$tmp/compare.py" "$d/dump" "$d/read" >"$d/cmp"; then
		pass "python_frames_$name ($(sed -n 's/^# //p' "$d/read.err"), $(grep -c '^F ' "$d/dump") frames in $(grep -c '^T ' "$d/dump") threads)"
	else
		fail "python_frames_$name" "the reader and the program disagree"
		cat "$d/cmp"
		sed 's/^/#   read: /' "$d/read"
	fi
	[ "$prc" = 0 ] || fail "python_frames_$name" "$py exited $prc after the read: $(tail -3 "$d/py.err")"
}

py_each_version python_frames run_version

# --- an unsupported version: refused, one line naming it --------------------------
py310=$PY_UNSUPPORTED
if ! py_start_unsupported "$tmp/310.out"; then
	skip python_frames_refused "$py310 is not installed (no unsupported CPython to try)"
else
	pid=$PY_PID
	pids+=("$pid")
	"$tmp/py_frames_dump" "$pid" >"$tmp/310.read" 2>"$tmp/310.err"
	rc=$?
	if [ "$rc" = 95 ] && [ "$(wc -l <"$tmp/310.err")" = 1 ] &&
		grep -q 'python3\.10.*: CPython 3\.10 is not supported (3\.11-3\.15)' "$tmp/310.err"; then
		pass "python_frames_refused ($(cat "$tmp/310.err"))"
	else
		fail python_frames_refused "exit $rc (want 95, ENOTSUP), stderr: $(cat "$tmp/310.err")"
	fi
fi
[ "$fails" = 0 ]
