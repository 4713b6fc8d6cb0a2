#!/usr/bin/env bash
# Whole-stack backtraces on distinct paths (bench_full.c): ustack_backtrace()
# vs libunwind's unw_backtrace() vs glibc's backtrace(), every call walking
# from the leaf to _start through DEPTH functions of three frame shapes
# (gen_full.sh), each call's path new, methods alternating round by round,
# every call's frames compared. Built -O2 -fomit-frame-pointer without SFrame
# (.eh_frame only) and with -Wa,--gsframe.
#
#   bash bench/backtrace/full.sh [ROUNDS] [CALLS]
#
# ns per call: median [min-max] over ROUNDS (default 21) rounds of CALLS
# (default 2000) calls, thread CPU time, the no-op round before subtracted
# (the paths' own cost). They move with the machine and its load;
# instructions per call (callgrind, same calls, no-op subtracted) do not.
set -eu
cd "$(dirname "$0")/../.."
ROUNDS=${1:-21}
CALLS=${2:-2000}
CC=${CC:-gcc}
OUT=build/bench/backtrace
SRC=bench/backtrace
mkdir -p "$OUT"
if [ ! -f /usr/include/libunwind.h ] && [ ! -f /usr/include/x86_64-linux-gnu/libunwind.h ]; then
	echo "bench/backtrace/full.sh: libunwind.h missing (apt-get install libunwind-dev)" >&2
	exit 1
fi
make -s -j2 build/libustack.a >/dev/null
bash $SRC/gen_full.sh >"$OUT/full_gen.c"
GSFRAME=$(echo nop | $CC -x assembler -Wa,--gsframe -c -o /dev/null - 2>/dev/null &&
	echo -Wa,--gsframe || true)
builds="cfi"
[ -n "$GSFRAME" ] && builds="cfi sframe"
for b in $builds; do
	sf=
	[ $b = sframe ] && sf=$GSFRAME
	# one peer per program: libunwind.so defines backtrace() too
	$CC -std=gnu11 -O2 -D_GNU_SOURCE -DFULL_UNW -Iinclude -I$SRC -Wall -fomit-frame-pointer $sf \
		-o "$OUT/bench_full_unw_$b" $SRC/bench_full.c "$OUT/full_gen.c" build/libustack.a \
		-lunwind -lpthread -ldl -lbpf
	$CC -std=gnu11 -O2 -D_GNU_SOURCE -Iinclude -I$SRC -Wall -fomit-frame-pointer $sf \
		-o "$OUT/bench_full_glibc_$b" $SRC/bench_full.c "$OUT/full_gen.c" build/libustack.a \
		-lpthread -ldl -lbpf
done
have_cg=$(command -v valgrind >/dev/null && echo 1 || echo 0)
echo "whole stacks, distinct paths: ns per call, median [min-max] of $ROUNDS rounds of $CALLS calls (thread CPU time);"
echo "instructions per call from callgrind ($CALLS calls, no-op subtracted)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "host: $(uname -r), $(nproc) cpus, $($CC --version | head -1), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for b in $builds; do
	echo
	echo "build: $b ($([ $b = cfi ] && echo '.eh_frame only' || echo '-Wa,--gsframe'))"
	printf '| %5s | %6s | %-22s | %-22s | %-22s | %9s | %9s | %9s | %9s | %8s |\n' depth frames \
		"ustack ns" "libunwind ns" "glibc ns" "ustack Ir" "unw Ir" "glibc Ir" "unw/ust" "unw/ust Ir"
	echo "|------:|-------:|------------------------|------------------------|------------------------|----------:|----------:|----------:|----------:|---------:|"
	for d in 1 8 32 100; do
		# ustack's ns from the rounds alternating with libunwind's
		res=$("$OUT/bench_full_unw_$b" $d "$ROUNDS" "$CALLS" &&
			"$OUT/bench_full_glibc_$b" $d "$ROUNDS" "$CALLS" | grep -v "FULL ustack") || {
			echo "bench_full_$b $d: frames differ or failed:" >&2
			echo "$res" >&2
			exit 1
		}
		declare -A ir=()
		for m in none ustack libunwind glibc; do
			ir[$m]=0
			exe=$OUT/bench_full_unw_$b
			[ $m = glibc ] && exe=$OUT/bench_full_glibc_$b
			if [ "$have_cg" = 1 ]; then
				valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.out" --collect-atstart=no \
					--toggle-collect=full_measure "$exe" $d 0 "$CALLS" $m >/dev/null 2>&1
				ir[$m]=$(awk '/^totals:/ { print $2; exit }' "$OUT/cg.out")
			fi
		done
		echo "$res" | awk -v d=$d -v c="$CALLS" -v iu="${ir[ustack]}" -v il="${ir[libunwind]}" \
			-v ig="${ir[glibc]}" -v i0="${ir[none]}" '
$1 == "FULL" { med[$2] = $4; lo[$2] = $5; hi[$2] = $6; fr[$2] = $7 }
END {
	u = (iu - i0) / c; l = (il - i0) / c; g = (ig - i0) / c
	printf "| %5d | %6d | %-22s | %-22s | %-22s | %9.0f | %9.0f | %9.0f | %8.2fx | %7.2fx |\n", d,
	       fr["ustack"], sprintf("%.0f [%.0f-%.0f]", med["ustack"], lo["ustack"], hi["ustack"]),
	       sprintf("%.0f [%.0f-%.0f]", med["libunwind"], lo["libunwind"], hi["libunwind"]),
	       sprintf("%.0f [%.0f-%.0f]", med["glibc"], lo["glibc"], hi["glibc"]), u, l, g,
	       (med["ustack"] > 0 ? med["libunwind"] / med["ustack"] : 0), (u > 0 ? l / u : 0)
}'
	done
done
echo
echo "frames of ustack and the peer equal on every call of every round (ustack ns: the rounds against libunwind)"
