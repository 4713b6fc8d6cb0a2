#!/usr/bin/env bash
# Probe events under `ustack record --backend copy` (perf's uprobe PMU, the
# stack copy unwound in user space), against the test program's own
# figures. Each PASS/FAIL line is `probes_copy/CASE`; without perf's
# uprobe PMU or the rights to use it: `SKIP probes_copy/all: REASON`.
#
# progs/probe_copy.c reaches pc_leaf() through path_a() and path_b(), whose
# hits have the same registers and the same word at sp (only the deeper
# stack differs: a hit joined to the one before gets the other's stack),
# and prints its own counts, return-value sum and USDT argument sum.
# progs/probe_copy_events.c prints each EVENT with its args and stack.
#
#   paths    uprobe:pc_leaf, usdt:pc:leaf, usdt:pc:redzone, 300 calls:
#            per path (path_a / path_b) the uprobe's and usdt's counts equal
#            the program's (lost records: the recorder's LOST count is the
#            slack, stated); every pc:leaf hit carries x, -x - 1 and the
#            short in memory (the multiset of x is 0..299, the sum of all
#            args the program's); every pc:redzone hit carries no args
#            (its operand is below sp, outside the copy) and the recorder
#            says how many; --stats: 3 places, hits = kept = events
#   ret      uretprobe:pc_leaf: the return values are exactly {7x + 1},
#            their sum the program's; stacks from pc_mid per path
#   gone/end gone/int gone/kill
#            `record -p` of a running program: the probe is seen installed
#            (int3 at pc_leaf's first byte in /proc/PID/mem: a probe left
#            behind keeps it there), then ustack ends by --duration, SIGINT
#            or SIGKILL, and the byte is the file's again; tracefs
#            uprobe_events names nothing of ours
#   alloc    --alloc --backend copy: the one-line refusal, exit status 1
#
# Env (from make check): USTACK CC TOP CHECK_DIR SAN_FLAGS BASE_CFLAGS
# LIB_LDLIBS; KEEP_TMP=1 keeps the files.
set -u
T=probes_copy
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
: "${SAN_FLAGS:=-fsanitize=address,undefined}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf -ldw -lelf}"
: "${BASE_CFLAGS:=-std=gnu11 -g -O2 -D_GNU_SOURCE}"
fails=0
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $T/$1: $2"; }

[ -x "$USTACK" ] || { fail setup "no $USTACK"; exit 1; }
if [ "$(id -u)" -ne 0 ]; then
	skip all "needs root (uprobes through perf_event_open)"
	exit 0
fi
if ! [ -r /sys/bus/event_source/devices/uprobe/type ]; then
	skip all "no perf uprobe PMU (/sys/bus/event_source/devices/uprobe; CONFIG_UPROBE_EVENTS)"
	exit 0
fi
echo "#include <sys/sdt.h>" | ${CC:-gcc} -E - >/dev/null 2>&1 ||
	{ skip all "no <sys/sdt.h> (systemtap-sdt-dev)"; exit 0; }
tmp=$(mktemp -d /tmp/ustack-probes-copy-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	[ -n "${KEEP_TMP:-}" ] && echo "# files kept in $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
P=$TOP/tests/integration/progs
# -fno-ipa-icf: path_a and path_b stay two functions
if ! $CC -O2 -g -fno-ipa-icf -Wall -o "$tmp/pc" "$P/probe_copy.c" 2>"$tmp/build.log" ||
   ! $CC $BASE_CFLAGS $SAN_FLAGS -I"$TOP/include" -o "$tmp/events" "$P/probe_copy_events.c" \
	"$TOP/$CHECK_DIR/libustack.a" $LIB_LDLIBS 2>>"$tmp/build.log"; then
	fail build "$(head -5 "$tmp/build.log" | tr '\n' '|')"
	exit 1
fi
N=300

# rec NAME RECORD_OPTS... -- ARGS: `record --backend copy --stats` of the
# program; its output, stderr and events in $tmp/NAME.{out,err,ev}
rec() {
	local name=$1; shift
	local ro=()
	while [ "$1" != -- ]; do ro+=("$1"); shift; done
	shift
	if ! "$USTACK" record --stats --backend copy "${ro[@]}" -o "$tmp/$name.data" \
		-- "$tmp/pc" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"; then
		fail "$name" "record failed: $(grep -v '^stat ' "$tmp/$name.err" | head -3 | tr '\n' '|')"
		return 1
	fi
	if ! "$tmp/events" "$tmp/$name.data" >"$tmp/$name.ev" 2>"$tmp/$name.everr"; then
		fail "$name" "probe_copy_events: $(head -3 "$tmp/$name.everr" | tr '\n' '|')"
		return 1
	fi
}

# judge NAME CASE: the checker below on $tmp/NAME.*
judge() {
	local out
	out=$(python3 - "$2" "$tmp/$1" "$N" <<'PYEOF'
import collections, re, sys
case, base, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
own = dict(kv.split("=") for kv in open(base + ".out").read().split())
own = {k: int(v) for k, v in own.items()}
err = open(base + ".err").read()
stats = dict((l.split()[1], l.split()[2]) for l in err.splitlines() if l.startswith("stat "))
ev = [l.rstrip("\n").split(" ", 4) for l in open(base + ".ev") if l.startswith("E ")]
lost = int(stats["lost"])
bad = []
def short(v):
    v &= 0xffff
    return v - 0x10000 if v & 0x8000 else v
if "throttled" in err:
    bad.append("perf throttled the probe events: %s" % [l for l in err.splitlines() if "throttled" in l])
def per_path(name, tail, want):
    got = collections.Counter()
    for e in ev:
        if e[1] != name:
            continue
        m = [p for p in ("a", "b") if e[4].endswith("main;path_%s;%s" % (p, tail))]
        got[m[0] if m else "other:" + e[4]] += 1
    for p in ("a", "b"):
        # a lost record costs at most one event each (stated slack)
        if not (want[p] - lost <= got[p] <= want[p]):
            bad.append("%s path_%s: %d events, the program made %d calls (lost %d)"
                       % (name, p, got[p], want[p], lost))
    other = {k: v for k, v in got.items() if k.startswith("other:")}
    if sum(other.values()) > lost:
        bad.append("%s: %d events on other stacks (lost %d): %s"
                   % (name, sum(other.values()), lost, list(other.items())[:3]))
    return got
want = {"a": own["a"], "b": own["b"]}
if case == "paths":
    per_path("uprobe:%s/pc:pc_leaf" % base.rsplit("/", 1)[0], "pc_mid;pc_leaf", want)
    leaf = "usdt:%s/pc:pc:leaf" % base.rsplit("/", 1)[0]
    per_path(leaf, "pc_mid;pc_leaf", want)
    xs, total = [], 0
    for e in ev:
        if e[1] != leaf:
            continue
        a = [int(v) for v in e[3].split(",")] if e[3] != "-" else []
        if len(a) != 3 or a[1] != -a[0] - 1 or a[2] != short(a[0] * 3 - 100):
            bad.append("pc:leaf args %s: want x, -x-1, (short)(3x-100)" % e[3])
            break
        xs.append(a[0]); total += sum(a)
    if lost == 0 and (sorted(xs) != list(range(n)) or total != own["argsum"]):
        bad.append("pc:leaf: x values %s..., arg sum %d, the program's %d"
                   % (sorted(xs)[:5], total, own["argsum"]))
    rz = [e for e in ev if e[1].endswith(":pc:redzone")]
    if len(rz) < n - lost or len(rz) > n or any(e[3] != "-" for e in rz):
        bad.append("pc:redzone: %d events, args %s (want %d, none)"
                   % (len(rz), sorted(set(e[3] for e in rz))[:3], n))
    m = re.search(r"(\d+) probe hits written without their arguments", err)
    if not m or int(m.group(1)) != len(rz):
        bad.append("no line saying %d hits lost their arguments" % len(rz))
    if stats["probe_attached"] != "3" or int(stats["probe_hits"]) != len(ev) or \
       stats["probe_kept"] != stats["probe_hits"]:
        bad.append("stats: attached %s hits %s kept %s, %d events"
                   % (stats["probe_attached"], stats["probe_hits"], stats["probe_kept"], len(ev)))
elif case == "ret":
    per_path("uretprobe:%s/pc:pc_leaf" % base.rsplit("/", 1)[0], "pc_mid", want)
    vals = [int(e[3]) if e[3] != "-" and "," not in e[3] else None for e in ev]
    if None in vals:
        bad.append("a uretprobe event without exactly one arg")
    elif lost == 0 and (sorted(vals) != [7 * x + 1 for x in range(n)] or sum(vals) != own["retsum"]):
        bad.append("return values %s..., sum %d, the program's %d"
                   % (sorted(vals)[:5], sum(vals), own["retsum"]))
print("lost %d, events %d" % (lost, len(ev)))
print("RESULT " + ("ok" if not bad else "; ".join(bad)[:600]))
PYEOF
)
	if [ "${out##*RESULT }" = ok ]; then
		pass "$1"
	else
		fail "$1" "${out##*RESULT }"
	fi
}

# ---- paths, ret -------------------------------------------------------------
if rec paths -e "uprobe:$tmp/pc:pc_leaf" -e "usdt:$tmp/pc:pc:leaf" \
	-e "usdt:$tmp/pc:pc:redzone" -- "$N"; then
	judge paths paths
fi
if rec ret -e "uretprobe:$tmp/pc:pc_leaf" -- "$N"; then
	judge ret ret
fi

# ---- gone: nothing left behind however ustack ends ----------------------------
# byte_at PID OFF: pc_leaf's first byte as the process sees it (hex), through
# /proc/PID/mem at the mapping of $tmp/pc that holds file offset OFF
byte_at() {
	python3 - "$1" "$2" "$tmp/pc" <<'PYEOF'
import os, sys
pid, off, path = int(sys.argv[1]), int(sys.argv[2], 0), os.path.realpath(sys.argv[3])
for line in open("/proc/%d/maps" % pid):
    f = line.split()
    if len(f) >= 6 and f[5] == path:
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        moff = int(f[2], 16)
        if moff <= off < moff + hi - lo:
            with open("/proc/%d/mem" % pid, "rb") as m:
                m.seek(lo + off - moff)
                print(m.read(1).hex())
            sys.exit(0)
sys.exit(1)
PYEOF
}
# wait_byte PID OFF WANT [ne]: until the byte is (or, with ne, is not) WANT; 20 s
wait_byte() {
	local end=$((SECONDS + 20)) b
	while [ $SECONDS -lt $end ]; do
		b=$(byte_at "$1" "$2")
		if [ "${4:-}" = ne ]; then [ "$b" != "$3" ] && return 0; else [ "$b" = "$3" ] && return 0; fi
		sleep 0.1
	done
	echo "$b"
	return 1
}
off=$("$USTACK" probe "uprobe:$tmp/pc:pc_leaf" 2>"$tmp/probe.err" | awk '{ print $3 }')
for how in end int kill; do
	name=gone/$how
	"$tmp/pc" 100000000 >/dev/null &
	tpid=$!; pids+=("$tpid")
	orig=$(wait_byte "$tpid" "$off" "" ne && byte_at "$tpid" "$off")
	if [ -z "$off" ] || [ -z "$orig" ] || [ "$orig" = cc ]; then
		fail "$name" "pc_leaf's first byte not readable (offset '$off': $(head -1 "$tmp/probe.err"), byte '$orig')"
		continue
	fi
	dur=()
	[ "$how" = end ] && dur=(--duration 3)
	"$USTACK" record --backend copy -q -p "$tpid" "${dur[@]}" -e "uprobe:$tmp/pc:pc_leaf" \
		-o "$tmp/gone.$how.data" >/dev/null 2>"$tmp/gone.$how.err" &
	rpid=$!; pids+=("$rpid")
	if ! wait_byte "$tpid" "$off" cc >/dev/null; then
		fail "$name" "the probe never showed in the process (byte $(byte_at "$tpid" "$off"), not cc): the check cannot tell; $(head -2 "$tmp/gone.$how.err" | tr '\n' '|')"
		kill -KILL "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null
		continue
	fi
	case $how in
	int) kill -INT "$rpid" ;;
	kill) kill -KILL "$rpid" ;;
	esac
	wait "$rpid" 2>/dev/null
	now=$(byte_at "$tpid" "$off")
	left=$(grep -c "$tmp/pc" /sys/kernel/tracing/uprobe_events 2>/dev/null)
	if [ "$now" != "$orig" ]; then
		fail "$name" "after ustack ended pc_leaf's first byte is $now, the file's is $orig: a probe left behind"
	elif [ "${left:-0}" != 0 ]; then
		fail "$name" "tracefs uprobe_events names $tmp/pc $left times"
	else
		pass "$name"
	fi
	kill -KILL "$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null
done

# ---- alloc: refused in one line ---------------------------------------------------
"$USTACK" record --backend copy --alloc -o "$tmp/alloc.data" -- /bin/true >/dev/null 2>"$tmp/alloc.err"
rc=$?
want="ustack: --alloc needs the bpf backend (its byte sampling runs in the kernel): use --backend bpf or auto"
if [ $rc = 1 ] && [ "$(cat "$tmp/alloc.err")" = "$want" ]; then
	pass alloc
else
	fail alloc "exit $rc, stderr '$(head -3 "$tmp/alloc.err" | tr '\n' '|')'"
fi
exit $((fails > 0))
