#!/usr/bin/env bash
# Where probe names attach (`ustack probe`, the resolver `record -e` uses),
# against readelf (lib/probe_oracle.py: symbol values, PT_LOAD segments,
# stapsdt notes) and ldconfig -p, on programs built here
# (progs/probe_target.c):
#   probe_resolve_funcs_pie     functions and a uretprobe of a PIE
#   probe_resolve_funcs_nopie   the same where vaddr != file offset
#   probe_resolve_stripped      a stripped copy (.dynsym only): same offsets
#   probe_resolve_wildcard      pt_work_* is every function nm matches
#   probe_resolve_offset        SYMBOL+OFF inside the function, refused past it
#   probe_resolve_address       uprobe:PATH:0xVADDR (non-PIE vaddr)
#   probe_resolve_missing       one line naming the file and the symbol
#   probe_resolve_usdt_pie/_nopie  every note: offset, semaphore, arguments
#   probe_resolve_usdt_base     notes whose addresses are older than the file
#                               (prelink): moved by .stapsdt.base's distance
#   probe_resolve_libc          "libc" is ldconfig -p's libc.so.6, malloc at
#                               its .dynsym value
#   probe_resolve_mntns         -p PID in another mount namespace: its file
set -u
TOP=${TOP:-$PWD}
USTACK=${USTACK:-$TOP/build/check/ustack}
CC=${CC:-cc}
ORACLE="python3 $TOP/tests/integration/lib/probe_oracle.py"
for t in readelf python3 strip; do
	command -v $t >/dev/null || { echo "SKIP probe_resolve: $t not installed"; exit 0; }
done
tmp=$(mktemp -d /tmp/ustack-probe-XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
# name, want (text), got (text)
same() {
	if [ "$2" == "$3" ] && [ -n "$2" ]; then
		pass "$1 ($(wc -l <<<"$2") line(s))"
	else
		fail "$1" "want:"$'\n'"$2"$'\n'"got:"$'\n'"$3"
	fi
}

sdt=
if echo '#include <sys/sdt.h>' | $CC -E -x c - >/dev/null 2>&1; then
	sdt=-DHAVE_SDT
else
	echo "SKIP probe_resolve_usdt: <sys/sdt.h> missing (apt-get install systemtap-sdt-dev)"
fi
src=$TOP/tests/integration/progs/probe_target.c
$CC -O2 -rdynamic $sdt -o "$tmp/pie" "$src" || { fail probe_resolve_build "cc failed"; exit 1; }
$CC -O2 -no-pie -rdynamic $sdt -o "$tmp/nopie" "$src" || { fail probe_resolve_build "cc -no-pie failed"; exit 1; }
cp "$tmp/pie" "$tmp/stripped" && strip "$tmp/stripped"

probe() { "$USTACK" probe "$@" 2>&1 | sort; }

for v in pie nopie; do
	f=$tmp/$v
	want=$( { $ORACLE funcs "$f" uprobe pt_work_one; $ORACLE funcs "$f" uprobe pt_other
		  $ORACLE funcs "$f" uretprobe pt_work_two; } | sort)
	got=$(probe "uprobe:$f:pt_work_one" "uprobe:$f:pt_other" "uretprobe:$f:pt_work_two")
	same probe_resolve_funcs_$v "$want" "$got"
done

# a stripped file: the same places, from .dynsym (the oracle reads the
# unstripped original: the stripped copy has no .symtab to read)
if readelf -SW "$tmp/stripped" | grep -q ' \.symtab '; then
	fail probe_resolve_stripped "strip left a .symtab"
else
	want=$($ORACLE funcs "$tmp/pie" uprobe 'pt_*' "$tmp/stripped")
	got=$(probe "uprobe:$tmp/stripped:pt_*")
	same probe_resolve_stripped "$want" "$got"
fi

want=$($ORACLE funcs "$tmp/nopie" uprobe 'pt_work_*')
got=$(probe "uprobe:$tmp/nopie:pt_work_*")
[ "$(wc -l <<<"$want")" -eq 2 ] || fail probe_resolve_wildcard "oracle found $(wc -l <<<"$want") pt_work_* functions, want 2"
same probe_resolve_wildcard "$want" "$got"

# +OFF: the function's offset plus OFF; at its size, refused
read -r _ _ off0 _ <<<"$($ORACLE funcs "$tmp/nopie" uprobe pt_work_one)"
size=$(readelf -sW "$tmp/nopie" | awk '$8 == "pt_work_one" { print $3; exit }')
got=$(probe "uprobe:$tmp/nopie:pt_work_one+4")
same probe_resolve_offset "$(printf 'uprobe %s 0x%x pt_work_one+0x4' "$tmp/nopie" $((off0 + 4)))" "$got"
if out=$("$USTACK" probe "uprobe:$tmp/nopie:pt_work_one+$size" 2>&1); then
	fail probe_resolve_offset_past "pt_work_one+$size (its size) accepted: $out"
elif [[ $out != *"past the end of pt_work_one"* ]]; then
	fail probe_resolve_offset_past "want 'past the end of pt_work_one', got: $out"
else
	pass probe_resolve_offset_past
fi

vaddr=$(readelf -sW "$tmp/nopie" | awk '$8 == "pt_other" { print $2; exit }')
got=$(probe "uprobe:$tmp/nopie:0x$vaddr")
same probe_resolve_address "uprobe $tmp/nopie $($ORACLE addr "$tmp/nopie" "$vaddr") pt_other+0x0" "$got"

for f in "$tmp/pie" "$tmp/stripped"; do
	out=$("$USTACK" probe "uprobe:$f:pt_no_such_fn" 2>&1)
	rc=$?
	if [ $rc -ne 0 ] && [ "$(wc -l <<<"$out")" -eq 1 ] &&
	   [[ $out == *"no function 'pt_no_such_fn' in $f ("* ]]; then
		pass "probe_resolve_missing ($(basename "$f"): $out)"
	else
		fail probe_resolve_missing "exit $rc, want one line naming $f and pt_no_such_fn: $out"
	fi
done

if [ -n "$sdt" ]; then
	for v in pie nopie; do
		want=$($ORACLE usdt "$tmp/$v" '*' '*')
		got=$(probe "usdt:$tmp/$v:ptest:args4" "usdt:$tmp/$v:gated")
		[ "$(wc -l <<<"$want")" -eq 2 ] || fail probe_resolve_usdt_$v "oracle saw $(wc -l <<<"$want") notes, want 2"
		same probe_resolve_usdt_$v "$want" "$got"
	done
	$ORACLE shift-notes "$tmp/pie" "$tmp/moved" 0x100
	want=$($ORACLE usdt "$tmp/pie" '*' '*' "$tmp/moved")
	got=$(probe "usdt:$tmp/moved:*:*")
	if readelf -nW "$tmp/moved" | grep -q 'Base: 0x0*2004\b' && readelf -nW "$tmp/pie" | grep -q 'Base: 0x0*2004\b'; then
		fail probe_resolve_usdt_base "the shifted copy's notes did not move"
	fi
	same probe_resolve_usdt_base "$want" "$got"
fi

# "libc": the x86-64 libc.so.6 ldconfig lists, malloc where its .dynsym says
if command -v ldconfig >/dev/null; then
	lib=$(ldconfig -p | awk '$1 == "libc.so.6" && /x86-64/ { print $NF; exit }')
	if [ -z "$lib" ]; then
		echo "SKIP probe_resolve_libc: ldconfig -p lists no x86-64 libc.so.6"
	else
		want=$($ORACLE funcs "$lib" uprobe malloc)
		got=$(probe uprobe:libc:malloc)
		same probe_resolve_libc "$want" "$got"
	fi
else
	echo "SKIP probe_resolve_libc: ldconfig not installed"
fi

# another mount namespace: the copy exists only there
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
	echo "SKIP probe_resolve_mntns: needs root and unshare (-m, mount)"
	exit $((fails > 0))
fi
dir=$tmp/ns
mkdir "$dir"
unshare -m --propagation private sh -c "mount -t tmpfs none '$dir' && cp '$tmp/nopie' '$dir/hidden' && exec '$dir/hidden' 1 wait" &
pid=$!
end=$((SECONDS + 30))
until grep -q "$dir/hidden" /proc/$pid/maps 2>/dev/null || [ $SECONDS -ge $end ]; do
	sleep 0.01
done
if ! grep -q "$dir/hidden" /proc/$pid/maps 2>/dev/null; then
	echo "SKIP probe_resolve_mntns: could not start a process in a private mount namespace"
elif [ -e "$dir/hidden" ]; then
	echo "SKIP probe_resolve_mntns: the tmpfs is visible here (mount propagation)"
else
	want=$($ORACLE funcs "$tmp/nopie" uprobe pt_other "$dir/hidden")
	got=$(probe -p $pid "uprobe:$dir/hidden:pt_other")
	same probe_resolve_mntns "$want" "$got"
	# by its base name too: found among its mappings
	got=$(probe -p $pid "uprobe:hidden:pt_other")
	same probe_resolve_mntns_name "$want" "$got"
	if out=$("$USTACK" probe "uprobe:$dir/hidden:pt_other" 2>&1); then
		fail probe_resolve_mntns_host "the host has no $dir/hidden, yet: $out"
	else
		pass "probe_resolve_mntns_host ($out)"
	fi
fi
exit $((fails > 0))
