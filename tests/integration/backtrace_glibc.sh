#!/usr/bin/env bash
# ustack_backtrace() against glibc backtrace(), frame by frame up to main,
# over programs built -O2 -fomit-frame-pointer -Wa,--gsframe with varied
# frame shapes (tests/integration/progs/bt_shapes.c says which, and at which
# index main must appear in each).
#
# Variants of the same program:
#   pie-asan      PIE, linked with $CHECK_DIR/libustack.a (ASan+UBSan)
#   pie-release   PIE, build/libustack.a (no sanitizers)
#   nopie-release non-PIE executable, build/libustack.a
#   static        -static, build/libustack.a (static + ASan is unsupported)
# The shared library bt_lib.c (SFrame too) is linked normally (libbt_link.so)
# and a second copy is dlopen()ed (libbt_dl.so).
#
# Env (from make check): CHECK_DIR CC GSFRAME SAN_FLAGS LIB_LDLIBS TOP.
set -u
T=backtrace_glibc
: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${CHECK_DIR:=build/check}" "${CC:=gcc}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf}"
: "${SAN_FLAGS:=-fsanitize=address,undefined -fno-sanitize-recover=undefined}"
cd "$TOP" || exit 1

if [ -z "${GSFRAME:-}" ]; then
	echo "SKIP $T: the assembler cannot emit SFrame (GSFRAME is empty; needs binutils >= 2.40)"
	exit 0
fi

# a directory per run: several make check runs may share one checkout
mkdir -p "$TOP/$CHECK_DIR/it"
OUT=$(mktemp -d "$TOP/$CHECK_DIR/it/bt_glibc.XXXXXX") || exit 1
P=tests/integration/progs
CF=(-std=gnu11 -O2 -fomit-frame-pointer $GSFRAME -D_GNU_SOURCE -Iinclude -I$P -Wall -Wextra
    -Wno-unused-parameter)
fail=0

# run a compile/link step; on error print a FAIL line with the compiler's output
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

main_size() { nm -S --defined-only "$1" | awk '$4 == "main" { print $2; exit }'; }

run_variant() { # variant, exe
	local v=$1 exe=$2 size rc
	size=$(main_size "$exe")
	if [ -z "$size" ]; then
		echo "FAIL $T/$v: no symbol main in $exe"
		fail=1
		return
	fi
	BT_MAIN_SIZE=$size BT_DLOPEN_LIB="$OUT/libbt_dl.so" "$exe" "$v"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		# the program prints its own FAIL lines; a crash prints none
		echo "# $T/$v: exit status $rc"
		[ "$rc" -gt 1 ] && echo "FAIL $T/$v: crashed or aborted (exit status $rc)"
		fail=1
	fi
}

# the shared library: one copy linked, one dlopen()ed
build libbt_link "$CC" "${CF[@]}" -fPIC -shared -DBTLIB_NS=link -Wl,-soname,libbt_link.so \
	-o "$OUT/libbt_link.so" $P/bt_lib.c || exit 1
build libbt_dl "$CC" "${CF[@]}" -fPIC -shared -DBTLIB_NS=dl -Wl,-soname,libbt_dl.so \
	-o "$OUT/libbt_dl.so" $P/bt_lib.c || exit 1

# the program itself is never instrumented: ASan would change its frames
# (and SAN_FLAGS turns frame pointers back on); only the library is
for pic in pie nopie; do
	f=(); [ $pic = nopie ] && f=(-fno-pie)
	build "obj-$pic" "$CC" "${CF[@]}" "${f[@]}" -c -o "$OUT/bt_shapes_$pic.o" $P/bt_shapes.c &&
	build "objc-$pic" "$CC" "${CF[@]}" "${f[@]}" -c -o "$OUT/bt_common_$pic.o" $P/bt_common.c
done

if [ -f "$CHECK_DIR/libustack.a" ]; then
	build pie-asan "$CC" $SAN_FLAGS -rdynamic -o "$OUT/bt_shapes_pie_asan" \
		"$OUT/bt_shapes_pie.o" "$OUT/bt_common_pie.o" -L"$OUT" -lbt_link -Wl,-rpath,"$OUT" \
		"$CHECK_DIR/libustack.a" $LIB_LDLIBS &&
	run_variant pie-asan "$OUT/bt_shapes_pie_asan"
else
	echo "FAIL $T/pie-asan: $CHECK_DIR/libustack.a missing (make check builds it)"
	fail=1
fi

REL=build/libustack.a
if [ -f "$REL" ]; then
	build pie-release "$CC" -rdynamic -o "$OUT/bt_shapes_pie_rel" \
		"$OUT/bt_shapes_pie.o" "$OUT/bt_common_pie.o" -L"$OUT" -lbt_link -Wl,-rpath,"$OUT" \
		"$REL" $LIB_LDLIBS &&
	run_variant pie-release "$OUT/bt_shapes_pie_rel"

	build nopie-release "$CC" -no-pie -rdynamic -o "$OUT/bt_shapes_nopie_rel" \
		"$OUT/bt_shapes_nopie.o" "$OUT/bt_common_nopie.o" -L"$OUT" -lbt_link \
		-Wl,-rpath,"$OUT" "$REL" $LIB_LDLIBS &&
	run_variant nopie-release "$OUT/bt_shapes_nopie_rel"

	# static: the library source is compiled in (no .so in a static link)
	if [ -f /usr/lib/x86_64-linux-gnu/libc.a ] || [ -f /usr/lib/libc.a ]; then
		build static "$CC" "${CF[@]}" -DBT_STATIC -static -o "$OUT/bt_shapes_static" \
			$P/bt_shapes.c $P/bt_common.c $P/bt_lib.c "$REL" $LIB_LDLIBS &&
		run_variant static "$OUT/bt_shapes_static"
	else
		echo "SKIP $T/static: no libc.a (libc6-dev) for a static link"
	fi
else
	echo "SKIP $T/release: build/libustack.a not built (run make)"
fi
# keep the binaries of a failed run for debugging
if [ $fail -eq 0 ]; then rm -rf "$OUT"; else echo "# binaries kept in $OUT"; fi
exit $fail
