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
# late one starts slowly, as on a loaded machine: at nice 19 on CPU 0
# beside a busy loop there, both until it is ready (then it runs as the
# others); its interpreter starts well after PY_SETTLE_NS (300 ms) from
# its exec, which a recorder must not take for a refusal.
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
        cpus = os.sched_getaffinity(0)
        busy = subprocess.Popen(["taskset", "-c", "0", "sh", "-c", "while :; do :; done"]) \
            if slow else None
        pre = ["nice", "-n", "19", "taskset", "-c", "0"] if slow else []
        c = subprocess.Popen(pre + [late, prog, rounds, "threads", "gate"],
                             stdout=open(d + "/out.late", "w"), stderr=open(d + "/err.late", "w"))
        with open(d + "/late.pid", "w") as f:
            f.write("%d\n" % c.pid)
        try:
            wait_for(d + "/err.late", "ready", 60)
        finally:
            if busy:
                busy.kill()
                busy.wait()
        if slow:
            os.setpriority(os.PRIO_PROCESS, c.pid, 0)
            os.sched_setaffinity(c.pid, cpus)
        c.send_signal(signal.SIGUSR1)
        errs.append(d + "/err.late")
    for f in errs:
        wait_for(f, "done")


main()
