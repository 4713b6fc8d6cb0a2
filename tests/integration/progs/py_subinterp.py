# SPDX-License-Identifier: MIT
# py_subinterp.py DUMP FIFO: a thread that calls into a sub-interpreter,
# whose code waits in read(2) under two functions of its own, while the
# main thread waits too. DUMP gets the program's own view, in py_paths.py's
# format (T <native tid>, then F <qualname>|<file>|<line> innermost first):
# for the worker thread, the sub-interpreter's frames (as it sees them)
# followed by the frames the main interpreter has for that thread (the one
# that entered the sub-interpreter); for the main thread its own. Then it
# waits until a byte can be read from FIFO. Each wait is on the line of the
# dump that recorded it, so the lines are the same for both.
import os
import sys
import threading
import time

try:
    import _interpreters as interps  # 3.13
except ImportError:
    import _xxsubinterpreters as interps  # 3.11, 3.12

DUMP, FIFO = sys.argv[1], sys.argv[2]
fifo = os.open(FIFO, os.O_RDWR)
sub_r, sub_w = os.pipe()
SUB_DUMP = DUMP + ".sub"

SUB_CODE = f"""
import _thread, os, sys
def frames(f):
    out = []
    while f is not None:
        out.append("F %s|%s|%d" % (f.f_code.co_qualname, f.f_code.co_filename, f.f_lineno or 0))
        f = f.f_back
    return out
def dump(f):
    with open({SUB_DUMP!r} + ".tmp", "w") as o:
        o.write("\\n".join(["T %d" % _thread.get_native_id()] + frames(f)) + "\\n")
    os.rename({SUB_DUMP!r} + ".tmp", {SUB_DUMP!r})
def inner_wait():
    dump(sys._getframe()); os.read({sub_r}, 1)
def outer():
    inner_wait()
outer()
"""


def frames(f):
    out = []
    while f is not None:
        out.append("F %s|%s|%d" % (f.f_code.co_qualname, f.f_code.co_filename, f.f_lineno or 0))
        f = f.f_back
    return out


def enter_sub(iid):
    interps.run_string(iid, SUB_CODE)


def dump(me):
    sub = open(SUB_DUMP).read().split("\n")
    worker_tid = int(sub[0].split()[1])
    native = {t.ident: t.native_id for t in threading.enumerate()}
    lines = []
    for ident, f in sorted(sys._current_frames().items()):
        tid = native[ident]
        lines.append("T %d" % tid)
        if ident == threading.get_ident():
            f = me
        if tid == worker_tid:
            lines += [x for x in sub[1:] if x]
        lines += frames(f)
    with open(DUMP + ".tmp", "w") as out:
        out.write("\n".join(lines) + "\n")
    os.rename(DUMP + ".tmp", DUMP)


def main():
    iid = interps.create()
    t = threading.Thread(target=enter_sub, args=(iid,), name="pysub")
    t.start()
    while not os.path.exists(SUB_DUMP):
        time.sleep(0.01)
    dump(sys._getframe()); os.read(fifo, 1)
    os.write(sub_w, b"x")
    t.join()


main()
