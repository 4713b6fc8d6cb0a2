#!/usr/bin/env python3
"""Judges the probe tests (tests/integration/probes_more.sh) against oracles
from outside the recorder. EVENTS is the output of progs/probes_more_events.c
("D ..." descriptions, "V NAME TID VALUE ARGS STACK" events, "L COUNT" lost).
Each command prints notes, then "RESULT ok" or "RESULT fail WHY".

  Lost records (the trace's LOST count) are the one allowed shortfall:
  the events of a path may be fewer than its calls by at most the lost
  count (summed over the paths), never more, never none.

  usdt LOG EVENTS ARGS_RE SEM_RE
      progs/usdt_args.c's log against the events: per call path (the stack's
      leaf frames main;path_one;fire_args or main;path_two;fire_args) the
      multiset of (neg, big, c, counter) equals the logged one exactly; the
      semaphore-guarded probe fired, and its values equal the logged ones
  paths EVENTS EVENT_RE SUFFIX=COUNT...
      every event of EVENT_RE has a user stack ending (root first) in one of
      the SUFFIXes (';'-joined names, from main to the probed function) and
      each SUFFIX has COUNT events exactly ('+': one or more, '*': any)
  gdb GDB_OUT EVENTS EVENT_RE
      gdb's backtraces (lib/gdb_frames.py, one per breakpoint hit) against
      the events' stacks, frame by frame from the probed function to main:
      the two sets of stacks are equal
  notes PROG LISTING
      readelf -n's stapsdt notes of PROG (Location and Semaphore turned into
      file offsets through readelf -lW's PT_LOADs) against `ustack probe`'s
      LISTING: each note has a line naming provider:name, its file offset
      (0xHEX) and ref_ctr=0xHEX (its semaphore's file offset), and the
      listing has no other usdt line
  byte PID PATH SYMBOL
      prints "int3" when the first byte of SYMBOL of PATH, as PID maps it,
      is a breakpoint (0xcc) where the file has another byte, "orig" when it
      equals the file's, "unmapped" when PID does not map it
"""
import collections
import os
import re
import subprocess
import sys


def result(ok, why=""):
    print("RESULT ok" if ok else "RESULT fail " + why)
    return 0


def read_events(path, event_re):
    """(name, tid, value, args tuple or None, frames list or None) of the
    events whose name matches event_re; and the lost count."""
    evs, lost, names = [], 0, set()
    rx = re.compile(event_re)
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split(" ", 5)
            if p[0] == "L":
                lost += int(p[1])
            if p[0] != "V" or len(p) < 6:
                continue
            names.add(p[1])
            if not rx.search(p[1]):
                continue
            args = None if p[4] == "-" else tuple(int(a) for a in p[4].split(","))
            frames = None if p[5] == "-" else p[5].split(";")
            evs.append((p[1], int(p[2]), int(p[3]), args, frames))
    return evs, lost, names


def leaf_from_main(frames):
    """The frames from main to the leaf (root first); None without main."""
    if not frames or "main" not in frames:
        return None
    return frames[len(frames) - 1 - frames[::-1].index("main"):]


def cmd_usdt(log, events, args_re, sem_re):
    want = collections.defaultdict(collections.Counter)
    sem_want = collections.Counter()
    with open(log) as f:
        for line in f:
            p = line.split()
            if p and p[0] == "A":
                want[p[1]][tuple(int(x) for x in p[2:6])] += 1
            elif p and p[0] == "S":
                sem_want[int(p[1])] += 1
    evs, lost, names = read_events(events, args_re)
    if lost:
        print("  %d records lost (the trace's LOST records): each path's events may fall short "
              "of its calls by that many in all, never exceed them" % lost)
    got = collections.defaultdict(collections.Counter)
    for name, tid, value, args, frames in evs:
        stack = leaf_from_main(frames)
        path = {("main", "path_one", "fire_args"): "one",
                ("main", "path_two", "fire_args"): "two"}.get(tuple(stack or ()))
        if path is None:
            return result(False, "an event of %s with the stack %s (want main;path_one|path_two;fire_args)"
                          % (name, ";".join(frames or ["-"])))
        if args is None or len(args) != 4:
            return result(False, "an event of %s with args %s (want 4)" % (name, args))
        got[path][args] += 1
    for path in ("one", "two"):
        print("  path %s: %d calls logged, %d events" % (path, sum(want[path].values()),
                                                       sum(got[path].values())))
        miss = want[path] - got[path]
        extra = got[path] - want[path]
        if extra or sum(miss.values()) > lost or not got[path]:
            return result(False, "path %s: args differ from the program's log: missing %s, unexpected %s"
                          % (path, list(miss.elements())[:3], list(extra.elements())[:3]))
        lost -= sum(miss.values())
    if not sum(want["one"].values()) or not sum(want["two"].values()):
        return result(False, "the program logged no calls")
    sevs, _, _ = read_events(events, sem_re)
    if not sem_want:
        return result(False, "the program never saw its semaphore set: the recorder did not increment it "
                      "(%d events of the semaphore probe)" % len(sevs))
    sem_got = collections.Counter(a[0] for _, _, _, a, _ in sevs if a and len(a) == 1)
    print("  semaphore probe: %d firings logged, %d events" % (sum(sem_want.values()), len(sevs)))
    if (sem_got - sem_want or len(sevs) != sum(sem_got.values()) or not sevs or
            sum((sem_want - sem_got).values()) > lost):
        return result(False, "semaphore probe: values differ from the log: missing %s, unexpected %s"
                      % (list((sem_want - sem_got).elements())[:3], list((sem_got - sem_want).elements())[:3]))
    return result(True)


def cmd_paths(events, event_re, specs):
    evs, lost, names = read_events(events, event_re)
    if lost:
        print("  %d records lost (the trace's LOST records): each stack's count may fall short "
              "by that many in all, never exceed it" % lost)
    if not evs:
        return result(False, "no event matching /%s/ (events: %s)" % (event_re, sorted(names)))
    want = []
    for s in specs:
        suffix, count = s.rsplit("=", 1)
        want.append((suffix.split(";"), count))
    got = collections.Counter()
    for name, tid, value, args, frames in evs:
        for i, (suffix, _) in enumerate(want):
            if frames and frames[-len(suffix):] == suffix:
                got[i] += 1
                break
        else:
            return result(False, "an event with the stack %s, none of %s"
                          % (";".join(frames or ["-"]), [";".join(s) for s, _ in want]))
    short = 0
    for i, (suffix, count) in enumerate(want):
        print("  %s: %d events (want %s)" % (";".join(suffix), got[i], count))
        if count in "+*":
            if count == "+" and got[i] < 1:
                return result(False, "%s: no event" % ";".join(suffix))
            continue
        short += int(count) - got[i]
        if got[i] > int(count) or got[i] < 1 or short > lost:
            return result(False, "%s: %d events, want %s%s" % (";".join(suffix), got[i], count,
                                                              " (%d lost in all)" % lost if lost else ""))
    return result(True)


def cmd_gdb(gdb_out, events, event_re):
    gdb_stacks, cur = set(), None
    with open(gdb_out) as f:
        for line in f:
            p = line.split()
            if p and p[0] == "TID":
                if cur:
                    gdb_stacks.add(tuple(leaf_from_main(cur[::-1]) or ["no-main"] + cur[::-1]))
                cur = []
            elif p and p[0].startswith("#") and cur is not None:
                cur.append(p[2])
    if cur:
        gdb_stacks.add(tuple(leaf_from_main(cur[::-1]) or ["no-main"] + cur[::-1]))
    evs, lost, names = read_events(events, event_re)
    ours = set()
    for name, tid, value, args, frames in evs:
        ours.add(tuple(leaf_from_main(frames) or ["no-main"] + (frames or ["-"])))
    for s in sorted(gdb_stacks):
        print("  gdb:    " + ";".join(s))
    for s in sorted(ours):
        print("  ustack: " + ";".join(s))
    if len(gdb_stacks) < 2:
        return result(False, "gdb gave %d backtraces, want 2" % len(gdb_stacks))
    return result(gdb_stacks == ours, "the stacks differ from gdb's")


def vaddr_to_offset(path, addr):
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        p = line.split()
        if p and p[0] == "LOAD":
            off, vaddr, filesz = int(p[1], 16), int(p[2], 16), int(p[4], 16)
            if vaddr <= addr < vaddr + filesz:
                return addr - vaddr + off
    raise SystemExit("%s: 0x%x outside every PT_LOAD" % (path, addr))


def cmd_notes(prog, listing):
    out = subprocess.run(["readelf", "-n", prog], capture_output=True, text=True).stdout
    notes, prov, name = [], None, None
    for line in out.splitlines():
        m = re.search(r"Provider: (\S+)", line)
        prov = m.group(1) if m else prov
        m = re.search(r"^\s*Name: (\S+)", line)
        name = m.group(1) if m else name
        m = re.search(r"Location: (0x[0-9a-f]+), Base: 0x[0-9a-f]+, Semaphore: (0x[0-9a-f]+)", line)
        if m:
            loc, sem = int(m.group(1), 16), int(m.group(2), 16)
            notes.append(("%s:%s" % (prov, name), vaddr_to_offset(prog, loc),
                          vaddr_to_offset(prog, sem) if sem else 0))
    lines = [l for l in open(listing) if l.startswith("usdt ")]
    for l in lines:
        print("  ustack probe: " + l.rstrip())
    if len(notes) != 2:
        return result(False, "readelf -n shows %d stapsdt notes, want 2" % len(notes))
    for pn, off, sem in notes:
        want = re.compile(r"\s0x0*%x\s.*\b%s\b.*ref_ctr=0x0*%x\b" % (off, re.escape(pn), sem))
        print("  readelf: %s at file offset 0x%x, semaphore at 0x%x" % (pn, off, sem))
        if not any(want.search(l) for l in lines):
            return result(False, "%s (file offset 0x%x, semaphore 0x%x) not listed" % (pn, off, sem))
    return result(len(lines) == len(notes), "%d usdt lines listed, %d notes" % (len(lines), len(notes)))


def elf_symbol_offset(path, symbol):
    """The file offset of SYMBOL in PATH, from nm (.symtab or .dynsym) and
    the program headers (readelf -lW)."""
    addr = None
    for flag in ([], ["-D"]):
        out = subprocess.run(["nm"] + flag + [path], capture_output=True, text=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[2] == symbol and p[1] in "Tt":
                addr = int(p[0], 16)
        if addr is not None:
            break
    if addr is None:
        raise SystemExit("%s: no symbol %s" % (path, symbol))
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        p = line.split()
        if p and p[0] == "LOAD":
            off, vaddr, filesz = int(p[1], 16), int(p[2], 16), int(p[4], 16)
            if vaddr <= addr < vaddr + filesz:
                return addr - vaddr + off
    raise SystemExit("%s: %s outside every PT_LOAD" % (path, symbol))


def cmd_byte(pid, path, symbol):
    off = elf_symbol_offset(path, symbol)
    st = os.stat(path)
    with open(path, "rb") as f:
        f.seek(off)
        file_byte = f.read(1)[0]
    with open("/proc/%s/maps" % pid) as f:
        for line in f:
            p = line.split()
            if len(p) < 6 or int(p[4]) != st.st_ino:
                continue
            lo, hi = (int(x, 16) for x in p[0].split("-"))
            moff = int(p[2], 16)
            if moff <= off < moff + (hi - lo):
                with open("/proc/%s/mem" % pid, "rb") as m:
                    m.seek(lo + off - moff)
                    b = m.read(1)[0]
                print("int3" if b == 0xCC and file_byte != 0xCC else
                      "orig" if b == file_byte else "other 0x%02x" % b)
                return 0
    print("unmapped")
    return 0


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "usdt" and len(argv) == 6:
        return cmd_usdt(*argv[2:])
    if cmd == "paths" and len(argv) >= 5:
        return cmd_paths(argv[2], argv[3], argv[4:])
    if cmd == "gdb" and len(argv) == 5:
        return cmd_gdb(*argv[2:])
    if cmd == "notes" and len(argv) == 4:
        return cmd_notes(*argv[2:])
    if cmd == "byte" and len(argv) == 5:
        return cmd_byte(*argv[2:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
