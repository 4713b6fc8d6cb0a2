#!/usr/bin/env bash
# ustack_backtrace() against gdb's backtrace, an oracle independent of both
# libgcc and ustack: tests/integration/progs/bt_gdb.c, built
# -O2 -fomit-frame-pointer -Wa,--gsframe, runs under gdb -batch; gdb breaks
# in bt_gdb_stop(), called from the same call instruction as
# ustack_backtrace(), prints "bt", and the program prints ustack's entries.
# ustack entry i must equal the pc of gdb frame #(i+1), for every gdb frame
# up to main, and gdb must show the 11 frames the call structure has.
set -u
T=backtrace_gdb
: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${CHECK_DIR:=build/check}" "${CC:=gcc}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf}"
: "${SAN_FLAGS:=-fsanitize=address,undefined -fno-sanitize-recover=undefined}"
cd "$TOP" || exit 1

if [ -z "${GSFRAME:-}" ]; then
	echo "SKIP $T: the assembler cannot emit SFrame (GSFRAME is empty; needs binutils >= 2.40)"
	exit 0
fi
if ! command -v gdb >/dev/null; then
	echo "SKIP $T: gdb not installed (apt-get install gdb)"
	exit 0
fi

# a directory per run: several make check runs may share one checkout
mkdir -p "$TOP/$CHECK_DIR/it"
OUT=$(mktemp -d "$TOP/$CHECK_DIR/it/bt_gdb.XXXXXX") || exit 1
EXE="$OUT/bt_gdb"
# the release library keeps gdb away from the sanitizer runtime (LeakSanitizer
# refuses to run under ptrace); fall back to the ASan one without leak checks
if [ -f build/libustack.a ]; then
	LIB=(build/libustack.a); LINKSAN=()
else
	LIB=("$CHECK_DIR/libustack.a"); LINKSAN=($SAN_FLAGS)
fi
if ! "$CC" -std=gnu11 -g -O2 -fomit-frame-pointer $GSFRAME -D_GNU_SOURCE -Iinclude \
	-c -o "$OUT/bt_gdb.o" tests/integration/progs/bt_gdb.c >"$OUT/bt_gdb.build.log" 2>&1 ||
   ! "$CC" "${LINKSAN[@]}" -o "$EXE" "$OUT/bt_gdb.o" "${LIB[@]}" $LIB_LDLIBS \
	>>"$OUT/bt_gdb.build.log" 2>&1; then
	echo "FAIL $T: build failed"
	sed 's/^/  | /' "$OUT/bt_gdb.build.log" | head -30
	exit 1
fi

LOG="$OUT/bt_gdb.gdb.log"
ASAN_OPTIONS=detect_leaks=0 timeout 120 gdb -batch -nx \
	-ex 'set pagination off' -ex 'set confirm off' \
	-ex 'break bt_gdb_stop' -ex run -ex bt -ex continue "$EXE" >"$LOG" 2>&1
rc=$?
if ! grep -q '^DONE ' "$LOG"; then
	echo "FAIL $T: the program did not finish under gdb (status $rc)"
	tail -20 "$LOG" | sed 's/^/  | /'
	exit 1
fi

# gdb: "#3  0x0000555555555234 in gdb_alloca (n=...) at ..."
mapfile -t G < <(sed -nE 's/^#([0-9]+) +0x0*([0-9a-f]+) in ([^ ]+).*/\1 \2 \3/p' "$LOG")
mapfile -t U < <(sed -nE 's/^USTACK ([0-9]+) 0x0*([0-9a-f]+)$/\1 \2/p' "$LOG")
expect=(gdb_leaf gdb_regs gdb_alloca gdb_rec gdb_rec gdb_rec gdb_rec gdb_rec gdb_big main)

fail=0
if [ ${#G[@]} -ne ${#expect[@]} ]; then
	echo "FAIL $T: gdb shows ${#G[@]} caller frames, the call structure has ${#expect[@]}"
	fail=1
fi
for ((i = 0; i < ${#G[@]}; i++)); do
	read -r gi gpc gname <<<"${G[$i]}"
	upc=$(awk -v k="$i" '$1 == k { print $2 }' <<<"$(printf '%s\n' "${U[@]}")")
	if [ "$gi" -ne $((i + 1)) ]; then
		echo "FAIL $T: unexpected gdb frame numbering at #$gi"; fail=1; break
	fi
	if [ "$gname" != "${expect[$i]:-?}" ]; then
		echo "FAIL $T: gdb frame #$gi is $gname, expected ${expect[$i]:-nothing}"; fail=1
	fi
	if [ "$upc" != "$gpc" ]; then
		echo "FAIL $T: index $i: ustack 0x${upc:--} != gdb #$gi 0x$gpc ($gname)"
		fail=1
	fi
done
if [ $fail -ne 0 ]; then
	echo "  gdb:"; grep -E '^#[0-9]' "$LOG" | sed 's/^/  | /'
	echo "  ustack:"; printf '  | %s\n' "${U[@]}"
	exit 1
fi
rm -rf "$OUT"
echo "PASS $T: ustack_backtrace equals gdb's bt for all ${#G[@]} frames up to main" \
	"(ustack returned ${#U[@]} entries)"
