#!/usr/bin/env python3
"""Checks of recorded stacks, one implementation of "right stack" for
tests/integration/record_storm.sh and bench/record/backends.sh: the stacks
of tests/integration/progs/write_storm.c against the paths the program
counted itself, those of examples/futex_demo.c against its three shapes,
and how many stacks reach the program's entry.

  record_check.py paths COUNTS FOLDED [--label L] [--min-share X] [--show N]
  record_check.py futex FOLDED [--lost N] [--label L] [--show N]
  record_check.py reach FOLDED [--frame _start] [--label L] [--missed FILE]
  record_check.py perf2folded [PERF_SCRIPT_OUTPUT]      (stdin when omitted)

FOLDED: one line per distinct stack, "comm;root;...;leaf COUNT", as
`ustack report --format folded` prints it (or perf2folded below).
COUNTS: write_storm -o FILE: "fa;fb;fc COUNT" per path, then "total N".

paths: every line whose comm is a worker's ("storm-I") or that holds a
worker frame (storm_thread, f0..f15) is a worker stack. It must read, root
first,

    CLONE start_thread storm_thread fa fb fc WRITE [libc frames...]

CLONE one of clone3, __clone3, __GI___clone3, clone, __clone; fa fb fc three
of f0..f15; WRITE a function whose name holds "write" (write,
__GI___libc_write, ...): the frame write(2) was called into; below it (leaf
side) only frames that are no worker frame (libc's, and the event's kernel
frames where the recorder has them: the folded line of ustack puts the
kernel stack after the user stack's leaf). A worker line with no frame at
all is an event the recorder kept without a user stack (after lost
records): counted as "no stack", not as wrong. Anything else is a WRONG
stack. The recorded counts of each path (summed over threads and over lines
naming the same path) must not exceed the program's count: what exceeds it
is WRONG too (an event attributed to the wrong path); a path the program
never took is WRONG in full.
    right = sum over paths of min(recorded, counted)
    share = right / N (N from the "total" line: every write the program made)
Output: a few human-readable lines, then
    STORM label events=E worker=W right=R wrong=X nostack=S share=F
(events: all events of the folded input, any thread). Exit status 1 when
any stack is wrong or the share is below --min-share, 2 on bad input.

futex: stacks of examples/futex_demo.c's futex calls (recorded with
syscalls:sys_enter_futex). Right, root first, are exactly
    CLONE start_thread worker locked_section LOCK LIBC...
        LOCK pthread_mutex_lock or pthread_mutex_unlock(_usercnt) (any
        __/__GI_ prefix), LIBC one or more frames, the first of them
        __lll_lock_wait, __lll_lock_wake or a futex/syscall function (kernel
        frames may follow)
    _start __libc_start_main __libc_start_call_main main JOIN LIBC...
        JOIN pthread_join or __pthread_clockjoin_ex, LIBC as above
Anything else, an event without user stack included, is not right. There
is no count of the program's futex calls to divide by, so
    share = right / (events + N)
with N the events the recorder says it lost (--lost).
    FUTEX label events=E right=R lost=N share=F

reach: share of all events (every line, every thread) whose stack has the
frame --frame (default _start), i.e. was unwound to the program's entry:
    REACH label events=E reached=R share=F

perf2folded: `perf script -F comm,ip,sym` output (a "comm" line, then one
"ADDR SYMBOL" line per frame, innermost first, a blank line after each
sample) to folded lines, with counts. Frames perf marks "(inlined)" are
dropped: folded stacks of ustack have real frames only; symbol versions
(pthread_mutex_lock@@GLIBC_2.2.5) are cut off, as ustack's names have none.
"""
import re
import sys

WORKER_COMM = re.compile(r"^storm-[0-9]+$")
FN = re.compile(r"^f([0-9]|1[0-5])$")
CLONE = re.compile(r"^(__GI_)?_*clone3?$")
WRITE = re.compile(r"write")


def is_worker_frame(name):
    return name == "storm_thread" or FN.match(name) is not None


def read_folded(path):
    """[(comm, [frames root first], count)]"""
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            stack, sep, count = line.rpartition(" ")
            if not sep or not count.isdigit():
                sys.exit(f"record_check: {path}:{no}: not a folded line: {line[:120]}")
            parts = stack.split(";")
            out.append((parts[0], parts[1:], int(count)))
    return out


def read_counts(path):
    counts, total = {}, None
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            w = line.split()
            if len(w) != 2 or not w[1].isdigit():
                sys.exit(f"record_check: {path}:{no}: not 'fa;fb;fc COUNT' or 'total N'")
            if w[0] == "total":
                total = int(w[1])
            else:
                counts[w[0]] = int(w[1])
    if total is None or total != sum(counts.values()):
        sys.exit(f"record_check: {path}: no total line, or it is not the sum of the paths")
    return counts, total


def classify(frames):
    """(path, None) for a right-shaped worker stack, (None, reason) else"""
    try:
        k = frames.index("storm_thread")
    except ValueError:
        return None, "no storm_thread frame"
    if frames.count("storm_thread") != 1:
        return None, "storm_thread twice"
    root = frames[:k]
    if len(root) != 2 or not CLONE.match(root[0]) or root[1] != "start_thread":
        return None, "root side is not clone3;start_thread"
    path = frames[k + 1:k + 4]
    if len(path) != 3 or not all(FN.match(p) for p in path):
        return None, "not three of f0..f15 above storm_thread"
    leaf = frames[k + 4:]
    if not leaf:
        return None, "no frame below fc (write)"
    if not WRITE.search(leaf[0]):
        return None, f"fc calls {leaf[0]}, not write"
    if any(is_worker_frame(x) for x in leaf):
        return None, "a worker frame below write"
    return ";".join(path), None


def cmd_paths(args):
    label, min_share, show = "", None, 5
    pos = []
    i = 0
    while i < len(args):
        if args[i] == "--label":
            label = args[i + 1]; i += 2
        elif args[i] == "--min-share":
            min_share = float(args[i + 1]); i += 2
        elif args[i] == "--show":
            show = int(args[i + 1]); i += 2
        else:
            pos.append(args[i]); i += 1
    if len(pos) != 2:
        sys.exit("usage: record_check.py paths COUNTS FOLDED [--label L] [--min-share X] [--show N]")
    counts, total = read_counts(pos[0])
    lines = read_folded(pos[1])
    events = worker = wrong = nostack = 0
    rec = {}
    bad = []
    for comm, frames, n in lines:
        events += n
        if not WORKER_COMM.match(comm) and not any(is_worker_frame(x) for x in frames):
            continue  # another thread's write (main: the -o file, stdout)
        worker += n
        if not frames:
            nostack += n
            continue
        path, why = classify(frames)
        if why:
            wrong += n
            bad.append(f"{n} x {why}: {comm};{';'.join(frames)}")
            continue
        rec[path] = rec.get(path, 0) + n
    right = 0
    for path, n in sorted(rec.items()):
        want = counts.get(path, 0)
        if want == 0:
            wrong += n
            bad.append(f"{n} x path {path} never taken by the program")
        elif n > want:
            wrong += n - want
            right += want
            bad.append(f"path {path}: {n} recorded, the program made {want}")
        else:
            right += n
    share = right / total if total else 0.0
    tag = f"{label}: " if label else ""
    print(f"{tag}{events} events, {worker} of worker threads: {right} with the right stack, "
          f"{wrong} wrong, {nostack} without user stack; {len(rec)} of {len(counts)} paths seen")
    print(f"{tag}share of the program's {total} writes recorded with the right stack: "
          f"{right}/{total} = {share:.4f}")
    for b in bad[:show]:
        print(f"  WRONG {b}")
    if len(bad) > show:
        print(f"  ... {len(bad) - show} more")
    print(f"STORM {label or '-'} events={events} worker={worker} right={right} wrong={wrong} "
          f"nostack={nostack} share={share:.4f}")
    ok = wrong == 0 and (min_share is None or share >= min_share)
    return 0 if ok else 1


LOCK = re.compile(r"^(__GI_)?_*pthread_mutex_(lock|unlock(_usercnt)?)$")
JOIN = re.compile(r"^(__GI_)?_*pthread_(clock)?join(_ex)?$")
FUTEX_LEAF = re.compile(r"lll_lock_wa(it|ke)|futex|syscall")
FUTEX_OWN = {"worker", "locked_section", "main", "start_thread", "_start"}


def futex_shape(frames):
    """'lock', 'unlock' or 'join' for a right stack, None else"""
    def leaf_ok(leaf):
        return bool(leaf) and FUTEX_LEAF.search(leaf[0]) is not None and \
            not any(x in FUTEX_OWN or LOCK.match(x) or JOIN.match(x) for x in leaf)
    if len(frames) >= 6 and CLONE.match(frames[0]) and frames[1:4] == \
            ["start_thread", "worker", "locked_section"] and LOCK.match(frames[4]) and leaf_ok(frames[5:]):
        return "unlock" if "unlock" in frames[4] else "lock"
    if len(frames) >= 6 and frames[:4] == ["_start", "__libc_start_main", "__libc_start_call_main", "main"] \
            and JOIN.match(frames[4]) and leaf_ok(frames[5:]):
        return "join"
    return None


def cmd_futex(args):
    label, lost, show = "", 0, 3
    pos = []
    i = 0
    while i < len(args):
        if args[i] == "--label":
            label = args[i + 1]; i += 2
        elif args[i] == "--lost":
            lost = int(args[i + 1]); i += 2
        elif args[i] == "--show":
            show = int(args[i + 1]); i += 2
        else:
            pos.append(args[i]); i += 1
    if len(pos) != 1:
        sys.exit("usage: record_check.py futex FOLDED [--lost N] [--label L] [--show N]")
    events, kinds, other = 0, {"lock": 0, "unlock": 0, "join": 0}, []
    for comm, frames, n in read_folded(pos[0]):
        events += n
        k = futex_shape(frames)
        if k:
            kinds[k] += n
        else:
            other.append((n, comm, frames))
    right = sum(kinds.values())
    share = right / (events + lost) if events + lost else 0.0
    tag = f"{label}: " if label else ""
    print(f"{tag}{events} events ({lost} lost): {right} with a right stack (lock {kinds['lock']}, "
          f"unlock {kinds['unlock']}, join {kinds['join']}), {events - right} other")
    for n, comm, frames in sorted(other, key=lambda o: -o[0])[:show]:
        print(f"  OTHER {n} x {comm};{';'.join(frames)}")
    print(f"FUTEX {label or '-'} events={events} right={right} lost={lost} share={share:.4f}")
    return 0


def cmd_reach(args):
    label, frame, missed = "", "_start", None
    pos = []
    i = 0
    while i < len(args):
        if args[i] == "--label":
            label = args[i + 1]; i += 2
        elif args[i] == "--frame":
            frame = args[i + 1]; i += 2
        elif args[i] == "--missed":
            missed = args[i + 1]; i += 2
        else:
            pos.append(args[i]); i += 1
    if len(pos) != 1:
        sys.exit("usage: record_check.py reach FOLDED [--frame NAME] [--label L] [--missed FILE]")
    events = reached = 0
    lines = []
    for comm, frames, n in read_folded(pos[0]):
        events += n
        if frame in frames:
            reached += n
        else:
            lines.append(f"{';'.join([comm] + list(frames))} {n}")
    if missed:
        with open(missed, "w") as f:
            f.writelines(line + "\n" for line in lines)
    share = reached / events if events else 0.0
    print(f"REACH {label or '-'} events={events} reached={reached} share={share:.4f}")
    return 0


def cmd_perf2folded(args):
    f = open(args[0], encoding="utf-8", errors="replace") if args else sys.stdin
    agg = {}
    comm, frames = None, []

    def flush():
        if comm is not None:
            key = ";".join([comm.replace(";", ":")] + [x.replace(";", ":") for x in reversed(frames)])
            agg[key] = agg.get(key, 0) + 1

    for line in f:
        line = line.rstrip("\n")
        if not line.strip():
            flush()
            comm, frames = None, []
        elif line[0] in " \t":
            if comm is None:
                continue
            w = line.split(None, 1)
            sym = w[1].strip() if len(w) > 1 else "[unknown]"
            if sym.endswith("(inlined)"):
                continue
            sym = re.sub(r"\+0x[0-9a-f]+$", "", sym.split(" (")[0].strip())
            sym = re.sub(r"@.*$", "", sym) or "[unknown]"  # pthread_mutex_lock@@GLIBC_2.2.5
            frames.append(sym)
        else:
            flush()
            comm, frames = line.strip(), []
    flush()
    for key in sorted(agg):
        print(f"{key} {agg[key]}")
    return 0


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd = {"paths": cmd_paths, "futex": cmd_futex, "reach": cmd_reach, "perf2folded": cmd_perf2folded}.get(sys.argv[1])
    if not cmd:
        sys.exit(__doc__)
    sys.exit(cmd(sys.argv[2:]))


if __name__ == "__main__":
    main()
