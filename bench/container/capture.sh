#!/usr/bin/env bash
# What the capture into the build-ID cache (issue 28) costs the recording:
#   part 1     the workload of bench/container/run.sh (a gzip -6 loop in the
#              host's root and one in a second root, a new gzip about every
#              second), `ustack record -a` for DURATION (default 10) s at
#              -F FREQ (default 499), each backend, capture on (default) and
#              off (-N), alternating, RUNS (default 3) times, each run with
#              an empty cache. Measured: events kept and lost records
#              (`report --stats`), recorder CPU (user + system, /usr/bin/time),
#              wall time until record returns, and the recorder's `stat
#              capture_*` lines (files new, bytes, process gone, capture
#              thread CPU seconds)
#   part 2     one huge file: a program busy for BUSY (default 3) s whose
#              file is padded to ~500 MiB by a non-loaded section of random
#              bytes, run under `record --` with -N, with the default
#              --capture-max-size (512M: copied) and with 100M (hashed, not
#              copied); HUGE_RUNS (default 2) times each. Measured: wall
#              time until record returns, recorder CPU, capture thread CPU,
#              capture_bytes, capture_too_big
# Prints one line per run and the medians; needs root.
set -u
: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$TOP/bench/container/gzip_loops.sh"
: "${USTACK:=$TOP/build/ustack}" "${RUNS:=3}" "${DURATION:=10}" "${FREQ:=499}"
: "${BUSY:=3}" "${HUGE_RUNS:=2}" "${PART:=12}"
ROOTFS=${ROOTFS:-$TOP/build/rootfs/trixie}
[ "$(id -u)" -eq 0 ] || { echo "bench/container/capture: needs root" >&2; exit 1; }
for t in gzip chroot python3 objcopy cc /usr/bin/time; do
	command -v $t >/dev/null || { echo "bench/container/capture: $t not installed" >&2; exit 1; }
done
[ -x "$USTACK" ] || { echo "bench/container/capture: no $USTACK (make)" >&2; exit 1; }

w=$(mktemp -d /tmp/ustack-bench-cap.XXXXXX)
loops=()
ROOT2=
cleanup() {
	local p
	for p in "${loops[@]}"; do kill -- -"$p" 2>/dev/null; done
	[ -z "$ROOT2" ] || rm -f "$ROOT2/tmp/ustack-bench-big"
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$w"
}
trap cleanup EXIT

stat_of() { # FILE NAME: the value of `stat NAME` in a record --stats output
	awk -v n="$2" '$1 == "stat" && $2 == n { print $3; f = 1 } END { if (!f) print "NA" }' "$1"
}

part1() {
	start_gzip_loops
	echo "# second root: $root_desc"
	local res=$w/part1.tsv i b c d ev lost wall us ss
	printf 'backend\tcapture\trun\tevents\tlost\tcpu_s\twall_s\tcap_new\tcap_bytes\tcap_gone\tcap_cpu_s\n' >"$res"
	for i in $(seq "$RUNS"); do
		for b in bpf copy; do
			for c in on off; do
				d=$w/p1.$b.$c.$i; mkdir -p "$d/cache"
				USTACK_CACHE_DIR=$d/cache /usr/bin/time -f '%e %U %S' -o "$d/time" \
					"$USTACK" record -a -q --stats --backend $b $([ $c = off ] && echo -N) \
					-d "$DURATION" -F "$FREQ" -o "$d/t.data" 2>"$d/rec.err"
				USTACK_CACHE_DIR=$d/cache "$USTACK" report -i "$d/t.data" --stats >"$d/rep" 2>/dev/null
				ev=$(sed -n 's/^events: *\([0-9]*\).*/\1/p' "$d/rep" | head -n1)
				lost=$(sed -n 's/^lost records: *\([0-9]*\).*/\1/p' "$d/rep" | head -n1)
				read -r wall us ss <"$d/time"
				printf '%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' $b $c "$i" "${ev:-NA}" "${lost:-NA}" \
					"$(echo "$us + $ss" | bc)" "$wall" "$(stat_of "$d/rec.err" capture_new)" \
					"$(stat_of "$d/rec.err" capture_bytes)" "$(stat_of "$d/rec.err" capture_gone)" \
					"$(stat_of "$d/rec.err" capture_cpu_seconds)" | tee -a "$res"
				[ -n "${KEEP_TMP:-}" ] || rm -rf "$d"
			done
		done
	done
	for p in "${loops[@]}"; do kill -- -"$p" 2>/dev/null; done
	loops=()
	summary "$res" backend,capture events,lost,cpu_s,wall_s,cap_new,cap_bytes,cap_gone,cap_cpu_s
}

part2() {
	# busy in main, whose frames are named from the (huge) file itself
	cat >"$w/busy.c" <<-'EOF'
	#include <stdlib.h>
	#include <time.h>
	static volatile unsigned long sink;
	__attribute__((noinline)) static void spin(void) { for (int i = 0; i < 100000; i++) sink += i; }
	int main(int argc, char **argv) {
		double secs = atof(argv[1]); struct timespec t0, t;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do { spin(); clock_gettime(CLOCK_MONOTONIC, &t); }
		while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
		return 0;
	}
	EOF
	cc -O2 -g -o "$w/busy.small" "$w/busy.c" || return 1
	head -c 500M /dev/urandom >"$w/pad"
	objcopy --add-section .ustack_bench_pad="$w/pad" --set-section-flags .ustack_bench_pad=readonly,contents \
		"$w/busy.small" "$w/busy" || return 1
	rm -f "$w/pad"
	echo "# huge file: $(stat -c %s "$w/busy") bytes ($(stat -c %s "$w/busy.small") before the pad), busy ${BUSY} s"
	local res=$w/part2.tsv i m d wall us ss
	printf 'mode\trun\twall_s\tcpu_s\tcap_cpu_s\tcap_bytes\tcap_too_big\tevents\n' >"$res"
	for i in $(seq "$HUGE_RUNS"); do
		for m in off 512M 100M; do
			d=$w/p2.$m.$i; mkdir -p "$d/cache"
			# the file's pages are in the page cache for every mode alike
			cat "$w/busy" >/dev/null
			USTACK_CACHE_DIR=$d/cache /usr/bin/time -f '%e %U %S' -o "$d/time" \
				"$USTACK" record -q --stats -F "$FREQ" $([ $m = off ] && echo -N || echo --capture-max-size $m) \
				-o "$d/t.data" -- "$w/busy" "$BUSY" 2>"$d/rec.err"
			read -r wall us ss <"$d/time"
			printf '%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n' $m "$i" "$wall" "$(echo "$us + $ss" | bc)" \
				"$(stat_of "$d/rec.err" capture_cpu_seconds)" "$(stat_of "$d/rec.err" capture_bytes)" \
				"$(stat_of "$d/rec.err" capture_too_big)" "$(stat_of "$d/rec.err" events)" | tee -a "$res"
			[ -n "${KEEP_TMP:-}" ] || rm -rf "$d"
		done
	done
	summary "$res" mode wall_s,cpu_s,cap_cpu_s,cap_bytes,cap_too_big,events
}

summary() { # TSV KEYS COLS: median [min-max] per key
	python3 - "$@" <<-'EOF'
	import csv, statistics, sys
	rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
	keys, cols = sys.argv[2].split(','), sys.argv[3].split(',')
	def fmt(vals):
	    v = [float(x) for x in vals if x not in ('NA', '')]
	    if not v:
	        return 'n/a'
	    g = lambda x: ('%.3g' % x) if x < 1000 else '%d' % x
	    return '%s [%s-%s]' % (g(statistics.median(v)), g(min(v)), g(max(v)))
	print('| ' + ' | '.join(keys) + ' | ' + ' | '.join(cols) + ' |')
	print('|---' * (len(keys) + len(cols)) + '|')
	groups = []
	for r in rows:
	    k = tuple(r[x] for x in keys)
	    if k not in groups:
	        groups.append(k)
	for k in groups:
	    r = [x for x in rows if tuple(x[y] for y in keys) == k]
	    print('| ' + ' | '.join(k) + ' | ' + ' | '.join(fmt([x[c] for x in r]) for c in cols) + ' |')
	EOF
}

echo "# $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), ustack $("$USTACK" --version 2>/dev/null | head -n1)"
echo "# RUNS=$RUNS DURATION=$DURATION FREQ=$FREQ BUSY=$BUSY HUGE_RUNS=$HUGE_RUNS"
case $PART in *1*) part1 ;; esac
case $PART in *2*) part2 ;; esac
