# SPDX-License-Identifier: MIT
# py_release.py DIR LATE PROG ROUNDS PID...: the command a recording of
# gated progs/py_writes.py processes lasts for (record_python_all.sh,
# record_python.sh's container case). Releases each PID (SIGUSR1: they
# wait with "gate" after saying "ready" in DIR/err.PID); with LATE (a
# python, or "") also starts PROG ROUNDS threads gate with it, its pid in
# DIR/late.pid, and releases it once ready; returns when every one has
# said "done" (its writes made, its counts printed; it then waits, alive,
# for the caller's next SIGUSR1, so that the recorder reads its code
# objects after it stopped). With PY_SLOW_START=1 in the environment the
# late one starts slowly, as on a loaded machine: held (ptrace) at its
# exec, before ld.so maps anything else, for 0.5 s, so that its
# interpreter starts well after PY_SETTLE_NS (300 ms) from the recorder's
# first look, which saw only the executable (pyenv's stub without
# _PyRuntime): a refusal then must not stand.
import ctypes
import os
import signal
import subprocess
import sys
import time


def wait_for(path, word, limit=60):
    t = time.monotonic()
    while word not in open(path).read():
        if time.monotonic() - t > limit:
            sys.exit("%s: no %r after %d s" % (path, word, limit))
        time.sleep(0.005)


def main():
    d, late, prog, rounds, pids = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
    for p in pids:
        os.kill(int(p), signal.SIGUSR1)
    errs = ["%s/err.%s" % (d, p) for p in pids]
    if late:
        slow = os.environ.get("PY_SLOW_START") == "1"
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        c = subprocess.Popen([late, prog, rounds, "threads", "gate"],
                             stdout=open(d + "/out.late", "w"), stderr=open(d + "/err.late", "w"),
                             preexec_fn=(lambda: libc.ptrace(0, 0, None, None)) if slow else None)
        with open(d + "/late.pid", "w") as f:
            f.write("%d\n" % c.pid)
        if slow:
            os.waitpid(c.pid, os.WUNTRACED)  # its exec's SIGTRAP
            time.sleep(0.5)  # the slow start itself, not a wait for something
            if libc.ptrace(17, c.pid, None, None):  # PTRACE_DETACH
                sys.exit("PTRACE_DETACH: errno %d" % ctypes.get_errno())
        wait_for(d + "/err.late", "ready", 30)
        # Python frames are promised from the recorder's first look at the
        # process, made when it reads the process's first event: up to a
        # poll period (0.1 s) later, more on a loaded machine. Released at
        # once, its 540 writes (~50 ms) were all walked before that look in
        # 1 run of 3 under load (0 of 540 named): a process that started
        # a second before its measured work, as a service does
        time.sleep(1.0)
        c.send_signal(signal.SIGUSR1)
        errs.append(d + "/err.late")
    for f in errs:
        wait_for(f, "done")


main()
