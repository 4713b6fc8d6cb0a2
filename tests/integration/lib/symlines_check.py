#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compare `ustack symbolize` inline chains with addr2line -i -f -C and
eu-addr2line -i -f -C on many addresses of one ELF file.

usage: symlines_check.py USTACK ELF NAME [--libc] [--max N]

Addresses: every return address (the end of each call instruction, looked
up with --return, i.e. at address - 1, as for outer frames) and every
line-table row address in .text (looked up exactly). Prints PASS/FAIL
lines. Rules where the tools differ (checked, not assumed):
 - the outer function's name is the ELF symbol's (as perf and eu-addr2line
   without -i give it); the oracles take DWARF's, so it is compared after
   dropping GCC's clone suffixes (.constprop.N, .isra.N, .part.N, .cold)
   and, with --libc, not at all (glibc's symbol aliases: __GI_x vs x);
 - eu-addr2line's " inlined at F:L:C in G" note and its columns are dropped;
 - where addr2line and eu-addr2line differ, ustack must equal one of them,
   and the pc's own file:line must be eu-addr2line's (the line table's row,
   as objdump --dwarf=decodedline shows it).
"""
import re
import subprocess
import sys


def run(cmd, inp=None):
    return subprocess.run(cmd, input=inp, capture_output=True, text=True, check=False).stdout


def loads(elf):
    segs = []
    for l in run(["readelf", "-lW", elf]).splitlines():
        f = l.split()
        if f and f[0] == "LOAD":
            segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16), "E" in l.split()[-2:][0] or "E" in l))
    return segs


def vaddr_to_off(segs, a):
    for off, va, fsz, _ in segs:
        if va <= a < va + fsz:
            return a - va + off
    return None


def text_range(elf):
    for l in run(["readelf", "-SW", elf]).splitlines():
        m = re.search(r"\]\s+\.text\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", l)
        if m:
            return int(m.group(1), 16), int(m.group(1), 16) + int(m.group(2), 16)
    return None


def return_addrs(elf, lo, hi, limit):
    out = []
    prev_call = False
    # objdump -d prints one instruction per line "  addr:\tbytes\tmnemonic"
    p = subprocess.Popen(["objdump", "-d", "--no-show-raw-insn", "--start-address=%#x" % lo,
                          "--stop-address=%#x" % hi, elf], stdout=subprocess.PIPE, text=True)
    for l in p.stdout:
        m = re.match(r"\s*([0-9a-f]+):\s+(\S+)", l)
        if not m:
            continue
        a = int(m.group(1), 16)
        if prev_call:
            out.append(a)
            if len(out) >= limit:
                break
        prev_call = m.group(2).startswith("call")
    p.kill()
    p.wait()
    return out


def line_addrs(elf, lo, hi, limit):
    out = set()
    for l in run(["objdump", "--dwarf=decodedline", elf]).splitlines():
        # "file  line  address  [view]  [x]"; end-of-sequence rows have "-"
        m = re.search(r"\s\d+\s+(0x[0-9a-f]+)(\s+\d+)?\s+(x|)\s*$", l)
        if m:
            a = int(m.group(1), 16)
            if lo <= a < hi:
                out.add(a)
    return sorted(out)[:limit]


def oracle(tool, elf, addrs):
    """chains per address from addr2line-style output (-a prints each address)"""
    txt = run([tool, "-a", "-i", "-f", "-C", "-e", elf] + ["%#x" % a for a in addrs])
    chains, cur = [], None
    lines = txt.splitlines()
    i = 0
    while i < len(lines):
        l = lines[i]
        if re.match(r"^0x[0-9a-f]+$", l):
            cur = []
            chains.append(cur)
            i += 1
            continue
        name = re.sub(r" inlined at .* in .*$", "", l)
        loc = lines[i + 1] if i + 1 < len(lines) else "??:0"
        m = re.match(r"^(.*?):(\d+|\?)(:\d+)?( \(discriminator \d+\))?$", loc)
        f, ln = (m.group(1), m.group(2)) if m else (loc, "0")
        cur.append((name, f, 0 if ln == "?" else int(ln)))
        i += 2
    return chains


def ours(ustack, elf, segs, addrs, is_ret):
    offs = []
    for a in addrs:
        o = vaddr_to_off(segs, a)
        offs.append(o)
    txt = run([ustack, "symbolize", "-e", elf] + (["--return"] if is_ret else []) +
              ["%#x" % o for o in offs])
    by = {}
    for l in txt.splitlines():
        m = re.match(r"^(0x[0-9a-f]+) (.*?)(\+0x[0-9a-f]+)? \([^()]*\)( at (.*):(\d+))?( \[inlined\])?$", l)
        if not m:
            m2 = re.match(r"^(0x[0-9a-f]+) \?\?", l)
            if m2:
                by.setdefault(int(m2.group(1), 16), []).append(("??", "??", 0, False))
            continue
        by.setdefault(int(m.group(1), 16), []).append(
            (m.group(2), m.group(5) or "??", int(m.group(6) or 0), bool(m.group(7))))
    return [by.get(o, []) for o in offs]


CLONE = re.compile(r"\.(constprop|isra|part|cold|lto_priv)(\.\d+)*")


def norm(n):
    return CLONE.sub("", n)


def main():
    ustack, elf, name = sys.argv[1:4]
    libc = "--libc" in sys.argv
    limit = 400
    if "--max" in sys.argv:
        limit = int(sys.argv[sys.argv.index("--max") + 1])
    segs = loads(elf)
    tr = text_range(elf)
    if not tr:
        print("FAIL %s: no .text in %s" % (name, elf))
        return 1
    dbg = sys.argv[sys.argv.index("--debug") + 1] if "--debug" in sys.argv else elf
    sets = [("return", return_addrs(elf, tr[0], tr[1], limit), True),
            ("line-row", line_addrs(dbg, tr[0], tr[1], limit), False)]
    fails = 0
    for kind, addrs, is_ret in sets:
        if not addrs:
            print("FAIL %s_%s: no addresses found" % (name, kind))
            fails += 1
            continue
        look = [a - 1 if is_ret else a for a in addrs]
        got = ours(ustack, elf, segs, addrs, is_ret)
        want = {t: oracle(t, dbg, look) for t in ("addr2line", "eu-addr2line")}
        bad = 0
        inl = 0
        disagree = 0
        skipped = 0
        for i, a in enumerate(look):
            g = got[i]
            b0 = want["addr2line"][i]
            # code with neither a sized ELF symbol nor DWARF (crtstuff's
            # __do_global_dtors_aux): the oracles name the nearest symbol
            # before it, ustack names none; nothing about lines to compare
            if g == [("??", "??", 0, False)] and len(b0) == 1 and b0[0][2] == 0:
                skipped += 1
                continue
            if any(x[3] for x in g):
                inl += 1
            b, e = want["addr2line"][i], want["eu-addr2line"][i]
            either = b != e
            if either:
                # the two oracles differ: ustack must be one of them, and
                # the pc's own file:line must be the line table's row as
                # libdw and eu-addr2line read it (binutils gives the CU's
                # main file for some .cold parts; eu-addr2line drops some
                # inline levels that addr2line shows)
                disagree += 1
            res = []
            for tool, w in (("addr2line", b), ("eu-addr2line", e)):
                ok = len(g) == len(w)
                for k in range(min(len(g), len(w))):
                    gn, gf, gl, ginl = g[k]
                    wn, wf, wl = w[k]
                    last = k == len(g) - 1
                    if ginl == last:
                        ok = False
                    if (gf, gl) != (wf, wl) and not (wf == "??" and gf == "??"):
                        ok = False
                    if not last and gn != wn:
                        ok = False
                    if last and not libc and norm(gn) != norm(wn):
                        ok = False
                res.append((tool, w, ok))
            if either:
                line_ok = bool(g) and bool(e) and (g[0][1], g[0][2]) == (e[0][1], e[0][2])
                if not line_ok or not (res[0][2] or res[1][2]):
                    res = [(t, w, False) for t, w, _ in res]
                else:
                    res = [(t, w, True) for t, w, _ in res]
            for tool, w, ok in res:
                if not ok:
                    bad += 1
                    if bad <= 5:
                        print("# %s %#x vs %s: ustack %s, %s %s" % (name, a, tool, g, tool, w))
        total = len(look) - skipped
        if bad:
            print("FAIL %s_%s: %d of %d chain comparisons differ (%d addresses, %d inside inlined code)"
                  % (name, kind, bad, 2 * total, total, inl))
            fails += 1
        elif inl == 0 and not libc:
            print("FAIL %s_%s: no address inside inlined code among %d" % (name, kind, total))
            fails += 1
        else:
            print("PASS %s_%s: %d addresses (%d inside inlined code): function, file, line and "
                  "inline chain equal addr2line -i and eu-addr2line -i (the two differ on %d, where ustack equals one and the line table; %d without symbol size or DWARF left out)"
                  % (name, kind, total, inl, disagree, skipped))
    return 1 if fails else 0


sys.exit(main())
