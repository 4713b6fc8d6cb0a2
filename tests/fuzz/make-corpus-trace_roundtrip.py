#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz_trace_roundtrip: scripts of trace writer
calls in the byte format tests/fuzz/fuzz_trace_roundtrip.c reads.

usage: tests/fuzz/make-corpus-trace_roundtrip.py [DIR]
       (default tests/fuzz/corpus/trace_roundtrip)
"""
import os
import struct
import sys

NSTACKS, NFILES, NKSYMS, MAXF = 8, 7, 4, 24
NO_STACK = 8          # pick_stack() index meaning "no stack"
EV = {0: 0, 1: 1, 2: 2, 3: 3, 7: 4, 100: 5}  # event id -> index in event_ids[]
OP_DESC, OP_THREAD, OP_EVENT, OP_USTACK, OP_LOST, OP_KSYM, OP_FLUSH, OP_STATS, OP_PYFUNC = range(9)


def num(v):
    if v < 64:
        return bytes([v])
    if v < 1 << 14:
        return bytes([0x40 | v >> 8, v & 0xff])
    if v < 1 << 32:
        return bytes([0x80]) + struct.pack("<I", v)
    return bytes([0xc0]) + struct.pack("<Q", v)


def s(v):
    if v is None:
        return b"\xff"
    b = v.encode()
    assert len(b) < 48 and b"\0" not in b
    return bytes([len(b)]) + b


def kstack(ips, fail=False):
    if fail:
        return b"\xf8"
    out = bytes([len(ips)])
    for i, ip in enumerate(ips):
        out += num(ip) + (b"\0" if i else b"")
    return out


def ustack(frames, fail=False):
    """frames: (file index 0..7 (0: none), offset, method, flags)"""
    if fail:
        return b"\xf8"
    out = bytes([len(frames)])
    for fi, off, method, flags in frames:
        out += bytes([fi]) + num(off) + bytes([method, flags])
    return out


def file_map(path, build_id=b"", fail=False, too_long=False, debuglink=None, crc=0, kind=1):
    if fail:
        b = 0xf0
    elif too_long:
        b = 33
        build_id = bytes(range(32))
    else:
        b = len(build_id)
    return (bytes([b]) + num(kind) + num(0) + s(path) + num(259) + num(2) + num(1835011) +
            num(0x7f3c1a200000) + build_id + num(2 if build_id else 0) + s(debuglink) + num(crc) +
            num(0))


def prelude(mode=0, chunk=0, kstacks=(), ustacks=(), files=(), ksyms=()):
    out = bytes([mode]) + struct.pack("<H", chunk)
    out += num(1) + num(1700000000123456789) + num(5000000000) + s("host") + s("6.8.0") + \
        s("x86_64") + s("ustack record -F 999 -- ./demo") + s("ustack 0.1.0")
    ks = list(kstacks) + [kstack([])] * (NSTACKS - len(kstacks))
    us = list(ustacks) + [ustack([])] * (NSTACKS - len(ustacks))
    fs = list(files) + [file_map("/unused")] * (NFILES - len(files))
    sy = list(ksyms) + [(0, 0, None, None)] * (NKSYMS - len(ksyms))
    out += b"".join(ks) + b"".join(us) + b"".join(fs)
    for addr, size, name, mod in sy:
        out += num(addr) + num(size) + s(name) + s(mod)
    return out


def desc(id_, name, type_=0, flags=1, period=999):
    return bytes([OP_DESC, EV[id_]]) + num(type_) + num(flags) + num(period) + s(name)


def thread(t, pid, tid, comm, flags=0):
    return bytes([OP_THREAD]) + num(t) + num(pid) + num(tid) + num(flags) + s(comm)


def event(t, pid, tid, cpu, ev, kstack=NO_STACK, cookie=0, value=0, flags=0):
    return bytes([OP_EVENT]) + num(t) + num(pid) + num(tid) + num(cpu) + bytes([EV[ev], kstack]) + \
        num(cookie) + num(value) + num(flags)


def user_stack(t, pid, tid, cpu, reason, cookie, stack=NO_STACK):
    return bytes([OP_USTACK]) + num(t) + num(pid) + num(tid) + num(cpu) + num(reason) + \
        num(cookie) + bytes([stack])


def lost(t, what, cpu, count):
    return bytes([OP_LOST]) + num(t) + num(what) + num(cpu) + num(count)


def ksym(addr, size, name, mod):
    return bytes([OP_KSYM]) + num(addr) + num(size) + s(name) + s(mod)


KIPS = [0xffffffff81e3a0f1, 0xffffffff81c0009b, 0xffffffff8100215e]
KSYMS = [(0xffffffff81e3a000, 0x200, "futex_wait", None),
         (0xffffffff81c00000, 0x100, "entry_SYSCALL_64", ""),
         (0xffffffff81002100, 0x80, "do_syscall_64", None),
         (0xffffffffc0a05000, 0x1000, "ext4_get_block", "ext4")]
FILES = [file_map("/tmp/futex_demo", bytes(range(0xa0, 0xb4))),
         file_map("/usr/lib/x86_64-linux-gnu/libc.so.6", bytes(20), debuglink="libc.so.6.debug",
                  crc=0x12345678),
         file_map("[vdso]", kind=6)]
USTACKS = [ustack([(1, 0x1136, 0, 1), (1, 0x1180, 1, 0), (2, 0x29d90, 2, 0), (2, 0x29e40, 3, 0)]),
           ustack([(2, 0x9a1f0, 0, 1), (0, 0x7f3c1a000123, 3, 0), (1, 0x1200, 1, 0)]),
           ustack([])]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/corpus/trace_roundtrip"
    os.makedirs(out, exist_ok=True)
    t = 1000000
    scripts = {}
    # one process: a sample with kernel and user stacks, stitched
    scripts["basic"] = prelude(kstacks=[kstack(KIPS)], ustacks=USTACKS, files=FILES) + \
        desc(0, "cpu-clock") + thread(t, 4242, 4242, "demo", 1) + \
        event(t + 10, 4242, 4243, 1, 0, kstack=0, cookie=0x300000002) + \
        event(t + 11, 4242, 4243, 1, 0, cookie=0x300000002, value=7, flags=4) + \
        user_stack(t + 20, 4242, 4243, 1, 0, 0x300000002, stack=0) + \
        event(t + 30, 4242, 4242, 0, 0) + lost(t + 40, 0, 2, 5) + \
        thread(t + 50, 4242, 4243, "demo", 2)
    # small chunks: definitions repeated per chunk, descs at every chunk start
    body = desc(0, "cpu-clock") + desc(7, "syscalls:sys_enter_futex", 1, 0, 1)
    for i in range(12):
        c = 0x100000000 * (i + 1) + 2
        body += event(t + 100 * i, 10, 10 + i % 3, i % 4, 7 if i % 2 else 0, kstack=i % 2,
                      cookie=c) + user_stack(t + 100 * i + 5, 10, 10 + i % 3, i % 4, 0, c,
                                             stack=i % 3)
        if i % 5 == 4:
            body += OP_FLUSH.to_bytes(1, "little")
    scripts["chunks"] = prelude(mode=0, chunk=200, kstacks=[kstack(KIPS), kstack(KIPS[1:])],
                                ustacks=USTACKS, files=FILES) + body + bytes([OP_STATS])
    # the same read through the fd path, with the kernel symbol callback
    scripts["chunks_ksym_fd"] = prelude(mode=3, chunk=200, kstacks=[kstack(KIPS), kstack(KIPS[1:])],
                                        ustacks=USTACKS, files=FILES, ksyms=KSYMS) + body + \
        ksym(0xffffffff81000000, 0, "_text", None) + bytes([OP_STATS])
    # refused calls: undefined event id, cookie 0, redefined desc, failing callbacks
    scripts["refused"] = prelude(mode=1, kstacks=[kstack(KIPS), kstack([], fail=True)],
                                 ustacks=[ustack([(1, 1, 0, 0), (2, 2, 0, 0), (3, 3, 0, 0)]),
                                          ustack([(4, 1, 0, 0)]), ustack([], fail=True)],
                                 files=[FILES[0], file_map("/gone", fail=True),
                                        file_map("/x", too_long=True), FILES[1]],
                                 ksyms=KSYMS) + \
        event(t, 1, 1, 0, 3) + desc(3, "page-faults") + desc(3, "page-faults") + \
        desc(3, "cycles") + event(t + 1, 1, 1, 0, 3, kstack=1) + \
        event(t + 2, 1, 1, 0, 3, kstack=0, cookie=9) + user_stack(t + 3, 1, 1, 0, 0, 0) + \
        user_stack(t + 4, 1, 1, 0, 0, 9, stack=0) + user_stack(t + 5, 1, 1, 0, 0, 9, stack=1) + \
        user_stack(t + 6, 1, 1, 0, 0, 9, stack=2) + user_stack(t + 7, 1, 1, 0, 4, 9)
    # stitching: interleaved threads, cookie changes, LOST in between, END pending
    scripts["stitch"] = prelude(ustacks=USTACKS, files=FILES) + desc(1, "task-clock") + \
        event(t, 5, 5, 0, 1, cookie=1) + event(t + 1, 5, 6, 1, 1, cookie=2) + \
        event(t + 2, 5, 5, 0, 1, cookie=1) + event(t + 3, 5, 5, 0, 1, cookie=3) + \
        user_stack(t + 4, 5, 6, 1, 0, 2, stack=1) + user_stack(t + 5, 5, 5, 0, 0, 1, stack=0) + \
        event(t + 6, 5, 5, 0, 1, cookie=4) + lost(t + 7, 1, 0xffffffff, 1) + \
        user_stack(t + 8, 5, 5, 0, 0, 4, stack=0) + event(t + 9, 5, 7, 0, 1, cookie=5) + \
        event(t + 9, 5, 7, 0, 1) + event(2, 5, 8, 0, 1, cookie=6)
    # Python functions (1.5): ids 1..4 (2^40-1 as 4), one twice, and the
    # refused ones: id 0, 2^40, an empty name (id 3)
    scripts["pyfunc"] = prelude(ustacks=USTACKS, files=FILES) + desc(0, "cpu-clock") + \
        b"".join(bytes([OP_PYFUNC, k]) for k in (1, 2, 1, 4, 0, 5, 3)) + \
        event(t, 5, 5, 0, 0, cookie=1) + user_stack(t + 1, 5, 5, 0, 0, 1, stack=0) + \
        bytes([OP_FLUSH, OP_PYFUNC, 2, OP_STATS])
    for k, v in scripts.items():
        with open(os.path.join(out, k), "wb") as f:
            f.write(v)


if __name__ == "__main__":
    main()
