#!/usr/bin/env python3
"""The bpftrace peer's figures for bench/offcpu/run.sh, on the same oracle
as ustack's (tests/integration/lib/offcpu_check.py share):

  bt_share.py LOG BTOUT SYMS

LOG: offcpu_paths' log (its "S PATH CALLS WALL_NS OFF_NS" lines: the time
each path's thread spent switched out in its calls, wall - CPU). BTOUT:
offcputime.bt's output (@off[comm, kstack, ustack]: ns, @intervals). SYMS:
"ADDRESS<TAB>SYMBOL+OFF<TAB>SOURCE" for each user address of BTOUT, named
from the live process (eu-addr2line -S -p PID on ADDRESS - 1: a return
address belongs to its call). A user stack is right when offcpu_check's
stack_why accepts it for the thread's path, as for ustack's intervals: the
thread's entry, ..., path_NAME, do_NAME_wait, then only libc.

Prints "share=S fn_share=F bt_intervals=N": S = the ns of the p-NAME
threads' entries with a right stack over the ns the program says they spent
switched out; F the same for entries whose stack holds path_NAME anywhere
(the time a reader would find under the right function, whole stack or
not).
An entry cannot be placed inside one call (bpftrace sums them), but a right
stack is only taken inside a call.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../tests/integration/lib"))
from offcpu_check import stack_why  # noqa: E402

PATHS = ("sleep", "cond", "pipe", "mutex", "ping", "pong")
ENTRY = re.compile(r"@off\[([^,\n]*), (.*?)\]: (\d+)$", re.S | re.M)


def main():
    log, btout, syms = sys.argv[1:4]
    off = {}
    for line in open(log):
        w = line.split()
        if len(w) >= 5 and w[0] == "S" and w[1] in PATHS:
            off[w[1]] = int(w[4])
    names = {}
    for line in open(syms):
        w = line.rstrip("\n").split("\t")
        if len(w) >= 2:
            names[w[0]] = re.sub(r"(@.*)?\+0x[0-9a-f]+$", "", w[1])
    text = open(btout, errors="replace").read()
    m = re.search(r"^@intervals: (\d+)$", text, re.M)
    intervals = int(m.group(1)) if m else 0
    right = fn = 0
    for comm, body, ns in ENTRY.findall(text):
        path = comm[2:] if comm.startswith("p-") else None
        if path not in off:
            continue
        _, _, ustack = body.partition("\n, ")
        # bpftrace prints the innermost frame first; stack_why wants the root
        frames = [names.get(f.strip(), f.strip()) for f in ustack.splitlines() if f.strip()]
        if not stack_why(path, frames[::-1], "off-cpu"):
            right += int(ns)
        if "path_" + path in frames:
            fn += int(ns)
    tot = sum(off.values())
    print(f"share={right / tot if tot else 0:.4f} fn_share={fn / tot if tot else 0:.4f} bt_intervals={intervals}", end=" ")


if __name__ == "__main__":
    main()
