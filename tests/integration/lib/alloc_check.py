#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Expected allocation views of a trace from alloc_mktrace's own listing.

An allocation is live from its time until the next event (by time) of the
same pid and address, a free or another allocation (its free was lost); a
free at the same nanosecond comes after the allocation. Written as a walk
over each address's events in time order, unlike report_alloc.c's
latest-event table, so that the two can disagree.

usage: alloc_check.py LIST folded VIEW [T] | stats | text | pprof
       alloc_check.py LIST pprof-raw RAW   (go tool pprof -raw, summed per stack)
"""
import sys
from collections import defaultdict

COMM = {10: "app", 20: "other"}
STACK = {0: ["kfunc_a"], 1: ["kfunc_a", "kfunc_b"], 2: ["kfunc_a", "kfunc_c"], 3: ["kfunc_d"]}


def parse(path):
    evs = []
    for line in open(path):
        kind, *kv = line.split()
        d = dict(x.split("=", 1) for x in kv)
        for k in ("t", "pid", "tid", "cpu", "stack", "size", "value"):
            if k in d:
                d[k] = int(d[k])
        if "addr" in d:
            d["addr"] = int(d["addr"], 16)
        d["kind"] = kind
        evs.append(d)
    return evs


def live_set(evs, at=None):
    by_addr = defaultdict(list)
    for e in evs:
        if e["kind"] in ("alloc", "free") and (at is None or e["t"] <= at):
            by_addr[(e["pid"], e["addr"])].append(e)
    live = []
    for lst in by_addr.values():
        cur = None
        for e in sorted(lst, key=lambda e: (e["t"], e["kind"] == "free")):
            cur = e if e["kind"] == "alloc" else None
        if cur is not None:
            live.append(cur)
    return live


def rnd(x):
    return int(x + 0.5) if x > 0 else 0


def folded(evs, view, at):
    allocs = [e for e in evs if e["kind"] == "alloc"]
    if view.startswith("inuse"):
        allocs = live_set(evs, at)
    sums = defaultdict(float)
    for e in allocs:
        key = ";".join([COMM[e["pid"]]] + STACK[e["stack"]])
        sums[key] += e["value"] / e["size"] if view.endswith("objects") else e["value"]
    for k in sorted(sums):
        if rnd(sums[k]):
            print(k, rnd(sums[k]))


def pprof(evs):
    live = {id(e) for e in live_set(evs)}
    rows = defaultdict(lambda: [0.0, 0, 0.0, 0])
    for e in evs:
        if e["kind"] != "alloc":
            continue
        r = rows[(e["stack"], e["tid"])]
        r[0] += e["value"] / e["size"]
        r[1] += e["value"]
        if id(e) in live:
            r[2] += e["value"] / e["size"]
            r[3] += e["value"]
    per = defaultdict(lambda: [0, 0, 0, 0])
    for (stack, _), r in rows.items():
        p = per[";".join(STACK[stack])]
        for i, v in enumerate((rnd(r[0]), r[1], rnd(r[2]), r[3])):
            p[i] += v
    print("alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]")
    for k in sorted(per):
        print(k, *per[k])


def pprof_raw(path):
    lines = open(path).read().split("\n")
    types = lines[lines.index("Samples:") + 1].strip()
    samples, locs, sect = [], {}, None
    for line in lines:
        s = line.strip()
        if s in ("Samples:", "Locations", "Mappings"):
            sect = s
            continue
        if sect == "Samples:" and ":" in s and s[0].isdigit():
            vals, ids = s.split(":", 1)
            samples.append(([int(v) for v in vals.split()], ids.split()))
        elif sect == "Locations" and s and s.split(":")[0].isdigit():
            n, rest = s.split(":", 1)
            locs[n] = rest.split()[2]
    per = defaultdict(lambda: [0, 0, 0, 0])
    for vals, ids in samples:
        p = per[";".join(reversed([locs[i] for i in ids]))]
        for i in range(4):
            p[i] += vals[i]
    print(types)
    for k in sorted(per):
        print(k, *per[k])


def main():
    evs = parse(sys.argv[1])
    mode = sys.argv[2]
    if mode == "folded":
        folded(evs, sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else None)
    elif mode == "stats":
        good = [e for e in evs if e["kind"] in ("alloc", "free")]
        print("allocations: %d kept, %d frees, %d live at the end, %d without size and address" % (
            sum(e["kind"] == "alloc" for e in good), sum(e["kind"] == "free" for e in good),
            len(live_set(evs)), sum(e["kind"] == "noargs" for e in evs)))
    elif mode == "text":
        out = ["%s-%d [%03d] ..... %d.%06d: alloc %d bytes cookie=0 size=%d addr=0x%x" % (
            COMM[e["pid"]], e["tid"], e["cpu"], e["t"] // 10**9, e["t"] % 10**9 // 1000,
            e["value"], e["size"], e["addr"]) for e in live_set(evs)]
        print("\n".join(sorted(out)))
    elif mode == "pprof":
        pprof(evs)
    elif mode == "pprof-raw":
        pprof_raw(sys.argv[3])


main()
