#!/usr/bin/env bash
# Seed corpus of fuzz_line_cache (tests/fuzz/corpus/line_cache/): the line
# cache files `ustack symbolize` writes for a program with inlined
# functions, and for libc when its DWARF is installed (libc6-dbg).
# Needs gcc and a built build/ustack. Run from the top of the tree.
set -eu
out=tests/fuzz/corpus/line_cache
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
cat >"$tmp/p.c" <<'C'
static inline __attribute__((always_inline)) int leaf(int x) { return x * 3 + 1; }
static inline __attribute__((always_inline)) int mid(int x) { return leaf(x) + leaf(x + 1); }
__attribute__((noinline)) int top(int x) { return mid(x) * 2; }
int main(int argc, char **argv) { (void)argv; return top(argc); }
C
gcc -O2 -g -o "$tmp/p" "$tmp/p.c"
export USTACK_CACHE_DIR=$tmp/cache
# a few offsets in the text: inside top (inlined chain), main, and a gap
start=$(nm "$tmp/p" | awk '$3 == "top" { print $1 }')
offs=""
for d in 0 2 4 8; do offs="$offs 0x$(printf '%x' $((16#$start + d - 0x0)))"; done
build/ustack symbolize -e "$tmp/p" $offs >/dev/null
libc=$(ldd "$tmp/p" | awk '/libc.so/ { print $3 }')
build/ustack symbolize -e "$libc" 0x29d90 0x2a000 0x80000 >/dev/null || true
n=0
for f in "$tmp"/cache/lines/*.lines; do
	[ -f "$f" ] || continue
	n=$((n + 1)); cp "$f" "$out/seed-$n"
done
ls -l "$out"
