#!/usr/bin/env bash
# ustack flamegraph in a real browser (headless Chromium over the DevTools
# protocol, tests/integration/lib/flamegraph_view.py): the SVG of a recorded
# program with a known call tree (progs/fg_tree.c) and of a folded file load
# without console errors; a mouse click zooms (the frame spans the width,
# callers faded, everything else hidden), Reset restores every width, a
# search typed into the SVG's prompt highlights exactly the frames of the
# folded input that match and shows their share, tooltips carry name,
# samples, share and file:line, labels never overflow their boxes (measured
# with getComputedTextLength). Screenshot: build/flamegraph.png.
# Then --diff: widths and colors of two folded files with known counts
# (python's XML parser), a trace against its own folded stacks (all
# unchanged), and the diff SVG in the browser. Names with invalid UTF-8
# still give a well-formed SVG. The demo's graph (build/demo.svg, and one
# made here the way scripts/demo.sh makes it) gets the same zoom, search
# and reset checks.
set -u
: "${USTACK:?}"
: "${TOP:=$PWD}"
PY=/usr/bin/python3 # Debian's python: python3-websocket lives there
VIEW="$TOP/tests/integration/lib/flamegraph_view.py"
tmp=$(mktemp -d)
. "$TOP/tests/integration/lib/browser.sh"
trap 'browser_stop; rm -rf "$tmp"' EXIT

browser_why=""
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
	browser_why="chromium missing (scripts/deps.sh)"
elif ! $PY -c 'import websocket' 2>/dev/null; then
	browser_why="python3-websocket missing for $PY (scripts/deps.sh)"
else
	# one browser for the six views, each a tab of it
	browser_start "$PY" "$tmp"
fi

# view MODE NAME ARGS...: the checker's PASS/FAIL lines, or SKIP NAME
view() {
	local name=$2
	if [ -n "$browser_why" ]; then
		echo "SKIP $name: $browser_why"
		return
	fi
	timeout 120 $PY "$VIEW" "$@" >"$tmp/view.out" 2>&1
	local rc=$?
	if [ $rc -eq 77 ]; then
		echo "SKIP $name: $(sed 's/^missing: //' "$tmp/view.out" | head -n1)"
	else
		cat "$tmp/view.out"
		if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$tmp/view.out"; then
			echo "FAIL $name: checker exited $rc"
		fi
	fi
}

# ---- a folded file: deterministic, 'func file.c:LINE' frames, a long name of
# wide glyphs in a narrow box
long=$(printf 'W%.0s' $(seq 1 90))
{
	echo "prog;main m.c:5;run r.c:10;alpha a.c:3;leaf_work l.c:7 600"
	echo "prog;main m.c:5;run r.c:11;beta b.c:4;leaf_work l.c:8 300"
	echo "prog;main m.c:5;run r.c:12;$long w.c:1 100"
	echo "prog;main m.c:6;tiny t.c:1 1"
} > "$tmp/in.folded"
sed -E 's/ [a-z]+\.c:[0-9]+//g' "$tmp/in.folded" > "$tmp/plain.folded" # the oracle's names
if "$USTACK" flamegraph --folded "$tmp/in.folded" -o "$tmp/f.svg" 2>"$tmp/err"; then
	view full flamegraph_browser_folded "$tmp/f.svg" "$tmp/plain.folded" \
		"prog;main;run;alpha" "leaf_work|beta" "$tmp/f.png" a.c
else
	echo "FAIL flamegraph_browser_folded: $(cat "$tmp/err")"
fi

# ---- a recorded trace of progs/fg_tree.c (-O2 -g, no frame pointers)
freq=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo 1000)
[ "$freq" -gt 1000 ] && freq=1000
have_trace=0
if ! cc -O2 -g -fno-optimize-sibling-calls "$TOP/tests/integration/progs/fg_tree.c" \
	-o "$tmp/fg_tree" 2>"$tmp/cerr"; then
	echo "FAIL flamegraph_browser_trace: cannot build fg_tree.c: $(head -n1 "$tmp/cerr")"
elif ! "$USTACK" record -q -o "$tmp/t.data" -e cpu-clock -F "$freq" -- "$tmp/fg_tree" 400 2>"$tmp/rerr"; then
	echo "SKIP flamegraph_browser_trace: cannot record here: $(head -n1 "$tmp/rerr")"
else
	have_trace=1
	"$USTACK" report -i "$tmp/t.data" --format folded -o "$tmp/t.folded" 2>/dev/null
	"$USTACK" flamegraph -i "$tmp/t.data" -o "$tmp/t.svg" 2>"$tmp/err"
	zoom=$(grep -o '^.*;run;alpha;leaf_work ' "$tmp/t.folded" | head -n1 | sed 's/;leaf_work $//')
	if [ -z "$zoom" ] || [ ! -s "$tmp/t.svg" ]; then
		echo "FAIL flamegraph_browser_trace: no run;alpha;leaf_work stack in the trace: $(head -c 300 "$tmp/t.folded") $(cat "$tmp/err")"
	else
		mkdir -p "$TOP/build"
		view full flamegraph_browser_trace "$tmp/t.svg" "$tmp/t.folded" "$zoom" \
			"^leaf_work$" "$TOP/build/flamegraph.png" fg_tree.c
	fi
fi
[ $have_trace -eq 0 ] && [ -s "$tmp/f.png" ] && mkdir -p "$TOP/build" && cp "$tmp/f.png" "$TOP/build/flamegraph.png"

# ---- the demo's flame graph: what `make demo` writes to build/demo.svg
# (scripts/demo.sh), made here the same way (make check does not run the
# demo): examples/futex_demo.c built -O2 -fomit-frame-pointer, recorded with
# -e syscalls:sys_enter_futex -e cpu-clock, drawn by flamegraph -i. Zoom
# into the hottest stack's spin(), search the pthread_mutex_ frames, reset.
# (demo_graph NAME SVG FOLDED)
demo_graph() {
	local zoom
	zoom=$(awk '/;spin / { print $NF "\t" $0 }' "$3" | sort -rn | head -n1 | cut -f2- |
		grep -o '^.*;spin ' | sed 's/ $//')
	if [ -z "$zoom" ]; then
		echo "FAIL $1: no stack through spin in $3: $(head -c 300 "$3")"
		return
	fi
	view full "$1" "$2" "$3" "$zoom" "^pthread_mutex_" "$tmp/$1.png"
}
if ! cc -O2 -fomit-frame-pointer -o "$tmp/futex_demo" "$TOP/examples/futex_demo.c" -lpthread 2>"$tmp/cerr"; then
	echo "FAIL flamegraph_browser_demo: cannot build examples/futex_demo.c: $(head -n1 "$tmp/cerr")"
elif ! "$USTACK" record -q -o "$tmp/demo.data" -e syscalls:sys_enter_futex -e cpu-clock -- \
	"$tmp/futex_demo" >/dev/null 2>"$tmp/rerr"; then
	echo "SKIP flamegraph_browser_demo: cannot record here: $(head -n1 "$tmp/rerr")"
else
	"$USTACK" report -i "$tmp/demo.data" --format folded -o "$tmp/demo.folded" 2>/dev/null
	if "$USTACK" flamegraph -i "$tmp/demo.data" -o "$tmp/demo.svg" 2>"$tmp/err"; then
		demo_graph flamegraph_browser_demo "$tmp/demo.svg" "$tmp/demo.folded"
	else
		echo "FAIL flamegraph_browser_demo: flamegraph -i: $(head -n1 "$tmp/err")"
	fi
fi
# and build/demo.svg itself when `make demo` made it (with build/demo.folded
# of the same run as the oracle)
if [ -s "$TOP/build/demo.svg" ] && [ -s "$TOP/build/demo.folded" ]; then
	demo_graph flamegraph_browser_demo_built "$TOP/build/demo.svg" "$TOP/build/demo.folded"
else
	echo "SKIP flamegraph_browser_demo_built: no build/demo.svg (make demo writes it)"
fi

# ---- invalid UTF-8 in names (a damaged binary, Latin-1 folded text), and a
# multi-byte name cut in its label: still well-formed XML, loads
printf 'prog;caf\xe9;x\xff\xfey 5\nprog;%s 1\nprog;ok 20\n' "$(printf '\xc3\xa9%.0s' $(seq 1 60))" > "$tmp/u.folded"
"$USTACK" flamegraph --folded "$tmp/u.folded" -o "$tmp/u.svg" 2>/dev/null
if python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$tmp/u.svg" 2>"$tmp/xerr" &&
   grep -q "caf$(printf '\xef\xbf\xbd')" "$tmp/u.svg"; then
	echo "PASS flamegraph_utf8: invalid bytes become U+FFFD, cut labels keep whole characters (XML well-formed)"
else
	echo "FAIL flamegraph_utf8: $(tail -n1 "$tmp/xerr")"
fi
view load flamegraph_browser_utf8 "$tmp/u.svg"

# ---- --diff: known counts. A 100 samples, B 200 (A scaled by 2):
# self deltas grow +60, shrink -60, same +10, dip -10, new +40 (max 60);
# gone (A only) is not drawn. Raw (--no-normalize): +70 -20 +30 0 +40.
printf 'main;grow 10\nmain;shrink 40\nmain;same 20\nmain;dip 10\nmain;gone 20\n' > "$tmp/a.folded"
printf 'main;grow 80\nmain;shrink 20\nmain;same 50\nmain;dip 10\nmain;new 40\n' > "$tmp/b.folded"
if "$USTACK" flamegraph --diff "$tmp/a.folded" "$tmp/b.folded" -o "$tmp/d.svg" 2>"$tmp/err" &&
   "$USTACK" flamegraph --diff --no-normalize "$tmp/a.folded" "$tmp/b.folded" -o "$tmp/dn.svg" 2>>"$tmp/err" &&
   python3 - "$tmp/d.svg" "$tmp/dn.svg" <<'PY'
import sys, re, xml.dom.minidom as m
def boxes(p):
    out = {}
    for g in m.parse(p).getElementsByTagName("g"):
        t = g.getElementsByTagName("title")[0].firstChild.data
        r = g.getElementsByTagName("rect")[0]
        rgb = tuple(int(v) for v in re.findall(r"\d+", r.getAttribute("fill")))
        out[t.split(" (")[0]] = (t, float(r.getAttribute("width")), rgb)
    return out
d, dn = boxes(sys.argv[1]), boxes(sys.argv[2])
assert "gone" not in d, "a frame only in A is drawn"
for name, n in {"grow": 80, "shrink": 20, "same": 50, "dip": 10, "new": 40, "main": 200}.items():
    assert abs(d[name][1] - n * 1180 / 200) < 2e-3, (name, d[name][1])
    assert abs(dn[name][1] - d[name][1]) < 1e-9, name
# FlameGraph's scale: red/blue, the stronger the larger the change
want = {"grow": (255, 20, 20), "shrink": (20, 20, 255), "same": (255, 199, 199),
        "dip": (199, 199, 255), "new": (255, 92, 92), "main": (235, 235, 235), "all": (235, 235, 235)}
for k, v in want.items():
    assert d[k][2] == v, (k, d[k][2], v)
wantn = {"grow": (255, 20, 20), "new": (255, 112, 112), "same": (255, 143, 143),
         "shrink": (174, 174, 255), "dip": (235, 235, 235)}
for k, v in wantn.items():
    assert dn[k][2] == v, (k, dn[k][2], v)
assert d["grow"][0] == "grow (80 samples, 40.00%)\nbefore: 10 samples, 10.00%\nchange: +30.00% of total (self +30.00%)", d["grow"][0]
assert d["shrink"][0] == "shrink (20 samples, 10.00%)\nbefore: 40 samples, 40.00%\nchange: -30.00% of total (self -30.00%)", d["shrink"][0]
assert d["new"][0] == "new (40 samples, 20.00%)\nbefore: 0 samples, 0.00%\nchange: +20.00% of total (self +20.00%)", d["new"][0]
assert dn["shrink"][0] == "shrink (20 samples, 10.00%)\nbefore: 40 samples, 40.00%\nchange: -20 samples (self -20)", dn["shrink"][0]
assert dn["main"][0].endswith("\nchange: +100 samples (self +0)"), dn["main"][0]
PY
then echo "PASS flamegraph_diff: widths from B, red/blue by self delta in FlameGraph's order, tooltips with both counts (normalized and raw)"
else echo "FAIL flamegraph_diff: $(cat "$tmp/err")"; fi
view load flamegraph_browser_diff "$tmp/d.svg"

# a trace against its own folded stacks (trace and folded told apart by
# the magic): nothing changed, every box neutral, sized by the trace
if [ $have_trace -eq 1 ]; then
	if "$USTACK" flamegraph --diff "$tmp/t.folded" "$tmp/t.data" -o "$tmp/dt.svg" 2>"$tmp/err"; then
		fills=$(grep -o 'fill="rgb([0-9,]*)" rx' "$tmp/dt.svg" | sort -u)
		root=$(grep -o '<title>all ([0-9]* samples' "$tmp/dt.svg" | grep -o '[0-9]*')
		events=$(awk '{n += $NF} END {print n}' "$tmp/t.folded")
		if [ "$fills" = 'fill="rgb(235,235,235)" rx' ] && [ "$root" = "$events" ]; then
			echo "PASS flamegraph_diff_trace: a trace against its folded stacks: $root samples, all unchanged"
		else
			echo "FAIL flamegraph_diff_trace: fills '$fills', root '$root', events '$events'"
		fi
	else
		echo "FAIL flamegraph_diff_trace: $(cat "$tmp/err")"
	fi
else
	echo "SKIP flamegraph_diff_trace: no trace recorded (see flamegraph_browser_trace)"
fi

# errors: one input, both stdin, --no-normalize without --diff, A empty
"$USTACK" flamegraph --diff "$tmp/a.folded" -o "$tmp/x.svg" 2>"$tmp/e1"; r1=$?
"$USTACK" flamegraph --diff - - -o "$tmp/x.svg" 2>"$tmp/e2" </dev/null; r2=$?
"$USTACK" flamegraph --folded "$tmp/a.folded" --no-normalize -o "$tmp/x.svg" 2>"$tmp/e3"; r3=$?
: > "$tmp/empty"
"$USTACK" flamegraph --diff "$tmp/empty" "$tmp/b.folded" -o "$tmp/x.svg" 2>"$tmp/e4"; r4=$?
"$USTACK" flamegraph --diff "$tmp/a.folded" "$tmp/none" -o "$tmp/x.svg" 2>"$tmp/e5"; r5=$?
if [ $r1 -eq 2 ] && [ $r2 -eq 2 ] && [ $r3 -eq 2 ] && [ $r4 -eq 1 ] && grep -q "no stacks in A" "$tmp/e4" &&
   [ $r5 -eq 1 ] && grep -q "none: No such file" "$tmp/e5"; then
	echo "PASS flamegraph_diff_errors: one input, two stdins, --no-normalize alone, empty A, missing B"
else
	echo "FAIL flamegraph_diff_errors: $r1 $r2 $r3 $r4 $r5: $(cat "$tmp"/e[1-5] | tr '\n' '|')"
fi
