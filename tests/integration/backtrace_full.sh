#!/usr/bin/env bash
# ustack_backtrace() on whole stacks (leaf to _start) of distinct paths
# through 64 functions of three frame shapes, frame for frame against
# libunwind's unw_backtrace() and, in another build, glibc's backtrace():
# every depth 1..200,
# under a timer signal (and from its handler), four threads at once, and
# through a library dlclose()d and replaced by another build at the same
# address, and called back from qsort() (libc mid-stack) (progs/bt_full.c
# says how each is checked). Built -O2
# -fomit-frame-pointer without SFrame (.eh_frame only, what distributions
# ship) and with -Wa,--gsframe; linked with the ASan+UBSan library of make
# check and with the release library.
#
# Env (from make check): CHECK_DIR CC GSFRAME SAN_FLAGS LIB_LDLIBS TOP.
set -u
T=backtrace_full
: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${CHECK_DIR:=build/check}" "${CC:=gcc}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf}"
: "${SAN_FLAGS:=-fsanitize=address,undefined -fno-sanitize-recover=undefined}"
cd "$TOP" || exit 1

if [ ! -f /usr/include/libunwind.h ] && [ ! -f /usr/include/x86_64-linux-gnu/libunwind.h ]; then
	echo "SKIP $T: libunwind.h missing (apt-get install libunwind-dev): libunwind is the oracle"
	exit 0
fi
mkdir -p "$TOP/$CHECK_DIR/it"
OUT=$(mktemp -d "$TOP/$CHECK_DIR/it/bt_full.XXXXXX") || exit 1
P=tests/integration/progs
fail=0
bash bench/backtrace/gen_full.sh >"$OUT/full_gen.c" || exit 1
for pad in 32 64; do
	if ! "$CC" -std=gnu11 -O2 -fomit-frame-pointer -fPIC -shared -DPAD=$pad \
		-o "$OUT/libbf$pad.so" $P/bt_full_lib.c >"$OUT/lib$pad.log" 2>&1; then
		echo "FAIL $T: cannot build bt_full_lib.c: $(head -3 "$OUT/lib$pad.log")"
		exit 1
	fi
done
# the oracle: libunwind (-lunwind, which also takes the name backtrace()) or
# glibc's backtrace(), one per program; ASan intercepts backtrace()
for v in cfi-asan-unw cfi-release-unw cfi-release-glibc sframe-release-unw sframe-release-glibc; do
	case $v in
	*-asan-*) lib=$CHECK_DIR/libustack.a san=$SAN_FLAGS ;;
	*) lib=build/libustack.a san= ;;
	esac
	case $v in
	sframe-*) sf=${GSFRAME:-} ;;
	*) sf= ;;
	esac
	case $v in
	*-unw) peer=(-DBT_UNW) peerlib=-lunwind modes="depths signals threads libc dlopen" ;;
	*) peer=() peerlib= modes="depths threads libc dlopen" ;;
	esac
	if [ ! -f "$lib" ]; then
		echo "SKIP $T/$v: $lib not built"
		continue
	fi
	if [ "${v%%-*}" = sframe ] && [ -z "$sf" ]; then
		echo "SKIP $T/$v: the assembler cannot emit SFrame (needs binutils >= 2.40)"
		continue
	fi
	# the program uninstrumented (the generated code overflows ints on
	# purpose), linked with the sanitizers' runtime for the library
	if ! "$CC" -std=gnu11 -O2 -fomit-frame-pointer $sf -D_GNU_SOURCE -Iinclude -Ibench/backtrace \
		"${peer[@]}" -Wall -c -o "$OUT/bt_full_$v.o" $P/bt_full.c >"$OUT/cc_$v.log" 2>&1 ||
	   ! "$CC" -std=gnu11 -O2 -fomit-frame-pointer $sf -Ibench/backtrace -c \
		-o "$OUT/full_gen_$v.o" "$OUT/full_gen.c" >>"$OUT/cc_$v.log" 2>&1 ||
	   ! "$CC" -c -o "$OUT/drap.o" $P/bt_full_drap.S >>"$OUT/cc_$v.log" 2>&1 ||
	   ! "$CC" $san -o "$OUT/bt_full_$v" "$OUT/bt_full_$v.o" "$OUT/full_gen_$v.o" "$OUT/drap.o" \
		"$lib" $peerlib $LIB_LDLIBS -lrt >>"$OUT/cc_$v.log" 2>&1; then
		echo "FAIL $T/$v: cannot build bt_full.c: $(head -5 "$OUT/cc_$v.log")"
		fail=1
		continue
	fi
	for mode in $modes; do
		out=$("$OUT/bt_full_$v" $mode "$OUT/libbf32.so" "$OUT/libbf64.so" 2>&1)
		rc=$?
		if [ $rc -eq 0 ] && [ "${out#OK }" != "$out" ]; then
			echo "PASS $T/$v/$mode: ${out#OK $mode }"
		else
			echo "FAIL $T/$v/$mode (exit status $rc):"
			printf '%s\n' "$out" | head -20 | sed 's/^/  | /'
			fail=1
		fi
	done
done
if [ $fail -eq 0 ]; then rm -rf "$OUT"; else echo "# binaries kept in $OUT"; fi
exit $fail
