#!/usr/bin/env bash
# ustack_backtrace() on the DWARF CFI path against glibc backtrace(), over
# the WHOLE stack (down to _start or clone3), in code that has no SFrame and
# no frame pointers: programs built -O2 -fomit-frame-pointer without
# -Wa,--gsframe, whose stacks run through libc (qsort, twalk,
# dl_iterate_phdr, raise, start_thread), signal frames (raise, sigaltstack,
# asynchronous SIGPROF / SIGALRM timers), libstdc++ and libgcc_s (a throw
# through noexcept calling std::terminate from the personality routine, a
# destructor during unwinding, a streambuf override, call_once, std::sort,
# std::thread) and a dlopen()ed library. Every frame must be identical to
# glibc's, found by CFI (by SIGNAL right after __restore_rt), never by the
# frame-pointer heuristic; each case runs 200 times (200 samples for the
# timers). See tests/integration/progs/cfi_common.h for what is checked.
#
# Variants of each program:
#   asan      PIE, linked with $CHECK_DIR/libustack.a and $SAN_FLAGS
#   release   PIE, build/libustack.a (no sanitizers)
#   static    -static, build/libustack.a (the library code linked in)
# The programs themselves are never instrumented: ASan would change their
# frames (and SAN_FLAGS turns frame pointers on); only libustack is.
#
# Env (from make check): CHECK_DIR CC SAN_FLAGS LIB_LDLIBS TOP; CXX (g++),
# CFI_ITERS (iterations per case, default 200).
set -u
T=backtrace_cfi
: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${CHECK_DIR:=build/check}" "${CC:=gcc}" "${CXX:=g++}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf}"
: "${SAN_FLAGS:=-fsanitize=address,undefined -fno-sanitize-recover=undefined}"
cd "$TOP" || exit 1

mkdir -p "$TOP/$CHECK_DIR/it"
OUT=$(mktemp -d "$TOP/$CHECK_DIR/it/bt_cfi.XXXXXX") || exit 1
P=tests/integration/progs
# no $GSFRAME here, on purpose: this is the path without SFrame
COMMON=(-O2 -fomit-frame-pointer -D_GNU_SOURCE -Iinclude -I$P -Wall -Wextra)
CF=(-std=gnu11 "${COMMON[@]}")
CXF=(-std=gnu++17 "${COMMON[@]}")
fail=0

build() { # name, command...
	local name=$1; shift
	local log="$OUT/$name.build.log"
	if ! "$@" >"$log" 2>&1; then
		echo "FAIL $T/$name: build failed: $*"
		sed 's/^/  | /' "$log" | head -30
		fail=1
		return 1
	fi
}

# The claim "without SFrame" must hold for what we built, or the test
# proves nothing about CFI.
no_sframe() { # name, file...
	local name=$1; shift
	for f in "$@"; do
		if readelf -SW "$f" 2>/dev/null | grep -q '\.sframe'; then
			echo "FAIL $T/$name: $f has an .sframe section (test must build without SFrame)"
			fail=1
			return 1
		fi
	done
}

# Oracles about the executable, from binutils: its symbols, the functions
# its .sframe describes (libustack's and the PLT's, never the test code's),
# its PLT sections.
run() { # variant, exe, [env...]
	local v=$1 exe=$2 rc; shift 2
	nm -S --defined-only "$exe" >"$exe.nm" 2>/dev/null
	objdump --sframe=.sframe "$exe" 2>/dev/null |
		sed -n 's/.*func idx \[[0-9]*\]: pc = \(0x[0-9a-f]*\), size = \([0-9]*\) bytes.*/\1 \2/p' \
		>"$exe.sframe"
	readelf -SW "$exe" | sed 's/^ *\[ *[0-9]*\] *//' |
		awk '$1 ~ /^\.(plt|iplt|plt\.sec|plt\.got)$/ { print "0x" $3, "0x" $5 }' >"$exe.plt"
	if readelf -lW "$exe" | grep -q GNU_SFRAME && [ ! -s "$exe.sframe" ]; then
		echo "FAIL $T/$v/$(basename "$exe"): objdump --sframe listed no FDE"
		fail=1
		return
	fi
	env CFI_NM="$exe.nm" CFI_SFRAME="$exe.sframe" CFI_PLT="$exe.plt" "$@" "$exe" "$v"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "# $T/$v/$(basename "$exe"): exit status $rc"
		[ "$rc" -gt 1 ] && echo "FAIL $T/$v/$(basename "$exe"): crashed or aborted (exit status $rc)"
		fail=1
	fi
}

have_cxx=1
if ! command -v "$CXX" >/dev/null 2>&1; then
	have_cxx=0
	echo "SKIP $T/cxx: no C++ compiler ($CXX not installed)"
fi

build libcfi_dl "$CC" "${CF[@]}" -fPIC -shared -Wl,-soname,libcfi_dl.so \
	-o "$OUT/libcfi_dl.so" $P/cfi_lib.c || exit 1
build obj-common "$CC" "${CF[@]}" -c -o "$OUT/cfi_common.o" $P/cfi_common.c || exit 1
build obj-c "$CC" "${CF[@]}" -c -o "$OUT/cfi_c.o" $P/cfi_c.c || exit 1
objs=("$OUT/libcfi_dl.so" "$OUT/cfi_common.o" "$OUT/cfi_c.o")
if [ $have_cxx = 1 ]; then
	build obj-cxx "$CXX" "${CXF[@]}" -c -o "$OUT/cfi_cxx.o" $P/cfi_cxx.cc || exit 1
	objs+=("$OUT/cfi_cxx.o")
fi
no_sframe objects "${objs[@]}" || exit 1
DL=(CFI_DLOPEN_LIB="$OUT/libcfi_dl.so")

if [ -f "$CHECK_DIR/libustack.a" ]; then
	build asan-c "$CC" $SAN_FLAGS -o "$OUT/cfi_c_asan" "$OUT/cfi_c.o" "$OUT/cfi_common.o" \
		"$CHECK_DIR/libustack.a" $LIB_LDLIBS &&
	run asan "$OUT/cfi_c_asan" "${DL[@]}"
	if [ $have_cxx = 1 ]; then
		build asan-cxx "$CXX" $SAN_FLAGS -o "$OUT/cfi_cxx_asan" "$OUT/cfi_cxx.o" \
			"$OUT/cfi_common.o" "$CHECK_DIR/libustack.a" $LIB_LDLIBS &&
		run asan "$OUT/cfi_cxx_asan"
	fi
else
	echo "FAIL $T/asan: $CHECK_DIR/libustack.a missing (make check builds it)"
	fail=1
fi

REL=build/libustack.a
if [ -f "$REL" ]; then
	build release-c "$CC" -o "$OUT/cfi_c_rel" "$OUT/cfi_c.o" "$OUT/cfi_common.o" \
		"$REL" $LIB_LDLIBS &&
	run release "$OUT/cfi_c_rel" "${DL[@]}"
	if [ $have_cxx = 1 ]; then
		build release-cxx "$CXX" -o "$OUT/cfi_cxx_rel" "$OUT/cfi_cxx.o" \
			"$OUT/cfi_common.o" "$REL" $LIB_LDLIBS &&
		run release "$OUT/cfi_cxx_rel"
	fi

	if [ -f /usr/lib/x86_64-linux-gnu/libc.a ] || [ -f /usr/lib/libc.a ]; then
		# the library code is linked in (no dlopen in a static program);
		# ustack finds .eh_frame through /proc/self/exe (no
		# PT_GNU_EH_FRAME); the executable's .sframe is libustack's own
		build static-objs "$CC" "${CF[@]}" -DCFI_STATIC -c -o "$OUT/cfi_common_st.o" \
			$P/cfi_common.c &&
		build static-objs "$CC" "${CF[@]}" -DCFI_STATIC -c -o "$OUT/cfi_c_st.o" $P/cfi_c.c &&
		build static-objs "$CC" "${CF[@]}" -c -o "$OUT/cfi_lib_st.o" $P/cfi_lib.c &&
		no_sframe static-objs "$OUT/cfi_common_st.o" "$OUT/cfi_c_st.o" "$OUT/cfi_lib_st.o" &&
		build static-c "$CC" -static -o "$OUT/cfi_c_static" "$OUT/cfi_c_st.o" \
			"$OUT/cfi_common_st.o" "$OUT/cfi_lib_st.o" "$REL" $LIB_LDLIBS &&
		run static "$OUT/cfi_c_static"
		if [ $have_cxx = 1 ]; then
			build static-cxx "$CXX" "${CXF[@]}" -DCFI_STATIC -c -o "$OUT/cfi_cxx_st.o" \
				$P/cfi_cxx.cc &&
			no_sframe static-cxx "$OUT/cfi_cxx_st.o" &&
			build static-cxx "$CXX" -static -o "$OUT/cfi_cxx_static" "$OUT/cfi_cxx_st.o" \
				"$OUT/cfi_common_st.o" "$REL" $LIB_LDLIBS &&
			run static "$OUT/cfi_cxx_static"
		fi
	else
		echo "SKIP $T/static: no libc.a (libc6-dev) for a static link"
	fi
else
	echo "SKIP $T/release: build/libustack.a not built (run make)"
fi

if [ $fail -eq 0 ]; then rm -rf "$OUT"; else echo "# binaries kept in $OUT"; fi
exit $fail
