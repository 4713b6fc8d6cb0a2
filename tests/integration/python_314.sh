#!/usr/bin/env bash
# CPython 3.14 and 3.15 (issue 32): Debian sid's python3.14 and python3.15
# in a root file system of their own (bench/container/rootfs.sh with
# SUITE=sid ROOTFS=build/rootfs/sid PACKAGES='python3-minimal
# python3.15-minimal libpython3.14-stdlib libpython3.15-stdlib'; skipped,
# saying so, when it is not there), run
# chrooted. Their layouts come from their own _Py_DebugOffsets, their
# f_executable is a tagged _PyStackRef, and GCC 16 split their eval
# function: most opcodes run in its cold part, which the stripped binary
# does not name.
#
#   python_314_snapshot_<v>  progs/py_paths.py waiting: --python-only equals
#                            the program's own sys._current_frames() (every
#                            thread, qualname, file, line); the whole text
#                            places every run of Python frames (no note)
#   python_314_record_<v>    record --backend bpf of progs/py_writes.py (its
#                            writes after 1.5 s: the recorder's first looks
#                            at a process just exec'd in the chroot find no
#                            interpreter yet; then alive 1 s more, "linger":
#                            a recorder behind on a loaded machine read its
#                            code objects while the interpreter's exit freed
#                            them, "Bad address", docs/cli/record.md; as
#                            record_python), its paths read from the trace
#                            after it is gone: >= 99% of its writes with the
#                            path it counted itself; python_found 1, no code
#                            object unreadable, no stack unplaced, no lost
#   python_314_subinterp_<v>  record --backend bpf of progs/py_subwrites.py
#                            (a thread in a sub-interpreter beside the main
#                            thread): lib/py_subwrites_check.py, each
#                            thread's writes >= 99% with their whole path,
#                            the sub-interpreter's under the main one's;
#                            skipped, saying so, where the root lacks
#                            _interpreters (libpython3.X-stdlib, not in
#                            python3.X-minimal)
#   python_314_refused_<what>  a copy of python3.15 named python3.16 whose
#                            Py_Version and _Py_DebugOffsets say 3.16 (a
#                            layout this build does not know): snapshot and
#                            record each say why in one line (--stats
#                            python_refused 1), native stacks as ever, no
#                            Python frame
set -u
USTACK=${USTACK:-build/check/ustack}
TOP=${TOP:-$PWD}
. "$TOP/tests/integration/lib/python_versions.sh"
py_test_begin python_314 bpf # root: chroot and the bpf backend need it
ROOTFS=${ROOTFS_SID:-$TOP/build/rootfs/sid}
if [ ! -x "$ROOTFS/usr/bin/python3.14" ]; then
	skip python_314 "no Debian sid root with python3.14 at $ROOTFS (SUITE=sid ROOTFS=$ROOTFS PACKAGES='python3-minimal python3.15-minimal libpython3.14-stdlib libpython3.15-stdlib' bench/container/rootfs.sh makes it; needs the network)"
	exit 0
fi
T=/ustack-t314 # inside the root
D=$ROOTFS$T
rm -rf "$D"
mkdir -p "$D"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$D"
}
trap cleanup EXIT
cp "$TOP/tests/integration/progs/py_paths.py" "$TOP/tests/integration/progs/py_writes.py" \
	"$TOP/tests/integration/progs/py_subwrites.py" "$D/"
stat_of() { sed -n "s/^stat $2 //p" "$1"; }

# start_waiting NAME PYTHON: py_paths.py run chrooted by PYTHON (a path in
# the root), its pid in WPID; 0 once it wrote its dump
start_waiting() {
	local d=$D/$1
	mkdir -p "$d"
	mkfifo "$d/fifo"
	chroot "$ROOTFS" "$2" "$T/py_paths.py" "$T/$1/dump" "$T/$1/fifo" 2>"$d/py.err" &
	WPID=$!
	pids+=("$WPID")
	for _ in $(seq 3000); do [ -e "$d/dump" ] && break; kill -0 "$WPID" 2>/dev/null || break; sleep 0.01; done
	[ -e "$d/dump" ]
}

snapshot_version() { # v
	local t=python_314_snapshot_$1 d=$D/snap$1 rc
	if ! start_waiting "snap$1" "/usr/bin/python$1"; then
		fail "$t" "python$1 never reached its waiting point: $(tail -3 "$d/py.err")"
		return
	fi
	"$USTACK" snapshot -p "$WPID" --python-only >"$d/only.text" 2>"$d/only.err" &&
		"$USTACK" snapshot -p "$WPID" --stats >"$d/text" 2>"$d/text.err"
	rc=$?
	echo x >"$d/fifo"
	wait "$WPID" 2>/dev/null
	if [ $rc != 0 ]; then
		fail "$t" "ustack snapshot exited $rc: $(cat "$d/only.err" "$d/text.err" | head -3)"
	elif ! "$PY" "$TOP/tests/integration/lib/py_dump_compare.py" "$d/dump" "$d/only.text" >"$d/cmp"; then
		fail "$t" "the snapshot's Python frames and the program's differ"
		sed 's/^/#   /' "$d/cmp"
	elif grep -q '^# ' "$d/text" || ! grep -q "CPython $1\.[0-9]*" "$d/text.err"; then
		fail "$t" "a run not placed or no CPython named: $(grep '^# ' "$d/text" | head -2) $(grep -i python "$d/text.err" | head -2)"
	else
		pass "$t ($(grep -o "CPython $1[^:]*" "$d/text.err" | head -1); $(grep -c '^F ' "$d/dump") Python frames in $(grep -c '^T ' "$d/dump") threads, every run placed)"
	fi
}

# The program started after 1.5 s of sleep: its paths as it counts them
# start with the wrapper's frames, which the recorded ones have too
WRAP="import runpy, sys, time; time.sleep(1.5); sys.argv = ['py_writes.py'] + sys.argv[1:]; runpy.run_path('$T/py_writes.py', run_name='__main__')"

record_version() { # v
	local t=python_314_record_$1 d=$D/rec$1 out
	mkdir -p "$d"
	# USTACK_DEBUG: the recorder says why a code object was not read
	# ("pid N: code object at 0x...: ERROR"), for a failure to show
	if ! USTACK_DEBUG=1 "$USTACK" record --backend bpf --stats -e syscalls:sys_enter_write -o "$d/t.data" \
		-- chroot "$ROOTFS" "/usr/bin/python$1" -c "$WRAP" 60 threads linger >"$d/prog.txt" 2>"$d/err.txt"; then
		fail "$t" "record failed: $(tail -3 "$d/err.txt")"
		return
	fi
	"$PY" "$TOP/tests/integration/lib/py_trace_paths.py" "$d/t.data" >"$d/rec.txt" ||
		{ fail "$t" "trace unreadable"; return; }
	if ! out=$("$PY" "$TOP/tests/integration/lib/py_paths_compare.py" "$d/prog.txt" "$d/rec.txt"); then
		fail "$t" "$(grep -E 'stat (lost|python_)' "$d/err.txt" | tr '\n' ' '); $(grep -m3 'code object at' "$d/err.txt" | tr '\n' ' '); $out"
	elif [ "$(stat_of "$d/err.txt" lost)" != 0 ] || [ "$(stat_of "$d/err.txt" python_found)" != 1 ] ||
		[ "$(stat_of "$d/err.txt" python_code_unreadable)" != 0 ] ||
		[ "$(stat_of "$d/err.txt" python_not_placed)" != 0 ]; then
		fail "$t" "stats: $(grep -E 'stat (lost|python_)' "$d/err.txt" | tr '\n' ' ')"
	else
		pass "$t ($(awk -F';' '{ n += $1 } END { print n }' "$d/prog.txt") writes)"
	fi
}

subinterp_version() { # v
	local t=python_314_subinterp_$1 d=$D/sub$1
	if ! chroot "$ROOTFS" "/usr/bin/python$1" -c 'import _interpreters' 2>/dev/null; then
		skip "$t" "python$1 in $ROOTFS has no _interpreters (chroot $ROOTFS apt-get install libpython$1-stdlib)"
		return
	fi
	py_subwrites_run "$t" "$d" chroot "$ROOTFS" "/usr/bin/python$1" "$T/py_subwrites.py"
}

# A python3.15 copy that says 3.16: Py_Version and the version word of
# _PyRuntime's _Py_DebugOffsets (its first bytes: cookie, then version)
fake_316() { # out
	"$PY" - "$ROOTFS/usr/bin/python3.15" "$1" <<'EOF'
import struct, subprocess, sys
src, dst = sys.argv[1], sys.argv[2]
data = bytearray(open(src, "rb").read())
syms = {}
for line in subprocess.run(["readelf", "-W", "--dyn-syms", src], capture_output=True, text=True).stdout.splitlines():
    f = line.split()
    if len(f) >= 8 and f[7] in ("_PyRuntime", "Py_Version"):
        syms[f[7]] = int(f[1], 16)
loads = []
for line in subprocess.run(["readelf", "-W", "-l", src], capture_output=True, text=True).stdout.splitlines():
    f = line.split()
    if f and f[0] == "LOAD":
        loads.append((int(f[2], 16), int(f[1], 16), int(f[4], 16)))  # vaddr, offset, filesz
def off(v):
    for va, o, sz in loads:
        if va <= v < va + sz:
            return o + v - va
    sys.exit("no file offset for 0x%x" % v)
rt, ver = off(syms["_PyRuntime"]), off(syms["Py_Version"])
assert data[rt:rt + 8] == b"xdebugpy", "no cookie at _PyRuntime"
old = struct.unpack_from("<I", data, ver)[0]
assert old >> 16 == 0x30f, hex(old)
new = 0x03100000 | (old & 0xffff)
struct.pack_into("<I", data, ver, new)
struct.pack_into("<Q", data, rt + 8, new)
open(dst, "wb").write(data)
EOF
	chmod +x "$1"
}

refused() {
	local d=$D/ref py rc
	mkdir -p "$d"
	if [ ! -x "$ROOTFS/usr/bin/python3.15" ]; then
		skip python_314_refused "no python3.15 in $ROOTFS"
		return
	fi
	if ! fake_316 "$d/python3.16" >"$d/fake.err" 2>&1; then
		fail python_314_refused "could not make the 3.16 copy: $(tail -2 "$d/fake.err")"
		return
	fi
	py=$T/ref/python3.16
	if ! start_waiting ref/w "$py"; then
		fail python_314_refused_snapshot "the 3.16 copy never reached its waiting point: $(tail -3 "$d/w/py.err")"
	else
		"$USTACK" snapshot -p "$WPID" >"$d/text" 2>"$d/err"
		rc=$?
		echo x >"$d/w/fifo"
		wait "$WPID" 2>/dev/null
		if [ $rc = 0 ] && [ "$(wc -l <"$d/err")" = 1 ] &&
			grep -q "Python frames not read: .*python3.16: _Py_DebugOffsets of CPython 3.16 .*this build reads 3.13-3.15" "$d/err" &&
			! grep -q '^#[0-9]* py ' "$d/text" && grep -q 'Py_BytesMain' "$d/text"; then
			pass "python_314_refused_snapshot ($(cat "$d/err"))"
		else
			fail python_314_refused_snapshot "exit $rc, stderr: $(cat "$d/err")"
		fi
	fi
	py_refused_record python_314_refused_record "$d/rec" \
		".*python3.16: _Py_DebugOffsets of CPython 3.16 .*this build reads 3.13-3.15" \
		chroot "$ROOTFS" "$py"
}

for v in 3.14 3.15; do
	if [ ! -x "$ROOTFS/usr/bin/python$v" ]; then
		skip "python_314_snapshot_$v" "no python$v in $ROOTFS"
		skip "python_314_record_$v" "no python$v in $ROOTFS"
		skip "python_314_subinterp_$v" "no python$v in $ROOTFS"
		continue
	fi
	snapshot_version "$v"
	record_version "$v"
	subinterp_version "$v"
done
refused
[ "$fails" = 0 ]
