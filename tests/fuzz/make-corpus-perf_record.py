#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz_perf_record: perf ring-buffer records laid
out as the kernel writes them for the session's attributes (perf_events.c
fill_attr: sample_type IDENTIFIER|IP|TID|TIME|CPU|PERIOD|CALLCHAIN|
REGS_USER|STACK_USER with regs bx, bp, sp, ip; sample_id_all). Event
0xdeadbeef (event 3 of the fuzz target) also samples RAW (sched_switch's
fields), and SWITCH records come from it (attr.context_switch). Event
0xfeedface (event 4) is a uprobe's: its samples carry the 17 general-purpose
registers (ax..ip, r8..r15).

usage: tests/fuzz/make-corpus-perf_record.py [DIR]   (default tests/fuzz/corpus/perf_record)
"""
import os
import struct
import sys

SAMPLE, MMAP2, COMM, EXIT, THROTTLE, FORK, LOST, LOST_SAMPLES = 9, 10, 3, 4, 5, 7, 2, 13
UNTHROTTLE = 6
SWITCH, SWITCH_CPU_WIDE = 14, 15
MISC_SWITCH_OUT, MISC_SWITCH_OUT_PREEMPT = 1 << 13, 1 << 14
ID_RAW = 0xdeadbeef  # event 3 in the fuzz target: samples with PERF_SAMPLE_RAW
ID_REGS = 0xfeedface  # event 4: a probe's samples, every general-purpose register
MISC_KERNEL, MISC_USER = 1, 2
MISC_COMM_EXEC = 1 << 13
MISC_MMAP_BUILD_ID = 1 << 14
CONTEXT_KERNEL = (1 << 64) - 128
ABI_NONE, ABI_64 = 0, 2
ID0, ID1 = 0x1234, 0x9999  # events 0 and 1 in the fuzz target


def u64(*v):
    return b"".join(struct.pack("<Q", x) for x in v)


def pair(lo, hi):
    return struct.pack("<II", lo, hi)


def name(s):
    b = s.encode() + b"\0"
    return b + b"\0" * (-len(b) % 8)


def rec(type_, misc, body):
    return struct.pack("<IHH", type_, misc, 8 + len(body)) + body


def sample_id(pid, tid, time, cpu, id_=ID0):
    return pair(pid, tid) + u64(time) + pair(cpu, 0) + u64(id_)


def sample(id_, ip, pid, tid, time, cpu, kips, regs, stack, dyn, misc=MISC_USER):
    body = u64(id_, ip) + pair(pid, tid) + u64(time) + pair(cpu, 0) + u64(1)
    chain = [CONTEXT_KERNEL] + kips if kips else []
    body += u64(len(chain), *chain)
    if regs and len(regs) == 17:
        body += u64(ABI_64, *regs)  # ax, bx, cx, dx, si, di, bp, sp, ip, r8..r15
    elif regs:
        body += u64(ABI_64, 0, *regs)  # bx (0 here), bp, sp, ip
    else:
        body += u64(ABI_NONE)
    body += u64(len(stack))
    if stack:
        body += stack + u64(dyn)
    return rec(SAMPLE, misc, body)


def sched_raw(prev_pid, prev_state, next_pid):
    # Linux 6.18's sched_switch fields (common 8, prev_comm 16, prev_pid,
    # prev_prio, prev_state, next_comm 16, next_pid, next_prio): 64 bytes,
    # then u32 size + data padded to whole u64s
    data = struct.pack("<HBBi", 372, 0, 0, prev_pid) + b"demo".ljust(16, b"\0")
    data += struct.pack("<iiq", prev_pid, 120, prev_state) + b"swapper/1".ljust(16, b"\0")
    data += struct.pack("<ii", next_pid, 120)
    data += b"\0" * (-(4 + len(data)) % 8)
    return struct.pack("<I", len(data)) + data


def switch_sample(pid, tid, time, cpu, kips, regs, stack, prev_state):
    body = u64(ID_RAW, kips[0]) + pair(pid, tid) + u64(time) + pair(cpu, 0) + u64(1)
    chain = [CONTEXT_KERNEL] + kips
    body += u64(len(chain), *chain) + sched_raw(tid, prev_state, 0)
    body += u64(ABI_64, 0, *regs) + u64(len(stack)) + stack + u64(len(stack))
    return rec(SAMPLE, MISC_KERNEL, body)


def switch(pid, tid, time, cpu, misc=0, cpu_wide=False):
    body = pair(0, 0) if cpu_wide else b""
    return rec(SWITCH_CPU_WIDE if cpu_wide else SWITCH, misc,
               body + sample_id(pid, tid, time, cpu, ID_RAW))


def user_stack(sp, n):
    # frames of a small program: saved rbp chain and return addresses
    words = []
    for i in range(n // 8):
        words.append(sp + 0x40 * (i // 2 + 1) if i % 2 == 0 else 0x401000 + 0x37 * i)
    return u64(*words)


def comm(pid, tid, s, time, exec_=False):
    return rec(COMM, MISC_COMM_EXEC if exec_ else 0,
               pair(pid, tid) + name(s) + sample_id(pid, tid, time, 1))


def mmap2(pid, tid, start, length, pgoff, path, time, build_id=None):
    body = pair(pid, tid) + u64(start, length, pgoff)
    misc = MISC_USER
    if build_id is not None:
        misc |= MISC_MMAP_BUILD_ID
        body += struct.pack("<BBH", len(build_id), 0, 0) + build_id.ljust(20, b"\0")
    else:
        body += pair(8, 1) + u64(1835011, 0)  # maj, min, ino, ino_generation
    body += pair(5, 2)  # PROT_READ|PROT_EXEC, MAP_PRIVATE
    body += name(path) + sample_id(pid, tid, time, 0)
    return rec(MMAP2, misc, body)


def task(type_, pid, ppid, tid, ptid, time):
    return rec(type_, 0, pair(pid, ppid) + pair(tid, ptid) + u64(time) + sample_id(pid, tid, time, 2))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/corpus/perf_record"
    os.makedirs(out, exist_ok=True)
    t = 1_000_000_000
    kips = [0xffffffff81e3a0f1, 0xffffffff81c0009b, 0xffffffff8100215e]
    sp = 0x7ffc3a2f1e00
    files = {
        "sample_user": sample(ID0, 0x401136, 4242, 4242, t, 3, [],
                              (sp + 0x30, sp, 0x401136), user_stack(sp, 256), 256),
        "sample_syscall_kstack": sample(ID1, 0xffffffff81e3a0f1, 4242, 4243, t + 1, 0, kips,
                                        (sp + 0x10, sp, 0x7f3c1a2b4e9d), user_stack(sp, 512), 200,
                                        misc=MISC_KERNEL),
        "sample_kernel_thread": sample(ID0, 0xffffffff8100215e, 0, 0, t + 2, 1, kips[1:], None,
                                       b"", 0, misc=MISC_KERNEL),
        "comm": comm(4242, 4242, "demo", t + 3),
        "comm_exec": comm(4242, 4242, "futex_demo", t + 4, exec_=True),
        "mmap2_inode": mmap2(4242, 4242, 0x7f3c1a200000, 0x195000, 0x28000,
                             "/usr/lib/x86_64-linux-gnu/libc.so.6", t + 5),
        "mmap2_build_id": mmap2(4242, 4242, 0x400000, 0x1000, 0, "/tmp/futex_demo", t + 6,
                                bytes(range(0xa0, 0xb4))),
        "mmap2_anon": mmap2(4242, 4242, 0x7f3c1a000000, 0x1000, 0, "//anon", t + 7),
        "fork": task(FORK, 4242, 4241, 4244, 4242, t + 8),
        "exit": task(EXIT, 4242, 4241, 4244, 4242, t + 9),
        "lost": rec(LOST, 0, u64(ID0, 17) + sample_id(0, 0, t + 10, 3)),
        "lost_samples": rec(LOST_SAMPLES, 0, u64(5) + sample_id(4242, 4242, t + 11, 2)),
        "throttle": rec(THROTTLE, 0, u64(t + 12, ID0, 0) + sample_id(0, 0, t + 12, 1)),
        "sched_switch_sleep": switch_sample(4242, 4243, t + 13, 0, kips,
                                            (sp + 0x10, sp, 0x7f3c1a2b4e9d),
                                            user_stack(sp, 256), 1),
        "switch_in": switch(4242, 4243, t + 14, 1),
        "switch_out_preempt": switch(4242, 4243, t + 15, 1,
                                     MISC_SWITCH_OUT | MISC_SWITCH_OUT_PREEMPT),
        "switch_in_cpu_wide": switch(4242, 4243, t + 16, 0, cpu_wide=True),
        "sample_probe": sample(ID_REGS, 0x401136, 4242, 4243, t + 17, 1, [],
                               (0x2a, 0, 3, 4, 5, 6, sp + 0x30, sp, 0x401136)
                               + tuple(range(8, 16)), user_stack(sp, 256), 256),
        "unthrottle": rec(UNTHROTTLE, 0, u64(t + 18, ID_REGS, 0) + sample_id(0, 0, t + 18, 1)),
    }
    # one poll round as the session sees it
    files["round"] = b"".join(files[k] for k in ("comm_exec", "mmap2_inode", "mmap2_build_id",
                                                 "fork", "sample_user", "sample_syscall_kstack",
                                                 "lost", "sample_kernel_thread", "exit",
                                                 "lost_samples", "throttle", "sample_probe",
                                                 "unthrottle"))
    # an interval: the switch-out sample, the switch-out, the switch-in
    files["round_offcpu"] = b"".join(files[k] for k in ("sched_switch_sleep",
                                                        "switch_out_preempt", "switch_in"))
    for k, v in files.items():
        with open(os.path.join(out, k), "wb") as f:
            f.write(v)


if __name__ == "__main__":
    main()
