#!/usr/bin/env bash
# corrupt_fde.sh FILE FUNCTION
#
# Damages, in place, the .eh_frame FDE that covers FUNCTION in the ELF file
# FILE: every byte of its call frame instructions becomes 0x3f
# (DW_CFA_hi_user, an opcode no unwinder implements), so that FDE, and
# only it, is corrupt. Its length, CIE pointer, pc_begin and pc_range stay
# as they were: the rest of .eh_frame and .eh_frame_hdr remain valid and
# the program runs as before (nothing unwinds it at run time).
#
# The FDE is found without ustack: FUNCTION's address from nm, the FDE
# whose pc range holds it from `readelf --debug-dump=frames` (offset in the
# section, length, CIE), the section's file offset and address from
# `readelf -S`. Before writing, the bytes in the file are checked against
# what readelf printed (length, pc_begin as pcrel|sdata4, pc_range, an
# empty augmentation data block), so a wrong offset fails instead of
# damaging something else. The CIE must have augmentation "zR" with
# pointer encoding 0x1b (pcrel|sdata4), what GCC and binutils emit on
# x86-64.
#
# Prints one line: "FDE at .eh_frame+0xOFF (file offset 0xN): pc [A, B),
# N instruction bytes set to 0x3f"; exit status 1 and a reason on stderr
# when any of this does not hold.
set -u
file=$1 func=$2
die() { echo "corrupt_fde: $file: $*" >&2; exit 1; }

addr=$(nm --defined-only "$file" 2>/dev/null | awk -v f="$func" '$3 == f { print $1; exit }')
[ -n "$addr" ] || die "no symbol $func"
addr=$((16#$addr))

read -r sec_addr sec_off < <(readelf -SW "$file" | sed 's/^ *\[ *[0-9]*\] *//' |
	awk '$1 == ".eh_frame" { print $3, $4 }')
[ -n "${sec_off:-}" ] || die "no .eh_frame section"
sec_addr=$((16#$sec_addr)) sec_off=$((16#$sec_off))

# "OFF LEN CIEPTR FDE cie=CIE pc=START..END" and the CIE's augmentation
read -r fde_off fde_len cie_ptr cie_off pc_lo pc_hi < <(readelf --debug-dump=frames "$file" 2>/dev/null |
	awk -v a="$addr" '
	function hex(s,   v, i) { v = 0; s = tolower(s)
		for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v }
	/^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ FDE cie=/ {
		cie = $5; sub(/^cie=/, "", cie); pc = $6; sub(/^pc=/, "", pc); split(pc, r, /\.\./)
		if (hex(r[1]) <= a && a < hex(r[2])) { print hex($1), hex($2), hex($3), hex(cie), hex(r[1]), hex(r[2]); exit }
	}')
[ -n "${pc_hi:-}" ] || die "no .eh_frame FDE covers $func (0x$(printf %x $addr))"
aug=$(readelf --debug-dump=frames "$file" 2>/dev/null | awk -v c="$(printf %08x "$cie_off")" '
	$1 == c && $4 == "CIE" { in_cie = 1; next }
	in_cie && /^[0-9a-f]+ / { exit }
	in_cie && /Augmentation:/ { a = $2 }
	in_cie && /Augmentation data:/ { d = $3 }
	END { print a, d }')
[ "$aug" = '"zR" 1b' ] || die "CIE at 0x$(printf %x $cie_off): augmentation $aug, want \"zR\" 1b"

u32() { od -An -tu4 -j "$1" -N4 "$file" | tr -d ' '; }
at=$((sec_off + fde_off))
len=$(u32 $at)
[ "$len" = "$fde_len" ] || die "length at file offset 0x$(printf %x $at) is $len, readelf said $fde_len"
[ "$(u32 $((at + 4)))" = "$cie_ptr" ] || die "CIE pointer mismatch at file offset 0x$(printf %x $((at + 4)))"
begin=$(u32 $((at + 8)))
[ "$begin" -ge $((1 << 31)) ] && begin=$((begin - (1 << 32)))
[ $((sec_addr + fde_off + 8 + begin)) -eq "$pc_lo" ] || die "pc_begin at file offset 0x$(printf %x $((at + 8))) does not decode to 0x$(printf %x $pc_lo)"
[ "$(u32 $((at + 12)))" -eq $((pc_hi - pc_lo)) ] || die "pc_range mismatch"
[ "$(od -An -tu1 -j $((at + 16)) -N1 "$file" | tr -d ' ')" = 0 ] || die "FDE has augmentation data (an LSDA?)"

start=$((at + 17)) n=$((4 + len - 17))
[ "$n" -gt 0 ] || die "FDE has no instructions"
head -c "$n" /dev/zero | tr '\0' '\077' | dd of="$file" bs=1 seek="$start" conv=notrunc status=none ||
	die "cannot write"
printf 'FDE at .eh_frame+0x%x (file offset 0x%x): pc [0x%x, 0x%x), %d instruction bytes set to 0x3f\n' \
	"$fde_off" "$at" "$pc_lo" "$pc_hi" "$n"
