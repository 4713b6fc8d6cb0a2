#!/usr/bin/env python3
"""Python frames of `ustack report` outputs, for report_python.sh.

usage: report_python_check.py pprof FILE.pb.gz
         each sample: its count, then its Python locations leaf first as
         "NAME FILE:LINE s=START", one sample a line, sorted; a Python
         location with a mapping or an address, or more than one line, is
         printed as "BAD ..." (pprof's rule for them: none of those)
       report_python_check.py speedscope FILE.json
         each sample of every profile, its Python frames leaf first as
         "NAME FILE:LINE", one sample a line, sorted (the JSON must parse)
The protobuf reader is names_check.py's (the repo's own, no protoc).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from names_check import pb_fields, packed  # noqa: E402
import gzip  # noqa: E402


def pprof(path):
    with open(path, "rb") as f:
        raw = gzip.decompress(f.read())
    strings, samples, funcs, locs = [], [], {}, {}
    for f, wt, v in pb_fields(raw):
        if f == 6:
            strings.append(v.decode("utf-8"))
        elif f == 2:
            ids, vals = [], []
            for g, gwt, w in pb_fields(v):
                if g == 1:
                    ids += packed(w) if gwt == 2 else [w]
                elif g == 2:
                    vals += packed(w) if gwt == 2 else [w]
            samples.append((ids, vals))
        elif f == 5:
            d = {h: x for h, _, x in pb_fields(v)}
            funcs[d.get(1, 0)] = d
        elif f == 4:
            d, lines = {}, []
            for h, _, x in pb_fields(v):
                if h == 4:
                    lines.append({k: y for k, _, y in pb_fields(x)})
                else:
                    d[h] = x
            d["lines"] = lines
            locs[d.get(1, 0)] = d
    out = []
    for ids, vals in samples:
        fr = []
        for i in ids:
            loc = locs[i]
            if not loc["lines"]:
                continue
            fn = funcs[loc["lines"][0].get(1, 0)]
            fname = strings[fn.get(4, 0)]
            if not (fname.endswith(".py") or fname == "[python]"):
                continue
            s = "%s %s:%d s=%d" % (strings[fn.get(2, 0)], fname, loc["lines"][0].get(2, 0),
                                   fn.get(5, 0))
            if loc.get(2, 0) or loc.get(3, 0) or len(loc["lines"]) != 1:
                s = "BAD " + s
            fr.append(s)
        out.append("%d: %s" % (vals[0], "; ".join(fr)))
    return sorted(out)


def speedscope(path):
    with open(path) as f:
        d = json.load(f)
    frames = d["shared"]["frames"]
    out = []
    for p in d["profiles"]:
        for s in p["samples"]:
            fr = [frames[i] for i in reversed(s)]
            out.append("; ".join("%s %s:%d" % (f["name"], f["file"], f.get("line", 0))
                                 for f in fr if f.get("file", "").endswith(".py")
                                 or f.get("file") == "[python]"))
    return sorted(out)


def main():
    fn = {"pprof": pprof, "speedscope": speedscope}[sys.argv[1]]
    for line in fn(sys.argv[2]):
        print(line)


if __name__ == "__main__":
    main()
