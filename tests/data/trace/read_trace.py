#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An independent reader of ustack trace files, written from
docs/trace-format.md alone (it shares no code with src/trace/). test_trace
compares its dump with the C reader's: the spec is complete enough when
both agree.

Usage: read_trace.py FILE   -> one line per record; on damage prints
"ERROR offset N" and exits 1.
"""
import struct
import sys
import zlib


class Bad(Exception):
    pass


class Cur:
    def __init__(self, b):
        self.b, self.p = b, 0

    def u8(self):
        if self.p >= len(self.b):
            raise Bad("past end")
        self.p += 1
        return self.b[self.p - 1]

    def var(self):
        v = 0
        for i in range(10):
            c = self.u8()
            if i == 9 and c > 1:
                raise Bad("varint overflow")
            v |= (c & 0x7f) << (7 * i)
            if not c & 0x80:
                return v
        raise Bad("varint too long")

    def u32(self):
        v = self.var()
        if v > 0xffffffff:
            raise Bad("u32 range")
        return v

    def zz(self):
        u = self.var()
        return (u >> 1) ^ -(u & 1)

    def raw(self):
        n = self.var()
        if n > len(self.b) - self.p:
            raise Bad("bytes past end")
        self.p += n
        return self.b[self.p - n:self.p]

    def s(self):
        r = self.raw()
        if b"\0" in r:
            raise Bad("NUL in string")
        return r.decode("utf-8", "replace")


M64 = (1 << 64) - 1


def hx(v):
    # the C dump's printf("%#llx"): 0 prints as "0"
    return "%#x" % v if v else "0"


def dump(data):
    out = []
    if len(data) < 32 or data[:8] != b"\x7fUSTACK\n":
        return out, 0
    if struct.unpack_from("<I", data, 28)[0] != zlib.crc32(data[:28]):
        return out, 28
    major, _minor, bom, wsize, hsize = struct.unpack_from("<HHIBB", data, 8)
    if major != 1 or bom != 0x01020304 or wsize != 8 or hsize < 32:
        return out, 8
    pos, idx, end_seen = hsize, 0, False
    all_files, contents = set(), {}  # FILE_CONTENT: valid for the whole file
    pyfuncs = {}  # PYFUNC (1.5): valid for the whole file
    while True:
        if pos == len(data):
            return out, (None if end_seen else pos)
        if end_seen:
            return out, pos
        if len(data) - pos < 20 or data[pos:pos + 4] != b"UCHK":
            return out, pos
        seq, plen, nrec, crc = struct.unpack_from("<IIII", data, pos + 4)
        if seq != idx or plen == 0 or plen > 64 << 20 or plen > len(data) - pos - 20:
            return out, pos
        payload = data[pos + 20:pos + 20 + plen]
        if zlib.crc32(payload, zlib.crc32(data[pos:pos + 16])) != crc or nrec == 0:
            return out, pos
        c = Cur(payload)
        prev = 0
        n = 0
        defs = {"stack": set(), "file": set(), "desc": set()}
        while c.p < plen:
            roff = pos + 20 + c.p
            try:
                t = c.u8()
                ln = c.var()
                if t == 0 or ln > plen - c.p or end_seen:
                    raise Bad("record")
                b = Cur(payload[c.p:c.p + ln])
                c.p += ln
                n += 1
                if idx == 0 and n == 1 and t != 1:
                    raise Bad("no HEADER")

                def tm():
                    nonlocal prev
                    prev = (prev + b.zz()) & M64
                    return prev

                def ids():
                    pid = b.u32()
                    tid = pid + b.zz()
                    if not 0 <= tid <= 0xffffffff:
                        raise Bad("tid")
                    return pid, tid
                if t == 1:
                    f = [b.var(), b.var(), b.var()] + [b.s() for _ in range(5)]
                    out.append("HEADER clock=%d realtime=%d clock_ns=%d host=%s release=%s "
                               "machine=%s cmdline=%s version=%s" % tuple(f))
                elif t == 2:
                    i, ty, fl, per, name = b.u32(), b.var(), b.var(), b.var(), b.s()
                    defs["desc"].add(i)
                    out.append("EVENT_DESC %d %d %d %d %s" % (i, ty, fl, per, name))
                elif t == 3:
                    fl = b.var()
                    if fl & ~15:
                        raise Bad("flags")
                    time = tm()
                    pid, tid = ids()
                    out.append("THREAD %d %d %d %d %s" % (time, pid, tid, fl, b.s()))
                elif t == 4:
                    fl = b.var()
                    if fl & ~15:
                        raise Bad("flags")
                    time = tm()
                    pid, tid = ids()
                    cpu, ev = b.u32(), b.u32()
                    if ev not in defs["desc"]:
                        raise Bad("desc")
                    ks = "-"
                    if fl & 1:
                        k = b.u32()
                        if (0, k) not in defs["stack"]:
                            raise Bad("kstack")
                        ks = str(k)
                    ck = 0
                    if fl & 2:
                        ck = b.u32()
                        ck |= b.u32() << 32
                        if not ck:
                            raise Bad("cookie")
                    val = b.var() if fl & 4 else 1
                    args = ""
                    if fl & 8:
                        na = b.var()
                        if not 1 <= na <= 12:
                            raise Bad("args")
                        args = "".join(" %d" % b.var() for _ in range(na))
                    out.append("EVENT %d %d %d %d %d %s %s %d%s" % (time, pid, tid, cpu, ev, ks, hx(ck), val, args))
                elif t == 5:
                    fl = b.var()
                    if fl & ~1:
                        raise Bad("flags")
                    time = tm()
                    pid, tid = ids()
                    cpu = b.u32()
                    ck = b.u32()
                    ck |= b.u32() << 32
                    stop = b.u32()
                    st = "-"
                    if fl & 1:
                        k = b.u32()
                        if (1, k) not in defs["stack"]:
                            raise Bad("ustack")
                        st = str(k)
                    if not ck:
                        raise Bad("cookie")
                    out.append("USER_STACK %d %d %d %d %s %d %s" % (time, pid, tid, cpu, hx(ck), stop, st))
                elif t == 6:
                    i, kind, nr = b.u32(), b.var(), b.var()
                    if kind > 1 or nr > 65535:
                        raise Bad("stack")
                    fr, p_ip, p_file = [], 0, 0
                    for j in range(nr):
                        if kind == 0:
                            p_ip = (p_ip + b.zz()) & M64
                            fr.append(hx(p_ip))
                        else:
                            info = b.u8()
                            if info & 0xe0 or (info & 0x10 and j == 0):
                                raise Bad("frame info")
                            fid = p_file if info & 0x10 else b.var()
                            if fid and fid not in defs["file"]:
                                raise Bad("file")
                            fr.append("%d/%d:%s:%s" % (info & 7, (info >> 3) & 1, hx(fid), hx(b.var())))
                            p_file = fid
                    defs["stack"].add((kind, i))
                    out.append("STACK %d %d %d %s" % (kind, i, nr, " ".join(fr)))
                elif t == 7:
                    fid, kind, fl, src = b.var(), b.var(), b.var(), b.var()
                    bid = b.raw()
                    if len(bid) > 32 or fid == 0:
                        raise Bad("file_map")
                    dmaj, dmin, ino, ms = b.u32(), b.u32(), b.var(), b.var()
                    path, dl, dcrc = b.s(), b.s(), b.u32()
                    if kind == 10 and (bid or dmaj or dmin or ino or dl):
                        raise Bad("python file_map")
                    defs["file"].add(fid)
                    all_files.add(fid)
                    out.append("FILE_MAP %s %d %d %d %s %d:%d %d %s %s %s %s" % (
                        hx(fid), kind, fl, src, bid.hex() or "-", dmaj, dmin, ino, hx(ms), path,
                        dl or "-", hx(dcrc)))
                elif t == 8:
                    what = b.var()
                    time = tm()
                    out.append("LOST %d %d %d %d" % (what, time, b.u32(), b.var()))
                elif t == 9:
                    out.append("KSYM %s %d %s %s" % (hx(b.var()), b.var(), b.s(), b.s() or "-"))
                elif t == 10:
                    out.append("END " + " ".join(str(b.var()) for _ in range(8)))
                    end_seen = True
                elif t == 12:
                    fid, fl, algo, h, size = b.var(), b.u32(), b.u32(), b.raw(), b.var()
                    if fid == 0 or fl & ~7 or fid not in all_files:
                        raise Bad("file_content")
                    if algo == 1:
                        if len(h) != 32 or contents.setdefault(fid, (h, size)) != (h, size):
                            raise Bad("file_content hash")
                        out.append("FILE_CONTENT %s %d %d %s %d" % (hx(fid), fl, algo, h.hex(), size))
                elif t == 13:
                    f = (b.var(), b.u32(), b.u32(), b.s(), b.s())
                    if not 1 <= f[0] < 1 << 40 or not f[3] or not f[4]:
                        raise Bad("pyfunc")
                    if pyfuncs.setdefault(f[0], f) != f:
                        raise Bad("pyfunc redefined")
                    out.append("PYFUNC %s %d %d %s %s" % (hx(f[0]), f[1], f[2], f[3], f[4]))
                # other types: skipped by length
            except Bad:
                return out, roff
        if n != nrec:
            return out, pos
        pos += 20 + plen
        idx += 1


def main():
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    out, err = dump(data)
    for line in out:
        print(line)
    if err is not None:
        print("ERROR offset %d" % err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
