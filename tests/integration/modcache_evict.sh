#!/usr/bin/env bash
# Unwind tables evicted while in use (issue 9's use-after-free, fixed by
# reference counts + weak refs, src/unwind/modules.h). A program loads 300
# distinct copies of a one-function library (many_lib.c), calls each once
# (one write(2) each) and then the first copy again. With the table cache
# cut to two files (--max-tables 2) every few frames evict a table that
# the recorder or the snapshot still refers to. Under ASan (this is the
# check build) any use of a freed table aborts the command.
#   record:    exit 0, no sanitizer report, a complete trace; all 301
#              write events have  write <- many_lib_fn <- call_lib <- main
#              (or many_libs_load, its loop);
#              the copies named are exactly lib0..lib299, lib0 twice (its
#              last call comes after ~300 evictions); many_lib_fn's file
#              offset lies inside the symbol as nm -S gives it.
#   snapshot:  the process waits inside lib0's many_lib_fn; the snapshot
#              with --max-tables 2 has the same pcs as eu-stack and the
#              same names as the snapshot with the default cache.
#   backtrace: ustack_backtrace() with two module slots agrees with glibc's
#              backtrace() frame for frame in every copy (many_libs_bt.c).
set -u
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
CHECK_DIR=${CHECK_DIR:-build/check}
: "${BASE_CFLAGS:=-std=gnu11 -g -O2 -D_GNU_SOURCE}" "${SAN_FLAGS:=-fsanitize=address,undefined}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf}"
N=300
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $1: $2"; }

[ -x "$USTACK" ] || { fail modcache_evict "no $USTACK"; exit 1; }
tmp=$(mktemp -d)
trap '[ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null; [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
P=$TOP/tests/integration/progs
. "$TOP/tests/integration/lib/tracepoint.sh"
. "$TOP/tests/integration/lib/libc_names.sh"
. "$TOP/tests/integration/lib/wait_blocked.sh"
if ! $CC -O2 -fomit-frame-pointer -shared -fPIC -o "$tmp/lib0.so" "$P/many_lib.c" ||
   ! $CC -O2 -fomit-frame-pointer -o "$tmp/many_libs" "$P/many_libs.c" -ldl; then
	fail modcache_evict "cannot build tests/integration/progs/many_lib*.c"
	exit 1
fi
# copies, not links: each is a file of its own (dev/inode) with its own tables
for i in $(seq 1 $((N - 1))); do cp "$tmp/lib0.so" "$tmp/lib$i.so"; done

# ---- backtrace (no privileges needed) --------------------------------------
if $CC $BASE_CFLAGS $SAN_FLAGS -I"$TOP/include" -I"$TOP/src" -o "$tmp/many_libs_bt" \
	"$P/many_libs_bt.c" "$TOP/$CHECK_DIR/libustack.a" $LIB_LDLIBS 2>"$tmp/bt.cc"; then
	out=$("$tmp/many_libs_bt" "$tmp" $N 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && [ "$out" = "ok $((N + 1))" ]; then
		pass backtrace_two_module_slots
	else
		fail backtrace_two_module_slots "exit $rc: $(echo "$out" | head -5)"
	fi
else
	fail backtrace_two_module_slots "cannot build many_libs_bt.c: $(head -3 "$tmp/bt.cc")"
fi

if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
	skip record_two_tables "needs root or kernel.perf_event_paranoid <= 1"
elif why=$(tracepoint_why syscalls:sys_enter_write) && [ -n "$why" ]; then
	skip record_two_tables "$why"
else
	# ---- record ------------------------------------------------------------
	"$USTACK" record --max-tables 2 -q -o "$tmp/t.data" -e syscalls:sys_enter_write -- \
		"$tmp/many_libs" "$tmp" $N >"$tmp/rec.out" 2>"$tmp/rec.err"
	rc=$?
	if [ $rc -ne 0 ] || grep -q "Sanitizer" "$tmp/rec.err"; then
		fail record_two_tables "exit $rc: $(grep -m3 -E 'ERROR|ustack:' "$tmp/rec.err")"
	elif ! "$USTACK" report -i "$tmp/t.data" --no-lines >"$tmp/rep.txt" 2>"$tmp/rep.err"; then
		fail record_two_tables "report failed: $(head -3 "$tmp/rep.err")"
	else
		# per event: frames 0..3 as "name (path)"; frame 0 is libc's
		# write under any of its names (lib/libc_names.sh)
		WRE=$(libc_aliases write "$(libc_path "$tmp/many_libs")") awk -v tmp="$tmp" '
			BEGIN { wre = ENVIRON["WRE"] }
			/^[^ ].*syscalls:sys_enter_write/ { ev++; fr = 0; next }
			/^ => / && ev { fr++; line = $0; sub(/^ => /, "", line); sub(/\+0x[0-9a-f]+ /, " ", line)
				if (fr <= 4) f[ev, fr] = line }
			END {
				for (e = 1; e <= ev; e++) {
					if (f[e,1] !~ ("^" wre " \\(.*libc\\.so\\.6\\)$") || f[e,2] !~ /^many_lib_fn \(.*\/lib[0-9]+\.so\)$/ ||
					    f[e,3] !~ /^call_lib \(.*many_libs\)$/ || f[e,4] !~ /^(main|many_libs_load[.a-z0-9]*) \(.*many_libs\)$/) {
						print "BAD " e ": " f[e,1] " | " f[e,2] " | " f[e,3] " | " f[e,4]; continue }
					lib = f[e,2]; sub(/^.*\//, "", lib); sub(/\)$/, "", lib); print "LIB " lib
				}
				print "EVENTS " ev
			}' "$tmp/rep.txt" >"$tmp/ev.txt"
		nev=$(awk '/^EVENTS/ { print $2 }' "$tmp/ev.txt")
		nbad=$(grep -c '^BAD' "$tmp/ev.txt")
		ndistinct=$(grep '^LIB' "$tmp/ev.txt" | sort -u | wc -l)
		nlib0=$(grep -c '^LIB lib0.so$' "$tmp/ev.txt")
		if [ "$nev" = $((N + 1)) ] && [ "$nbad" = 0 ] && [ "$ndistinct" = $N ] && [ "$nlib0" = 2 ]; then
			pass record_two_tables
		else
			fail record_two_tables "events $nev (want $((N + 1))), bad stacks $nbad, distinct copies $ndistinct (want $N), lib0 $nlib0 (want 2); $(grep -m2 '^BAD' "$tmp/ev.txt")"
		fi
		# oracle for the offsets: nm -S range of many_lib_fn in the file
		read -r sym_start sym_size < <(nm -S --defined-only "$tmp/lib0.so" |
			awk '$4 == "many_lib_fn" { print $1, $2 }')
		bad_off=$("$USTACK" report -i "$tmp/t.data" --format raw 2>/dev/null | awk -v s=$((16#$sym_start)) -v z=$((16#$sym_size)) '
			function hex(h,   i, v) { v = 0; h = tolower(h); sub(/^0x/, "", h)
				for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
				return v }
			/file_map: id=/ { id = $0; sub(/.*file_map: id=/, "", id); sub(/ .*/, "", id); copy[id] = ($0 ~ /path=[^ ]*\/lib[0-9]+\.so /) }
			/^ => </ { o = $2; gsub(/[<>]/, "", o); if (copy[$4]) { n++; off = hex(o); if (off - 1 < s || off - 1 >= s + z) bad++ } }
			END { print n + 0, bad + 0 }')
		if [ "${bad_off% *}" = $((N + 1)) ] && [ "${bad_off#* }" = 0 ]; then
			pass record_two_tables_offsets
		else
			fail record_two_tables_offsets "frames in the copies / outside many_lib_fn (nm -S): $bad_off"
		fi
	fi
fi

# ---- snapshot ------------------------------------------------------------------
if ! command -v eu-stack >/dev/null; then
	skip snapshot_two_tables "eu-stack missing (apt-get install elfutils)"
	exit $((fails > 0))
fi
"$tmp/many_libs" "$tmp" $N "$tmp/ready" >/dev/null &
pid=$!
for _ in $(seq 600); do [ -e "$tmp/ready" ] && break; sleep 0.1; done
if ! [ -e "$tmp/ready" ]; then
	fail snapshot_two_tables "the program never reached lib0 (no $tmp/ready after 60 s)"
	exit 1
fi
# the file exists from its fopen() on: the three looks below must see the
# same stack, so wait until the program sleeps in pause (34) for good
if ! wait_blocked "$pid" 34 1; then
	fail snapshot_two_tables "the program did not block in pause inside lib0: $(syscalls "$pid")"
	exit 1
fi
"$USTACK" snapshot -p "$pid" --max-tables 2 >"$tmp/snap2.txt" 2>"$tmp/snap2.err"
rc2=$?
"$USTACK" snapshot -p "$pid" >"$tmp/snap.txt" 2>"$tmp/snap.err"
eu-stack -p "$pid" >"$tmp/eu.txt" 2>/dev/null
awk '/^#/ { print $2 }' "$tmp/snap2.txt" >"$tmp/pcs2"
awk '/^#[0-9]/ { h = $2; sub(/^0x0*/, "", h); print "0x" h }' "$tmp/eu.txt" >"$tmp/pcs_eu"
if [ $rc2 -ne 0 ] || grep -q Sanitizer "$tmp/snap2.err"; then
	fail snapshot_two_tables "exit $rc2: $(grep -m3 -E 'ERROR|ustack:' "$tmp/snap2.err")"
elif ! grep -q 'many_lib_fn+0x[0-9a-f]* (.*/lib0\.so)' "$tmp/snap2.txt"; then
	fail snapshot_two_tables "no many_lib_fn frame in lib0.so: $(head -5 "$tmp/snap2.txt")"
elif ! cmp -s "$tmp/pcs2" "$tmp/pcs_eu"; then
	fail snapshot_two_tables "pcs differ from eu-stack: $(diff "$tmp/pcs2" "$tmp/pcs_eu" | head -4)"
elif ! cmp -s "$tmp/snap2.txt" "$tmp/snap.txt"; then
	fail snapshot_two_tables "differs from the default cache: $(diff "$tmp/snap2.txt" "$tmp/snap.txt" | head -4)"
else
	pass snapshot_two_tables
fi
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=
exit $((fails > 0))
