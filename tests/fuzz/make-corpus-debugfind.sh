#!/usr/bin/env bash
# Seed corpus of fuzz_debugfind (tests/fuzz/corpus/debugfind/): each file is
# a selector byte (0 ELF, 1 xz, 2 compressed section) and then the input.
# Needs gcc, objcopy, xz, zstd, python3. Run from the top of the tree.
set -eu
out=tests/fuzz/corpus/debugfind
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
echo 'static int f(int x) { return x + 1; } int g(int x) { return f(x) * 2; }' > "$tmp/a.c"
gcc -O2 -g -c "$tmp/a.c" -o "$tmp/a.o"
touch "$tmp/a.debug"
objcopy --strip-debug --add-gnu-debuglink="$tmp/a.debug" "$tmp/a.o" "$tmp/link.o"
{ printf '\0'; cat "$tmp/link.o"; } > "$out/elf-debuglink"
python3 tests/integration/lib/zstd_sections.py "$tmp/a.o" "$tmp/zstd.o" 2>/dev/null
{ printf '\0'; cat "$tmp/zstd.o"; } > "$out/elf-zstd-sections"
objcopy --strip-debug "$tmp/a.o" "$tmp/mini.o"
xz -c "$tmp/mini.o" > "$tmp/mini.xz"
objcopy --strip-all --add-section .gnu_debugdata="$tmp/mini.xz" "$tmp/a.o" "$tmp/dd.o"
{ printf '\0'; cat "$tmp/dd.o"; } > "$out/elf-gnu-debugdata"
{ printf '\1'; cat "$tmp/mini.xz"; } > "$out/xz-elf"
python3 - "$out" <<'PY'
import struct, sys, zlib, subprocess
out = sys.argv[1]
raw = bytes(range(256)) * 4
z = zlib.compress(raw)
open(out + "/chdr-zlib", "wb").write(b"\2" + struct.pack("<IIQQ", 1, 0, len(raw), 1) + z)
zs = subprocess.run(["zstd", "-q", "-c"], input=raw, stdout=subprocess.PIPE, check=True).stdout
open(out + "/chdr-zstd", "wb").write(b"\2" + struct.pack("<IIQQ", 2, 0, len(raw), 8) + zs)
PY
ls -l "$out"
