#!/usr/bin/env bash
# Seeds of fuzz_symbolize_dwarf: a libc-free program (a few KB) with an
# always_inline chain, built -O2 -g by gcc (DWARF 4 and 5) and clang (DWARF
# 5: no .debug_aranges, .debug_addr/.debug_str_offsets forms), .comment and
# the property note taken out. Run from the top of the tree.
set -eu
out=tests/fuzz/corpus/symbolize_dwarf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
cat > "$tmp/tiny.c" <<'C'
volatile unsigned long v;
static inline __attribute__((always_inline)) void leaf(unsigned long x) { v += x * 3; }
static inline __attribute__((always_inline)) void mid(unsigned long x) { leaf(x + 1); v ^= x; }
__attribute__((noinline)) void work(unsigned long n) { for (unsigned long i = 0; i < n; i++) mid(i); }
void _start(void) { work(5); for (;;) __asm__ volatile("hlt"); }
C
flags="-O2 -g -nostdlib -static -fno-asynchronous-unwind-tables -Wl,--build-id=none -Wl,-z,noseparate-code"
gcc $flags -gdwarf-4 -o "$tmp/gcc-dwarf4" "$tmp/tiny.c"
gcc $flags -gdwarf-5 -o "$tmp/gcc-dwarf5" "$tmp/tiny.c"
clang $flags -o "$tmp/clang-dwarf5" "$tmp/tiny.c"
for f in gcc-dwarf4 gcc-dwarf5 clang-dwarf5; do
	objcopy -R .comment -R .note.gnu.property "$tmp/$f" "$out/$f"
done
