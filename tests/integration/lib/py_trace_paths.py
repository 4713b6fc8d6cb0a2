#!/usr/bin/env python3
# The Python paths of a trace's user stacks, as record_python.sh compares
# them with the program's own counts: "COUNT;outermost;...;innermost" per
# distinct path of Python function names (PYFUNC records; "?" for a
# Python frame of an unknown function), one line each, read with the
# independent reader tests/data/trace/read_trace.py (no code of src/).
# Stacks without Python frames count under "-". Usage: TRACE [PID]
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "data", "trace"))
import read_trace  # noqa: E402


def main():
    with open(sys.argv[1], "rb") as f:
        out, err = read_trace.dump(f.read())
    if err is not None:
        print("ERROR offset %d" % err, file=sys.stderr)
        return 1
    pid = sys.argv[2] if len(sys.argv) > 2 else None
    pyfiles, funcs, stacks, counts = set(), {}, {}, collections.Counter()
    for line in out:
        f = line.split(" ")
        if f[0] == "FILE_MAP" and f[2] == "10":
            pyfiles.add(f[1])
        elif f[0] == "PYFUNC":
            funcs[int(f[1], 16)] = f[4]
        elif f[0] == "STACK" and f[1] == "1":
            stacks[f[2]] = f[4:]
    for line in out:
        f = line.split(" ")
        if f[0] != "USER_STACK" or (pid and f[2] != pid):
            continue
        names = []
        for fr in stacks.get(f[7], []):
            _, fid, off = fr.split(":")
            if fid in pyfiles:
                names.append(funcs.get(int(off, 16) >> 24, "?"))
        counts[";".join(reversed(names)) or "-"] += 1
    for k, v in sorted(counts.items()):
        print("%d;%s" % (v, k))
    return 0


if __name__ == "__main__":
    sys.exit(main())
