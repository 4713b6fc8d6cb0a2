#!/usr/bin/env python3
"""Checks of recorded off-CPU intervals against the log of
tests/integration/progs/offcpu_paths.c, for tests/integration/offcpu.sh and
bench/offcpu/run.sh.

  offcpu_check.py CASE LOG EVENTS STATS [--min NS] [--label L]
        CASE: paths xcpu exit reuse pre thresh mixed preempt
  offcpu_check.py folded EVENTS FOLDED EVENT     folded sums = the events' weights
  offcpu_check.py pprof FOLDED TOP               go tool pprof -top = folded, per function
  offcpu_check.py share LOG EVENTS [--label L]   benchmark: share of blocked time on a right stack

LOG: the program's log (T, B, X, W, Q, S, STEAL lines). EVENTS: offcpu_events'
output (D, V, L lines). STATS: `ustack record --stats` stderr ("stat NAME VALUE").

What is checked (the program's clock reads are the oracle; no number is tuned):
- every interval (off-cpu and off-cpu-preempt) of a measured thread (one
  with B lines) lies inside one of that thread's measured calls [T0, T1]
  (the thread was switched out after it read T0 and back in before it read
  T1: causality, exact), or wholly before its first call or after its last
  (its start-up and exit, which are measured by nobody); an
  off-cpu-preempt interval may also lie between two calls, and so may any
  interval of processes that reuse one pid (reuse: R lines) when no reap
  of that pid falls inside it (one process's start-up before its call, or
  its log write and exit after it). Any other interval overlapping the
  span of its calls and inside none of them is WRONG: an interval of
  another thread, or one switch-out paired with a later thread's
  switch-in (pid reuse: an interval across a reap).
- every interval inside a call has the call's path as user stack: root
  first, the thread's entry (clone3/_start), ..., path_NAME, then WAIT
  (do_NAME_wait, spin_work, busy_loop) right below it, then only frames
  that are not ours (libc); an off-cpu-preempt interval needs only the
  entry and path_NAME (a thread is preempted anywhere, also in path_NAME's
  own clock reads); an off-cpu interval is never inside a call that does
  not block (busy).
- coverage: per path, the calls' wall time minus their CPU time (what the
  thread spent switched out in them) minus the intervals recorded inside
  them (off-cpu + off-cpu-preempt), summed with its sign over the calls
  (the skew of the two clocks lengthens one call's interval and shortens
  the next's: a sum of the shortfalls alone counted that skew as missing,
  0.6-0.7 ms over 20 pipe calls whose signed sum was 0.02 ms), must be at
  most
      short_ns + steal + (lost + unpaired) * max_call + calls * EPS
          + intervals * EPS_SWITCH
  and no call may fall short by more than CALL_JITTER (200 us; plus the
  run's steal, lost and unpaired as above, and its irq for busy; every
  blocking call blocks 1 ms or more, so a missed or cut interval is seen
  in its own call)
  short_ns: --stats offcpu_short_ns (intervals below --off-cpu-min); steal:
  the steal time of all CPUs during the run (a vCPU stolen while the thread
  runs is neither CPU time nor an interval); lost records, each at most a
  whole call; EPS = 20 us per call: the CPU clock and the sched_switch
  timestamps are read at two points of __schedule() (update_curr, the
  tracepoint), a few us apart with interrupts off (more on a loaded VM,
  whose host can stop the vCPU in between: steal that /proc/stat, in
  ticks, cannot show); irq (the CPU-bound
  case only, busy): the irq and softirq time of all CPUs during the run
  (/proc/stat, plus two ticks for its rounding): with IRQ_TIME_ACCOUNTING
  an interrupt's time is no task's CPU time, and the thread it interrupts
  was not switched out; a thread that sleeps all but a few us of each
  call meets too few interrupts for it to count; EPS_SWITCH = 10 us per
  interval recorded inside the call: each switch-out has that gap between
  the end of the thread's CPU time (update_curr) and the tracepoint's
  clock read (measured: 0.2 us per switch over 444 preemptions of one
  call on an idle machine; up to 3.2 us per interval beyond the 20 us of
  its call in reuse/bpf while a whole `make check` ran beside it, 6 us in
  mixed/bpf: 142 us over 5 calls of 7 intervals, 2 of them preemptions;
  allowed: 10 us).
  unpaired: --stats
  offcpu_unpaired, switch-outs whose switch-in the recorder never saw
  (the kernel's sched_switch stream itself misses a few under load:
  docs/cli/record.md), each at most a whole call; a call that must block
  may lack its interval only as many times as the recorder says so.
  Cases that check coverage record --off-cpu-preempt too, as a call's
  wall - CPU time includes the time it waited preempted; those that
  cannot (thresh, alt: --off-cpu alone) allow each call its thread's
  run-queue wait over the call (schedstat, the B line's last field), a
  bound on the time it waited preempted: a missing or cut sleep of 1 ms
  or more still shows unless the thread waited as long runnable.
- the recorder's own stats agree with the trace: offcpu_intervals = the
  number of off-cpu and off-cpu-preempt events, offcpu_ns = their sum.
Output: PASS/FAIL lines are the shell's; this prints findings, then one
"RESULT ok|bad REASON" line. Exit 0 when ok, 1 when not, 2 on bad input.
"""
import re
import sys

EPS = 20000
EPS_SWITCH = 10000
# one call's shortfall beyond which an interval is missing or cut short:
# every blocking call here blocks 1 ms or more; the clock skew of the two
# reads (EPS) moves a few tens of us between neighbouring calls
CALL_JITTER = 200000
CLONE = re.compile(r"^(__GI_)?_*clone3?$")
OFFCPU = ("off-cpu", "off-cpu-preempt")
WAIT = {
    "sleep": "do_sleep_wait", "cond": "do_cond_wait", "pipe": "do_pipe_wait",
    "mutex": "do_mutex_wait", "xcpu": "do_xcpu_wait", "reuse": "do_reuse_wait",
    "reuse-a": "do_reuse_wait", "reuse-b": "do_reuse_wait", "pre": "do_pre_wait",
    "presleep": "do_presleep_wait", "short": "do_short_wait", "long": "do_long_wait",
    "mixsleep": "do_mixsleep_wait", "spin": "spin_work", "busy": "busy_loop",
    "ping": "do_ping_wait", "pong": "do_pong_wait", "exit": "do_exit_wait",
}
OURS = set(WAIT.values()) | {"path_" + p.replace("-", "_") for p in WAIT}
NONBLOCKING = {"spin", "busy"}


class Log:
    def __init__(self, path):
        self.names, self.calls, self.x, self.w, self.q, self.stat = {}, {}, {}, {}, None, {}
        self.rdelay = {}  # (tid, call index) -> the thread's run-queue wait over the call
        self.steal, self.noreuse, self.irq = 0, None, 0
        self.reaped = {}  # pid -> times its processes had exited by (reuse)
        with open(path, encoding="utf-8") as f:
            for line in f:
                w = line.split()
                if not w:
                    continue
                if w[0] == "T":
                    self.names.setdefault(int(w[1]), []).append(w[2])
                elif w[0] == "B":
                    calls = self.calls.setdefault(int(w[1]), [])
                    if len(w) > 6:
                        self.rdelay[(int(w[1]), len(calls))] = int(w[6])
                    calls.append((w[2], int(w[3]), int(w[4]), int(w[5])))
                elif w[0] == "X":
                    self.x[int(w[2])] = (int(w[1]), int(w[3]), int(w[4]))
                elif w[0] == "W":
                    self.w[int(w[2])] = (int(w[3]), int(w[4]))
                elif w[0] == "Q":
                    self.q = (int(w[1]), int(w[2]), int(w[3]))
                elif w[0] == "S":
                    self.stat[w[1]] = (int(w[2]), int(w[3]), int(w[4]))
                elif w[0] == "STEAL":
                    self.steal = int(w[1])
                elif w[0] == "IRQ":
                    self.irq = int(w[1]) + 2 * int(w[2])
                elif w[0] == "R":
                    self.reaped.setdefault(int(w[1]), []).append(int(w[2]))
                elif w[0] == "NOREUSE":
                    self.noreuse = " ".join(w[1:])
        for c in self.calls.values():
            c.sort(key=lambda b: b[1])


class Events:
    def __init__(self, path):
        self.desc, self.ev, self.lost = {}, [], 0
        self.stop = {}  # (tid, time) -> why the event's user stack ended
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                w = line.rstrip("\n").split(" ", 8)
                if w[0] == "D":
                    self.desc[w[5]] = (int(w[2]), int(w[3]), int(w[4]))
                elif w[0] == "V":
                    frames = None if w[8] == "-" else w[8].split(";")
                    if w[7] != "-":
                        self.stop[(int(w[2]), int(w[4]))] = int(w[7])
                    self.ev.append((w[1], int(w[2]), int(w[3]), int(w[4]), int(w[5]), int(w[6]), frames))
                elif w[0] == "L":
                    self.lost += int(w[1])

    def intervals(self, kinds=OFFCPU):
        """(kind, tid, cpu, start, end, frames)"""
        return [(k, tid, cpu, t - v, t, fr) for k, tid, cpu, t, v, has, fr in self.ev if k in kinds]


def read_stats(path):
    st = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) == 3 and w[0] == "stat" and w[2].isdigit():
                st[w[1]] = int(w[2])
    return st


# enum ustack_stop_reason: USTACK_STOP_NOT_LOADED, USTACK_STOP_MAPS_BUSY
STOP_LOAD = (6, 7)


def stack_why(path, frames, kind):
    """None when frames is a whole stack of path, else why not"""
    if kind == "off-cpu" and path in NONBLOCKING:
        return f"an off-cpu interval inside {path}, which never blocks"
    if not frames:
        return "no user stack"
    fn, wait = "path_" + path.replace("-", "_"), WAIT[path]
    if fn not in frames:
        return f"no {fn} frame"
    k = frames.index(fn)
    if kind in ("off-cpu-preempt", "cpu-clock"):
        # preempted or sampled anywhere in the call, also in path_NAME's
        # own code around the wait (its loop, the clock reads): the path's
        # frame is enough
        pass
    elif k + 1 >= len(frames) or frames[k + 1] != wait:
        return f"{fn} is not followed by {wait}"
    if any(x in OURS for x in frames[k + 2:] if x not in ("do_pipe_wait", "spin_work")):
        return "a frame of ours below " + wait
    if not (CLONE.match(frames[0]) or frames[0] == "_start"):
        return f"the stack does not start at the thread's entry ({frames[0]})"
    return None


class Checker:
    def __init__(self, log, evs, stats):
        self.log, self.evs, self.stats = log, evs, stats
        self.bad, self.notes = [], []
        self.inside = {}  # (tid, call index) -> [intervals]

    def err(self, msg):
        self.bad.append(msg)

    def units(self, kinds):
        for k in kinds:
            d = self.evs.desc.get(k)
            if d is None:
                self.err(f"no EVENT_DESC {k} in the trace")
            elif d[0] != 3 or d[1] & 6 != 2:
                self.err(f"EVENT_DESC {k}: type {d[0]} flags {d[1]:#x}, want type 3 (off-cpu), unit ns (0x2)")
        for k, tid, cpu, t, v, has, fr in self.evs.ev:
            if k in OFFCPU and not has:
                self.err(f"a {k} event of tid {tid} without a value")
                break

    def stats_agree(self):
        iv = self.evs.intervals()
        n, ns = len(iv), sum(e - s for _, _, _, s, e, _ in iv)
        if self.stats.get("offcpu_intervals") != n or self.stats.get("offcpu_ns") != ns:
            self.err(f"--stats offcpu_intervals {self.stats.get('offcpu_intervals')} offcpu_ns "
                     f"{self.stats.get('offcpu_ns')}, the trace has {n} intervals of {ns} ns")

    def place(self):
        """every interval of a measured thread: inside one call, or outside the span"""
        outside = between = partial = 0
        for kind, tid, cpu, s, e, fr in self.evs.intervals():
            calls = self.log.calls.get(tid)
            if not calls:
                continue
            hit = [i for i, c in enumerate(calls) if c[1] <= s and e <= c[2]]
            if hit:
                self.inside.setdefault((tid, hit[0]), []).append((kind, cpu, s, e, fr))
                why = stack_why(calls[hit[0]][0], fr, kind)
                if why and self.evs.stop.get((tid, e)) in STOP_LOAD and \
                        self.stats.get("copies_skipped", 0) > 0:
                    # the walk stopped (a table not loaded yet, the
                    # mappings locked) while the ring was past half, so it
                    # sent no copy and kept its part of the stack (empty
                    # when it stopped at the first frame) with the reason:
                    # what a recorder the load starves answers, never an
                    # idle one (seen once beside stress-ng: a preempted
                    # spin with no user stack)
                    partial += 1
                    why = None
                if why:
                    if not fr:
                        # what the recorder counted of stacks it could not give
                        why += " (recorder: " + ", ".join(
                            f"{k} {self.stats.get(k, '?')}" for k in
                            ("no_user_stack", "not_loaded", "maps_busy", "copies_skipped",
                             "read_faults", "lost")) + ")"
                    self.err(f"{kind} interval of tid {tid} in {calls[hit[0]][0]}: {why}: "
                             f"{';'.join(fr or ['-'])}")
            elif e <= calls[0][1] or s >= calls[-1][2] or kind == "off-cpu-preempt":
                # a runnable thread is preempted anywhere: also between its
                # calls (the helpers' handshakes spin with sched_yield)
                outside += 1
            elif tid in self.log.reaped and not any(s < r < e for r in self.log.reaped[tid]):
                # reuse: between one process's call and the next one's,
                # within one process's life (its start-up, or its log
                # write and exit after the call, which may block: a page
                # fault in the dynamic linker, 0.14 ms once)
                between += 1
            else:
                self.err(f"{kind} interval [{s}, {e}] ({(e - s) / 1e6:.3f} ms) of tid {tid} overlaps "
                         f"its measured calls and lies in none of them: {';'.join(fr or ['-'])}")
        self.notes.append(f"{outside} intervals of measured threads before their first or after "
                          f"their last call (start-up, exit)")
        if partial:
            self.notes.append(f"{partial} intervals with a stack cut short (not-loaded, maps-busy) "
                              f"while copies were skipped (copies_skipped "
                              f"{self.stats.get('copies_skipped')})")
        if between:
            self.notes.append(f"{between} intervals between two calls of processes with one pid, "
                              f"each within one process's life")

    def coverage(self, paths, must_block=(), busy=False):
        short_ns = self.stats.get("offcpu_short_ns", 0)
        unpaired = self.stats.get("offcpu_unpaired", 0)
        # recorded without --off-cpu-preempt, a call's time waiting preempted
        # is in its wall - CPU time and in no interval: at most its run-queue
        # wait (B lines' last field; it also holds the wait after each
        # wakeup, which its off-cpu interval does include)
        preempt_seen = "off-cpu-preempt" in self.evs.desc
        per, unseen = {}, []
        for tid, calls in self.log.calls.items():
            for i, (p, t0, t1, cpu) in enumerate(calls):
                if p not in paths:
                    continue
                ivs = self.inside.get((tid, i), [])
                got = sum(e - s for _, _, s, e, _ in ivs)
                sleep = sum(e - s for k, _, s, e, _ in ivs if k == "off-cpu")
                rq = 0 if preempt_seen else self.log.rdelay.get((tid, i), 0)
                a = per.setdefault(p, [0, 0, 0, 0, 0, 0, 0, 0, 0])
                a[0] += 1; a[1] += t1 - t0 - cpu; a[2] += sleep; a[3] += got - sleep
                a[4] += t1 - t0 - cpu - got; a[5] = max(a[5], t1 - t0)
                a[6] += len(ivs); a[7] = max(a[7], t1 - t0 - cpu - got - rq); a[8] += rq
                if p in must_block and not any(k == "off-cpu" for k, *_ in ivs):
                    unseen.append(f"call {i} of tid {tid} in {p} ({(t1 - t0) / 1e6:.3f} ms, it "
                                  f"blocks every time) has no off-cpu interval")
        if len(unseen) > unpaired:
            self.err(f"{unseen[0]} ({len(unseen)} such calls, offcpu_unpaired {unpaired})")
        elif unseen:
            self.notes.append(f"{len(unseen)} calls without their interval, as many as the "
                              f"recorder's offcpu_unpaired {unpaired} allows: {unseen[0]}")
        for p in paths:
            if p not in per:
                self.err(f"no call of path {p} in the log")
                continue
            n, off, sleep, pre, missing, maxcall, nivs, worst, rq = per[p]
            # signed: the two clocks' skew makes one call's interval a few
            # us longer and the next one's shorter; a call short by more
            # than CALL_JITTER is an error of its own (below)
            missing = max(0, missing)
            irq = self.log.irq if busy else 0
            allowed = (short_ns + self.log.steal + irq + (self.evs.lost + unpaired) * maxcall +
                       n * EPS + nivs * EPS_SWITCH + rq)
            self.notes.append(f"path {p}: {n} calls, switched out {off / 1e6:.3f} ms (wall - CPU), "
                              f"recorded off-cpu {sleep / 1e6:.3f} ms + preempt {pre / 1e6:.3f} ms, "
                              f"missing {missing / 1e6:.3f} ms, allowed {allowed / 1e6:.3f} ms" +
                              ("" if preempt_seen else
                               f" (preemptions not recorded: run-queue wait {rq / 1e6:.3f} ms)"))
            irq = self.log.irq if busy else 0
            # irq: a busy call's interrupts are neither its CPU time nor an
            # interval (the run's whole irq time bounds one call's)
            if worst > CALL_JITTER + irq + self.log.steal + (self.evs.lost + unpaired) * maxcall:
                self.err(f"path {p}: a call's off-CPU time {worst / 1e6:.3f} ms short of its "
                         f"wall - CPU time (at most {CALL_JITTER / 1e6:.3f} ms of clock skew)")
            if missing > allowed:
                self.err(f"path {p}: {missing / 1e6:.3f} ms of the calls' off-CPU time not recorded "
                         f"(allowed {allowed / 1e6:.3f} ms: short {short_ns} ns, steal "
                         f"{self.log.steal} ns, irq {irq} ns, {self.evs.lost} lost, {unpaired} unpaired, "
                         f"{n} x {EPS} ns, {nivs} x {EPS_SWITCH} ns, run-queue wait {rq} ns)")
        return per

    def finish(self, label):
        for n in self.notes:
            print(f"  {label}: {n}")
        for b in self.bad[:8]:
            print(f"  {label}: WRONG {b}")
        if len(self.bad) > 8:
            print(f"  {label}: ... {len(self.bad) - 8} more")
        print(f"RESULT {'bad' if self.bad else 'ok'} {self.bad[0] if self.bad else ''}")
        return 1 if self.bad else 0


def case_paths(c, a):
    c.units(["off-cpu", "off-cpu-preempt"])
    c.place()
    c.coverage(["sleep", "cond", "pipe", "mutex"], must_block=["sleep"])


def case_xcpu(c, a):
    c.units(["off-cpu", "off-cpu-preempt"])
    c.place()
    c.coverage(["xcpu"])
    tid = next((t for t, n in c.log.names.items() if "p-xcpu" in n), None)
    if tid is None or not c.log.x:
        c.err("no p-xcpu rounds in the log")
        return
    moved = 0
    unseen_ok = c.stats.get("offcpu_unpaired", 0) + c.evs.lost
    for rnd, (t, before, after) in sorted(c.log.x.items()):
        t_s, t_w = c.log.w[rnd]
        ivs = [iv for iv in c.inside.get((tid, rnd), []) if iv[0] == "off-cpu"]
        whole = [iv for iv in ivs if iv[2] <= t_s and iv[3] >= t_w]
        if before == after:
            c.err(f"round {rnd}: the program woke on CPU {after}, where it blocked (not moved)")
        elif not whole and not ivs and unseen_ok > 0:
            # its switch-out or switch-in is one the recorder says it never
            # paired (the kernel's sched_switch stream misses a few under
            # load) or lost: as many rounds as it says may lack theirs
            unseen_ok -= 1
            c.notes.append(f"round {rnd}: no interval, within offcpu_unpaired + lost")
        elif len(whole) != 1:
            c.err(f"round {rnd}: {len(whole)} off-cpu intervals cover its whole blocked time "
                  f"[{t_s}, {t_w}] (of {len(ivs)} in the call), want 1")
        elif whole[0][1] != after:
            c.err(f"round {rnd}: the interval's cpu is {whole[0][1]}, it blocked on {before} "
                  f"and was switched in on {after}")
        else:
            moved += 1
    c.notes.append(f"{moved} of {len(c.log.x)} rounds: blocked on one CPU, one whole interval "
                   f"ending on the other")


def case_exit(c, a):
    c.units(["off-cpu"])
    if not c.log.q:
        c.err("no Q line in the log")
        return
    tid, t0, texit = c.log.q
    ivs = [iv for iv in c.evs.intervals(("off-cpu",)) if iv[1] == tid and iv[4] > t0]
    ok = [iv for iv in ivs if t0 <= iv[3] <= texit <= iv[4]]
    if len(ok) != 1:
        c.err(f"p-exit (tid {tid}, blocked from {t0}, process exit at {texit}): {len(ok)} intervals "
              f"from its block to its end, want 1 ({len(ivs)} intervals after {t0})")
    else:
        why = stack_why("exit", ok[0][5], "off-cpu")
        if why:
            c.err(f"p-exit's interval: {why}: {';'.join(ok[0][5] or ['-'])}")
    # offcpu_unpaired is not asserted: an exiting thread's last switch-out
    # comes after perf removed its per-thread events (copy), so no
    # recorder need see it
    c.notes.append(f"offcpu_unpaired {c.stats.get('offcpu_unpaired')}")


def case_reuse(c, a):
    c.units(["off-cpu", "off-cpu-preempt"])
    c.place()
    paths = ["reuse"] + ([] if c.log.noreuse else ["reuse-a", "reuse-b"])
    c.coverage(paths, must_block=paths)
    if c.log.noreuse:
        c.notes.append("processes with one pid not made: " + c.log.noreuse)
    else:
        same = [t for t, n in c.log.names.items() if n.count("p-reuse-a") + n.count("p-reuse-b") > 1]
        c.notes.append(f"pid {same} used by {sum(len(c.log.calls[t]) for t in same)} processes in turn")


def case_pre(c, a):
    c.units(["off-cpu", "off-cpu-preempt"])
    c.place()
    c.coverage(["presleep"], must_block=["presleep"])
    for tid, calls in c.log.calls.items():
        for i, call in enumerate(calls):
            # preempted after its wake-up it may be: not asleep
            slept = [iv for iv in c.inside.get((tid, i), []) if iv[0] == "off-cpu"]
            if call[0] == "pre" and slept:
                c.err(f"the wait p-pre was in when the recording started has "
                      f"{len(slept)} off-cpu intervals: its switch-out was never seen")


def case_thresh(c, a):
    c.units(["off-cpu"])
    m = a["min"]
    d = c.evs.desc.get("off-cpu")
    if d and d[2] != m:
        c.err(f"EVENT_DESC off-cpu period {d[2]}, want the threshold {m}")
    short = [e - s for _, _, _, s, e, _ in c.evs.intervals() if e - s < m]
    if short:
        c.err(f"{len(short)} intervals below --off-cpu-min {m} ns recorded (e.g. {short[0]} ns)")
    c.place()
    c.coverage(["long"], must_block=["long"])
    n_short = sum(1 for calls in c.log.calls.values() for p, t0, t1, _ in calls
                  if p == "short" and t1 - t0 < m)
    # each short call sleeps (nanosleep): its switch-out is dropped as short,
    # or, when the kernel's stream lacked its switch-in (loaded machine),
    # counted unpaired instead
    unpaired = c.stats.get("offcpu_unpaired", 0)
    if c.stats.get("offcpu_short", 0) + unpaired < n_short:
        c.err(f"--stats offcpu_short {c.stats.get('offcpu_short')} (offcpu_unpaired {unpaired}), "
              f"but {n_short} calls shorter than {m} ns blocked")
    c.notes.append(f"{n_short} calls shorter than the threshold; offcpu_short "
                   f"{c.stats.get('offcpu_short')} ({c.stats.get('offcpu_short_ns')} ns)")


def case_alt(c, a):
    # thresh's program with every interval recorded: one thread blocks in
    # turn from two callers (path_short, path_long) into one nanosleep at
    # one stack depth, its registers at each kernel entry the same: each
    # interval with its own caller's stack (place), every call with one
    c.units(["off-cpu"])
    c.place()
    c.coverage(["short", "long"], must_block=["short", "long"])


def case_mixed(c, a):
    c.units(["off-cpu", "off-cpu-preempt"])
    d = c.evs.desc.get("cpu-clock")
    if d is None or d[1] & 6 != 0:
        c.err(f"EVENT_DESC cpu-clock {d}: want one, unit count")
    c.place()
    c.coverage(["mixsleep"], must_block=["mixsleep"])
    tid = next((t for t, n in c.log.names.items() if "p-mix" in n), None)
    spin = [fr for k, t, cpu, tm, v, has, fr in c.evs.ev if k == "cpu-clock" and t == tid
            and fr and "path_spin" in fr]
    if not spin:
        c.err("no cpu-clock sample of p-mix in path_spin")
    elif any(stack_why("spin", fr, "cpu-clock") for fr in spin):
        c.err("a cpu-clock sample in path_spin without its whole stack")
    c.notes.append(f"{len(spin)} cpu-clock samples of p-mix in path_spin")


def case_preempt(c, a):
    c.units(["off-cpu", "off-cpu-preempt"])
    c.place()
    c.coverage(["busy"], busy=True)
    n = sum(1 for k, *_ in (iv for v in c.inside.values() for iv in v) if k == "off-cpu-preempt")
    c.notes.append(f"{n} off-cpu-preempt intervals inside the busy loops")
    if n == 0:
        c.err("no off-cpu-preempt interval inside the busy loops")


def cmd_folded(args):
    """the sum of the folded lines holding path_X = the weights of EVENT's
    events whose stack holds path_X, for every such function; and in all"""
    evs, folded, kind = Events(args[0]), args[1], args[2]
    want, total = {}, 0
    for k, tid, cpu, t, v, has, fr in evs.ev:
        if k != kind:
            continue
        total += v
        for f in set(fr or []) & OURS:
            want[f] = want.get(f, 0) + v
    got, gtotal = {}, 0
    with open(folded, encoding="utf-8", errors="replace") as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            gtotal += int(n)
            for fn in set(stack.split(";")) & OURS:
                got[fn] = got.get(fn, 0) + int(n)
    bad = [f"{fn}: folded {got.get(fn, 0)}, events {want.get(fn, 0)}"
           for fn in sorted(set(want) | set(got)) if got.get(fn, 0) != want.get(fn, 0)]
    if gtotal != total:
        bad.insert(0, f"total: folded {gtotal}, events {total}")
    return verdict("folded", f"{len(want)} functions of ours, total {total} ({kind})", bad)


def verdict(label, note, bad):
    """the note, the first findings, the RESULT line; the exit status"""
    print(f"  {label}: {note}")
    for b in bad[:6]:
        print(f"  {label}: WRONG {b}")
    print(f"RESULT {'bad' if bad else 'ok'} {bad[0] if bad else ''}")
    return 1 if bad else 0


def cmd_pprof(args):
    """`go tool pprof -top` cum per function = the folded sum of lines holding it"""
    folded, top = args[0], args[1]
    cum = {}
    with open(folded, encoding="utf-8", errors="replace") as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            for fn in set(stack.split(";")[1:]) & OURS:
                cum[fn] = cum.get(fn, 0) + int(n)
    got = {}
    unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "": 1}
    num = re.compile(r"^([0-9.]+)(ns|us|ms|s|)$")
    with open(top, encoding="utf-8", errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) >= 6 and w[-1] in OURS:
                m = num.match(w[3])
                if m:
                    # pprof rounds to what it prints ("0.28s", "27.50ms",
                    # "750ns"): half a unit of the last digit printed
                    digits = m.group(1).partition(".")[2]
                    half = 0.5 * 10 ** -len(digits) * unit[m.group(2)]
                    got[w[-1]] = (float(m.group(1)) * unit[m.group(2)], half)
    bad = []
    for fn, n in sorted(cum.items()):
        g, half = got.get(fn, (None, 0))
        if g is None or abs(g - n) > max(half * (1 + 1e-9), 1):
            bad.append(f"{fn}: pprof cum {g}, folded {n}")
    return verdict("pprof", f"{len(cum)} functions of ours compared", bad)


def cmd_share(args):
    """benchmark: of the time measured threads spent switched out in their
    calls (wall - CPU), the share recorded as intervals with a whole right
    stack; and lost/unpaired"""
    log, evs = Log(args[0]), Events(args[1])
    c = Checker(log, evs, {})
    c.place()
    off = right = 0
    for tid, calls in log.calls.items():
        for i, (p, t0, t1, cpu) in enumerate(calls):
            off += t1 - t0 - cpu
            for kind, _, s, e, fr in c.inside.get((tid, i), []):
                if not stack_why(p, fr, kind):
                    right += e - s
    print(f"SHARE switched_out_ns={off} right_ns={right} share={right / off if off else 0:.4f} "
          f"lost={evs.lost} wrong={len(c.bad)}")
    return 0


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "folded":
        return cmd_folded(args)
    if cmd == "pprof":
        return cmd_pprof(args)
    if cmd == "share":
        return cmd_share(args)
    cases = {"paths": case_paths, "xcpu": case_xcpu, "exit": case_exit, "reuse": case_reuse,
             "pre": case_pre, "thresh": case_thresh, "alt": case_alt, "mixed": case_mixed, "preempt": case_preempt}
    if cmd not in cases or len(args) < 3:
        sys.exit(__doc__)
    opts = {"min": 0, "label": cmd}
    rest = args[3:]
    while rest:
        if rest[0] == "--min":
            opts["min"] = int(rest[1])
        elif rest[0] == "--label":
            opts["label"] = rest[1]
        rest = rest[2:]
    c = Checker(Log(args[0]), Events(args[1]), read_stats(args[2]))
    c.stats_agree()
    cases[cmd](c, opts)
    return c.finish(opts["label"])


if __name__ == "__main__":
    sys.exit(main())
