#!/usr/bin/env python3
"""Share of a tool's hits with a whole, right user stack, for
bench/probes/run.sh. Prints "hits=N share=F".

  share.py ustack EVENTS WANT   EVENTS from tests/integration/progs/
                                probes_more_events.c (root first)
  share.py bt OUT WANT          bpftrace's @[ustack] = count() map
  share.py perf SCRIPT WANT     perf script -F comm,tid,ip,sym

WANT is the stack from main to the probed function, root first
("main;loop_a;loop_b;loop_c;bench_probed"), or "main" alone: then a hit is
right when its stack reaches main (the allocation workload, whose frames
between main and malloc depend on inlining). Names are compared without
their +offset; frames outside main (libc's start, _start) are not judged.
"""
import re
import sys


def right(frames_leaf_first, want):
    names = [re.sub(r"\+0x[0-9a-f]+$|\+[0-9]+$", "", f) for f in frames_leaf_first]
    if want == ["main"]:
        return "main" in names
    w = want[::-1]
    return names[:len(w)] == w


def stacks_ustack(path):
    for line in open(path, errors="replace"):
        p = line.rstrip("\n").split(" ", 5)
        if p[0] == "V" and len(p) == 6:
            yield (p[5].split(";")[::-1] if p[5] != "-" else []), 1


def stacks_bt(path):
    cur = None
    for line in open(path, errors="replace"):
        s = line.strip()
        if s.startswith("@["):
            cur = []
        elif cur is not None and s.startswith("]:"):
            yield cur, int(s[2:].strip())
            cur = None
        elif cur is not None and s:
            cur.append(s.split()[0])


def stacks_perf(path):
    cur = None
    for line in open(path, errors="replace"):
        if not line.strip():
            continue
        if not line[0].isspace():
            if cur is not None:
                yield cur, 1
            cur = []
        elif cur is not None:
            p = line.split()
            cur.append(p[1] if len(p) > 1 else "?")
    if cur is not None:
        yield cur, 1


def main(argv):
    if len(argv) != 4 or argv[1] not in ("ustack", "bt", "perf"):
        sys.stderr.write(__doc__)
        return 2
    want = argv[3].split(";")
    gen = {"ustack": stacks_ustack, "bt": stacks_bt, "perf": stacks_perf}[argv[1]]
    hits = good = 0
    for frames, n in gen(argv[2]):
        hits += n
        good += n if right(frames, want) else 0
    print("hits=%d share=%.4f" % (hits, good / hits if hits else 0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
