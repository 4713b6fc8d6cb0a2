#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks of tests/integration/names_hostile.sh (not a test by itself).

Every output format of ustack, for a process whose thread names, function
names (ELF and JIT) and path are hostile (tests/integration/progs/
names_hostile.c), read by the parsers its users feed it to, or by their
rules: each check prints PASS NAME or FAIL NAME: why.

The name rules are written here once more, from docs/cli/report.md ("Names
in the output"), independently of src/cli/out_names.c: the test compares
what ustack wrote with what the documented rule gives.

  names_check.py patch BINARY
      rewrite the placeholder symbol name in BINARY's .strtab to SYMBOL
  names_check.py snapshot DIR PID [SCHEMA]
      DIR/s.{text,raw,folded,json,speedscope,pprof} of process PID
  names_check.py report DIR PERIOD [SCHEMA]
      DIR/t.{text,raw,folded,perf-script,speedscope,pprof,collapsed},
      DIR/t.events (the event count of --stats)
  names_check.py svg NAME FILE.svg BENIGN.svg [FOLDED...]
      an SVG of ustack flamegraph against one of benign names
"""
import gzip
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

# ---- the names (as names_hostile.c sets them) -------------------------------------
THREADS = [b"x;y", b"a\nb", b"<script>", b'q"b\\s', b"\xff\xfe;bad", b" 1 (p->q",
           b"\r\t\x1b[31m", b"u\xe2\x80\xa8\xc2\x9b", b"z"]
PLACEHOLDER = b"HOSTILE_NAME_SLOT_0123456789abcdef"
# '(' first (perf script readers drop such frames), ';', a newline, markup,
# quotes, a backslash, bytes that are not UTF-8, "->" (stackcollapse splits there)
SYMBOL = (b'(hostile;fn\n<b>"\\\xff\xfe->x::y' + b"z" * 40)[:len(PLACEHOLDER)]
# a C++ mangled name "_Z27<identifier>v": the demangler copies the
# identifier as it is, so the demangled "<identifier>()" is hostile too
CXX_PLACEHOLDER = b"HOSTILE_CXX_SLOT_0123456789"
CXX_IDENT = (b'(c;x\n<i>"\\\xfe->q::r' + b"w" * 30)[:len(CXX_PLACEHOLDER)]
CXX = CXX_IDENT + b"()"
JIT_SPIN = b'(jit;spin<b>"\\\xfe\t->c'
JIT_BLOCK = b"jit\rblock;</title>\xff"
# names a recording may show besides those: the recorder's child before it
# runs the program, a thread whose name the trace does not know
EXTRA_COMMS = [b"ustack", b"<...>"]

failed = 0


def result(name, ok, why=""):
    global failed
    if ok:
        print("PASS %s" % name)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, why))
    sys.stdout.flush()


def check(name, fn, *args):
    try:
        fn(*args)
    except (AssertionError, ValueError, KeyError, IndexError, ET.ParseError) as e:
        result(name, False, ("%s: %s" % (type(e).__name__, e))[:600])
    else:
        result(name, True)


# ---- the documented rules ---------------------------------------------------------------
def chars(b):
    """(bytes, code point) per character; code point None: a byte that is not UTF-8"""
    i = 0
    while i < len(b):
        c = b[i]
        n = 1 if c < 0x80 else 2 if 0xc2 <= c <= 0xdf else 3 if 0xe0 <= c <= 0xef else \
            4 if 0xf0 <= c <= 0xf4 else 0
        if n and i + n <= len(b):
            try:
                ch = b[i:i + n].decode("utf-8")  # strict: no overlong form, no surrogate
                yield b[i:i + n], ord(ch)
                i += n
                continue
            except UnicodeDecodeError:
                pass
        yield b[i:i + 1], None
        i += 1


def hexb(seq):
    return b"".join(b"\\x%02x" % x for x in seq)


def esc_line(b):
    """text, raw, perf-script: control characters (C0, DEL, C1), U+2028/9
    and bytes that are not UTF-8 as \\xNN"""
    out = b""
    for seq, cp in chars(b):
        if cp is None or cp < 0x20 or 0x7f <= cp < 0xa0 or cp in (0x2028, 0x2029):
            out += hexb(seq)
        else:
            out += seq
    return out


def esc_word(b):
    return esc_line(b).replace(b" ", b"\\x20")


def esc_folded(b):
    return esc_line(b).replace(b";", b":")


JS_SPACE = {0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff} | set(range(0x2000, 0x200b))


def esc_ps_comm(b):
    out = esc_folded(b)
    first = next(chars(b), (b"", None))
    if first[1] in JS_SPACE:
        out = hexb(first[0]) + out[len(first[0]):]
    if out.startswith(b" "):
        out = b"_" + out[1:]
    return re.sub(rb" (?=[0-9])", b"_", out)


def u8(b):
    """JSON, pprof, XML: each byte that is not UTF-8 is one U+FFFD"""
    return "".join("\ufffd" if cp is None else chr(cp) for _, cp in chars(b))


def read(path):
    return open(path, "rb").read()


def text_lines(path):
    """the file's lines; it must be UTF-8 (every name in it was made so)"""
    data = read(path)
    data.decode("utf-8")  # raises on anything that is not UTF-8
    assert data == b"" or data.endswith(b"\n"), "no newline at the end"
    return data[:-1].split(b"\n") if data else []


# ---- a minimal protobuf reader (profile.proto's fields as varints and bytes) ---------------
def pb_fields(buf):
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            n, i = varint(buf, i)
            v = buf[i:i + n]
            assert len(v) == n, "truncated field"
            i += n
        else:
            raise ValueError("wire type %d" % wt)
        yield f, wt, v


def varint(buf, i):
    v = s = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7f) << s
        s += 7
        if b < 0x80:
            return v, i


def packed(v):
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def pprof_read(path):
    """strings (each must be UTF-8), samples: (location ids, values, labels)"""
    raw = gzip.decompress(read(path))
    strings, samples, funcs = [], [], []
    for f, wt, v in pb_fields(raw):
        if f == 6:
            strings.append(v.decode("utf-8"))  # raises: protobuf strings are UTF-8
        elif f == 2:
            locs, vals, labels = [], [], []
            for g, gwt, w in pb_fields(v):
                if g == 1:
                    locs += packed(w) if gwt == 2 else [w]
                elif g == 2:
                    vals += packed(w) if gwt == 2 else [w]
                elif g == 3:
                    labels.append({h: x for h, _, x in pb_fields(w)})
            samples.append((locs, vals, labels))
        elif f == 5:
            funcs.append({h: x for h, _, x in pb_fields(v)})
    labels = [[(strings[l.get(1, 0)], strings[l[2]] if 2 in l else l.get(3)) for l in s[2]]
              for s in samples]
    names = {strings[fn.get(2, 0)] for fn in funcs}
    return strings, [(s[0], s[1], dict(lab)) for s, lab in zip(samples, labels)], names


def speedscope_check(path, schema):
    d = json.loads(read(path).decode("utf-8"))  # strict: no control character in a string
    if schema and os.path.exists(schema):
        import jsonschema
        jsonschema.validate(d, json.load(open(schema)))
    return d


# ---- patch ------------------------------------------------------------------------------------
def patch(binary):
    data = read(binary)
    for old, new in ((PLACEHOLDER, SYMBOL), (CXX_PLACEHOLDER, CXX_IDENT)):
        assert data.count(old) == 1, "%s found %d times" % (old, data.count(old))
        assert len(new) == len(old) and b"\0" not in new
        data = data.replace(old, new)
    open(binary, "wb").write(data)


# ---- snapshot -------------------------------------------------------------------------------------
def proc_comms(pid):
    out = {}
    for t in os.listdir("/proc/%d/task" % pid):
        c = read("/proc/%d/task/%s/comm" % (pid, t))
        assert c.endswith(b"\n")
        out[int(t)] = c[:-1]  # the kernel's newline, and no other
    return out


def snapshot(d, pid, schema):
    comms = proc_comms(pid)
    p = lambda x: os.path.join(d, "s." + x)
    raw = {}

    def snap_raw():
        tid = None
        for line in text_lines(p("raw")):
            if line.startswith(b"TID "):
                _, t, name = line.split(b" ", 2)
                tid = int(t)
                assert name == esc_line(comms[tid]), (name, comms[tid])
                raw[tid] = 0
            elif re.fullmatch(rb"#(\d+) 0x[0-9a-f]+", line):
                assert int(line[1:].split()[0]) == raw[tid], line
                raw[tid] += 1
            else:
                assert line == b"", "a line that is neither: %r" % line
        assert sorted(raw) == sorted(comms), (sorted(raw), sorted(comms))

    def snap_text():
        tid, seen, n = None, {}, 0
        sym = esc_line(SYMBOL) + b"+0x"
        cxx = esc_line(CXX) + b"+0x"
        jit = b" " + esc_line(JIT_BLOCK) + b"+0x"
        for line in text_lines(p("text")):
            if line.startswith(b"TID "):
                _, t, name = line.split(b" ", 2)
                tid = int(t)
                assert name == esc_line(comms[tid]), (name, comms[tid])
                seen[tid] = 0
            elif re.match(rb"#\d+ 0x[0-9a-f]+ ", line):
                assert int(line[1:].split()[0]) == seen[tid], line
                seen[tid] += 1
                n += sym in line
                n += cxx in line
                n += jit in line and line.endswith(b"([jit] /tmp/perf-%d.map)" % pid)
            else:
                assert line == b"" or line.startswith(b"# stopped: "), "stray line: %r" % line
        assert seen == raw, ("frames per thread", seen, raw)
        assert n == 6, "hostile symbol, C++ and JIT frames: %d of 6" % n

    def snap_folded():
        lines = text_lines(p("folded"))
        assert len(lines) == len(comms), "%d lines for %d threads" % (len(lines), len(comms))
        by_comm = {esc_folded(c): t for t, c in comms.items()}
        assert len(by_comm) == len(comms)
        n = 0
        for line in lines:
            stack, count = line.rsplit(b" ", 1)
            assert count == b"1", line
            frames = stack.split(b";")
            tid = by_comm[frames[0]]  # the thread's name: one frame, its first
            assert len(frames) == 1 + raw[tid], (len(frames), raw[tid], line)
            n += frames.count(esc_folded(SYMBOL)) + frames.count(esc_folded(CXX)) + \
                frames.count(esc_folded(JIT_BLOCK) + b"_[j]")
        assert n == 6, "hostile symbol, C++ and JIT frames: %d of 6" % n

    def snap_json():
        j = json.loads(read(p("json")).decode("utf-8"))
        assert j["pid"] == pid
        th = {t["tid"]: t for t in j["threads"]}
        assert sorted(th) == sorted(comms)
        n = 0
        for tid, t in th.items():
            assert t["comm"] == u8(comms[tid]), (t["comm"], comms[tid])
            assert len(t["frames"]) == raw[tid], (tid, len(t["frames"]), raw[tid])
            fn = [f["function"] for f in t["frames"]]
            n += fn.count(u8(SYMBOL)) + fn.count(u8(CXX)) + fn.count(u8(JIT_BLOCK))
        assert n == 6, "hostile symbol, C++ and JIT frames: %d of 6" % n

    def snap_speedscope():
        s = speedscope_check(p("speedscope"), schema)
        names = [f["name"] for f in s["shared"]["frames"]]
        assert {u8(SYMBOL), u8(CXX), u8(JIT_BLOCK)} <= set(names), names
        want = {u8(c) + " (%d)" % t: t for t, c in comms.items()}
        assert sorted(x["name"] for x in s["profiles"]) == sorted(want)
        for prof in s["profiles"]:
            assert len(prof["samples"]) == 1 and len(prof["samples"][0]) == raw[want[prof["name"]]]

    def snap_pprof():
        strings, samples, funcs = pprof_read(p("pprof"))
        assert len(samples) == len(comms), len(samples)
        for locs, vals, lab in samples:
            tid = lab["thread"]
            assert lab["comm"] == u8(comms[tid]), (lab["comm"], comms[tid])
            assert len(locs) == raw[tid], (tid, len(locs), raw[tid])
        assert {u8(SYMBOL), u8(CXX), u8(JIT_BLOCK)} <= funcs, funcs

    check("names_snapshot_raw", snap_raw)
    if not raw:
        return
    check("names_snapshot_text", snap_text)
    check("names_snapshot_folded", snap_folded)
    check("names_snapshot_json", snap_json)
    check("names_snapshot_speedscope%s" % ("" if schema and os.path.exists(schema) else "_noschema"),
          snap_speedscope)
    check("names_snapshot_pprof", snap_pprof)


# ---- record + report ------------------------------------------------------------------------------
def report(d, period, schema):
    p = lambda x: os.path.join(d, "t." + x)
    events = int(open(p("events")).read())
    names = THREADS + [os.path.basename(open(p("prog"), "rb").read())[:15]] + EXTRA_COMMS
    text = []  # per event: (tid, time, cookie, frames)

    def rep_text():
        cur = None
        head = re.compile(rb"(.+)-(\d+) \[(\d+)\] \.\.\.\.\. (\d+\.\d+): (\S+) cookie=([0-9a-f]+)")
        ok = {esc_line(c) for c in names}
        sym = b" => " + esc_line(SYMBOL) + b"+0x"
        cxx = b" => " + esc_line(CXX) + b"+0x"
        jit = b" => " + esc_line(JIT_SPIN) + b"+0x"
        hits = [0, 0, 0]
        for line in text_lines(p("text")):
            m = head.fullmatch(line)
            if m:
                assert m.group(1) in ok, "comm %r" % m.group(1)
                cur = [int(m.group(2)), m.group(4), m.group(6), 0]
                text.append(cur)
            elif line.startswith(b" => "):
                cur[3] += 1
                hits[0] += line.startswith(sym)
                hits[1] += line.startswith(cxx)
                hits[2] += line.startswith(jit)
            else:
                assert line == b"" or line.startswith(b" -- "), "stray line: %r" % line
        assert len(text) == events, "%d events, --stats says %d" % (len(text), events)
        assert all(hits), "hostile symbol / C++ / JIT frames: %s" % hits

    def rep_raw():
        kern, user, owner, cur = {}, {}, {}, None
        prog = open(p("prog"), "rb").read()
        pre = rb"(.+)-(\d+) \[(\d+)\] (\.\.\.\.\.|\.\.\.1\.) (\d+\.\d+): "
        paths = []
        for line in text_lines(p("raw")):
            m = re.fullmatch(pre + rb"(.*)", line)
            rest = m.group(6) if m else None
            if m and re.fullmatch(rb"\S+ cookie=[0-9a-f]+", rest):
                cur = kern.setdefault((int(m.group(2)), m.group(5), rest.split(b"=")[1]), [0])
            elif m and rest.startswith(b"<user stack unwind> cookie="):
                # readers stitch by tid, then cookie (docs/deferred.md); the
                # cookie itself is unique, as the kernel's is: one thread's
                cookie = rest.split(b"=")[1]
                owner.setdefault(cookie, set()).add(int(m.group(2)))
                assert len(owner[cookie]) == 1, "cookie %s in threads %s" % (cookie, sorted(owner[cookie]))
                cur = user.setdefault((int(m.group(2)), cookie), [0])
            elif m and rest.startswith(b"file_map: "):
                f = re.fullmatch(rb"file_map: id=0x[0-9a-f]+ path=(\S+) build_id=([0-9a-f]+|-)", rest)
                assert f, "file_map fields: %r" % rest
                paths.append(f.group(1))
                cur = None
            elif m and rest.startswith(b"<no user stack> "):
                cur = None
            elif re.fullmatch(rb"file_content: id=0x[0-9a-f]+ sha256:[0-9a-f]{64} size=\d+( [a-z-]+)*",
                              line):
                cur = None
            elif re.fullmatch(rb" => <0x[0-9a-f]{16}>", line) or \
                    re.fullmatch(rb" => <[0-9a-f]{16}> : 0x[0-9a-f]+", line):
                cur[0] += 1
            else:
                assert re.fullmatch(rb"<\.\.\.>-0 \[(\d+|---)\] \.\.\.\.\. \d+\.\d+: lost: .*", line), \
                    "stray line: %r" % line
        assert esc_word(prog) in paths, (esc_word(prog), paths)
        for tid, t, cookie, n in text:
            k = kern[(tid, t, cookie)][0]
            u = user.get((tid, cookie), [0])[0] if cookie != b"0" else 0
            assert n == k + u, "event %s/%s: %d frames in text, %d + %d in raw" % (t, cookie, n, k, u)

    want_depths = {}

    def rep_folded():
        ok = {esc_folded(c) for c in names}
        total = 0
        for tid, t, cookie, n in text:
            want_depths[1 + n] = want_depths.get(1 + n, 0) + 1
        got = {}
        for line in text_lines(p("folded")):
            stack, count = line.rsplit(b" ", 1)
            frames = stack.split(b";")
            assert frames[0] in ok, "first frame %r" % frames[0]
            got[len(frames)] = got.get(len(frames), 0) + int(count)
            total += int(count)
        assert total == events, (total, events)
        assert got == want_depths, ("frames per stack: folded", got, "text", want_depths)

    def rep_perfscript():
        lines = text_lines(p("perf-script"))
        # the Firefox Profiler splits at \n and its '.' stops at \r, U+2028, U+2029
        for l in lines:
            s = l.decode("utf-8")
            assert not re.search("[\r\u2028\u2029]", s), "line break inside: %r" % l
        first = lines[0].decode("utf-8")
        assert re.match(r"^\S.*?\s+(?:\d+\/)?\d+\s+(?:\[\d+\]\s+)?[\d.]+:", first), "not detected: " + first
        ok = {esc_ps_comm(c).decode("utf-8").strip() for c in names}
        seq, i = [], 0
        while i < len(lines):
            line = lines[i].decode("utf-8")
            i += 1
            if line == "":
                continue
            m = re.match(r"^(.*)\s+([\d.]+):", line)
            assert m, "sample start: %r" % line
            t = re.match(r"^(.*)\s+(?:(\d+)\/)?(\d+)\b", m.group(1))
            assert t and t.group(1).strip() in ok, "thread name: %r" % line
            # stackcollapse-perf.pl's header: the comm ends before the first " DIGITS"
            sc = re.match(r"^(\S.+?)\s+(\d+)\/*(\d+)*\s+", line)
            assert sc and sc.group(2) == t.group(2) and sc.group(3) == t.group(3), \
                "stackcollapse reads another pid/tid: %r" % line
            n = 0
            while i < len(lines) and lines[i].decode("utf-8").strip() != "":
                f = re.match(r"^\s*(\w+)\s*(.+) \(([^)]*)\)", lines[i].decode("utf-8"))
                assert f, "frame line: %r" % lines[i]
                func = re.sub(r"\+0x[\da-f]+$", "", f.group(2))
                assert not func.startswith("("), "a frame the readers skip: %r" % lines[i]
                assert "->" not in func, "stackcollapse splits it: %r" % lines[i]
                n += 1
                i += 1
            seq.append((int(t.group(3)), n))
        assert seq == [(e[0], e[3]) for e in text], "frames per sample differ from text"

    def rep_collapsed():
        got = {}
        for line in text_lines(p("collapsed")):
            stack, count = line.rsplit(b" ", 1)
            n = len(stack.split(b";"))
            got[n] = got.get(n, 0) + int(count) // period
        assert got == want_depths, ("frames per stack: stackcollapse", got, "text", want_depths)

    def rep_speedscope():
        s = speedscope_check(p("speedscope"), schema)
        fnames = [f["name"] for f in s["shared"]["frames"]]
        assert {u8(SYMBOL), u8(CXX), u8(JIT_SPIN)} <= set(fnames), fnames
        ok = {u8(c) for c in names}
        got = {}
        for prof in s["profiles"]:
            assert prof["name"].rsplit(" (", 1)[0] in ok, prof["name"]
            for smp in prof["samples"]:
                got[len(smp) + 1] = got.get(len(smp) + 1, 0) + 1
        assert got == want_depths, ("frames per sample", got, want_depths)

    def rep_pprof():
        strings, samples, funcs = pprof_read(p("pprof"))
        assert sum(v[0] for _, v, _ in samples) == events
        ok = {u8(c) for c in names}
        for locs, vals, lab in samples:
            assert lab["comm"] in ok, lab["comm"]
        assert {u8(SYMBOL), u8(CXX), u8(JIT_SPIN)} <= funcs, funcs

    check("names_report_text", rep_text)
    if len(text) != events:
        return
    check("names_report_raw", rep_raw)
    check("names_report_folded", rep_folded)
    check("names_report_perfscript", rep_perfscript)
    if os.path.exists(p("collapsed")):
        check("names_report_stackcollapse", rep_collapsed)
    check("names_report_speedscope%s" % ("" if schema and os.path.exists(schema) else "_noschema"),
          rep_speedscope)
    check("names_report_pprof", rep_pprof)


# ---- SVG --------------------------------------------------------------------------------------------
SVG = "{http://www.w3.org/2000/svg}"


def svg(name, path, benign, folded):
    def run():
        doc = ET.parse(path)  # XML 1.0: valid UTF-8, allowed characters, well-formed
        ref = ET.parse(benign)
        tags = {e.tag for e in doc.iter()}
        assert tags <= {e.tag for e in ref.iter()}, "elements: %s" % (tags - {e.tag for e in ref.iter()})
        attrs = {a for e in doc.iter() for a in e.attrib}
        assert attrs <= {a for e in ref.iter() for a in e.attrib}, attrs
        scripts = list(doc.iter(SVG + "script"))
        assert len(scripts) == 1 and scripts[0].text == next(ref.iter(SVG + "script")).text, \
            "the script is not ustack's"
        want = {"all"}
        for f in folded:
            for line in text_lines(f):
                for fr in line.rsplit(b" ", 1)[0].split(b";"):
                    want.add(u8(fr))
        drawn = set()
        for g in doc.iter(SVG + "g"):
            t = g.find(SVG + "title").text
            m = re.fullmatch(r"(.*) \(\d+ samples, [\d.]+%\)", t.split("\n")[0])
            assert m, "title: %r" % t
            drawn.add(m.group(1))
        assert drawn <= want, "names not in the folded input: %s" % (drawn - want)
        assert len(drawn) > 5, drawn
    check(name, run)


def main():
    cmd = sys.argv[1]
    if cmd == "patch":
        patch(sys.argv[2])
    elif cmd == "snapshot":
        snapshot(sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
    elif cmd == "report":
        report(sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
    elif cmd == "svg":
        svg(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
