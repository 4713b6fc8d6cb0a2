#!/usr/bin/env python3
"""rss_run.py OUT CMD [ARGS...]: runs CMD, then writes to OUT one line
"MAXRSS_KIB WALL_SECONDS": the peak resident set of CMD itself (wait4's
ru_maxrss: the kernel's own high-water mark of the process, no polling),
and its wall time. SIGINT and SIGTERM sent to this script are passed on
to CMD (so that a test can stop a recorder through it). Exits with CMD's
status (128 + N when a signal N killed it)."""
import os
import signal
import sys
import time

if len(sys.argv) < 3:
    sys.exit(__doc__)
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)


def forward(sig, frame):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


signal.signal(signal.SIGINT, forward)
signal.signal(signal.SIGTERM, forward)
while True:
    try:
        _, status, ru = os.wait4(pid, 0)
        break
    except InterruptedError:
        continue
with open(sys.argv[1], "w") as f:
    f.write(f"{ru.ru_maxrss} {time.monotonic() - t0:.2f}\n")
if os.WIFSIGNALED(status):
    sys.exit(128 + os.WTERMSIG(status))
sys.exit(os.WEXITSTATUS(status))
