#!/usr/bin/env bash
# DWARF CFI rows vs readelf --debug-dump=frames-interp, on system libraries
# and on a test program built here in several ways (frame pointers or not,
# static, DRAP realignment, .debug_frame in 32- and 64-bit DWARF).
# The comparison itself is tests/unit/test_cfi_readelf.c (given file names
# it checks those; see its header for readelf's notation and exclusions).
set -u
: "${CHECK_DIR:=build/check}" "${CC:=gcc}" "${TOP:=$PWD}"
name=cfi_readelf
checker="$TOP/$CHECK_DIR/tests/test_cfi_readelf"
if ! command -v readelf >/dev/null; then
	echo "SKIP $name: readelf not installed"; exit 0
fi
if [ ! -x "$checker" ]; then
	echo "FAIL $name: $checker not built"; exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src="$TOP/tests/data/cfi/cfi_prog.c"

build() { # out, flags...
	local out=$1; shift
	if ! $CC "$@" -o "$tmp/$out" "$src" 2>"$tmp/$out.err"; then
		echo "FAIL $name: cannot build $out ($*): $(head -3 "$tmp/$out.err")"
		return 1
	fi
}

fail=0
build fp      -O2 -fno-omit-frame-pointer || fail=1
build nofp    -O2 -fomit-frame-pointer    || fail=1
build o0      -O0                          || fail=1
build dbg     -O2 -g -fno-asynchronous-unwind-tables || fail=1
build dbg64   -O2 -g -gdwarf64 -fno-asynchronous-unwind-tables -fno-dwarf2-cfi-asm || fail=1
static_ok=1
if ! $CC -O2 -static -o "$tmp/static" "$src" 2>/dev/null; then
	echo "SKIP ${name}_static: no static libc (libc6-dev static archive missing)"
	static_ok=0
fi
[ $fail -eq 0 ] || exit 1

# The properties the variants are there for must really hold, or the test
# would silently check less than it claims.
prop() { # test-name, condition command...
	local t=$1; shift
	if "$@"; then echo "PASS $t"; else echo "FAIL $t: $*"; fail=1; fi
}
has_section() { readelf -S -W "$1" | grep -q " $2 "; }
prop ${name}_dbg_has_debug_frame has_section "$tmp/dbg" .debug_frame
prop ${name}_dbg64_is_64bit bash -c "readelf --debug-dump=frames '$tmp/dbg64' | grep -A3 'Contents of the .debug_frame' | grep -q 'ffffffffffffffff CIE'"
prop ${name}_drap_present bash -c "readelf --debug-dump=frames-interp '$tmp/fp' | grep -q '^[0-9a-f]* r10+0'"

files=(/lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/bin/bash
       "$tmp/fp" "$tmp/nofp" "$tmp/o0" "$tmp/dbg" "$tmp/dbg64")
[ $static_ok -eq 1 ] && files+=("$tmp/static")
present=()
for f in "${files[@]}"; do
	if [ -r "$f" ]; then present+=("$f"); else echo "SKIP ${name}_$(basename "$f"): not present"; fi
done

out="$tmp/out.txt"
"$checker" "${present[@]}" >"$out" 2>&1
rc=$?
sed 's/^PASS /  ok /; s/^FAIL /  failed /' "$out"
if [ $rc -ne 0 ] || ! grep -q '^PASS test_cfi_readelf_agrees' "$out"; then
	echo "FAIL $name: rows disagree with readelf: $(grep -m3 -v '^PASS ' "$out" | tr '\n' '|' | cut -c1-500)"
	exit 1
fi
echo "PASS $name: every readelf row agrees (${#present[@]} files)"
# The .debug_frame paths must have been exercised, not skipped.
for v in dbg dbg64; do
	n=$(grep -F "$tmp/$v:" "$out" | sed -n 's/.*(\([0-9]*\) \.debug_frame).*/\1/p')
	prop ${name}_${v}_debug_frame_rows test "${n:-0}" -gt 0
done
n=$(grep -F "$tmp/fp:" "$out" | sed -n 's/.*agree (\([0-9]*\) fallback.*/\1/p')
prop ${name}_drap_rows_need_fallback test "${n:-0}" -gt 0
[ $fail -eq 0 ]
