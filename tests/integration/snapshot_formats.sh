#!/usr/bin/env bash
# ustack snapshot --format folded|json on a 33-thread process: folded lines
# parse as FlameGraph input and count every thread; json parses (python3's
# json module as the oracle) and agrees with the raw format's pcs.
set -u
: "${USTACK:?}" "${CHECK_DIR:?}"
CC=${CC:-cc}
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
if ! command -v python3 >/dev/null; then echo "SKIP snapshot_formats: python3 missing"; exit 0; fi
# syscalls PID, wait_blocked PID NRS [N]
. "${TOP:-$PWD}/tests/integration/lib/wait_blocked.sh"
# 32 threads in pthread_cond_wait, the main thread in pause(). "ready" once
# main, holding the mutex, counts 32: each worker counted under the mutex
# and let go of it only inside pthread_cond_wait.
cat > "$tmp/t.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int waiting;
static void *w(void *a) { pthread_mutex_lock(&m); waiting++; for (;;) pthread_cond_wait(&cv, &m); return a; }
int main(void)
{
	pthread_t t;
	int n = 0;

	for (int i = 0; i < 32; i++) pthread_create(&t, 0, w, 0);
	while (n < 32) { usleep(1000); pthread_mutex_lock(&m); n = waiting; pthread_mutex_unlock(&m); }
	printf("ready\n"); fflush(stdout);
	pause();
}
C
$CC -O2 -pthread "$tmp/t.c" -o "$tmp/t" || { echo "FAIL snapshot_formats: cannot build target"; exit 1; }
"$tmp/t" >"$tmp/t.out" & pid=$!
# then every thread blocked for good: futex (202) or pause (34)
for _ in $(seq 3000); do grep -q ready "$tmp/t.out" && break; sleep 0.01; done
if ! grep -q ready "$tmp/t.out" || ! wait_blocked "$pid" '202|34' 33; then
	echo "FAIL snapshot_formats: target not ready: $(syscalls "$pid" | awk '{ print $1, $2 }' | tr '\n' ' ')"; exit 1
fi
"$USTACK" snapshot -p "$pid" --format folded > "$tmp/folded" 2>"$tmp/err" || { echo "FAIL snapshot_folded: exit $?: $(cat "$tmp/err")"; exit 1; }
bad=$(grep -cvE '^[^ ;]+(;[^ ;]+)* [0-9]+$' "$tmp/folded")
sum=$(awk '{s += $NF} END {print s + 0}' "$tmp/folded")
if [ "$bad" -eq 0 ] && [ "$sum" -eq 33 ] && grep -q ';pthread_cond_wait;' "$tmp/folded"; then
	echo "PASS snapshot_folded: $(wc -l < "$tmp/folded") lines, counts sum to $sum threads"
else
	echo "FAIL snapshot_folded: $bad malformed lines, counts sum $sum (want 33)"; cat "$tmp/folded"
fi
# the target sleeps: json and raw taken one after the other see the same pcs
"$USTACK" snapshot -p "$pid" --format json > "$tmp/json" 2>"$tmp/err" || { echo "FAIL snapshot_json: exit $?"; exit 1; }
"$USTACK" snapshot -p "$pid" --format raw > "$tmp/raw" 2>>"$tmp/err"
if python3 - "$tmp/json" "$tmp/raw" "$pid" 2>"$tmp/py.err" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pid"] == int(sys.argv[3]), d["pid"]
assert len(d["threads"]) == 33, len(d["threads"])
raw, tid = {}, None
for line in open(sys.argv[2]):
    if line.startswith("TID "):
        tid = int(line.split()[1]); raw[tid] = []
    elif line.startswith("#"):
        raw[tid].append(line.split()[1])
for t in d["threads"]:
    pcs = [f["pc"] for f in t["frames"]]
    assert pcs == raw[t["tid"]], (t["tid"], pcs, raw[t["tid"]])
    assert t["frames"][0]["method"] == "regs"
    assert all(f["method"] in ("sframe", "cfi", "fp", "signal") for f in t["frames"][1:])
PY
then echo "PASS snapshot_json: 33 threads, pcs identical to --format raw"
else echo "FAIL snapshot_json: $(grep -v '^ ' "$tmp/py.err" | tail -1 | cut -c1-400)"; fi

# A process whose main thread called pthread_exit(): the zombie leader has
# no stack; the two live threads must still be unwound (exit 0).
cat > "$tmp/z.c" <<'C'
#include <pthread.h>
#include <unistd.h>
static void *f(void *a) { for (;;) pause(); return a; }
int main(void) { pthread_t t; pthread_create(&t, 0, f, 0); pthread_create(&t, 0, f, 0); pthread_exit(0); }
C
$CC -O2 -pthread "$tmp/z.c" -o "$tmp/z" || { echo "FAIL snapshot_zombie_leader: cannot build"; exit 1; }
kill "$pid" 2>/dev/null
"$tmp/z" & pid=$!
# the leader a zombie (its syscall file says -1), both threads blocked in
# pause (34), at most 30 s
for _ in $(seq 3000); do grep -q '^State:.*Z' /proc/$pid/status 2>/dev/null && break; sleep 0.01; done
if ! grep -q '^State:.*Z' /proc/$pid/status 2>/dev/null || ! wait_blocked "$pid" '34|-1' 3 ||
   [ "$(syscalls "$pid" | awk '$2 == 34' | wc -l)" -ne 2 ]; then
	echo "FAIL snapshot_zombie_leader: target not ready: $(grep State /proc/$pid/status); $(syscalls "$pid" | awk '{ print $1, $2 }' | tr '\n' ' ')"; exit 1
fi
out=$("$USTACK" snapshot -p "$pid" 2>"$tmp/err"); rc=$?
n=$(grep -c '^TID ' <<<"$out")
if [ $rc -eq 0 ] && [ "$n" -eq 2 ] && [ "$(grep -c ' f+0x' <<<"$out")" -eq 2 ] && grep -q "thread $pid exited" "$tmp/err"; then
	echo "PASS snapshot_zombie_leader: 2 live threads unwound, the zombie leader reported"
else
	echo "FAIL snapshot_zombie_leader: rc=$rc, $n threads; stderr: $(cat "$tmp/err")"; echo "$out"
fi

# --format pprof is refused with --core (its mappings come from the live
# process), and --help says so rather than letting the user find out
help=$("$USTACK" snapshot --help 2>&1)
"$USTACK" snapshot --core "$tmp/none.core" --format pprof -o "$tmp/c.pb.gz" 2>"$tmp/err"; rc=$?
if [ $rc -eq 2 ] && grep -q 'pprof is not available with --core' "$tmp/err" &&
   grep -A2 'pprof: gzipped' <<<"$help" | grep -q 'not with --core'; then
	echo "PASS snapshot_pprof_core: refused with --core (status 2), and --help says so"
else
	echo "FAIL snapshot_pprof_core: status $rc, '$(cat "$tmp/err")'; help: $(grep -A2 'pprof: gzipped' <<<"$help" | tr '\n' '|')"
fi
