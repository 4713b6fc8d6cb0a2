#!/usr/bin/env bash
# Off-CPU recording side by side, one run, tools alternating, ROUNDS rounds,
# medians [min-max]:
#
#   bare        the workload alone
#   bpf, copy   ustack record --backend B --off-cpu --stats (default threshold 0)
#   bt, btfp    bench/offcpu/offcputime.bt, bcc's offcputime in bpftrace
#               (sched_switch tracepoint, the workload's pid, kernel and user
#               stacks by frame pointers, summed per (comm, stacks) in the
#               kernel), on the workload as ustack records it (bt: built
#               without frame pointers, as distributions build) and built
#               with them (btfp); libc has none either way
#   bcc         bcc's offcputime (offcputime-bpfcc -f -U, whole machine, user
#               stacks only, folded; frame pointers only), on the workload
#               built with frame pointers, where it runs
# Workloads (tests/integration/progs/offcpu_paths.c):
#   storm       p-ping and p-pong bounce a byte through two pipes STORM times:
#               every bounce is two switch-outs and two switch-ins
#   mix         the oracle's four paths (nanosleep, condvar, pipe, mutex), 40
#               calls of 10 ms each, and its own accounting of each call
# Figures:
#   rate        switches/s of the workload (2 per bounce; storm only)
#   wall        the workload's run time (mix)
#   intervals   ustack: --stats offcpu_intervals; lost: --stats lost (records)
#               and offcpu_unpaired; bcc: the stacks it says it lost
#   share       mix: of the time the measured threads spent switched out in
#               their calls (wall - CPU, the program's clocks), the share
#               recorded as intervals with the whole, right user stack
#               (lib/offcpu_check.py share); bt: the ns of its entries of
#               those threads whose user stack offcpu_check accepts
#               (bench/offcpu/bt_share.py, names from the live process);
#               bcc: the microseconds of its folded lines of those threads
#               holding path_X;do_X_wait
#   ns/switch   kernel.bpf_stats_enabled: run_time_ns / run_cnt of the tool's
#               program on the context switch (ustack bpf: ustack_offcpu;
#               bt: sched_switch; bcc: "oncpu", its kprobe on
#               finish_task_switch), read at the end of the run. All run on
#               every switch of the machine and filter in the program: the
#               figure averages the recorded threads' switches with the
#               others'. copy has no BPF program (perf samples): none
#
#   bash bench/offcpu/run.sh [ROUNDS]   (default 3; root; bpftool; bpftrace
#   and eu-addr2line for bt; bpfcc-tools for bcc)
#   env: STORM (bounces, default 200000), USTACK
set -uo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
STORM=${STORM:-200000}
CC=${CC:-gcc}
[ "$(id -u)" -eq 0 ] || { echo "bench/offcpu/run.sh: needs root" >&2; exit 1; }
if [ -z "${USTACK:-}" ]; then
	make -s -j2 build/ustack build/libustack.a >/dev/null || exit 1
	USTACK=build/ustack
fi
BCC=$(command -v offcputime-bpfcc || true)
OUT=build/bench/offcpu
mkdir -p "$OUT"
P=tests/integration/progs
$CC -O2 -fomit-frame-pointer -pthread -o "$OUT/paths" $P/offcpu_paths.c || exit 1
$CC -O2 -fno-omit-frame-pointer -pthread -o "$OUT/paths-fp" $P/offcpu_paths.c || exit 1
$CC -std=gnu11 -O2 -D_GNU_SOURCE -Iinclude -o "$OUT/events" $P/offcpu_events.c build/libustack.a \
	-lpthread -ldl -lbpf -ldw -lelf || exit 1

old=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q -w kernel.bpf_stats_enabled=$old' EXIT
sysctl -q -w kernel.bpf_stats_enabled=1

# prog_ns PID REGEX: "run_time_ns run_cnt" summed over the BPF programs of
# process PID whose name matches REGEX. The programs of PID are the prog_id
# of its file descriptors' fdinfo (bpftool here lists no pids: built
# without its skeletons); other processes may load programs of the same name
prog_ns() {
	bpftool prog show -j 2>/dev/null | python3 -c '
import glob, json, re, sys
pid, rx = sys.argv[1], re.compile(sys.argv[2])
ids = set()
for fd in glob.glob(f"/proc/{pid}/fdinfo/*"):
    try:
        for l in open(fd):
            if l.startswith("prog_id:"):
                ids.add(int(l.split()[1]))
    except OSError:
        pass
t = n = 0
for p in json.load(sys.stdin):
    if p["id"] in ids and rx.search(p.get("name", "")):
        t += p.get("run_time_ns", 0); n += p.get("run_cnt", 0)
print(t, n)' "$1" "$2"
}

# bt_one F BIN ARGS...: BIN under offcputime.bt. BIN starts stopped, runs
# once bpftrace is attached and stops again at its exit() (the script's
# uprobe), so that bpftrace, printing at SIGINT, and eu-addr2line find its
# mappings; then it exits.
bt_one() {
	local f=$1 bin=$2 wp bp st
	shift 2
	( kill -STOP $BASHPID; exec "$bin" -o "$f.log" "$@" ) &
	wp=$!
	until [ "$(awk '{ print $3 }' /proc/$wp/stat 2>/dev/null)" = T ]; do sleep 0.05; done
	bpftrace --unsafe bench/offcpu/offcputime.bt $wp >"$f.bt" 2>"$f.bterr" &
	bp=$!
	# bpftrace prints "Attaching" before it attaches, and catches SIGINT
	# only once it has attached every probe: that is when it records
	until [ $(($(awk '/^SigCgt/ { print "0x" $2 }' /proc/$bp/status 2>/dev/null || echo 0) & 2)) -ne 0 ]; do
		sleep 0.1; kill -0 $bp 2>/dev/null || { echo "# bpftrace: $(tail -1 "$f.bterr")" >&2; break; }
	done
	kill -CONT $wp
	# stopped at exit(), or gone (bpftrace failed)
	while st=$(awk '{ print $3 }' /proc/$wp/stat 2>/dev/null) && [ "$st" != T ] && [ "$st" != Z ]; do
		sleep 0.1
	done
	prog_ns $bp '^sched_switch$' >"$f.ns"
	while kill -INT $bp 2>/dev/null; do sleep 0.5; done
	wait $bp
	sed -n 's/^ *\(0x[0-9a-f]*\)$/\1/p' "$f.bt" | sort -u >"$f.addrs"
	while read -r a; do printf '0x%x\n' $((a - 1)); done <"$f.addrs" |
		eu-addr2line -S -p $wp 2>/dev/null | paste - - | paste "$f.addrs" - >"$f.syms"
	kill -CONT $wp; wait $wp
}

# one TOOL WORKLOAD R: one measurement, "key=value" words on one line
one() {
	local tool=$1 wl=$2 r=$3 f=$OUT/$1.$2.$3 args bin=$OUT/paths rpid ns
	case $wl in
	storm) args=(-r "$STORM" storm) ;;
	mix) args=(-r 40 -t 10 paths) ;;
	esac
	case $tool in
	bare) "$bin" -o "$f.log" "${args[@]}" ;;
	bpf | copy)
		# the recorder's programs are read while it runs: from a watcher
		local me=$BASHPID
		( while sleep 0.2; do
			rp=$(pgrep -P $me -x ustack | head -1); [ -n "$rp" ] && prog_ns "$rp" '^ustack_offcpu$' >"$f.ns.tmp" &&
				mv "$f.ns.tmp" "$f.ns"
		done ) &
		local w=$!
		"$USTACK" record -q --stats --backend "$tool" --off-cpu -o "$f.data" -- "$bin" -o "$f.log" \
			"${args[@]}" 2>"$f.stats"
		kill $w 2>/dev/null; wait $w 2>/dev/null ;;
	bt | btfp)
		[ $tool = btfp ] && bin=$OUT/paths-fp
		bt_one "$f" "$bin" "${args[@]}" ;;
	bcc)
		"$BCC" -f -U >"$f.bcc" 2>"$f.bccerr" &
		rpid=$!
		until [ "$(prog_ns $rpid '^oncpu$' | cut -d' ' -f2)" != "" ] && bpftool prog show -j | grep -q '"oncpu"'; do
			sleep 0.2; kill -0 $rpid 2>/dev/null || break
		done
		"$OUT/paths-fp" -o "$f.log" "${args[@]}"
		prog_ns $rpid '^oncpu$' >"$f.ns"
		kill -INT $rpid; wait $rpid ;;
	esac
	printf '%s %s ' "$tool" "$wl"
	awk '/^RATE/ { printf "rate=%s ", $2 } /^S / { w += $4 } END { printf "wall=%.0f ", w / 4 / 1e6 }' "$f.log"
	if [ -f "$f.ns" ]; then
		awk '{ if ($2 > 0) printf "ns_switch=%.0f ", $1 / $2 }' "$f.ns"
	fi
	case $tool in
	bpf | copy)
		awk '$1 == "stat" && ($2 == "offcpu_intervals" || $2 == "lost" || $2 == "offcpu_unpaired" || $2 == "offcpu_short") { printf "%s=%s ", $2, $3 }' "$f.stats"
		if [ "$wl" = mix ] && "$OUT/events" "$f.data" >"$f.ev" 2>/dev/null; then
			python3 tests/integration/lib/offcpu_check.py share "$f.log" "$f.ev" | awk '{ printf "%s %s ", $4, $5 }'
		fi ;;
	bt | btfp)
		python3 bench/offcpu/bt_share.py "$f.log" "$f.bt" "$f.syms" |
			if [ "$wl" = mix ]; then cat; else sed 's/[a-z_]*share=[^ ]* //g'; fi ;;
	bcc)
		printf 'bcc_lost=%s ' "$(grep -o '[0-9]* stack traces\? \(lost\|could not\)' "$f.bcc" "$f.bccerr" | awk -F: '{ s += $NF + 0 } END { print s + 0 }')"
		if [ "$wl" = mix ]; then
			python3 - "$f.log" "$f.bcc" <<'EOF'
import sys
off = {}
for l in open(sys.argv[1]):
    w = l.split()
    if w and w[0] == "S" and w[1] in ("sleep", "cond", "pipe", "mutex"):
        off[w[1]] = int(w[4])
right = 0
for l in open(sys.argv[2], errors="replace"):
    stack, _, n = l.rstrip("\n").rpartition(" ")
    fr = stack.split(";")
    for p in off:
        if fr[0] == "p-" + p and f"path_{p};do_{p}_wait" in ";".join(fr):
            right += int(n) * 1000
tot = sum(off.values())
print(f"share={right / tot if tot else 0:.4f}", end=" ")
EOF
		fi ;;
	esac
	echo
}

tools=(bare bpf copy)
if ! command -v bpftrace >/dev/null || ! command -v eu-addr2line >/dev/null; then
	echo "# bpftrace or eu-addr2line not installed (apt-get install bpftrace elfutils): bt not measured"
else
	tools+=(bt btfp)
fi
if [ -z "$BCC" ]; then
	echo "# bcc's offcputime not installed (apt-get install bpfcc-tools): not measured"
elif ! timeout 120 "$BCC" -f -U 1 >/dev/null 2>"$OUT/bcc-probe.err"; then
	# bcc compiles its program against the running kernel's headers at
	# start (and attaches a kprobe to finish_task_switch)
	why=$(grep -m1 'kernel headers' "$OUT/bcc-probe.err" || grep -v '^ \|^Traceback' "$OUT/bcc-probe.err" | tail -1)
	echo "# bcc's offcputime cannot run here: $why: not measured"
else
	tools+=(bcc)
fi
for tool in bpf copy; do
	if ! "$USTACK" record -q --backend $tool --off-cpu -o "$OUT/probe.data" -- true 2>"$OUT/probe.err"; then
		echo "# $tool: $(head -1 "$OUT/probe.err"): not measured"
		tools=("${tools[@]/$tool}")
	fi
done
echo "# $(uname -r), $(nproc) CPUs, $(date -u +%F), storm $STORM bounces, $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
	for wl in storm mix; do
		for tool in "${tools[@]}"; do
			[ -n "$tool" ] && one "$tool" "$wl" "$r"
		done
	done
done | tee "$OUT/results.txt"
echo "# medians [min-max]"
python3 - "$OUT/results.txt" <<'EOF'
import sys
rows = {}
for l in open(sys.argv[1]):
    w = l.split()
    if len(w) < 2 or l.startswith("#"):
        continue
    d = rows.setdefault((w[0], w[1]), {})
    for kv in w[2:]:
        k, _, v = kv.partition("=")
        try:
            d.setdefault(k, []).append(float(v))
        except ValueError:
            pass
for (tool, wl), d in sorted(rows.items(), key=lambda x: (x[0][1], x[0][0])):
    parts = []
    for k, v in d.items():
        v = sorted(v)
        med = v[len(v) // 2]
        parts.append(f"{k} {med:g} [{v[0]:g}-{v[-1]:g}]")
    print(f"{wl:6} {tool:5} " + ", ".join(parts))
EOF
