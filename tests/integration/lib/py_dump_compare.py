# SPDX-License-Identifier: MIT
# py_dump_compare.py DUMP TEXT: a program's own view of its threads' Python
# frames (DUMP: "T <tid>" then "F <qualname>|<file>|<line>" lines, innermost
# first) against `ustack snapshot --python-only` (TEXT: "TID <tid> ..." then
# "#N py  QUALNAME (FILE:LINE)"): every thread of DUMP has exactly its
# frames in TEXT. Exit 0 when so; else the differences.
import re
import sys


def dump_threads(path):
    threads, cur = {}, None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("T "):
            cur = threads.setdefault(int(line[2:]), [])
        elif line.startswith("F ") and cur is not None:
            q, f, n = line[2:].rsplit("|", 2)
            cur.append((q, f, int(n)))
    return threads


def text_threads(path):
    threads, cur = {}, None
    for line in open(path, errors="replace"):
        m = re.match(r"TID (\d+) ", line)
        if m:
            cur = threads.setdefault(int(m.group(1)), [])
            continue
        m = re.match(r"#\d+ py  (.*) \((.*):(\d+)\)$", line.rstrip("\n"))
        if m and cur is not None:
            cur.append((m.group(1), m.group(2), int(m.group(3))))
    return threads


def main():
    want, got = dump_threads(sys.argv[1]), text_threads(sys.argv[2])
    ok = bool(want)
    for tid, frames in sorted(want.items()):
        if got.get(tid) != frames:
            ok = False
            print("tid %d differs:" % tid)
            for a, b in zip(frames + [None] * 99, got.get(tid, []) + [None] * 99):
                if a is None and b is None:
                    break
                print("  %s %-70s %s" % ("  " if a == b else "!=", a, b))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
