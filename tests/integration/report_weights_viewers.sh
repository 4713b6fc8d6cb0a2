#!/usr/bin/env bash
# Weights (trace format 1.3: off-CPU intervals in ns) through the viewer
# formats, on the traces of tests/integration/progs/offcpu_mktrace.c, whose
# every number is known (see its comment): off-cpu 3500000 ns on
# kfunc_b<-kfunc_a (2 intervals, worker), 500000 ns on kfunc_a (1, waiter);
# off-cpu-preempt 250000 ns on kfunc_b<-kfunc_a (waiter); cpu-clock at
# 1000 Hz: 3 samples on kfunc_a (worker), 1 on kfunc_b<-kfunc_a (waiter).
#   weights_pprof        `go tool pprof -top -unit=ns` per sample type: flat and
#                        cum per function exactly the numbers above
#                        (off_cpu, off_cpu_intervals, off_cpu_preempt,
#                        samples, cpu); the default type is cpu for the mixed
#                        trace, off_cpu for the off-CPU-only one
#   weights_speedscope   one profile per thread and event, unit nanoseconds
#                        for off-CPU and cpu-clock, weights = the intervals'
#                        ns in trace order, endValue = their sum
#   weights_perfscript   FlameGraph's stackcollapse-perf.pl (vendored) sums
#                        the period field per stack: per event
#                        (--event-filter) exactly the ns above
#   weights_wall         the wall-clock view (report_pprof_opts.wall,
#                        cli_report_viewer__set_wall, driven by
#                        progs/viewers_wall.c as cmd_report.c's --wall will):
#                        pprof type wall (the default): kfunc_a flat 3500000
#                        cum 8250000, kfunc_b flat 4750000; speedscope one
#                        profile per thread of every event in time order;
#                        stackcollapse sums each thread's whole time
#                        (worker 6500000, waiter 1750000)
set -u
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
: "${SAN_FLAGS:=-fsanitize=address,undefined}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf -ldw -lelf}"
: "${BASE_CFLAGS:=-std=gnu11 -g -O2 -D_GNU_SOURCE}"
cd "$TOP" || exit 1
tmp=$(mktemp -d /tmp/ustack-weights-viewers-XXXXXX)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }
PY=/usr/bin/python3
COLLAPSE=$TOP/tests/vendor/flamegraph/stackcollapse-perf.pl
O=$CHECK_DIR/obj/cli

# shellcheck disable=SC2086
if ! $CC $BASE_CFLAGS $SAN_FLAGS -Iinclude -o "$tmp/mktrace" tests/integration/progs/offcpu_mktrace.c \
	"$CHECK_DIR/libustack.a" $LIB_LDLIBS; then
	fail weights_build "cannot compile tests/integration/progs/offcpu_mktrace.c"
	exit 0
fi
# shellcheck disable=SC2086
if ! $CC $BASE_CFLAGS $SAN_FLAGS -Iinclude -Isrc -o "$tmp/vwall" tests/integration/progs/viewers_wall.c \
	$O/out_pprof_report.o $O/out_pprof.o $O/cli_grow.o $O/out_names.o $O/report_weight.o \
	$O/report_viewers.o $O/out_speedscope.o $O/out_perfscript.o "$CHECK_DIR/libustack.a" \
	$LIB_LDLIBS -lz; then
	fail weights_build "cannot compile tests/integration/progs/viewers_wall.c"
	exit 0
fi
"$tmp/mktrace" mixed "$tmp/mixed.ustack" && "$tmp/mktrace" offcpu "$tmp/offcpu.ustack" ||
	{ fail weights_build "offcpu_mktrace failed"; exit 0; }
for f in pprof speedscope perf-script; do
	"$tmp/vwall" "$f" "$tmp/mixed.ustack" "$tmp/wall.$f" ||
		{ fail weights_wall "viewers_wall $f failed"; exit 0; }
done

# ---- pprof ------------------------------------------------------------------------------
# "func flat cum" per line, sorted: -unit=ns prints time types in ns
top() {
	go tool pprof -top -unit=ns ${2:+-sample_index=$2} "$1" 2>>"$tmp/pprof.err" |
		awk '$1 ~ /^[0-9]/ { sub(/ns$/, "", $1); sub(/ns$/, "", $4); print $6, $1, $4 }' | sort
}
want_top() { # NAME FILE TYPE WANT
	local got
	got=$(top "$2" "$3" | tr '\n' '|')
	[ "$got" = "$4" ] || { fail "$1" "-sample_index=$3: got '$got', want '$4'"; return 1; }
}
if ! command -v go >/dev/null || ! go tool pprof -h >/dev/null 2>&1; then
	skip weights_pprof "go tool pprof not installed (Debian golang-go)"
	skip weights_wall "go tool pprof not installed (Debian golang-go)"
	gook=0
else
	gook=1
	export HOME="$tmp" GOCACHE="$tmp/gocache" GOFLAGS=
	"$USTACK" report -i "$tmp/mixed.ustack" --format pprof -o "$tmp/mixed.pb.gz" &&
		"$USTACK" report -i "$tmp/offcpu.ustack" --format pprof -o "$tmp/offcpu.pb.gz" ||
		fail weights_pprof "report --format pprof failed"
	ok=1
	want_top weights_pprof "$tmp/mixed.pb.gz" off_cpu "kfunc_a 500000 4000000|kfunc_b 3500000 3500000|" || ok=0
	want_top weights_pprof "$tmp/mixed.pb.gz" off_cpu_intervals "kfunc_a 1 3|kfunc_b 2 2|" || ok=0
	want_top weights_pprof "$tmp/mixed.pb.gz" off_cpu_preempt "kfunc_a 0 250000|kfunc_b 250000 250000|" || ok=0
	want_top weights_pprof "$tmp/mixed.pb.gz" off_cpu_preempt_intervals "kfunc_a 0 1|kfunc_b 1 1|" || ok=0
	want_top weights_pprof "$tmp/mixed.pb.gz" samples "kfunc_a 3 4|kfunc_b 1 1|" || ok=0
	want_top weights_pprof "$tmp/mixed.pb.gz" cpu "kfunc_a 3000000 4000000|kfunc_b 1000000 1000000|" || ok=0
	want_top weights_pprof "$tmp/offcpu.pb.gz" off_cpu "kfunc_a 500000 4000000|kfunc_b 3500000 3500000|" || ok=0
	# the default type: what -top shows without -sample_index
	want_top weights_pprof "$tmp/mixed.pb.gz" "" "kfunc_a 3000000 4000000|kfunc_b 1000000 1000000|" || ok=0
	want_top weights_pprof "$tmp/offcpu.pb.gz" "" "kfunc_a 500000 4000000|kfunc_b 3500000 3500000|" || ok=0
	types=$(go tool pprof -raw "$tmp/offcpu.pb.gz" 2>/dev/null | sed -n '/^Samples:/{n;p}')
	want="off_cpu_intervals/count off_cpu/nanoseconds[dflt] off_cpu_preempt_intervals/count off_cpu_preempt/nanoseconds"
	[ "$types" = "$want" ] || { ok=0; fail weights_pprof "sample types '$types', want '$want'"; }
	[ $ok = 1 ] && pass weights_pprof
fi

# ---- speedscope ---------------------------------------------------------------------------
if ! "$USTACK" report -i "$tmp/mixed.ustack" --format speedscope -o "$tmp/mixed.json"; then
	fail weights_speedscope "report --format speedscope failed"
elif msg=$("$PY" - "$tmp/mixed.json" "$tmp/wall.speedscope" <<'EOF'
import json, sys
def profiles(path):
    d = json.load(open(path))
    fr = [f["name"] for f in d["shared"]["frames"]]
    return {p["name"]: (p["unit"], p["endValue"], p["weights"],
                        [";".join(fr[i] for i in s) for s in p["samples"]]) for p in d["profiles"]}
A, AB = "kfunc_a", "kfunc_a;kfunc_b"
want = {
    "worker (10) cpu-clock": ("nanoseconds", 3000000, [1000000] * 3, [A] * 3),
    "worker (10) off-cpu": ("nanoseconds", 3500000, [1000000, 2500000], [AB, AB]),
    "waiter (11) off-cpu": ("nanoseconds", 500000, [500000], [A]),
    "waiter (11) off-cpu-preempt": ("nanoseconds", 250000, [250000], [AB]),
    "waiter (11) cpu-clock": ("nanoseconds", 1000000, [1000000], [AB]),
}
wall = {
    "worker (10)": ("nanoseconds", 6500000, [1000000, 1000000, 1000000, 2500000, 1000000],
                    [A, AB, A, AB, A]),
    "waiter (11)": ("nanoseconds", 1750000, [500000, 250000, 1000000], [A, AB, AB]),
}
for path, w, tag in ((sys.argv[1], want, "report"), (sys.argv[2], wall, "wall")):
    got = profiles(path)
    if got != w:
        print("%s: got %s, want %s" % (tag, got, w))
        sys.exit(1)
EOF
); then
	pass weights_speedscope
	pass weights_wall_speedscope
else
	fail weights_speedscope "$msg"
fi

# ---- perf-script -------------------------------------------------------------------------
if ! command -v perl >/dev/null; then
	skip weights_perfscript "perl missing"
elif ! "$USTACK" report -i "$tmp/mixed.ustack" --format perf-script -o "$tmp/ps"; then
	fail weights_perfscript "report --format perf-script failed"
else
	ok=1
	check_collapse() { # FILTER WANT (sorted "stack N" lines joined by |)
		local got
		got=$(perl "$COLLAPSE" ${1:+--event-filter="$1"} "$2" 2>/dev/null | sort | tr '\n' '|')
		[ "$got" = "$3" ] || { fail "$4" "stackcollapse ${1:-(no filter)}: got '$got', want '$3'"; return 1; }
	}
	check_collapse off-cpu "$tmp/ps" "waiter;kfunc_a 500000|worker;kfunc_a;kfunc_b 3500000|" weights_perfscript || ok=0
	check_collapse off-cpu-preempt "$tmp/ps" "waiter;kfunc_a;kfunc_b 250000|" weights_perfscript || ok=0
	check_collapse cpu-clock "$tmp/ps" "waiter;kfunc_a;kfunc_b 1000000|worker;kfunc_a 3000000|" weights_perfscript || ok=0
	[ $ok = 1 ] && pass weights_perfscript
	# --wall: one event kind, "wall"; stackcollapse keeps the first kind
	# it meets, so any other name would drop events
	check_collapse "" "$tmp/wall.perf-script" \
		"waiter;kfunc_a 500000|waiter;kfunc_a;kfunc_b 1250000|worker;kfunc_a 3000000|worker;kfunc_a;kfunc_b 3500000|" \
		weights_wall_perfscript && pass weights_wall_perfscript
fi

if [ "$gook" = 1 ]; then
	ok=1
	want_top weights_wall "$tmp/wall.pprof" "" "kfunc_a 3500000 8250000|kfunc_b 4750000 4750000|" || ok=0
	want_top weights_wall "$tmp/wall.pprof" off_cpu "kfunc_a 500000 4000000|kfunc_b 3500000 3500000|" || ok=0
	[ $ok = 1 ] && pass weights_wall
fi
exit 0
