#!/usr/bin/env bash
# Compressed DWARF read from its inflated copy (src/symbolize/dwarf_cache.c):
# a program with enough DWARF to be cached (generated: 3000 functions),
# its debug part zlib-compressed in a build-ID tree. `ustack symbolize` of
# offsets across it, with lines, must print the same lines
#   - with no cache directory (libdw inflates in memory, as before),
#   - on the first run with one (which writes <cache>/debug/<build id>.dwarf),
#   - on the second (which reads that copy),
#   - after the copy was damaged (not used, written again),
# and the lines must be addr2line's (the oracle); the copy itself must hold
# no compressed .debug_info and be readable by eu-readelf.
set -u
: "${USTACK:?}"
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in objcopy readelf addr2line; do
	command -v $t >/dev/null || { echo "SKIP symbolize_dwarf_cache: $t not installed"; exit 0; }
done
{
	echo 'volatile int sink;'
	for i in $(seq 0 2999); do
		printf 'struct s%d { int a%d; long b%d; char c%d[%d]; };\n' $i $i $i $i $((i % 7 + 1))
		printf '__attribute__((noinline)) int f%d(struct s%d *p, int x)\n{\n\tint r = x * %d;\n' $i $i $i
		printf '\tfor (int k = 0; k < x; k++)\n\t\tr += p->a%d + (int)p->b%d + k;\n\tsink = r;\n\treturn r;\n}\n' $i $i
	done
	echo 'int main(void) { struct s0 v = { 0 }; return f0(&v, 1) + f2999((void *)&v, 0); }'
} >"$tmp/big.c"
# -O0: 0.47 MB of .debug_info, as much as -O1's 0.51 (the cache wants
# 0.25), compiled in 2.6 s of CPU instead of 9 (the test's largest part)
$CC -O0 -g -o "$tmp/big" "$tmp/big.c" || { echo "FAIL symbolize_dwarf_cache: cannot build"; exit 1; }
bid=$(readelf -n "$tmp/big" | sed -n 's/.*Build ID: //p')
[ -n "$bid" ] || { echo "FAIL symbolize_dwarf_cache: no build ID"; exit 1; }
dd=$tmp/debug/.build-id/${bid:0:2}
mkdir -p "$dd"
objcopy --only-keep-debug --compress-debug-sections=zlib "$tmp/big" "$dd/${bid:2}.debug"
objcopy --strip-debug "$tmp/big" "$tmp/big.stripped"
if ! readelf -SW "$dd/${bid:2}.debug" 2>/dev/null | grep -q ' \.debug_info .* C '; then
	echo "FAIL symbolize_dwarf_cache: objcopy did not compress"; exit 1
fi
# file offset of a vaddr through the PT_LOADs (readelf as the oracle)
off_of() { readelf -lW "$1" | while read -r t o v p f rest; do
	[ "$t" = LOAD ] || continue; a=$((16#$2))
	if [ $a -ge $((v)) ] && [ $a -lt $((v + f)) ]; then printf '0x%x\n' $((a - v + o)); break; fi; done; }
# a pc inside the loop of a few functions, and addr2line's line for it
offs="" want=""
for i in 0 1 777 1500 2999; do
	a=$(nm "$tmp/big" | awk -v f=f$i '$3 == f { print $1 }')
	va=$(printf '%x' $((16#$a + 8)))
	offs="$offs $(off_of "$tmp/big" "$va")"
	want="$want $(addr2line -e "$tmp/big" "0x$va" | sed 's/ .*//; s|.*/||')"
done
# the line cache (line_cache.c) would answer later runs without the DWARF:
# emptied before each run, so that each one reads the copy
run() {
	[ -n "${USTACK_CACHE_DIR:-}" ] && rm -rf "$USTACK_CACHE_DIR/lines"
	"$USTACK" symbolize -e "$tmp/big.stripped" -d "$tmp/debug" $offs 2>"$tmp/err"
}

USTACK_CACHE_DIR= run >"$tmp/nocache" || { echo "FAIL symbolize_dwarf_cache: no cache: exit $?"; cat "$tmp/err"; exit 1; }
export USTACK_CACHE_DIR=$tmp/cache
run >"$tmp/first"
copy=$tmp/cache/debug/$bid.dwarf
run >"$tmp/second"
ok=1
nlines=$(grep -c ' at .*big\.c:[0-9]' "$tmp/nocache")
got=$(sed -n 's|.* at .*/\(big\.c:[0-9]*\).*|\1|p' "$tmp/nocache" | tr '\n' ' ')
[ "$nlines" -eq 5 ] && [ "$got" = "${want# } " ] ||
	{ ok=0; echo "# no cache: lines '$got', addr2line '$want'"; sed 's/^/#   /' "$tmp/nocache"; }
cmp -s "$tmp/nocache" "$tmp/first" || { ok=0; echo "# first run with the cache differs"; diff "$tmp/nocache" "$tmp/first" | head; }
cmp -s "$tmp/nocache" "$tmp/second" || { ok=0; echo "# second run (from the copy) differs"; diff "$tmp/nocache" "$tmp/second" | head; }
[ $ok = 1 ] && echo "PASS symbolize_dwarf_cache_same: lines without a cache, writing it and reading it are addr2line's ($nlines offsets)" ||
	echo "FAIL symbolize_dwarf_cache_same: no cache: $nlines lines '$got' (addr2line '$want'); with the cache: first run $(cmp -s "$tmp/nocache" "$tmp/first" && echo same || echo differs), second $(cmp -s "$tmp/nocache" "$tmp/second" && echo same || echo differs)"
if [ -f "$copy" ] && ! readelf -SW "$copy" 2>/dev/null | grep -q ' \.debug_info .* C ' &&
   { ! command -v eu-readelf >/dev/null || eu-readelf --debug-dump=info "$copy" 2>/dev/null | grep -q 'f2999'; }; then
	echo "PASS symbolize_dwarf_cache_copy: $bid.dwarf written, .debug_info inflated, readable"
else
	echo "FAIL symbolize_dwarf_cache_copy: '$copy'"; ls -la "$tmp/cache/debug" 2>&1 | sed 's/^/#   /'
fi
# the copy is read, not rewritten, on the second run: same inode and size (a
# rewrite is a new file renamed over it); its mtime moves, since each use
# touches it for the cache trim (least recently used first)
m1=$(stat -c %i.%s "$copy" 2>/dev/null)
run >/dev/null
m2=$(stat -c %i.%s "$copy" 2>/dev/null)
[ -n "$m1" ] && [ "$m1" = "$m2" ] && echo "PASS symbolize_dwarf_cache_reused: the copy is read, not written again" ||
	echo "FAIL symbolize_dwarf_cache_reused: '$m1' then '$m2'"
# a damaged copy: not trusted, written again, same output
head -c 5000 "$copy" >"$copy.t" && mv "$copy.t" "$copy"
run >"$tmp/damaged"
if cmp -s "$tmp/nocache" "$tmp/damaged" && [ "$(stat -c %s "$copy")" -gt 5000 ]; then
	echo "PASS symbolize_dwarf_cache_damaged: a truncated copy is not used and is written again"
else
	echo "FAIL symbolize_dwarf_cache_damaged"; diff "$tmp/nocache" "$tmp/damaged" | head -5; sed 's/^/#   /' "$tmp/err"
fi
