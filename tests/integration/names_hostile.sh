#!/usr/bin/env bash
# Names are data, never syntax: every output format of ustack, for a process
# whose names are hostile (tests/integration/progs/names_hostile.c): threads
# named "x;y", "a\nb", "<script>", "q\"b\\s", "\xff\xfe;bad", " 1 (p->q",
# "\r\t\e[31m", "u<U+2028><U+009B>", "z"; a function whose ELF symbol name holds
# '(' first, ';', a newline, '<', '"', '\', invalid UTF-8 and "->", and a
# C++ one whose mangled identifier holds such bytes, so that its demangled
# name does too (both written into the binary's .strtab); JIT code named in
# /tmp/perf-PID.map with such names; the program run from "DIR/d;ir sp/nh;p q<x>". The rules are those
# of docs/cli/report.md, "Names in the output"; the checks
# (tests/integration/lib/names_check.py, which writes the rules once more
# on its own) read each output with the parser its users feed it to, or
# with that parser's rules:
#   names_snapshot_*   snapshot -f text|raw|folded|json|speedscope|pprof of
#                      the blocked process: raw/text lines are "TID N COMM"
#                      and "#I 0xPC ..." only, as many frames per thread as
#                      raw; folded: one line per thread, its name ONE frame
#                      (first), 1 + raw's frames; json and speedscope load
#                      with python's json (strict: UTF-8, no raw control
#                      character), speedscope validates against its schema
#                      (when the speedscope npm package is there or can be
#                      installed, as report_viewers.sh does), comm and
#                      function names are the names with U+FFFD per invalid
#                      byte; pprof: every string UTF-8, one location per frame
#   names_*_protoc     protoc --decode with a proto3 schema of the string
#                      table (proto3 parsers refuse a string that is not
#                      UTF-8), and `go tool pprof -raw`, read the profiles
#   names_report_*     record -F 499 -- PROG spin (8 threads spinning in
#                      those functions), then report: text (--no-lines) and
#                      raw lines are the known kinds only, frames per event
#                      equal (text = raw's kernel + user frames); folded: the
#                      first frame is a thread name, frames per stack and
#                      counts those of text; perf-script: every line passes
#                      the Firefox Profiler importer's regular expressions
#                      (no \r, U+2028, U+2029 inside a line, no function
#                      starting with '(' or holding "->"), the pid/tid that
#                      stackcollapse-perf.pl's header regex reads are the
#                      real ones, frames per sample those of text; the
#                      vendored stackcollapse-perf.pl folds it into stacks of
#                      text's depths and counts, without a warning;
#                      speedscope and pprof as for snapshot
#   names_svg_*        flamegraph of the snapshot's folded stacks, of the
#                      trace, and --diff of both: python's XML parser reads
#                      them (XML 1.0), no element, attribute or script other
#                      than those of a flame graph of benign names, every
#                      title's first line "NAME (N samples, P%)" with NAME
#                      one of the folded frames
set -u
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
SPEEDSCOPE_VERSION=1.25.0
cd "$TOP" || exit 1
PY=/usr/bin/python3 # Debian's python: python3-jsonschema lives there
CHECK=$TOP/tests/integration/lib/names_check.py
COLLAPSE=$TOP/tests/vendor/flamegraph/stackcollapse-perf.pl
tmp=$(mktemp -d /tmp/ustack-names-XXXXXX)
pid=
jitmaps=()
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -f "${jitmaps[@]}"
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }

. "$TOP/tests/integration/lib/wait_blocked.sh"

dir="$tmp/d;ir sp"
prog="$dir/nh;p q<x>"
mkdir -p "$dir"
if ! $CC -O2 -fno-omit-frame-pointer -pthread -o "$prog" tests/integration/progs/names_hostile.c; then
	fail names_build "cannot compile tests/integration/progs/names_hostile.c"
	exit 0
fi
if ! out=$($PY "$CHECK" patch "$prog" 2>&1); then
	fail names_build "cannot write the hostile symbol name: $out"
	exit 0
fi
printf '%s' "$prog" >"$tmp/t.prog"

# the speedscope schema (the npm package, as report_viewers.sh installs it)
npm_dir=$TOP/build/npm
schema=$npm_dir/node_modules/speedscope/dist/release/file-format-schema.json
. "$TOP/tests/integration/lib/speedscope_npm.sh"
speedscope_npm "$npm_dir" "$SPEEDSCOPE_VERSION" "$tmp/npm.log"
if [ ! -f "$schema" ] || ! $PY -c 'import jsonschema' 2>/dev/null; then
	echo "# speedscope schema not available: the speedscope files are checked as JSON only"
	schema=
fi

# a benign flame graph: what ustack's SVG holds besides the names
printf 'benign;main;work 3\nbenign;main 1\n' >"$tmp/benign.folded"
"$USTACK" flamegraph --folded "$tmp/benign.folded" -o "$tmp/benign.svg" 2>/dev/null ||
	fail names_svg "flamegraph of benign names failed"

# a proto3 schema of profile.proto's string table, for protoc's UTF-8 check
printf 'syntax = "proto3";\nmessage Profile { repeated string string_table = 6; }\n' >"$tmp/st.proto"
export HOME="$tmp" GOCACHE="$tmp/gocache" GOFLAGS=
pprof_readers() { # NAME FILE.pb.gz
	if command -v protoc >/dev/null; then
		if gzip -dc "$2" >"$2.pb" &&
			protoc -I"$tmp" --decode=Profile st.proto <"$2.pb" >"$2.decoded" 2>"$2.protoc.err" &&
			[ ! -s "$2.protoc.err" ]; then
			pass "$1_protoc ($(grep -c '^string_table' "$2.decoded") strings)"
		else
			fail "$1_protoc" "$(head -n2 "$2.protoc.err" | tr '\n' ' ')"
		fi
	else
		skip "$1_protoc" "protoc not installed (Debian protobuf-compiler)"
	fi
	if command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1; then
		if go tool pprof -raw "$2" >"$2.raw" 2>"$2.go.err" && grep -q '^Samples:' "$2.raw"; then
			pass "$1_go_pprof"
		else
			fail "$1_go_pprof" "$(head -n2 "$2.go.err" | tr '\n' ' ')"
		fi
	else
		skip "$1_go_pprof" "go tool pprof not installed"
	fi
}

# ---- snapshot ------------------------------------------------------------------------------
"$prog" block >"$tmp/block.out" &
pid=$!
jitmaps+=("/tmp/perf-$pid.map")
for _ in $(seq 3000); do grep -q ready "$tmp/block.out" && break; sleep 0.01; done
# 10 threads, all in pause (34), the JIT ones too (their own syscall instruction)
if ! grep -q ready "$tmp/block.out" || ! wait_blocked "$pid" 34 10; then
	fail names_snapshot "target not ready: $(syscalls "$pid" | awk '{ print $1, $2 }' | tr '\n' ' ')"
else
	ok=1
	for f in text raw folded json speedscope pprof; do
		if ! "$USTACK" snapshot -p "$pid" -f $f -o "$tmp/s.$f" 2>"$tmp/s.$f.err" ||
			grep -q 'Sanitizer\|runtime error' "$tmp/s.$f.err"; then
			if grep -qi 'permit' "$tmp/s.$f.err"; then
				skip names_snapshot "$(head -n1 "$tmp/s.$f.err")"
			else
				fail names_snapshot "--format $f: $(head -n2 "$tmp/s.$f.err" | tr '\n' ' ')"
			fi
			ok=0
			break
		fi
	done
	if [ $ok = 1 ]; then
		$PY "$CHECK" snapshot "$tmp" "$pid" "$schema"
		pprof_readers names_snapshot_pprof "$tmp/s.pprof"
		"$USTACK" flamegraph --folded "$tmp/s.folded" -o "$tmp/s.svg" 2>"$tmp/s.svg.err" ||
			fail names_svg_folded "flamegraph exit $?: $(head -n2 "$tmp/s.svg.err")"
		[ -f "$tmp/s.svg" ] && $PY "$CHECK" svg names_svg_folded "$tmp/s.svg" "$tmp/benign.svg" "$tmp/s.folded"
	fi
fi
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=

# ---- record + report -------------------------------------------------------------------------
if ! "$USTACK" record -F 499 -q -o "$tmp/t.data" -- "$prog" spin 1000 >"$tmp/rec.out" 2>"$tmp/rec.err"; then
	if grep -qiE 'permi|access|not supported|perf_event' "$tmp/rec.err"; then
		skip names_report "perf events unavailable: $(head -n1 "$tmp/rec.err")"
	else
		fail names_report "ustack record: $(head -n3 "$tmp/rec.err" | tr '\n' ' ')"
	fi
	exit 0
fi
spid=$(sed -n 's/^pid \([0-9]*\)$/\1/p' "$tmp/rec.out")
[ -n "$spid" ] && jitmaps+=("/tmp/perf-$spid.map")
"$USTACK" report -i "$tmp/t.data" --stats | sed -n 's/^events: \([0-9]*\)$/\1/p' >"$tmp/t.events"
ok=1
for f in text raw folded perf-script speedscope pprof; do
	# --no-lines: machine frames only, the frames every format has
	if ! "$USTACK" report -i "$tmp/t.data" -f $f --no-lines -o "$tmp/t.$f" 2>"$tmp/t.$f.err" ||
		grep -q 'Sanitizer\|runtime error' "$tmp/t.$f.err"; then
		fail names_report "--format $f: $(head -n2 "$tmp/t.$f.err" | tr '\n' ' ')"
		ok=0
	fi
done
[ $ok = 1 ] || exit 0
if command -v perl >/dev/null; then
	perl "$COLLAPSE" --jit "$tmp/t.perf-script" >"$tmp/t.collapsed" 2>"$tmp/collapse.err"
	[ -s "$tmp/collapse.err" ] &&
		fail names_report_stackcollapse "stackcollapse-perf.pl complained: $(head -n2 "$tmp/collapse.err" | tr '\n' ' ')"
else
	skip names_report_stackcollapse "perl missing"
fi
# the period of a cpu-clock sample at 499 Hz (stackcollapse counts periods)
period=$(( (1000000000 + 499 / 2) / 499 ))
$PY "$CHECK" report "$tmp" "$period" "$schema"
pprof_readers names_report_pprof "$tmp/t.pprof"

"$USTACK" flamegraph -i "$tmp/t.data" -o "$tmp/t.svg" 2>"$tmp/t.svg.err" ||
	fail names_svg_trace "flamegraph exit $?: $(head -n2 "$tmp/t.svg.err")"
[ -f "$tmp/t.svg" ] && $PY "$CHECK" svg names_svg_trace "$tmp/t.svg" "$tmp/benign.svg" "$tmp/t.folded"
if [ -f "$tmp/s.folded" ]; then
	"$USTACK" flamegraph --diff "$tmp/s.folded" "$tmp/t.data" -o "$tmp/d.svg" 2>"$tmp/d.svg.err" ||
		fail names_svg_diff "flamegraph --diff exit $?: $(head -n2 "$tmp/d.svg.err")"
	[ -f "$tmp/d.svg" ] &&
		$PY "$CHECK" svg names_svg_diff "$tmp/d.svg" "$tmp/benign.svg" "$tmp/s.folded" "$tmp/t.folded"
fi
exit 0
