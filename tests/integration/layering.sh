#!/usr/bin/env bash
# The include graph of src/ obeys the layers written in
# scripts/include-graph.py (DESIGN.md's layout, docs/ARCHITECTURE.md):
#   layering_tree         --check passes on this tree
# and the check fails, naming the fault, on a copy of src/ with one bad
# include added each time:
#   layering_upward       common/log.c includes record/rec.h: "common -> record"
#   layering_peer         sframe/sframe_decode.c includes cfi/cfi.h: two
#                         parsers of one layer ("its own layer")
#   layering_module_circle  bidcache/bidcache.c includes symbolize/debugfind.h
#                         (the circle src/archive/ was split out to end):
#                         "module circle: bidcache <-> symbolize"
#   layering_file_circle  common/grow.h and common/clock.h include each
#                         other: inside one module, so no layer rule sees
#                         it: "file circle"
#   layering_cli_internal cli/cmd_maps.c includes procmaps/procmaps.h: not
#                         a known exception of "cli uses only include/ustack/"
#   layering_cli_stale    cmd_report.c's include of common/clock.h removed:
#                         its exception no longer holds
#   layering_unplaced     a new module src/newmod/: in no layer
#   layering_missing      an include of a header that does not exist
set -u
TOP=${TOP:-$PWD}
cd "$TOP" || exit 1
SCRIPT=$TOP/scripts/include-graph.py
if ! command -v python3 >/dev/null; then
	echo "SKIP layering: python3 missing"
	exit 0
fi
tmp=$(mktemp -d /tmp/ustack-layering-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if out=$(python3 "$SCRIPT" --check 2>&1); then
	echo "PASS layering_tree ($(tail -1 <<<"$out"))"
else
	echo "FAIL layering_tree: scripts/include-graph.py --check failed:"
	grep '^layering:' <<<"$out" | sed 's/^/    /'
fi

fresh() { # a copy of src/ under $tmp/t
	rm -rf "$tmp/t" && mkdir "$tmp/t" && cp -r "$TOP/src" "$tmp/t/src"
}
add_include() { # file (under src/), header: the include after the file's first line
	sed -i "1a #include \"$2\"" "$tmp/t/src/$1"
}
# name, pattern the check's complaint must hold (grep -F): the copy in $tmp/t
# must fail with it, and say nothing else is wrong
expect_fail() {
	local name=$1 want=$2 out rc
	out=$(python3 "$SCRIPT" --root "$tmp/t" --check 2>&1 >/dev/null)
	rc=$?
	local complaints
	complaints=$(grep -c '^layering: ' <<<"$out")
	if [ $rc -ne 1 ]; then
		echo "FAIL $name: --check exited $rc on the broken copy, want 1"
	elif ! grep -qF -- "$want" <<<"$out"; then
		echo "FAIL $name: no complaint holding '$want':"
		sed 's/^/    /' <<<"$out"
	else
		echo "PASS $name ($(grep -F -m1 -- "$want" <<<"$out"); $complaints complaint(s))"
	fi
}

fresh; add_include common/log.c record/rec.h
expect_fail layering_upward "common -> record: record is in a higher layer"

fresh; add_include sframe/sframe_decode.c cfi/cfi.h
expect_fail layering_peer "sframe -> cfi: cfi is in its own layer"

fresh; add_include bidcache/bidcache.c symbolize/debugfind.h
expect_fail layering_module_circle "module circle: bidcache <-> symbolize"

fresh; add_include common/grow.h common/clock.h; add_include common/clock.h common/grow.h
expect_fail layering_file_circle "file circle: src/common/clock.h <-> src/common/grow.h"

fresh; add_include cli/cmd_maps.c procmaps/procmaps.h
expect_fail layering_cli_internal 'src/cli/cmd_maps.c:2: #include "procmaps/procmaps.h": cli uses only include/ustack/'

fresh; sed -i '/#include "common\/clock.h"/d' "$tmp/t/src/cli/cmd_report.c"
expect_fail layering_cli_stale 'src/cli/cmd_report.c no longer includes "common/clock.h"'

fresh; mkdir "$tmp/t/src/newmod" && printf '#include "common/log.h"\n' >"$tmp/t/src/newmod/newmod.c"
expect_fail layering_unplaced "module newmod (src/newmod/) is in no layer"

fresh; add_include elf/elf_file.c elf/no_such_header.h
expect_fail layering_missing 'src/elf/elf_file.c:2: #include "elf/no_such_header.h" names no file of src/'
