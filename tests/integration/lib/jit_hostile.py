#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Maps and oracles of jit_perfmap_hostile.sh (progs/hostile_jit.c).

  jit_hostile.py hostile MAP INFO        write the hostile map of INFO's process
  jit_hostile.py fake DIR                DIR/head, DIR/tail: 999,995 fake lines
                                         (addresses spread over 64 bits)
  jit_hostile.py million MAP INFO DIR    DIR/head + the 5 real lines + DIR/tail
  jit_hostile.py check KIND FMT OUT INFO [MIN]
        KIND  hostile | million (fixed names) or rewrite (self-checking names)
        FMT   snap (`snapshot -m` text) or script (`report -f perf-script`)
        MIN   frames in spin named HJ_SPIN (hostile, million) or frames named
              (rewrite) at least (default 1)
        Prints one line: "ok SUMMARY" (exit 0) or "bad REASON" (exit 1).

INFO is the line hostile_jit writes: PID SPIN SPIN_SIZE NORET NORET_SIZE.
Every frame whose address lies in the JIT region (the 64 KiB the program
maps) is checked; the expected names:
  hostile/million: a frame in [SPIN, SPIN + SPIN_SIZE] is HJ_SPIN with
    offset pc - SPIN; one in [NORET, NORET + NORET_SIZE] (NORET + NORET_SIZE,
    one past its end, is the return address of its call: at least one such
    frame must be seen) is the noret symbol (HJ_NORET, or in the hostile map
    the 1 MiB name cut to 1024 bytes ending "...") with offset pc - NORET,
    never HJ_AFTER_NORET; no other JIT address, no unnamed JIT frame, no
    name of a malformed line (WRONG_*) or of the older decoy.
  rewrite: a named frame's name is a whole line of the writer: the FNV-1a
    hash matches, and START/SIZE inside the name are those of the entry
    that named it (START = pc - offset, offset < SIZE, or <= SIZE for a
    return address); unnamed frames are allowed (the map may just have been
    truncated, or hold a generation covering nothing of spin), but at least
    MIN frames must be named, and some frame must be in the JIT region.
"""
import os
import re
import sys

REGION = 64 << 10
SPIN_OFF = 0x1000
HUGE = 1 << 20
MAX_NAME = 1024


def read_info(path):
    pid, spin, spin_sz, noret, noret_sz = open(path).read().split()
    return int(pid), int(spin, 16), int(spin_sz), int(noret, 16), int(noret_sz)


def huge_cut():
    # what ustack keeps of "HUGE_" + 1 MiB of 'A': 1021 bytes and the mark
    return ("HUGE_" + "A" * MAX_NAME)[:MAX_NAME - 3] + "..."


def hostile_lines(spin, spin_sz, noret, noret_sz):
    """(bytes of the map, malformed line numbers). Every malformed line is
    shaped so that a lenient parser would name spin with a WRONG_ name."""
    wrap = (1 << 64) - 0x1000 + 0x40  # spin + 0x1000 + wrap = spin + 0x40 mod 2^64
    lines = [
        # older than the real lines and overlapping them: loses
        (b"%x 2000 OLD_decoy_overlapping\n" % (spin - 0x100), True),
        (b"%x %x HUGE_" % (noret, noret_sz) + b"A" * HUGE + b"\n", True),
        (b"%x 10 HJ_BEFORE_SPIN\n" % (spin - 0x10), True),
        (b"%x %x HJ_SPIN\r\n" % (spin, spin_sz), True),
        (b"%x 10 HJ_AFTER_SPIN\n" % (spin + spin_sz), True),
        (b"%x 10 HJ_AFTER_NORET\n" % (noret + noret_sz), True),
        # newer than the real lines: each would win if it were taken
        (b"%xg 1d WRONG_garbage_after_start\n" % spin, False),
        (b"%x 1dz WRONG_garbage_after_size\n" % spin, False),
        (b"%x 0 WRONG_size_0\n" % spin, False),
        (b"%x %x WRONG_end_past_2_64\n" % (spin + 0x1000, wrap), False),
        (b"%x 1d\n" % spin, False),
        (b"%x\n" % spin, False),
        (b"zz%x 1d WRONG_bad_hex\n" % spin, False),
        (b"%x 1d WRONG\0nul_in_name\n" % spin, False),
        (b"%x\0 1d WRONG_nul_after_start\n" % spin, False),
        (b"\xff\xfe\x1b[31m garbage \x01\x02\n", False),
        (b"0x 1d WRONG_0x_alone\n", False),  # the 11th: not listed any more
        # the newest line for spin, but without its newline: left out
        (b"%x %x WRONG_partial_last_line" % (spin, spin_sz), True),
    ]
    bad = [i + 1 for i, (_, good) in enumerate(lines) if not good]
    return b"".join(l for l, _ in lines), bad


def real_lines(spin, spin_sz, noret, noret_sz):
    return ("%x 10 HJ_BEFORE_SPIN\n%x %x HJ_SPIN\n%x 10 HJ_AFTER_SPIN\n"
            "%x %x HJ_NORET\n%x 10 HJ_AFTER_NORET\n" %
            (spin - 0x10, spin, spin_sz, spin + spin_sz, noret, noret_sz,
             noret + noret_sz)).encode()


def fake_addr(i):
    # spread over the whole 64-bit space, never near the real code (an mmap
    # of user space, between 2^46 and 2^47): even i in [2^44, 2^46) 128 MiB
    # apart, odd i from 2^47 up to past 2^63 (high bits set: a sort or a
    # compare on 32 or 63 bits gets them wrong); 64 bytes of low-bit variety
    j = i // 2
    if i % 2 == 0:
        return 0x100000000000 + j * 0x8000040
    return 0x800000000000 + j * 0x200000000040


def fake(dirname):
    # 999,995 symbols of 0x30 bytes in a scrambled order (7919 is prime to
    # the count), V8-like names
    n, step = 999995, 7919
    half = n // 2
    for name, rng in (("head", range(0, half)), ("tail", range(half, n))):
        with open(os.path.join(dirname, name), "w") as f:
            f.write("".join("%x 30 JS:*fake_%d /tmp/fake.js:%d:1\n" %
                            (fake_addr((k * step) % n), (k * step) % n, k) for k in rng))


def show(s, n=160):
    """s for a FAIL line: control bytes escaped, long names cut in the middle"""
    if len(s) > n:
        s = s[:n // 2] + "[%d bytes]" % len(s) + s[-n // 2:]
    return s.encode("unicode_escape").decode("ascii")


def fnv1a(b):
    h = 2166136261
    for c in b:
        h = ((h ^ c) * 16777619) & 0xffffffff
    return h


RW_NAME = re.compile(r"hj_([0-9a-f]+)_([0-9a-f]+)_g\d+_n\d+_x*_c([0-9a-f]{8})$")


def frames(fmt, text):
    """(sample or thread number, is leaf, pc, rest of the line)"""
    out, sample, first = [], 0, True
    for line in text.splitlines():
        if fmt == "snap":
            if line.startswith("TID "):
                sample += 1
                continue
            m = re.match(r"#(\d+) 0x([0-9a-f]+) (.*)$", line)
            if m:
                out.append((sample, m.group(1) == "0", int(m.group(2), 16), m.group(3)))
        else:
            if not line.strip():
                first = True
                continue
            if not line.startswith("\t"):
                sample += 1
                first = True
                continue
            m = re.match(r"\s+([0-9a-f]+) (.*)$", line)
            if not m:
                continue
            pc = int(m.group(1), 16)
            if pc >= 1 << 47:
                continue  # kernel frames
            out.append((sample, first, pc, m.group(2)))
            first = False
    return out


def check(kind, fmt, outfile, infofile, minspin):
    pid, spin, spin_sz, noret, noret_sz = read_info(infofile)
    base = spin - SPIN_OFF
    text = open(outfile, encoding="utf-8", errors="replace").read()
    # "NAME+0xOFF ([jit] /tmp/perf-PID.map)" (snapshot), "NAME+0xOFF
    # (/tmp/perf-PID.map)" (perf-script)
    named = re.compile(r"(\S+)\+0x([0-9a-f]+) \((?:\[jit\] )?/tmp/perf-%d\.map\)" % pid)
    noret_name = huge_cut() if kind == "hostile" else "HJ_NORET"
    n_spin = n_noret = n_named = n_unnamed = 0
    for sample, leaf, pc, rest in frames(fmt, text):
        for bad in ("WRONG", "OLD_decoy", "HJ_BEFORE", "HJ_AFTER"):
            if bad in rest:
                return "bad sample %d: frame 0x%x named from a line that must not name it: %s" % (
                    sample, pc, show(rest))
        if not base <= pc < base + REGION:
            continue
        m = named.match(rest)
        if not m:
            if kind == "rewrite":
                n_unnamed += 1
                continue
            return "bad sample %d: JIT frame 0x%x not named: %s" % (sample, pc, show(rest))
        name, off = m.group(1), int(m.group(2), 16)
        start = pc - off
        if kind == "rewrite":
            r = RW_NAME.match(name)
            if not r:
                return "bad sample %d: frame 0x%x named %s: not a whole line of the writer" % (
                    sample, pc, show(name))
            body = name[:name.rindex("_c")].encode()
            if fnv1a(body) != int(r.group(3), 16):
                return "bad sample %d: frame 0x%x named %s: hash mismatch (a torn line)" % (
                    sample, pc, show(name))
            if int(r.group(1), 16) != start:
                return ("bad sample %d: frame 0x%x named %s+0x%x: the entry starts at 0x%x, "
                        "its name says 0x%s (a torn line)" % (sample, pc, show(name), off, start,
                                                             r.group(1)))
            if off > int(r.group(2), 16) or (leaf and off == int(r.group(2), 16)):
                return "bad sample %d: frame 0x%x named %s+0x%x: past the end of its entry" % (
                    sample, pc, show(name), off)
            n_named += 1
            continue
        if spin <= pc <= spin + spin_sz:
            if name != "HJ_SPIN" or start != spin:
                return "bad sample %d: frame 0x%x in spin named %s+0x%x, want HJ_SPIN+0x%x" % (
                    sample, pc, show(name), off, pc - spin)
            n_spin += 1
        elif noret <= pc <= noret + noret_sz and not (leaf and pc == noret + noret_sz):
            if name != noret_name or start != noret:
                return ("bad sample %d: frame 0x%x in noret (its return address is one past "
                        "its end) named %s+0x%x, want %s+0x%x" % (
                            sample, pc, show(name, 60), off, show(noret_name, 60), pc - noret))
            n_noret += pc == noret + noret_sz
        else:
            return "bad sample %d: a JIT frame at 0x%x, outside the code that runs: %s" % (
                sample, pc, show(rest))
    if kind == "rewrite":
        if n_named < minspin or not n_named + n_unnamed:
            return "bad %d JIT frames named (want >= %d), %d unnamed" % (n_named, minspin,
                                                                        n_unnamed)
        return "ok %d JIT frames named by whole lines, %d unnamed" % (n_named, n_unnamed)
    if n_spin < minspin:
        return "bad only %d frames in spin named HJ_SPIN (want >= %d)" % (n_spin, minspin)
    if not n_noret:
        return "bad no frame at noret's return address (named %s)" % show(noret_name, 40)
    return "ok %d frames in spin, %d at noret's return address" % (n_spin, n_noret)


def main(argv):
    if argv[1] == "hostile":
        text, bad = hostile_lines(*read_info(argv[3])[1:])
        with open(argv[2], "wb") as f:
            f.write(text)
        print(" ".join(map(str, bad)))
    elif argv[1] == "fake":
        fake(argv[2])
    elif argv[1] == "million":
        with open(argv[2], "wb") as f:
            for part in (open(os.path.join(argv[4], "head"), "rb").read(),
                         real_lines(*read_info(argv[3])[1:]),
                         open(os.path.join(argv[4], "tail"), "rb").read()):
                f.write(part)
    elif argv[1] == "check":
        verdict = check(argv[2], argv[3], argv[4], argv[5], int(argv[6]) if len(argv) > 6 else 1)
        print(verdict)
        return 0 if verdict.startswith("ok") else 1
    else:
        print("usage: see the header", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
