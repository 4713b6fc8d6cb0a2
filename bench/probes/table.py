#!/usr/bin/env python3
"""The tables of bench/probes/run.sh from its results file (one line per
measurement: "TOOL WORKLOAD key=value ..."): per workload and tool, medians
[min-max] over the rounds; slowdown: each round's work over the bare work
of the same round, where every round has both. us/hit = (work - the bare work's median) / hits,
against bare-small for perf (run at the smaller size)."""
import collections
import statistics
import sys

NAMES = {
    "bare": "bare", "bare-small": "bare, perf's size",
    "bpf": "ustack record --backend bpf -e uprobe:", "copy": "ustack record --backend copy -e uprobe:",
    "alloc": "ustack record --alloc (preload, default mean)",
    "allocu": "ustack record --alloc --alloc-via=uprobes",
    "bt": "bpftrace @[ustack] = count()", "btfp": "bpftrace, frame pointers",
    "perf": "perf probe + perf record --call-graph dwarf",
}
TITLES = {"loop": "loop: a probed function (no frame pointers)",
          "map": "map: std::map churn, probes on malloc",
          "mapl": "mapl: the same churn, ten times longer (--alloc alone)",
          "py": "py: python3 building dicts"}


def fmt(vals, f="%.0f"):
    vals = sorted(v for v in vals if v is not None)
    if not vals:
        return "-"
    if len(vals) == 1:
        return f % vals[0]
    return (f + " [" + f + "-" + f + "]") % (statistics.median(vals), vals[0], vals[-1])


def main(path):
    rows = collections.defaultdict(list)
    order = []
    for line in open(path):
        p = line.split()
        if len(p) < 2:
            continue
        kv = dict(w.split("=", 1) for w in p[2:] if "=" in w)
        if (p[1], p[0]) not in rows:
            order.append((p[1], p[0]))
        rows[(p[1], p[0])].append(kv)
    for wl in ("loop", "map", "mapl", "py"):
        tools = [t for w, t in order if w == wl]
        if not tools:
            continue
        base = {b: statistics.median([float(k["ns"]) for k in rows[(wl, b)] if "ns" in k] or [0])
                for b in ("bare", "bare-small")}
        print()
        print("%s" % TITLES[wl])
        print()
        print("| tool | work ms | slowdown | hits | us/hit | kns/hit | share right | dropped, lost |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for t in tools:
            ks = rows[(wl, t)]
            b = base["bare-small" if t in ("perf", "bare-small") else "bare"]
            work = [float(k["ns"]) / 1e6 for k in ks if "ns" in k]
            # paired: round i's work over the bare work of round i (the
            # machine's drift between rounds cancels); the bare median
            # where a round is missing
            bk = rows[(wl, "bare-small" if t in ("perf", "bare-small") else "bare")]
            if len(bk) == len(ks) and all("ns" in k for k in bk + ks):
                slow = [float(k["ns"]) / float(x["ns"]) for k, x in zip(ks, bk)]
            else:
                slow = [float(k["ns"]) / b for k in ks if "ns" in k and b]
            hits = [float(k["hits"]) for k in ks if k.get("hits", "0") != "0"]
            if t in ("bpf", "copy"):
                hits = [float(k["probe_hits"]) for k in ks if "probe_hits" in k] or hits
            per = [(float(k["ns"]) - b) / 1e3 / float(k.get("calls") or k["hits"])
                   for k in ks if "ns" in k and float(k.get("calls") or k.get("hits") or 0) > 0
                   ] if not t.startswith("bare") else []
            kns = [float(k["kns"]) for k in ks if "kns" in k]
            share = [float(k["share"]) for k in ks if "share" in k]
            drop = sorted(set(" ".join("%s=%s" % (x, k[x]) for x in ("probe_rate_dropped", "lost", "alloc_sampled", "alloc_live_dropped")
                                       if k.get(x, "0") != "0")
                              for k in ks))
            print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                NAMES.get(t, t), fmt(work, "%.1f"), fmt(slow, "%.2f") if not t.startswith("bare") else "1",
                fmt(hits), fmt(per, "%.2f"), fmt(kns), fmt(share, "%.3f"), "; ".join(d for d in drop if d) or "-"))


if __name__ == "__main__":
    main(sys.argv[1])
