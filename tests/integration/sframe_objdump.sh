#!/usr/bin/env bash
# `ustack sframe dump` and `ustack sframe lookup` against objdump --sframe.
#
# Oracles: the host objdump (binutils 2.40, SFrame v1) on binaries compiled
# here with $CC -O2 $GSFRAME (shared library, PIE, static executable), and the
# committed `objdump --sframe` text of the chroot toolchains for the v1/v2/v3
# fixtures in tests/data/sframe (scripts/make-sframe-fixtures.sh).
#   dump:   every function line and row must match objdump's, after these
#           documented normalizations: objdump 2.40 prints the header-fixed
#           RA as "u" where ustack (like objdump >= 2.44) prints "f"; ustack
#           adds " [fallback]" to rows it cannot express.
#   lookup: for every row, its first and last byte (for PCMASK functions in
#           the first and last repetition block) must give the rule objdump
#           shows; bytes outside every function must give "none".
#   damaged fixtures: exit status 1 and the FDE/FRE index and offset in the
#           message, never a crash; a file without .sframe: exit 1.
set -u
: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${USTACK:=$TOP/build/check/ustack}"
: "${CC:=gcc}"
: "${GSFRAME:=}"
DATA=$TOP/tests/data/sframe
name=sframe_objdump

if ! command -v python3 >/dev/null; then
	echo "SKIP $name: python3 not installed"
	exit 0
fi
if [ ! -x "$USTACK" ]; then
	echo "FAIL $name: $USTACK not built"
	exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ---- binaries compiled here --------------------------------------------------
files=()     # "path|oracle text file|label"
if [ -z "$GSFRAME" ]; then
	echo "SKIP ${name}_host_built: the assembler cannot emit SFrame (-Wa,--gsframe)"
elif ! command -v objdump >/dev/null || ! objdump --help 2>/dev/null | grep -q -- --sframe; then
	echo "SKIP ${name}_host_built: objdump has no --sframe"
else
	cat >"$work/extern.c" <<'EOF'
int ext(int x) { return x + 1; }
void sink(void *p, int n) { __asm__ volatile("" :: "r"(p), "r"(n) : "memory"); }
EOF
	cat >"$work/main.c" <<'EOF'
int leaf(int); int pushes(int, int, int, int); int with_alloca(int); int with_vla(int);
int fp_frame(int); int frame2(int); int frame4(int); int medium(int);
int main(int argc, char **argv)
{
	return leaf(argc) + pushes(1, 2, 3, argc) + with_alloca(argc) + with_vla(argc) +
	       fp_frame(argc) + frame2(argc) + frame4(argc) + medium(argc);
}
EOF
	src=$DATA/src
	ok=1
	# shellcheck disable=SC2086
	{
		$CC -O2 $GSFRAME -shared -fPIC -o "$work/libshapes.so" "$src/shapes.c" &&
		$CC -O2 $GSFRAME -fPIE -pie -o "$work/pie" "$work/main.c" "$src/shapes.c" "$work/extern.c" &&
		$CC -O2 $GSFRAME -shared -fPIC -o "$work/libbig.so" "$src/big.c"
	} >"$work/cc.log" 2>&1 || ok=0
	# shellcheck disable=SC2086
	$CC -O2 $GSFRAME -static -o "$work/static" "$work/main.c" "$src/shapes.c" "$work/extern.c" \
		>>"$work/cc.log" 2>&1 || { echo "SKIP ${name}_static: no static libc ($(tail -n 1 "$work/cc.log"))"; }
	if [ "$ok" = 1 ]; then
		for b in libshapes.so pie libbig.so static; do
			[ -f "$work/$b" ] || continue
			objdump --sframe "$work/$b" >"$work/$b.objdump.txt"
			files+=("$work/$b|$work/$b.objdump.txt|host:$b")
		done
	else
		echo "FAIL ${name}_compile: $(tail -n 3 "$work/cc.log" | tr '\n' ' ')"
	fi
fi

# ---- committed fixtures ------------------------------------------------------
for v in v1 v2 v3; do
	for f in "$DATA/$v"/*.objdump.txt; do
		[ -f "$f" ] || continue
		b=${f%.objdump.txt}
		files+=("$b|$f|$v:$(basename "$b")")
	done
done
# The host objdump reads v1 too: a second, live oracle for the v1 fixtures.
if command -v objdump >/dev/null && objdump --help 2>/dev/null | grep -q -- --sframe; then
	for b in "$DATA"/v1/*.so "$DATA"/v1/exe; do
		objdump --sframe "$b" >"$work/$(basename "$b").live.txt" 2>/dev/null &&
			files+=("$b|$work/$(basename "$b").live.txt|v1-live:$(basename "$b")")
	done
fi

printf '%s\n' "${files[@]}" >"$work/files.txt"

USTACK="$USTACK" DATA="$DATA" WORK="$work" python3 - "$work/files.txt" <<'PYEOF'
import os, re, subprocess, sys

ustack = os.environ["USTACK"]
data = os.environ["DATA"]
status = 0

def run(args):
    p = subprocess.run([ustack] + args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr

def parse(text):
    """objdump --sframe text -> (version, [func]); func = dict(pc, size, mask, attr, rows)."""
    version = None
    funcs = []
    for line in text.splitlines():
        m = re.match(r"\s+Version: SFRAME_VERSION_(\d)", line)
        if m:
            version = int(m.group(1))
        m = re.match(r"\s+func idx \[(\d+)\]: pc = 0x([0-9a-f]+), size = (\d+) bytes(?:, attr = \"(\w*)\")?", line)
        if m:
            funcs.append(dict(pc=int(m.group(2), 16), size=int(m.group(3)), mask=False,
                              attr=m.group(4) or "", rows=[], line=line.strip()))
            continue
        if re.match(r"\s+STARTPC\[m\]", line):
            funcs[-1]["mask"] = True
            continue
        m = re.match(r"\s+([0-9a-f]{16})\s+RA undefined", line)
        if m:
            funcs[-1]["rows"].append((int(m.group(1), 16), "U", "U", "U"))
            continue
        m = re.match(r"\s+([0-9a-f]{16})\s+(\S+)\s+(\S+)\s+(\S+)", line)
        if m and funcs:
            funcs[-1]["rows"].append((int(m.group(1), 16), m.group(2), m.group(3), m.group(4)))
    return version, funcs

def norm_ra(ra, version):
    # objdump 2.40 (v1) prints the header-fixed AMD64 RA as "u".
    return "f" if (version == 1 and ra == "u") else ra

def expect_lookup(row, func):
    start, cfa, fp, ra = row
    if cfa == "U":
        return "outermost"
    simple = re.fullmatch(r"(sp|fp)[+-]\d+", cfa) and re.fullmatch(r"u|c[+-]\d+", fp) and ra in ("f", "u")
    if func["attr"] and "F" in func["attr"] and not simple:
        return "fallback"  # flexible rule beyond the row form
    ra_s = "c-8"
    sig = " signal" if "S" in func["attr"] else ""
    return f"cfa={cfa} ra={ra_s} fp={fp}{sig}"

files = [l.split("|") for l in open(sys.argv[1]).read().splitlines() if l]
totals = dict(dump_rows=0, dump_files=0, lookups=0, lookup_files=0)
fails = []

for path, oracle, label in files:
    version, funcs = parse(open(oracle).read())
    rc, out, err = run(["sframe", "dump", path])
    if rc != 0:
        fails.append(f"dump {label}: exit {rc}: {err.strip()}")
        continue
    _, mine = parse(out)
    # Row-by-row comparison of the function lines and rows.
    bad = None
    if len(mine) != len(funcs):
        bad = f"{len(mine)} functions, objdump has {len(funcs)}"
    else:
        for a, b in zip(mine, funcs):
            if a["line"] != b["line"] or a["mask"] != b["mask"]:
                bad = f"'{a['line']}' != '{b['line']}'"
                break
            rb = [(s, c, f, norm_ra(r, version)) for s, c, f, r in b["rows"]]
            if a["rows"] != rb:
                bad = f"{b['line']}: rows {a['rows']} != {rb}"
                break
            totals["dump_rows"] += len(rb)
    if bad:
        fails.append(f"dump {label}: {bad}")
        continue
    totals["dump_files"] += 1

    # Lookups implied by the objdump rows.
    addrs, want = [], []
    starts = sorted((f["pc"], f["pc"] + f["size"]) for f in funcs)
    def covered(a):
        return any(s <= a < e for s, e in starts)
    for f in funcs:
        rows = f["rows"]
        if f["mask"]:
            rep = 16
            blocks = [0, max(0, f["size"] // rep - 1)]
            for blk in sorted(set(blocks)):
                base = f["pc"] + blk * rep
                for k, r in enumerate(rows):
                    end = rows[k + 1][0] if k + 1 < len(rows) else rep
                    for a in (base + r[0], base + end - 1):
                        if a < f["pc"] + f["size"]:
                            addrs.append(a); want.append(expect_lookup(r, f))
        else:
            for k, r in enumerate(rows):
                end = rows[k + 1][0] if k + 1 < len(rows) else f["pc"] + f["size"]
                for a in (r[0], end - 1):
                    addrs.append(a); want.append(expect_lookup(r, f))
            if rows and rows[0][0] > f["pc"]:
                addrs.append(f["pc"]); want.append("none")
        for a in (f["pc"] - 1, f["pc"] + f["size"]):
            if a >= 0 and not covered(a):
                addrs.append(a); want.append("none")
    if not covered(0):
        addrs.append(0); want.append("none")
    rc, out, err = run(["sframe", "lookup", path] + [f"{a:x}" for a in addrs])
    lines = out.splitlines()
    if rc != 0 or len(lines) != len(addrs):
        fails.append(f"lookup {label}: exit {rc}, {len(lines)} lines for {len(addrs)} addresses: {err.strip()}")
        continue
    bad = None
    for a, w, line in zip(addrs, want, lines):
        if line != f"0x{a:x} {w}":
            bad = f"0x{a:x}: got '{line}', objdump implies '0x{a:x} {w}'"
            break
    if bad:
        fails.append(f"lookup {label}: {bad}")
        continue
    totals["lookups"] += len(addrs)
    totals["lookup_files"] += 1

nfiles = len(files)
for f in fails:
    print(f"FAIL sframe_objdump: {f}")
if totals["dump_files"] == nfiles and nfiles:
    print(f"PASS sframe_dump_vs_objdump: {nfiles} files, {totals['dump_rows']} rows identical")
elif not fails:
    print("FAIL sframe_dump_vs_objdump: no files compared")
if totals["lookup_files"] == nfiles and nfiles:
    print(f"PASS sframe_lookup_vs_objdump: {nfiles} files, {totals['lookups']} addresses")

# Coverage of the format features the fixtures are meant to exercise.
feat = set()
for path, oracle, label in files:
    v, funcs = parse(open(oracle).read())
    for f in funcs:
        if f["mask"]: feat.add(f"v{v}-pcmask")
        if "F" in f["attr"]: feat.add(f"v{v}-flex")
        if "S" in f["attr"]: feat.add(f"v{v}-signal")
        for r in f["rows"]:
            if r[1] == "U": feat.add(f"v{v}-outermost")
            if r[1].startswith("fp"): feat.add(f"v{v}-cfa-fp")
            m = re.fullmatch(r"[sf]p[+-](\d+)", r[1])
            if m and int(m.group(1)) > 127: feat.add(f"v{v}-off2" if int(m.group(1)) < 32768 else f"v{v}-off4")
            off = r[0] - (0 if f["mask"] else f["pc"])
            if off > 255: feat.add(f"v{v}-start2" if off < 65536 else f"v{v}-start4")
need = {f"v{v}-{x}" for v in (1, 2, 3) for x in ("pcmask", "cfa-fp", "off2", "off4", "start2", "start4")}
need |= {"v3-flex", "v3-signal", "v3-outermost"}
missing = sorted(need - feat)
if missing:
    print(f"FAIL sframe_fixture_coverage: fixtures lack {missing}")
else:
    print(f"PASS sframe_fixture_coverage: {len(need)} format features present")

# Damaged fixtures.
exp = [l.split(None, 2) for l in open(os.path.join(data, "damaged", "EXPECTED")) if l.strip() and not l.startswith("#")]
dfail = 0
for fname, st, msg in exp:
    p = os.path.join(data, "damaged", fname)
    for args in (["dump", p], ["validate", p], ["lookup", p, "1000", "1030", "1234", "0"]):
        rc, out, err = run(["sframe"] + args)
        if rc < 0 or rc >= 128:
            print(f"FAIL sframe_damaged: {fname}: {args[0]} crashed ({rc}): {err.strip()[:200]}")
            dfail += 1
        elif args[0] == "lookup":
            if rc not in (0, 1):
                print(f"FAIL sframe_damaged: {fname}: lookup exit {rc}")
                dfail += 1
        elif rc != int(st) or msg.strip() not in err or err.count("\n") != 1:
            print(f"FAIL sframe_damaged: {fname}: {args[0]} exit {rc}, stderr '{err.strip()}', want '{msg.strip()}'")
            dfail += 1
if not dfail:
    print(f"PASS sframe_damaged: {len(exp)} damaged files, exit 1 with index and offset, no crash")

# A file without .sframe.
rc, out, err = run(["sframe", "dump", "/bin/sh"])
if rc == 1 and "no .sframe section" in err:
    print("PASS sframe_no_section: /bin/sh gives exit 1 'no .sframe section'")
else:
    print(f"FAIL sframe_no_section: exit {rc}, stderr '{err.strip()}'")
rc, out, err = run(["sframe", "dump", "/nonexistent/file"])
if rc == 1 and "/nonexistent/file" in err:
    print("PASS sframe_missing_file: exit 1 naming the file")
else:
    print(f"FAIL sframe_missing_file: exit {rc}, stderr '{err.strip()}'")
PYEOF
