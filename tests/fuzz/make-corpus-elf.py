#!/usr/bin/env python3
# Writes tests/fuzz/corpus/elf/symbol-shapes: an ELF whose .symtab and
# .dynsym have the shapes the symbol index (src/elf/elf_file.c) treats
# apart, at the addresses fuzz_elf looks up (0 to 0x3000): a function
# longer than 64 blocks of 1 KiB, nested functions, aliases in both tables,
# blocks 64 KiB apart (one bucket), sizes of 0, a symbol that wraps, and
# symbols the index must skip (undefined, not code).
import struct, sys, os

def elf(syms):
    shstr = b"\0.text\0.symtab\0.strtab\0.dynsym\0.dynstr\0.shstrtab\0"
    tabs = [[b"\0" * 24], [b"\0" * 24]]
    strs = [bytearray(b"\0"), bytearray(b"\0")]
    for name, value, size, typ, shndx, dyn in syms:
        off = len(strs[dyn])
        strs[dyn] += name.encode() + b"\0"
        tabs[dyn].append(struct.pack("<IBBHQQ", off, (1 << 4) | typ, 0, shndx, value, size))
    body = bytearray(b"\0" * 64)
    offs = {}
    for k, (t, s) in enumerate(zip(tabs, strs)):
        offs["sym%d" % k] = (len(body), len(t) * 24)
        body += b"".join(t)
        offs["str%d" % k] = (len(body), len(s))
        body += s
    offs["shstr"] = (len(body), len(shstr))
    body += shstr
    while len(body) % 8:
        body += b"\0"
    shoff = len(body)
    def sh(name, typ, flags, addr, off, size, link, entsize):
        return struct.pack("<IIQQQQIIQQ", name, typ, flags, addr, off, size, link, 0, 1, entsize)
    body += sh(0, 0, 0, 0, 0, 0, 0, 0)
    body += sh(1, 8, 6, 0, 0, 0x30000, 0, 0)  # .text, NOBITS, alloc + exec
    body += sh(7, 2, 0, 0, *offs["sym0"], 3, 24)
    body += sh(15, 3, 0, 0, *offs["str0"], 0, 0)
    body += sh(23, 11, 0, 0, *offs["sym1"], 5, 24)
    body += sh(31, 3, 0, 0, *offs["str1"], 0, 0)
    body += sh(39, 3, 0, 0, *offs["shstr"], 0, 0)
    ehdr = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01" + b"\0" * 9, 3, 62, 1, 0, 0,
                       shoff, 0, 64, 0, 0, 64, 7, 6)
    body[0:64] = ehdr
    return bytes(body)

FUNC, IFUNC, OBJECT = 2, 10, 1
syms = [
    ("long", 0x0, 0x20000, FUNC, 1, 0),        # 128 blocks: the long list
    ("inner", 0x1000, 0x100, FUNC, 1, 0),      # nested in long
    ("inner", 0x1000, 0x100, FUNC, 1, 1),      # its .dynsym twin
    ("zz_alias", 0x1800, 0x80, FUNC, 1, 0),
    ("a_alias", 0x1800, 0x80, IFUNC, 1, 1),
    ("edge", 0x1c00, 0x401, FUNC, 1, 0),       # last byte in the next block
    ("far", 0x11000, 0x40, FUNC, 1, 0),        # 64 KiB on: inner's bucket
    ("zs", 0x2400, 0, FUNC, 1, 0),
    ("undef", 0x2500, 0x10, FUNC, 0, 0),
    ("object", 0x2600, 0x10, OBJECT, 1, 0),
    ("wrap", 0xfffffffffffff000, 0x2000, FUNC, 1, 0),
]
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "elf", "symbol-shapes")
with open(out, "wb") as f:
    f.write(elf(syms))
print(out)
