#!/usr/bin/env bash
# ustack report --format speedscope | perf-script (and snapshot --format
# speedscope) checked by the programs that read them:
#   perfscript_collapse  FlameGraph's stackcollapse-perf.pl (vendored in
#                        tests/vendor/flamegraph, CDDL) folds ustack's
#                        perf-script output into exactly the stacks and counts
#                        of ustack's own `report --format folded` of the same
#                        trace. Normalization: stackcollapse weights a sample
#                        by the header's period (1001001 ns per cpu-clock
#                        sample at 999 Hz), so its counts are divided by it;
#                        comm spaces become '_' (as stackcollapse does).
#                        --jit is passed so that JIT frames get folded's "_[j]".
#   perfscript_firefox   every line matches the rules of the Firefox
#                        Profiler's perf importer (src/profile-logic/import/
#                        linux-perf.ts: format detection on the first line,
#                        sample start, thread name/pid/tid, frame lines);
#                        the importer itself is not run (it is TypeScript
#                        inside the app, which is not published as an npm
#                        package: `npm view @firefox-devtools/profiler` is
#                        a 404, checked 2026-11), its regular expressions are.
#   speedscope_schema    the file validates against the JSON schema shipped in
#                        the speedscope npm package (pinned, installed into
#                        build/npm), with Debian's python3-jsonschema
#   speedscope_values    one profile per thread named "comm (tid)", unit
#                        nanoseconds, weight 1001001 per sample, as many samples
#                        as folded counts, stacks root first ending in c<b<a<main
#   speedscope_view      the package's own app, opened from disk in headless
#                        Chromium as its `speedscope FILE` command does, shows
#                        the profile name and logs no error; a damaged file
#                        makes the same check fail (the oracle can fail).
#                        Screenshot: build/speedscope.png
#   speedscope_mixed     cpu-clock + a tracepoint: profiles "comm (tid) EVENT",
#                        nanoseconds/1001001 for one, none/1 for the other; a
#                        thread that burns CPU as sh, then execs vwprog, has a
#                        cpu-clock profile under each name (its samples before
#                        the exec are not vwprog's)
#   speedscope_renames   a thread that renames itself ren_ping, ren_pong, ping,
#                        pong... (prctl, 4 rounds, ~60 ms of CPU under each):
#                        one profile per name, not per rename, each with its
#                        samples
#   snapshot_speedscope  snapshot -f speedscope -o FILE: schema-valid, one
#                        profile per thread of a 3-thread process, one sample each
#   viewers_edge         empty trace, trace of only LOST records, truncated
#                        trace: valid (possibly empty) output and, for damage,
#                        an error naming the offset; never a crash
set -u
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
: "${SAN_FLAGS:=-fsanitize=address,undefined}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf -ldw -lelf}"
: "${BASE_CFLAGS:=-std=gnu11 -g -O2 -D_GNU_SOURCE}"
SPEEDSCOPE_VERSION=1.25.0
cd "$TOP" || exit 1
tmp=$(mktemp -d /tmp/ustack-viewers-XXXXXX)
. "$TOP/tests/integration/lib/browser.sh"
trap 'browser_stop; [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }
# syscalls PID, wait_blocked PID NRS [N]
. "$TOP/tests/integration/lib/wait_blocked.sh"
PY=/usr/bin/python3 # Debian's python: python3-jsonschema, python3-websocket live there
COLLAPSE=$TOP/tests/vendor/flamegraph/stackcollapse-perf.pl

# ---- edge cases first: they need no perf events ----------------------------------------
cat >"$tmp/mktrace.c" <<'EOF'
/* writes an empty trace (argv[2] = "empty") or one of only LOST records ("lost") */
#include <string.h>
#include <ustack/trace.h>
int main(int argc, char **argv)
{
	struct ustack_trace_header h = { .clock_id = 1, .version = "ustack test" };
	struct ustack_trace_writer *w = ustack_trace_writer__open(argv[1], &h, NULL);

	if (!w || argc < 3)
		return 1;
	if (!strcmp(argv[2], "lost"))
		for (int i = 0; i < 3; i++) {
			struct ustack_trace_lost l = { .time = 1000 + i, .what = USTACK_TRACE_LOST_KERNEL,
						       .cpu = 0, .count = 5 };
			if (ustack_trace_writer__add_lost(w, &l))
				return 1;
		}
	return ustack_trace_writer__close(w) ? 1 : 0;
}
EOF
# shellcheck disable=SC2086
if ! $CC $BASE_CFLAGS $SAN_FLAGS -Iinclude -o "$tmp/mktrace" "$tmp/mktrace.c" "$CHECK_DIR/libustack.a" \
	$LIB_LDLIBS 2>"$tmp/cc.err"; then
	fail viewers_edge "cannot build the trace writer: $(head -n2 "$tmp/cc.err")"
else
	edge_ok=1
	for kind in empty lost; do
		"$tmp/mktrace" "$tmp/$kind.data" $kind || { fail viewers_edge "mktrace $kind"; edge_ok=0; continue; }
		"$USTACK" report -i "$tmp/$kind.data" -f speedscope -o "$tmp/$kind.json" 2>"$tmp/$kind.err"
		st=$?
		"$USTACK" report -i "$tmp/$kind.data" -f perf-script -o "$tmp/$kind.ps" 2>>"$tmp/$kind.err"
		st2=$?
		if [ $st -ne 0 ] || [ $st2 -ne 0 ] || grep -q 'Sanitizer\|runtime error' "$tmp/$kind.err"; then
			fail viewers_edge "$kind trace: exit $st/$st2: $(head -n2 "$tmp/$kind.err")"; edge_ok=0; continue
		fi
		if ! $PY - "$tmp/$kind.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["$schema"] == "https://www.speedscope.app/file-format-schema.json"
assert d["profiles"] == [] and d["shared"]["frames"] == [], d
EOF
		then fail viewers_edge "$kind trace: speedscope file is not an empty profile list"; edge_ok=0; fi
		[ -s "$tmp/$kind.ps" ] && { fail viewers_edge "$kind trace: perf-script output not empty"; edge_ok=0; }
	done
	[ $edge_ok = 1 ] && pass viewers_edge_empty_lost
fi

# ---- a recording -------------------------------------------------------------------------
cat >"$tmp/prog.c" <<'EOF'
volatile unsigned long sink;
__attribute__((noinline)) void c(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i * 3; }
__attribute__((noinline)) void b(unsigned long n) { c(n); sink++; }
__attribute__((noinline)) void a(unsigned long n) { b(n); sink++; }
int main(void) { a(800000000UL); return (int)(sink & 0); }
EOF
# a comm of two characters at least: stackcollapse-perf.pl's header regex
# ('^(\S.+?)\s+') takes no one-character comm (perf's own output neither)
if ! $CC -O2 -g -fomit-frame-pointer -o "$tmp/vwprog" "$tmp/prog.c"; then
	fail viewers_build "cannot compile the test program"
	exit 0
fi
if ! "$USTACK" record -q -o "$tmp/t.data" -- "$tmp/vwprog" >"$tmp/rec.out" 2>&1; then
	skip report_viewers "perf events unavailable: $(head -n1 "$tmp/rec.out")"
	exit 0
fi
"$USTACK" report -i "$tmp/t.data" -f folded -o "$tmp/folded" || fail viewers_folded "exit $?"
"$USTACK" report -i "$tmp/t.data" -f perf-script -o "$tmp/ps" 2>"$tmp/ps.err" || fail perfscript "exit $?"
nev=$(awk '{s += $NF} END {print s + 0}' "$tmp/folded")
if [ "$nev" -lt 20 ]; then
	fail report_viewers "only $nev samples recorded"
	exit 0
fi

# ---- perf-script ------------------------------------------------------------------------------
if ! command -v perl >/dev/null; then
	skip perfscript_collapse "perl missing"
else
	perl "$COLLAPSE" --jit "$tmp/ps" >"$tmp/collapsed" 2>"$tmp/collapse.err"
	period=$(awk '/^[^\t#]/ && NF { for (i = 1; i < NF; i++) if ($i ~ /^[0-9.]+:$/) { print $(i+1); break } }' \
		"$tmp/ps" | sort -u)
	if [ "$(echo "$period" | wc -l)" -ne 1 ] || [ "$period" != 1001001 ]; then
		fail perfscript_collapse "periods in the headers: $(echo $period | head -c 80) (want 1001001 each)"
	elif [ -s "$tmp/collapse.err" ]; then
		fail perfscript_collapse "stackcollapse-perf.pl complained: $(head -n2 "$tmp/collapse.err")"
	else
		awk -v p="$period" '{ n = $NF; $NF = ""; sub(/ $/, ""); printf "%s %d\n", $0, n / p }' \
			"$tmp/collapsed" | sort >"$tmp/collapsed.n"
		# folded: comm spaces -> '_' as stackcollapse-perf.pl does
		awk '{ n = $NF; $NF = ""; sub(/ $/, ""); s = $0; i = index(s, ";");
		       c = i ? substr(s, 1, i - 1) : s; r = i ? substr(s, i) : "";
		       gsub(/ /, "_", c); printf "%s%s %d\n", c, r, n }' "$tmp/folded" | sort >"$tmp/folded.n"
		if cmp -s "$tmp/collapsed.n" "$tmp/folded.n" && grep -q ';main;a;b;c ' "$tmp/folded.n"; then
			pass "perfscript_collapse ($(wc -l <"$tmp/folded.n") distinct stacks, $nev samples)"
		else
			fail perfscript_collapse "differs from folded: $(diff "$tmp/collapsed.n" "$tmp/folded.n" | head -n4 | tr '\n' '|')"
		fi
	fi
fi
# The Firefox Profiler's rules, as its importer applies them
if $PY - "$tmp/ps" "$nev" 2>"$tmp/py.err" <<'EOF'; then pass perfscript_firefox; else fail perfscript_firefox "$(grep -v '^ ' "$tmp/py.err" | tail -1 | cut -c1-400)"; fi
import re, sys
text = open(sys.argv[1]).read()
first = text[:text.index("\n")]
assert re.match(r"^\S.*?\s+(?:\d+\/)?\d+\s+(?:\[\d+\]\s+)?[\d.]+:", first), "not detected: " + first
samples, i, lines = 0, 0, text.split("\n")
while i < len(lines):
    line = lines[i]; i += 1
    if line == "" or line.startswith("#"):
        continue
    m = re.match(r"^(.*)\s+([\d.]+):", line)
    assert m, "sample start: " + line
    t = re.match(r"^(.*)\s+(?:(\d+)\/)?(\d+)\b", m.group(1))
    assert t and t.group(1).strip() == "vwprog" and t.group(2) == t.group(3), "thread: " + line
    samples += 1
    frames = []
    while i < len(lines) and lines[i].strip() != "":
        f = re.match(r"^\s*(\w+)\s*(.+) \(([^)]*)\)", lines[i]); i += 1
        assert f, "frame line: " + lines[i - 1]
        frames.append(re.sub(r"\+0x[\da-f]+$", "", f.group(2)))
    assert not frames or frames[0] != "", line
    if "c" in frames:
        k = frames.index("c")
        assert frames[k:k + 4] == ["c", "b", "a", "main"], frames
assert samples == int(sys.argv[2]), (samples, sys.argv[2])
EOF

# ---- speedscope -----------------------------------------------------------------------------
"$USTACK" report -i "$tmp/t.data" -f speedscope -o "$tmp/t.json" 2>"$tmp/ss.err" || fail speedscope "exit $?"
npm_dir=$TOP/build/npm
schema=$npm_dir/node_modules/speedscope/dist/release/file-format-schema.json
index=$npm_dir/node_modules/speedscope/dist/release/index.html
. "$TOP/tests/integration/lib/speedscope_npm.sh"
speedscope_npm "$npm_dir" "$SPEEDSCOPE_VERSION" "$tmp/npm.log"
if [ ! -f "$schema" ]; then
	why=$(command -v npm >/dev/null && echo "npm install speedscope@$SPEEDSCOPE_VERSION failed (registry unreachable?): $(grep -m1 -i err "$tmp/npm.log")" || echo "npm missing")
	skip speedscope_schema "$why"
	skip speedscope_view "$why"
elif ! $PY -c 'import jsonschema' 2>/dev/null; then
	skip speedscope_schema "python3-jsonschema missing (scripts/deps.sh)"
else
	validate() { $PY - "$schema" "$1" <<'EOF'
import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))
EOF
	}
	if out=$(validate "$tmp/t.json" 2>&1); then pass speedscope_schema
	else fail speedscope_schema "$(echo "$out" | tail -n1)"; fi
	# the validator can fail: a frame without a name is refused
	$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); d["shared"]["frames"].append({"file":"x"}); json.dump(d,open(sys.argv[2],"w"))' \
		"$tmp/t.json" "$tmp/bad.json"
	validate "$tmp/bad.json" >/dev/null 2>&1 && fail speedscope_schema "the schema check accepts a frame without name"
fi
if $PY - "$tmp/t.json" "$tmp/folded" 2>"$tmp/py.err" <<'EOF'; then pass speedscope_values; else fail speedscope_values "$(grep -v '^ ' "$tmp/py.err" | tail -1 | cut -c1-400)"; fi
import json, sys
d = json.load(open(sys.argv[1]))
folded = sum(int(l.rsplit(" ", 1)[1]) for l in open(sys.argv[2]) if l.strip())
assert d["exporter"].startswith("ustack "), d["exporter"]
assert d["activeProfileIndex"] == 0 and d["name"] == "t.data"
frames = d["shared"]["frames"]
n = 0
for p in d["profiles"]:
    assert p["type"] == "sampled" and p["unit"] == "nanoseconds", p["unit"]
    assert p["name"].startswith("vwprog (") and p["name"].endswith(")"), p["name"]
    assert set(p["weights"]) == {1001001}, set(p["weights"])
    assert len(p["weights"]) == len(p["samples"])
    assert p["endValue"] - p["startValue"] == sum(p["weights"])
    n += len(p["samples"])
    for s in p["samples"]:
        names = [frames[i]["name"] for i in s]
        if names and names[-1] == "c":
            assert names[-4:] == ["main", "a", "b", "c"], names
            assert frames[s[-1]].get("file", "").endswith("prog.c") and frames[s[-1]].get("line", 0) > 0
assert n == folded, (n, folded)
EOF
if [ -f "$index" ]; then
	if [ ! -x /usr/bin/chromium ]; then
		skip speedscope_view "chromium missing (scripts/deps.sh)"
	else
		pname=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["profiles"][0]["name"])' "$tmp/t.json")
		# the two pages below in one browser
		browser_start "$PY" "$tmp"
		timeout 120 $PY tests/integration/lib/speedscope_view.py "$index" "$tmp/t.json" \
			"$TOP/build/speedscope.png" "$pname" >"$tmp/view.out" 2>&1
		st=$?
		if [ $st -eq 77 ]; then
			skip speedscope_view "$(head -n1 "$tmp/view.out")"
		elif [ $st -ne 0 ]; then
			fail speedscope_view "$(tr '\n' '|' <"$tmp/view.out" | head -c 300)"
		else
			# the same check on a damaged file must fail
			head -c 200 "$tmp/t.json" >"$tmp/cut.json"
			if timeout 120 $PY tests/integration/lib/speedscope_view.py "$index" "$tmp/cut.json" \
				"$tmp/cut.png" "$pname" >"$tmp/view2.out" 2>&1 || ! grep -q '^error: ' "$tmp/view2.out"; then
				fail speedscope_view "a truncated file is not reported as an error by the viewer check: $(tr '\n' '|' <"$tmp/view2.out" | head -c 200)"
			else
				pass "speedscope_view ('$pname' shown, no console error; build/speedscope.png)"
			fi
		fi
	fi
fi

# ---- mixed event kinds: one profile per (thread, event kind) ------------------------------------
if ! "$USTACK" record -q -o "$tmp/mix.data" -e cpu-clock -e syscalls:sys_enter_write -- \
	sh -c "for i in 1 2 3; do echo x; done; i=0; while [ \$i -lt 100000 ]; do i=\$((i+1)); done
		exec '$tmp/vwprog'" >/dev/null 2>"$tmp/mix.err"; then
	skip speedscope_mixed "tracepoint recording unavailable: $(head -n1 "$tmp/mix.err")"
elif "$USTACK" report -i "$tmp/mix.data" -f speedscope -o "$tmp/mix.json" &&
	$PY - "$tmp/mix.json" 2>"$tmp/py.err" <<'EOF'; then pass speedscope_mixed; else fail speedscope_mixed "$(grep -v '^ ' "$tmp/py.err" | tail -1 | cut -c1-400)"; fi
import json, sys
d = json.load(open(sys.argv[1]))
# every profile of a kind has that kind's unit and weights. One thread:
# sh (its writes and ~0.2 s of CPU in its loop), then vwprog (~1 s of CPU)
# after the exec: a cpu-clock profile per name, of the same tid
kinds = {}
for p in d["profiles"]:
    comm_tid, ev = p["name"].rsplit(" ", 1)
    kinds.setdefault(ev, []).append((p["unit"], set(p["weights"]), comm_tid))
assert all(k[:2] == ("nanoseconds", {1001001}) for k in kinds["cpu-clock"]), kinds
assert all(k[:2] == ("none", {1}) for k in kinds["syscalls:sys_enter_write"]), kinds
names = sorted(k[2] for k in kinds["cpu-clock"])
assert len(names) == 2 and names[0].startswith("sh (") and names[1].startswith("vwprog ("), names
assert names[0][3:] == names[1][7:], names
assert [k[2] for k in kinds["syscalls:sys_enter_write"]] == [names[0]], kinds
EOF

# ---- a thread that takes its names again: one profile per name ------------------------------------
cat >"$tmp/renames.c" <<'EOF'
#include <sys/prctl.h>
#include <time.h>
static volatile unsigned long sink;
static void burn(long ms) /* ms of this thread's own CPU time */
{
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 100000; i++)
			sink += i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}
int main(void)
{
	for (int r = 0; r < 4; r++) {
		prctl(PR_SET_NAME, "ren_ping");
		burn(60);
		prctl(PR_SET_NAME, "ren_pong");
		burn(60);
	}
	return 0;
}
EOF
if ! $CC -O2 -o "$tmp/renames" "$tmp/renames.c"; then
	fail speedscope_renames "cannot build the test program"
elif ! "$USTACK" record -q -o "$tmp/ren.data" -e cpu-clock -- "$tmp/renames" >/dev/null 2>"$tmp/ren.err"; then
	fail speedscope_renames "record: $(head -n2 "$tmp/ren.err")"
elif "$USTACK" report -i "$tmp/ren.data" -f speedscope -o "$tmp/ren.json" &&
	$PY - "$tmp/ren.json" 2>"$tmp/py.err" <<'EOF'; then pass speedscope_renames; else fail speedscope_renames "$(grep -v '^ ' "$tmp/py.err" | tail -1 | cut -c1-400)"; fi
import json, sys
# the program (one thread) renamed itself 8 times, ren_ping and ren_pong
# in turn, ~60 ms of CPU under each: one profile per name (the first,
# "renames", may have a few samples of the start), each name once
d = json.load(open(sys.argv[1]))
names = [p["name"] for p in d["profiles"]]
ours = sorted(n for n in names if n.startswith("ren"))
assert len(ours) == len(set(ours)), names
assert [n.split(" (")[0] for n in ours if n.startswith("ren_")] == ["ren_ping", "ren_pong"], names
assert len({n.split(" (")[1] for n in ours}) == 1, names
assert all(len(p["samples"]) >= 20 for p in d["profiles"] if p["name"].startswith("ren_")), \
    [(p["name"], len(p["samples"])) for p in d["profiles"]]
EOF

# ---- snapshot --format speedscope ---------------------------------------------------------------
cat >"$tmp/thr.c" <<'EOF'
#include <pthread.h>
#include <unistd.h>
static void *sleeper(void *a) { (void)a; for (;;) pause(); return 0; }
int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], 0, sleeper, 0);
	write(1, "ready\n", 6);
	for (;;) pause();
}
EOF
if $CC -O2 -g -pthread -o "$tmp/thr" "$tmp/thr.c"; then
	"$tmp/thr" >"$tmp/thr.out" &
	tpid=$!
	# "ready" comes once the threads exist, not once they sleep: wait
	# until all three are blocked in pause (34), at most 30 s
	for _ in $(seq 3000); do grep -q ready "$tmp/thr.out" && break; sleep 0.01; done
	if ! wait_blocked $tpid 34 3; then
		st=-1 blk=$(syscalls $tpid | awk '{ print $1, $2 }' | tr '\n' ' ')
	else
		"$USTACK" snapshot -p $tpid -f speedscope -o "$tmp/snap.json" 2>"$tmp/snap.err"
		st=$?
	fi
	kill $tpid 2>/dev/null; wait $tpid 2>/dev/null
	if [ $st = -1 ]; then
		fail snapshot_speedscope "the 3 threads did not all block in pause (TID syscall): $blk"
	elif [ $st -ne 0 ]; then
		if grep -qi 'permit' "$tmp/snap.err"; then skip snapshot_speedscope "$(head -n1 "$tmp/snap.err")"
		else fail snapshot_speedscope "exit $st: $(head -n2 "$tmp/snap.err")"; fi
	elif $PY - "$tmp/snap.json" "$tpid" "$schema" 2>"$tmp/py.err" <<'EOF'; then pass snapshot_speedscope; else fail snapshot_speedscope "$(grep -v '^ ' "$tmp/py.err" | tail -1 | cut -c1-400)"; fi
import json, os, sys
d = json.load(open(sys.argv[1]))
tids = sorted(int(p["name"].rsplit("(", 1)[1].rstrip(")")) for p in d["profiles"])
assert len(tids) == 3 and int(sys.argv[2]) in tids, tids
for p in d["profiles"]:
    assert p["name"].startswith("thr (") and len(p["samples"]) == 1 and p["weights"] == [1], p["name"]
    assert any(d["shared"]["frames"][i]["name"] in ("pause", "__libc_pause") for i in p["samples"][0]), p
if os.path.exists(sys.argv[3]):
    try:
        import jsonschema
        jsonschema.validate(d, json.load(open(sys.argv[3])))
    except ImportError:
        pass
EOF
fi

# ---- damaged trace: output up to the damage, an error with the offset, no crash -------------------
size=$(stat -c %s "$tmp/t.data")
head -c $((size * 2 / 3)) "$tmp/t.data" >"$tmp/cut.data"
ok=1
for f in speedscope perf-script; do
	"$USTACK" report -i "$tmp/cut.data" -f $f -o "$tmp/cut.$f" 2>"$tmp/cut.$f.err"
	st=$?
	if [ $st -ne 1 ] || ! grep -q 'damaged at offset [0-9]' "$tmp/cut.$f.err" ||
		grep -q 'Sanitizer\|runtime error' "$tmp/cut.$f.err"; then
		fail viewers_edge_damaged "$f: exit $st: $(head -n2 "$tmp/cut.$f.err")"; ok=0
	fi
done
if [ $ok = 1 ]; then
	# as many samples as folded finds before the damage (none when the
	# cut falls in the first chunk: a chunk is read whole or not at all)
	"$USTACK" report -i "$tmp/cut.data" -f folded -o "$tmp/cut.folded" 2>/dev/null
	if $PY - "$tmp/cut.speedscope" "$tmp/cut.perf-script" "$tmp/cut.folded" "$nev" 2>"$tmp/py.err" <<'EOF'; then pass viewers_edge_damaged; else fail viewers_edge_damaged "$(grep -v '^ ' "$tmp/py.err" | tail -1 | cut -c1-400)"; fi
import json, sys
d = json.load(open(sys.argv[1]))
n = sum(len(p["samples"]) for p in d["profiles"])
ps = sum(1 for l in open(sys.argv[2]) if l.startswith("vwprog "))
fo = sum(int(l.rsplit(" ", 1)[1]) for l in open(sys.argv[3]) if l.strip())
assert n == ps == fo and n < int(sys.argv[4]), (n, ps, fo, sys.argv[4])
EOF
fi
