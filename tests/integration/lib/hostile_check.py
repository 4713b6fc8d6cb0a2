#!/usr/bin/env python3
"""Checks of tests/integration/record_hostile.sh and record_scale.sh:
stacks of programs whose code moves (dlclose/dlopen, munmap/mmap at one
address), that exec, or that fork many children, read
from `ustack report --format perf-script` (a header line per event, then
one "ADDR NAME+0xOFF (PATH)" line per frame, innermost first; kernel frames
first, their ADDR >= 0xffff800000000000).

  hostile_check.py moving SCRIPT --via VIA=PATH:F1,F2,... [--via ...] [--min N]
  hostile_check.py exec SCRIPT --image PATH:CHAIN [--image ...] [--min N]
  hostile_check.py children SCRIPT FORKER TRUE N LOST

moving: VIA is a function of the executable that calls into a library at
PATH (which moves); F1, F2, ... its frames from VIA's callee on, root
first (a_outer,a_spin). The truth is that VIA does not move, and that F1
is called from VIA only. A user stack is
  wrong  when it holds frames of two of the libraries, or two VIA frames;
         or when it holds VIA and the frames on the leaf side of VIA, root
         first, are not a prefix of F1,F2,... each named from PATH (a frame
         there may also be "[unknown] ([unknown])": the recorder did not
         attribute it; never a frame of another file, nor "[unknown]
         (PATH)", an offset of PATH where no function is); or when it holds
         a frame named one of F1,F2,... from PATH, no VIA, and a frame on
         the root side of PATH's outermost frame (a caller other than VIA:
         made up by an unwind with the wrong rules)
  right  it holds VIA, and the frames after it are all named and right
         (at least one)
  unknown  it holds VIA, and one of the frames after it is unattributed
  cut    it holds frames of PATH but no VIA, and ends at PATH's outermost
         frame (the unwind stopped in the library: neither right nor wrong)
Output: the first wrong stacks, then "MOVING via=VIA right=R unknown=U
wrong=W cut=C" per VIA; exit 1 when a stack is wrong, a VIA has fewer
than --min right stacks (default 1), or right < unknown (mostly
unattributed).

exec: each PATH an executable image the process was during the recording,
CHAIN its functions, root first (main,exa_outer,exa_spin). Every frame
named from PATH must be a function of CHAIN, the C runtime's start and
exit code (_start, _init, _fini, __do_global_dtors_aux, ...), the image's own
ex*_go (the call to execv), or its PLT (NAME@plt, or _init: the symbol
before .plt when the PLT has none); a stack must not hold frames of two
images;
"[unknown] (PATH)" is wrong. Right: a stack whose frames of PATH, root
first, end with all of CHAIN. Output "EXEC image=PATH right=R wrong=W";
exit 1 when a stack is wrong or an image has fewer than --min right.

children: the exit_group() calls (syscalls:sys_enter_exit_group events)
of the N children of progs/hostile_forker.c (path FORKER): half of them
exec'd TRUE (comm: TRUE's base name), half renamed themselves
hostile_child. Each calls exit_group() once, so the count C of such
events must be N when LOST (the records the recorder says it lost) is 0,
and at least N - LOST otherwise (a lost event or a lost comm record: the
loss is counted), never more than N: printed, for the caller to judge
(the exit status is about the stacks). The stacks of hostile_child's calls
must hold main -> hf_spawn -> hf_child named from FORKER ("right"), or
no user frame at all (an event the recorder kept without a user stack);
a frame of FORKER named otherwise, or a frame of TRUE, is wrong; a stack
cut short is "partial". The stacks of TRUE's calls must hold no frame of
FORKER (the picture of the parent kept after the exec). At least half of
hostile_child's calls right. Output "CHILDREN n=N exits=C exec=E
forked=F right=R partial=P nostack=S wrong=W lost=L"; exit 1 when a stack
is wrong or fewer than half of hostile_child's are right.
"""
import re
import sys

HEADER = re.compile(r"^(\S.*?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([0-9.]+):\s+(\d+)\s+(\S+):\s*$")
FRAME = re.compile(r"^\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)$")
KERNEL_MIN = 0xFFFF800000000000


def read_script(path):
    """[(header, [(name, path), ...] user frames, innermost first)]"""
    out, cur = [], None
    with open(path, encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                cur = None
                continue
            if not line[0].isspace():
                # a header (whatever its comm: record -a sees any program)
                cur = (line, [])
                out.append(cur)
                continue
            m = FRAME.match(line)
            if cur is None:
                sys.exit(f"hostile_check: {path}:{no}: a frame line before any header: {line[:120]}")
            if not m:
                cur[1].append(("?", "?"))
                continue
            if int(m.group(1), 16) >= KERNEL_MIN:
                continue
            name = re.sub(r"\+0x[0-9a-f]+$", "", m.group(2))
            cur[1].append((name, m.group(3)))
    return out


def show(frames):
    return ";".join(f"{n}({p.rsplit('/', 1)[-1]})" for n, p in reversed(frames))


def cmd_moving(script, vias, minimum):
    events = read_script(script)
    st = {v: dict(right=0, unknown=0, wrong=0, cut=0) for v in vias}
    lib_of = {path: v for v, (path, _) in vias.items()}
    examples, cut_example = [], {}

    def wrong(vs, why, frames):
        for v in vs:
            st[v]["wrong"] += 1
        examples.append(f"{why}: {show(frames)}")

    for hdr, frames in events:
        root = list(reversed(frames))
        names = [n for n, _ in root]
        libs = sorted({lib_of[p] for _, p in root if p in lib_of})
        held = [v for v in vias if v in names]
        if len(libs) > 1:
            wrong(libs, "frames of two libraries", frames)
            continue
        if len(held) > 1 or (held and names.count(held[0]) > 1):
            wrong(held, "two VIA frames", frames)
            continue
        if not held:
            if not libs:
                continue
            v = libs[0]
            path, chain = vias[v]
            k = min(i for i, (_, p) in enumerate(root) if p == path)
            if k > 0 and any(n in chain and p == path for n, p in root):
                n, p = root[k - 1]
                wrong([v], f"{root[k][0]} ({path}) called from {n} ({p}), not from {v}", frames)
            else:
                st[v]["cut"] += 1
                cut_example.setdefault(v, show(frames))
            continue
        v = held[0]
        path, chain = vias[v]
        callee = root[names.index(v) + 1:]
        bad, unknown = None, False
        if len(callee) > len(chain):
            bad = f"{len(callee)} frames above {v}, at most {len(chain)} expected"
        for i, (n, p) in enumerate(callee):
            if bad:
                break
            if n == "[unknown]" and p == "[unknown]":
                unknown = True
            elif p != path or n != chain[i]:
                bad = f"frame {i + 1} above {v} is {n} ({p}), want {chain[i]} ({path})"
        if bad:
            wrong([v], bad, frames)
        elif unknown:
            st[v]["unknown"] += 1
        elif callee:
            st[v]["right"] += 1
    fail = False
    for ex in examples[:4]:
        print("wrong:", ex)
    for v, s in st.items():
        print(f"MOVING via={v} right={s['right']} unknown={s['unknown']} wrong={s['wrong']} cut={s['cut']}")
        if s["wrong"] or s["right"] < minimum or s["right"] < s["unknown"]:
            fail = True
            if v in cut_example:
                print(f"cut: {cut_example[v]}")
    return 1 if fail else 0


CRT = {"_start", "_init", "_fini", "__do_global_dtors_aux", "deregister_tm_clones",
       "register_tm_clones", "frame_dummy"}


def cmd_exec(script, images, minimum):
    events = read_script(script)
    right = {p: 0 for p in images}
    wrong = {p: 0 for p in images}
    examples = []
    for hdr, frames in events:
        held = {p for _, p in frames if p in images}
        if not held:
            continue
        if len(held) > 1:
            for p in held:
                wrong[p] += 1
            examples.append(f"frames of {len(held)} images: {show(frames)}")
            continue
        p = held.pop()
        chain = images[p]
        own = [n for n, q in reversed(frames) if q == p]  # root first
        # the C runtime's start and exit code of the image (the last image
        # returns from main: its destructors run, __do_global_dtors_aux
        # sampled there is named right)
        ok = set(chain) | CRT | {c[:4] + "go" for c in chain if c.startswith("ex")}
        bad = [n for n in own if n not in ok and not n.endswith("@plt")]
        if bad:
            wrong[p] += 1
            examples.append(f"{bad[0]} named from {p}: {show(frames)}")
        elif own[-len(chain):] == chain:
            right[p] += 1
    for ex in examples[:5]:
        print("wrong:", ex)
    fail = False
    for p in images:
        print(f"EXEC image={p} right={right[p]} wrong={wrong[p]}")
        if wrong[p] or right[p] < minimum:
            fail = True
    return 1 if fail else 0


def cmd_children(script, forker, true_path, n, lost):
    events = read_script(script)
    true_comm = true_path.rsplit("/", 1)[-1][:15]
    st = dict(exec=0, forked=0, right=0, partial=0, nostack=0, wrong=0)
    examples = []
    allowed = {"_start", "main", "hf_spawn", "hf_child", "_init"}
    for hdr, frames in events:
        m = HEADER.match(hdr)
        if not m:
            continue
        comm, event = m.group(1).strip(), m.group(7)
        if event != "syscalls:sys_enter_exit_group" or comm not in (true_comm, "hostile_child"):
            continue
        root = list(reversed(frames))
        if comm == true_comm:
            st["exec"] += 1
            if any(p == forker for _, p in root):
                st["wrong"] += 1
                examples.append(f"{comm}: a frame of the forker after the exec: {show(frames)}")
            continue
        st["forked"] += 1
        bad = [f"{n_} ({p})" for n_, p in root
               if (p == forker and n_ not in allowed and not n_.endswith("@plt")) or p == true_path]
        own = [n_ for n_, p in root if p == forker]
        if bad:
            st["wrong"] += 1
            examples.append(f"{comm}: {bad[0]}: {show(frames)}")
        elif not root:
            st["nostack"] += 1
        elif "main;hf_spawn;hf_child" in ";".join(own):
            st["right"] += 1
        else:
            st["partial"] += 1
    exits = st["exec"] + st["forked"]
    for ex in examples[:3]:
        print("wrong:", ex)
    print(f"CHILDREN n={n} exits={exits} exec={st['exec']} forked={st['forked']} right={st['right']} "
          f"partial={st['partial']} nostack={st['nostack']} wrong={st['wrong']} lost={lost}")
    # the count (n - lost <= exits <= n) is the caller's to judge
    ok = st["wrong"] == 0 and 2 * st["right"] >= st["forked"] and st["forked"] > 0
    return 0 if ok else 1


def main(argv):
    if len(argv) < 3 or argv[1] not in ("moving", "exec", "children"):
        sys.exit(__doc__)
    what, script, rest = argv[1], argv[2], argv[3:]
    if what == "children":
        if len(rest) != 4:
            sys.exit(__doc__)
        return cmd_children(script, rest[0], rest[1], int(rest[2]), int(rest[3]))
    specs, minimum = {}, 1
    i = 0
    while i < len(rest):
        if rest[i] in ("--via", "--image") and i + 1 < len(rest):
            if rest[i] == "--via":
                v, _, spec = rest[i + 1].partition("=")
                path, _, fns = spec.rpartition(":")
                specs[v] = (path, fns.split(","))
            else:
                path, _, fns = rest[i + 1].rpartition(":")
                specs[path] = fns.split(",")
            i += 2
        elif rest[i] == "--min" and i + 1 < len(rest):
            minimum = int(rest[i + 1])
            i += 2
        else:
            sys.exit(f"hostile_check: bad argument {rest[i]}")
    if not specs:
        sys.exit(__doc__)
    return cmd_moving(script, specs, minimum) if what == "moving" else cmd_exec(script, specs, minimum)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
