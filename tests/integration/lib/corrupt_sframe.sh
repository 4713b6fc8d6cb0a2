#!/usr/bin/env bash
# corrupt_sframe.sh FILE FUNCTION
#
# Damages, in place, the .sframe FDE (SFrame v1 or v2) that covers
# FUNCTION in the ELF file FILE: its FRE count becomes 0xffffffff, a count
# no section can hold (each FRE takes at least 2 bytes), so that FDE is
# impossible while the header, the other FDEs and .eh_frame stay as they
# were (the program runs as before: nothing reads .sframe at run time).
#
# The FDE is found without ustack: FUNCTION's address from nm, the index of
# the SFrame function that covers it from `objdump --sframe` ("func idx
# [I]: pc = A, size = N bytes"), the section's file offset and address from
# `readelf -S`, the header fields read with od. Before writing, the FDE's
# start address (sfde_func_start_address, relative to the section, or to
# the field with SFRAME_F_FDE_FUNC_START_PCREL) and size are checked
# against what objdump printed, so a wrong offset fails instead of damaging
# something else.
#
# Prints one line: "FDE I at .sframe+0xOFF (file offset 0xN): pc [A, B),
# FRE count C -> 4294967295"; exit status 1 and a reason on stderr when any
# of this does not hold, 3 when the section is of another SFrame version.
set -u
file=$1 func=$2
die() { echo "corrupt_sframe: $file: $*" >&2; exit "${3:-1}"; }

addr=$(nm --defined-only "$file" 2>/dev/null | awk -v f="$func" '$3 == f { print $1; exit }')
[ -n "$addr" ] || die "no symbol $func"
addr=$((16#$addr))

read -r sec_addr sec_off < <(readelf -SW "$file" | sed 's/^ *\[ *[0-9]*\] *//' |
	awk '$1 == ".sframe" { print $3, $4 }')
[ -n "${sec_off:-}" ] || die "no .sframe section"
sec_addr=$((16#$sec_addr)) sec_off=$((16#$sec_off))

# "IDX PC SIZE" of the function that covers addr, per objdump
read -r idx pc size < <(objdump --sframe=.sframe "$file" 2>/dev/null | awk -v a="$addr" '
	function hex(s,   v, i) { v = 0; s = tolower(s); sub(/^0x/, "", s)
		for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v }
	/func idx \[[0-9]+\]: pc = 0x[0-9a-f]+, size = [0-9]+ bytes/ {
		i = $3; gsub(/[^0-9]/, "", i); p = $6; sub(/,$/, "", p); s = $9
		v = hex(p); if (v <= a && a < v + s) { print i, v, s; exit }
	}')
[ -n "${size:-}" ] || die "objdump --sframe shows no function covering $func (0x$(printf %x $addr))"

u8() { od -An -tu1 -j "$1" -N1 "$file" | tr -d ' '; }
u32() { od -An -tu4 -j "$1" -N4 "$file" | tr -d ' '; }
[ "$(od -An -tx2 -j "$sec_off" -N2 "$file" | tr -d ' ')" = dee2 ] || die "no SFrame magic at file offset 0x$(printf %x $sec_off)"
ver=$(u8 $((sec_off + 2))) flags=$(u8 $((sec_off + 3)))
case $ver in
1) fde_size=17 ;;
2) fde_size=20 ;;
*) die "SFrame version $ver (only 1 and 2 are handled)" "" 3 ;;
esac
aux=$(u8 $((sec_off + 7)))
nr_fdes=$(u32 $((sec_off + 8)))
[ "$idx" -lt "$nr_fdes" ] || die "function index $idx, but the header says $nr_fdes FDEs"
fde_off=$((28 + aux + $(u32 $((sec_off + 20))) + idx * fde_size))
at=$((sec_off + fde_off))
start=$(u32 $at)
[ "$start" -ge $((1 << 31)) ] && start=$((start - (1 << 32)))
base=$sec_addr
[ $((flags & 4)) -ne 0 ] && base=$((sec_addr + fde_off))
[ $((base + start)) -eq "$pc" ] || die "FDE $idx at file offset 0x$(printf %x $at): start 0x$(printf %x $((base + start))), objdump says 0x$(printf %x $pc)"
[ "$(u32 $((at + 4)))" -eq "$size" ] || die "FDE $idx: size $(u32 $((at + 4))), objdump says $size"
old=$(u32 $((at + 12)))
printf '\377\377\377\377' | dd of="$file" bs=1 seek=$((at + 12)) conv=notrunc status=none || die "cannot write"
printf 'FDE %d at .sframe+0x%x (file offset 0x%x): pc [0x%x, 0x%x), FRE count %d -> 4294967295\n' \
	"$idx" "$fde_off" "$at" "$pc" $((pc + size)) "$old"
