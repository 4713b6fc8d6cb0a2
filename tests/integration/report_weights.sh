#!/usr/bin/env bash
# Weights through `ustack report` (text, folded, --stats, --event, --wall)
# and `ustack flamegraph`, on traces whose every number is known
# (tests/integration/progs/offcpu_mktrace.c: cpu-clock at 1000 Hz x4,
# off-cpu 1 + 2.5 + 0.5 ms, off-cpu-preempt 0.25 ms, kernel stacks named
# by KSYM records; weights_mktrace.c: futex tracepoint events x2 and an
# off-cpu interval of 1.5 us):
#   weights_text       off-CPU event lines carry their duration, cpu-clock
#                      lines none (a count)
#   weights_folded     folded numbers are summed ns (not events)
#   weights_event      --event keeps the named events, comma list and repeated
#   weights_mixed      a trace of samples and ns: folded refuses with one
#                      line naming both units, --event and --wall; no output
#   weights_wall       --wall: per thread NAME-TID root, cpu-clock samples
#                      1 ms each (1000 Hz), off-CPU their ns; events without
#                      a time meaning left out with one stderr line
#   weights_stats      --stats: count and weight per event
#   weights_svg        flamegraph <title>s in time units, the legend, the
#                      closing line; counts stay "N samples"
#   weights_errors     every refusal of a wrong option, one line each, exit 2
#   weights_old_trace  a 1.2 trace (tests/data/trace/tiny-1.2.ustack) still
#                      reads: text, folded, --stats; --wall at 999 Hz
set -u
T=report_weights
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
tmp=$(mktemp -d /tmp/ustack-weights-XXXXXX)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
: "${SAN_FLAGS:=-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer}"
for p in offcpu_mktrace weights_mktrace; do
	# shellcheck disable=SC2086
	if ! $CC ${BASE_CFLAGS:--std=gnu11 -O2 -D_GNU_SOURCE} $SAN_FLAGS -I"$TOP/include" -o "$tmp/$p" \
		"$TOP/tests/integration/progs/$p.c" "$TOP/${CHECK_DIR:-build/check}/libustack.a" \
		${LIB_LDLIBS:--lpthread -ldl -lbpf -ldw -lelf} 2>"$tmp/cc.err"; then
		echo "FAIL $T: cannot build $p: $(head -2 "$tmp/cc.err")"
		exit 1
	fi
done
"$tmp/offcpu_mktrace" mixed "$tmp/mixed.data" && "$tmp/offcpu_mktrace" offcpu "$tmp/offcpu.data" &&
	"$tmp/weights_mktrace" "$tmp/tp.data" || { echo "FAIL $T: the trace writers failed"; exit 1; }

# same NAME WANT GOT: exact comparison, the difference on failure
same() {
	if [ "$2" = "$3" ]; then
		echo "PASS $1"
	else
		echo "FAIL $1: want:"; printf '%s\n' "$2" | sed 's/^/    | /'
		echo "    got:"; printf '%s\n' "$3" | sed 's/^/    | /'
	fi
}
r() { "$USTACK" report "$@" 2>"$tmp/err"; }

same weights_text "worker-10 [000] ..... 0.001000: cpu-clock cookie=0
worker-10 [000] ..... 0.002000: off-cpu 1.000 ms cookie=0
worker-10 [000] ..... 0.003000: cpu-clock cookie=0
waiter-11 [000] ..... 0.004000: off-cpu 500.000 us cookie=0
worker-10 [000] ..... 0.005000: off-cpu 2.500 ms cookie=0
waiter-11 [000] ..... 0.006000: off-cpu-preempt 250.000 us cookie=0
worker-10 [000] ..... 0.007000: cpu-clock cookie=0
waiter-11 [000] ..... 0.008000: cpu-clock cookie=0" "$(r "$tmp/mixed.data" | grep -v '^ =>' | grep .)"

same weights_folded "waiter;kfunc_a 500000
waiter;kfunc_a;kfunc_b 250000
worker;kfunc_a;kfunc_b 3500000" "$(r -f folded "$tmp/offcpu.data")"

same weights_event_ns "waiter;kfunc_a 500000
worker;kfunc_a;kfunc_b 3500000" "$(r -f folded --event off-cpu "$tmp/mixed.data")"
same weights_event_list "waiter;kfunc_a 500000
waiter;kfunc_a;kfunc_b 250000
worker;kfunc_a;kfunc_b 3500000" "$(r -f folded --event off-cpu,off-cpu-preempt "$tmp/mixed.data")"
same weights_event_repeat "waiter;kfunc_a 500000
waiter;kfunc_a;kfunc_b 250000
worker;kfunc_a;kfunc_b 3500000" "$(r -f folded --event off-cpu --event=off-cpu-preempt "$tmp/mixed.data")"
same weights_event_count "waiter;kfunc_a;kfunc_b 1
worker;kfunc_a 3" "$(r -f folded --event cpu-clock "$tmp/mixed.data")"
same weights_event_text "waiter-11 [000] ..... 0.006000: off-cpu-preempt 250.000 us cookie=0" \
	"$(r --event off-cpu-preempt "$tmp/mixed.data" | grep -v '^ =>' | grep .)"

out=$(r -f folded "$tmp/mixed.data"); st=$?
same weights_mixed "2 [] ustack: report: $tmp/mixed.data: events in samples (cpu-clock) and in ns (off-cpu): folded stacks carry one number each; choose events of one unit with --event NAME[,NAME], or the wall-clock time of each thread with --wall" \
	"$st [$out] $(cat "$tmp/err")"
"$USTACK" flamegraph -i "$tmp/mixed.data" -o "$tmp/m.svg" 2>"$tmp/err"; st=$?
same weights_mixed_flamegraph "2 1 no-svg" "$st $(grep -c -- '--event NAME\[,NAME\], or the wall-clock' "$tmp/err") $([ -e "$tmp/m.svg" ] && echo svg || echo no-svg)"

# 1000 Hz: each cpu-clock sample 1 ms; waiter: preempt 0.25 + its sample 1
same weights_wall "waiter-11;kfunc_a 500000
waiter-11;kfunc_a;kfunc_b 1250000
worker-10;kfunc_a 3000000
worker-10;kfunc_a;kfunc_b 3500000" "$(r -f folded --wall "$tmp/mixed.data")"
same weights_wall_text "worker-10 [000] ..... 0.001000: cpu-clock 1.000 ms cookie=0" \
	"$(r --wall "$tmp/mixed.data" | grep -v '^ =>' | head -1)"
same weights_wall_event "worker-10;kfunc_a 3000000" "$(r -f folded --wall --event cpu-clock "$tmp/mixed.data" | grep worker)"
out=$(r -f folded --wall "$tmp/tp.data")
same weights_wall_leftout "t-7;kfunc 1500 / ustack: report: --wall: 2 events without a time meaning left out: syscalls:sys_enter_futex 2" \
	"$out / $(cat "$tmp/err")"
r -f folded --wall "$tmp/mixed.data" >/dev/null
same weights_wall_quiet "" "$(cat "$tmp/err")"

same weights_stats "events: 8
events of cpu-clock: 4, weight 4 samples
events of off-cpu: 3, weight 4000000 ns (4.000 ms)
events of off-cpu-preempt: 1, weight 250000 ns (250.000 us)" "$(r --stats "$tmp/mixed.data" | grep -E '^events(:| of )')"
same weights_stats_threshold "events of off-cpu: 2, weight 1500 ns (1.500 us), intervals under 1.000 us not recorded" \
	"$(r --stats "$tmp/tp.data" | grep '^events of off-cpu')"

titles() { grep -o '<title>[^<]*' "$1" | sed 's/<title>//'; }
"$USTACK" flamegraph -i "$tmp/offcpu.data" -o "$tmp/o.svg" 2>"$tmp/err"
same weights_svg "all (4.250 ms, 100.00%)
waiter (750.000 us, 17.65%)
kfunc_a (750.000 us, 17.65%)
kfunc_b (250.000 us, 5.88%)
worker (3.500 ms, 82.35%)
kfunc_a (3.500 ms, 82.35%)
kfunc_b (3.500 ms, 82.35%)
legend: widths: time; 4.250 ms in all
ustack: wrote $tmp/o.svg (4.250 ms)" "$(titles "$tmp/o.svg")
legend: $(grep -o '<text id="legend"[^>]*>[^<]*' "$tmp/o.svg" | sed 's/.*>//')
$(cat "$tmp/err")"
"$USTACK" flamegraph --wall -i "$tmp/mixed.data" -o "$tmp/w.svg" 2>/dev/null
same weights_svg_wall "all (8.250 ms, 100.00%)
waiter-11 (1.750 ms, 21.21%)
worker-10 (6.500 ms, 78.79%)" "$(titles "$tmp/w.svg" | grep -E '^(all|waiter|worker)')"
"$USTACK" flamegraph --event cpu-clock -i "$tmp/mixed.data" -o "$tmp/c.svg" 2>/dev/null
same weights_svg_count "all (4 samples, 100.00%) legend=0" "$(titles "$tmp/c.svg" | head -1) legend=$(grep -c 'id="legend"' "$tmp/c.svg")"
r -f folded --event off-cpu "$tmp/mixed.data" >"$tmp/o.folded"
"$USTACK" flamegraph --countname ns --folded "$tmp/o.folded" -o "$tmp/f.svg" 2>/dev/null
same weights_svg_countname "all (4.000 ms, 100.00%)" "$(titles "$tmp/f.svg" | head -1)"

# every refusal: exit status 2, one line on stderr, nothing on stdout
refuse() { # NAME MESSAGE CMD...
	local name=$1 want=$2 out st
	shift 2
	out=$("$@" 2>"$tmp/err"); st=$?
	same "weights_errors_$name" "2 [] $want" "$st [$out] $(cat "$tmp/err")"
}
refuse no_event "ustack: report: $tmp/mixed.data: no event 'nope' in the trace (its events: cpu-clock, off-cpu, off-cpu-preempt)" \
	"$USTACK" report --event off-cpu,nope "$tmp/mixed.data"
refuse empty "ustack: report: --event '': an empty event name" "$USTACK" report --event= "$tmp/mixed.data"
refuse empty_in_list "ustack: report: --event 'a,,b': an empty event name" "$USTACK" report --event a,,b "$tmp/mixed.data"
refuse no_value "ustack: report: --event needs a value" "$USTACK" report --event
refuse wall_stats "ustack: report: --wall applies to text and folded, not to --stats" "$USTACK" report --wall --stats "$tmp/mixed.data"
refuse wall_raw "ustack: report: --wall applies to text and folded, not to raw" "$USTACK" report --wall -f raw "$tmp/mixed.data"
refuse event_stackmap "ustack: report: --event applies to text, folded, pprof, speedscope and perf-script, not to the stack maps" \
	"$USTACK" report --event off-cpu -f stackmap "$tmp/mixed.data"
refuse wall_pprof "ustack: report: --wall: text and folded only (and 'ustack flamegraph --wall'); pprof, speedscope and perf-script weigh each event in its own unit" \
	"$USTACK" report --wall -f pprof -o "$tmp/x.pb.gz" "$tmp/mixed.data"
refuse fg_countname "ustack: flamegraph: --countname names the numbers of folded input, not of a trace" \
	"$USTACK" flamegraph --countname ns -i "$tmp/mixed.data" -o "$tmp/x.svg"
refuse fg_wall_folded "ustack: flamegraph: --event and --wall choose a trace's events; folded input has its numbers already" \
	"$USTACK" flamegraph --wall --folded "$tmp/o.folded" -o "$tmp/x.svg"
r -f folded --event cpu-clock "$tmp/mixed.data" >"$tmp/c.folded"
out=$("$USTACK" flamegraph --diff "$tmp/offcpu.data" "$tmp/c.folded" -o "$tmp/x.svg" 2>"$tmp/err"); st=$?
same weights_errors_diff_units "1 [] ustack: flamegraph: --diff: $tmp/offcpu.data counts ns, $tmp/c.folded samples: widths of unlike units cannot be compared" \
	"$st [$out] $(cat "$tmp/err")"

old=$TOP/tests/data/trace/tiny-1.2.ustack
same weights_old_trace "<...>-101 [001] ..... 1.000000: cpu-clock cookie=100000002
<...>;[app];[app] 1
events of cpu-clock: 1, weight 1 samples
<...>-101;[app];[app] 1001001" "$(r "$old" | head -1)
$(r -f folded "$old")
$(r --stats "$old" | grep '^events of ')
$(r -f folded --wall "$old")"
