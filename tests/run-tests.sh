#!/usr/bin/env bash
# Runs every test of make check and prints the closing line
#   N passed, N failed, N skipped
# Unit tests: $CHECK_DIR/tests/test_* (each prints PASS/FAIL/SKIP lines).
# Fuzz corpora: each $CHECK_DIR/fuzz/fuzz_X replays tests/fuzz/corpus/X.
# Integration tests: tests/integration/*.sh, which print PASS/FAIL/SKIP lines
# too and get USTACK, CHECK_DIR, CC, GSFRAME, SAN_FLAGS, BASE_CFLAGS and
# LIB_LDLIBS in the environment.
# A program that exits non-zero without printing a FAIL line counts as one
# failure (a crash must never pass).
# ONLY=REGEX (make check ONLY=...) runs just the tests whose name matches
# (grep -E): test_trace, fuzz_elf-corpus, snapshot_core, ...
# A test that fails is explained in this output alone (a CI log is read as
# text, without the files): its FAIL lines, each with what the test printed
# right around it (the diffs, stacks and '#' notes tests print next to a
# FAIL), then the last 40 lines of its log.
# TEST_TIMEOUT (seconds, default 900) ends a test that hangs; it is no
# speed bound: a loaded machine makes the slowest tests (record_bpf_shapes:
# 238 s seen under load) several times slower.
set -u
: "${ONLY:=}"
: "${CHECK_DIR:=build/check}"
export CHECK_DIR USTACK="$PWD/$CHECK_DIR/ustack" TOP="$PWD"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
pass=0 fail=0 skip=0
failed_names=()
log_dir="$CHECK_DIR/test-logs"
mkdir -p "$log_dir"
per_test_timeout=${TEST_TIMEOUT:-900}

run_one() { # name, command...
	local name=$1; shift
	[ -z "$ONLY" ] || grep -qE -- "$ONLY" <<<"$name" || return 0
	local log="$log_dir/$name.log"
	local t0=$SECONDS
	timeout -k 10 "$per_test_timeout" "$@" >"$log" 2>&1
	local rc=$?
	local p f s
	# a shell error in a test script (an arithmetic syntax error, an
	# unbound variable, a failed redirection) ends the command it is in:
	# the check it held would be skipped without a word. Such a line, bash's
	# "SCRIPT: line N: ..." (not a job's "line N: PID Killed ..."), fails
	# the test.
	grep -E '^[^ :]+\.sh: line [0-9]+: ' "$log" | grep -vE ': line [0-9]+: +[0-9]+ [A-Z]' |
		sed 's/^/FAIL '"$name"': shell error in the test script: /' >"$log.sh-errors"
	cat "$log.sh-errors" >>"$log"
	rm -f "$log.sh-errors"
	p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log"); s=$(grep -c '^SKIP ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			echo "FAIL $name: killed after ${per_test_timeout} s (TEST_TIMEOUT; exit status $rc)" >>"$log"
		else
			echo "FAIL $name: exited with status $rc (see $log)" >>"$log"
		fi
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	grep -E '^(FAIL|SKIP) ' "$log" | sed "s|^|  [$name] |"
	if [ "$f" -gt 0 ]; then
		failed_names+=("$name")
		# FAIL lines before the last 40: each with up to 4 lines before and
		# 8 after it (PASS/SKIP lines left out), at most 60 lines in all
		awk -v last=$(($(wc -l <"$log") - 40)) '
			{ l[NR] = $0 }
			/^FAIL / && NR <= last { for (i = NR - 4; i <= NR + 8; i++) if (i >= 1 && i <= last) want[i] = 1 }
			END { for (i = 1; i <= last; i++) if ((i in want) && l[i] !~ /^(PASS|SKIP) /) {
				if (prev && i > prev + 1) print "..."; print l[i]; prev = i } }' "$log" |
			head -n 60 | sed 's/^/    | /'
		echo "    | --- last 40 lines of $log:"
		tail -n 40 "$log" | sed 's/^/    | /'
	fi
	printf '%-40s %3d passed %3d failed %3d skipped  (%ds)\n' "$name" "$p" "$f" "$s" $((SECONDS - t0))
}

for t in "$CHECK_DIR"/tests/test_*; do
	[ -x "$t" ] || continue
	run_one "$(basename "$t")" "$t"
done

for z in "$CHECK_DIR"/fuzz/fuzz_*; do
	[ -x "$z" ] || continue
	n=$(basename "$z"); corpus="tests/fuzz/corpus/${n#fuzz_}"
	if [ -d "$corpus" ]; then
		run_one "$n-corpus" bash -c "'$z' '$corpus' && echo 'PASS $n corpus replay'"
	else
		echo "FAIL $n: no corpus at $corpus"; fail=$((fail + 1))
	fi
done

for s in tests/integration/*.sh; do
	[ -f "$s" ] || continue
	run_one "$(basename "$s" .sh)" bash "$s"
done

[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
