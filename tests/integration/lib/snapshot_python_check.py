#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks `ustack snapshot` of tests/integration/progs/py_paths.py against
the program's own dump (T <native tid>, then F <qualname>|<file>|<line>,
innermost first).

usage: snapshot_python_check.py DUMP DIR PLACED
  DIR holds the outputs: json (default), nopy.json (--no-python),
  short.json (-d 1), speedscope.json, text, nopy.text, only.text (--python-only), folded.
  PLACED: 1 when the interpreter has _PyEval_EvalFrameDefault among its
  symbols (every Python frame must then be placed under such a native
  frame), 0 when not (every one must be unplaced, with the reason).
Prints '# ...' lines for what differs; exit status 1 when anything does.
"""
import json
import os
import re
import sys

EVAL = "_PyEval_EvalFrameDefault"


def read_dump(path):
    out, cur = {}, None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("T "):
            cur = out.setdefault(int(line[2:]), [])
        elif line.startswith("F ") and cur is not None:
            func, file, ln = line[2:].rsplit("|", 2)
            cur.append((func, file, int(ln)))
    return out


def py_of(th):
    """The thread's Python frames, innermost first: placed ones in the
    frame list, then those not placed"""
    fr = [(f["function"], f["file"], f["line"]) for f in th["frames"] if f.get("python")]
    return fr + [(f["function"], f["file"], f["line"]) for f in th.get("python_unplaced", [])]


def check_placement(tid, th, placed, bad):
    frames = th["frames"]
    if not placed:
        if any(f.get("python") for f in frames) or "python_note" not in th or \
                "not among the interpreter's symbols" not in th["python_note"]:
            bad.append("thread %d: a build without %s, yet frames placed or no reason: %s"
                       % (tid, EVAL, th.get("python_note")))
        return
    if th.get("python_unplaced") or th.get("python_note"):
        bad.append("thread %d: not placed: %s" % (tid, th.get("python_note")))
    # each run of Python frames is followed by a native frame of the eval
    # function, and each such native frame is preceded by a run
    for i, f in enumerate(frames):
        nxt = frames[i + 1] if i + 1 < len(frames) else None
        prev = frames[i - 1] if i else None
        if f.get("python") and not (nxt and (nxt.get("python") or nxt.get("function") == EVAL)):
            bad.append("thread %d: Python frame %s followed by %s, not %s"
                       % (tid, f["function"], nxt and nxt.get("function"), EVAL))
        if not f.get("python") and f.get("function") == EVAL and not (prev and prev.get("python")):
            bad.append("thread %d: native frame %d (%s) runs no Python frame" % (tid, i, EVAL))


def native_of(th):
    return [(f["pc"], f["function"]) for f in th["frames"] if not f.get("python")]


def check_json(want, d, placed, bad):
    doc = json.load(open(os.path.join(d, "json")))
    nopy = json.load(open(os.path.join(d, "nopy.json")))
    threads = {t["tid"]: t for t in doc["threads"]}
    if not doc.get("python") or not doc["python"].get("read"):
        bad.append("json: python %s" % doc.get("python"))
    if nopy.get("python") is not None:
        bad.append("--no-python json: python %s, want null" % nopy.get("python"))
    for tid, frames in want.items():
        th = threads.get(tid)
        if th is None:
            bad.append("thread %d not in the snapshot" % tid)
            continue
        if py_of(th) != frames:
            bad.append("thread %d: Python frames differ:\n#   program: %s\n#   snapshot: %s"
                       % (tid, frames, py_of(th)))
        check_placement(tid, th, placed, bad)
    # the native frames are the same as without Python, in the same order
    # (every thread of the program is blocked: nothing moved)
    for t in nopy["threads"]:
        if any(f.get("python") for f in t["frames"]) or "python_unplaced" in t:
            bad.append("--no-python: thread %d has Python frames" % t["tid"])
        if t["tid"] in threads and native_of(threads[t["tid"]]) != native_of(t):
            bad.append("thread %d: native frames differ from --no-python's" % t["tid"])


def check_unplaced(want, d, bad):
    """-d 1: one native frame, no eval frame, so no run can be placed:
    every Python frame is in python_unplaced, in order, with the reason"""
    doc = json.load(open(os.path.join(d, "short.json")))
    threads = {t["tid"]: t for t in doc["threads"]}
    for tid, frames in want.items():
        th = threads.get(tid, {"frames": []})
        got = [(f["function"], f["file"], f["line"]) for f in th.get("python_unplaced", [])]
        if got != frames or any(f.get("python") for f in th["frames"]) or \
                not th.get("python_note", "").startswith("Python frames not placed: "):
            bad.append("-d 1: thread %d: unplaced %s, note %s" % (tid, got, th.get("python_note")))
    if doc["python"].get("unplaced") != len(want):
        bad.append("-d 1: python %s, want %d unplaced" % (doc["python"], len(want)))


def check_speedscope(want, d, bad):
    """each thread's sample: its Python frames (the frames with a line in
    a .py file, root first) are the program's, reversed, each right after
    the eval function or another Python frame"""
    doc = json.load(open(os.path.join(d, "speedscope.json")))
    fr = doc["shared"]["frames"]
    got = {}
    for p in doc["profiles"]:
        tid = int(p["name"].rsplit("(", 1)[1].rstrip(")"))
        stack = [fr[i] for i in p["samples"][0]]
        py = [k for k, f in enumerate(stack) if f.get("line") and f.get("file", "").endswith(".py")]
        for k in py:
            if k == 0 or not (k - 1 in py or stack[k - 1]["name"] == EVAL):
                bad.append("speedscope: thread %d: %s after %s" % (tid, stack[k]["name"],
                                                                   stack[k - 1]["name"]))
        got[tid] = [(stack[k]["name"], stack[k]["file"], stack[k]["line"]) for k in reversed(py)]
    for tid, frames in want.items():
        if got.get(tid) != frames:
            bad.append("speedscope: thread %d: %s" % (tid, got.get(tid)))


def check_pprof(want, d, bad):
    """`go tool pprof -traces` of the profile: each thread's Python frames
    in order among its frames, named exactly as the program names them
    ("<module>", "f.<locals>.<lambda>": go tool pprof strips "<...>" from a
    function whose name equals its system name, so the profile's must
    differ), each run followed by the eval function"""
    path = os.path.join(d, "pprof.traces")
    if not os.path.exists(path):
        return
    blocks, cur = {}, None
    for line in open(path):
        m = re.match(r"\s+thread:\s+(\d+)", line)
        if m:
            cur = blocks.setdefault(int(m.group(1)), [])
        elif cur is not None and line.strip() and not line.startswith("-") and ":" not in line:
            cur.append(line.split()[-1] if line.split()[0].isdigit() else line.strip())
    for tid, frames in want.items():
        names = [f[0] for f in frames]
        stack = blocks.get(tid, [])
        got = [n for n in stack if n in set(names)]
        if got != names:
            bad.append("pprof: thread %d: %s, want %s" % (tid, got, names))
            continue
        for k, n in enumerate(stack):
            # the next location: functions inlined at its pc come first,
            # marked "(inline)" (a build with DWARF: do_call_core inlined in
            # the eval function), then the function that holds them
            j = k + 1
            while j < len(stack) and stack[j].endswith("(inline)"):
                j += 1
            if n in names and j < len(stack) and stack[k + 1] not in names and \
                    stack[j] != EVAL:
                bad.append("pprof: thread %d: %s above %s" % (tid, n, stack[j]))


def renumber(text):
    """text output without its Python frames, the others numbered again"""
    out, n = [], 0
    for line in text.splitlines():
        if re.match(r"#\d+ py  ", line):
            continue
        if line.startswith("# ") and not line.startswith("# stopped: "):
            continue  # a note on the Python frames
        m = re.match(r"#(\d+) (0x.*)", line)
        if m:
            out.append("#%d %s" % (n, m.group(2)))
            # the functions inlined at a pc share its number
            n += 0 if line.endswith("[inlined]") else 1
            continue
        if line.startswith("TID "):
            n = 0
        out.append(line)
    return out


def text_threads(text):
    out, cur = {}, None
    for line in text.splitlines():
        if line.startswith("TID "):
            cur = out.setdefault(int(line.split()[1]), [])
        elif cur is not None and line:
            cur.append(line)
    return out


def py_line(n, f):
    return "#%d py  %s (%s%s)" % (n, f[0], f[1], ":%d" % f[2] if f[2] else "")


def check_text(want, d, bad):
    text = open(os.path.join(d, "text")).read()
    nopy = open(os.path.join(d, "nopy.text")).read()
    if renumber(text) != nopy.splitlines():
        bad.append("text without its py lines is not --no-python's text")
    if re.search(r"^#\d+ py  ", nopy, re.M):
        bad.append("--no-python text has py lines")
    # each Python frame's line in the merged text, numbered in place
    th = text_threads(text)
    for tid, frames in want.items():
        lines = [l for l in th.get(tid, []) if re.match(r"#\d+ py  ", l)]
        got = [re.sub(r"^#\d+ ", "", l) for l in lines]
        if got != [py_line(0, f).split(" ", 1)[1] for f in frames]:
            bad.append("text: thread %d: %s" % (tid, lines))
    only = text_threads("\n".join(l for l in open(os.path.join(d, "only.text")).read().splitlines()
                                  if not l.startswith("# ")))
    for tid, frames in want.items():
        exp = [py_line(i, f) for i, f in enumerate(frames)]
        if only.get(tid) != exp:
            bad.append("--python-only: thread %d:\n#   want %s\n#   got  %s"
                       % (tid, exp, only.get(tid)))


def check_folded(want, d, placed, bad):
    lines = open(os.path.join(d, "folded")).read().splitlines()
    for tid, frames in want.items():
        exp = ["py::%s (%s:%d)" % (f[0], os.path.basename(f[1]), f[2]) for f in reversed(frames)]
        ok = False
        for line in lines:
            stack = line.rsplit(" ", 1)[0].split(";")
            got = [s for s in stack if s.startswith("py::")]
            if got == exp:
                ok = True
                # outermost Python frame right after the eval function
                i = stack.index(exp[0])
                if placed and stack[i - 1] != EVAL:
                    bad.append("folded: %s after %s, not %s" % (exp[0], stack[i - 1], EVAL))
        if not ok:
            bad.append("folded: no line with thread %d's Python frames %s" % (tid, exp))


def main():
    want = read_dump(sys.argv[1])
    d, placed = sys.argv[2], sys.argv[3] == "1"
    bad = []
    if not want or not all(want.values()):
        bad.append("the program's dump is empty")
    check_json(want, d, placed, bad)
    check_unplaced(want, d, bad)
    if placed:
        check_speedscope(want, d, bad)
        check_pprof(want, d, bad)
    check_text(want, d, bad)
    check_folded(want, d, placed, bad)
    for b in bad:
        print("# " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
