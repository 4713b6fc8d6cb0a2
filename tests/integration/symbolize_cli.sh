#!/usr/bin/env bash
# ustack symbolize against nm (names and sizes of functions) on a program
# built here and on libc (names from libc6-dbg's build-ID debug file, when
# installed: checked against nm on that debug file).
set -u
: "${USTACK:?}"
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/p.c" <<'C'
__attribute__((noinline)) int alpha(int x) { return x * 3 + 1; }
__attribute__((noinline)) int beta(int x) { return alpha(x) * 5; }
__attribute__((noinline)) static int gamma_local(int x) { return beta(x) + 7; }
int main(int c, char **v) { return gamma_local(c); }
C
$CC -O2 "$tmp/p.c" -o "$tmp/p" || { echo "FAIL symbolize_cli: cannot build"; exit 1; }
# file offset of a vaddr through the PT_LOADs (readelf as the oracle)
off_of() { readelf -lW "$1" | awk -v a=$((16#$2)) '$1=="LOAD"{o=strtonum($2);v=strtonum($3);f=strtonum($5);
	if (a>=v && a<v+f) {printf "0x%x\n", a-v+o; exit}}'; }
if ! awk 'BEGIN{strtonum("0x1")}' 2>/dev/null; then off_of() { readelf -lW "$1" | while read -r t o v p f rest; do
	[ "$t" = LOAD ] || continue; a=$((16#$2)); if [ $a -ge $((v)) ] && [ $a -lt $((v + f)) ]; then printf '0x%x\n' $((a - v + o)); break; fi; done; }; fi
bad=0 n=0
for fn in alpha beta gamma_local main; do
	line=$(nm -S "$tmp/p" | awk -v f=$fn '$4==f {print $1, $2}')
	addr=${line% *}; size=$((16#${line#* }))
	mid=$(printf '%x' $((16#$addr + size / 2)))
	off=$(off_of "$tmp/p" "$mid")
	got=$("$USTACK" symbolize -e "$tmp/p" "$off")
	want="$off $fn+0x$(printf '%x' $((size / 2)))"
	n=$((n + 1))
	case "$got" in "$want ("*) ;; *) bad=$((bad + 1)); echo "# $fn: got '$got', want '$want (...)'";; esac
done
[ $bad -eq 0 ] && echo "PASS symbolize_cli_program: $n functions named as nm says (name and offset)" \
	|| echo "FAIL symbolize_cli_program: $bad of $n wrong"

# --return: the name is that of offset - 1 (a call at the very end of alpha)
end=$(nm -S "$tmp/p" | awk '$4=="alpha"{print $1, $2}')
eoff=$(off_of "$tmp/p" "$(printf '%x' $((16#${end% *} + 16#${end#* })))")
r=$("$USTACK" symbolize -r -e "$tmp/p" "$eoff")
case "$r" in *" alpha+0x"*) echo "PASS symbolize_cli_return: end of alpha with --return names alpha" ;;
	*) echo "FAIL symbolize_cli_return: '$r'" ;; esac

. "${TOP:-$PWD}/tests/integration/lib/libc_names.sh"
libc=$(libc_path "$tmp/p")
bid=$(readelf -n "$libc" 2>/dev/null | sed -n 's/.*Build ID: //p')
dbg=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
if [ -n "$bid" ] && [ -f "$dbg" ]; then
	line=$(nm -S "$dbg" | awk '$3=="t" && $4=="start_thread" {print $1, $2}')
	addr=${line% *}
	off=$(off_of "$libc" "$(printf '%x' $((16#$addr + 16)))")
	got=$("$USTACK" symbolize -e "$libc" "$off")
	case "$got" in "$off start_thread+0x10 ("*) echo "PASS symbolize_cli_debugfile: libc's local start_thread named from its build-ID debug file" ;;
		*) echo "FAIL symbolize_cli_debugfile: got '$got'" ;; esac
else
	echo "SKIP symbolize_cli_debugfile: libc6-dbg's debug file for libc is not installed"
fi

# errors: missing file, unknown build ID, bad offset, usage
"$USTACK" symbolize -e "$tmp/none" 0x10 >/dev/null 2>"$tmp/e1"; r1=$?
"$USTACK" symbolize --build-id 0011223344 0x10 >"$tmp/o2" 2>&1; r2=$?
"$USTACK" symbolize -e "$tmp/p" zz >/dev/null 2>"$tmp/e3"; r3=$?
"$USTACK" symbolize >/dev/null 2>&1; r4=$?
if [ $r1 -eq 1 ] && grep -q "$tmp/none" "$tmp/e1" && [ $r2 -eq 1 ] && grep -q "file not found" "$tmp/o2" &&
   [ $r3 -eq 2 ] && grep -q "bad offset 'zz'" "$tmp/e3" && [ $r4 -eq 2 ]; then
	echo "PASS symbolize_cli_errors: missing file, unknown build ID, bad offset, usage"
else
	echo "FAIL symbolize_cli_errors: exits $r1 $r2 $r3 $r4"; cat "$tmp/e1" "$tmp/o2" "$tmp/e3"
fi
