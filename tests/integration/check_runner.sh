#!/usr/bin/env bash
# tests/run-tests.sh itself, on a tree of made-up tests in a temp directory
# (no sleeps: tests that must overlap wait for each other, deadline 30 s):
#   order     JOBS=1 and JOBS=3 print the same lines in the same order
#             (the seconds aside), and the same closing line with the
#             right totals; test_slow ends last but is printed in its place
#   together  with JOBS=3, test_meet_a and test_meet_b run at the same time
#             (each waits for the other to have started)
#   alone     record_storm (in ALONE) runs while no other test runs, and
#             after all of them
#   counts    a test that exits 3 without a FAIL line, one whose run-tests
#             job is killed, a shell error in a script: one failure each,
#             named on the "failed:" line; exit status 1
# Env (from make check): TOP.
set -u
T=check_runner
: "${TOP:=$PWD}"
fails=0
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; fails=$((fails + 1)); }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tree=$tmp/tree
mkdir -p "$tree/build/check/tests" "$tree/build/check/fuzz" "$tree/tests/integration" \
	"$tree/tests/fuzz/corpus/one" "$tree/state"
st=$tree/state

unit() { # NAME BODY: a unit test program (a shell script here)
	printf '#!/bin/bash\nst=%s\n%s\n' "$st" "$2" >"$tree/build/check/tests/$1"
	chmod +x "$tree/build/check/tests/$1"
}
# every test but record_storm marks itself running while it runs
mark='touch "$st/running.$$"; trap '\''rm -f "$st/running.$$"'\'' EXIT'
# wait_for FILE: up to 30 s
wait_for='w() { local end=$((SECONDS + 30)); until [ -e "$1" ]; do [ $SECONDS -lt $end ] || return 1; sleep 0.01; done; }'

unit test_a "$mark; echo PASS a1; echo PASS a2"
unit test_crash "$mark; echo PASS before; exit 3"
unit test_killed "$mark; kill -KILL \$(ps -o ppid= -p \$PPID)"
unit test_meet_a "$mark; $wait_for; touch \$st/a.started; if [ \"\${JOBS:-}\" = 1 ]; then echo PASS meet_a; elif w \$st/b.started; then echo PASS meet_a; else echo FAIL meet_a: b never started; fi"
unit test_meet_b "$mark; $wait_for; touch \$st/b.started; if [ \"\${JOBS:-}\" = 1 ]; then echo PASS meet_b; elif w \$st/a.started; then echo PASS meet_b; else echo FAIL meet_b: a never started; fi"
unit test_skip "$mark; echo SKIP s: no reason"
# test_slow ends after test_z: it waits for test_z's end (JOBS > 1)
unit test_slow "$mark; $wait_for; [ \"\${JOBS:-}\" = 1 ] || w \$st/z.done; echo PASS slow"
printf '#!/bin/bash\necho PASS replay\n' >"$tree/build/check/fuzz/fuzz_one"
chmod +x "$tree/build/check/fuzz/fuzz_one"
printf 'st=%s\n%s\necho PASS z; touch "$st/z.done"; x=$((1+))\n' "$st" "$mark" >"$tree/tests/integration/z.sh"
# in ALONE: nothing else may be running, and everything else has run
printf 'st=%s\nls "$st" | grep -q "^running\\." && echo "FAIL alone: running beside $(ls "$st" | grep "^running\\.")"\n[ -e "$st/z.done" ] && echo PASS alone || echo "FAIL alone: before z"\n' \
	"$st" >"$tree/tests/integration/record_storm.sh"

run() { # JOBS OUT
	rm -f "$st"/*
	(cd "$tree" && JOBS=$1 CHECK_DIR=build/check ONLY= timeout 120 bash "$TOP/tests/run-tests.sh") >"$2" 2>&1
	echo $? >"$2.rc"
}
# the lines without their seconds (wall and CPU) and the closing "# time:"
# line, the log excerpts (test_killed's has no
# fixed content) and bash's notice of the killed job (printed when bash
# notices, at no fixed place)
lines() { grep -vE '^    \||run-tests\.sh: line [0-9]+: +[0-9]+ Killed|^# time: ' "$1" | sed 's/  ([0-9]*s, [0-9.]* s CPU)$//'; }
run 1 "$tmp/j1"
run 3 "$tmp/j3"

want_last="10 passed, 3 failed, 1 skipped"
diff <(lines "$tmp/j1") <(lines "$tmp/j3") >"$tmp/diff"
if [ "$(tail -1 "$tmp/j1")" = "$want_last" ] && [ "$(tail -1 "$tmp/j3")" = "$want_last" ] &&
	! [ -s "$tmp/diff" ]; then
	pass order
else
	fail order "JOBS=1 '$(tail -1 "$tmp/j1")', JOBS=3 '$(tail -1 "$tmp/j3")' (want '$want_last'); diff: $(head -8 "$tmp/diff" | tr '\n' '|')"
fi
if grep -q '^test_meet_a  *1 passed   0 failed' "$tmp/j3" && grep -q '^test_meet_b  *1 passed   0 failed' "$tmp/j3" &&
	grep -q '^test_slow  *1 passed   0 failed' "$tmp/j3"; then
	pass together
else
	fail together "$(grep -E '^(  \[)?test_(meet|slow)' "$tmp/j3" | tr '\n' '|')"
fi
for j in j1 j3; do
	if grep -q '^record_storm  *1 passed   0 failed' "$tmp/$j" &&
		[ "$(grep -E '^[a-z_]+-?[a-z]* +[0-9]+ passed' "$tmp/$j" | tail -1 | cut -d' ' -f1)" = record_storm ]; then
		pass "alone/$j"
	else
		fail "alone/$j" "$(grep record_storm "$tmp/$j" | tr '\n' '|')"
	fi
done
if [ "$(cat "$tmp/j3.rc")" = 1 ] && grep -q '^failed: test_crash test_killed z$' "$tmp/j3" &&
	grep -q '^  \[test_killed\] FAIL test_killed: ended without a result' "$tmp/j3" &&
	grep -q '^  \[test_crash\] FAIL test_crash: exited with status 3' "$tmp/j3" &&
	grep -q '^  \[z\] FAIL z: shell error in the test script' "$tmp/j3"; then
	pass counts
else
	fail counts "exit $(cat "$tmp/j3.rc"); $(grep -E '^failed:|\] FAIL' "$tmp/j3" | tr '\n' '|')"
fi
[ $fails -eq 0 ]
