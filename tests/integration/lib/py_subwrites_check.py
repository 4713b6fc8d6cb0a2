# SPDX-License-Identifier: MIT
# py_subwrites_check.py REC: the paths py_trace_paths.py read from a trace
# of progs/py_subwrites.py 300 (COUNT;outermost;...;innermost per line):
# the main thread's 300 writes through <module> -> main_outer -> main_leaf,
# the second thread's 300 through both its chains, the sub-interpreter's
# above the main interpreter's that called into it (Thread._bootstrap ...
# Thread.run, then <module> -> sub_outer -> sub_leaf), each >= 99%, and no
# other path with main_leaf or sub_leaf. A function whose code object was
# not read ("?") is no wrong name: such a path is left out. Exit 1 (with
# the paths) otherwise.
import sys
MAIN = ["<module>", "main_outer", "main_leaf"]
SUB = ["Thread._bootstrap", "Thread._bootstrap_inner", "Thread.run", "<module>", "sub_outer", "sub_leaf"]
main = sub = bad = 0
for line in open(sys.argv[1]):
    n, _, path = line.rstrip("\n").partition(";")
    if path == "-":
        continue
    f = path.split(";")
    if "?" in f:
        continue  # a function unknown (its code object unread): not a wrong name
    if f == MAIN:
        main += int(n)
    elif f == SUB:
        sub += int(n)
    elif ("main_leaf" in f or "main_outer" in f) and ("sub_leaf" in f or "sub_outer" in f):
        bad += int(n)
    elif "sub_leaf" in f or "main_leaf" in f:
        bad += int(n)
print("%d of 300 main writes and %d of 300 sub-interpreter writes with their path, %d writes with a wrong path" % (main, sub, bad))
ok = main * 100 >= 99 * 300 and sub * 100 >= 99 * 300 and bad == 0
if not ok:
    print(open(sys.argv[1]).read().replace("\n", " | ")[:600])
sys.exit(0 if ok else 1)
