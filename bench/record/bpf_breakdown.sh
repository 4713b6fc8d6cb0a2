#!/usr/bin/env bash
# Where the ns of ustack's BPF program go on kernel_ns.sh's write storm:
# builds of the recorder whose program does one part twice (the walk's
# result unchanged: the extra cost is that part's cost) or skips one, each
# measured as kernel_ns.sh measures (bpf_stats run_time_ns / run_cnt of
# ustack_tp, read while the storm runs), alternating with each other and
# with bpftrace's @[ustack(127)] on the frame-pointer build, ROUNDS rounds,
# medians [min-max].
#
#   bash bench/record/bpf_breakdown.sh [ROUNDS] [VARIANT...]   (root, bpftool, bpftrace)
#
# A variant is NAME=CFLAGS for the BPF program (src/bpf/record.bpf.c):
# -DUB_PROF=BITS (1 row lookup twice, 2 each window read twice, 4 the VMA
# cache copied twice, 8 the hot stack taken and kept twice, 16 the stack id
# looked up twice, 64 no walk at all (the event without its user stack),
# 128 no hot stack) or -DWIN_BYTES=N; or @COMMIT, the recorder of that
# commit (built whole from git archive). Default: the list below. The builds
# go to build/bench/record/breakdown/NAME/ (make BUILD=...).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
shift || true
STORM=${STORM:--t 4 -n 400000}
CC=${CC:-gcc}
[ "$(id -u)" -eq 0 ] || { echo "bpf_breakdown.sh: needs root" >&2; exit 1; }
VARIANTS=("$@")
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=(base= row2=-DUB_PROF=1 win2=-DUB_PROF=2 vc2=-DUB_PROF=4
	hot2=-DUB_PROF=8 sid2=-DUB_PROF=16 nohot=-DUB_PROF=128 nowalk=-DUB_PROF=64)
OUT=build/bench/record/breakdown
mkdir -p "$OUT"
$CC -O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls -g -o "$OUT/storm-fp" \
	tests/integration/progs/write_storm.c -lpthread
BASE_BPF="-target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -O2 -g -Wall -Werror -I/usr/include/$($CC -dumpmachine) -Isrc/bpf"
names=()
for v in "${VARIANTS[@]}"; do
	n=${v%%=*} f=${v#*=}
	names+=("$n")
	echo "building $n ($f) ..." >&2
	# only the program differs: the rest of the build is shared by copying build/
	d=$OUT/$n
	if [ "${f#@}" = "$f" ] || [ ! -x "$d/ustack" ] || [ "$(cat "$d/flags" 2>/dev/null)" != "$f" ]; then
		mkdir -p "$d"
		rm -rf "$d/obj" "$d/bpf" && cp -a build/obj "$d/"
		rm -f "$d/obj/bpfload/bpf_backend.o"
		if [ "${f#@}" != "$f" ]; then
			# the recorder of commit ${f#@}, whole: a program and the
			# user space that loads it go together (the globals it sets)
			rm -rf "$d/tree" && mkdir -p "$d/tree"
			git archive "${f#@}" | tar -x -C "$d/tree"
			make -s -j2 -C "$d/tree" build/ustack >/dev/null
			cp "$d/tree/build/ustack" "$d/ustack"
		else
			make -s -j2 BUILD="$d" BPF_CFLAGS="$BASE_BPF $f" "$d/ustack" >/dev/null
		fi
		echo "$f" >"$d/flags"
	fi
done
old=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q -w kernel.bpf_stats_enabled=$old' EXIT
sysctl -q -w kernel.bpf_stats_enabled=1
. bench/lib/bpf_stats.sh

TOOLS=(bpftrace "${names[@]}")
nt=${#TOOLS[@]}
: >"$OUT/ns"
for r in $(seq "$ROUNDS"); do
	echo "round $r of $ROUNDS ..." >&2
	for i in $(seq 0 $((nt - 1))); do
		t=${TOOLS[(i + r - 1) % nt]}
		id0=$(bpf_max_id)
		if [ "$t" = bpftrace ]; then
			name=sys_enter_write
			bpftrace -e "tracepoint:syscalls:sys_enter_write /pid == cpid/ { @[ustack(127)] = count(); }" \
				-c "$OUT/storm-fp $STORM" >"$OUT/$t.out" 2>&1 &
		else
			name=ustack_tp
			"$OUT/$t/ustack" record --backend bpf -q -e syscalls:sys_enter_write \
				-o "$OUT/$t.data" -- "$OUT/storm-fp" $STORM >"$OUT/$t.out" 2>&1 &
		fi
		pid=$!
		last="0 0"
		while kill -0 $pid 2>/dev/null; do
			now=$(bpf_reading "$id0" $name)
			[ "${now#* }" != 0 ] && last=$now
			sleep 0.1
		done
		wait $pid || { echo "bpf_breakdown.sh: $t failed:" >&2; cat "$OUT/$t.out" >&2; exit 1; }
		read -r ns cnt <<<"$last"
		echo "$t $ns $cnt" >>"$OUT/ns"
	done
done
stat() { awk -v t="$1" '$1 == t && $3 > 0 { printf "%.0f\n", $2 / $3 }' "$OUT/ns" | sort -n |
	awk '{ v[NR] = $1 } END { printf "%s [%s-%s]", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[1], v[NR] }'; }
echo "command: bash bench/record/bpf_breakdown.sh $ROUNDS   (STORM=\"$STORM\"), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| program | ns per event, median [min-max] of $ROUNDS |"
echo "|---|---:|"
for t in "${TOOLS[@]}"; do
	f=bpftrace; [ "$t" = bpftrace ] || f=$(cat "$OUT/$t/flags")
	echo "| $t ($f) | $(stat "$t") |"
done
