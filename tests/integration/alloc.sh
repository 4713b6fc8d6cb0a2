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
# named stack) and "free" of the trace; lib/alloc_check.py judges them
# (per path by the allocation's leaf frame, which must be the path's
# function, called from main):
#   exact    --alloc-mean 1: per path the allocations, bytes and live bytes
#            at the end exactly the program's (realloc(NULL, n), which calls
#            malloc inside glibc, counted once; pvalloc counted in pages;
#            frees matched by address), each weight its size; the stats
#            agree with the trace, alloc_calls >= the program's calls
#   sampled  --alloc-mean 8192, 2000 rounds: per path the estimates of
#            bytes, allocations and live bytes within 5.5 standard
#            deviations of the estimator (derived in lib/alloc_check.py
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
CASES="exact sampled"
skip_all() { for c in $CASES; do skip "$c" "$1"; done; exit 0; }

[ -x "$USTACK" ] || { fail setup "no $USTACK"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip_all "needs root (BPF programs on uprobes)"
[ -r /sys/bus/event_source/devices/uprobe/type ] ||
	skip_all "no uprobe PMU (/sys/bus/event_source/devices/uprobe/type)"
tmp=$(mktemp -d /tmp/ustack-alloc-XXXXXX)
cleanup() { [ -n "${KEEP_TMP:-}" ] && echo "# files kept in $tmp" || rm -rf "$tmp"; }
trap cleanup EXIT
P=$TOP/tests/integration/progs
CHECK=$TOP/tests/integration/lib/alloc_check.py

if ! $CC -O2 -fomit-frame-pointer -Wall -o "$tmp/paths" "$P/alloc_paths.c" 2>"$tmp/build.log" ||
   ! $CC $BASE_CFLAGS $SAN_FLAGS -I"$TOP/include" -o "$tmp/events" "$P/alloc_events.c" \
	"$TOP/$CHECK_DIR/libustack.a" $LIB_LDLIBS 2>>"$tmp/build.log"; then
	fail build "$(head -5 "$tmp/build.log" | tr '\n' '|')"
	exit 1
fi

# run NAME MEAN ROUNDS: the program under `ustack record --alloc`; its
# figures, events and stats in $tmp/NAME.*. 1: judged (or failed), 2: the
# recorder cannot probe the allocator here (SKIP printed)
run() {
	local name=$1 mean=$2 rounds=$3
	if ! "$USTACK" record -q --stats --backend bpf --alloc --alloc-mean "$mean" \
		-o "$tmp/$name.data" -- "$tmp/paths" "$rounds" >"$tmp/$name.out" 2>"$tmp/$name.stats"; then
		local why
		why=$(grep -v '^stat ' "$tmp/$name.stats" | head -2 | tr '\n' '|')
		case $why in
		*"not resolved yet"*|*"BPF backend:"*"load"*|*"libbpf"*|*"BTF"*)
			skip "$name" "$why"; return 2 ;;
		esac
		fail "$name" "record failed: $why"
		return 1
	fi
	if ! "$tmp/events" "$tmp/$name.data" >"$tmp/$name.ev" 2>"$tmp/$name.everr"; then
		fail "$name" "alloc_events: $(head -3 "$tmp/$name.everr" | tr '\n' '|')"
		return 1
	fi
	python3 "$CHECK" "$name" "$tmp/$name.out" "$tmp/$name.ev" "$tmp/$name.stats" \
		>"$tmp/$name.check" 2>&1
	grep -v '^RESULT' "$tmp/$name.check"
	if grep -q '^RESULT ok' "$tmp/$name.check"; then
		pass "$name"
	else
		fail "$name" "$(grep -m1 '^RESULT' "$tmp/$name.check" | cut -d' ' -f3- | cut -c1-400)"
	fi
}

run exact 1 300
[ $? -eq 2 ] && { skip sampled "as exact"; exit 0; }
run sampled 8192 2000
[ "$fails" -eq 0 ]
