#!/usr/bin/env bash
# Every output of `ustack report` (text, raw, folded, stackmap,
# stackmap-bin, pprof, speedscope, perf-script) and `ustack flamegraph`
# on the traces a reader must survive:
#   empty    an event kind and nothing else (tests/integration/progs/pprof_mktrace.c)
#   lost     the same, then only LOST records
#   damaged  a real trace cut in the middle of its second chunk, and the
#            same trace with one byte of its second chunk flipped
# For empty and lost: exit status 0 and a valid (possibly empty) output
# (the JSON parses as JSON, the pprof as gzip); the flame graph, which has
# nothing to draw, may instead fail with one clear line saying so. For damaged: exit status 0 or
# 1, and with 1 a message naming the file and an offset; never a crash (a
# signal, a sanitizer report), never a hang (60 s bound per command).
# `flamegraph --diff` with each of these traces as A and as B (the other a
# good folded file), and as both: status 0 with a valid SVG, or status 1
# with one line naming the file (or saying there are no stacks); never a
# crash.
set -u
T=report_edge
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# libustack.a of the check tree is built with the sanitizers (make check
# passes SAN_FLAGS; run alone, the Makefile's value)
: "${SAN_FLAGS:=-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer}"
if ! $CC ${BASE_CFLAGS:--std=gnu11 -O2 -D_GNU_SOURCE} $SAN_FLAGS -I"$TOP/include" -o "$tmp/mktrace" \
	"$TOP/tests/integration/progs/pprof_mktrace.c" "$TOP/${CHECK_DIR:-build/check}/libustack.a" \
	${LIB_LDLIBS:--lpthread -ldl -lbpf -ldw -lelf} 2>"$tmp/cc.err"; then
	echo "FAIL $T: cannot build pprof_mktrace: $(head -2 "$tmp/cc.err")"
	exit 1
fi
"$tmp/mktrace" empty "$tmp/empty.data" && "$tmp/mktrace" lost "$tmp/lost.data" || {
	echo "FAIL $T: pprof_mktrace failed"; exit 1; }

# a real trace of several chunks: a second of getppid calls (a chunk a second)
have_real=0
if "$USTACK" record -q -o "$tmp/real.data" -e syscalls:sys_enter_getppid -- \
	python3 -c 'import os, time
t = time.time()
while time.time() - t < 2.5: os.getppid(); time.sleep(0.0005)' >/dev/null 2>"$tmp/rec.err"; then
	size=$(stat -c %s "$tmp/real.data")
	head -c $((size * 2 / 3)) "$tmp/real.data" >"$tmp/cut.data"
	cp "$tmp/real.data" "$tmp/flip.data"
	off=$((size / 2))
	printf '\xa5' | dd of="$tmp/flip.data" bs=1 seek=$off conv=notrunc 2>/dev/null
	have_real=1
else
	echo "SKIP ${T}_damaged: cannot record here: $(head -1 "$tmp/rec.err")"
fi

valid() { # FORMAT FILE
	case $1 in
	speedscope) python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$2" ;;
	svg) python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$2" ;;
	pprof) python3 -c 'import gzip,sys; gzip.open(sys.argv[1]).read()' "$2" ;;
	*) true ;;
	esac
}

run() { # CASE FORMAT: runs, fills $st $out $err
	local c=$1 f=$2
	out=$tmp/$c.$f.out
	err=$tmp/$c.$f.err
	case $f in
	svg) timeout 60 "$USTACK" flamegraph -i "$tmp/$c.data" -o "$out" >/dev/null 2>"$err" ;;
	pprof | speedscope | stackmap-bin) timeout 60 "$USTACK" report -i "$tmp/$c.data" --format $f -o "$out" >/dev/null 2>"$err" ;;
	*) timeout 60 "$USTACK" report -i "$tmp/$c.data" --format $f >"$out" 2>"$err" ;;
	esac
	st=$?
}

cases="empty lost"
[ $have_real = 1 ] && cases="$cases cut flip"
for c in $cases; do
	bad=""
	for f in text raw folded stackmap stackmap-bin pprof speedscope perf-script svg; do
		run $c $f
		if [ $st -ge 124 ] || grep -q -e 'Sanitizer' -e 'runtime error' "$err"; then
			bad="$bad $f: crashed or hung (status $st: $(grep -m1 -e ERROR -e 'runtime error' "$err"))"
			continue
		fi
		case $c in
		empty | lost)
			if [ $f = svg ] && [ $st -eq 1 ] && grep -q 'no stacks' "$err"; then
				: # a clear error: nothing to draw
			elif [ $st -ne 0 ]; then
				bad="$bad $f: status $st ($(head -1 "$err"))"
			elif [ -s "$out" ] && ! valid $f "$out" 2>/dev/null; then
				bad="$bad $f: output does not parse"
			fi
			;;
		*)
			if [ $st -gt 1 ]; then
				bad="$bad $f: status $st ($(head -1 "$err"))"
			elif [ $st -eq 1 ] && ! grep -q "$c.data.*offset\|offset.*$c.data\|$c.data: " "$err"; then
				bad="$bad $f: error names neither the file nor an offset: $(head -1 "$err")"
			fi
			;;
		esac
	done
	if [ -z "$bad" ]; then
		echo "PASS ${T}_$c: all 8 report formats and the flame graph"
	else
		echo "FAIL ${T}_$c:$bad"
		fails=$((fails + 1))
	fi
done

# ---- flamegraph --diff on the same traces ----------------------------------------
printf 'prog;main;work 30\nprog;main;idle 10\n' >"$tmp/good.folded"
for c in $cases; do
	bad=""
	for pair in "good.folded $c.data" "$c.data good.folded" "$c.data $c.data"; do
		set -- $pair
		out=$tmp/diff.$c.svg err=$tmp/diff.$c.err
		rm -f "$out"
		timeout 60 "$USTACK" flamegraph --diff "$tmp/$1" "$tmp/$2" -o "$out" >/dev/null 2>"$err"
		st=$?
		what="--diff $1 $2"
		if [ $st -ge 124 ] || grep -q -e 'Sanitizer' -e 'runtime error' "$err"; then
			bad="$bad $what: crashed or hung (status $st: $(grep -m1 -e ERROR -e 'runtime error' "$err"))"
		elif [ $st -eq 0 ]; then
			python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$out" 2>/dev/null ||
				bad="$bad $what: status 0 but the SVG does not parse"
		elif [ $st -ne 1 ]; then
			bad="$bad $what: status $st ($(head -1 "$err"))"
		elif [ "$(wc -l <"$err")" -ne 1 ] || ! grep -q -e "$c.data" -e 'no stacks' "$err"; then
			bad="$bad $what: not one line naming $c.data: $(tr '\n' '|' <"$err")"
		fi
	done
	if [ -z "$bad" ]; then
		echo "PASS ${T}_diff_$c: flamegraph --diff with it as A, as B and as both"
	else
		echo "FAIL ${T}_diff_$c:$bad"
		fails=$((fails + 1))
	fi
done
# the trace as a lone argument, as with -i; two traces refused
if [ -s "$tmp/real.data" ]; then
	"$USTACK" report -i "$tmp/real.data" >"$tmp/pos.i" 2>/dev/null
	"$USTACK" report "$tmp/real.data" >"$tmp/pos.arg" 2>/dev/null
	"$USTACK" report "$tmp/real.data" "$tmp/empty.data" >/dev/null 2>"$tmp/pos.two"
	st=$?
	if [ -s "$tmp/pos.i" ] && cmp -s "$tmp/pos.i" "$tmp/pos.arg" && [ $st -eq 2 ] &&
	   grep -q 'one trace at a time' "$tmp/pos.two"; then
		echo "PASS ${T}_positional: 'ustack report FILE' is 'ustack report -i FILE'; two files: status 2, $(head -1 "$tmp/pos.two" | sed "s|$tmp|TMP|g")"
	else
		echo "FAIL ${T}_positional: same output $(cmp -s "$tmp/pos.i" "$tmp/pos.arg" && echo yes || echo no), two files: status $st $(head -1 "$tmp/pos.two")"
	fi
else
	echo "SKIP ${T}_positional: no recorded trace (ustack record failed above)"
fi

# progress: forced with --progress (its last line: 100% and the events
# --stats counts; less on the damaged trace), none by default when stderr
# is not a terminal, none with -q
if [ -s "$tmp/real.data" ] && [ -s "$tmp/flip.data" ]; then
	ev=$("$USTACK" report -i "$tmp/real.data" --stats 2>/dev/null | awk '$1 == "events:" { print $2 }')
	"$USTACK" report --progress -i "$tmp/real.data" -o "$tmp/pg.out" 2>"$tmp/pg.err"
	"$USTACK" report --progress -i "$tmp/flip.data" -o "$tmp/pg2.out" 2>"$tmp/pg2.err"
	"$USTACK" report -i "$tmp/real.data" -o "$tmp/pg3.out" 2>"$tmp/pg3.err"
	"$USTACK" report -q --progress -i "$tmp/real.data" -o "$tmp/pg4.out" 2>"$tmp/pg4.err"
	last=$(tr '\r' '\n' <"$tmp/pg.err" | grep 'ustack: report:' | tail -1)
	last2=$(tr '\r' '\n' <"$tmp/pg2.err" | grep 'ustack: report:' | tail -1)
	pct2=$(echo "$last2" | sed -n 's/.*report: *\([0-9]*\)%.*/\1/p')
	if echo "$last" | grep -q "100% of .* MB read, $ev events\$" && [ -n "$pct2" ] && [ "$pct2" -lt 100 ] &&
	   [ ! -s "$tmp/pg3.err" ] && ! grep -q 'ustack: report:' "$tmp/pg4.err"; then
		echo "PASS ${T}_progress: '$last'; damaged: '$last2'; none without a terminal or with -q"
	else
		echo "FAIL ${T}_progress: '$last' (want 100% and $ev events), damaged '$last2', default '$(head -c 200 "$tmp/pg3.err")', -q '$(head -c 200 "$tmp/pg4.err")'"
	fi
else
	echo "SKIP ${T}_progress: no recorded trace (ustack record failed above)"
fi
exit 0
