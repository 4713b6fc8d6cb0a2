#!/usr/bin/env bash
# Regenerate tests/fuzz/corpus/cfi/ seeds from real binaries: the
# .eh_frame (+ .eh_frame_hdr) or .debug_frame of small programs, packed in
# fuzz_cfi's input layout (u8 mode, u64 section addr, u64 hdr addr,
# u32 hdr len, hdr, section). Also adds the unit tests' hand-made buffers
# (test_cfi writes them when USTACK_CFI_DUMP_DIR is set).
# Usage: bash tests/data/cfi/make_fuzz_corpus.sh   (from the top directory)
set -eu
out=tests/fuzz/corpus/cfi
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pack() { # name, mode, elf
	local name=$1 mode=$2 elf=$3 sec hdr
	if [ "$mode" = 1 ]; then sec=.debug_frame; else sec=.eh_frame; fi
	rm -f "$tmp/sec" "$tmp/hdr"
	objcopy --dump-section "$sec=$tmp/sec" "$elf" "$tmp/junk" 2>/dev/null || return 0
	: >"$tmp/hdr"
	if [ "$mode" = 0 ]; then
		objcopy --dump-section ".eh_frame_hdr=$tmp/hdr" "$elf" "$tmp/junk" 2>/dev/null || :
	fi
	local sa ha
	sa=$(readelf -SW "$elf" | awk -v s="$sec" '$2==s {print $4} $3==s {print $5}' | head -1)
	ha=$(readelf -SW "$elf" | awk '$2==".eh_frame_hdr" {print $4} $3==".eh_frame_hdr" {print $5}' | head -1)
	python3 - "$mode" "${sa:-0}" "${ha:-0}" "$tmp/hdr" "$tmp/sec" "$out/$name" <<'PY'
import struct, sys
mode, sa, ha, hp, sp, op = sys.argv[1:]
h = open(hp, 'rb').read(); s = open(sp, 'rb').read()
open(op, 'wb').write(struct.pack('<BQQI', int(mode), int(sa, 16), int(ha, 16), len(h)) + h + s)
PY
}

cc=${CC:-gcc}
src=tests/data/cfi/cfi_prog.c
$cc -O2 -o "$tmp/prog" "$src"
$cc -O2 -fomit-frame-pointer -o "$tmp/prog_nofp" "$src"
$cc -O2 -g -fno-asynchronous-unwind-tables -o "$tmp/prog_dbg" "$src"
$cc -O2 -g -gdwarf64 -fno-asynchronous-unwind-tables -fno-dwarf2-cfi-asm -o "$tmp/prog_dbg64" "$src"
pack prog_eh 0 "$tmp/prog"
pack prog_nofp_eh 0 "$tmp/prog_nofp"
pack prog_dbg_debug_frame 1 "$tmp/prog_dbg"
pack prog_dbg64_debug_frame 1 "$tmp/prog_dbg64"
pack true_eh 0 /usr/bin/true

if [ -x build/check/tests/test_cfi ]; then
	USTACK_CFI_DUMP_DIR="$out" build/check/tests/test_cfi >/dev/null
fi
ls "$out" | wc -l
