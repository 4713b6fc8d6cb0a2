#!/usr/bin/env bash
# ustack flamegraph: from a folded file with known counts (exact titles and
# widths checked with python's XML parser), and from a recorded trace (the
# root holds every event of 'report --stats'); the embedded script parses
# (node --check); errors.
set -u
: "${USTACK:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'main;a;b 3\nmain;a;c 1\nmain;d 4\nbad line\n' > "$tmp/in.folded"
if "$USTACK" flamegraph --folded "$tmp/in.folded" -o "$tmp/f.svg" 2>"$tmp/err" &&
   grep -q "1 malformed folded lines skipped" "$tmp/err" &&
   python3 - "$tmp/f.svg" <<'PY'
import sys, xml.dom.minidom as m
d = m.parse(sys.argv[1])
fr = {}
for g in d.getElementsByTagName("g"):
    t = g.getElementsByTagName("title")[0].firstChild.data
    r = g.getElementsByTagName("rect")[0]
    fr[t.split(" (")[0]] = (t, float(r.getAttribute("width")), float(r.getAttribute("x")))
want = {"all": "all (8 samples, 100.00%)", "main": "main (8 samples, 100.00%)",
        "a": "a (4 samples, 50.00%)", "b": "b (3 samples, 37.50%)",
        "c": "c (1 samples, 12.50%)", "d": "d (4 samples, 50.00%)"}
for k, v in want.items():
    assert fr[k][0] == v, (k, fr[k][0], v)
# widths proportional to counts, children laid side by side inside the parent
assert abs(fr["b"][1] / fr["all"][1] - 3 / 8) < 1e-3
assert abs(fr["c"][2] - (fr["b"][2] + fr["b"][1])) < 1e-2
assert abs(fr["a"][1] + fr["d"][1] - fr["main"][1]) < 1e-2
PY
then echo "PASS flamegraph_folded: titles, counts, percentages and widths exact"
else echo "FAIL flamegraph_folded: $(cat "$tmp/err")"; fi

if command -v node >/dev/null; then
	sed -n '/<!\[CDATA\[/,/\]\]>/p' "$tmp/f.svg" | sed '1d;$d' > "$tmp/f.js"
	if node --check "$tmp/f.js" 2>"$tmp/nerr"; then echo "PASS flamegraph_script: the embedded script parses (node --check)"
	else echo "FAIL flamegraph_script: $(cat "$tmp/nerr")"; fi
else
	echo "SKIP flamegraph_script: node not installed"
fi

# 2000 Hz, or less where the kernel lowered perf_event_max_sample_rate (it
# does on machines where sampling interrupts take long)
freq=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo 2000)
[ "$freq" -gt 2000 ] && freq=2000
if "$USTACK" record -q -o "$tmp/t.data" -e cpu-clock -F "$freq" -- sh -c 'i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done' 2>"$tmp/rerr"; then
	events=$("$USTACK" report -i "$tmp/t.data" --stats | awk '$1=="events:"{print $2}')
	"$USTACK" flamegraph -i "$tmp/t.data" -o "$tmp/t.svg" 2>/dev/null
	root=$(grep -o '<title>all ([0-9]* samples' "$tmp/t.svg" | grep -o '[0-9]*')
	if [ -n "$events" ] && [ "$events" -gt 0 ] && [ "$root" = "$events" ] && grep -q '<title>sh (' "$tmp/t.svg"; then
		echo "PASS flamegraph_trace: root holds all $events events, the comm frame is there"
	else
		echo "FAIL flamegraph_trace: root '$root', events '$events'"
	fi
	# the input alone: a trace by its magic, else folded stacks
	"$USTACK" flamegraph "$tmp/t.data" -o "$tmp/t2.svg" 2>/dev/null
	"$USTACK" flamegraph "$tmp/in.folded" -o "$tmp/f2.svg" 2>/dev/null
	"$USTACK" flamegraph --folded "$tmp/in.folded" -o "$tmp/f1.svg" 2>/dev/null
	"$USTACK" flamegraph -i "$tmp/t.data" "$tmp/in.folded" -o "$tmp/x.svg" 2>/dev/null; two=$?
	if cmp -s "$tmp/t.svg" "$tmp/t2.svg" && cmp -s "$tmp/f1.svg" "$tmp/f2.svg" && [ $two -eq 2 ]; then
		echo "PASS flamegraph_positional: FILE alone is -i for a trace, --folded for folded stacks; two inputs: status 2"
	else
		echo "FAIL flamegraph_positional: trace same $(cmp -s "$tmp/t.svg" "$tmp/t2.svg" && echo yes || echo no), folded same $(cmp -s "$tmp/f1.svg" "$tmp/f2.svg" && echo yes || echo no), two inputs: status $two"
	fi
else
	echo "SKIP flamegraph_trace: cannot record here: $(head -1 "$tmp/rerr")"
fi

"$USTACK" flamegraph -i "$tmp/none.data" -o "$tmp/x.svg" 2>"$tmp/e1"; r1=$?
: > "$tmp/empty"; "$USTACK" flamegraph --folded "$tmp/empty" -o "$tmp/x.svg" 2>"$tmp/e2"; r2=$?
if [ $r1 -ne 0 ] && grep -q "none.data" "$tmp/e1" && [ $r2 -eq 1 ] && grep -q "no stacks" "$tmp/e2"; then
	echo "PASS flamegraph_errors: missing trace, empty input"
else echo "FAIL flamegraph_errors: $r1 $r2: $(cat "$tmp/e1" "$tmp/e2")"; fi

# source lines and inlined frames in folded input (report --srcline
# --annotate, perf's srcline): one box per function, the lines in its
# tooltip with their samples (most first, ties in first-seen order), "_[i]"
# frames marked inlined; a name with spaces but no NAME:DIGITS word stays
printf 'main m.c:5;f x.c:10_[i] 3\nmain m.c:6;f x.c:11_[i] 1\nmain m.c:6;f 2\nmain;op new(a, b) 1\n' > "$tmp/l.folded"
if "$USTACK" flamegraph --folded "$tmp/l.folded" -o "$tmp/l.svg" 2>"$tmp/lerr" &&
   python3 - "$tmp/l.svg" <<'PY'
import sys, xml.dom.minidom as m
t = sorted(x.firstChild.data for x in m.parse(sys.argv[1]).getElementsByTagName("title"))
want = sorted(["all (7 samples, 100.00%)",
    "main (7 samples, 100.00%)\nat m.c:5 (3 samples)\nat m.c:6 (3 samples)",
    "f (4 samples, 57.14%)\ninlined\nat x.c:10 (3 samples)\nat x.c:11 (1 samples)",
    "f (2 samples, 28.57%)", "op new(a, b) (1 samples, 14.29%)"])
assert t == want, t
PY
then echo "PASS flamegraph_srcline_folded: srcline frames merge per function, lines and counts in the tooltip, _[i] frames inlined"
else echo "FAIL flamegraph_srcline_folded: $(cat "$tmp/lerr")"; fi

# from a trace of a program built -O2 -g with inline chains
# (progs/sym_inline.c): tooltips carry sym_inline.c:LINE, and --inline adds
# the always_inline functions as boxes of their own, marked inlined, with
# their lines (the lines themselves are checked against eu-addr2line in
# symbolize_lines.sh); without --inline they are absent
: "${TOP:=$PWD}"
if ! cc -O2 -g "$TOP/tests/integration/progs/sym_inline.c" -o "$tmp/inl" 2>"$tmp/cerr"; then
	echo "FAIL flamegraph_lines: cannot build sym_inline.c: $(head -1 "$tmp/cerr")"
elif "$USTACK" record -q -o "$tmp/i.data" -e cpu-clock -F "$freq" -- "$tmp/inl" 30000000 >/dev/null 2>"$tmp/rerr"; then
	"$USTACK" flamegraph -i "$tmp/i.data" -o "$tmp/i.svg" 2>/dev/null
	"$USTACK" flamegraph -i "$tmp/i.data" --inline -o "$tmp/ii.svg" 2>/dev/null
	"$USTACK" flamegraph -i "$tmp/i.data" --no-lines -o "$tmp/in.svg" 2>/dev/null
	if python3 - "$tmp/i.svg" "$tmp/ii.svg" "$tmp/in.svg" 2>"$tmp/py.err" <<'PY'
import sys, re, xml.dom.minidom as m
def titles(p):
    return [x.firstChild.data for x in m.parse(p).getElementsByTagName("title")]
plain, inl, nol = map(titles, sys.argv[1:4])
name = lambda t: t.split(" (")[0]
# outer is a real function: its tooltip names its source lines in both
assert any(name(t) == "outer" and re.search(r"\nat sym_inline\.c:\d+", t) for t in plain), plain
assert not any("inlined" in t for t in plain), "inlined frames without --inline"
inl_fr = [t for t in inl if "\ninlined" in t]
assert {name(t) for t in inl_fr} >= {"middle", "leaf"}, inl_fr
assert all(re.search(r"\nat sym_inline\.c:\d+", t) for t in inl_fr if name(t) in ("middle", "leaf", "plain_inline"))
assert not any("\nat " in t for t in nol), "--no-lines still shows lines"
PY
	then echo "PASS flamegraph_lines: tooltips show sym_inline.c:LINE; --inline adds middle/leaf boxes marked inlined; --no-lines none"
	else echo "FAIL flamegraph_lines: $(grep -v '^ ' "$tmp/py.err" | tail -1 | cut -c1-400)"; fi
else
	echo "SKIP flamegraph_lines: cannot record here: $(head -1 "$tmp/rerr")"
fi

# a folded line of 200000 frames (hostile or broken input): the drawing
# recurses per frame, so stacks are cut at 4096 frames with a warning
# instead of overflowing the C stack
python3 -c "print(';'.join('f%d' % (i % 7) for i in range(200000)) + ' 5')" > "$tmp/deep.folded"
if "$USTACK" flamegraph --folded "$tmp/deep.folded" -o "$tmp/deep.svg" 2>"$tmp/derr" &&
   grep -q "1 stacks deeper than 4096 frames" "$tmp/derr" &&
   [ "$(grep -c '<g class="f"' "$tmp/deep.svg")" -eq 4097 ]; then
	echo "PASS flamegraph_deep: a 200000-frame stack is cut at 4096 frames with a warning"
else
	echo "FAIL flamegraph_deep: $(tail -n2 "$tmp/derr")"
fi
