# SPDX-License-Identifier: MIT
# py_strip.py FILE: in a copy of a CPython executable, the dynamic symbol
# names _PyRuntime and Py_Version made X-prefixed (XPyRuntime, Xy_Version)
# in .dynstr: the interpreter runs as before (it uses neither name), but its
# runtime can no longer be found by name, as in a build linked without
# exported symbols. The frame readers must refuse it, naming it.
import struct
import sys

p = sys.argv[1]
b = bytearray(open(p, "rb").read())
shoff = struct.unpack_from("<Q", b, 0x28)[0]
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
secs = [struct.unpack_from("<IIQQQQ", b, shoff + i * shentsize) for i in range(shnum)]
stro = secs[shstrndx][4]


def name(n):
    return b[stro + n:b.index(b"\0", stro + n)].decode()


done = 0
for sh_name, _, _, _, off, size in secs:
    if name(sh_name) != ".dynstr":
        continue
    d = bytes(b[off:off + size])
    for sym in (b"_PyRuntime\0", b"Py_Version\0"):
        i = d.find(b"\0" + sym)
        if i >= 0:
            b[off + i + 1] = ord("X")
            done += 1
if done != 2:
    sys.exit("py_strip: %s: _PyRuntime and Py_Version not both in .dynstr" % p)
open(p, "wb").write(b)
