#!/usr/bin/env bash
# make fuzz-long: every libFuzzer target (build/fuzz/fuzz_*) for a given time,
# a few at once, starting from its corpus in tests/fuzz/corpus/<name>.
#   FUZZ_SECONDS  seconds per target (default 600)
#   FUZZ_JOBS     targets run at the same time (default: the number of CPUs)
#   FUZZ_ONLY     a regex: only the targets whose name matches
#   FUZZ_NICE     nice level of the fuzzers (default 10: tests and builds
#                 started meanwhile keep most of the machine)
# The repository's corpus is only read: new inputs go to
# build/fuzz-long/<name>/corpus, findings (crash-*, leak-*, timeout-*,
# oom-*) to build/fuzz-long/<name>/, the fuzzer's output to
# build/fuzz-long/<name>/log. A finding to keep as a regression input is
# copied into tests/fuzz/corpus/<name>/ by hand, once fixed.
# Prints one line per target (executions, executions/s, corpus, findings)
# and exits non-zero when any target found something or did not run.
set -u
BUILD=${BUILD:-build}
secs=${FUZZ_SECONDS:-600}
jobs=${FUZZ_JOBS:-$(nproc)}
only=${FUZZ_ONLY:-}
nice_level=${FUZZ_NICE:-10}
out=$BUILD/fuzz-long
mkdir -p "$out"

targets=()
for f in "$BUILD"/fuzz/fuzz_*; do
	[ -x "$f" ] && [ -f "$f" ] || continue
	n=$(basename "$f")
	[ -z "$only" ] || grep -qE -- "$only" <<<"$n" || continue
	targets+=("$n")
done
[ ${#targets[@]} -gt 0 ] || { echo "fuzz-long: no fuzz targets in $BUILD/fuzz (make fuzz)" >&2; exit 1; }
echo "fuzz-long: ${#targets[@]} targets, ${secs} s each, $jobs at a time (about $(( (${#targets[@]} + jobs - 1) / jobs * secs / 60 )) min)"

run_target() { # name
	local n=$1 d=$out/$1 seeds=tests/fuzz/corpus/${1#fuzz_}
	rm -rf "$d" && mkdir -p "$d/corpus"
	# -rss_limit_mb: the targets parse bounded inputs; 2 GiB catches a leak
	# or an unbounded allocation well before the machine suffers
	nice -n "$nice_level" "$BUILD/fuzz/$n" -max_total_time="$secs" -rss_limit_mb=2048 \
		-timeout=25 -print_final_stats=1 -artifact_prefix="$d/" \
		"$d/corpus" $( [ -d "$seeds" ] && echo "$seeds" ) >"$d/log" 2>&1
	echo $? >"$d/rc"
}

running=0
for n in "${targets[@]}"; do
	run_target "$n" &
	running=$((running + 1))
	if [ $running -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait

bad=0
printf '%-28s %14s %10s %8s %s\n' target executions exec/s corpus findings
for n in "${targets[@]}"; do
	d=$out/$n
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$d/log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$d/log" | tail -1)
	corpus=$(find "$d/corpus" -type f | wc -l)
	finds=$(find "$d" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
	rc=$(cat "$d/rc" 2>/dev/null || echo '?')
	note=$finds
	if [ "$finds" -gt 0 ] || [ "$rc" != 0 ] || [ -z "$runs" ]; then
		bad=1
		note="$finds (exit $rc; see $d/log: $(grep -m1 -E 'ERROR|SUMMARY|deadly' "$d/log" | cut -c1-100))"
	fi
	printf '%-28s %14s %10s %8s %s\n' "$n" "${runs:-?}" "${rate:-?}" "$corpus" "$note"
done
exit $bad
