#!/usr/bin/env bash
# record --alloc's cost in measures that do not move with the machine's
# load, beside bench/probes/run.sh's wall-clock figures:
#   instructions  callgrind's count of the timed work without and with
#                 libustack-alloc.so preloaded (its hits are then plain
#                 calls: the sampling's own cost in the program): the
#                 std::map churn's churn() (bench/probes/alloc_map.cc,
#                 MAP_ARGS) and python3 building dicts (the whole process,
#                 PY_ARGS); every allocation and free goes through the
#                 library
#   per kept      bench/probes/alloc_hit.c at --alloc-mean 1 (every
#                 allocation kept): wall us per kept allocation and its
#                 free, preload against uprobes, ROUNDS alternating rounds,
#                 medians [min-max]; and the allocations kept at the
#                 default mean per MiB allocated (1 / 512 KiB)
# The slowdown of a program at the default mean is then about
# instructions + (bytes allocated / 512 KiB) x per-kept cost.
#
#   bash bench/probes/alloc_cost.sh [ROUNDS]   (default 5; root, valgrind)
set -uo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
MAP_ARGS=${MAP_ARGS:-200000 5}
PY_ARGS=${PY_ARGS:-50000 2}
HIT_N=${HIT_N:-20000}
me=bench/probes/alloc_cost.sh
[ "$(id -u)" -eq 0 ] || { echo "$me: needs root" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "$me: needs valgrind" >&2; exit 1; }
make -s -j2 build/ustack build/libustack-alloc.so >/dev/null || exit 1
USTACK=$PWD/build/ustack PRE=$PWD/build/libustack-alloc.so OUT=build/bench/probes
mkdir -p "$OUT"
${CXX:-g++} -O2 -g -fomit-frame-pointer -o "$OUT/map" bench/probes/alloc_map.cc || exit 1
${CC:-gcc} -O2 -g -o "$OUT/alloc_hit" bench/probes/alloc_hit.c || exit 1
# an ELF python (valgrind runs no script: pyenv's shims are scripts)
PY=${PY:-/usr/bin/python3}
[ -x "$PY" ] || { echo "$me: no $PY (PY=...)" >&2; exit 1; }

# ir ARGS...: callgrind's instruction count of the command
ir() {
	valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
		awk '/Collected :/ { print $NF }'
}
echo "instructions (callgrind), bare -> preloaded:"
a=$(ir --toggle-collect='*churn*' "$OUT/map" $MAP_ARGS)
b=$(LD_PRELOAD=$PRE ir --toggle-collect='*churn*' "$OUT/map" $MAP_ARGS)
calls=$("$OUT/map" $MAP_ARGS | awk '/^CALLS/ { print $2 }')
awk -v a="$a" -v b="$b" -v c="$calls" 'BEGIN { printf "  map churn (%d mallocs and their frees): %d -> %d, +%.2f%%, %.1f instructions per malloc+free\n", c, a, b, 100 * (b - a) / a, (b - a) / c }'
a=$(ir "$PY" bench/probes/py_dicts.py $PY_ARGS)
b=$(LD_PRELOAD=$PRE ir "$PY" bench/probes/py_dicts.py $PY_ARGS)
awk -v a="$a" -v b="$b" -v p="$PY" 'BEGIN { printf "  %s building dicts (whole process): %d -> %d, +%.2f%%\n", p, a, b, 100 * (b - a) / a }'

echo "per kept allocation and its free ($HIT_N, --alloc-mean 1), us:"
: >"$OUT/alloc_cost.results"
for r in $(seq "$ROUNDS"); do
	for via in preload uprobes; do
		"$USTACK" record -q --alloc --alloc-mean 1 --alloc-via $via -o "$OUT/alloc_cost.data" -- \
			"$OUT/alloc_hit" "$HIT_N" | awk -v v=$via '/^NS/ { ns = $2 } /^CALLS/ { printf "%s %.3f\n", v, ns / $2 / 1000 }' \
			>>"$OUT/alloc_cost.results"
	done
done
rm -f "$OUT/alloc_cost.data"
python3 - "$OUT/alloc_cost.results" <<'PY'
import statistics, sys
v = {}
for line in open(sys.argv[1]):
    k, x = line.split()
    v.setdefault(k, []).append(float(x))
for k, xs in v.items():
    print("  %-8s %.2f [%.2f-%.2f]" % (k, statistics.median(xs), min(xs), max(xs)))
PY
echo "kernel $(uname -r), $(nproc) CPUs, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo); $($USTACK --version | head -1); $(date -u '+%Y-%m-%d %H:%M UTC'); load $(cut -d' ' -f1-3 /proc/loadavg)"
