#!/usr/bin/env python3
# Writes tests/fuzz/corpus/pyframes/: seeds for fuzz_pyframes (header and
# image: see fuzz_pyframes.c). Each seed is a small interpreter as CPython
# 3.11 or 3.13 lays it out: a runtime, one interpreter, thread states,
# frames (a 3.13 entry shim among them), code objects with their str names
# and location tables; then the same with a frame loop, a thread-state
# loop, a string of another kind, a cut line table.
import os, struct, sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "pyframes")
os.makedirs(out, exist_ok=True)
BASE = 0x7f0000010000

L311 = dict(rt_head=40, is_next=0, is_threads=16, ts_next=8, ts_interp=16, ts_native=160,
            ts_cframe=56, cf_current=8, fr_code=32, fr_prev=48, fr_instr=56, fr_owner=69,
            fr_entry=68, co_filename=112, co_qualname=128, co_linetable=136, co_first=72,
            co_adaptive=184, ascii=48, compact=72)
# 3.14 (its _Py_DebugOffsets grew: debug_offsets_314): frames as 3.13's
# but for the owner byte; f_executable a tagged _PyStackRef (bit 0 set)
L314 = None  # set below from L313
L313 = dict(rt_head=632, is_next=7264, is_threads=7344, ts_next=8, ts_interp=16, ts_native=160,
            ts_frame=72, fr_code=0, fr_prev=8, fr_instr=56, fr_owner=70, co_filename=112,
            co_qualname=128, co_linetable=136, co_first=68, co_adaptive=200, ascii=40, compact=56)


def debug_offsets(L):
    q = lambda *v: struct.pack("<%dQ" % len(v), *v)
    b = b"xdebugpy" + q(0x030d00f0, 0)
    b += q(1000, 0, L["rt_head"])
    b += q(8000, 0, L["is_next"], L["is_threads"], 0, 0, 0, 0, 0, 0, 0, 0, 0)
    b += q(300, 0, L["ts_next"], L["ts_interp"], L["ts_frame"], 152, L["ts_native"], 0, 0)
    b += q(80, L["fr_prev"], L["fr_code"], L["fr_instr"], 64, L["fr_owner"])
    b += q(220, L["co_filename"], 120, L["co_qualname"], L["co_linetable"], L["co_first"], 0, 0, 0, L["co_adaptive"])
    b += q(16, 8) + q(400, 24, 0, 0) + q(32, 24, 16) + q(40, 24, 16) + q(48, 32, 40) + q(24, 16)
    b += q(24, 16, 24) + q(33, 16, 32) + q(56, 32, 16, L["ascii"]) + q(400, 0)
    assert len(b) == 584, len(b)
    return b


L314 = dict(L313, rt_head=1000, fr_owner=74, co_adaptive=208, tagged=1)


def debug_offsets_314(L):
    b = bytearray(760)
    b[0:8] = b"xdebugpy"
    put = lambda at, v: struct.pack_into("<Q", b, at, v)
    put(8, 0x030e0af0)
    for at in (24, 48, 176, 248, 312, 400, 592, 616):
        put(at, 8000)
    for at, k in ((40, "rt_head"), (64, "is_next"), (72, "is_threads"), (192, "ts_next"),
                  (200, "ts_interp"), (208, "ts_frame"), (224, "ts_native"), (256, "fr_prev"),
                  (264, "fr_code"), (272, "fr_instr"), (288, "fr_owner"), (320, "co_filename"),
                  (336, "co_qualname"), (344, "co_linetable"), (352, "co_first"), (384, "co_adaptive")):
        put(at, L[k])
    put(408, 8)
    put(600, 16); put(608, 32)
    put(624, 32); put(632, 16); put(640, L["ascii"])
    return bytes(b)


class Image:
    def __init__(self):
        self.buf = bytearray(0x40)

    def alloc(self, n):
        off = len(self.buf)
        self.buf += bytes(n + (-n % 16))
        return off

    def put(self, off, fmt, *v):
        struct.pack_into("<" + fmt, self.buf, off, *v)

    def addr(self, off):
        return BASE + off


def build(L, minor, chain, tstates=2, loop=None, tsloop=False, kind=1, cut_table=False):
    im = Image()
    types = [im.alloc(16) for _ in range(3)]  # PyCode_Type, PyUnicode_Type, PyBytes_Type
    struct.pack_into("<BxxxIIII", im.buf, 0, {11: 0, 12: 1, 13: 2, 14: 3}[minor], 0, *types)

    def string(s):
        ascii = all(ord(c) < 128 for c in s) and kind == 1
        size = L["ascii"] if ascii else L["compact"]
        data = s.encode("latin-1") if kind == 1 else s.encode("utf-16-le" if kind == 2 else "utf-32-le")
        o = im.alloc(size + len(data) + kind)
        state = 1 << 5 | kind << 2 | (1 << 6 if ascii else 0)
        im.put(o, "QQqqI", 1, im.addr(types[1]), len(s), -1, state)
        im.buf[o + size:o + size + len(data)] = data
        return im.addr(o)

    table = bytes([0xEB, 0x02, 0xD9, 0x05, 0x06, 0xF0, 0x06, 0x00, 0x01, 0x02, 0xF8])
    if cut_table:
        table = table[:6]

    def code(qualname, first):
        b = im.alloc(40 + len(table))
        im.put(b, "QQqq", 1, im.addr(types[2]), len(table), -1)
        im.buf[b + 32:b + 32 + len(table)] = table
        c = im.alloc(L["co_adaptive"] + 32)
        im.put(c, "QQq", 1, im.addr(types[0]), 8)
        im.put(c + L["co_first"], "i", first)
        im.put(c + L["co_qualname"], "Q", string(qualname))
        im.put(c + L["co_filename"], "Q", string("/srv/app/m\u00e9.py" if kind > 1 else "/srv/app/m.py"))
        im.put(c + L["co_linetable"], "Q", im.addr(b))
        return im.addr(c)

    frames = []
    for name, unit, owner, entry in chain:
        f = im.alloc(80)
        if owner == 3:
            im.put(f + L["fr_owner"], "B", 3)
        else:
            c = code(name, 10)
            im.put(f + L["fr_code"], "Q", c | L.get("tagged", 0))
            im.put(f + L["fr_instr"], "Q", c + L["co_adaptive"] + 2 * unit)
            im.put(f + L["fr_owner"], "B", owner)
            if "fr_entry" in L:
                im.put(f + L["fr_entry"], "B", entry)
        frames.append(f)
    for a, b in zip(frames, frames[1:]):
        im.put(a + L["fr_prev"], "Q", im.addr(b))
    if loop is not None:
        im.put(frames[-1] + L["fr_prev"], "Q", im.addr(frames[loop]))

    rt = im.alloc(max(L["rt_head"] + 8, 800 if minor == 14 else 600))
    if minor == 13:
        im.buf[rt:rt + 584] = debug_offsets(L)
    if minor == 14:
        im.buf[rt:rt + 760] = debug_offsets_314(L)
    interp = im.alloc(L["is_threads"] + 8)
    im.put(rt + L["rt_head"], "Q", im.addr(interp))
    struct.pack_into("<I", im.buf, 4, rt)
    prev = None
    for i in range(tstates):
        ts = im.alloc(200)
        im.put(ts + L["ts_interp"], "Q", im.addr(interp))
        im.put(ts + L["ts_native"], "Q", 4242 + i)
        if "ts_cframe" in L:
            cf = im.alloc(16)
            im.put(ts + L["ts_cframe"], "Q", im.addr(cf))
            im.put(cf + L["cf_current"], "Q", im.addr(frames[0]))
        else:
            im.put(ts + L["ts_frame"], "Q", im.addr(frames[0]))
        if prev is None:
            im.put(interp + L["is_threads"], "Q", im.addr(ts))
            first = ts
        else:
            im.put(prev + L["ts_next"], "Q", im.addr(ts))
        prev = ts
    if tsloop:
        im.put(prev + L["ts_next"], "Q", im.addr(first))
    return bytes(im.buf)


chain311 = [("leaf", 5, 0, 0), ("Walker.step.<locals>.<lambda>", 0, 0, 1), ("gen", 6, 1, 1), ("<module>", 7, 0, 1)]
chain313 = [("leaf", 5, 0, 0), ("Walker.step.<locals>.<lambda>", 0, 0, 0), (None, 0, 3, 0),
            ("gen", 6, 1, 0), ("<module>", 7, 0, 0), (None, 0, 3, 0)]
seeds = {
    "v311": build(L311, 11, chain311),
    "v311-loop": build(L311, 11, chain311, loop=1),
    "v311-tsloop": build(L311, 11, chain311, tstates=3, tsloop=True),
    "v311-ucs2": build(L311, 11, chain311, kind=2),
    "v311-cut-table": build(L311, 11, chain311, cut_table=True),
    "v313": build(L313, 13, chain313),
    "v313-loop": build(L313, 13, chain313, loop=2),
    "v313-ucs4": build(L313, 13, chain313, kind=4),
    "v313-tsloop": build(L313, 13, chain313, tstates=2, tsloop=True),
    "v314": build(L314, 14, chain313),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print("wrote %d seeds to %s" % (len(seeds), out))
