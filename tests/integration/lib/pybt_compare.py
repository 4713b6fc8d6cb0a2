# SPDX-License-Identifier: MIT
# pybt_compare.py GDB_OUT USTACK_OUT: the Python frames of gdb's
# `thread apply all py-bt` (CPython's own gdb extension, python3.X-dbg)
# against `ustack snapshot --python-only`'s, thread by thread: the same
# (function, file, line) innermost first. gdb names a frame by co_name
# ("step", "<lambda>"), ustack by co_qualname ("Walker.step",
# "Walker.step.<locals>.<lambda>"): the qualname's last part is compared.
# Exit 0 when every thread of either has the same frames in the other.
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_dump_compare import text_threads  # noqa: E402


def gdb_threads(path):
    threads, cur = {}, None
    for line in open(path, errors="replace"):
        m = re.match(r"Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\)", line)
        if m:
            cur = threads.setdefault(int(m.group(1)), [])
            continue
        m = re.match(r'  File "(.*)", line (\d+), in (.*)$', line.rstrip("\n"))
        if m and cur is not None:
            cur.append((m.group(3), m.group(1), int(m.group(2))))
    return {t: f for t, f in threads.items() if f}


def ustack_threads(path):
    # ustack's qualname cut to gdb's co_name
    return {t: [(q.rsplit(".", 1)[-1], f, n) for q, f, n in fr]
            for t, fr in text_threads(path).items() if fr}


def main():
    g, u = gdb_threads(sys.argv[1]), ustack_threads(sys.argv[2])
    ok = bool(g) and g.keys() == u.keys()
    for tid in sorted(set(g) | set(u)):
        same = g.get(tid) == u.get(tid)
        ok &= same
        print("%s tid %d: gdb %d frames, ustack %d" % ("same" if same else "DIFFER", tid,
                                                      len(g.get(tid, [])), len(u.get(tid, []))))
        if not same:
            for a, b in zip(g.get(tid, []) + [None] * 99, u.get(tid, []) + [None] * 99):
                if a is None and b is None:
                    break
                print("  %s %-60s %s" % ("  " if a == b else "!=", a, b))
    sys.exit(0 if ok else 1)


main()
