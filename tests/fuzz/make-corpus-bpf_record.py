#!/usr/bin/env python3
# Seed corpus of fuzz_bpf_record (tests/fuzz/fuzz_bpf_record.c): valid
# records of each type as src/bpf/record_abi.h lays them out, and a few
# that the checks must refuse. Usage: make-corpus-bpf_record.py DIR
import os
import struct
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

EVENT, STACK, COPY, KSTACK = 1, 2, 3, 4
NEW, USER, USER_MODE, COPYF, VALUE, ARGS, KSTACKF = 1, 2, 4, 8, 16, 32, 64


def event(flags=NEW | USER, stop=0, nr=3, ev=0, cookie=0x300000001, ustack=1, value=0,
          kseq=0):
    # type stop flags nr cpu pid tid time cookie event kstack ustack kseq value
    return struct.pack('<BBBBIIIQQIiIIQ', EVENT, stop, flags, nr, 1, 100, 101, 123456789,
                       cookie, ev, -1, ustack, kseq, value)


def kstack(ips, seq=1, tid=101, nr=None):
    # type pad[3] nr tid seq, then the ips, reserved whole (127)
    nr = len(ips) if nr is None else nr
    words = b''.join(struct.pack('<Q', ip) for ip in ips)
    return struct.pack('<BxxxIII', KSTACK, nr, tid, seq) + words.ljust(8 * 127, b'\0')


def stack(frames, sid=1):
    words = b''.join(struct.pack('<QQ', off, fid | (method << 56)) for off, fid, method in frames)
    return struct.pack('<BBHIQ', STACK, 0, len(frames), sid, 0) + words


MAX_PY = 96


def copy(data=b'\x11' * 64, size=None, py=(), pystop=0, npy=None):
    size = len(data) if size is None else size
    npy = len(py) if npy is None else npy
    # type, npy, pystop, pad, cpu, pid, tid, time, cookie, ip, sp, bp, bx, size, pad2
    hdr = struct.pack('<BBBxIIIQQQQQQII', COPY, npy, pystop, 0, 100, 101, 5, 0x500000001,
                      0x401000, 0x7ffc0000, 0, 0, size, 0)
    words = b''.join(struct.pack('<QQ', code, instr) for code, instr in py)
    return hdr + words.ljust(16 * MAX_PY, b'\0') + data.ljust(16384 + 4096, b'\0')


def rec(b):
    return struct.pack('<H', len(b)) + b


def write(name, nr_events, *records):
    with open(os.path.join(out, name), 'wb') as f:
        f.write(bytes([nr_events]) + b''.join(rec(r) for r in records))


write('event_stack', 2, stack([(0x1130, 7, 0), (0x1200, 7, 2), (0x2210, 9, 2)]), event())
write('event_shared', 2, event(flags=USER, ustack=1), event(flags=0, cookie=0, ustack=0))
write('event_copy', 1, copy(), event(flags=NEW | USER | COPYF, ustack=0))
write('user_mode', 1, event(flags=NEW | USER | USER_MODE, stop=1))
write('bad_stop', 1, event(stop=9))
write('bad_event_index', 1, event(ev=3))
write('bad_method', 1, stack([(0x10, 1, 9)]))
write('short_stack', 1, stack([(0x10, 1, 1), (0x20, 1, 1)])[:40])
write('big_copy_size', 1, copy(size=16385))
# a copy with the thread's Python frames (code | fingerprint << 48,
# instruction | owner << 48 | entry << 63), and one with too many
write('copy_python', 1, copy(py=[(0x7f0000001000 | 12 << 48, 0x7f0000002040),
                                 (0x7f0000003000 | 3 << 48, 0x7f0000004010 | 1 << 63)],
                             pystop=1),
      event(flags=NEW | USER | COPYF, ustack=0))
write('copy_python_too_many', 1, copy(npy=MAX_PY + 1, pystop=2))
write('flags_no_user', 1, event(flags=NEW, cookie=0))
write('deep_stack', 1, stack([(0x1000 + i, 3, 2) for i in range(127)], sid=5))
# off-CPU intervals: a copy at the switch-out, other records, then the event
write('offcpu_copy_later', 2, copy(), stack([(0x1130, 7, 0)], sid=2),
      event(flags=NEW | USER, ustack=2, ev=1, cookie=0x700000001),
      event(flags=NEW | USER | COPYF | VALUE, ustack=0, value=10000000, cookie=0x500000001))
write('offcpu_shared', 1, event(flags=USER | VALUE, value=123))
write('offcpu_kernel_thread', 1, event(flags=VALUE, cookie=0, ustack=0, value=7))
write('bad_value_no_flag', 1, event(value=99))
# a kernel stack sent whole, then its event (UB_EV_KSTACK, kseq = seq)
write('kstack_whole', 1, kstack([0xffffffff81000010, 0xffffffff81000020], seq=3),
      event(flags=NEW | USER | KSTACKF, kseq=3))
write('kstack_too_many', 1, kstack([0xffffffff81000010], nr=128))
write('kstack_short', 1, kstack([0xffffffff81000010] * 4)[:40])
write('kstack_flag_no_seq', 1, event(flags=NEW | USER | KSTACKF, kseq=0))
