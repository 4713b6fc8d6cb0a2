# SPDX-License-Identifier: MIT
# The workload of record_python.sh: functions that reach os.write on
# /dev/null through known call paths (recursion, a class method, a
# generator, a lambda, callbacks from C: sorted(key=...) and
# functools.reduce), in the main thread and, with "threads", in two more.
# Each write's path is taken from the interpreter's own frames
# (sys._getframe, co_qualname: CPython's view of the chain ustack reads
# from outside) and counted; at the end the counts are printed, one line
# per path: COUNT;outermost;...;innermost (the folded form). With "linger"
# it then waits a second before it exits.
import collections
import functools
import os
import signal
import sys
import threading
import time

FD = os.open("/dev/null", os.O_WRONLY)
COUNTS = collections.Counter()
LOCK = threading.Lock()


def emit():
    f = sys._getframe(0)
    names = []
    while f is not None:
        names.append(f.f_code.co_qualname)
        f = f.f_back
    key = ";".join(reversed(names))
    with LOCK:
        COUNTS[key] += 1
    os.write(FD, b"x")


def recurse(n):
    if n == 0:
        emit()
        return 0
    return recurse(n - 1) + 1


class Walker:
    def step(self, k):
        for _ in range(k):
            emit()

    @classmethod
    def make(cls):
        w = cls()
        w.step(2)
        return w


def gen(n):
    for i in range(n):
        emit()
        yield i


def by_key(x):
    emit()
    return -x


def add(a, b):
    emit()
    return a + b


def round_(i):
    recurse(i % 4)
    Walker.make()
    sum(gen(3))
    (lambda: emit())()
    sorted([3, 1, 2], key=by_key)
    functools.reduce(add, [1, 2, 3])


def worker(rounds):
    for i in range(rounds):
        round_(i)


def gate(word):
    sys.stderr.write(word + "\n")
    sys.stderr.flush()
    signal.sigwait([signal.SIGUSR1])


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    gated = "gate" in sys.argv[2:]
    if gated:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
        gate("ready")
    threads = [threading.Thread(target=worker, args=(rounds,)) for _ in range(2)] \
        if "threads" in sys.argv[2:] else []
    for t in threads:
        t.start()
    worker(rounds)
    for t in threads:
        t.join()
    out = sys.stdout
    for k, v in sorted(COUNTS.items()):
        out.write("%d;%s\n" % (v, k))
    if gated:
        out.flush()
        gate("done")
    if "linger" in sys.argv[2:]:
        # alive a while after its writes: a recorder that reads its code
        # objects late (still loading its first tables) finds them
        out.flush()
        time.sleep(1)


main()
