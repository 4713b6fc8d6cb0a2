#!/usr/bin/env bash
# The in-process backtrace's whole-stack cache never serves a stale frame:
# same pcs with other frame sizes, one capture pc reached from other
# callers, and a library dlclose()d and replaced by another build of
# different frame sizes at the same address (progs/bt_stackcache.c says
# how each is checked: against glibc's backtrace() and against the walk
# with the cache off). Built -O2 -fomit-frame-pointer -Wa,--gsframe, the
# program uninstrumented, linked with the ASan+UBSan library of make check.
#
# Env (from make check): CHECK_DIR CC GSFRAME SAN_FLAGS LIB_LDLIBS TOP.
set -u
T=backtrace_stackcache
: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${CHECK_DIR:=build/check}" "${CC:=gcc}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf}"
: "${SAN_FLAGS:=-fsanitize=address,undefined -fno-sanitize-recover=undefined}"
cd "$TOP" || exit 1

if [ ! -f "$CHECK_DIR/libustack.a" ]; then
	echo "FAIL $T: $CHECK_DIR/libustack.a missing (make check builds it)"
	exit 1
fi
mkdir -p "$TOP/$CHECK_DIR/it"
OUT=$(mktemp -d "$TOP/$CHECK_DIR/it/bt_stackcache.XXXXXX") || exit 1
P=tests/integration/progs
CF=(-std=gnu11 -O2 -fomit-frame-pointer ${GSFRAME:-} -D_GNU_SOURCE -Iinclude -Isrc -Wall)
fail=0
for pad in 32 64; do
	if ! "$CC" "${CF[@]}" -fPIC -shared -DPAD=$pad -o "$OUT/libsc$pad.so" $P/bt_stackcache_lib.c \
		>"$OUT/lib$pad.log" 2>&1; then
		echo "FAIL $T: cannot build bt_stackcache_lib.c: $(head -3 "$OUT/lib$pad.log")"
		exit 1
	fi
done
# asan: the check library (its allocator quarantines freed memory, so a
# new link map never reuses the old one's address); release: build/libustack.a
# and glibc's malloc, where dlopen() after dlclose() usually gets the same
# link map at the same address (only the build ID tells the files apart)
if ! "$CC" "${CF[@]}" -c -o "$OUT/bt_stackcache.o" $P/bt_stackcache.c >"$OUT/cc.log" 2>&1; then
	echo "FAIL $T: cannot build bt_stackcache.c: $(head -5 "$OUT/cc.log")"
	exit 1
fi
for v in asan release; do
	if [ $v = asan ]; then lib=$CHECK_DIR/libustack.a san=$SAN_FLAGS; else lib=build/libustack.a san=; fi
	if [ ! -f "$lib" ]; then
		echo "SKIP $T/$v: $lib not built"
		continue
	fi
	if ! "$CC" $san -o "$OUT/bt_stackcache_$v" "$OUT/bt_stackcache.o" "$lib" $LIB_LDLIBS \
		>>"$OUT/cc.log" 2>&1; then
		echo "FAIL $T/$v: cannot link bt_stackcache.c: $(head -5 "$OUT/cc.log")"
		fail=1
		continue
	fi
	"$OUT/bt_stackcache_$v" "$OUT/libsc32.so" "$OUT/libsc64.so" | sed "s|bt_stackcache/|bt_stackcache/$v/|"
	rc=${PIPESTATUS[0]}
	if [ $rc -gt 1 ]; then
		echo "FAIL $T/$v: crashed or aborted (exit status $rc)"
	fi
	[ $rc -ne 0 ] && fail=1
done
if [ $fail -eq 0 ]; then rm -rf "$OUT"; else echo "# binaries kept in $OUT"; fi
exit $fail
