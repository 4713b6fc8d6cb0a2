#!/usr/bin/env bash
# `ustack record -e syscalls:sys_enter_write` of a write storm, with each
# backend (--backend bpf, --backend copy), every stack checked against the
# call paths the workload counted itself.
#
# Workload: tests/integration/progs/write_storm.c, built -O2
# -fomit-frame-pointer -fno-optimize-sibling-calls -g, no SFrame (DWARF CFI
# only): T threads make N write(2) calls to /dev/null in all, each from
#   clone3 <- start_thread <- storm_thread <- fa <- fb <- fc <- write
# with (fa, fb, fc) three of 16 functions of four frame shapes (small;
# six callee-saved pushes; a 1 KiB array; an alloca, rbp-based CFA) drawn
# by a per-thread PRNG; the program writes how often it took each path
# (-o FILE: "fa;fb;fc COUNT", "total N"). The oracle is that file: the
# paths come from the program, not from ustack.
#
# Stacks are read from `ustack report --format folded` and judged by
# tests/integration/lib/record_check.py (the same code bench/record uses):
# a worker stack is right when it reads clone3;start_thread;storm_thread;
# fa;fb;fc;write... and the path's recorded count, over all threads, is at
# most the program's count for it.
#
# record_storm_copy   storm (4 threads, 80000 writes): no wrong stack;
#                     at least 50 right ones (even a ring buffer that is
#                     never read holds 62 events of 16 KiB: 1 MiB per CPU
#                     on a machine of more than 16 CPUs, else 4 MiB); the
#                     share recorded right is printed, not asserted (the
#                     copy backend loses events under load by design)
# record_storm_bpf    the same storm: no wrong stack and >= 99% of the
#                     80000 writes recorded with the right stack
# record_storm_lowrate_copy, _bpf
#                     2 threads, 400 writes, a sleep after each: nothing
#                     lost, every write recorded with the right stack
#                     (recorded count == program count for every path)
# record_storm_lowrate_same
#                     and the two backends' folded outputs are identical
#                     (same stacks, same counts, the main thread's too)
# When `ustack record` has no --backend (yet), the bpf checks are SKIPped
# with that reason and the copy backend is the recorder's default; when the
# recorder says BPF cannot be used here, they are SKIPped with its words.
# If the low-rate runs lose records (a machine too loaded to drain even
# that rate), they run again with 4x the sleep, up to twice: the checks
# are about stacks, not speed.
set -u
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $1: $2"; }
CHECK="$TOP/tests/integration/lib/record_check.py"

[ -x "$USTACK" ] || { fail record_storm "no $USTACK"; exit 1; }
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
	skip record_storm "needs root or kernel.perf_event_paranoid <= 1"
	exit 0
fi
. "$TOP/tests/integration/lib/tracepoint.sh"
why=$(tracepoint_why syscalls:sys_enter_write)
if [ -n "$why" ]; then
	skip record_storm "$why"
	exit 0
fi
if ! command -v python3 >/dev/null; then
	skip record_storm "python3 not installed (tests/integration/lib/record_check.py)"
	exit 0
fi

tmp=$(mktemp -d)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
W=$tmp/write_storm
if ! $CC -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -g -o "$W" \
	"$TOP/tests/integration/progs/write_storm.c" -lpthread 2>"$tmp/cc.err"; then
	fail record_storm "cannot build write_storm.c: $(head -3 "$tmp/cc.err" | tr '\n' '|')"
	exit 1
fi
if readelf -SW "$W" | grep -q '\.sframe'; then
	fail record_storm "write_storm has an .sframe section: the test wants DWARF CFI only"
	exit 1
fi
# every frame function under its own name: no .isra/.constprop/.part copies
syms=$(nm --defined-only "$W" | awk '$2 ~ /^[tT]$/ && $3 ~ /^(f[0-9]+|storm_thread)([.].*)?$/ { print $3 }' | sort)
want=$(printf '%s\n' f{0..15} storm_thread | sort)
if [ "$syms" != "$want" ]; then
	fail record_storm "write_storm's frame functions are not f0..f15 + storm_thread: $(echo $syms)"
	exit 1
fi
# the four frame shapes as the compiler made them (information: CFA rules of
# the .eh_frame rows of f0, f4, f8, f12, from readelf)
shapes=$(for f in f0 f4 f8 f12; do
	a=$(nm "$W" | awk -v f=$f '$3 == f { print $1 }')
	readelf -wF "$W" 2>/dev/null | awk -v a="$a" -v f=$f '
		/ FDE / { on = (index($0, "pc=" a "..") > 0); next }
		on && $1 ~ /^[0-9a-f]+$/ && $2 ~ /^r[sb]p\+/ { if (!(seen[$2]++)) s = s " " $2 }
		END { printf "%s:%s;", f, s }'
done)
echo "workload CFA rules (readelf -wF): $shapes"

# ---- the backends ------------------------------------------------------------------
if "$USTACK" record --help 2>&1 | grep -q -- '--backend'; then
	has_backend=1
else
	has_backend=0
fi

# record B OUT ARGS...: record write_storm ARGS with backend B into OUT.data
# (folded stacks in OUT.folded, stats in OUT.stats, the program's counts in
# OUT.counts). Returns 0 when recorded, 1 on a failure (FAIL printed),
# 2 when backend B cannot be used here (reason in $why).
why=
record() {
	local b=$1 out=$2 rc
	shift 2
	local flag=()
	why=
	if [ "$b" = bpf ] && [ $has_backend = 0 ]; then
		why="ustack record has no --backend option (yet): the bpf backend is not built in"
		return 2
	fi
	[ $has_backend = 1 ] && flag=(--backend "$b")
	"$USTACK" record "${flag[@]}" -e syscalls:sys_enter_write -o "$out.data" -- \
		"$W" -o "$out.counts" "$@" >"$out.out" 2>"$out.err"
	rc=$?
	# "BPF backend: ..." is the recorder's one line for a kernel or a
	# process that cannot load its program (no BTF, no permission, a
	# verifier that rejects it): nothing was recorded, BPF is not usable here
	if [ $rc -eq 1 ] && [ "$b" = bpf ] && grep -q '^ustack: BPF backend: ' "$out.err" &&
	   ! grep -q 'Sanitizer\|runtime error' "$out.err"; then
		why="the recorder cannot use BPF here: $(grep -m1 '^ustack: BPF backend: ' "$out.err")"
		return 2
	fi
	if [ $rc -ne 0 ] || grep -q 'Sanitizer\|runtime error' "$out.err"; then
		fail "record_storm_$b" "record exit $rc: $(head -3 "$out.err" | tr '\n' '|')"
		return 1
	fi
	# stderr: the summary lines and nothing else
	if grep -qvE '^ustack: (wrote |backend (bpf|copy): )' "$out.err" || ! grep -q '^ustack: wrote ' "$out.err"; then
		fail "record_storm_$b" "unexpected stderr: $(head -3 "$out.err" | tr '\n' '|')"
		return 1
	fi
	if [ $has_backend = 1 ] && ! grep -q "^ustack: backend $b: " "$out.err"; then
		fail "record_storm_$b" "asked for --backend $b, the summary says: $(tr '\n' '|' <"$out.err")"
		return 1
	fi
	if ! grep -q '^write_storm: ' "$out.out" || ! [ -s "$out.counts" ]; then
		fail "record_storm_$b" "the workload did not finish: $(head -3 "$out.out" | tr '\n' '|')"
		return 1
	fi
	if ! "$USTACK" report -i "$out.data" --format folded >"$out.folded" 2>"$out.rerr" ||
	   ! "$USTACK" report -i "$out.data" --stats >"$out.stats" 2>>"$out.rerr"; then
		fail "record_storm_$b" "report: $(head -3 "$out.rerr" | tr '\n' '|')"
		return 1
	fi
	echo "  $b: $(cat "$out.out")"
	sed "s/^/  $b: /" "$out.err"
	return 0
}
lost_of() { awk '/^lost records:/ { print $3; exit }' "$1"; }
nostack_of() { awk '/^events without user stack:/ { print $5; exit }' "$1"; }

# ---- 1. the storm ------------------------------------------------------------------
for b in copy bpf; do
	record $b "$tmp/storm-$b" -t 4 -n 80000
	case $? in
	1) continue ;;
	2) skip "record_storm_$b" "$why"; continue ;;
	esac
	min=()
	[ $b = bpf ] && min=(--min-share 0.99)
	python3 "$CHECK" paths "$tmp/storm-$b.counts" "$tmp/storm-$b.folded" --label "storm $b" \
		"${min[@]}" >"$tmp/storm-$b.check" 2>&1
	crc=$?
	sed 's/^/  /' "$tmp/storm-$b.check"
	echo "  $b: report --stats: $(lost_of "$tmp/storm-$b.stats") lost records," \
		"$(nostack_of "$tmp/storm-$b.stats") events without user stack"
	read -r right wrong share < <(awk '/^STORM / { for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		print v["right"], v["wrong"], v["share"] }' "$tmp/storm-$b.check")
	if [ $crc -gt 1 ] || [ -z "${right:-}" ]; then
		fail "record_storm_$b" "record_check.py failed: $(tail -2 "$tmp/storm-$b.check" | tr '\n' '|')"
	elif [ "$wrong" -ne 0 ]; then
		fail "record_storm_$b" "$wrong events with a wrong stack (share right $share): $(grep -m3 'WRONG' "$tmp/storm-$b.check" | sed 's/^ *//' | tr '\n' '|' | cut -c1-600)"
	elif [ $b = bpf ] && [ $crc -ne 0 ]; then
		fail "record_storm_$b" "share of writes recorded with the right stack $share, want >= 0.99"
	elif [ "$right" -lt 50 ]; then
		fail "record_storm_$b" "only $right events with the right stack (want >= 50)"
	else
		pass "record_storm_$b"
	fi
done

# ---- 1b. each stack sent once (bpf): the program's stack table ----------------------
# The kernel side sends each distinct stack once and names it by id after
# that (record.bpf.c, stack_id); user space merges stacks by their frames
# anyway, so the trace cannot tell: the bytes the kernel sent can. An
# event record is 56 bytes with its ring header, a 7-frame stack record
# 144: the storm's 4096 paths over 80000 writes add ~7.4 bytes an event,
# a stack sent with every event ~144; a copy (a walk that stopped at a
# table not loaded yet) is ~22 KiB and is allowed for (24 KiB each).
# Bound: 120 bytes an event, plus the copies.
if [ -s "$tmp/storm-bpf.err" ] && [ -s "$tmp/storm-bpf.counts" ]; then
	e=$tmp/storm-bpf.err
	kb=$(sed -n 's/^ustack: backend bpf: kernel->user \([0-9]*\) bytes.*/\1/p' "$e")
	ev=$(sed -n 's/^ustack: wrote .*: \([0-9]*\) events.*/\1/p' "$e")
	cp=$(sed -n 's/.*(\([0-9]*\) finished from a stack copy.*/\1/p' "$e")
	max=$((120 * ${ev:-0} + 24576 * ${cp:-0}))
	echo "  bpf: $kb bytes from the kernel for $ev events and $cp copies (at most $max)"
	if [ "${ev:-0}" -lt 1000 ] || [ "${kb:-0}" -le 0 ]; then
		fail record_storm_dedup "no summary to read the kernel's bytes from: $(head -3 "$tmp/storm-bpf.err" | tr '\n' '|')"
	elif [ "$kb" -gt "$max" ]; then
		fail record_storm_dedup "$kb bytes from the kernel for $ev events ($((kb / ev)) an event): stacks sent more than once"
	else
		pass record_storm_dedup
	fi
fi

# ---- 2. low rate: nothing lost, both backends alike ----------------------------------
lowrate() { # B USEC: record, check, 0 ok / 1 fail / 2 unavailable / 3 lost records
	local b=$1 out=$tmp/low-$1 lost nost
	record "$b" "$out" -t 2 -n 400 -s "$2"
	case $? in 1) return 1 ;; 2) return 2 ;; esac
	lost=$(lost_of "$out.stats"); nost=$(nostack_of "$out.stats")
	if [ "${lost:-x}" != 0 ] || [ "${nost:-x}" != 0 ]; then
		echo "  $b: ${lost:-?} lost records, ${nost:-?} events without user stack at a ${2} us sleep"
		return 3
	fi
	python3 "$CHECK" paths "$out.counts" "$out.folded" --label "low rate $b" --min-share 1 \
		>"$out.check" 2>&1
	local crc=$?
	sed 's/^/  /' "$out.check"
	if [ $crc -ne 0 ]; then
		fail "record_storm_lowrate_$b" "not every write recorded with its right stack: $(grep '^STORM' "$out.check")"
		return 1
	fi
	return 0
}
declare -A LOW
for b in copy bpf; do
	for usec in 2000 8000 32000; do
		lowrate $b $usec
		LOW[$b]=$?
		[ ${LOW[$b]} = 3 ] || break
	done
	case ${LOW[$b]} in
	0) pass "record_storm_lowrate_$b" ;;
	2) skip "record_storm_lowrate_$b" "$why" ;;
	3) fail "record_storm_lowrate_$b" "records lost at every rate down to 2 x 400 writes, one per 32 ms" ;;
	esac
done
if [ "${LOW[copy]}" = 0 ] && [ "${LOW[bpf]}" = 0 ]; then
	if ! cmp -s "$tmp/low-copy.counts" "$tmp/low-bpf.counts"; then
		fail record_storm_lowrate_same "the workload's own counts differ between the runs (not deterministic)"
	elif cmp -s "$tmp/low-copy.folded" "$tmp/low-bpf.folded"; then
		echo "  folded outputs identical: $(wc -l <"$tmp/low-copy.folded") lines, $(awk '{ n += $NF } END { print n }' "$tmp/low-copy.folded") events"
		pass record_storm_lowrate_same
	else
		# a hint for the reader: the same once every frame below the user
		# leaf (write: the frames after it are kernel frames) is cut?
		for b in copy bpf; do
			sed -E 's/(;write);[^ ]*( [0-9]+)$/\1\2/' "$tmp/low-$b.folded" |
				awk '{ n = $NF; $NF = ""; c[$0] += n } END { for (k in c) print k c[k] }' | sort >"$tmp/low-$b.user"
		done
		hint="they differ in the user stacks too"
		cmp -s "$tmp/low-copy.user" "$tmp/low-bpf.user" &&
			hint="identical once the frames below write (kernel frames) are cut: the backends differ in kernel stacks only"
		fail record_storm_lowrate_same "folded outputs differ ($(diff "$tmp/low-copy.folded" "$tmp/low-bpf.folded" | grep -c '^[<>]') lines; $hint): $(diff "$tmp/low-copy.folded" "$tmp/low-bpf.folded" | grep '^[<>]' | head -2 | tr '\n' '|')"
	fi
elif [ "${LOW[bpf]}" = 2 ]; then
	skip record_storm_lowrate_same "$why"
else
	fail record_storm_lowrate_same "no comparison: a low-rate recording failed"
fi
[ $fails -eq 0 ]
