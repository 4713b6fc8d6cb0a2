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
