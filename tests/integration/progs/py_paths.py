# SPDX-License-Identifier: MIT
# py_paths.py DUMP FIFO: reaches a waiting point through paths it knows
# (recursion 5 deep, a class method, a generator, a lambda called back by
# C code: sorted(key=...)), with a second thread waiting in another
# function, and writes there its own view of every thread's frames to DUMP,
# in py_frames_dump's format (T <native tid>, then F <qualname>|<file>|<line>
# innermost first, from frame.f_code and frame.f_lineno), then waits
# until a byte can be read from FIFO. The wait and the dump are on one line
# of leaf(), so the frame's line is the same for both.
import os
import sys
import threading
import time

DUMP, FIFO = sys.argv[1], sys.argv[2]
fifo = os.open(FIFO, os.O_RDWR)  # never blocks; read() waits for the test's byte
worker_r, worker_w = os.pipe()
waited = False


def frames_of(f):
    out = []
    while f is not None:
        out.append("F %s|%s|%d" % (f.f_code.co_qualname, f.f_code.co_filename, f.f_lineno or 0))
        f = f.f_back
    return out


def dump(leaf_frame):
    native = {t.ident: t.native_id for t in threading.enumerate()}
    lines = []
    for ident, f in sorted(sys._current_frames().items()):
        if ident == threading.get_ident():
            f = leaf_frame
        lines.append("T %d" % native[ident])
        lines += frames_of(f)
    with open(DUMP + ".tmp", "w") as out:
        out.write("\n".join(lines) + "\n")
    os.rename(DUMP + ".tmp", DUMP)


def leaf(v):
    global waited
    if not waited:
        waited = True
        dump(sys._getframe()); os.read(fifo, 1)
    return v


class Walker:
    @classmethod
    def step(cls, n):
        return sorted([n, n + 1], key=lambda v: leaf(v))


def gen(n):
    yield Walker.step(n)


def recurse(depth):
    if depth == 0:
        for x in gen(depth):
            return x
    return recurse(depth - 1)


def worker_wait():
    os.read(worker_r, 1)


def worker_run():
    worker_wait()


WORKER_LINE = worker_wait.__code__.co_firstlineno + 1


def main():
    t = threading.Thread(target=worker_run, name="pyworker")
    t.start()
    # the worker is at its waiting line before the dump: its frames stay
    while True:
        f = sys._current_frames().get(t.ident)
        if f is not None and f.f_code is worker_wait.__code__ and f.f_lineno == WORKER_LINE:
            break
        time.sleep(0.01)
    recurse(5)
    os.write(worker_w, b"x")
    t.join()


main()
