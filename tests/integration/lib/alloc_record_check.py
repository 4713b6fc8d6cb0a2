#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Judge a `record --alloc` trace of progs/alloc_paths.c (tests/integration/alloc.sh).

usage: alloc_record_check.py MODE PROGRAM_OUT EVENTS STATS
  MODE exact    (--alloc-mean 1) per path: allocations, bytes and live bytes
                exactly the program's, each weight = its size
  MODE children (--alloc-mean 1, the program a child the command execs) as
                exact, less the allocations recorded before the recorder had
                the new executable's mappings ("[unknown]" frames): at most
                that many may be missing from the paths
  MODE sampled  (a mean M > 1) per path: the estimates of bytes, allocations
                and live bytes within Z standard deviations of the program's
                figures, each weight s / (1 - exp(-s/M))
In both: every allocation of a path has the path's function as its leaf
frame and main as the next; every "free" has one arg and no stack; the
stats agree with the trace. Prints RESULT ok, or RESULT fail WHY.

The error of the sampled estimate: an allocation of s bytes is kept with
probability p = 1 - exp(-s/M), independently of the others (the countdown
an allocation meets is exponential whatever came before), and weighs
w = s/p when kept. The estimate of a path's bytes, the sum of w over its
kept allocations, is unbiased with variance sum over its allocations of
s^2 (1 - p) / p; of its allocation count (sum of w/s), sum of (1 - p) / p.
The live bytes' estimate sums over a subset of the allocations: its
variance is at most the bytes' one, used as its bound. Z = 5.5 per figure
(two-sided Gaussian tail 3.8e-8; nine figures: a right recorder fails
with probability below 4e-7; the sums are over thousands of kept
allocations, where the Gaussian is close). The drop counters (lost
records, rate-dropped hits, live-map drops) widen the bounds by what they
can hide.
"""
import math
import sys

Z = 5.5


def parse_prog(path):
    paths, mix = {}, {}
    for line in open(path):
        f = line.split()
        if f and f[0] == "path":
            paths[f[1]] = {"calls": int(f[3]), "bytes": int(f[5]), "live": int(f[7])}
        elif f and f[0] == "size":
            mix.setdefault(f[1], []).append((int(f[2]), int(f[3])))
    return paths, mix


def parse_stats(path):
    st = {}
    for line in open(path):
        f = line.split()
        if len(f) == 3 and f[0] == "stat":
            try:
                st[f[1]] = float(f[2])
            except ValueError:
                pass
    return st


def parse_events(path):
    mean, allocs, frees, errors = None, [], [], []
    # live: (pid, addr) -> index in allocs of the allocation not freed yet
    live = {}
    for line in open(path):
        f = line.rstrip("\n").split(" ")
        if f[0] == "D" and f[5] == "alloc":
            mean = int(f[4])
        elif f[0] == "A":
            a = {"pid": int(f[1]), "value": int(f[2]), "has": int(f[3]), "size": int(f[4]),
                 "addr": int(f[5], 16), "stack": f[6].split(";"), "live": True}
            allocs.append(a)
            live[(a["pid"], a["addr"])] = len(allocs) - 1
        elif f[0] == "F":
            pid, addr = int(f[1]), int(f[2], 16)
            frees.append(f)
            if f[3] != "1" or f[4] != "0":
                errors.append("free event with %s args, stack %s" % (f[3], f[4]))
            i = live.pop((pid, addr), None)
            if i is not None:
                allocs[i]["live"] = False
    return mean, allocs, frees, errors


def weight(size, mean):
    if mean <= 1 or size == 0:
        return size
    return size / -math.expm1(-size / mean)


def main():
    mode, prog, events, stats = sys.argv[1:5]
    paths, mix = parse_prog(prog)
    st = parse_stats(stats)
    mean, allocs, frees, errors = parse_events(events)
    if not paths or mean is None:
        print("RESULT fail no program figures or no alloc EVENT_DESC")
        return
    drops = st.get("lost", 0) + st.get("probe_rate_dropped", 0)
    live_drops = st.get("alloc_live_dropped", 0)
    # the program makes fewer than 60k allocations, the live map holds 1Mi
    # (the default): a drop there is a recorder's error, not load
    if live_drops:
        errors.append("alloc_live_dropped %d with a live map far from full" % live_drops)
    got = {p: {"calls": 0, "bytes": 0, "objs": 0.0, "est": 0, "live": 0} for p in paths}
    # children: the program is a child the command execs while recorded;
    # until the recorder has read the new executable's mappings its frames
    # cannot be named ("[unknown]": the BPF walk had no table for them).
    # Those allocations are in the trace, unattributed: as many of the
    # program's may be missing from its paths, no more
    unresolved = sum(1 for a in allocs if a["stack"][0] == "[unknown]") if mode == "children" else 0
    for a in allocs:
        leaf = a["stack"][0]
        if leaf not in paths:
            if any(fr in paths for fr in a["stack"][1:]) and not a["stack"][0] == "keep":
                errors.append("allocation under a path but leaf %s: %s" % (leaf, a["stack"][:4]))
            continue
        if len(a["stack"]) < 2 or a["stack"][1] != "main":
            errors.append("%s's caller is not main: %s" % (leaf, a["stack"][:4]))
        if not a["has"]:
            errors.append("allocation without a weight")
        want = weight(a["size"], mean)
        if abs(a["value"] - want) > 1:
            errors.append("weight %d of a %d-byte allocation, not %.0f" % (a["value"], a["size"], want))
        g = got[leaf]
        g["calls"] += 1
        g["bytes"] += a["size"]
        g["est"] += a["value"]
        g["objs"] += a["value"] / a["size"] if a["size"] else 1
        if a["live"]:
            g["live"] += a["value"]
    if st.get("alloc_sampled") != len(allocs) or st.get("alloc_frees") != len(frees):
        errors.append("stats alloc_sampled %s alloc_frees %s, trace %d and %d" %
                      (st.get("alloc_sampled"), st.get("alloc_frees"), len(allocs), len(frees)))
    total_calls = sum(p["calls"] for p in paths.values())
    total_bytes = sum(p["bytes"] for p in paths.values())
    if st.get("alloc_calls", 0) < total_calls or st.get("alloc_bytes", 0) < total_bytes:
        errors.append("stats alloc_calls %s alloc_bytes %s below the program's %d and %d" %
                      (st.get("alloc_calls"), st.get("alloc_bytes"), total_calls, total_bytes))
    for name, want in sorted(paths.items()):
        g = got[name]
        biggest = max(s for s, _ in mix[name])
        print("# %s: program calls %d bytes %d live %d; trace %s calls %d bytes %d "
              "estimate %d objects %.0f live %d" % (name, want["calls"], want["bytes"], want["live"],
                                                   mode, g["calls"], g["bytes"], g["est"], g["objs"],
                                                   g["live"]))
        if mode == "children":
            biggest = max(s for s, _ in mix[name])
            if not (want["calls"] - drops - unresolved <= g["calls"] <= want["calls"]):
                errors.append("%s: %d allocations, the program made %d (drops %d, unnamed %d)" %
                              (name, g["calls"], want["calls"], drops, unresolved))
            if not (want["bytes"] - (drops + unresolved) * biggest <= g["bytes"] <= want["bytes"]):
                errors.append("%s: %d bytes, the program allocated %d" % (name, g["bytes"], want["bytes"]))
            continue
        if mode == "exact":
            if not (want["calls"] - drops <= g["calls"] <= want["calls"]):
                errors.append("%s: %d allocations, the program made %d (drops %d)" %
                              (name, g["calls"], want["calls"], drops))
            if not (want["bytes"] - drops * biggest <= g["bytes"] <= want["bytes"]):
                errors.append("%s: %d bytes, the program allocated %d" % (name, g["bytes"], want["bytes"]))
            if abs(g["live"] - want["live"]) > (drops + live_drops) * biggest:
                errors.append("%s: %d bytes live at the end, the program had %d" %
                              (name, g["live"], want["live"]))
            continue
        var_b = var_n = 0.0
        for s, n in mix[name]:
            p = -math.expm1(-s / mean)
            var_b += n * s * s * (1 - p) / p
            var_n += n * (1 - p) / p
        sb, sn = math.sqrt(var_b), math.sqrt(var_n)
        slack = drops * weight(biggest, mean)
        print("#   sigma: bytes %.0f (%.1f%%), objects %.1f" % (sb, 100 * sb / want["bytes"], sn))
        if abs(g["est"] - want["bytes"]) > Z * sb + slack:
            errors.append("%s: estimated %d bytes, the program allocated %d (sigma %.0f)" %
                          (name, g["est"], want["bytes"], sb))
        if abs(g["objs"] - want["calls"]) > Z * sn + drops * weight(biggest, mean) / biggest:
            errors.append("%s: estimated %.0f allocations, the program made %d (sigma %.1f)" %
                          (name, g["objs"], want["calls"], sn))
        if abs(g["live"] - want["live"]) > Z * sb + slack + live_drops * weight(biggest, mean):
            errors.append("%s: estimated %d bytes live, the program had %d (sigma <= %.0f)" %
                          (name, g["live"], want["live"], sb))
    print("RESULT ok" if not errors else "RESULT fail " + "; ".join(errors[:4]))


main()
