#!/usr/bin/env bash
# The Python frames of a waiting CPython process read by `ustack snapshot`
# against gdb with CPython's extension (`thread apply all py-bt`,
# python3.11-dbg), side by side in one run, alternating, N rounds (default
# 10): wall time of the whole command as a user runs it, medians [min-max].
# py-spy is not in the registries this project reaches (Debian's archive and
# npm; PyPI and crates.io are not reachable here), so `py-spy dump` is not
# measured. Also /bin/true, the cost of starting any process on this machine,
# which every whole-command time includes. The workload is
# tests/integration/progs/py_paths.py under Debian's /usr/bin/python3.11
# (2 threads, 17 Python frames), checked equal between the tools once
# (tests/integration/lib/pybt_compare.py). gdb's time is mostly reading
# python3.11's debug information (installed by python3.11-dbg): it depends
# on that, ustack's does not (it reads no DWARF for --python-only).
set -u
N=${1:-10}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
USTACK=${USTACK:-$TOP/build/ustack}
PY=/usr/bin/python3.11
EXT=/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py
for need in "$USTACK" "$PY" "$EXT"; do
	[ -e "$need" ] || { echo "bench/python/snapshot: $need missing (make; apt-get install python3.11-dbg)" >&2; exit 1; }
done
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -KILL $pid 2>/dev/null; rm -rf "$tmp"' EXIT
mkfifo "$tmp/fifo"
"$PY" "$TOP/tests/integration/progs/py_paths.py" "$tmp/dump" "$tmp/fifo" &
pid=$!
for _ in $(seq 3000); do [ -e "$tmp/dump" ] && break; sleep 0.01; done
[ -e "$tmp/dump" ] || { echo "bench/python/snapshot: the workload did not start" >&2; exit 1; }

gdb_bt() { gdb -p $pid -batch -nx -iex "add-auto-load-safe-path $EXT" -iex "source $EXT" -ex 'thread apply all py-bt' </dev/null; }
"$USTACK" snapshot -p $pid --python-only >"$tmp/u.txt" 2>/dev/null
gdb_bt >"$tmp/g.txt" 2>&1
/usr/bin/python3 "$TOP/tests/integration/lib/pybt_compare.py" "$tmp/g.txt" "$tmp/u.txt" >"$tmp/cmp" ||
	{ cat "$tmp/cmp"; echo "bench/python/snapshot: the tools disagree: no figure" >&2; exit 1; }

ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N); echo "scale=3; ($t1 - $t0) / 1000000" | bc; }
: >"$tmp/times"
for i in $(seq "$N"); do
	echo "true $(ms /bin/true)" >>"$tmp/times"
	echo "ustack-py-only $(ms "$USTACK" snapshot -p $pid --python-only)" >>"$tmp/times"
	echo "ustack-mixed $(ms "$USTACK" snapshot -p $pid)" >>"$tmp/times"
	echo "gdb-py-bt $(ms gdb_bt)" >>"$tmp/times"
done
echo x >"$tmp/fifo"
wait $pid
pid=
echo "# $N rounds, alternating; $(nproc) CPUs; $(uname -r); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
/usr/bin/python3 - "$tmp/times" <<'PY'
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    k, v = line.split()
    t.setdefault(k, []).append(float(v))
base = statistics.median(t["true"])
print("| command | median ms [min-max] | median minus /bin/true |")
print("|---|---:|---:|")
names = {"true": "/bin/true (process start)", "ustack-py-only": "ustack snapshot --python-only",
         "ustack-mixed": "ustack snapshot (native + Python, names)", "gdb-py-bt": "gdb -batch 'thread apply all py-bt'"}
for k in ["true", "ustack-py-only", "ustack-mixed", "gdb-py-bt"]:
    v = t[k]
    print("| %s | %.2f [%.2f-%.2f] | %.2f |" % (names[k], statistics.median(v), min(v), max(v), statistics.median(v) - base))
u, g = statistics.median(t["ustack-py-only"]), statistics.median(t["gdb-py-bt"])
print("gdb / ustack --python-only: %.0fx whole command, %.0fx without the process start" % (g / u, (g - base) / max(u - base, 0.001)))
PY
