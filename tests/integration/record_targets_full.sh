#!/usr/bin/env bash
# The bpf backend follows the processes a recorded one starts through its
# table of recorded processes (`targets`, 65,536 live at once). A child it
# has no room for is not recorded: that must be said, never silent.
# progs/fork_hold.c N forks N children alive together, then each child and
# the parent make one getppid() call; recorded with
# -e syscalls:sys_enter_getppid:
#   roomy/bpf  the default table: N + 1 = 9 events, stat targets_full 0,
#              no warning
#   full/bpf   a table of 4 (the test knob USTACK_BPF_TARGETS_MAX=4): the
#              parent and 3 children fit, the other 5 do not: exactly 4
#              events, stat targets_full 5, and one warning line naming 5
#              processes and the table's 4
#   verifier-stats/bpf  the roomy run with USTACK_BPF_VERIFIER_STATS=1:
#              the kernel verifier's count of processed instructions
#              (1..1,000,000) for each program loaded (ustack_tp and the
#              fork, exit and exec ones), none for one not loaded
#              (ustack_sample)
# SKIP with the recorder's reason where the bpf backend or the tracepoint
# is not available.
set -u
T=record_targets_full
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; }
skip() { echo "SKIP $T/$1: $2"; }

. "$TOP/tests/integration/lib/tracepoint.sh"
why=$(tracepoint_why syscalls:sys_enter_getppid)
if [ -n "$why" ]; then
	skip all "$why"
	exit 0
fi
tmp=$(mktemp -d /tmp/ustack-targets.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export USTACK_CACHE_DIR=$tmp/cache
if ! $CC -O2 -o "$tmp/fork_hold" "$TOP/tests/integration/progs/fork_hold.c"; then
	fail build "cannot compile tests/integration/progs/fork_hold.c"
	exit 0
fi

# run TAG KNOB: records fork_hold 8; "events targets_full warning-line"
run() {
	local out=$tmp/$1
	if ! env ${2:+USTACK_BPF_TARGETS_MAX=$2} ${3:+USTACK_BPF_VERIFIER_STATS=1} "$USTACK" record --backend bpf --stats \
		-e syscalls:sys_enter_getppid -o "$out.data" -- "$tmp/fork_hold" 8 \
		>"$out.out" 2>"$out.err"; then
		if grep -qiE 'bpf|btf|not supported|permi' "$out.err"; then
			skip "$1/bpf" "backend bpf unavailable: $(head -n1 "$out.err")"
		else
			fail "$1/bpf" "ustack record: $(head -n3 "$out.err" | tr '\n' ' ')"
		fi
		return 1
	fi
	events=$("$USTACK" report -i "$out.data" --stats 2>/dev/null | sed -n 's/^events: \([0-9]*\).*/\1/p')
	full=$(awk '$1 == "stat" && $2 == "targets_full" { print $3 }' "$out.err")
	warn=$(grep -c 'were not recorded' "$out.err")
	return 0
}

if run roomy "" stats; then
	bad=
	for p in ustack_tp ustack_fork ustack_exit ustack_exec; do
		n=$(sed -n "s/^ustack: BPF backend: verifier: $p: processed \([0-9]*\) insns.*/\1/p" "$tmp/roomy.err")
		[ -n "$n" ] && [ "$n" -ge 1 ] && [ "$n" -le 1000000 ] || bad="$bad $p:${n:-none}"
	done
	if grep -q 'verifier: ustack_sample:' "$tmp/roomy.err"; then bad="$bad ustack_sample:printed"; fi
	if [ -z "$bad" ]; then
		pass "verifier-stats/bpf ($(sed -n 's/^ustack: BPF backend: verifier: ustack_tp: \(processed [0-9]* insns\).*/ustack_tp \1/p' "$tmp/roomy.err"))"
	else
		fail "verifier-stats/bpf" "want processed 1..1000000 for each loaded program, none for ustack_sample:$bad"
		grep 'verifier:' "$tmp/roomy.err" | head -8 | sed 's/^/  | /'
	fi

	if [ "${events:-x}" = 9 ] && [ "${full:-x}" = 0 ] && [ "$warn" = 0 ]; then
		pass "roomy/bpf (9 events, targets_full 0, no warning)"
	else
		fail "roomy/bpf" "events ${events:-?} (want 9), targets_full ${full:-?} (want 0), $warn warning lines (want 0)"
		sed 's/^/  | /' "$tmp/roomy.err" | head -5
	fi
fi
if run full 4; then
	line=$(grep 'were not recorded' "$tmp/full.err")
	if [ "${events:-x}" = 4 ] && [ "${full:-x}" = 5 ] && [ "$warn" = 1 ] &&
		[[ $line == *"ustack"*": 5 processes started by the recorded ones were not recorded"*"(4 live at once"* ]]; then
		pass "full/bpf (4 events, targets_full 5, one warning)"
	else
		fail "full/bpf" "events ${events:-?} (want 4), targets_full ${full:-?} (want 5), $warn warning lines (want 1): $line"
		sed 's/^/  | /' "$tmp/full.err" | head -8
	fi
fi
exit 0
