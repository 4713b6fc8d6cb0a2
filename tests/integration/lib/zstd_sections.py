#!/usr/bin/env python3
"""Compress the .debug_* sections of an ELF64 little-endian file with zstd,
as SHF_COMPRESSED sections (Elf64_Chdr with ch_type ELFCOMPRESS_ZSTD = 2,
then one zstd frame), the layout of the ELF gABI.

Debian 12's objcopy (binutils 2.40) accepts --compress-debug-sections=zstd
but leaves the sections uncompressed, so the zstd fixtures are made here.
The compressed bytes come from the `zstd` command line tool.

usage: zstd_sections.py IN OUT
"""
import struct
import subprocess
import sys

SHF_COMPRESSED = 0x800
SHT_NOBITS = 8
ELFCOMPRESS_ZSTD = 2


def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = bytearray(open(src, "rb").read())
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "ELF64 LE only"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    shdrs = [list(struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize))
             for i in range(shnum)]
    stroff, strsize = shdrs[shstrndx][4], shdrs[shstrndx][5]
    names = data[stroff:stroff + strsize]

    def name(sh):
        end = names.index(b"\0", sh[0])
        return names[sh[0]:end].decode()

    out = bytearray(data)
    n = 0
    for sh in shdrs[1:]:
        if not name(sh).startswith(".debug_") or sh[1] == SHT_NOBITS or sh[2] & SHF_COMPRESSED:
            continue
        raw = bytes(data[sh[4]:sh[4] + sh[5]])
        frame = subprocess.run(["zstd", "-q", "-c", "-19"], input=raw, check=True,
                               stdout=subprocess.PIPE).stdout
        while len(out) % 8:
            out.append(0)
        chdr = struct.pack("<IIQQ", ELFCOMPRESS_ZSTD, 0, len(raw), max(sh[8], 1))
        sh[4] = len(out)
        out += chdr + frame
        sh[5] = len(chdr) + len(frame)
        sh[2] |= SHF_COMPRESSED
        sh[8] = 8
        n += 1
    while len(out) % 8:
        out.append(0)
    newshoff = len(out)
    for sh in shdrs:
        out += struct.pack("<IIQQQQIIQQ", *sh)
    struct.pack_into("<Q", out, 0x28, newshoff)
    open(dst, "wb").write(out)
    print(f"{n} sections compressed", file=sys.stderr)
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main())
