#!/usr/bin/env bash
# ThreadSanitizer build of the concurrent stackmap test: compiles
# tests/unit/test_stackmap_concurrent.c with src/stackmap/*.c and
# src/common/*.c under -fsanitize=thread and runs it. The test prints its
# own PASS/FAIL lines; a TSan report makes the run fail (exitcode=66).
# Prints SKIP with the reason when TSan cannot build or run here.
set -u
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}"
cd "$TOP" || exit 1
out="$CHECK_DIR/tsan"
bin="$out/test_stackmap_concurrent_tsan"
mkdir -p "$out"

if ! echo 'int main(void){return 0;}' | $CC -x c -fsanitize=thread -o "$out/probe" - 2>"$out/probe.log"; then
	echo "SKIP stackmap_tsan: $CC cannot link -fsanitize=thread ($(head -n1 "$out/probe.log"))"
	exit 0
fi
if ! "$out/probe" >"$out/probe.log" 2>&1; then
	# typical cause: ASLR layout TSan does not support (vm.mmap_rnd_bits)
	if command -v setarch >/dev/null && setarch "$(uname -m)" -R "$out/probe" >/dev/null 2>&1; then
		runner=(setarch "$(uname -m)" -R)
	else
		echo "SKIP stackmap_tsan: TSan binaries do not run here ($(head -n1 "$out/probe.log"))"
		exit 0
	fi
else
	runner=()
fi

if ! $CC -std=gnu11 -D_GNU_SOURCE -fsanitize=thread -O1 -g -Iinclude -Isrc -Itests/unit \
	-o "$bin" tests/unit/test_stackmap_concurrent.c src/stackmap/*.c src/common/*.c \
	-lpthread 2>"$out/build.log"; then
	echo "FAIL stackmap_tsan: build failed:"
	sed 's/^/    /' "$out/build.log" | head -n 20
	exit 1
fi

TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}" "${runner[@]}" "$bin" >"$out/run.log" 2>&1
rc=$?
# the test's own lines, tagged so they are told apart from the ASan run
grep -E '^(PASS|FAIL|SKIP) ' "$out/run.log" | sed -E 's/^(PASS|FAIL|SKIP) /\1 tsan:/'
if [ "$rc" -ne 0 ]; then
	if grep -q 'WARNING: ThreadSanitizer' "$out/run.log"; then
		echo "FAIL stackmap_tsan: ThreadSanitizer report (see $out/run.log):"
		grep -A12 'WARNING: ThreadSanitizer' "$out/run.log" | head -n 30 | sed 's/^/    /'
	else
		echo "FAIL stackmap_tsan: exited with status $rc (see $out/run.log)"
		tail -n 20 "$out/run.log" | sed 's/^/    /'
	fi
	exit 1
fi
echo "PASS stackmap_tsan: no ThreadSanitizer report"
