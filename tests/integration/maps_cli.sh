#!/usr/bin/env bash
# `ustack maps` against the oracles /proc/PID/maps and `readelf -n`, on a
# child `sleep`: the listing of executable mappings, address lookups (ioctl
# and --text must print the same), "not mapped", and the error messages.
set -u
USTACK=${USTACK:-build/check/ustack}
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $1: $2"; }

command -v readelf >/dev/null || { skip maps_cli "readelf not installed"; exit 0; }
[ -x "$USTACK" ] || { fail maps_cli "no $USTACK"; exit 1; }

tmp=$(mktemp -d)
sleep 60 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
# The listing is compared with /proc/PID/maps read here: wait until ld.so is
# done mapping, i.e. sleep is blocked in clock_nanosleep (230) or nanosleep
# (35); libc merely appearing in the maps is not enough (its segments are
# mapped one after the other). Polled for up to 30 s: a loaded machine is slow.
end=$((SECONDS + 30))
until grep -qE '^(230|35) ' /proc/$pid/syscall 2>/dev/null || [ $SECONDS -ge $end ]; do sleep 0.01; done
if ! grep -qE '^(230|35) ' /proc/$pid/syscall 2>/dev/null; then
	fail maps_cli "sleep $pid not in its nanosleep after 30 s: $(cat /proc/$pid/syscall 2>&1)"
	exit 1
fi

build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }'; }

# --- expected listing, from the kernel's text and readelf ------------------
: >"$tmp/expect"
while read -r range perms off dev inode path; do
	[[ $perms == ??x? ]] || continue
	case "$path" in
	/*) bid=$(build_id "$path"); echo "$range $perms $off $dev $inode $path ${bid:--}" ;;
	"[vdso]") echo "$range $perms $off $dev $inode [vdso] VDSO" ;;
	"[vsyscall]") continue ;; # not a VMA for PROCMAP_QUERY
	*) echo "$range $perms $off $dev $inode $path -" ;;
	esac
done </proc/$pid/maps >"$tmp/expect"

"$USTACK" maps -p $pid >"$tmp/got" 2>"$tmp/err"
rc=$?
# the vDSO's build ID has no file to run readelf on: check its shape only
sed -E 's/ \[vdso\] [0-9a-f]{40}$/ [vdso] VDSO/' "$tmp/got" >"$tmp/got.norm"
if [ $rc -ne 0 ]; then
	fail maps_cli_list "exit $rc: $(cat "$tmp/err")"
elif ! diff -u "$tmp/expect" "$tmp/got.norm" >"$tmp/diff"; then
	fail maps_cli_list "listing differs from /proc/$pid/maps + readelf -n: $(head -20 "$tmp/diff")"
elif [ "$(grep -c . "$tmp/got")" -lt 3 ]; then
	fail maps_cli_list "fewer than 3 executable mappings listed"
else
	pass maps_cli_list
fi

"$USTACK" maps -p $pid --text | grep -v '\[vsyscall\]' >"$tmp/got.text"
if diff -u "$tmp/got" "$tmp/got.text" >"$tmp/diff"; then
	pass maps_cli_list_text_agrees
else
	fail maps_cli_list_text_agrees "$(head -10 "$tmp/diff")"
fi

# --- addresses: first, middle and last byte of every executable file mapping
addrs=() expect_lines=()
while read -r range perms off dev inode path; do
	[[ $perms == ??x? && $path == /* ]] || continue
	s=$((16#${range%-*})) e=$((16#${range#*-})) o=$((16#$off))
	bid=$(build_id "$path")
	for a in $s $(((s + e) / 2)) $((e - 1)); do
		addrs+=("$(printf '%x' $a)")
		expect_lines+=("$(printf '0x%x 0x%x %s %s' $a $((a - s + o)) "$path" "${bid:--}")")
	done
done </proc/$pid/maps
printf '%s\n' "${expect_lines[@]}" >"$tmp/expect.addr"
for mode in "" --text; do
	"$USTACK" maps -p $pid $mode "${addrs[@]}" >"$tmp/got.addr" 2>"$tmp/err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "maps_cli_addresses${mode}" "exit $rc: $(cat "$tmp/err")"
	elif ! diff -u "$tmp/expect.addr" "$tmp/got.addr" >"$tmp/diff"; then
		fail "maps_cli_addresses${mode}" "$(head -10 "$tmp/diff")"
	else
		pass "maps_cli_addresses${mode}"
	fi
done

# --- an address in no mapping ------------------------------------------------
out=$("$USTACK" maps -p $pid 0x10 2>&1); rc=$?
if [ $rc -eq 1 ] && [ "$out" = "0x10 - [not mapped] -" ]; then
	pass maps_cli_not_mapped
else
	fail maps_cli_not_mapped "exit $rc, output '$out'"
fi

# --- errors name the pid and exit non-zero ------------------------------------
bash -c 'exit 0' & gone=$!; wait $gone
out=$("$USTACK" maps -p $gone 2>&1); rc=$?
if [ $rc -ne 0 ] && [[ $out == *"pid $gone: no such process"* ]]; then
	pass maps_cli_no_such_pid
else
	fail maps_cli_no_such_pid "exit $rc, output '$out'"
fi

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	skip maps_cli_permission "needs root and setpriv to run as another user"
else
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$USTACK" maps -p $pid 2>&1); rc=$?
	if [ $rc -ne 0 ] && [[ $out == *"pid $pid: permission denied"* ]]; then
		pass maps_cli_permission
	else
		fail maps_cli_permission "exit $rc, output '$out'"
	fi
fi

out=$("$USTACK" maps 2>&1); rc=$?
if [ $rc -ne 0 ] && [[ $out == *"-p PID is required"* ]]; then pass maps_cli_no_pid; else fail maps_cli_no_pid "exit $rc: $out"; fi
out=$("$USTACK" maps -p $pid zz 2>&1); rc=$?
if [ $rc -ne 0 ] && [[ $out == *"'zz' is not a hex address"* ]]; then pass maps_cli_bad_addr; else fail maps_cli_bad_addr "exit $rc: $out"; fi
out=$("$USTACK" maps --help); rc=$?
if [ $rc -eq 0 ] && [[ $out == *"usage: ustack maps -p PID"* ]]; then pass maps_cli_help; else fail maps_cli_help "exit $rc: $(echo "$out" | head -3 | tr '\n' '|')"; fi

exit $((fails > 0))
