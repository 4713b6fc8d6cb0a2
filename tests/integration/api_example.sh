#!/usr/bin/env bash
# The complete example of docs/api.md ("<!-- example: unwind_self.c -->"),
# extracted, compiled against the library and run: it unwinds its own
# thread from a stack copy through <ustack/unwind.h> and compares with
# glibc's backtrace() (exit 0 only when every frame agrees). Built twice:
# plain -O2 (DWARF CFI) and with SFrame when the assembler emits it,
# against the library lib/libustack.sh picks (the sanitizer build first:
# the example must be clean under ASan). `middle` may come out of GCC as
# a clone (middle.isra.0, middle.constprop.0): any such name counts.
set -u
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
CHECK_DIR=${CHECK_DIR:-build/check}
T=api_example
. "$TOP/tests/integration/lib/libustack.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

awk '/<!-- example: unwind_self.c -->/ { on = 1; next }
     on && /^```c/ { code = 1; next }
     code && /^```/ { exit }
     code { print }' "$TOP/docs/api.md" >"$tmp/unwind_self.c"
if ! grep -q ustack_unwinder__unwind "$tmp/unwind_self.c"; then
	echo "FAIL $T: no example found in docs/api.md"
	exit 1
fi
for v in cfi sframe; do
	flags=
	if [ $v = sframe ]; then
		[ -n "${GSFRAME:-}" ] || { echo "SKIP ${T}_$v: no -Wa,--gsframe"; continue; }
		flags=$GSFRAME
	fi
	if ! $CC -O2 -g $flags $san -I"$TOP/include" -o "$tmp/ex_$v" "$tmp/unwind_self.c" "$LIB" \
		$libs 2>"$tmp/cc.err"; then
		echo "FAIL ${T}_$v: does not compile: $(head -3 "$tmp/cc.err")"
		continue
	fi
	if out=$("$tmp/ex_$v" 2>&1) && echo "$out" | grep -q "stop: outermost" &&
	   echo "$out" | grep -qE ' middle(\.[[:alnum:]_.]+)?\+0x' &&
	   echo "$out" | grep -qE ' main\+0x'; then
		echo "PASS ${T}_$v"
	else
		echo "FAIL ${T}_$v: $(echo "$out" | tail -4 | tr '\n' ' ')"
	fi
done
