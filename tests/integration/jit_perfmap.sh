#!/usr/bin/env bash
# JIT frames named from /tmp/perf-PID.map, and stacks unwound through them,
# with node --perf-basic-prof (V8 keeps frame pointers in its JIT code and
# writes "START SIZE name" lines for the code it compiles).
#
# The program (written below) runs a named function hot() doing arithmetic
# in a loop, called from another named function driver(), for a few seconds.
# node runs with --no-turbo-inlining: otherwise TurboFan inlines hot() into
# driver() and only "driver" is left to find in the stacks.
# node's main() is a 5-byte tail jump to node::Start (readelf -s), so no
# stack of node has a frame "main": "down to main" is checked as
# node::Start <- __libc_start_call_main (the caller of main) <- _start.
#
# Lines (PASS/FAIL/SKIP jit_perfmap/...):
#   record/BACKEND   `ustack record -e cpu-clock -- node ...` with BACKEND copy
#                    and bpf (SKIP with the recorder's reason when bpf does
#                    not load); the map file is deleted after the run, then
#                    `report --format folded`: at least half of node's
#                    samples have hot's JIT frame (marked _[j]); 90% of
#                    those continue below it down to node::Start,
#                    __libc_start_call_main and _start; driver's JIT frame
#                    is seen right below hot's; the text report says
#                    "[jit] /tmp/perf-PID.map"
#   methods/BACKEND  in the same trace (report --format stackmap): every
#                    frame with file id 0 below another with file id 0 was
#                    found by frame pointer (method 3), and so was the frame
#                    below some JIT frame (one below node's own code is
#                    found by its CFI: under load, 1 in 143 in a busy run)
#   snapshot         `ustack snapshot -p` of a running node: a thread's frame
#                    0 or 1 is named JS:...hot from the live map, the stack
#                    reaches __libc_start_call_main, a JIT frame below a JIT
#                    frame says [fp]; json marks them "jit": true
#   malformed        the running node's map replaced by a damaged copy
#                    (garbage lines, a bad size, an older entry overlapping
#                    the good ones, a truncated last line): snapshot and a
#                    `record -p` of it warn naming the file and line numbers,
#                    and frames are named by the good entries (the newer of
#                    two overlapping ones)
#   fifo             (no node needed) a FIFO at /tmp/perf-PID.map of a sleeping
#                    process: `snapshot -p` ends within 10 s (it used to
#                    block in open() for ever) with one warning "not a
#                    regular file"; `record -- sh` whose shell makes the
#                    FIFO at its own map path ends too (the map is read at
#                    the process's exit)
#   owner            as root, a map owned by uid 4242 for a root process:
#                    snapshot warns "owned by uid 4242" and does not use it
#
# Env (from make check): USTACK TOP; KEEP_TMP=1 keeps the files.
set -u
T=jit_perfmap
USTACK=${USTACK:-build/check/ustack}
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
fails=0
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $T/$1: $2"; }

[ -x "$USTACK" ] || { fail setup "no $USTACK"; exit 1; }

# ---- (0) maps that are no regular file, or somebody else's ------------------
sleep 30 &
spid=$!
sfifo=/tmp/perf-$spid.map
rm -f "$sfifo"
ftmp=$(mktemp -d)
if mkfifo "$sfifo"; then
	timeout 10 "$USTACK" snapshot -p "$spid" >"$ftmp/snap.txt" 2>"$ftmp/snap.err"
	rc=$?
	if [ $rc -eq 124 ]; then
		fail fifo "snapshot -p of a process whose perf map is a FIFO hung (killed after 10 s)"
	elif [ $rc -ne 0 ]; then
		fail fifo "snapshot exited $rc: $(head -c 300 "$ftmp/snap.err")"
	elif [ "$(grep -c "$sfifo: not a regular file" "$ftmp/snap.err")" -ne 1 ]; then
		fail fifo "no one warning 'not a regular file': $(head -c 300 "$ftmp/snap.err")"
	elif ! grep -q '^#0 ' "$ftmp/snap.txt"; then
		fail fifo "snapshot printed no stack: $(head -c 300 "$ftmp/snap.txt")"
	else
		pass fifo/snapshot
	fi
	rm -f "$sfifo"
else
	fail fifo "mkfifo $sfifo failed"
fi
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
	skip fifo/record "needs root or kernel.perf_event_paranoid <= 1"
else
	timeout 20 "$USTACK" record -q -e cpu-clock -o "$ftmp/fifo.data" -- \
		sh -c 'mkfifo /tmp/perf-$$.map && echo $$ >'"$ftmp"'/sh.pid && exec sleep 0.5' \
		>/dev/null 2>"$ftmp/rec.err"
	rc=$?
	[ -s "$ftmp/sh.pid" ] && rm -f "/tmp/perf-$(cat "$ftmp/sh.pid").map"
	if [ $rc -eq 124 ]; then
		fail fifo/record "record hung reading a FIFO perf map at the process's exit"
	elif [ $rc -ne 0 ]; then
		fail fifo/record "record exited $rc: $(head -c 300 "$ftmp/rec.err")"
	elif ! grep -q "not a regular file" "$ftmp/rec.err"; then
		fail fifo/record "no warning 'not a regular file': $(head -c 300 "$ftmp/rec.err")"
	else
		pass fifo/record
	fi
fi
if [ "$(id -u)" -ne 0 ]; then
	skip owner "not root: cannot make a map owned by another user"
else
	printf '%x 10 PLANTED\n' 4096 >"$sfifo"
	chown 4242:4242 "$sfifo"
	timeout 10 "$USTACK" snapshot -p "$spid" >"$ftmp/own.txt" 2>"$ftmp/own.err"
	if ! grep -q "$sfifo: owned by uid 4242, not by the process's uid 0 or root" "$ftmp/own.err"; then
		fail owner "no warning about the owner: $(head -c 300 "$ftmp/own.err")"
	else
		pass owner
	fi
	rm -f "$sfifo"
fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
rm -rf "$ftmp"

NODE=$(command -v node || command -v nodejs || true)
if [ -z "$NODE" ]; then
	skip all "no node (Debian package nodejs) to run JIT code"
	exit 0
fi
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
	skip all "needs root or kernel.perf_event_paranoid <= 1"
	exit 0
fi
if ! "$NODE" --no-turbo-inlining -e 0 2>/dev/null; then
	skip all "$NODE does not take --no-turbo-inlining (not V8?)"
	exit 0
fi

tmp=$(mktemp -d)
pids=()
maps=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	for m in "${maps[@]}"; do rm -f "$m"; done
	[ -n "${KEEP_TMP:-}" ] && echo "# files kept in $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
# node --perf-basic-prof also writes isolate-*-v8.log files into its
# working directory: keep them in $tmp
case $USTACK in /*) ;; *) USTACK=$PWD/$USTACK ;; esac
cd "$tmp" || exit 1

# SECONDS_TO_RUN: how long driver() loops, in CPU time of the process (a
# loaded machine makes the run longer, not the share of hot() in node's
# samples smaller); PID_FILE: where node says its pid
cat > "$tmp/hot.js" <<'EOF'
require('fs').writeFileSync(process.env.PID_FILE, String(process.pid));
function hot(n) {
  let s = 0;
  for (let i = 0; i < n; i++) { s = (s + i * 7) % 1000003; }
  return s;
}
function cpu_ms() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
function driver(ms) {
  const end = cpu_ms() + ms;
  let t = 0;
  // the clock read now and then: the time stays in hot()
  do {
    for (let k = 0; k < 20; k++) t += hot(100000);
  } while (cpu_ms() < end);
  return t;
}
console.log(driver(1000 * Number(process.env.SECONDS_TO_RUN)));
EOF

# ---- (a) record + report, both backends ---------------------------------------
bpf_skip=
if ! "$USTACK" record -q --backend bpf -o "$tmp/probe.data" -- true >/dev/null 2>"$tmp/probe.err"; then
	bpf_skip=$(grep -m1 . "$tmp/probe.err")
	bpf_skip=${bpf_skip:-record --backend bpf failed without a reason}
fi

check_record() { # BACKEND
	local b=$1 data=$tmp/$1.data pid map
	rm -f "$tmp/pid"
	if ! PID_FILE=$tmp/pid SECONDS_TO_RUN=3 "$USTACK" record -q --backend "$b" -e cpu-clock \
		-o "$data" -- "$NODE" --perf-basic-prof --no-turbo-inlining "$tmp/hot.js" \
		>"$tmp/$b.out" 2>"$tmp/$b.err"; then
		fail "record/$b" "record failed: $(head -c 300 "$tmp/$b.err")"
		return
	fi
	pid=$(cat "$tmp/pid" 2>/dev/null)
	map=/tmp/perf-$pid.map
	maps+=("$map")
	if [ -z "$pid" ] || ! grep -q 'hot' "$map" 2>/dev/null; then
		fail "record/$b" "node wrote no JIT map with hot() at $map"
		return
	fi
	# the trace must stand on its own: no map file when reporting
	rm -f "$map"
	"$USTACK" report -i "$data" -f folded >"$tmp/$b.folded" 2>"$tmp/$b.rerr" ||
		{ fail "record/$b" "report failed: $(head -c 300 "$tmp/$b.rerr")"; return; }
	"$USTACK" report -i "$data" >"$tmp/$b.text" 2>/dev/null
	"$USTACK" report -i "$data" -f stackmap >"$tmp/$b.stackmap" 2>/dev/null
	python3 - "$tmp/$b.folded" "$tmp/$b.text" "$pid" <<'EOF' >"$tmp/$b.verdict"
import re, sys
folded, text, pid = sys.argv[1], sys.argv[2], sys.argv[3]
total = hot = deep = below_driver = 0
for line in open(folded):
    stack, _, count = line.rstrip('\n').rpartition(' ')
    frames, n = stack.split(';'), int(count)
    if frames[0] != 'node':
        continue
    total += n
    idx = [i for i, f in enumerate(frames) if re.match(r'JS:[*~^]?hot /.*_\[j\]$', f)]
    if not idx:
        continue
    hot += n
    i = idx[-1]  # the innermost hot frame; folded stacks are root first
    below = frames[:i]
    if '_start' in below and '__libc_start_call_main' in below and \
            'node::Start(int,_char**)' in [f.replace(' ', '_') for f in below]:
        deep += n
    if i > 0 and re.match(r'JS:[*~^]?driver /.*_\[j\]$', frames[i - 1]):
        below_driver += n
jit_text = ('[jit] /tmp/perf-%s.map' % pid) in open(text).read()
print(total, hot, deep, below_driver, int(jit_text))
EOF
	read -r total hot deep below_driver jit_text <"$tmp/$b.verdict"
	if [ "${total:-0}" -lt 100 ]; then
		fail "record/$b" "only ${total:-0} samples of node: $(sort -t' ' -k2 -nr "$tmp/$b.folded" | head -2 | cut -c1-300 | tr '\n' '|') $(head -c 200 "$tmp/$b.err")"
	elif [ $((hot * 2)) -lt "$total" ]; then
		fail "record/$b" "hot() named in $hot of $total node samples (want >= half); top stacks: $(sort -t' ' -k2 -nr "$tmp/$b.folded" | head -2 | cut -c1-400)"
	elif [ $((deep * 10)) -lt $((hot * 9)) ]; then
		fail "record/$b" "only $deep of $hot hot() samples reach node::Start/__libc_start_call_main/_start"
	elif [ "$below_driver" -eq 0 ]; then
		fail "record/$b" "driver()'s JIT frame never right below hot()'s"
	elif [ "$jit_text" != 1 ]; then
		fail "record/$b" "text report has no '[jit] /tmp/perf-$pid.map' frame"
	else
		pass "record/$b"
		echo "# record/$b: $total node samples, hot() in $hot, $deep down to _start, $below_driver under driver()"
	fi
	# methods: decode the stackmap export (two words per frame: offset,
	# then file id | method << 56 | flags << 62)
	python3 - "$tmp/$b.stackmap" <<'EOF' >"$tmp/$b.methods"
import re, sys
stacks, cur = [], None
for line in open(sys.argv[1]):
    if line.startswith('stack_id'):
        cur = []
        stacks.append(cur)
    else:
        m = re.match(r'\s*\[\d+\] (0x[0-9a-f]+)', line)
        if m and cur is not None:
            cur.append(int(m.group(1), 16))
# a JIT frame called by JIT code is found by frame pointer: nothing else
# steps out of code without a table; one that called into node's own code
# (a builtin, the runtime) is found by that code's CFI, as rightly
jit = bad = caller_fp = caller_other = 0
for words in stacks:
    frames = [(words[k], words[k + 1]) for k in range(0, len(words) - 1, 2)]
    for k, (off, w) in enumerate(frames):
        fid, method = w & ((1 << 56) - 1), (w >> 56) & 0x3f
        if fid or k == 0 or frames[k - 1][1] & ((1 << 56) - 1):
            continue
        jit += 1
        if method != 3:
            bad += 1
        if k + 1 < len(frames):
            if (frames[k + 1][1] >> 56) & 0x3f == 3:
                caller_fp += 1
            else:
                caller_other += 1
print(jit, bad, caller_fp, caller_other)
EOF
	read -r jit bad caller_fp caller_other <"$tmp/$b.methods"
	if [ "${jit:-0}" -eq 0 ]; then
		fail "methods/$b" "no frame with file id 0 below a JIT frame"
	elif [ "$bad" -ne 0 ]; then
		fail "methods/$b" "$bad of $jit JIT frames below a JIT frame not found by frame pointer"
	elif [ "$caller_fp" -eq 0 ]; then
		fail "methods/$b" "no frame below a JIT frame found by frame pointer ($caller_other otherwise)"
	else
		pass "methods/$b"
	fi
}

check_record copy
if [ -n "$bpf_skip" ]; then
	skip record/bpf "$bpf_skip"
	skip methods/bpf "$bpf_skip"
else
	check_record bpf
fi

# ---- (b) snapshot of a running node ---------------------------------------------
rm -f "$tmp/pid"
PID_FILE=$tmp/pid SECONDS_TO_RUN=60 "$NODE" --perf-basic-prof --no-turbo-inlining "$tmp/hot.js" \
	>/dev/null 2>&1 &
npid=$!
pids+=("$npid")
maps+=("/tmp/perf-$npid.map")
# wait (10 s at most) for TurboFan's code of hot() in the map
for _ in $(seq 100); do
	grep -q 'JS:\*hot ' "/tmp/perf-$npid.map" 2>/dev/null && break
	sleep 0.1
done
got=
for _ in 1 2 3 4 5; do
	"$USTACK" snapshot -p "$npid" -m >"$tmp/snap.txt" 2>"$tmp/snap.err"
	# the main thread's block
	awk -v t="TID $npid " 'index($0, t) == 1 {on = 1} on && /^$/ {exit} on' "$tmp/snap.txt" >"$tmp/snap.main"
	if grep -Eq '^#[01] 0x[0-9a-f]+ JS:[*~^]?hot .*\[jit\] /tmp/perf-'"$npid"'\.map' "$tmp/snap.main"; then
		got=1
		break
	fi
done
if [ -z "$got" ]; then
	fail snapshot "no snapshot named hot() in frame 0 or 1: $(head -5 "$tmp/snap.main" | tr '\n' '|')"
elif ! grep -q '__libc_start_call_main' "$tmp/snap.main"; then
	fail snapshot "the stack does not reach __libc_start_call_main: $(tr '\n' '|' <"$tmp/snap.main" | cut -c1-600)"
elif awk '/^#[0-9]+ / { j = / \[jit\] /; if (j && pj && !/\[fp\]$/) bad = 1; pj = j } END { exit !bad }' \
	"$tmp/snap.main"; then
	# (a JIT frame under node's own code is found by that code's CFI)
	fail snapshot "a JIT frame below a JIT frame not found by frame pointer: $(grep '\[jit\]' "$tmp/snap.main" | tr '\n' '|')"
elif ! for _ in 1 2 3 4 5; do
		# a snapshot may land outside JIT code (a C++ builtin called from
		# interpreted code): a few tries, as for the text above
		"$USTACK" snapshot -p "$npid" -f json >"$tmp/snap.json" 2>/dev/null
		grep -q '"jit": true' "$tmp/snap.json" && break
	done; then
	fail snapshot "json output of 5 snapshots has no \"jit\": true frame: $(grep -o '"function": "[^"]*"' "$tmp/snap.json" | head -6 | tr '\n' '|')"
else
	pass snapshot
fi

# ---- (c) a damaged map -------------------------------------------------------------
# node keeps writing to the file it opened; the damaged copy replaces the name
good=$(grep 'JS:\*hot ' "/tmp/perf-$npid.map")
if [ -z "$good" ] || ! kill -0 "$npid" 2>/dev/null; then
	fail malformed "no running node with TurboFan code of hot() to test with"
else
	{
		echo "this is not a perf map line"
		# an older entry overlapping every good one: the newer lines win
		echo "$good" | while read -r a sz _; do
			printf '%x %x OLD_overlapping\n' $((0x$a - 16)) $((0x$sz + 32))
		done
		echo "7f0000001000 zz bad_size"
		echo ""
		echo "$good" | awk '{ print $1, $2, "GOOD_hot_" NR }'
		echo "7f0000002000 10"
		printf "7f0000003000 10 truncated_last_li"
	} >"$tmp/damaged.map"
	mv -f "$tmp/damaged.map" "/tmp/perf-$npid.map"
	ok=1
	"$USTACK" snapshot -p "$npid" >"$tmp/dsnap.txt" 2>"$tmp/dsnap.err"
	for _ in 1 2 3 4; do
		grep -Eq '^#[01] .*GOOD_hot_[0-9]+\+0x' "$tmp/dsnap.txt" && break
		"$USTACK" snapshot -p "$npid" >"$tmp/dsnap.txt" 2>"$tmp/dsnap.err"
	done
	# line 1 garbage, then G older entries, the bad size, a blank line, the
	# G good entries, a line without a name, the partial line
	G=$(echo "$good" | wc -l)
	for l in 1 $((G + 2)) $((2 * G + 4)); do
		if ! grep -q "/tmp/perf-$npid.map:$l: malformed" "$tmp/dsnap.err"; then
			fail malformed "snapshot: no warning for line $l: $(head -c 400 "$tmp/dsnap.err")"
			ok=
		fi
	done
	if grep -q 'truncated_last' "$tmp/dsnap.err"; then
		fail malformed "snapshot warned about the partial last line (it is left for later)"
		ok=
	fi
	if ! grep -Eq '^#[01] .*GOOD_hot_[0-9]+\+0x' "$tmp/dsnap.txt"; then
		fail malformed "snapshot: hot()'s frame not named GOOD_hot_N: $(head -4 "$tmp/dsnap.txt" | tr '\n' '|')"
		ok=
	elif grep -q OLD_overlapping "$tmp/dsnap.txt"; then
		fail malformed "snapshot: the older overlapping entry won"
		ok=
	fi
	# record -p: the process is alive at the end, its map is read then
	"$USTACK" record -q -p "$npid" -d 1 -e cpu-clock -o "$tmp/damaged.data" >/dev/null \
		2>"$tmp/drec.err"
	"$USTACK" report -i "$tmp/damaged.data" -f folded >"$tmp/damaged.folded" 2>/dev/null
	if ! grep -q "/tmp/perf-$npid.map:$((G + 2)): malformed" "$tmp/drec.err"; then
		fail malformed "record: no warning for line $((G + 2)): $(head -c 400 "$tmp/drec.err")"
		ok=
	elif ! grep -q 'GOOD_hot_[0-9]*_\[j\]' "$tmp/damaged.folded"; then
		fail malformed "record -p: no stack with GOOD_hot_N_[j]: $(sort -t' ' -k2 -nr "$tmp/damaged.folded" | head -1 | cut -c1-300)"
		ok=
	elif grep -q OLD_overlapping "$tmp/damaged.folded"; then
		fail malformed "record -p: the older overlapping entry won"
		ok=
	fi
	[ -n "$ok" ] && pass malformed
fi

[ $fails -eq 0 ]
