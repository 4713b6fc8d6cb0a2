#!/bin/bash
# SPDX-License-Identifier: MIT
# `ustack report` of allocations and probe payloads (trace format 1.4), on
# traces written by tests/integration/progs/alloc_mktrace.c with the
# library's writer. The expected numbers are computed here, in
# lib/alloc_check.py, from the program's own listing of its events (not
# from ustack's output): pairing by time (the file holds CPU 1's events
# before CPU 0's, so frees come before their allocations), a free of an
# address never kept, an address allocated again while live, a free of
# another pid, an allocation without args.
#   alloc_folded_VIEW  folded --view VIEW: every stack's sum, exactly
#   alloc_default      no --view is inuse_space
#   alloc_at           --at SECONDS and --at @SECS.USECS mid-trace
#   alloc_stats        --stats: kept, frees, live at the end
#   alloc_text         text lists the live allocations, no free
#   alloc_pprof        go tool pprof -raw: the four types, per-stack sums,
#                      inuse_space the default (SKIP without go)
#   alloc_speedscope   speedscope: bytes per stack of the inuse view
#   alloc_flamegraph   flamegraph --view: its title and legend in bytes
#   probe_raw, probe_text, probe_perfscript  payload words
#   alloc_errors       --view/--at refusals, one line each, exit 2
set -u
export LC_ALL=C
T=report_alloc
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
tmp=$(mktemp -d /tmp/ustack-alloc-XXXXXX)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
: "${SAN_FLAGS:=-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer}"
# shellcheck disable=SC2086
if ! $CC ${BASE_CFLAGS:--std=gnu11 -O2 -D_GNU_SOURCE} $SAN_FLAGS -I"$TOP/include" -o "$tmp/mk" \
	"$TOP/tests/integration/progs/alloc_mktrace.c" "$TOP/${CHECK_DIR:-build/check}/libustack.a" \
	${LIB_LDLIBS:--lpthread -ldl -lbpf -ldw -lelf} -lm 2>"$tmp/cc.err"; then
	echo "FAIL $T: cannot build alloc_mktrace: $(head -2 "$tmp/cc.err")"
	exit 1
fi
"$tmp/mk" alloc "$tmp/a.data" >"$tmp/a.list" && "$tmp/mk" probe "$tmp/p.data" >"$tmp/p.list" ||
	{ echo "FAIL $T: the trace writer failed"; exit 1; }

same() {
	if [ "$2" = "$3" ]; then
		echo "PASS $1"
	else
		echo "FAIL $1: want:"; printf '%s\n' "$2" | sed 's/^/    | /'
		echo "    got:"; printf '%s\n' "$3" | sed 's/^/    | /'
	fi
}
r() { "$USTACK" report "$@" 2>"$tmp/err"; }
want() { python3 "$TOP/tests/integration/lib/alloc_check.py" "$tmp/a.list" "$@"; }

for v in alloc_space alloc_objects inuse_space inuse_objects; do
	same "alloc_folded_$v" "$(want folded $v)" "$(r -f folded --view $v "$tmp/a.data")"
done
same alloc_default "$(want folded inuse_space)" "$(r -f folded "$tmp/a.data")"
# 50 us after the first event (1000000 ns), i.e. at 0.001050
same alloc_at "$(want folded inuse_space 1050000)
$(want folded inuse_objects 1050000)" "$(r -f folded --at 0.00005 "$tmp/a.data")
$(r -f folded --at=@0.001050 --view inuse_objects "$tmp/a.data")"
same alloc_stats "$(want stats)" "$(r --stats "$tmp/a.data" | grep '^allocations:')"
same alloc_text "$(want text)" "$(r "$tmp/a.data" | grep -v '^ =>' | grep . | sort)"

if command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1; then
	export HOME="$tmp" GOCACHE="$tmp/gocache" GOFLAGS=
	if r -f pprof -o "$tmp/a.pb.gz" "$tmp/a.data" &&
		go tool pprof -raw "$tmp/a.pb.gz" >"$tmp/raw" 2>"$tmp/pprof.err"; then
		same alloc_pprof "$(want pprof)" "$(python3 "$TOP/tests/integration/lib/alloc_check.py" \
			"$tmp/a.list" pprof-raw "$tmp/raw")"
	else
		echo "FAIL alloc_pprof: $(head -2 "$tmp/err" "$tmp/pprof.err")"
	fi
	r -f pprof --view alloc_objects -o "$tmp/o.pb.gz" "$tmp/a.data"
	same alloc_pprof_view "alloc_objects/count[dflt]" \
		"$(go tool pprof -raw "$tmp/o.pb.gz" 2>/dev/null | grep -o 'alloc_objects/count\[dflt\]')"
else
	echo "SKIP alloc_pprof: go tool pprof not installed (Debian golang-go, scripts/deps.sh)"
fi

r -f speedscope -o "$tmp/a.json" "$tmp/a.data"
same alloc_speedscope "$(want folded inuse_space | python3 -c '
import sys
print(sum(int(l.rsplit(" ", 1)[1]) for l in sys.stdin), "bytes")')" "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(sum(p["weights"]) for p in d["profiles"]), *{p["unit"] for p in d["profiles"]})' "$tmp/a.json")"

"$USTACK" flamegraph --view alloc_space -o "$tmp/a.svg" "$tmp/a.data" 2>"$tmp/err"
same alloc_flamegraph "$tmp/a.data (alloc_space)
widths: bytes allocated; $(want folded alloc_space | python3 -c '
import sys
print(sum(int(l.rsplit(" ", 1)[1]) for l in sys.stdin), "bytes in all")')" \
	"$(sed -n 's/.*<text id="title"[^>]*>\([^<]*\)<.*/\1/p; s/.*<text id="legend"[^>]*>\([^<]*\)<.*/\1/p' "$tmp/a.svg")"

same probe_raw "app-10 [000] ..... 0.002000: usdt:/usr/bin/app:prov:ev cookie=0 arg0=0x1 arg1=0xfffffffffffffffb arg2=0x7f00dead0000
app-10 [000] ..... 0.002001: uretprobe:/usr/bin/app:get cookie=0 ret=0x2a
app-11 [001] ..... 0.002002: uprobe:/usr/bin/app:get cookie=0" \
	"$(r -f raw "$tmp/p.data" | grep -v '^ =>' | sort)"
same probe_text "app-10 [000] ..... 0.002000: usdt:/usr/bin/app:prov:ev cookie=0 arg0=0x1 arg1=0xfffffffffffffffb arg2=0x7f00dead0000
app-10 [000] ..... 0.002001: uretprobe:/usr/bin/app:get cookie=0 ret=0x2a
app-11 [001] ..... 0.002002: uprobe:/usr/bin/app:get cookie=0" \
	"$(r "$tmp/p.data" | grep -v '^ =>' | grep . | sort)"
same probe_perfscript "app    10/10    [000]     0.002000:          1 usdt:/usr/bin/app:prov:ev: arg0=0x1 arg1=0xfffffffffffffffb arg2=0x7f00dead0000
app    10/10    [000]     0.002001:          1 uretprobe:/usr/bin/app:get: ret=0x2a
app    10/11    [001]     0.002002:          1 uprobe:/usr/bin/app:get: " \
	"$(r -f perf-script "$tmp/p.data" | grep '^app' | sort)"
same probe_stats "events of usdt:/usr/bin/app:prov:ev: 1, weight 1 hits
events of uretprobe:/usr/bin/app:get: 1, weight 1 hits
events of uprobe:/usr/bin/app:get: 1, weight 1 hits" "$(r --stats "$tmp/p.data" | grep '^events of')"

errs=""
for args in "--view inuse_space $tmp/p.data" "--view bogus $tmp/a.data" \
	"--view alloc_space --at 1 $tmp/a.data" "--at 1x $tmp/a.data" "-f raw --view alloc_space $tmp/a.data"; do
	# shellcheck disable=SC2086
	r $args >/dev/null
	errs="$errs$? $(wc -l <"$tmp/err") $(sed "s|$tmp|TMP|g" "$tmp/err")
"
done
same alloc_errors "2 1 ustack: report: TMP/p.data: --view: the trace has no allocation events (record --alloc)
2 1 ustack: report: --view 'bogus': not a view (alloc_space, alloc_objects, inuse_space, inuse_objects)
2 1 ustack: report: --at applies to the inuse views, not to alloc_space
2 1 ustack: report: --at '1x': not a time (SECONDS since the trace's first event, or @SECS.USECS as event lines print it)
2 1 ustack: report: --view applies to text, folded, pprof, speedscope and perf-script, not to raw
" "$errs"
