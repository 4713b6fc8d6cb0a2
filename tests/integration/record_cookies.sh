#!/usr/bin/env bash
# Every kernel entry's cookie is its own (docs/deferred.md, "Cookies"): two
# threads' entries never share one, as readers stitch a user stack to its
# event by tid and cookie and the BPF backend pairs a stack copy with its
# event by cookie alone. The workload (tests/integration/progs/rec_migrate.c)
# moves its threads between CPUs all the time, so that a sample's walk
# often runs on another CPU than the sample's (the BPF backend walks a
# sample on the task's way back to user space); before the fix, 29-39 of
# ~1,200 entries per run here shared a cookie with another thread's.
#
# Lines (PASS/FAIL/SKIP record_cookies/BACKEND), BACKEND bpf and copy:
#   record -F 4999 -- rec_migrate 2000, then report -f raw: at least 200
#   user stacks; each cookie in one user stack record only; each event with
#   a cookie has that one record of its thread (but those `report --stats`
#   counts as without a user stack "after loss", when the trace has LOST
#   records: withheld by the recorder, docs/deferred.md); each cookie is
#   (odd counter << 32) | (CPU + 1) with CPU a possible CPU's number
#   (/sys/devices/system/cpu/possible).
# SKIP with one CPU allowed (nothing moves), or with the recorder's reason
# where bpf or perf events are not available.
set -u
T=record_cookies
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; }
skip() { echo "SKIP $T/$1: $2"; }

tmp=$(mktemp -d /tmp/ustack-cookies.XXXXXX)
cleanup() { [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"; }
trap cleanup EXIT
P=$tmp/rec_migrate
if ! $CC -O2 -pthread -o "$P" "$TOP/tests/integration/progs/rec_migrate.c"; then
	fail build "cannot compile tests/integration/progs/rec_migrate.c"
	exit 0
fi
if [ "$(nproc)" -lt 2 ]; then
	skip all "one CPU allowed: no thread can move"
	exit 0
fi

for backend in bpf copy; do
	out=$tmp/$backend
	if ! "$USTACK" record -F 4999 -q --backend $backend -o "$out.data" -- "$P" 2000 \
		>"$out.rec.out" 2>"$out.rec.err"; then
		if [ $backend = bpf ] && grep -qiE 'bpf|btf|not supported|permi' "$out.rec.err"; then
			skip $backend "backend bpf unavailable: $(head -n1 "$out.rec.err")"
		elif grep -qiE 'permi|perf_event|not supported' "$out.rec.err"; then
			skip $backend "perf events unavailable: $(head -n1 "$out.rec.err")"
		else
			fail $backend "ustack record: $(head -n3 "$out.rec.err" | tr '\n' ' ')"
		fi
		continue
	fi
	if ! "$USTACK" report -f raw -i "$out.data" -o "$out.raw" 2>"$out.rep.err"; then
		fail $backend "ustack report -f raw: $(head -n3 "$out.rep.err" | tr '\n' ' ')"
		continue
	fi
	"$USTACK" report -i "$out.data" --stats >"$out.stats" 2>&1
	if why=$(/usr/bin/python3 - "$out.raw" "$out.stats" <<'PY'
import re, sys
head = re.compile(rb"(.+)-(\d+) +\[(\d+|---)\] \S+ (\d+\.\d+): (.*)")
stacks, owner, events, bad = {}, {}, [], []
for line in open(sys.argv[1], "rb"):
    m = head.fullmatch(line.rstrip(b"\n"))
    if not m:
        continue
    tid, rest = int(m.group(2)), m.group(5)
    u = re.fullmatch(rb"<user stack unwind> cookie=([0-9a-f]+)", rest)
    e = re.fullmatch(rb"\S+ cookie=([0-9a-f]+)", rest)
    if u:
        c = int(u.group(1), 16)
        owner.setdefault(c, []).append(tid)
        stacks[(tid, c)] = stacks.get((tid, c), 0) + 1
    elif e and int(e.group(1), 16):
        events.append((tid, int(e.group(1), 16)))
# the highest CPU number the kernel may use (ids can be sparse: not the count)
ncpu = max(int(r.split("-")[-1]) for r in open("/sys/devices/system/cpu/possible").read().strip().split(",")) + 1
shared = {c: t for c, t in owner.items() if len(t) > 1}
for c in owner:
    if not (c >> 32) & 1 or not 1 <= (c & 0xffffffff) <= ncpu:
        bad.append(c)
unpaired = [ev for ev in events if stacks.get(ev) != 1]
# an event may lack its stack only where the trace says why: its entry
# was open when the kernel lost records (the stack is withheld: "after
# loss"), as many as the trace counts, and only with LOST records in it
st = open(sys.argv[2]).read()
lost = int(re.search(r"^lost records: (\d+)", st, re.M).group(1))
nostack = re.search(r"^events without user stack: .*", st, re.M).group(0)
after_loss = int(re.search(r"after loss (\d+)", nostack).group(1))
allowed = after_loss if lost else 0
if len(owner) < 200:
    print("only %d user stacks" % len(owner)); sys.exit(1)
if shared or bad or len(unpaired) > allowed:
    ex = sorted(shared.items())[:3]
    print("%d cookies in more than one user stack record %s; %d not (odd << 32 | cpu + 1): %s; "
          "%d of %d events without exactly one stack of their thread (allowed %d; --stats: %s, "
          "lost records %d)" %
          (len(shared), ["%x: threads %s" % (c, t) for c, t in ex], len(bad),
           ["%x" % c for c in bad[:3]], len(unpaired), len(events), allowed, nostack, lost))
    sys.exit(1)
print("%d user stacks, %d events: each cookie one thread's entry; %d withheld after %d lost" %
      (len(owner), len(events), len(unpaired), lost))
PY
	); then
		pass "$backend ($why)"
	else
		fail $backend "$why"
	fi
done
exit 0
