#!/usr/bin/env python3
# What `ustack probe` must print for a file, worked out from readelf alone
# (binutils: nobody here wrote it), for probe_resolve.sh:
#   probe_oracle.py funcs FILE KIND PATTERN [SHOWN]  one line per function whose
#       name (without @VERSION) matches the fnmatch PATTERN, one per address
#   probe_oracle.py usdt FILE PROVIDER NAME [SHOWN]   one line per matching note
#   probe_oracle.py addr FILE VADDR                   the file offset of VADDR
#   probe_oracle.py shift-notes FILE OUT DELTA        a copy whose stapsdt notes
#       say pc, base and semaphore DELTA lower (a prelinked file's notes)
# Lines: KIND SHOWN 0xOFFSET SYMBOL [ref_ctr=0xOFF] [args=A,...], sorted.
import fnmatch, re, subprocess, sys

def readelf(*args):
    return subprocess.run(["readelf", "-W", *args], check=True, capture_output=True,
                          text=True).stdout

def loads(path):
    segs = []
    for line in readelf("-l", path).splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))  # offset vaddr filesz
    return segs

def to_offset(segs, vaddr):
    for off, va, filesz in segs:
        if va <= vaddr < va + filesz:
            return off + vaddr - va
    raise SystemExit("vaddr 0x%x in no PT_LOAD" % vaddr)

def sections(path):
    out = {}
    for line in readelf("-S", path).splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            out[m.group(1)] = (int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16))
    return out

def funcs(path, kind, pattern, shown):
    segs, seen = loads(path), {}
    for line in readelf("-s", "--dyn-syms", path).splitlines():
        f = line.split()
        if len(f) < 8 or f[3] not in ("FUNC", "IFUNC") or f[6] == "UND":
            continue
        name = f[7].split("@")[0]
        if fnmatch.fnmatchcase(name, pattern):
            off = to_offset(segs, int(f[1], 16))
            seen.setdefault(off, set()).add(name)
    for off, names in sorted(seen.items()):
        # aliases: the name with fewest leading underscores, then shortest
        best = sorted(names, key=lambda n: (len(n) - len(n.lstrip("_")), len(n), n))[0]
        print("%s %s 0x%x %s" % (kind, shown, off, best))

# x86-64 register names of every width -> the 64-bit name (written here
# from the AMD64 manual, not from the code under test)
REG64 = {}
for r in "abcd":
    for n in ("r%sx", "e%sx", "%sx", "%sl"):
        REG64[n % r] = "r%sx" % r
for r in ("si", "di", "bp", "sp"):
    for n in ("r" + r, "e" + r, r, r + "l"):
        REG64[n] = "r" + r
for i in range(8, 16):
    for s in ("", "d", "w", "b"):
        REG64["r%d%s" % (i, s)] = "r%d" % i

def norm_arg(a):
    size, op = a.split("@", 1)
    m = re.fullmatch(r"(-?\d*)\(%(\w+)\)", op)
    if m:
        return "%s@%d(%%%s)" % (size, int(m.group(1) or 0), REG64[m.group(2)])
    if op.startswith("%"):
        return "%s@%%%s" % (size, REG64[op[1:]])
    return "%s@%s" % (size, op)

def usdt(path, provider, name, shown):
    segs, secs, out = loads(path), sections(path), []
    base_now = secs[".stapsdt.base"][0] if ".stapsdt.base" in secs else None
    note = {}
    for line in readelf("-n", path).splitlines() + ["stapsdt"]:
        line = line.strip()
        if line.startswith("stapsdt") and "pc" in note:
            if fnmatch.fnmatchcase(note["prov"], provider) and fnmatch.fnmatchcase(note["name"], name):
                d = base_now - note["base"] if base_now is not None else 0
                s = "usdt %s 0x%x %s:%s" % (shown, to_offset(segs, note["pc"] + d),
                                            note["prov"], note["name"])
                if note["sem"]:
                    s += " ref_ctr=0x%x" % to_offset(segs, note["sem"] + d)
                if note.get("args"):
                    s += " args=" + ",".join(norm_arg(a) for a in note["args"].split())
                out.append(s)
        if line.startswith("stapsdt"):
            note = {}
        m = re.search(r"Provider: (\S+)", line)  # on the owner's line with -W
        if m:
            note["prov"] = m.group(1)
        elif line.startswith("Name:"):
            note["name"] = line.split(None, 1)[1]
        elif line.startswith("Location:"):
            v = [int(x, 16) for x in re.findall(r"0x([0-9a-f]+)", line)]
            note["pc"], note["base"], note["sem"] = v
        elif line.startswith("Arguments:"):
            note["args"] = line.split(None, 1)[1] if len(line.split(None, 1)) > 1 else ""
    for s in sorted(out):
        print(s)

def shift_notes(path, out, delta):
    secs = sections(path)
    _, off, size = secs[".note.stapsdt"]
    data = bytearray(open(path, "rb").read())
    at = off
    while at + 12 <= off + size:
        nsz, dsz, typ = (int.from_bytes(data[at + 4 * i:at + 4 * i + 4], "little") for i in range(3))
        desc = at + 12 + ((nsz + 3) & ~3)
        if typ == 3 and data[at + 12:at + 12 + nsz] == b"stapsdt\0":
            for k in range(3):
                v = int.from_bytes(data[desc + 8 * k:desc + 8 * k + 8], "little")
                if v:
                    data[desc + 8 * k:desc + 8 * k + 8] = (v - delta).to_bytes(8, "little")
        at = desc + ((dsz + 3) & ~3)
    open(out, "wb").write(data)

cmd = sys.argv[1]
if cmd == "funcs":
    funcs(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else sys.argv[2])
elif cmd == "usdt":
    usdt(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else sys.argv[2])
elif cmd == "addr":
    print("0x%x" % to_offset(loads(sys.argv[2]), int(sys.argv[3], 16)))
elif cmd == "shift-notes":
    shift_notes(sys.argv[2], sys.argv[3], int(sys.argv[4], 0))
