#!/usr/bin/env bash
# ustack report --format pprof and snapshot --format pprof, read back by
# `go tool pprof` (the reference reader) and `protoc --decode_raw`:
#   pprof_totals    sample types are samples/count, cpu/nanoseconds and the
#                   tracepoint's count; per type totals: samples + futex
#                   events = every event of the trace (--stats), cpu =
#                   samples * Period, the futex count from wake() = 30000
#                   (the program makes exactly that many FUTEX_WAKE calls;
#                   30000 events make a trace of several chunks, for the damage case)
#   pprof_traces    every stack of `go tool pprof -traces` (one run per count
#                   sample type, summed) equals ustack's own
#                   `report --format folded --inline` as a multiset with
#                   counts. Normalization: pprof prints a trace leaf first
#                   with the comm as a label, folded is "comm;root;...;leaf N";
#                   so the pprof key is comm + the frames reversed, " (inline)"
#                   is dropped, and a frame without a name (folded "[...]",
#                   pprof a bare address) becomes "?"
#   pprof_top       `-top` flat counts per function (count types summed)
#                   equal the leaf counts of the folded stacks
#   pprof_inline    a CPU sample in the always_inline chain of a -O2 -g
#                   program is ONE location with several lines, innermost
#                   first; the chain equals `addr2line -i -f` at the file
#                   offset the mapping gives; the mapping's build ID is the
#                   ELF's (readelf -n)
#   pprof_protoc    protoc --decode_raw decodes the same message: string
#                   table starts with "", as many samples as pprof -raw shows
#   pprof_snapshot  snapshot of a 4-thread process: 4 samples of value 1, one
#                   (pprof_snapshot_main: its first mapping is the executable's,
#                   found from AT_ENTRY: "File: prog")
#                   per thread, thread labels = /proc/PID/task, comm labels
#   pprof_start_line (report and snapshot) every function of pprof_prog.c in
#                   `go tool pprof -raw`'s locations (inlined ones included)
#                   has Function.start_line ("s=N") equal to its subprogram's
#                   DW_AT_decl_line in `readelf --debug-dump=info` (it was 0)
#   pprof_main      the first mapping is the main executable's (pprof
#                   takes it for the profiled binary): `-top` says
#                   "File: prog", for the trace above and for one of only
#                   tracepoint events whose leaf frames are all in libc
#                   (the first mapping seen); -tags of that one: one pid,
#                   the process's own ($$ of the shell that exec'd it), and
#                   every event under it
#   pprof_edge      an empty trace, a trace of only LOST records: valid
#                   profiles with the sample types and no sample; a truncated
#                   trace: a valid profile of what was read, an error naming
#                   the offset, exit 1, no sanitizer report; a terminal is
#                   refused; a thread renamed between two events gives two
#                   samples, each with the name of its time (as folded)
set -u
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
: "${SAN_FLAGS:=-fsanitize=address,undefined}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf -ldw -lelf}"
: "${BASE_CFLAGS:=-std=gnu11 -g -O2 -D_GNU_SOURCE}"
cd "$TOP" || exit 1
tmp=$(mktemp -d /tmp/ustack-pprof-XXXXXX)
tpid=
trap '[ -n "$tpid" ] && kill "$tpid" 2>/dev/null; [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT

# syscalls PID, wait_blocked PID NRS [N]
. "$TOP/tests/integration/lib/wait_blocked.sh"
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }

if ! command -v go >/dev/null || ! go tool pprof -h >/dev/null 2>&1; then
	skip report_pprof "go tool pprof not installed (Debian golang-go, scripts/deps.sh)"
	exit 0
fi
# go wants a writable cache; keep it out of the user's home
export HOME="$tmp" GOCACHE="$tmp/gocache" GOFLAGS=
pp() { go tool pprof "$@" 2>"$tmp/pprof.err"; }

if ! $CC -O2 -g -o "$tmp/prog" tests/integration/progs/pprof_prog.c -lpthread; then
	fail pprof_build "cannot compile tests/integration/progs/pprof_prog.c"
	exit 0
fi
# the edge-case traces come from the library's own writer
# shellcheck disable=SC2086
if ! $CC $BASE_CFLAGS $SAN_FLAGS -Iinclude -o "$tmp/mktrace" tests/integration/progs/pprof_mktrace.c \
	"$CHECK_DIR/libustack.a" $LIB_LDLIBS; then
	fail pprof_build "cannot compile tests/integration/progs/pprof_mktrace.c"
	exit 0
fi

# ---- recording: CPU samples in inlined code, then 30000 futex wakes ----------------
if ! "$USTACK" record -q -o "$tmp/t.data" -e cpu-clock -e syscalls:sys_enter_futex -- \
	sh -c "'$tmp/prog' cpu 400000000 && '$tmp/prog' futex 30000" >"$tmp/rec.out" 2>&1; then
	if grep -qiE 'permi|access|not supported|perf_event|tracefs|tracepoint' "$tmp/rec.out"; then
		skip report_pprof "perf events unavailable: $(head -n1 "$tmp/rec.out")"
		exit 0
	fi
	fail pprof_record "ustack record failed: $(head -n3 "$tmp/rec.out")"
	exit 0
fi
events=$("$USTACK" report -i "$tmp/t.data" --stats | sed -n 's/^events: \([0-9]*\)$/\1/p')
if ! "$USTACK" report -i "$tmp/t.data" --format pprof -o "$tmp/t.pb.gz" 2>"$tmp/rep.err"; then
	fail pprof_report "exit status $?: $(head -n2 "$tmp/rep.err")"
	exit 0
fi
"$USTACK" report -i "$tmp/t.data" --format folded --inline >"$tmp/folded" 2>/dev/null
pp -raw "$tmp/t.pb.gz" >"$tmp/raw" || { fail pprof_report "go tool pprof -raw: $(head -n2 "$tmp/pprof.err")"; exit 0; }
tp=syscalls:sys_enter_futex
pp -traces -sample_index=samples "$tmp/t.pb.gz" >"$tmp/tr.samples"
pp -traces -sample_index=$tp "$tmp/t.pb.gz" >"$tmp/tr.futex"
for i in samples $tp; do
	pp -top -nodecount=100000 -nodefraction=0 -edgefraction=0 -sample_index=$i "$tmp/t.pb.gz" \
		>"$tmp/top.$i"
done

python3 - "$tmp" "$events" <<'EOF'
import re, subprocess, sys
tmp, events = sys.argv[1], int(sys.argv[2] or 0)
TP = "syscalls:sys_enter_futex"

def norm(f):
    f = f.strip()
    if f.endswith(" (inline)"):
        f = f[: -len(" (inline)")]
    if re.fullmatch(r"\[.*\]|0x[0-9a-f]+|<unknown>", f):
        return "?"
    return f

def folded():
    d = {}
    for ln in open(f"{tmp}/folded"):
        stack, n = ln.rstrip("\n").rsplit(" ", 1)
        parts = stack.split(";")
        key = ";".join([parts[0]] + [norm(x) for x in parts[1:]])
        d[key] = d.get(key, 0) + int(n)
    return d

def traces(path):
    d, labels, frames, val = {}, {}, [], None
    def flush():
        if val is not None:
            key = ";".join([labels.get("comm", "?")] + [norm(x) for x in reversed(frames)])
            d[key] = d.get(key, 0) + val
    for ln in open(path):
        ln = ln.rstrip("\n")
        if ln.startswith("-----------+"):
            flush(); labels, frames, val = {}, [], None
            continue
        m = re.match(r"^\s+(\w+):\s+(.*)$", ln)
        if val is None and m:
            labels[m.group(1)] = m.group(2).strip()
            continue
        m = re.match(r"^\s+(\d+)\s{3}(\S.*)$", ln)
        if val is None and m:
            val, frames = int(m.group(1)), [m.group(2)]
            continue
        if val is not None and re.match(r"^\s{13}\S", ln):
            frames.append(ln.strip())
    flush()
    return {k: v for k, v in d.items() if v}

def result(name, ok, why):
    print(f"PASS {name}" if ok else f"FAIL {name}: {why}")

# ---- totals from -raw ----
raw = open(f"{tmp}/raw").read()
lines = raw.splitlines()
i = lines.index("Samples:")
types = lines[i + 1].split()
tot = [0] * len(types)
for ln in lines[i + 2:]:
    if ln.startswith("Locations"):
        break
    m = re.match(r"^\s+([\d ]+?):", ln)
    if m:
        for k, v in enumerate(m.group(1).split()):
            tot[k] += int(v)
period = int(re.search(r"^Period: (\d+)$", raw, re.M).group(1))
want_types = ["samples/count", "cpu/nanoseconds", f"{TP}/count"]
tr_s, tr_f = traces(f"{tmp}/tr.samples"), traces(f"{tmp}/tr.futex")
wake = sum(v for k, v in tr_f.items() if ";wake;" in k or k.endswith(";wake"))
why = ""
if types != want_types:
    why = f"sample types {types}, want {want_types}"
elif tot[0] + tot[2] != events:
    why = f"samples {tot[0]} + futex {tot[2]} != {events} events (--stats)"
elif tot[1] != tot[0] * period:
    why = f"cpu {tot[1]} ns != samples {tot[0]} * period {period}"
elif wake != 30000:
    why = f"{wake} futex events under wake(), the program makes 30000"
elif tot[0] < 20:
    why = f"only {tot[0]} cpu samples"
result("pprof_totals", not why, why)

# ---- every trace ----
pp = dict(tr_s)
for k, v in tr_f.items():
    pp[k] = pp.get(k, 0) + v
fo = folded()
diff = [(k, fo.get(k), pp.get(k)) for k in set(fo) | set(pp) if fo.get(k) != pp.get(k)]
result("pprof_traces", not diff and len(fo) > 2,
       f"{len(diff)} stacks differ (folded, pprof), e.g. {diff[:2]}" if diff else f"only {len(fo)} stacks")

# ---- top functions ----
top = {}
for f in ("samples", TP):
    for ln in open(f"{tmp}/top.{f}"):
        m = re.match(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+\d+\s+[\d.]+%\s+(.+)$", ln)
        if m and int(m.group(1)):
            n = norm(m.group(2))
            top[n] = top.get(n, 0) + int(m.group(1))
leaf = {}
for k, v in fo.items():
    n = k.split(";")[-1]
    leaf[n] = leaf.get(n, 0) + v
diff = [(k, leaf.get(k), top.get(k)) for k in set(leaf) | set(top) if leaf.get(k) != top.get(k)]
result("pprof_top", not diff and "inl_mid" in top, f"{diff[:3]}" if diff else "inl_mid not in -top")

# ---- inline chain: one location, several lines, as addr2line says ----
maps, locs, cur = {}, [], None
sec = None
for ln in lines:
    if ln in ("Samples:", "Locations", "Mappings"):
        sec = ln; continue
    if sec == "Mappings":
        m = re.match(r"^(\d+): 0x([0-9a-f]+)/0x([0-9a-f]+)/0x([0-9a-f]+) (\S+) ?(\S*)", ln)
        if m:
            maps[m.group(1)] = (int(m.group(2), 16), int(m.group(4), 16), m.group(5), m.group(6))
    elif sec == "Locations":
        m = re.match(r"^\s+\d+: 0x([0-9a-f]+) M=(\d+) (\S+)", ln)
        if m:
            cur = [int(m.group(1), 16), m.group(2), [m.group(3)]]
            locs.append(cur)
        elif cur and re.match(r"^\s{13}\S", ln):
            cur[2].append(ln.split()[0])
prog = f"{tmp}/prog"
why, checked = "", 0
bid = re.search(r"Build ID: ([0-9a-f]+)", subprocess.run(["readelf", "-n", prog], capture_output=True, text=True).stdout).group(1)
loads = []
for ln in subprocess.run(["readelf", "-lW", prog], capture_output=True, text=True).stdout.splitlines():
    f = ln.split()
    if f and f[0] == "LOAD":
        loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
for addr, mid, fns in locs:
    if mid not in maps or maps[mid][2] != prog or len(fns) < 2 or fns[-1] != "run_b":
        continue
    start, off0, path, b = maps[mid]
    if b != bid:
        why = f"mapping build ID {b}, readelf says {bid}"; break
    off = addr - start + off0
    va = next((off - o + v for o, v, sz in loads if o <= off < o + sz), None)
    a2l = subprocess.run(["addr2line", "-f", "-i", "-e", prog, hex(va)], capture_output=True, text=True).stdout.split("\n")
    want = [x for x in a2l[0::2] if x]
    if want != fns:
        why = f"location at offset {off:#x}: pprof lines {fns}, addr2line {want}"; break
    checked += 1
result("pprof_inline", not why and checked > 0, why or "no location of prog with an inline chain ending in run_b")
EOF

# ---- the main executable's mapping first, the pid label -----------------------------
why=
if ! "$USTACK" record -q -o "$tmp/m.data" -e syscalls:sys_enter_futex -- \
	sh -c "echo \$\$ >'$tmp/m.pid'; exec '$tmp/prog' futex 100" >/dev/null 2>"$tmp/m.err"; then
	why="record: $(head -n1 "$tmp/m.err")"
elif ! "$USTACK" report -i "$tmp/m.data" --format pprof -o "$tmp/m.pb.gz" 2>"$tmp/m.err"; then
	why="report: $(head -n1 "$tmp/m.err")"
else
	mpid=$(cat "$tmp/m.pid")
	f1=$(pp -top "$tmp/t.pb.gz" | head -n1)
	f2=$(pp -top "$tmp/m.pb.gz" | head -n1)
	tags=$(pp -tags "$tmp/m.pb.gz" | awk '/^ pid: /{p=1; print; next} p && /^ *$/{exit} p')
	if [ "$f1" != "File: prog" ] || [ "$f2" != "File: prog" ]; then
		why="go tool pprof -top says '$f1' (cpu + futex trace), '$f2' (futex trace), want 'File: prog'"
	elif ! grep -qx ' pid: Total 100.0' <<<"$tags" || ! grep -qE "^ +100\.0 \( *100%\): $mpid\$" <<<"$tags" ||
	     [ "$(wc -l <<<"$tags")" != 2 ]; then
		why="-tags pid section is not 100 events of pid $mpid: $(tr '\n' '|' <<<"$tags")"
	fi
fi
[ -z "$why" ] && pass pprof_main || fail pprof_main "$why"

# ---- second decoder ----------------------------------------------------------------
if command -v protoc >/dev/null; then
	gunzip -c "$tmp/t.pb.gz" >"$tmp/t.pb"
	protoc --decode_raw <"$tmp/t.pb" >"$tmp/decoded" 2>"$tmp/protoc.err"
	n_proto=$(grep -c '^2 {' "$tmp/decoded")
	n_raw=$(awk '/^Samples:/{s=1;next} /^Locations/{s=0} s && /^ +[0-9 ]+:/' "$tmp/raw" | wc -l)
	first_str=$(grep -m1 '^6: ' "$tmp/decoded")
	if [ -s "$tmp/protoc.err" ]; then
		fail pprof_protoc "$(head -n1 "$tmp/protoc.err")"
	elif [ "$n_proto" != "$n_raw" ] || [ "$first_str" != '6: ""' ]; then
		fail pprof_protoc "$n_proto samples (pprof: $n_raw), first string '$first_str'"
	else
		pass pprof_protoc
	fi
else
	skip pprof_protoc "protoc not installed (Debian protobuf-compiler)"
fi

# start_line of each function of pprof_prog.c: DW_AT_decl_line as readelf says it
# start_line RAW-FILE TEST-NAME MIN-FUNCTIONS
start_line() {
	readelf --debug-dump=info "$tmp/prog" >"$tmp/info" 2>/dev/null
	python3 - "$1" "$tmp/info" "$2" "$3" <<'PYEOF'
import re, sys
raw, info, name, need = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
decl, cur = {}, None
for ln in open(info):
    m = re.match(r"\s*<\d+><[0-9a-f]+>: Abbrev Number: \d+ \((\w+)\)", ln)
    if m:
        cur = {} if m.group(1) == "DW_TAG_subprogram" else None
        continue
    if cur is None:
        continue
    m = re.match(r"\s*<[0-9a-f]+>\s+(DW_AT_\w+)\s*:\s*(.*)$", ln)
    if not m:
        continue
    if m.group(1) == "DW_AT_name":
        cur["name"] = m.group(2).split(": ")[-1].strip()
    elif m.group(1) == "DW_AT_decl_line":
        cur["line"] = int(m.group(2).split()[0], 0)
    if "name" in cur and "line" in cur:
        decl.setdefault(cur["name"], cur["line"])
        cur = None
seen, bad = {}, []
in_loc = False
for ln in open(raw):
    if ln.startswith("Locations"):
        in_loc = True
        continue
    if ln.startswith("Mappings"):
        in_loc = False
    m = re.search(r"(?:M=\d+ |^\s+)(\S+) (\S*pprof_prog\.c):\d+ s=(\d+)$", ln.rstrip()) if in_loc else None
    if not m:
        continue
    fn, s = m.group(1), int(m.group(3))
    if fn not in decl:
        continue
    seen[fn] = s
    if s != decl[fn]:
        bad.append(f"{fn}: s={s}, DW_AT_decl_line {decl[fn]}")
if bad:
    print(f"FAIL {name}: " + "; ".join(bad[:5]))
elif len(seen) < need:
    print(f"FAIL {name}: only {len(seen)} functions of pprof_prog.c checked ({sorted(seen)}), want {need}")
else:
    print(f"PASS {name}: start_line = DW_AT_decl_line for " + ", ".join(f"{k}:{v}" for k, v in sorted(seen.items())))
PYEOF
}
start_line "$tmp/raw" pprof_start_line 4

# ---- snapshot: one sample per thread ----------------------------------------------------
"$tmp/prog" threads >"$tmp/thr.out" &
tpid=$!
# then every thread blocked for good: the workers in their futex wait
# (202), main in pause (34); at most 30 s each
for _ in $(seq 3000); do grep -q ready "$tmp/thr.out" 2>/dev/null && break; sleep 0.01; done
if ! grep -q ready "$tmp/thr.out" || ! wait_blocked "$tpid" '202|34' 4; then
	fail pprof_snapshot "the 4 threads did not all block (TID syscall): $(syscalls "$tpid" | awk '{ print $1, $2 }' | tr '\n' ' ')"
elif ! "$USTACK" snapshot -p "$tpid" --format pprof -o "$tmp/s.pb.gz" 2>"$tmp/snap.err"; then
	if grep -qiE 'not permitted|ptrace' "$tmp/snap.err"; then
		skip pprof_snapshot "cannot ptrace: $(head -n1 "$tmp/snap.err")"
	else
		fail pprof_snapshot "exit status: $(head -n2 "$tmp/snap.err")"
	fi
else
	pp -raw "$tmp/s.pb.gz" >"$tmp/sraw"
	tasks=$(ls /proc/"$tpid"/task | sort -n | tr '\n' ' ')
	got=$(grep -o 'thread:\[[0-9]*\]' "$tmp/sraw" | tr -dc '0-9\n' | sort -n | tr '\n' ' ')
	vals=$(awk '/^Samples:/{s=1;getline;next} /^Locations/{s=0} s && /^ +[0-9]+:/{print $1}' "$tmp/sraw" | tr -d ':' | sort -u | tr '\n' ' ')
	workers=$(grep -c 'comm:\[pp-worker-[012]\]' "$tmp/sraw")
	if [ "$got" != "$tasks" ]; then
		fail pprof_snapshot "thread labels '$got', /proc/$tpid/task '$tasks'"
	elif [ "$vals" != "1 " ] || [ "$workers" != 3 ]; then
		fail pprof_snapshot "values '$vals' (want all 1), $workers pp-worker comms (want 3)"
	elif ! grep -q 'pthread_cond_wait' "$tmp/sraw" || ! grep -q ' worker ' "$tmp/sraw"; then
		fail pprof_snapshot "no worker -> pthread_cond_wait frames: $(grep -m3 ' M=' "$tmp/sraw")"
	else
		pass pprof_snapshot
	fi
	# the first mapping is the executable's (pprof's "File:"), not libc's
	f3=$(pp -top "$tmp/s.pb.gz" 2>/dev/null | grep -m1 '^File: ')
	if [ "$f3" = "File: prog" ]; then
		pass pprof_snapshot_main
	else
		fail pprof_snapshot_main "go tool pprof -top says '$f3', want 'File: prog'"
	fi
	start_line "$tmp/sraw" pprof_start_line_snapshot 2
fi
kill "$tpid" 2>/dev/null
wait "$tpid" 2>/dev/null
tpid=

# ---- edge cases ------------------------------------------------------------------------
why=
for k in empty lost; do
	"$tmp/mktrace" $k "$tmp/$k.data" || { why="mktrace $k failed"; break; }
	if ! "$USTACK" report -i "$tmp/$k.data" --format pprof -o "$tmp/$k.pb.gz" 2>"$tmp/$k.err"; then
		why="$k trace: exit status non-zero: $(head -n1 "$tmp/$k.err")"; break
	fi
	pp -raw "$tmp/$k.pb.gz" >"$tmp/$k.raw" || { why="$k: pprof cannot read it: $(head -n1 "$tmp/pprof.err")"; break; }
	nsamp=$(awk '/^Samples:/{s=1;getline;next} /^Locations/{s=0} s && /^ +[0-9 ]+:/' "$tmp/$k.raw" | wc -l)
	if ! grep -qx 'samples/count cpu/nanoseconds' "$tmp/$k.raw" || [ "$nsamp" != 0 ]; then
		why="$k: sample types or $nsamp samples: $(head -n8 "$tmp/$k.raw" | tr '\n' '|')"; break
	fi
done
if [ -z "$why" ] && ! grep -q 'lost records: 12;' "$tmp/lost.raw"; then
	why="lost trace: no 'lost records: 12' comment"
fi
# a thread renamed between two events: one sample per name, as folded says
if [ -z "$why" ]; then
	"$tmp/mktrace" rename "$tmp/rename.data" || why="mktrace rename failed"
fi
if [ -z "$why" ]; then
	"$USTACK" report -i "$tmp/rename.data" --format pprof -o "$tmp/rename.pb.gz" 2>"$tmp/rename.err"
	"$USTACK" report -i "$tmp/rename.data" --format folded >"$tmp/rename.folded" 2>>"$tmp/rename.err"
	if ! pp -raw "$tmp/rename.pb.gz" >"$tmp/rename.raw"; then
		why="rename: pprof cannot read the profile: $(head -n1 "$tmp/pprof.err")"
	elif [ "$(grep -c 'comm:\[before\]' "$tmp/rename.raw")" != 1 ] ||
	     [ "$(grep -c 'comm:\[after\]' "$tmp/rename.raw")" != 1 ] ||
	     [ "$(sort "$tmp/rename.folded" | tr '\n' ' ')" != "after;kfunc 1 before;kfunc 1 " ]; then
		why="rename: pprof comm labels '$(grep -o 'comm:\[[a-z]*\]' "$tmp/rename.raw" | tr '\n' ' ')', folded '$(tr '\n' ' ' <"$tmp/rename.folded")' (want one sample each of before and after)"
	fi
fi
if [ -z "$why" ]; then
	size=$(stat -c %s "$tmp/t.data")
	head -c $((size / 2)) "$tmp/t.data" >"$tmp/cut.data"
	"$USTACK" report -i "$tmp/cut.data" --format pprof -o "$tmp/cut.pb.gz" 2>"$tmp/cut.err"
	st=$?
	if [ "$st" != 1 ] || ! grep -qE 'damaged at offset [0-9]+' "$tmp/cut.err"; then
		why="truncated trace: exit $st, '$(head -n1 "$tmp/cut.err")'"
	elif grep -qE 'Sanitizer|runtime error' "$tmp/cut.err"; then
		why="truncated trace: $(grep -m1 -E 'Sanitizer|runtime error' "$tmp/cut.err")"
	elif ! pp -raw "$tmp/cut.pb.gz" >"$tmp/cut.raw"; then
		why="truncated trace: pprof cannot read the profile: $(head -n1 "$tmp/pprof.err")"
	fi
fi
# a terminal on stdout is refused (script(1) gives the command one)
if [ -z "$why" ] && command -v script >/dev/null; then
	script -qc "'$USTACK' report -i '$tmp/t.data' --format pprof; echo rc=\$?" /dev/null \
		>"$tmp/tty.out" 2>&1
	if ! grep -q 'not a terminal' "$tmp/tty.out" || ! grep -q 'rc=2' "$tmp/tty.out"; then
		why="pprof to a terminal: $(tr -d '\r' <"$tmp/tty.out" | head -n2 | tr '\n' '|')"
	fi
fi
[ -z "$why" ] && pass pprof_edge || fail pprof_edge "$why"
