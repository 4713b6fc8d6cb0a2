#!/usr/bin/env bash
# Exports of the library: what a program can link against.
#   map       ustack.map names exactly the USTACK_API functions: those
#             declared USTACK_API in include/ustack/*.h, those the compiler
#             made default-visibility in the objects, and those
#             libustack.so exports, each under the version node the map
#             puts it in (USTACK_0.1, USTACK_0.2 ...)
#   static    every global symbol of build/libustack.a starts with ustack_
#             (internal ones renamed ustack__*, scripts/static-lib.sh), and
#             the default-visibility ones are the map's
#   version   the version in include/ustack/ustack.h is the one of the
#             Makefile (library file name), of ustack_version(), of
#             `ustack --version` and of `ustack.pc`
# Runs on the release build (make builds it; make check does too).
set -u
TOP=${TOP:-$PWD}
T=abi_exports
cd "$TOP"
SO=build/libustack.so
A=build/libustack.a
if [ ! -f $SO ] || [ ! -f $A ]; then
	echo "FAIL $T: $SO or $A not built (run make)"
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# names in the map: the lines "name;" between "global:" and "local:"
awk '/global:/ { on = 1; next } /local:/ { on = 0 }
     on && /^[ \t]*[A-Za-z_][A-Za-z0-9_]*;/ { gsub(/[ \t;]/, ""); print }' ustack.map |
	LC_ALL=C sort >"$tmp/map"
# and with their version node: "name@@NODE"
awk '/^[A-Z][A-Z0-9_.]*[ \t]*\{/ { node = $1 } /global:/ { on = 1; next } /local:/ { on = 0 }
     /^\}/ { on = 0 }
     on && /^[ \t]*[A-Za-z_][A-Za-z0-9_]*;/ { gsub(/[ \t;]/, ""); print $0 "@@" node }' ustack.map |
	LC_ALL=C sort >"$tmp/map.ver"
# declared USTACK_API in the headers: the identifier before the first "("
# after the macro, the declaration possibly spanning lines
python3 - include/ustack/*.h >"$tmp/hdr.unsorted" <<'PY'
import re, sys
for path in sys.argv[1:]:
    text = re.sub(r'/\*.*?\*/', ' ', open(path).read(), flags=re.S)
    text = re.sub(r'#[^\n]*(\\\n[^\n]*)*', ' ', text)  # the macro's own #define
    for m in re.finditer(r'\bUSTACK_API\b([^;{]*?)\b([A-Za-z_]\w*)\s*\(', text):
        print(m.group(2))
PY
LC_ALL=C sort -u "$tmp/hdr.unsorted" >"$tmp/hdr"
# default-visibility global functions of the objects (what USTACK_API made)
readelf -sW build/obj/*/*.o 2>/dev/null |
	awk '$4 == "FUNC" && ($5 == "GLOBAL" || $5 == "WEAK") && $6 == "DEFAULT" && $7 != "UND" { print $8 }' |
	grep -v '^main$' | LC_ALL=C sort -u >"$tmp/obj.all"
# the CLI's own objects are not the library
readelf -sW build/obj/cli/*.o 2>/dev/null |
	awk '$4 == "FUNC" && $6 == "DEFAULT" && $7 != "UND" { print $8 }' | LC_ALL=C sort -u >"$tmp/obj.cli"
LC_ALL=C comm -23 "$tmp/obj.all" "$tmp/obj.cli" >"$tmp/obj"
# exported by the shared library, with their version node
nm -D --defined-only "$SO" | awk '$2 != "A" { print $3 }' >"$tmp/so.ver"
LC_ALL=C sort "$tmp/so.ver" | LC_ALL=C comm -13 "$tmp/map.ver" - >"$tmp/so.badver"
sed 's/@.*//' "$tmp/so.ver" | LC_ALL=C sort -u >"$tmp/so"

diffset() { # what, file a, name a, file b, name b
	local only_a only_b
	only_a=$(LC_ALL=C comm -23 "$2" "$4" | tr '\n' ' ')
	only_b=$(LC_ALL=C comm -13 "$2" "$4" | tr '\n' ' ')
	[ -z "$only_a$only_b" ] && return 0
	echo "FAIL $T/$1: in $3 but not in $5: [${only_a% }]; in $5 but not in $3: [${only_b% }]"
	return 1
}
ok=1
[ -s "$tmp/map" ] || { echo "FAIL $T/map: no names read from ustack.map"; ok=0; }
diffset map "$tmp/hdr" "USTACK_API declarations (include/ustack)" "$tmp/map" ustack.map || ok=0
diffset map "$tmp/obj" "default-visibility functions of build/obj" "$tmp/map" ustack.map || ok=0
diffset map "$tmp/so" "$SO exports" "$tmp/map" ustack.map || ok=0
if [ -s "$tmp/so.badver" ]; then
	echo "FAIL $T/map: exported under another version than ustack.map's node: $(head -5 "$tmp/so.badver" | tr '\n' ' ')"
	ok=0
fi
[ $ok = 1 ] && echo "PASS $T/map ($(wc -l <"$tmp/map") functions)"

# static: global defined symbols of the archive
nm -g --defined-only "$A" | awk 'NF == 3 { print $3 }' | LC_ALL=C sort -u >"$tmp/a.glob"
bad=$(grep -v '^ustack_' "$tmp/a.glob" | head -10 | tr '\n' ' ')
readelf -sW "$A" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $6 == "DEFAULT" && $7 != "UND" { print $8 }' |
	LC_ALL=C sort -u >"$tmp/a.default"
if [ -n "$bad" ]; then
	echo "FAIL $T/static: global symbols of $A outside the ustack_ namespace: $bad"
elif ! grep -q '^ustack__' "$tmp/a.glob" && [ "$(wc -l <"$tmp/a.glob")" -eq "$(wc -l <"$tmp/map")" ]; then
	echo "PASS $T/static"
elif diffset static "$tmp/a.default" "default-visibility symbols of $A" "$tmp/map" ustack.map; then
	echo "PASS $T/static ($(wc -l <"$tmp/a.glob") globals, $(grep -c '^ustack__' "$tmp/a.glob") internal ones as ustack__*)"
fi

# version: parsed here from the header independently of the Makefile
v=$(awk '/^#define USTACK_VERSION_(MAJOR|MINOR|PATCH) / { v = v (v == "" ? "" : ".") $3 } END { print v }' \
	include/ustack/ustack.h)
cat >"$tmp/v.c" <<'C'
#include <stdio.h>
#include <ustack/ustack.h>
int main(void) { printf("%s %s\n", ustack_version(), USTACK_VERSION_STRING); return 0; }
C
got_make=$(make -s --no-print-directory version 2>&1)
got_cli=$(build/ustack --version 2>&1)
got_lib=$(${CC:-gcc} -Iinclude -o "$tmp/v" "$tmp/v.c" "$A" 2>&1 && "$tmp/v")
got_so=$(readlink build/libustack.so)
got_soname=$(readelf -d build/libustack.so | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$got_make" = "$v" ] && [ "$got_cli" = "ustack $v" ] && [ "$got_lib" = "$v $v" ] &&
   [ "$got_so" = "libustack.so.$v" ] && [ "$got_soname" = "$(make -s --no-print-directory soname)" ]; then
	echo "PASS $T/version ($v)"
else
	echo "FAIL $T/version: header '$v', make version '$got_make', --version '$got_cli'," \
		"ustack_version()/USTACK_VERSION_STRING '$got_lib', $SO -> '$got_so', soname '$got_soname'"
fi
