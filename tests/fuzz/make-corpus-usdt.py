#!/usr/bin/env python3
# Writes tests/fuzz/corpus/usdt/: seeds for fuzz_usdt (first byte: which
# parser; see fuzz_usdt.c): stapsdt notes as <sys/sdt.h> writes them, the
# argument specs of real notes, ld.so.cache tables of both layouts, and
# probe names good and bad.
import os, struct, sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "usdt")
os.makedirs(out, exist_ok=True)

def note(owner, typ, desc):
    o = owner + b"\0"
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<III", len(o), len(desc), typ) + pad(o) + pad(desc)

def stapsdt(pc, base, sem, prov, name, args):
    return note(b"stapsdt", 3, struct.pack("<QQQ", pc, base, sem) + prov + b"\0" + name + b"\0" + args + b"\0")

def cache(entries, strs, old=0):
    hdr_end = 48 + 24 * len(entries)
    body = b"glibc-ld.so.cache1.1" + struct.pack("<IIB3xI12x", len(entries), len(strs), 2, 0)
    for flags, k, v in entries:
        body += struct.pack("<iIIIQ", flags, k + hdr_end, v + hdr_end, 0, 0)
    body += strs
    if not old:
        return body
    pre = b"ld.so-1.7.0\0" + struct.pack("<I", old) + b"\0" * (12 * old)
    pre += b"\0" * (-len(pre) % 8)
    return pre + body

seeds = {
    "notes-sdt": b"\0" + stapsdt(0x1098, 0x2004, 0x4022, b"ptest", b"args4", b"-8@%rcx -4@%eax -1@%bl -2@%bp")
                 + note(b"GNU", 3, b"abcd") + stapsdt(0x10a5, 0x2004, 0, b"ptest", b"gated", b"-8@%rsi"),
    "notes-libc": b"\4" + stapsdt(0x2a3b4, 0x1c4d10, 0, b"libc", b"memory_malloc_retry", b"8@%rbp")
                  + stapsdt(0x8f00, 0x1c4d10, 0, b"libc", b"setjmp", b"8@%rdi -4@%esi 8@%rax"),
    "notes-cut": b"\0" + stapsdt(1, 2, 3, b"p", b"n", b"4@$5")[:-9],
    "args-mix": b"\1" + b"-4@%eax 8@-8(%rbp) 4@$5 -2@0x10(%r12w) 1@%sil 8@(%rdi)",
    "args-bad": b"\5" + b"8@8(%rip) 4@8(%rax,%rbx,8) 3@%eax 4@%ah",
    "args-many": b"\x2d" + b" ".join(b"8@%%r%d" % (8 + i % 8) for i in range(14)),
    "ldcache-new": b"\2" + cache([(0x303, 0, 10), (0x3, 52, 62)],
                                 b"libc.so.6\0/lib/x86_64-linux-gnu/libc.so.6\0libc.so.6\0/lib32/libc.so.6\0"),
    "ldcache-old": b"\6" + cache([(0x303, 0, 10)], b"libm.so.6\0/lib/x86_64-linux-gnu/libm.so.6\0", old=3),
    "spec-uprobe": b"\3uprobe:libc:malloc+0x1c",
    "spec-usdt": b"\7usdt:/usr/bin/python3:python:function__entry",
    "spec-bad": b"\x0buretprobe:libc:malloc+4",
}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
