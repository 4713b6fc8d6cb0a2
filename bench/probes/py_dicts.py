# The python workload of bench/probes/run.sh and alloc_cost.sh: R rounds
# of a dict of N strings; prints "NS total" (the work alone), stops itself
# with BENCH_STOP=1 (run.sh reads the tools' programs meanwhile).
# usage: python3 py_dicts.py N R
import os, signal, sys, time
n, r = int(sys.argv[1]), int(sys.argv[2])
t0 = time.monotonic_ns()
for k in range(r):
    d = {i: str(i + k) for i in range(n)}
print("NS %d" % (time.monotonic_ns() - t0), flush=True)
if os.environ.get("BENCH_STOP"):
    os.kill(os.getpid(), signal.SIGSTOP)
