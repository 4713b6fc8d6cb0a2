"""CPU work for bench/record/backends.sh: python3 running json, zlib and re at
the bottom of a Python recursion of depth DEPTH (default 60), for about
SECONDS (default 2) of wall time.

Every EVERY-th level (default 4) is entered through a C builtin (map(),
driven by list()), the others by a plain Python call. Python 3.11+ runs a
plain Python-to-Python call inside the same C frame of its eval loop, so
only the levels entered through C grow the native stack, by about five
frames each (as a real program's callbacks through C do: sorted(key=...),
json hooks, ...). With the defaults, on Debian 12's python3.11, a sample's
native stack has about 90 frames and 8-16 KiB: more than the 8 KiB that
`perf record --call-graph dwarf` copies by default, less than ustack's
16 KiB, and under the 127 frames both keep at most. EVERY=1 puts ~300
frames on the stack (nobody reaches _start), a large EVERY only a few.

    python3 bench/record/py_work.py [SECONDS] [DEPTH] [EVERY]

Prints one line: "py_work: N rounds, DEPTH levels (every EVERY through C), T s".
"""
import json
import re
import sys
import time
import zlib

DOC = {
    "name": "ustack",
    "items": [{"id": i, "tags": ["a", "b", str(i)], "value": i * 1.5} for i in range(200)],
    "text": "the quick brown fox jumps over the lazy dog " * 40,
}
WORD = re.compile(r"\b(\w+)\s+(\w+)\b")


def work():
    s = json.dumps(DOC)
    d = json.loads(s)
    z = zlib.compress(s.encode(), 6)
    n = len(zlib.decompress(z))
    m = sum(1 for _ in WORD.finditer(d["text"]))
    return n + m + len(z)


EVERY = 4


def level(n):
    if n == 0:
        return work()
    if n % EVERY == 0:
        # through C: map() calls level, list() drives map
        return list(map(level, (n - 1,)))[0]
    return level(n - 1)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    global EVERY
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    EVERY = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    sys.setrecursionlimit(max(1000, 4 * depth))
    t0 = time.monotonic()
    rounds = 0
    while time.monotonic() - t0 < seconds:
        level(depth)
        rounds += 1
    print(f"py_work: {rounds} rounds, {depth} levels (every {EVERY} through C), "
          f"{time.monotonic() - t0:.3f} s")


if __name__ == "__main__":
    main()
