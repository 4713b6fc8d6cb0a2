#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz_core: small x86-64 ELF core files laid out
as the kernel writes them (ELF header, PT_NOTE with NT_PRSTATUS per thread,
NT_PRPSINFO, NT_AUXV, NT_FILE; PT_LOADs, one of them left out of the file
(filesz 0) as for an unmodified file mapping, one holding the first page of
a mapped ELF file with its build-ID note).

usage: tests/fuzz/make-corpus-core.py [DIR]   (default tests/fuzz/corpus/core)
"""
import os
import struct
import sys

PT_LOAD, PT_NOTE = 1, 4
NT_PRSTATUS, NT_PRPSINFO, NT_AUXV, NT_FILE = 1, 3, 6, 0x46494C45
AT_NULL, AT_ENTRY, AT_SYSINFO_EHDR = 0, 9, 33
PF_X, PF_W, PF_R = 1, 2, 4
EXE = 0x555555554000
STACK = 0x7FFFFFFDE000
VDSO = 0x7FFFF7FC1000


def note(name, ntype, desc):
    n = name + b"\0"
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<III", len(n), len(desc), ntype) + pad(n) + pad(desc)


def prstatus(tid, rip, rsp, rbp, sig=0):
    regs = [0] * 27
    regs[4], regs[16], regs[19] = rbp, rip, rsp
    head = struct.pack("<iiiHH", sig, 0, 0, sig, 0) + b"\0" * 16   # siginfo, cursig, sigpend, sighold
    head += struct.pack("<iiii", tid, 1, tid, tid) + b"\0" * 64     # pid ppid pgrp sid, times
    return head + struct.pack("<27Q", *regs) + struct.pack("<i", 0) + b"\0" * 4


def prpsinfo(pid, fname):
    d = struct.pack("<bbbbI", 0, ord("R"), 0, 0, 0) + struct.pack("<Q", 0)
    d += struct.pack("<IIiiii", 0, 0, pid, 1, pid, pid)
    return d + fname.ljust(16, b"\0")[:16] + b"./prog".ljust(80, b"\0")


def nt_file(entries):
    d = struct.pack("<QQ", len(entries), 4096)
    for s, e, pgoff, _ in entries:
        d += struct.pack("<QQQ", s, e, pgoff)
    return d + b"".join(p + b"\0" for *_, p in entries)


def elf_first_page(build_id):
    """The first page of a mapped ELF file: header, 2 phdrs, a build-ID note."""
    nt = note(b"GNU", 3, build_id)
    phoff, noteoff = 64, 64 + 2 * 56
    eh = b"\x7fELF\x02\x01\x01" + b"\0" * 9
    eh += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0x1040, phoff, 0, 0, 64, 56, 2, 64, 0, 0)
    ph = struct.pack("<IIQQQQQQ", PT_LOAD, PF_R | PF_X, 0, 0, 0, 0x2000, 0x2000, 0x1000)
    ph += struct.pack("<IIQQQQQQ", PT_NOTE, PF_R, noteoff, noteoff, noteoff, len(nt), len(nt), 4)
    page = eh + ph + nt
    return page + b"\0" * (4096 - len(page))


def core(threads, loads, files, comm=b"prog", xnum=False):
    """loads: (vaddr, memsz, flags, data or None)"""
    notes = b"".join(note(b"CORE", NT_PRSTATUS, prstatus(*t)) for t in threads)
    notes += note(b"CORE", NT_PRPSINFO, prpsinfo(threads[0][0], comm))
    notes += note(b"CORE", NT_AUXV, struct.pack("<6Q", AT_SYSINFO_EHDR, VDSO, AT_ENTRY,
                                                  EXE + 0x1040, AT_NULL, 0))
    notes += note(b"CORE", NT_FILE, nt_file(files))
    nph = 1 + len(loads)
    off = 64 + nph * 56
    phdrs = struct.pack("<IIQQQQQQ", PT_NOTE, 0, off, 0, 0, len(notes), 0, 4)
    body = notes
    off += len(notes)
    for vaddr, memsz, flags, data in loads:
        data = data or b""
        phdrs += struct.pack("<IIQQQQQQ", PT_LOAD, flags, off, vaddr, 0, len(data), memsz, 4096)
        body += data
        off += len(data)
    eh = b"\x7fELF\x02\x01\x01" + b"\0" * 9
    eh += struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, nph, 64, 0, 0)
    return eh + phdrs + body


def stack_bytes():
    # two frames' worth: a saved rbp and return addresses into the exe
    words = [0] * 64
    words[2], words[3] = STACK + 0x100, EXE + 0x1123
    words[32], words[33] = 0, EXE + 0x1456
    return struct.pack("<64Q", *words)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/corpus/core"
    os.makedirs(out, exist_ok=True)
    bid = bytes(range(1, 21))
    files = [(EXE, EXE + 0x1000, 0, b"/usr/bin/prog"), (EXE + 0x1000, EXE + 0x2000, 1, b"/usr/bin/prog")]
    loads = [(EXE, 0x1000, PF_R, elf_first_page(bid)), (EXE + 0x1000, 0x1000, PF_R | PF_X, None),
             (STACK, 0x200, PF_R | PF_W, stack_bytes()), (VDSO, 0x1000, PF_R | PF_X, None)]
    threads = [(100, EXE + 0x1100, STACK, STACK + 0x10, 11), (101, EXE + 0x1200, STACK + 0x100, 0)]
    seeds = {
        "two_threads": core(threads, loads, files),
        "one_thread_no_files": core(threads[:1], loads[2:3], []),
        "no_loads": core(threads[:1], [], files[:1]),
    }
    full = seeds["two_threads"]
    seeds["cut_in_notes"] = full[:64 + 5 * 56 + 200]
    seeds["cut_in_load"] = full[:len(full) - 100]
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
