#!/usr/bin/env bash
# Lines and inline chains read back from the line cache
# (src/symbolize/line_cache.c, <cache>/lines/<build id>.lines):
#   same      `ustack symbolize` of a program with inlined functions prints
#             the same with no cache directory, writing the cache, and
#             reading it; the run that reads it opens no DWARF
#   changed   the program rebuilt in place (same path, other mtime and
#             build ID) and a copy of it under the same build ID: the cache
#             is not used for either, their DWARF is read, output unchanged
#   damaged   a flipped byte in the cache file: one warning naming it and
#             the offset, the same output, the file written again
#   nodwarf   a program without DWARF: the second run does not look again;
#             touched, or with a debuginfod server set, it looks again
#   corrupt   a copy with corrupt .debug_info under the same build ID as a
#             cached program still gets its corrupt-DWARF warning
#   report    `ustack report` of a recording: the same text without a
#             cache, cold and warm; the warm report opens no DWARF
# "Opens DWARF": the debug message of ustack_dwarf__open() (USTACK_DEBUG=1).
set -u
: "${USTACK:?}"
CC=${CC:-cc}
tmp=$(mktemp -d)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
for t in readelf objdump python3; do
	command -v $t >/dev/null || { echo "SKIP symbolize_line_cache: $t not installed"; exit 0; }
done
cat >"$tmp/p.c" <<'EOF'
volatile int sink;
static inline __attribute__((always_inline)) int leaf(int x) { sink = x; return x * 3 + 1; }
static inline __attribute__((always_inline)) int mid(int x) { return leaf(x) + leaf(x + sink); }
__attribute__((noinline)) int top(int x) { return mid(x) * 2; }
__attribute__((noinline)) int other(int x) { for (int i = 0; i < x; i++) sink += i; return sink; }
int main(int argc, char **argv)
{
	(void)argv;
	for (unsigned long i = 0; i < (argc > 1 ? 300000000ul : 1); i++)
		sink += top((int)i) + other(argc);
	return 0;
}
EOF
$CC -O2 -g -o "$tmp/p" "$tmp/p.c" || { echo "FAIL symbolize_line_cache: cannot build"; exit 1; }
# offsets of every instruction of top and other (PIE: vaddr = file offset
# in the first segment)
offs=$(objdump -d --no-show-raw-insn "$tmp/p" |
	awk '/<(top|other)>:/{f=1; next} /^$/{f=0} f{sub(":","",$1); print "0x" $1}')
[ -n "$offs" ] || { echo "FAIL symbolize_line_cache: no instructions found"; exit 1; }
run() { # output file, program
	USTACK_DEBUG=1 "$USTACK" symbolize -e "$2" $offs >"$1" 2>"$1.err"
}
dwarf_read() { grep -q ': reading DWARF$' "$1.err"; }
# what is not one of the debug messages
warnings() { grep -Ev ': reading DWARF$|\.lines: ([0-9]+ addresses of |written from another state of |.* has no DWARF$)' "$1.err"; }

USTACK_CACHE_DIR= run "$tmp/none" "$tmp/p"
export USTACK_CACHE_DIR=$tmp/cache
run "$tmp/cold" "$tmp/p"
run "$tmp/warm" "$tmp/p"
bid=$(readelf -n "$tmp/p" | awk '/Build ID/{print $3}')
lc=$tmp/cache/lines/$bid.lines
ninl=$(grep -c '\[inlined\]' "$tmp/none")
if [ "$ninl" -gt 0 ] && cmp -s "$tmp/none" "$tmp/cold" && cmp -s "$tmp/none" "$tmp/warm" &&
   [ -s "$lc" ] && dwarf_read "$tmp/cold" && ! dwarf_read "$tmp/warm" &&
   [ -z "$(warnings "$tmp/warm")" ]; then
	echo "PASS symbolize_line_cache_same: $(wc -l <"$tmp/none") lines ($ninl inlined) the same without, writing and reading the cache; no DWARF opened when read"
else
	echo "FAIL symbolize_line_cache_same: $ninl inlined, cache file '$(ls "$tmp/cache/lines" 2>&1)'"
	diff "$tmp/none" "$tmp/warm" | head -5
	dwarf_read "$tmp/warm" && echo "#   DWARF read on the warm run"
	warnings "$tmp/warm" | head -3
fi

# the same build ID elsewhere (a copy): its own DWARF is read
cp "$tmp/p" "$tmp/copy"
run "$tmp/copy.out" "$tmp/copy"
# the program changed in place: other mtime (and, rebuilt, other code)
sleep 0.01
touch "$tmp/p"
run "$tmp/touched" "$tmp/p"
run "$tmp/touched2" "$tmp/p"
if dwarf_read "$tmp/copy.out" && cmp -s <(sed "s|($tmp/copy)|(P)|" "$tmp/copy.out") <(sed "s|($tmp/p)|(P)|" "$tmp/none") &&
   dwarf_read "$tmp/touched" && cmp -s "$tmp/none" "$tmp/touched" &&
   ! dwarf_read "$tmp/touched2" && cmp -s "$tmp/none" "$tmp/touched2"; then
	echo "PASS symbolize_line_cache_changed: a copy under the same build ID and a touched file are read from their DWARF, then cached again"
else
	echo "FAIL symbolize_line_cache_changed: DWARF read: copy $(dwarf_read "$tmp/copy.out" && echo yes || echo no), touched $(dwarf_read "$tmp/touched" && echo yes || echo no), then $(dwarf_read "$tmp/touched2" && echo yes || echo no)"
fi

# a damaged cache file: refused with a warning, rewritten
size=$(stat -c %s "$lc")
python3 -c "
import sys
f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2]))
f.write(bytes([b[0] ^ 0x55]))" "$lc" $((size - 3))
run "$tmp/damaged" "$tmp/p"
run "$tmp/repaired" "$tmp/p"
nw=$(warnings "$tmp/damaged" | grep -c "$lc: corrupt line cache at offset")
if [ "$nw" -eq 1 ] && cmp -s "$tmp/none" "$tmp/damaged" && cmp -s "$tmp/none" "$tmp/repaired" &&
   ! dwarf_read "$tmp/repaired" && [ -z "$(warnings "$tmp/repaired")" ]; then
	echo "PASS symbolize_line_cache_damaged: $(warnings "$tmp/damaged" | head -1 | sed "s|$tmp|TMP|")"
else
	echo "FAIL symbolize_line_cache_damaged: $nw warnings: $(warnings "$tmp/damaged" | head -2)"
fi

# no DWARF: remembered for this file, until it changes or a server may
# have the DWARF
strip -g -o "$tmp/nodw" "$tmp/p"
run "$tmp/nodw1" "$tmp/nodw"
run "$tmp/nodw2" "$tmp/nodw"
DEBUGINFOD_URLS=http://127.0.0.1:1 DEBUGINFOD_TIMEOUT=1 run "$tmp/nodw3" "$tmp/nodw"
sleep 0.01
touch "$tmp/nodw"
run "$tmp/nodw4" "$tmp/nodw"
if dwarf_read "$tmp/nodw1" && ! dwarf_read "$tmp/nodw2" && grep -q "$tmp/nodw has no DWARF" "$tmp/nodw2.err" &&
   dwarf_read "$tmp/nodw3" && dwarf_read "$tmp/nodw4" && ! grep -q ' at ' "$tmp/nodw2" &&
   cmp -s "$tmp/nodw1" "$tmp/nodw2" && cmp -s "$tmp/nodw1" "$tmp/nodw4"; then
	echo "PASS symbolize_line_cache_nodwarf: no DWARF remembered; looked for again when the file changed or with DEBUGINFOD_URLS"
else
	echo "FAIL symbolize_line_cache_nodwarf: DWARF read: $(for i in 1 2 3 4; do dwarf_read "$tmp/nodw$i" && echo -n "yes " || echo -n "no "; done)"
fi

# corrupt DWARF under a cached build ID: still found corrupt
cp "$tmp/p" "$tmp/bad"
read -r off size < <(readelf -SW "$tmp/bad" | sed 's/^ *\[ *[0-9]*\]//' | awk '$1==".debug_info"{print $4, $5}')
python3 -c "
import sys
f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2]) + 12)
f.write(bytes([0xff, 0x7f]) * ((int(sys.argv[3]) - 12) // 2))" "$tmp/bad" $((16#$off)) $((16#$size))
run "$tmp/bad.out" "$tmp/bad"
run "$tmp/after" "$tmp/p"
if warnings "$tmp/bad.out" | grep -q "$tmp/bad: corrupt DWARF" && ! grep -q ' at ' "$tmp/bad.out" &&
   cmp -s "$tmp/none" "$tmp/after"; then
	echo "PASS symbolize_line_cache_corrupt: a corrupt copy under the cached build ID is still reported corrupt, without lines"
else
	echo "FAIL symbolize_line_cache_corrupt: $(warnings "$tmp/bad.out" | head -2)"
fi

# report: recorded once, reported without a cache, cold and warm
if ! "$USTACK" record -q -e cpu-clock -F 999 -o "$tmp/t.data" -- timeout 0.5 "$tmp/p" spin >"$tmp/rec.out" 2>&1 ||
   [ ! -s "$tmp/t.data" ]; then
	echo "SKIP symbolize_line_cache_report: ustack record failed: $(head -n2 "$tmp/rec.out")"
	exit 0
fi
rep() { USTACK_DEBUG=1 "$USTACK" report -i "$tmp/t.data" >"$1" 2>"$1.err"; }
USTACK_CACHE_DIR= rep "$tmp/r.none"
export USTACK_CACHE_DIR=$tmp/cache2
rep "$tmp/r.cold"
rep "$tmp/r.warm"
nat=$(grep -c ' at .*p\.c:' "$tmp/r.none")
if [ "$nat" -gt 0 ] && cmp -s "$tmp/r.none" "$tmp/r.cold" && cmp -s "$tmp/r.none" "$tmp/r.warm" &&
   dwarf_read "$tmp/r.cold" && ! dwarf_read "$tmp/r.warm"; then
	echo "PASS symbolize_line_cache_report: the same report ($nat frames with lines of p.c) without, writing and reading the cache; no DWARF opened when read"
else
	echo "FAIL symbolize_line_cache_report: $nat frames with lines; warm run $(dwarf_read "$tmp/r.warm" && echo read || echo did not read) DWARF"
	diff "$tmp/r.none" "$tmp/r.warm" | head -5
fi
