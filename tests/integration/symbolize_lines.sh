#!/usr/bin/env bash
# Source lines and inlined frames (DWARF through libdw) against two outside
# oracles, addr2line -i -f -C and eu-addr2line -i -f -C: a C program with
# static inline and always_inline chains and a C++ program with templates
# and a lambda (tests/integration/progs/sym_inline*.c*), built -O2 -g, at
# every return address and every line-table row; libc through libc6-dbg's
# debug file when installed. The rules where the oracles differ are in
# tests/integration/lib/symlines_check.py. Also: lines from a separate debug
# file found by build ID, and a corrupt .debug_info (one warning naming the
# file, names kept); and end to end, record + report of progs/sym_report.c.
set -u
: "${USTACK:?}"
: "${TOP:=$PWD}"
CC=${CC:-cc}
CXX=${CXX:-g++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chk=$TOP/tests/integration/lib/symlines_check.py
for t in addr2line eu-addr2line objdump readelf python3; do
	command -v $t >/dev/null || { echo "SKIP symbolize_lines: $t not installed"; exit 0; }
done
$CC -O2 -g "$TOP/tests/integration/progs/sym_inline.c" -o "$tmp/c" ||
	{ echo "FAIL symbolize_lines: cannot build sym_inline.c"; exit 1; }
python3 "$chk" "$USTACK" "$tmp/c" symbolize_lines_c
if command -v "$CXX" >/dev/null; then
	$CXX -O2 -g "$TOP/tests/integration/progs/sym_inline_cxx.cc" -o "$tmp/cxx" ||
		{ echo "FAIL symbolize_lines: cannot build sym_inline_cxx.cc"; exit 1; }
	python3 "$chk" "$USTACK" "$tmp/cxx" symbolize_lines_cxx
else
	echo "SKIP symbolize_lines_cxx: no C++ compiler ($CXX)"
fi

libc=$(ldd "$tmp/c" | awk '/libc.so/{print $3}')
bid=$(readelf -n "$libc" 2>/dev/null | awk '/Build ID/{print $3}')
dbg=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
if [ -n "$bid" ] && [ -r "$dbg" ]; then
	python3 "$chk" "$USTACK" "$libc" symbolize_lines_libc --libc --debug "$dbg" --max 400
else
	echo "SKIP symbolize_lines_libc: no debug file for $libc (libc6-dbg not installed)"
fi

# separate debug file by build ID: the stripped program still gets lines
cbid=$(readelf -n "$tmp/c" | awk '/Build ID/{print $3}')
mkdir -p "$tmp/dbg/.build-id/${cbid:0:2}"
objcopy --only-keep-debug "$tmp/c" "$tmp/dbg/.build-id/${cbid:0:2}/${cbid:2}.debug"
strip -g -o "$tmp/c.stripped" "$tmp/c"
ret=$(objdump -d --no-show-raw-insn "$tmp/c" | awk '/<outer>:/{f=1} f&&/call/{getline; sub(":","",$1); print $1; exit}')
a=$("$USTACK" symbolize -e "$tmp/c.stripped" --debug-dir "$tmp/dbg" --return "0x$ret")
b=$("$USTACK" symbolize -e "$tmp/c" --return "0x$ret")
s=$("$USTACK" symbolize -e "$tmp/c.stripped" --debug-dir /nonexistent --return "0x$ret")
if [ -n "$ret" ] && [ "$(echo "$a" | sed 's/ ([^)]*)//')" = "$(echo "$b" | sed 's/ ([^)]*)//')" ] &&
	echo "$a" | grep -q '\[inlined\]' && ! echo "$s" | grep -q ' at '; then
	echo "PASS symbolize_lines_debugfile: the stripped program's lines and inlined frames come from its .build-id debug file"
else
	echo "FAIL symbolize_lines_debugfile: with debug file '$a', unstripped '$b', without '$s'"
fi

# a corrupt .debug_info: one warning naming the file, names kept
cp "$tmp/c" "$tmp/bad"
read -r off size < <(readelf -SW "$tmp/bad" | sed 's/^ *\[ *[0-9]*\]//' | awk '$1==".debug_info"{print $4, $5}')
[ -n "${off:-}" ] && off=$((16#$off)) size=$((16#$size))
if [ -n "${off:-}" ]; then
	python3 -c "
import sys
f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2]) + 12)
f.write(bytes([0xff, 0x7f]) * ((int(sys.argv[3]) - 12) // 2))" "$tmp/bad" "$off" "$size"
	offs=$(objdump -d --no-show-raw-insn "$tmp/c" | awk '/call/{getline; sub(":","",$1); print "0x" $1}' | head -8)
	timeout 20 "$USTACK" symbolize -e "$tmp/bad" --return $offs > "$tmp/bad.out" 2> "$tmp/bad.err"
	rc=$?
	nw=$(grep -c "$tmp/bad" "$tmp/bad.err")
	named=$(grep -c '+0x' "$tmp/bad.out")
	if [ $rc -le 1 ] && [ "$nw" -eq 1 ] && [ "$named" -ge 4 ]; then
		echo "PASS symbolize_lines_corrupt: corrupt .debug_info: $nw warning naming the file, $named frames keep their names"
	else
		echo "FAIL symbolize_lines_corrupt: rc $rc, $nw warnings, $named named: $(head -3 "$tmp/bad.err")"
	fi
else
	echo "FAIL symbolize_lines_corrupt: no .debug_info in the test program"
fi

# Garbage DWARF is "corrupt", not "no information": random bytes over the
# first .debug_info unit header (from its offset + 4: the length kept,
# version/abbrev offset/address size garbage), then over all of .debug_line:
# one warning naming the file, the section and the offset, and the frames
# keep their .symtab names.
corrupt_case() { # name section skip-bytes grep-pattern
	local name=$1 sec=$2 skip=$3 pat=$4 off size rc nw named
	cp "$tmp/c" "$tmp/$name"
	read -r off size < <(readelf -SW "$tmp/$name" | sed 's/^ *\[ *[0-9]*\]//' |
		awk -v s="$sec" '$1==s{print $4, $5}')
	if [ -z "${off:-}" ]; then
		echo "FAIL symbolize_lines_$name: no $sec in the test program"
		return
	fi
	python3 -c "
import random, sys
random.seed(11)
off, size, skip = int(sys.argv[2], 16), int(sys.argv[3], 16), int(sys.argv[4])
n = size - skip if skip == 0 else 12
f = open(sys.argv[1], 'r+b'); f.seek(off + skip)
f.write(bytes(random.randrange(256) for _ in range(n)))" "$tmp/$name" "$off" "$size" "$skip"
	offs=$(objdump -d --no-show-raw-insn "$tmp/c" | awk '/call/{getline; sub(":","",$1); print "0x" $1}' | head -8)
	timeout 20 "$USTACK" symbolize -e "$tmp/$name" --return $offs >"$tmp/$name.out" 2>"$tmp/$name.err"
	rc=$?
	nw=$(grep -c "$tmp/$name" "$tmp/$name.err")
	named=$(grep -c '+0x' "$tmp/$name.out")
	if [ $rc -le 1 ] && [ "$nw" -eq 1 ] && grep -q "$tmp/$name.*$pat" "$tmp/$name.err" &&
		[ "$named" -ge 4 ] && ! grep -q ' at ' "$tmp/$name.out"; then
		echo "PASS symbolize_lines_$name: $(head -1 "$tmp/$name.err"); $named frames keep their names"
	else
		echo "FAIL symbolize_lines_$name: rc $rc, $nw warnings (want 1 matching '$pat'), $named named: $(head -3 "$tmp/$name.err") | $(head -2 "$tmp/$name.out" | tr '\n' '|')"
	fi
}
corrupt_case corrupt_header .debug_info 4 '\.debug_info.* offset 0x0'
corrupt_case corrupt_line .debug_line 0 '\.debug_line.* offset 0x'

# end to end: snapshot --lines of the running program shows its source
# lines and the functions inlined at the pc (the loop in outer() is all
# inlined code); without --lines, neither
# (a thread stopped in touch() called from outer itself has no inlined
# frame: snapshots are taken until one catches it inside the inlined
# chain, as 4 of its 5 calls are; at most 200 tries)
"$tmp/c" 100000000000 >/dev/null &
pid=$!
for try in $(seq 200); do
	with=$("$USTACK" snapshot -p $pid --lines 2>&1)
	echo "$with" | grep -q 'sym_inline.c:[0-9]* \[inlined\]' && break
done
without=$("$USTACK" snapshot -p $pid 2>&1)
for try in $(seq 200); do
	json=$("$USTACK" snapshot -p $pid --lines --format json 2>&1)
	echo "$json" | grep -q '"inlined": true' && break
done
# folded takes report's --inline/--srcline/--annotate: the outer frame
# "outer sym_inline.c:N", then the functions inlined into it, each "_[i]";
# --lines alone is refused with one line (it used to be ignored)
for try in $(seq 200); do
	folded=$("$USTACK" snapshot -p $pid --format folded --inline --srcline --annotate 2>&1)
	echo "$folded" | grep -Eq ';outer sym_inline\.c:[0-9]+;[a-z_]+ sym_inline\.c:[0-9]+_\[i\]' && break
done
# (plain folded: a snapshot may catch the thread in main between calls;
# retried until one is inside outer, so the check below means something)
for try in $(seq 200); do
	plainf=$("$USTACK" snapshot -p $pid --format folded 2>&1)
	echo "$plainf" | grep -q ';outer' && break
done
linesf=$("$USTACK" snapshot -p $pid --format folded --lines 2>&1); linesf_rc=$?
kill $pid 2>/dev/null; wait $pid 2>/dev/null
if echo "$folded" | grep -Eq ';outer sym_inline\.c:[0-9]+;[a-z_]+ sym_inline\.c:[0-9]+_\[i\]' &&
	echo "$plainf" | grep -q ';outer' && ! echo "$plainf" | grep -q -e 'sym_inline.c' -e '_\[i\]' &&
	[ $linesf_rc = 2 ] && [ "$(echo "$linesf" | wc -l)" = 1 ] && echo "$linesf" | grep -q -- '--inline'; then
	echo "PASS symbolize_lines_snapshot_folded: folded --inline --srcline --annotate: $(echo "$folded" | grep -Eo ';outer sym_inline\.c:[0-9]+;[^ ]+ [^;]*_\[i\]' | head -1); --lines alone refused: $linesf"
else
	echo "FAIL symbolize_lines_snapshot_folded: '$(echo "$folded" | head -2)', plain '$(echo "$plainf" | head -1)', --lines (rc $linesf_rc) '$linesf'"
fi
if echo "$with" | grep -q 'sym_inline.c:[0-9]* \[inlined\]' &&
	echo "$with" | grep -q '^#[0-9]* 0x[0-9a-f]* outer+0x[0-9a-f]* (.*) at .*sym_inline.c:[0-9]*$' &&
	! echo "$without" | grep -q -e ' at ' -e inlined &&
	echo "$json" | python3 -c '
import json, sys
fr = json.load(sys.stdin)["threads"][0]["frames"]
assert any(f["inlined"] for f in fr) and any(f["line"] > 0 and f["file"].endswith("sym_inline.c") for f in fr)'; then
	echo "PASS symbolize_lines_snapshot: snapshot --lines shows file:line and [inlined] frames (text and json), plain snapshot neither"
else
	echo "FAIL symbolize_lines_snapshot: with --lines: $(echo "$with" | head -4)"
fi

# end to end through record and report: progs/sym_report.c, built -O2 -g,
# calls getppid() from inside an always_inline chain (work -> top -> mid ->
# inner). The report's text must expand each of the program's frames into
# exactly the functions and FILE:LINEs that eu-addr2line -i -f gives at the
# same place (the file offsets of 'report --format raw', turned into
# addresses with the program headers, minus 1 for return addresses), and
# 'report --format folded --inline --srcline' must hold that chain, root
# first, with the base names of the files.
if ! $CC -O2 -g "$TOP/tests/integration/progs/sym_report.c" -o "$tmp/rp"; then
	echo "FAIL symbolize_lines_report: cannot build sym_report.c"
elif ! "$USTACK" record -q -o "$tmp/rp.data" -e syscalls:sys_enter_getppid -- "$tmp/rp" 5 >/dev/null 2>"$tmp/rp.err"; then
	echo "SKIP symbolize_lines_report: cannot record here: $(head -1 "$tmp/rp.err")"
else
	"$USTACK" report -i "$tmp/rp.data" > "$tmp/rp.text" 2>&1
	"$USTACK" report -i "$tmp/rp.data" --format raw > "$tmp/rp.raw" 2>&1
	"$USTACK" report -i "$tmp/rp.data" --format folded --inline --srcline > "$tmp/rp.folded" 2>&1
	if python3 - "$tmp/rp" "$tmp/rp.text" "$tmp/rp.raw" "$tmp/rp.folded" <<'PY'
import re, subprocess, sys
prog, text, raw, folded = sys.argv[1:5]
raw_lines = open(raw).read().splitlines()
ids = {m.group(2): m.group(1) for m in (re.search(r"file_map: id=(0x[0-9a-f]+) path=(\S+)", l) for l in raw_lines) if m}
pid = ids[prog]
# the first event's user frames (offset, file id)
frames, on = [], False
for l in raw_lines:
    if "<user stack unwind>" in l:
        if on: break
        on = True
        continue
    m = re.match(r" => <([0-9a-f]+)> : (0x[0-9a-f]+)", l)
    if on and m: frames.append((int(m.group(1), 16), m.group(2)))
    elif on and frames and not m: break
assert frames, "no user frames in the raw report"
# the first event's text frames, grouped per machine frame (inlined ones
# go with the next non-inlined line)
groups, cur = [], []
for l in open(text).read().split("\n\n")[0].splitlines()[1:]:
    m = re.match(r" => (\S+?)(\+0x[0-9a-f]+)? \((\S+)\)(?: at (\S+):(\d+))?( \[inlined\])?$", l)
    assert m, l
    cur.append((m.group(1), m.group(4), int(m.group(5) or 0)))
    if not m.group(6):
        groups.append(cur); cur = []
assert len(groups) == len(frames), (len(groups), len(frames))
loads = []
for l in subprocess.run(["readelf", "-lW", prog], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if f and f[0] == "LOAD":
        loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
checked = inl = 0
chain_folded = None
for k, ((off, fid), grp) in enumerate(zip(frames, groups)):
    if fid != pid: continue
    va = [v + off - o for o, v, sz in loads if o <= off < o + sz][0] - (1 if k else 0)
    out = subprocess.run(["eu-addr2line", "-i", "-f", "-e", prog, hex(va)], capture_output=True, text=True).stdout.splitlines()
    want = [(out[i].split()[0], re.sub(r":\d+$", "", out[i + 1])) for i in range(0, len(out), 2)]
    got = [(n, "%s:%d" % (f, ln) if f else "??") for n, f, ln in grp]
    want = [(n, "??" if w.startswith("??") else w) for n, w in want]
    assert got == want, (hex(va), got, want)
    checked += 1
    inl += len(grp) - 1
    if len(grp) > 1:
        chain_folded = ";".join("%s %s:%s" % (n, w.rsplit("/", 1)[-1].rsplit(":", 1)[0], w.rsplit(":", 1)[1]) for n, w in reversed(want))
assert checked >= 2 and inl >= 3, (checked, inl)
assert chain_folded and any(chain_folded in l for l in open(folded)), chain_folded
PY
	then echo "PASS symbolize_lines_report: report text's [inlined] chains and lines equal eu-addr2line -i -f at the recorded offsets; folded --inline --srcline holds the chain"
	else echo "FAIL symbolize_lines_report: $(head -3 "$tmp/rp.text")"; fi
fi
