# SPDX-License-Identifier: MIT
# py_paths_compare.py PROGRAM_COUNTS RECORDED_PATHS: a program's own count
# of its writes per Python path (progs/py_writes.py's output) against the
# paths recorded for them (lib/py_trace_paths.py's output), both
# "COUNT;outermost;...;innermost", the paths that end in emit compared.
# Exit 0 when >= 99% of the program's writes were recorded with their own
# path; else one line saying how many. share() is what bench/python/
# record.sh reports.
import collections
import sys


def load(path):
    c = collections.Counter()
    for line in open(path):
        n, _, p = line.rstrip("\n").partition(";")
        if p.endswith(";emit"):
            c[p] += int(n)
    return c


def share(prog_path, rec_path):
    """(writes recorded with the program's path, the program's writes, recorded emit paths)"""
    prog, rec = load(prog_path), load(rec_path)
    return (sum(min(v, rec[k]) for k, v in prog.items()), sum(prog.values()),
            sum(rec.values()), prog, rec)


def main():
    same, total, nrec, prog, rec = share(sys.argv[1], sys.argv[2])
    if total == 0 or same * 100 < 99 * total:
        print("%d of %d writes with the program's path, %d recorded with an emit path; "
              "program %s, recorded %s" % (same, total, nrec, dict(prog), dict(rec)))
        sys.exit(1)


if __name__ == "__main__":
    main()
