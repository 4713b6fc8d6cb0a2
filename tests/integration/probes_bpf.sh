#!/usr/bin/env bash
# Probe events with the BPF backend (`record -e uprobe:/uretprobe: --backend
# bpf`) against an oracle: progs/probe_paths.c, built without frame
# pointers, calls its own target(n) from three known call paths a known
# number of times and prints its counts and the sum of target's return
# values. progs/probe_args.c prints each EVENT's args as the trace holds
# them. Each PASS/FAIL line is `probes_bpf/CASE`; where uprobes or the BPF
# backend are not there: `SKIP probes_bpf/all: REASON` with the recorder's
# own line.
#
#   paths     uprobe on target, paths 1000/2000/3000 calls: in `report
#             --format folded`, the stacks ending main;path_a;target,
#             main;path_b;target, main;path_c;path_c_inner;target weigh
#             exactly the program's counts and nothing else is there (lost 0,
#             probe_rate_dropped 0, probe_hits = probe_kept = calls
#             asserted: no slack); each event has no args
#   uretprobe uretprobe on target: one event per call, each with one arg,
#             the sum of those as int (target returns an int: the upper half
#             of rax is not the function's) equal to the program's own sum;
#             the stacks are the callers' (main;path_a, ...), same counts
#   pending   uretprobes on path_c and path_c_inner and a uprobe on target,
#             paths 10 20 30: while target runs from path_c_inner both
#             return addresses above it are the [uprobes] trampoline; every
#             stack still reaches _start (the real addresses from the
#             kernel's return_instances): main;path_c;path_c_inner;target 30,
#             main;path_a;target 10, main;path_b;target 20, path_c_inner's
#             uretprobe main;path_c once, path_c's main once, nothing else
#   pending-copy  the same with no table in the kernel
#             (USTACK_BPF_NO_TABLES=1): all 62 stacks from stack copies
#             unwound in user space, the same stacks (the program puts the
#             real return addresses back into the copy's trampoline slots)
#   usdt      usdt:PROG:ustack_test:tick, fired 500 times with (i, -3i, 5):
#             operands in memory (DEREF), in a register (signed 64-bit) and a
#             constant (the test program's note, whichever gcc chose: checked
#             only through the values); each event has 3 args, their sums are
#             the program's own, the third is 5 every time, the stacks end
#             main;path_usdt
#   rate      --probe-rate 1000 on target called as fast as it can be for
#             2 s: probe_rate_dropped > 0 and hits = kept + dropped; the
#             kept events, split per CPU into the kernel's windows (a window
#             opens at the first hit 1 s or more after the last one opened,
#             and that hit is always kept), hold at most 1000 each, and the
#             window that dropped holds exactly 1000. A window's start is its
#             first kept event's time; a probe event's time is the one its
#             admission compared (it used to be taken after, and a preemption
#             between the two once put 3 events of a window into the one
#             before); events within 50 us before a boundary are counted in the
#             later window (the trace's times are in microseconds; a full
#             window keeps its 1000 at its start, far from its end)
#   pid       record -p of a running process calling target (from path_spin)
#             as fast as it can, stopped with SIGINT once its [uprobes] page
#             shows the probe attached: probe_hits = probe_kept +
#             probe_rate_dropped exactly (the probes are removed before the
#             last read: no hit is counted that is not in the trace), lost
#             0, every stack ends main;path_spin;target
#   gone      ustack record -a with a uprobe on target, then killed (SIGKILL)
#   gone-int  or stopped (SIGINT): a new process calling target afterwards
#             gets no [uprobes] page (the kernel maps it at a process's first
#             uprobe hit), and tracefs uprobe_events holds nothing of ours.
#             The check is shown to see a probe first: while recording, a new
#             process does get the page (else SKIP: not observable here)
#
# Env (from make check): USTACK CC TOP CHECK_DIR SAN_FLAGS BASE_CFLAGS
# LIB_LDLIBS; KEEP_TMP=1 keeps the files.
set -u
T=probes_bpf
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
: "${SAN_FLAGS:=-fsanitize=address,undefined}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf -ldw -lelf}"
: "${BASE_CFLAGS:=-std=gnu11 -g -O2 -D_GNU_SOURCE}"
fails=0
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $T/$1: $2"; }

[ -x "$USTACK" ] || { fail setup "no $USTACK"; exit 1; }
if [ "$(id -u)" -ne 0 ]; then
	skip all "needs root (BPF programs and uprobes)"
	exit 0
fi
if [ ! -e /sys/bus/event_source/devices/uprobe/type ]; then
	skip all "no uprobe PMU (/sys/bus/event_source/devices/uprobe/type): kernel without CONFIG_UPROBE_EVENTS"
	exit 0
fi
tmp=$(mktemp -d /tmp/ustack-probes-bpf-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	[ -n "${KEEP_TMP:-}" ] && echo "# files kept in $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
P=$TOP/tests/integration/progs
PP=$tmp/probe_paths

if ! $CC -O2 -fomit-frame-pointer -fno-inline-functions -Wall -o "$PP" "$P/probe_paths.c" 2>"$tmp/build.log" ||
   ! $CC $BASE_CFLAGS $SAN_FLAGS -I"$TOP/include" -o "$tmp/args" "$P/probe_args.c" \
	"$TOP/$CHECK_DIR/libustack.a" $LIB_LDLIBS 2>>"$tmp/build.log"; then
	fail build "$(head -5 "$tmp/build.log" | tr '\n' '|')"
	exit 1
fi

stat_of() { awk -v k="$2" '$1 == "stat" && $2 == k { print $3 }' "$1"; }

# Can this machine record a uprobe with the BPF backend at all?
if ! "$USTACK" record -q --backend bpf -e "uprobe:$PP:target" -o "$tmp/try.data" \
	-- "$PP" paths 1 1 1 >/dev/null 2>"$tmp/try.err"; then
	why=$(grep -m1 . "$tmp/try.err")
	case "$why" in
	*"BPF backend"*|*"not resolved yet"*|*uprobe*)
		skip all "record --backend bpf -e uprobe: failed: ${why:-no reason}"
		exit 0 ;;
	esac
	fail setup "record -e uprobe: failed: ${why:-no reason}"
	exit 1
fi

# record NAME RECORD_OPTS... -- PROGRAM_ARGS...
record() {
	local name=$1; shift
	local ro=()
	while [ "$1" != -- ]; do ro+=("$1"); shift; done
	shift
	if ! "$USTACK" record -q --stats --backend bpf "${ro[@]}" -o "$tmp/$name.data" \
		-- "$PP" "$@" >"$tmp/$name.out" 2>"$tmp/$name.stats"; then
		fail "$name" "record failed: $(grep -v '^stat ' "$tmp/$name.stats" | head -3 | tr '\n' '|')"
		return 1
	fi
	"$USTACK" report -i "$tmp/$name.data" --format folded >"$tmp/$name.folded" 2>"$tmp/$name.rerr" &&
		"$tmp/args" "$tmp/$name.data" >"$tmp/$name.args" 2>>"$tmp/$name.rerr" || {
		fail "$name" "report: $(head -3 "$tmp/$name.rerr" | tr '\n' '|')"
		return 1
	}
}

# judge_paths NAME SUFFIX_A SUFFIX_B SUFFIX_C: the folded weights per path
# equal the program's counts, nothing else recorded, the counters clean
judge_paths() {
	local name=$1
	python3 - "$tmp/$name.out" "$tmp/$name.folded" "$tmp/$name.stats" "$2" "$3" "$4" <<'EOF'
import sys
out, folded, stats = sys.argv[1:4]
suffix = dict(zip(("path_a", "path_b", "path_c"), sys.argv[4:7]))
want = {l.split()[0]: int(l.split()[1]) for l in open(out) if l.startswith("path_")}
st = {f[1]: int(float(f[2])) for f in (l.split() for l in open(stats))
      if len(f) == 3 and f[0] == "stat" and f[2].replace(".", "", 1).isdigit()}
got = {k: 0 for k in suffix}
other = []
for l in open(folded):
    stack, w = l.rsplit(" ", 1)
    for k, s in suffix.items():
        if stack.endswith(";main;" + s):
            got[k] += int(w)
            break
    else:
        other.append(l.strip())
bad = []
calls = sum(want.values())
for k in ("lost", "probe_rate_dropped", "bad_records"):
    if st.get(k, 0):
        bad.append(f"stat {k} {st[k]}")
if st.get("probe_hits") != calls or st.get("probe_kept") != calls:
    bad.append(f"hits {st.get('probe_hits')} kept {st.get('probe_kept')}, calls {calls}")
if st.get("probe_attached") != 1:
    bad.append(f"probe_attached {st.get('probe_attached')}")
if got != want:
    bad.append(f"per path {got}, the program's {want}")
if other:
    bad.append(f"{len(other)} other stacks: {other[:2]}")
print("; ".join(bad) if bad else "ok")
EOF
}

# ---- paths ----------------------------------------------------------------------
if record paths -e "uprobe:$PP:target" -- paths 1000 2000 3000; then
	r=$(judge_paths paths path_a\;target path_b\;target path_c\;path_c_inner\;target)
	nargs=$(awk '$1 == "A" && $3 != 0' "$tmp/paths.args" | wc -l)
	[ "$r" = ok ] && [ "$nargs" -ne 0 ] && r="$nargs events with args (a uprobe has none)"
	[ "$r" = ok ] && pass paths || fail paths "$r"
fi

# ---- uretprobe ------------------------------------------------------------------
if record uretprobe -e "uretprobe:$PP:target" -- paths 100 200 300; then
	r=$(judge_paths uretprobe path_a path_b path_c\;path_c_inner)
	if [ "$r" = ok ]; then
		r=$(python3 - "$tmp/uretprobe.out" "$tmp/uretprobe.args" <<'EOF'
import sys
want = [int(l.split()[1]) for l in open(sys.argv[1]) if l.startswith("sum ")][0]
s, n, bad = 0, 0, 0
for l in open(sys.argv[2]):
    f = l.split()
    if f[0] != "A":
        continue
    n += 1
    if f[2] != "1":
        bad += 1
        continue
    v = int(f[3]) & 0xffffffff
    s += v - (1 << 32) if v >= 1 << 31 else v
print("ok" if not bad and s == want and n == 600 else
      f"{n} events, {bad} without one arg, return values sum to {s}, the program's {want}")
EOF
)
	fi
	[ "$r" = ok ] && pass uretprobe || fail uretprobe "$r"
fi

# ---- pending: stacks through functions whose uretprobe is pending -----------------
# uretprobes on path_c and path_c_inner, a uprobe on target: while target
# runs from path_c_inner, both return addresses above it on the stack are
# the kernel's [uprobes] trampoline; the walk takes the real ones from the
# task's return_instances. Every stack reaches _start through main: target's
# main;path_c;path_c_inner;target (C), path_a's and path_b's as in paths,
# path_c_inner's uretprobe main;path_c (the caller's, whose own return is
# the trampoline still), path_c's main; no [uprobes] or unnamed frame.
pending_check() { # NAME
	python3 - "$tmp/$1.folded" "$tmp/$1.stats" <<'EOF'
import re, sys
want = {";main;path_a;target": 10, ";main;path_b;target": 20,
        ";main;path_c;path_c_inner;target": 30, ";main;path_c": 1, ";main": 1}
got, bad = {}, []
for l in open(sys.argv[1]):
    stack, w = l.rsplit(" ", 1)
    frames = stack.split(";")
    if "_start" not in frames or "[uprobes]" in stack or "[unknown]" in stack:
        bad.append(stack[-160:])
        continue
    tail = stack[stack.index(";main"):] if ";main" in stack else stack
    got[tail] = got.get(tail, 0) + int(w)
st = {f[1]: f[2] for f in (l.split() for l in open(sys.argv[2])) if len(f) == 3 and f[0] == "stat"}
if st.get("lost", "0") != "0":
    bad.append("lost " + st["lost"])
if got != want:
    bad.append(f"stacks {got}, want {want}")
print("; ".join(bad) if bad else "ok")
EOF
}
if record pending -e "uretprobe:$PP:path_c" -e "uretprobe:$PP:path_c_inner" \
	-e "uprobe:$PP:target" -- paths 10 20 30; then
	r=$(pending_check pending)
	[ "$r" = ok ] && pass pending || fail pending "$r"
fi
# the same with no table in the kernel (USTACK_BPF_NO_TABLES, a test knob):
# every walk ends in a stack copy unwound in user space, whose slots the
# program gave their real return addresses back
if USTACK_BPF_NO_TABLES=1 record pending-copy -e "uretprobe:$PP:path_c" \
	-e "uretprobe:$PP:path_c_inner" -e "uprobe:$PP:target" -- paths 10 20 30; then
	r=$(pending_check pending-copy)
	copied=$(stat_of "$tmp/pending-copy.stats" copied)
	[ "$r" = ok ] && [ "${copied:-0}" -ne 62 ] && r="stat copied ${copied:-missing}: want all 62 events' stacks from copies"
	[ "$r" = ok ] && pass pending-copy || fail pending-copy "$r"
fi

# ---- usdt -----------------------------------------------------------------------
if record usdt -e "usdt:$PP:ustack_test:tick" -- usdt 500; then
	r=$(python3 - "$tmp/usdt.out" "$tmp/usdt.args" "$tmp/usdt.folded" <<'EOF'
import sys
want = {l.split()[0]: int(l.split()[1]) for l in open(sys.argv[1])}
n, s1, s2, bad = 0, 0, 0, 0
for l in open(sys.argv[2]):
    f = l.split()
    if f[0] != "A":
        continue
    n += 1
    if f[2] != "3" or f[5] != "5":
        bad += 1
        continue
    s1 += int(f[3])
    s2 += int(f[4])
folded = [l.rsplit(" ", 1) for l in open(sys.argv[3])]
on_path = sum(int(w) for st, w in folded if st.endswith(";main;path_usdt"))
ok = (n == want["usdt"] and not bad and s1 == want["arg1"] and s2 == want["arg2"] and
      on_path == n and len(folded) == 1)
print("ok" if ok else f"{n} events ({bad} without 3 args or with arg3 != 5), sums {s1} {s2}, "
      f"the program's {want}; {on_path} on main;path_usdt of {len(folded)} stacks")
EOF
)
	[ "$r" = ok ] && pass usdt || fail usdt "$r"
fi

# ---- rate -----------------------------------------------------------------------
if record rate --probe-rate 1000 -e "uprobe:$PP:target" -- spin 2; then
	r=$(python3 - "$tmp/rate.out" "$tmp/rate.stats" "$tmp/rate.data" "$USTACK" <<'EOF'
import subprocess, sys
out, stats, data, ustack = sys.argv[1:5]
calls = [int(l.split()[1]) for l in open(out) if l.startswith("calls ")][0]
st = {f[1]: int(float(f[2])) for f in (l.split() for l in open(stats))
      if len(f) == 3 and f[0] == "stat" and f[2].replace(".", "", 1).isdigit()}
bad = []
hits, kept, dropped = st.get("probe_hits", -1), st.get("probe_kept", -1), st.get("probe_rate_dropped", -1)
if hits != calls or hits != kept + dropped:
    bad.append(f"hits {hits}, kept {kept} + dropped {dropped}, calls {calls}")
if dropped <= 0:
    bad.append(f"probe_rate_dropped {dropped}")
if st.get("lost", 0):
    bad.append(f"lost {st['lost']}: the windows cannot be rebuilt")
# per CPU, the kept events' times (ns) from the raw report's event lines
raw = subprocess.run([ustack, "report", "-i", data, "--format", "raw"], capture_output=True,
                     text=True).stdout
times = {}
for l in raw.splitlines():
    f = l.split()
    if len(f) >= 5 and f[4].startswith("uprobe:") and f[1].startswith("["):
        times.setdefault(int(f[1].strip("[]")), []).append(float(f[3].rstrip(":")))
windows = []
for cpu, ts in times.items():
    ts.sort()
    start, n = None, 0
    for t in ts:
        if start is None or t >= start + 1.0 - 50e-6:
            if start is not None:
                windows.append(n)
            start, n = t, 0
        n += 1
    windows.append(n)
if sum(windows) != kept:
    bad.append(f"{sum(windows)} kept events in the trace, stat {kept}")
if windows and max(windows) > 1000:
    bad.append(f"a window kept {max(windows)} (> 1000): windows {windows}")
if dropped > 0 and 1000 not in windows:
    bad.append(f"hits were dropped but no window kept exactly 1000: windows {windows}")
print("; ".join(bad) if bad else "ok")
EOF
)
	[ "$r" = ok ] && pass rate || fail rate "$r"
fi

# ---- pid ------------------------------------------------------------------------
case_pid() {
	local sp rp end st
	"$PP" spin 120 >/dev/null &
	sp=$!; pids+=("$sp")
	"$USTACK" record -q --stats --backend bpf -e "uprobe:$PP:target" -p "$sp" -o "$tmp/pid.data" \
		>/dev/null 2>"$tmp/pid.stats" &
	rp=$!; pids+=("$rp")
	end=$((SECONDS + 60))
	until grep -q '\[uprobes\]' /proc/"$sp"/maps 2>/dev/null; do
		if [ $SECONDS -ge $end ] || ! kill -0 "$rp" 2>/dev/null; then
			fail pid "no probe hit within 60 s: $(grep -v '^stat' "$tmp/pid.stats" | head -2 | tr '\n' '|')"
			kill -KILL "$sp" "$rp" 2>/dev/null
			return
		fi
		sleep 0.1
	done
	sleep 0.5
	kill -INT "$rp"
	if ! wait "$rp"; then
		fail pid "record -p failed: $(grep -v '^stat' "$tmp/pid.stats" | head -3 | tr '\n' '|')"
		kill -KILL "$sp"
		return
	fi
	kill -KILL "$sp"; wait "$sp" 2>/dev/null
	"$USTACK" report -i "$tmp/pid.data" --format folded >"$tmp/pid.folded" 2>&1
	local hits kept dropped lost other
	hits=$(stat_of "$tmp/pid.stats" probe_hits) kept=$(stat_of "$tmp/pid.stats" probe_kept)
	dropped=$(stat_of "$tmp/pid.stats" probe_rate_dropped) lost=$(stat_of "$tmp/pid.stats" lost)
	other=$(grep -vc ';main;path_spin;target [0-9]*$' "$tmp/pid.folded")
	if [ -z "$hits" ] || [ "$hits" -eq 0 ] || [ "$hits" -ne $((kept + dropped)) ] || [ "$lost" != 0 ] || [ "$other" -ne 0 ]; then
		fail pid "hits $hits, kept $kept, dropped $dropped, lost $lost, $other stacks not main;path_spin;target"
	else
		pass pid
	fi
}
case_pid

# ---- gone, gone-int: no probe left behind ---------------------------------------
# has_page: a new process calling target 10 times gets the [uprobes] page
has_page() { [ "$("$PP" maps 10)" = "uprobes 1" ]; }
ours_in_tracefs() { grep -s -F "$PP" /sys/kernel/tracing/uprobe_events /sys/kernel/debug/tracing/uprobe_events; }
gone() {
	local name=$1 sig=$2 rpid end
	if has_page; then
		fail "$name" "[uprobes] page before recording"
		return
	fi
	"$USTACK" record -q -a --backend bpf -e "uprobe:$PP:target" -o "$tmp/$name.data" \
		>/dev/null 2>"$tmp/$name.err" &
	rpid=$!; pids+=("$rpid")
	end=$((SECONDS + 60))
	until has_page; do
		if ! kill -0 "$rpid" 2>/dev/null; then
			fail "$name" "record -a ended: $(grep -m1 . "$tmp/$name.err")"
			return
		fi
		if [ $SECONDS -ge $end ]; then
			kill -KILL "$rpid"; wait "$rpid" 2>/dev/null
			skip "$name" "no [uprobes] page in a probed process within 60 s: not observable here"
			return
		fi
		sleep 0.2
	done
	kill -"$sig" "$rpid"
	wait "$rpid" 2>/dev/null
	if has_page; then
		fail "$name" "after SIG$sig, a new process calling target still hits a uprobe ([uprobes] page)"
	elif ours_in_tracefs >/dev/null; then
		fail "$name" "tracefs uprobe_events: $(ours_in_tracefs | head -1)"
	else
		pass "$name"
	fi
}
gone gone KILL
gone gone-int INT

exit $((fails > 0))
