#!/usr/bin/env bash
# The unit of an address from .debug_aranges (symbolize_dwarf.c
# read_aranges(), which reads the section itself instead of libdw's
# dwarf_getaranges()): a program of four units, each function's lines
# through `ustack symbolize` must be addr2line's
#   - as built (the units found through .debug_aranges),
#   - with the section renamed away (the units' own ranges, as for clang),
#   - with its first set's version garbled and with a set cut short (not
#     understood: libdw's look-up, then the units' ranges),
# and all four outputs the same.
set -u
: "${USTACK:?}"
CC=${CC:-cc}
T=symbolize_aranges
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in objcopy readelf addr2line nm python3; do
	command -v $t >/dev/null || { echo "SKIP $T: $t not installed"; exit 0; }
done
for u in 1 2 3; do
	{
		echo "volatile int sink$u;"
		for f in 0 1 2 3 4; do
			printf '__attribute__((noinline)) int u%d_f%d(int x)\n{\n\tint r = x * %d;\n\tfor (int k = 0; k < x; k++)\n\t\tr += k ^ %d;\n\tsink%d = r;\n\treturn r;\n}\n' $u $f $((u + f)) $f $u
		done
	} >"$tmp/u$u.c"
done
cat >"$tmp/main.c" <<'C'
int u1_f0(int), u2_f0(int), u3_f0(int);
int main(int argc, char **argv) { (void)argv; return u1_f0(argc) + u2_f0(argc) + u3_f0(argc); }
C
$CC -O1 -g -o "$tmp/p" "$tmp/main.c" "$tmp/u1.c" "$tmp/u2.c" "$tmp/u3.c" ||
	{ echo "FAIL $T: cannot build"; exit 1; }
readelf -SW "$tmp/p" | grep -q ' \.debug_aranges ' || { echo "SKIP $T: $CC wrote no .debug_aranges"; exit 0; }
# a pc inside each function, addr2line's line for it
offs="" want=""
for u in 1 2 3; do
	for f in 0 1 2 3 4; do
		a=$(nm "$tmp/p" | awk -v n=u${u}_f$f '$3 == n { print $1 }')
		va=$(printf '0x%x' $((16#$a + 4)))
		offs="$offs $va"
		want="$want $(addr2line -e "$tmp/p" "$va" | sed 's|.*/||; s/ .*//')"
	done
done
objcopy --rename-section .debug_aranges=.debug_xaranges "$tmp/p" "$tmp/renamed"
read -r off size < <(readelf -SW "$tmp/p" | sed 's/^ *\[ *[0-9]*\]//' | awk '$1==".debug_aranges"{print $4, $5}')
cp "$tmp/p" "$tmp/badversion"
cp "$tmp/p" "$tmp/cut"
python3 - "$tmp/badversion" "$tmp/cut" $((16#$off)) $((16#$size)) <<'PY'
import struct, sys
bv, cut, off, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(bv, "r+b") as f:            # first set: version 2 -> 0x7777
    f.seek(off + 4); f.write(struct.pack("<H", 0x7777))
with open(cut, "r+b") as f:           # first set: length past the section's end
    f.seek(off); f.write(struct.pack("<I", size))
PY
run() { "$USTACK" symbolize -e "$1" $offs 2>"$tmp/err.$2" | sed "s|($1)|(P)|" >"$tmp/out.$2"; }
export USTACK_CACHE_DIR= # the DWARF itself each time, not the line cache
run "$tmp/p" built
run "$tmp/renamed" renamed
run "$tmp/badversion" badversion
run "$tmp/cut" cut
got=$(sed -n 's|.* at .*/\([^/]*\.c:[0-9]*\).*|\1|p' "$tmp/out.built" | tr '\n' ' ')
ok=1
{
[ "$got" = "${want# } " ] || { ok=0; echo "# built: '$got'"; echo "# addr2line: '${want# }'"; }
for v in renamed badversion cut; do
	cmp -s "$tmp/out.built" "$tmp/out.$v" || { ok=0; echo "# $v differs:"; diff "$tmp/out.built" "$tmp/out.$v" | head -4; }
done
} >"$tmp/notes"
cat "$tmp/notes"
if [ $ok = 1 ]; then
	echo "PASS $T: 15 functions in 3 units: addr2line's lines through .debug_aranges, without it, and with it garbled or cut"
else
	echo "FAIL $T: $(grep -h '^#' "$tmp/notes" | head -3 | tr '\n' '|')"
	head -3 "$tmp"/err.* | sed 's/^/#   /'
fi
