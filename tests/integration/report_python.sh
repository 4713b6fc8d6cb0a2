#!/usr/bin/env bash
# Python frames (trace format 1.5) in every output of `ustack report` and in
# `ustack flamegraph`, on a synthetic trace written with the public trace
# writer (tests/integration/progs/py_mktrace.c: its header comment lists the
# stacks). Needs no root, no Python: the frames are what the writer put.
#
# Lines (PASS/FAIL/SKIP report_python/...):
#   text          the Python frames of every event, exactly, in order, with
#                 "py  QUALNAME (FILE:LINE)"; the -X perf trampolines
#                 ("py::" JIT symbols) gone where Python frames are, the
#                 other JIT symbol kept; an unknown function said so
#   folded        every folded line exactly ("py::QUALNAME (BASE:LINE)")
#   python_only   --python-only: Python frames alone where a stack has
#                 them, the stack without any as it is
#   stats         --stats: functions, frames, stacks
#   speedscope    the JSON parses; the Python frames with file and line
#   perf_script   Python frames are frame lines perf's format allows
#   pprof         functions with file and start line, a location per line,
#                 no mapping (go tool pprof when installed, else the repo's
#                 decoder tests/integration/lib/pprof_decode.py)
#   flamegraph    Python frames painted in a colour of their own
set -u
export LC_ALL=C
T=report_python
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
tmp=$(mktemp -d /tmp/ustack-pyrep-XXXXXX)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
: "${SAN_FLAGS:=-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer}"
if ! $CC ${BASE_CFLAGS:--std=gnu11 -O2 -D_GNU_SOURCE} $SAN_FLAGS -I"$TOP/include" -o "$tmp/mk" \
	"$TOP/tests/integration/progs/py_mktrace.c" "$TOP/${CHECK_DIR:-build/check}/libustack.a" \
	${LIB_LDLIBS:--lpthread -ldl -lbpf -ldw -lelf} 2>"$tmp/cc.err"; then
	echo "FAIL $T: cannot build py_mktrace: $(head -2 "$tmp/cc.err")"
	exit 1
fi
"$tmp/mk" "$tmp/p.data" || { echo "FAIL $T: the trace writer failed"; exit 1; }

same() {
	if [ "$2" = "$3" ]; then
		echo "PASS $T/$1"
	else
		echo "FAIL $T/$1: want:"; printf '%s\n' "$2" | sed 's/^/    | /'
		echo "    got:"; printf '%s\n' "$3" | sed 's/^/    | /'
	fi
}
r() { "$USTACK" report "$@" "$tmp/p.data" 2>"$tmp/err"; }

# text: per event, its frames that are not the unnamed native ones
S0=' => py  helper (/srv/app/walk.py:33)
 => py  Walker.step (/srv/app/walk.py:12)
 => py  <module> (/srv/app/main.py:5)'
S1=' => JS:other+0x10 ([jit] /tmp/perf-50.map)'
S2=' => py  ?? (function 9)
 => py  Walker.step (/srv/app/walk.py)'
same text "$S0
--
$S0
--
$S1
--
$S0
--
$S1
--
$S2" "$(r | grep -v '^ => ?? (/nonexistent' | sed 's/^python3-50 .*/--/' | grep -v '^$' | sed 1d)"
# the native frames stay where they were: 9 - 2 trampolines = 7 lines
same text_native "7 3 4" "$(r | awk '/^python3-50/{if(n)printf "%d ",n; n=0; next} /^ =>/{n++} END{print n}' | awk '{print $1, $3, $6}')"

same folded "python3;[python3.11];JS:other_[j];[python3.11] 2
python3;[python3.11];[python3.11];py::Walker.step (walk.py);py::?? 1
python3;[python3.11];py::<module> (main.py:5);[python3.11];py::Walker.step (walk.py:12);[python3.11];py::helper (walk.py:33);[python3.11] 3" \
	"$(r -f folded | sort)"

same python_only "python3;[python3.11];JS:other_[j];[python3.11] 2
python3;py::<module> (main.py:5);py::Walker.step (walk.py:12);py::helper (walk.py:33) 3
python3;py::Walker.step (walk.py);py::?? 1" "$(r -f folded --python-only | sort)"
same python_only_text "$S0" "$(r --python-only | sed -n '2,4p')"

same stats "python functions: 3
python frames: 5 in 2 distinct user stacks (2 of a function not defined before its stack)
user stacks with python frames: 4" "$(r --stats | grep -i '^python\|python frames:')"

chk() { python3 "$TOP/tests/integration/lib/report_python_check.py" "$@"; }
P0='helper /srv/app/walk.py:33; Walker.step /srv/app/walk.py:12; <module> /srv/app/main.py:5'
P2='?? [python]:0; Walker.step /srv/app/walk.py:0'
if r -f speedscope -o "$tmp/s.json"; then
	same speedscope "

$P2
$P0
$P0
$P0" "$(chk speedscope "$tmp/s.json" 2>&1)"
else
	echo "FAIL $T/speedscope: $(head -1 "$tmp/err")"
fi

# perf script: "\tADDR py::NAME (FILE)" lines, the trampolines gone
same perf_script "	               0 py::helper (/srv/app/walk.py)
	               0 py::Walker.step (/srv/app/walk.py)
	               0 py::<module> (/srv/app/main.py)
--
	               0 py::?? ([python])
	               0 py::Walker.step (/srv/app/walk.py)" \
	"$(r -f perf-script | awk '/^python3/{n++} n==1||n==6' | grep 'py::' | sed '3a --')"
# the JIT names of the trampolines ("py::NAME:FILE") nowhere, JS:other kept
same xperf_dedup "0 2 1 2" "$(for f in text folded perf-script; do r -f $f; done | grep -c 'py::[^ ]*:/srv') $(for f in text folded perf-script; do r -f $f | grep -c 'JS:other'; done | tr '\n' ' ' | sed 's/ $//')"

# pprof: Python functions with file and start line, one line per location,
# no mapping and no address (BAD otherwise)
if r -f pprof -o "$tmp/p.pb.gz"; then
	same pprof "1: ?? [python]:0 s=0; Walker.step /srv/app/walk.py:0 s=10
2: 
3: helper /srv/app/walk.py:33 s=30; Walker.step /srv/app/walk.py:12 s=10; <module> /srv/app/main.py:5 s=1" \
		"$(chk pprof "$tmp/p.pb.gz" 2>&1)"
	if command -v go >/dev/null && timeout 120 go tool pprof -raw "$tmp/p.pb.gz" >"$tmp/raw" 2>/dev/null; then
		same pprof_go "0x0 helper /srv/app/walk.py:33 s=30(py::helper)" "$(grep -o '0x0 helper .*' "$tmp/raw")"
	else
		echo "SKIP $T/pprof_go: go tool pprof not installed (the repo's decoder checked the profile)"
	fi
else
	echo "FAIL $T/pprof: $(head -1 "$tmp/err")"
fi

# flame graph: every py:: box blue (FlameGraph's blue: b >= 190, r < 140),
# no other box so; boxes per function, the line in the tooltip
if "$USTACK" flamegraph -i "$tmp/p.data" -o "$tmp/f.svg" 2>"$tmp/err"; then
	same flamegraph "py::<module> blue
py::?? blue
py::Walker.step blue
py::helper blue
JS:other_[j] warm
[python3.11] warm
all warm
python3 warm" "$(python3 - "$tmp/f.svg" <<'PY'
import re, sys
seen = {}
for g in re.findall(r'<g class="f"[^>]*><title>(.*?)</title><rect[^>]*fill="rgb\((\d+),(\d+),(\d+)\)', open(sys.argv[1]).read(), re.S):
    name = g[0].split(" (")[0].replace("&lt;", "<").replace("&gt;", ">")
    r, gr, b = map(int, g[1:])
    seen.setdefault(name, set()).add("blue" if b >= 190 and r < 140 else "warm")
for n in sorted(seen, key=lambda n: (0 if n.startswith("py::") else 1, n)):
    print(n, "/".join(sorted(seen[n])))
PY
)"
	same flamegraph_lines "at walk.py:33" "$(grep -A1 '<title>py::helper (' "$tmp/f.svg" | grep -o 'at walk.py:[0-9]*')"
else
	echo "FAIL $T/flamegraph: $(head -1 "$tmp/err")"
fi

# --python-only where no frame is named: refused, status 2, one line
"$USTACK" report -f raw --python-only "$tmp/p.data" >/dev/null 2>"$tmp/err"; st=$?
same python_only_refused "2 ustack: report: --python-only is for the formats that name frames (text, folded, speedscope, perf-script, pprof), not raw" "$st $(cat "$tmp/err")"

# flamegraph --python-only: the native boxes left are those of the stack
# without Python frames (two [python3.11] boxes), the Python boxes all there
if "$USTACK" flamegraph --python-only -i "$tmp/p.data" -o "$tmp/fp.svg" 2>"$tmp/err"; then
	same flamegraph_python_only "2 5" "$(grep -c '<title>\[python3.11\] (' "$tmp/fp.svg") $(grep -c '<title>py::' "$tmp/fp.svg")"
else
	echo "FAIL $T/flamegraph_python_only: $(head -1 "$tmp/err")"
fi
