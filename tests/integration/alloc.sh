#!/usr/bin/env bash
# `ustack record --alloc` (BPF backend) against an oracle. Each PASS/FAIL
# line is `alloc/CASE`; where the allocator cannot be probed (no BPF
# backend, no uprobe PMU, the allocator functions not resolved) the cases
# are `SKIP alloc/CASE: REASON` with the recorder's line.
#
# The oracle is progs/alloc_paths.c: allocations of known sizes from three
# call paths (malloc; calloc, realloc(NULL, n), realloc growing a block;
# posix_memalign, aligned_alloc, memalign, valloc, pvalloc), part of them
# freed, its own calls, bytes and live bytes per path printed before it
# exits. progs/alloc_events.c prints each "alloc" (weight, size, address,
# named stack) and "free" of the trace; lib/alloc_record_check.py judges them
# (per path by the allocation's leaf frame, which must be the path's
# function, called from main):
#   exact    --alloc-mean 1: per path the allocations, bytes and live bytes
#            at the end exactly the program's (realloc(NULL, n), which calls
#            malloc inside glibc, counted once; pvalloc counted in pages;
#            frees matched by address), each weight its size; the stats
#            agree with the trace, alloc_calls >= the program's calls
#   exact-nest the same program linked to a stand-in allocator of ours
#            (progs/alloc_wrap.c, named libjemalloc.so.2: record --alloc
#            probes it instead of libc) whose realloc(NULL, n) calls its
#            malloc (a real call, not glibc's tail jump), recorded with -p
#            (the allocator found in the process's mappings) and a command
#            that starts the program's rounds once the probes are attached:
#            as exact, each realloc(NULL, n) counted once
#   exact-uprobes, sampled-uprobes  exact and sampled with
#            --alloc-via=uprobes (a command gets libustack-alloc.so by
#            default: exact and sampled judge that way, stat alloc_via says
#            which was used)
#   exact-exe the stand-in allocator linked into the program itself (the
#            executable defines malloc, exported: libc's and a preloaded
#            library's never run): auto probes the executable's functions
#            with uprobes, says why in one line, and judges as exact-nest
#   children exact, the program a child of the command (sh -c 'PROG; true'):
#            the preload's probes serve every process, the kernel program
#            keeps the traced ones; the allocations the child makes before
#            the recorder has read its new executable's mappings are in
#            the trace with unnamed frames, and only that many may be
#            missing from its paths (the BPF walk has no table for a file
#            it has not been told of yet)
#   refused  --alloc-via=preload with -p, for a statically linked command
#            and for one defining malloc: refused with one line naming why
#   stress   progs/alloc_stress.c (4 threads, every function of the family,
#            blocks freed by another thread, realloc keeping the bytes, a
#            fork now and then whose child allocates and _exit()s) under
#            --alloc-mean 1 with a table of 64 kept blocks (full: counted in
#            alloc_live_dropped) and under the default mean: the program's
#            checks hold, and alloc_calls is its count plus the 40 children's
#            mallocs (they are recorded) within 200 of libc's own, the same
#            both ways (counts told at hits, thread exits and _exit)
#   tailcalls scripts/check-tail-calls.sh passes the built
#            libustack-alloc.so and fails one built at -O0 (no tail calls:
#            the library's frames would be on the stacks)
#   sampled  --alloc-mean 8192, 2000 rounds: per path the estimates of
#            bytes, allocations and live bytes within 5.5 standard
#            deviations of the estimator (derived in lib/alloc_record_check.py
#            from the program's size mix: 0.6-1.2% of the bytes here, so
#            weights that were the sizes, about 25-50% of the bytes for
#            these sizes, fail surely), and each weight s/(1 - exp(-s/M))
#
# Env (from make check): USTACK CC TOP CHECK_DIR SAN_FLAGS BASE_CFLAGS
# LIB_LDLIBS; KEEP_TMP=1 keeps the files.
set -u
T=alloc
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
: "${SAN_FLAGS:=-fsanitize=address,undefined}" "${LIB_LDLIBS:=-lpthread -ldl}"
: "${BASE_CFLAGS:=-std=gnu11 -g -O2 -D_GNU_SOURCE}"
fails=0
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $T/$1: $2"; }
CASES="exact exact-uprobes exact-nest exact-exe children refused stress tailcalls sampled sampled-uprobes"
skip_all() { for c in $CASES; do skip "$c" "$1"; done; exit 0; }

[ -x "$USTACK" ] || { fail setup "no $USTACK"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root (BPF programs on uprobes)"
[ -r /sys/bus/event_source/devices/uprobe/type ] ||
	skip_all "no uprobe PMU (/sys/bus/event_source/devices/uprobe/type)"
tmp=$(mktemp -d /tmp/ustack-alloc-XXXXXX)
cleanup() { [ -n "${KEEP_TMP:-}" ] && echo "# files kept in $tmp" || rm -rf "$tmp"; }
trap cleanup EXIT
P=$TOP/tests/integration/progs
CHECK=$TOP/tests/integration/lib/alloc_record_check.py

if ! $CC -O2 -fno-builtin -fomit-frame-pointer -Wall -o "$tmp/paths" "$P/alloc_paths.c" 2>"$tmp/build.log" ||
   ! $CC $BASE_CFLAGS $SAN_FLAGS -I"$TOP/include" -o "$tmp/events" "$P/alloc_events.c" \
	"$TOP/$CHECK_DIR/libustack.a" $LIB_LDLIBS 2>>"$tmp/build.log"; then
	fail build "$(head -5 "$tmp/build.log" | tr '\n' '|')"
	exit 1
fi
mkdir "$tmp/wrap"
if ! $CC -O2 -fPIC -shared -fomit-frame-pointer -Wall -o "$tmp/wrap/libjemalloc.so.2" \
	"$P/alloc_wrap.c" 2>"$tmp/build.log" ||
   ! $CC -O2 -fno-builtin -fomit-frame-pointer -Wall -o "$tmp/paths_wrap" "$P/alloc_paths.c" -L"$tmp/wrap" \
	-Wl,--no-as-needed -l:libjemalloc.so.2 -Wl,-rpath,"$tmp/wrap" 2>>"$tmp/build.log"; then
	fail build "$(head -5 "$tmp/build.log" | tr '\n' '|')"
	exit 1
fi

# run NAME MEAN ROUNDS: the program under `ustack record --alloc`; its
# figures, events and stats in $tmp/NAME.*. 1: judged (or failed), 2: the
# recorder cannot probe the allocator here (SKIP printed). NEST_PID: record
# that process (-p) instead, started by a command writing to $tmp/go. VIA:
# --alloc-via's value (the default: none given), WANT_VIA the stat
# alloc_via expected; CHILD=1: the program a child of the command.
run() {
	local name=$1 mean=$2 rounds=$3 target via=() want_via=${WANT_VIA:-preload}
	[ -n "${VIA:-}" ] && via=(--alloc-via "$VIA")
	if [ -n "${CHILD:-}" ]; then
		target=(-- sh -c "'$tmp/paths' $rounds; true")
	elif [ -n "${NEST_PID:-}" ]; then
		# its rounds start when the command runs, after the attachment;
		# the command ends when the program has exited (a zombie: ours)
		target=(-p "$NEST_PID" -- sh -c "echo go > '$tmp/go'; while [ -e /proc/$NEST_PID ] &&
			[ \"\$(cut -d' ' -f3 /proc/$NEST_PID/stat 2>/dev/null)\" != Z ]; do sleep 0.05; done")
	else
		target=(-- "${PROG:-$tmp/paths}" "$rounds")
	fi
	if ! "$USTACK" record -q --stats --backend bpf --alloc --alloc-mean "$mean" "${via[@]}" \
		-o "$tmp/$name.data" "${target[@]}" >"$tmp/$name.rec" 2>"$tmp/$name.stats"; then
		local why
		why=$(grep -v '^stat ' "$tmp/$name.stats" | head -2 | tr '\n' '|')
		case $why in
		*"not resolved yet"*|*"BPF backend:"*"load"*|*"libbpf"*|*"BTF"*)
			skip "$name" "$why"; return 2 ;;
		esac
		fail "$name" "record failed: $why"
		return 1
	fi
	if ! grep -qx "stat alloc_via $want_via" "$tmp/$name.stats"; then
		fail "$name" "stat alloc_via: '$(grep '^stat alloc_via' "$tmp/$name.stats")', want $want_via"
		return 1
	fi
	[ -n "${NEST_PID:-}" ] || mv "$tmp/$name.rec" "$tmp/$name.out"
	if ! "$tmp/events" "$tmp/$name.data" >"$tmp/$name.ev" 2>"$tmp/$name.everr"; then
		fail "$name" "alloc_events: $(head -3 "$tmp/$name.everr" | tr '\n' '|')"
		return 1
	fi
	python3 "$CHECK" "${name%%-*}" "$tmp/$name.out" "$tmp/$name.ev" "$tmp/$name.stats" \
		>"$tmp/$name.check" 2>&1
	grep -v '^RESULT' "$tmp/$name.check"
	if grep -q '^RESULT ok' "$tmp/$name.check"; then
		pass "$name"
	else
		fail "$name" "$(grep -m1 '^RESULT' "$tmp/$name.check" | cut -d' ' -f3- | cut -c1-400)"
	fi
}

run exact 1 300
[ $? -eq 2 ] && { for c in $CASES; do [ $c = exact ] || skip $c "as exact"; done; exit 0; }
VIA=uprobes WANT_VIA=uprobes run exact-uprobes 1 300
mkfifo "$tmp/go"
"$tmp/paths_wrap" 300 "$tmp/go" >"$tmp/exact-nest.out" &
NEST_PID=$!
WANT_VIA=uprobes run exact-nest 1 300
kill -KILL "$NEST_PID" 2>/dev/null
wait "$NEST_PID" 2>/dev/null
NEST_PID=
# the same stand-in allocator linked into the executable itself: its
# malloc is the program's (and, exported, libc's callers'), so neither
# libc's nor a preloaded one ever runs: auto probes the executable's
if $CC -O2 -fno-builtin -fomit-frame-pointer -Wall -o "$tmp/paths_exe" "$P/alloc_paths.c" \
	"$P/alloc_wrap.c" 2>"$tmp/build_exe.log"; then
	PROG=$tmp/paths_exe WANT_VIA=uprobes run exact-exe 1 300
	if ! grep -q "paths_exe defines malloc itself: .*get uprobes instead" "$tmp/exact-exe.stats"; then
		fail exact-exe "no line saying why the preload was not used: $(grep -v '^stat ' "$tmp/exact-exe.stats" | head -2 | tr '\n' '|')"
	fi
else
	fail exact-exe "build: $(head -3 "$tmp/build_exe.log" | tr '\n' '|')"
fi
CHILD=1 run children 1 300

# refused: one line each, naming why; nothing recorded
refused_ok=1
sleep 30 &
sleeper=$!
"$USTACK" record -q --alloc --alloc-via preload -p "$sleeper" -o "$tmp/r1.data" -- true \
	>/dev/null 2>"$tmp/r1.err"
r1=$?
kill "$sleeper" 2>/dev/null
wait "$sleeper" 2>/dev/null
if [ $r1 -eq 0 ] || ! grep -q "alloc-via=preload: only for a command" "$tmp/r1.err"; then
	fail refused "-p: status $r1, $(head -2 "$tmp/r1.err" | tr '\n' '|')"
	refused_ok=0
fi
if printf 'int main(void) { return 0; }\n' | $CC -static -o "$tmp/static" -x c - 2>/dev/null; then
	"$USTACK" record -q --alloc --alloc-via preload -o "$tmp/r2.data" -- "$tmp/static" \
		>/dev/null 2>"$tmp/r2.err"
	r2=$?
	if [ $r2 -eq 0 ] || ! grep -q "static is statically linked: LD_PRELOAD cannot load" "$tmp/r2.err" ||
	   [ "$(wc -l <"$tmp/r2.err")" -ne 1 ]; then
		fail refused "static: status $r2, $(head -2 "$tmp/r2.err" | tr '\n' '|')"
		refused_ok=0
	fi
else
	echo "# no static libc: the static command not tried"
fi
if [ -x "$tmp/paths_exe" ]; then
	"$USTACK" record -q --alloc --alloc-via preload -o "$tmp/r3.data" -- "$tmp/paths_exe" 1 \
		>/dev/null 2>"$tmp/r3.err"
	r3=$?
	if [ $r3 -eq 0 ] || ! grep -q "paths_exe defines malloc itself: an LD_PRELOADed malloc never runs" "$tmp/r3.err"; then
		fail refused "an executable defining malloc: status $r3, $(head -2 "$tmp/r3.err" | tr '\n' '|')"
		refused_ok=0
	fi
fi
[ $refused_ok -eq 1 ] && pass refused

# stress
stress_ok=1
if ! $CC -O2 -pthread -Wall -o "$tmp/stress" "$P/alloc_stress.c" 2>"$tmp/stress.build"; then
	fail stress "build: $(head -3 "$tmp/stress.build" | tr '\n' '|')"
	stress_ok=0
fi
for how in "1 64" "524288 1048576"; do
	[ $stress_ok -eq 1 ] || break
	set -- $how
	"$USTACK" record -q --stats --alloc --alloc-mean "$1" --alloc-live-max "$2" -o "$tmp/stress.data" \
		-- "$tmp/stress" 4 20000 >"$tmp/stress.out" 2>"$tmp/stress.stats"
	rc=$?
	calls=$(awk '$2 == "alloc_calls" { print $3 }' "$tmp/stress.stats")
	dropped=$(awk '$2 == "alloc_live_dropped" { print $3 }' "$tmp/stress.stats")
	want=$(( $(awk '$1 == "ok" { print $2 }' "$tmp/stress.out" 2>/dev/null || echo 0) + 40 ))
	if [ $rc -ne 0 ] || ! grep -q '^ok ' "$tmp/stress.out" || [ -z "$calls" ] ||
	   [ "$calls" -lt "$want" ] || [ "$calls" -gt $((want + 200)) ] ||
	   { [ "$2" = 64 ] && [ "${dropped:-0}" -eq 0 ]; }; then
		fail stress "mean $1 live-max $2: status $rc, alloc_calls '$calls' (want $want..+200), live_dropped '$dropped', $(grep -v '^stat ' "$tmp/stress.stats" | head -2 | tr '\n' '|')"
		stress_ok=0
	fi
done
[ $stress_ok -eq 1 ] && pass stress

# tailcalls: the check passes what the build made and fails a build
# without tail calls
so=$(dirname "$USTACK")/libustack-alloc.so
if ! bash "$TOP/scripts/check-tail-calls.sh" "$so" 2>"$tmp/tc.err"; then
	fail tailcalls "the built $so: $(head -2 "$tmp/tc.err" | tr '\n' '|')"
elif ! $CC -std=gnu11 -O0 -fPIC -shared -D_GNU_SOURCE -I"$TOP/src" -I"$TOP/include" \
	-o "$tmp/O0.so" "$TOP/src/preload/alloc.c" 2>"$tmp/tc.err"; then
	fail tailcalls "building at -O0: $(head -2 "$tmp/tc.err" | tr '\n' '|')"
elif bash "$TOP/scripts/check-tail-calls.sh" "$tmp/O0.so" 2>"$tmp/tc.err"; then
	fail tailcalls "the -O0 build, which calls the hit, passed the check"
else
	pass tailcalls
fi

run sampled 8192 2000
VIA=uprobes WANT_VIA=uprobes run sampled-uprobes 8192 2000
[ "$fails" -eq 0 ]
