#!/usr/bin/env bash
# Builds the installed static library from the library's objects:
#   scripts/static-lib.sh OUT.a OBJ...
# Every object stays its own archive member, so a program that only calls
# ustack_backtrace() pulls in only the unwinder (and no libbpf/libdw). The
# library's internal functions are global across its objects (hidden
# visibility, so a shared library does not export them) and would otherwise
# sit in the program's namespace with names like pm_alloc: those hidden
# globals that do not start with ustack_ are renamed to ustack__<name>, the
# same way in every object. The public (USTACK_API, default-visibility)
# functions keep their names. tests/integration/abi_exports.sh checks the
# result.
set -euo pipefail
out=$1; shift
OBJCOPY=${OBJCOPY:-objcopy}
READELF=${READELF:-readelf}
AR=${AR:-ar}
tmp=$(mktemp -d "${out}.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# readelf -sW columns: Num Value Size Type Bind Vis Ndx Name
"$READELF" -sW "$@" |
	awk '($5 == "GLOBAL" || $5 == "WEAK") && $6 == "HIDDEN" && $7 != "UND" &&
	     $8 !~ /^ustack_/ { print $8 " ustack__" $8 }' | sort -u >"$tmp/rename"
objs=()
for o in "$@"; do
	# module_file.o: file names repeat across modules
	m=${o%/*}; m=${m##*/}_${o##*/}
	"$OBJCOPY" --redefine-syms="$tmp/rename" "$o" "$tmp/$m"
	objs+=("$tmp/$m")
done
rm -f "$tmp/out.a"
"$AR" rcs "$tmp/out.a" "${objs[@]}"
mv "$tmp/out.a" "$out"
