#!/usr/bin/env bash
# ABI of libustack.so against the committed baseline abi/libustack.abi
# (abidw of the last released library, public headers only: types that
# include/ustack/*.h do not define do not count). abidiff compares; the
# verdict follows the project's rule (scripts/abi-check.py):
#   accepted  new functions; fields appended at the end of a struct whose
#             first field is `size_t sz`
#   refused   anything else: a removed function, a changed signature, a
#             field inserted in the middle or changed, a struct without sz
#             that changes size, an enum value renumbered...
# A deliberate change is recorded with `make abi-baseline` (docs/api.md,
# "ABI").
set -u
TOP=${TOP:-$PWD}
T=abi_check
cd "$TOP"
if ! command -v abidiff >/dev/null; then
	echo "SKIP $T: abidiff missing (Debian package abigail-tools, scripts/deps.sh)"
	exit 0
fi
base=abi/libustack.abi
[ -f $base ] || { echo "FAIL $T: no baseline $base (make abi-baseline)"; exit 1; }
v=$(make -s --no-print-directory version)
so=build/libustack.so.$v
[ -f "$so" ] || { echo "FAIL $T: $so not built (run make)"; exit 1; }
arch=$(sed -n "s/.*<abi-corpus [^>]*architecture='\([^']*\)'.*/\1/p" $base | head -1)
got=$(abidw --drop-private-types --headers-dir include/ustack "$so" 2>/dev/null |
	sed -n "s/.*<abi-corpus [^>]*architecture='\([^']*\)'.*/\1/p" | head -1)
if [ "$arch" != "$got" ]; then
	echo "SKIP $T: baseline is for $arch, this build is $got"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
abidiff -l --no-added-syms --drop-private-types --headers-dir2 include/ustack \
	"$base" "$so" >"$tmp/report" 2>&1
rc=$?
# abidiff's status bits: 1 error, 2 usage, 4 ABI change, 8 incompatible change
if [ $((rc & 3)) -ne 0 ]; then
	echo "FAIL $T: abidiff failed ($rc): $(head -3 "$tmp/report" | tr '\n' ' ')"
elif [ $rc -eq 0 ]; then
	echo "PASS $T (no change from $base)"
elif [ $((rc & 8)) -eq 0 ] && python3 scripts/abi-check.py "$tmp/report" include/ustack/*.h >"$tmp/why"; then
	echo "PASS $T (only accepted changes: fields appended to sz structs)"
else
	echo "FAIL $T: ABI break against $base (if deliberate: make abi-baseline):"
	sed 's/^/    /' "$tmp/why" "$tmp/report" | head -60
fi
