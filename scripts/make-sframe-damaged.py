#!/usr/bin/env python3
# Write hand-damaged copies of the SFrame fixtures for the error paths:
#   tests/data/sframe/damaged/<ver>-<damage>.so
# and tests/data/sframe/damaged/EXPECTED, one line per file:
#   <file> <exit status> <text the error message must contain>
# Usage: scripts/make-sframe-damaged.py tests/data/sframe
import os
import struct
import sys


def find_section(elf, name):
    """(file offset of the section header, sh_offset, sh_size) of @name."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    str_off = struct.unpack_from("<Q", elf, shoff + shstrndx * shentsize + 0x18)[0]
    for i in range(shnum):
        h = shoff + i * shentsize
        nameoff = struct.unpack_from("<I", elf, h)[0]
        end = elf.index(b"\0", str_off + nameoff)
        if elf[str_off + nameoff:end].decode() == name:
            off, size = struct.unpack_from("<QQ", elf, h + 0x18)
            return h, off, size
    raise SystemExit(f"no section {name}")


class Sframe:
    def __init__(self, elf):
        self.elf = elf
        self.shdr, self.off, self.size = find_section(elf, ".sframe")
        o = self.off
        (self.magic, self.version, self.flags, self.abi, self.fixed_fp, self.fixed_ra,
         self.auxlen, self.nfdes, self.nfres, self.frelen, self.fdeoff,
         self.freoff) = struct.unpack_from("<HBBBbbBIIIII", elf, o)
        hdr = 28 + self.auxlen
        self.fde_base = o + hdr + self.fdeoff
        self.fre_base = o + hdr + self.freoff
        self.fde_size = {1: 17, 2: 20, 3: 16}[self.version]

    def fde(self, i):
        """(abs offset of FDE, size, abs offset of first FRE, nfres, abs offset of info byte)."""
        p = self.fde_base + i * self.fde_size
        if self.version == 3:
            size, freoff = struct.unpack_from("<II", self.elf, p + 8)
            attr = self.fre_base + freoff
            nfres = struct.unpack_from("<H", self.elf, attr)[0]
            return p, size, attr + 5, nfres, attr + 2
        size, freoff, nfres = struct.unpack_from("<III", self.elf, p + 4)
        return p, size, self.fre_base + freoff, nfres, p + 16

    def fre_offsets(self, i):
        """Absolute offsets of the FREs of FDE @i."""
        _, _, pos, n, info_at = self.fde(i)
        asz = 1 << (self.elf[info_at] & 0xF)
        out = []
        for _ in range(n):
            out.append(pos)
            info = self.elf[pos + asz]
            count = (info >> 1) & 0xF
            wsz = 1 << ((info >> 5) & 3)
            pos += asz + 1 + count * wsz
        return out, asz


def damage(src, dst_dir, ver, expected):
    base = bytearray(open(src, "rb").read())
    sf = Sframe(base)
    out = []

    def emit(name, data, status, text):
        path = os.path.join(dst_dir, f"{ver}-{name}.so")
        with open(path, "wb") as f:
            f.write(data)
        out.append(f"{ver}-{name}.so {status} {text}")

    d = bytearray(base); struct.pack_into("<H", d, sf.off, 0x1234)
    emit("bad-magic", d, 1, ".sframe: at offset 0x0: bad magic")
    d = bytearray(base); d[sf.off + 2] = 9
    emit("bad-version", d, 1, ".sframe: at offset 0x2: unsupported version")
    d = bytearray(base); struct.pack_into("<Q", d, sf.shdr + 0x20, 20)
    emit("truncated-header", d, 1, ".sframe: at offset 0x0: truncated header")
    d = bytearray(base); struct.pack_into("<I", d, sf.off + 8, 0x10000000)
    emit("fde-array-oob", d, 1, ".sframe: at offset 0x14: FDE array beyond section")

    # Swap the starts of FDEs 3 and 4 (adjusting PC-relative ones) so FDE 4
    # starts before FDE 3.
    d = bytearray(base)
    fmt = "<q" if sf.version == 3 else "<i"
    p3, p4 = sf.fde_base + 3 * sf.fde_size, sf.fde_base + 4 * sf.fde_size
    s3, s4 = struct.unpack_from(fmt, d, p3)[0], struct.unpack_from(fmt, d, p4)[0]
    pcrel = sf.flags & 4
    a3 = s3 + (p3 if pcrel else 0)
    a4 = s4 + (p4 if pcrel else 0)
    struct.pack_into(fmt, d, p3, a4 - (p3 if pcrel else 0))
    struct.pack_into(fmt, d, p4, a3 - (p4 if pcrel else 0))
    emit("unsorted", d, 1, f".sframe: FDE 4 at offset 0x{p4 - sf.off:x}: not sorted")

    d = bytearray(base)
    p = sf.fde_base + 3 * sf.fde_size
    struct.pack_into("<I", d, p + (12 if sf.version == 3 else 8), sf.frelen + 100)
    emit("fre-offset-oob", d, 1, f".sframe: FDE 3 at offset 0x{p - sf.off:x}: FRE offset beyond section")

    # FRE 1 of FDE 3 starts past the end of its function.
    d = bytearray(base)
    fres, asz = sf.fre_offsets(3)
    size = sf.fde(3)[1]
    assert asz == 1 and size < 255
    d[fres[1]] = 0xFF
    emit("fre-start-beyond", d, 1,
         f".sframe: FDE 3 FRE 1 at offset 0x{fres[1] - sf.off:x}: FRE start beyond function size")

    # The function whose FREs close the sub-section claims one FRE more
    # than it has: the extra one would start right at the section's end.
    d = bytearray(base)
    k = max(range(sf.nfdes), key=lambda i: sf.fde(i)[2])
    p, _, first, n, _ = sf.fde(k)
    if sf.version == 3:
        struct.pack_into("<H", d, first - 5, n + 1)
    else:
        struct.pack_into("<I", d, p + 12, n + 1)
    emit("fre-beyond-section", d, 1,
         f".sframe: FDE {k} FRE {n} at offset 0x{sf.fre_base + sf.frelen - sf.off:x}: offset beyond section")

    d = bytearray(base)
    info_at = sf.fde(3)[4]
    d[info_at] = (d[info_at] & 0xF0) | 5
    emit("unknown-fre-type", d, 1,
         f".sframe: FDE 3 at offset 0x{sf.fde_base + 3 * sf.fde_size - sf.off:x}: unknown FRE type")
    expected.extend(out)


def main():
    top = sys.argv[1]
    dst = os.path.join(top, "damaged")
    os.makedirs(dst, exist_ok=True)
    expected = []
    for ver in ("v1", "v2", "v3"):
        damage(os.path.join(top, ver, "shapes.so"), dst, ver, expected)
    with open(os.path.join(dst, "EXPECTED"), "w") as f:
        f.write("# file exit-status expected-message-substring (scripts/make-sframe-damaged.py)\n")
        f.write("\n".join(expected) + "\n")


main()
