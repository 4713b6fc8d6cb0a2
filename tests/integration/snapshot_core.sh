#!/usr/bin/env bash
# `ustack snapshot --core FILE` against two oracles on the same core:
# eu-stack --core FILE -e EXE (elfutils) and gdb (its frame list through its
# Python API, the frames `thread apply all bt` prints).
#
# Cores: tests/integration/progs/core_threads.c, 4 named threads blocked in
# pause() at known depths + main in pthread_join, built -O2 without frame
# pointers (DWARF CFI only), and again with SFrame (-Wa,--gsframe):
#   gcore      gdb's gcore of the running program
#   segv       the program crashing (SIGSEGV) in main -> core_crash_outer
#              -> core_crash_inner, core written by the kernel
#   abort      the same with abort()
# The kernel cores need core_pattern to write a plain file in the crashing
# process's directory; this test never changes core_pattern. When it pipes
# to a handler (systemd-coredump, apport) or names an absolute directory,
# the crash cores are made by gdb instead (run until the signal, then
# generate-core-file), and a line says so.
#
# Comparison, per thread (matched by TID), frame by frame:
#   - pcs: frame 0 is the exact pc, later frames return addresses, in all
#     three tools; lists must be equal.
#   - function names, normalized: a version suffix (@@GLIBC_2.34), a GCC
#     clone suffix (.cold, .part.0, .isra.0: gdb names the function from
#     DWARF) and glibc's "_impl" suffix (__libc_start_main_impl is exported
#     as __libc_start_main) are cut;
#     leading underscores, then glibc's internal alias prefixes "GI_" and
#     "libc_", are removed (__GI___libc_pause, __libc_pause -> pause;
#     __clone3 -> clone3). A name one tool does not know ("??") matches any.
#   - gdb: its inlined frames (same pc as the frame that holds the code) and
#     tail-call frames (reconstructed from DWARF call sites; no return
#     address on the stack) are dropped, since ustack and eu-stack report
#     physical frames only; gdb is asked to go past main and the entry point.
# Then: truncated cores (cut inside a PT_LOAD, cut inside the notes), a
# non-core ELF, a random file and foreign cores (a real core's header
# patched to another e_machine, to ELFCLASS32, to big-endian) give one
# clear error line and exit 1.
set -u
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
GSFRAME=${GSFRAME-}
T=snapshot_core
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $1: $2"; }

[ -x "$USTACK" ] || { fail $T "no $USTACK"; exit 1; }
. "$TOP/tests/integration/lib/libc_names.sh"
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
# the sanitizer runtime must not see the gdb/eu-stack children
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

src=$TOP/tests/integration/progs/core_threads.c
variants=(cfi)
$CC -O2 -g -fomit-frame-pointer -pthread -o "$tmp/ct_cfi" "$src" || { fail $T "cannot build core_threads"; exit 1; }
if [ -n "$GSFRAME" ] && $CC -O2 -g -fomit-frame-pointer $GSFRAME -pthread -o "$tmp/ct_sframe" "$src" 2>/dev/null &&
   readelf -S "$tmp/ct_sframe" | grep -q '\.sframe'; then
	variants+=(sframe)
else
	skip ${T}_sframe "the assembler cannot emit SFrame (-Wa,--gsframe)"
fi

have_gdb=1 have_eu=1
command -v gdb >/dev/null || { have_gdb=0; skip ${T}_gdb "gdb not installed"; }
command -v eu-stack >/dev/null || { have_eu=0; skip ${T}_eustack "eu-stack (elfutils) not installed"; }

# gdb's frames: tests/integration/lib/gdb_frames.py
GDB_FRAMES=$TOP/tests/integration/lib/gdb_frames.py

# normalize TOOL FILE: "tid pc name" lines, one per physical frame
normalize() {
	awk -v tool="$1" '
	function norm(n) { sub(/@.*/, "", n); sub(/\..*/, "", n); sub(/_impl$/, "", n); sub(/^_+/, "", n); sub(/^vdso_/, "", n); sub(/^GI_+/, "", n); sub(/^libc_/, "", n); return n }
	/^TID [0-9]+/ { tid = $2; sub(/:$/, "", tid); next }
	/^#[0-9]+ +0x[0-9a-fA-F]+/ {
		pc = tolower($2); sub(/^0x0*/, "", pc)
		if (tool == "gdb") { if ($4 != "normal") next; name = $3 }
		else if (tool == "ustack") { name = $3; sub(/\+0x[0-9a-f]+$/, "", name) }
		else name = ($3 == "" ? "??" : $3)
		print tid, pc, norm(name)
	}' "$2"
}

# compare NAME A B: the frames of two normalized lists; prints the first difference
compare() {
	awk -v name="$1" '
	FNR == 1 { file++ }
	{ k = $1 SUBSEP (++n[file, $1]); if (file == 1) { P1[k] = $2; N1[k] = $3; T[$1] = 1 } else { P2[k] = $2; N2[k] = $3; T[$1] = 1 } }
	END {
		bad = 0; frames = 0
		for (t in T) {
			a = n[1, t] + 0; b = n[2, t] + 0
			if (a != b) { printf "TID %s: %d frames against %d\n", t, a, b; bad++; continue }
			for (i = 1; i <= a; i++) {
				k = t SUBSEP i; frames++
				if (P1[k] != P2[k] || (N1[k] != N2[k] && N1[k] != "??" && N2[k] != "??")) {
					printf "TID %s frame #%d: 0x%s %s against 0x%s %s\n", t, i - 1, P1[k], N1[k], P2[k], N2[k]
					bad++; break
				}
			}
		}
		if (!frames) { print "no frames"; bad++ }
		exit bad ? 1 : 0
	}' "$2" "$3"
}

# check_core NAME CORE EXE [CHAIN...]: ustack against the oracles, and the
# thread that crashed (or every one) holds CHAIN in this order
check_core() {
	local name=$1 core=$2 exe=$3 u=$tmp/$1.u
	shift 3
	if ! "$USTACK" snapshot --core "$core" --exe "$exe" >"$u" 2>"$u.err"; then
		fail ${T}_$name "ustack exited $?: $(head -3 "$u.err")"
		return
	fi
	if [ -s "$u.err" ]; then
		fail ${T}_$name "warnings: $(head -3 "$u.err")"
		return
	fi
	normalize ustack "$u" >"$u.n"
	if [ "$(grep -c '^TID ' "$u")" != 5 ]; then
		fail ${T}_$name "$(grep -c '^TID ' "$u") threads, not 5"
		return
	fi
	# the known chains (outermost part of each thread)
	local want chain
	for want in "$@"; do
		chain=$(awk -v w="$want" 'BEGIN { n = split(w, W, ",") }
			/^TID/ { s = "" } /^#/ { f = $3; sub(/\+0x.*/, "", f); sub(/\..*/, "", f); s = s "," f }
			/^$/ || /^# stopped/ { if (index(s "," , "," w ",")) found = 1 }
			END { if (index(s ",", "," w ",")) found = 1; print found + 0 }' "$u")
		[ "$chain" = 1 ] || { fail ${T}_$name "no thread with the chain $want"; return; }
	done
	pass ${T}_$name
	if [ $have_eu = 1 ]; then
		eu-stack --core "$core" -e "$exe" >"$tmp/$name.eu" 2>/dev/null
		normalize eustack "$tmp/$name.eu" >"$tmp/$name.eu.n"
		if d=$(compare eustack "$u.n" "$tmp/$name.eu.n"); then
			pass ${T}_${name}_eustack
		else
			fail ${T}_${name}_eustack "$(echo "$d" | head -2)"
		fi
	fi
	if [ $have_gdb = 1 ]; then
		gdb -batch -nx -ex "source $GDB_FRAMES" "$exe" "$core" >"$tmp/$name.gdb" 2>/dev/null
		normalize gdb "$tmp/$name.gdb" >"$tmp/$name.gdb.n"
		if d=$(compare gdb "$u.n" "$tmp/$name.gdb.n"); then
			pass ${T}_${name}_gdb
		else
			fail ${T}_${name}_gdb "$(echo "$d" | head -2)"
		fi
	fi
}

threads_chain="core_block,core_level,core_level,core_level,core_level,core_thr_start"
crash_chain="core_crash_inner,core_crash_outer,main"

# how crash cores are made: by the kernel into the cwd, or by gdb
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
kernel_cores=1
case "$pattern" in
'|'* | /*) kernel_cores=0
	echo "# core_pattern is '$pattern' (a handler or another directory, not changed here): crash cores come from gdb's generate-core-file" ;;
esac

for v in "${variants[@]}"; do
	exe=$tmp/ct_$v
	# (a) gcore of the running program
	if [ $have_gdb = 1 ]; then
		: >"$tmp/$v.out"
		"$exe" >"$tmp/$v.out" &
		pid=$!
		pids+=($pid)
		for _ in $(seq 600); do grep -q ready "$tmp/$v.out" && break; sleep 0.05; done
		if gcore -o "$tmp/gcore_$v" "$pid" >/dev/null 2>&1 && [ -s "$tmp/gcore_$v.$pid" ]; then
			check_core gcore_$v "$tmp/gcore_$v.$pid" "$exe" "$threads_chain" "core_main_wait,main"
		else
			fail ${T}_gcore_$v "gcore failed"
		fi
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
	else
		skip ${T}_gcore_$v "gdb (gcore) not installed"
	fi
	# (b) a crash: SIGSEGV, then abort()
	for how in segv abort; do
		d=$tmp/crash_${v}_$how
		mkdir -p "$d"
		core=
		if [ $kernel_cores = 1 ]; then
			# not exec'd: the inner shell reports the crash, to /dev/null
			sh -c 'cd "$1" && ulimit -c unlimited && "$2" "$3"; true' _ "$d" "$exe" $how >/dev/null 2>&1
			core=$(ls "$d"/core* 2>/dev/null | head -1)
		fi
		if [ -z "$core" ] && [ $have_gdb = 1 ]; then
			gdb -batch -nx -ex run -ex "generate-core-file $d/core.gdb" --args "$exe" $how >/dev/null 2>&1
			[ -s "$d/core.gdb" ] && core=$d/core.gdb
		fi
		if [ -z "$core" ]; then
			skip ${T}_${how}_$v "no core was written (core_pattern '$pattern', ulimit -c)"
			continue
		fi
		cp "$core" "$tmp/${how}_$v.core"
		check_core ${how}_$v "$tmp/${how}_$v.core" "$exe" "$threads_chain" "$crash_chain"
	done
done

# --- the other formats and --lines, on the gcore core of the CFI build
g=$(ls "$tmp"/gcore_cfi.* 2>/dev/null | head -1)
if [ -n "$g" ]; then
	ex=$tmp/ct_cfi
	"$USTACK" snapshot --core "$g" --exe "$ex" --format json >"$tmp/j.json" 2>"$tmp/j.err"
	if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["core"] == sys.argv[2], d["core"]
t = d["threads"]
assert len(t) == 5, len(t)
names = [[f["function"] for f in x["frames"]] for x in t]
assert sum(1 for n in names if "core_thr_start" in n) == 4, names
assert all(x["stop_reason"] == "outermost" for x in t), [x["stop_reason"] for x in t]
' "$tmp/j.json" "$g" 2>"$tmp/j.py"; then pass ${T}_json; else fail ${T}_json "$(tail -1 "$tmp/j.py")"; fi
	"$USTACK" snapshot --core "$g" --exe "$ex" --format folded >"$tmp/f.txt" 2>/dev/null
	# 4 distinct thread stacks (depths 1..4) and main's: 5 lines, count 1 each
	# (libc's pause under any of its names: lib/libc_names.sh)
	if [ "$(wc -l <"$tmp/f.txt")" = 5 ] &&
	   grep -qE "^ct_cfi;.*;core_thr_start;core_level;core_level;core_block;$(libc_aliases pause "$(libc_path "$ex")") 1\$" "$tmp/f.txt"; then
		pass ${T}_folded
	else
		fail ${T}_folded "$(head -2 "$tmp/f.txt")"
	fi
	"$USTACK" snapshot --core "$g" --exe "$ex" --lines >"$tmp/l.txt" 2>/dev/null
	if grep -q "core_main_wait+0x[0-9a-f]* ($ex) at .*core_threads.c:[0-9]" "$tmp/l.txt"; then
		pass ${T}_lines
	else
		fail ${T}_lines "$(grep core_main_wait "$tmp/l.txt")"
	fi
	# the executable missing: one warning that names it and says --exe
	"$USTACK" snapshot --core "$g" --exe "$tmp/gone" >"$tmp/m.txt" 2>"$tmp/m.err"
	if [ $? = 0 ] && grep -q "$tmp/gone: No such file" "$tmp/m.err" && grep -q '^TID' "$tmp/m.txt"; then
		pass ${T}_missing_exe
	else
		fail ${T}_missing_exe "$(head -2 "$tmp/m.err")"
	fi
fi

# --- a file whose build ID differs from the core's: warned, no names from it
any=$(ls "$tmp"/*.core "$tmp"/gcore_cfi.* 2>/dev/null | head -1)
if [ -n "$any" ]; then
	$CC -O2 -pthread -DCORE_OTHER_BUILD=1 -o "$tmp/ct_other" "$src"
	"$USTACK" snapshot --core "$any" --exe "$tmp/ct_other" >"$tmp/other.out" 2>"$tmp/other.err"
	rc=$?
	if [ $rc = 0 ] && grep -q "ct_other: build ID .*, but the mapping had" "$tmp/other.err" &&
	   ! grep -q "core_level" "$tmp/other.out"; then
		pass ${T}_build_id_mismatch
	else
		fail ${T}_build_id_mismatch "rc $rc, stderr: $(head -2 "$tmp/other.err")"
	fi

	# --- broken inputs: one line, exit 1, no sanitizer report
	# the offset of the notes and of the last PT_LOAD with file bytes
	read -r note_off note_sz < <(readelf -lW "$any" | awk '$1 == "NOTE" { print $2, $5; exit }')
	read -r load_off load_sz < <(readelf -lW "$any" | awk '$1 == "LOAD" && $5 != "0x000000" { o = $2; s = $5 } END { print o, s }')
	head -c $((note_off + note_sz / 2)) "$any" >"$tmp/cut_notes.core"
	head -c $((load_off + load_sz / 2)) "$any" >"$tmp/cut_load.core"
	head -c 4096 /dev/urandom >"$tmp/random.bin"
	printf '\x7fELF' >"$tmp/tiny.core"
	check_error() { # name file regex
		"$USTACK" snapshot --core "$2" >"$tmp/$1.out" 2>"$tmp/$1.err"
		local rc=$? lines
		lines=$(wc -l <"$tmp/$1.err")
		if [ $rc = 1 ] && [ "$lines" = 1 ] && grep -qE "$3" "$tmp/$1.err"; then
			pass ${T}_error_$1
		else
			fail ${T}_error_$1 "rc $rc, $lines lines: $(head -3 "$tmp/$1.err")"
		fi
	}
	check_error cut_notes "$tmp/cut_notes.core" "cut_notes.core: offset 0x[0-9a-f]+: .*(note|PT_NOTE)"
	check_error cut_load "$tmp/cut_load.core" "cut_load.core: offset 0x[0-9a-f]+: PT_LOAD segment [0-9]+ .*cut"
	check_error not_core "$exe" "ct_.*: offset 0x10: not a core file"
	check_error random "$tmp/random.bin" "random.bin: offset 0x0: not an ELF file"
	check_error tiny "$tmp/tiny.core" "tiny.core: offset 0x0: ELF header cut"
	check_error missing "$tmp/nonexistent" "nonexistent: No such file"
	# foreign cores: the header of a real core with other bytes
	patch_core() { # out offset bytes(printf escapes)
		cp "$any" "$tmp/$1"
		printf "$3" | dd of="$tmp/$1" bs=1 seek=$2 conv=notrunc status=none
	}
	patch_core aarch64.core 18 '\xb7\x00'   # e_machine EM_AARCH64 (183)
	patch_core class32.core 4 '\x01'         # EI_CLASS ELFCLASS32
	patch_core bigendian.core 5 '\x02'       # EI_DATA ELFDATA2MSB
	check_error aarch64 "$tmp/aarch64.core" "aarch64.core: offset 0x12: core of machine 183; only x86-64 \(62\) is read"
	check_error class32 "$tmp/class32.core" "class32.core: offset 0x4: not a 64-bit little-endian ELF file"
	check_error bigendian "$tmp/bigendian.core" "bigendian.core: offset 0x4: not a 64-bit little-endian ELF file"
fi

# --- a thread inside the vDSO: its frames are named [vdso], as in
# /proc/PID/maps (the core holds the vDSO's pages, not a file).
# Which vDSO functions a clock_gettime() goes through depends on the kernel
# build and on the clock source, and not all of them have a symbol: with
# tsc, __vdso_clock_gettime reads the clock itself; with kvm-clock it calls
# a helper without a symbol (vread_pvclock), and a thread caught there shows
# "#0 ?? ([vdso])", "#1 __vdso_clock_gettime+0x17e ([vdso])". Both are
# right, and so is any name libc gives its wrapper (clock_gettime,
# __clock_gettime, __GI___clock_gettime with its debug file). So:
#   - the shape (vdso_stack_check): frame 0 and zero or more frames after
#     it in [vdso], each pc inside the core's vDSO (AT_SYSINFO_EHDR and its
#     PT_LOAD); then one frame in libc (by its file, libc.so.N, any name);
#     then main in the executable; no [image] frame (an image with no name)
#   - the pcs (and names, where both tools have one) against eu-stack and
#     gdb on the same core (compare, as above; the vDSO's __vdso_X and X
#     are one function)
# vdso_stack_check is first tried on canned stacks: two right ones (the
# kvm-clock stack above, from a machine where it failed an older check, and
# a tsc one) must pass; wrong ones must fail.

# vdso_stack_check OUT LO HI EXE: prints why OUT (ustack's text output of
# a one-thread core) is not a right stack of a thread in the vDSO under
# main's clock_gettime() call, the vDSO at [LO, HI); status 1 then
vdso_stack_check() {
	awk -v lo="$2" -v hi="$3" -v exe="$4" '
	function hex16(x) { x = tolower(x); sub(/^0x/, "", x); while (length(x) < 16) x = "0" x; return x }
	function bad(why) { print why; failed = 1; exit 1 }
	BEGIN { LO = hex16(lo); HI = hex16(hi); state = 0 }
	/\(\[image\]\)/ { bad("an [image] frame: " $0) }
	/^#[0-9]+ 0x[0-9a-f]+ / {
		file = ""
		if (match($0, / \(.*\)$/)) file = substr($0, RSTART + 2, RLENGTH - 3)
		base = file; sub(/.*\//, "", base)
		pc = hex16($2)
		if (state == 0 || state == 1) {
			if (file == "[vdso]") {
				if (pc < LO || pc >= HI) bad($1 " " $2 " is named [vdso] but lies outside the vDSO " lo "-" hi)
				state = 1
				next
			}
			if (state == 0) bad("frame #0 is not in the vDSO: " $0)
			if (base !~ /^libc(\.so\.[0-9]+|-[0-9.]+\.so)$/) bad("after the vDSO frames, not libc: " $0)
			state = 2
			next
		}
		if (state == 2) {
			if ($3 !~ /^main\+0x[0-9a-f]+$/ || file != exe) bad("after the libc frame, not main in " exe ": " $0)
			state = 3
		}
	}
	END {
		if (failed) exit 1
		if (state < 3) { print "no main after the vDSO and libc frames (" (state == 0 ? "no frame" : state == 1 ? "only vDSO frames" : "stack ends in libc") ")"; exit 1 }
	}' "$1"
}

# the canned stacks: base 0x7fd0bfa76000 (vDSO of two pages), main in /t/vspin
vlo=0x7fd0bfa76000 vhi=0x7fd0bfa78000
vlibc=/usr/lib/x86_64-linux-gnu/libc.so.6
cat >"$tmp/v_kvmclock" <<EOF
TID 1234 vspin
#0 0x7fd0bfa767a1 ?? ([vdso])
#1 0x7fd0bfa76c6e __vdso_clock_gettime+0x17e ([vdso])
#2 0x7fd0bf94f439 clock_gettime+0x19 ($vlibc)
#3 0x55d0c1a0806d main+0x1d (/t/vspin)
#4 0x7fd0bf8a724a __libc_start_call_main+0x7a ($vlibc)
#5 0x7fd0bf8a7305 __libc_start_main+0x85 ($vlibc)
#6 0x55d0c1a08091 _start+0x21 (/t/vspin)
EOF
cat >"$tmp/v_tsc" <<EOF
TID 1234 vspin
#0 0x7fd0bfa76b46 __vdso_clock_gettime+0x56 ([vdso])
#1 0x7fd0bf94f439 __GI___clock_gettime+0x19 ($vlibc)
#2 0x55d0c1a0806d main+0x1d (/t/vspin)
#3 0x7fd0bf8a724a __libc_start_call_main+0x7a ($vlibc)
#4 0x7fd0bf8a7305 __libc_start_main+0x85 ($vlibc)
#5 0x55d0c1a08091 _start+0x21 (/t/vspin)
EOF
# wrong: libc's frame in another file; no main; an [image] frame; main in
# another file; frame 0 in libc; a [vdso] pc outside the vDSO; the libc
# frame missing
sed "s|clock_gettime+0x19 ($vlibc)|clock_gettime+0x19 (/usr/lib/x86_64-linux-gnu/libm.so.6)|" "$tmp/v_kvmclock" >"$tmp/v_bad_file"
grep -v ' main+' "$tmp/v_kvmclock" >"$tmp/v_bad_nomain"
sed 's|__vdso_clock_gettime+0x17e (\[vdso\])|?? ([image])|' "$tmp/v_kvmclock" >"$tmp/v_bad_image"
sed 's|main+0x1d (/t/vspin)|main+0x1d (/t/other)|' "$tmp/v_kvmclock" >"$tmp/v_bad_mainfile"
grep -v ' (\[vdso\])$' "$tmp/v_kvmclock" >"$tmp/v_bad_frame0"
sed 's|^#1 0x7fd0bfa76c6e|#1 0x7fd0bfa78c6e|' "$tmp/v_kvmclock" >"$tmp/v_bad_range"
grep -v ' clock_gettime+0x19 ' "$tmp/v_kvmclock" >"$tmp/v_bad_nolibc"
selftest=
for c in kvmclock tsc; do
	why=$(vdso_stack_check "$tmp/v_$c" $vlo $vhi /t/vspin) || selftest+="rejects the right $c stack ($why); "
done
for c in file nomain image mainfile frame0 range nolibc; do
	vdso_stack_check "$tmp/v_bad_$c" $vlo $vhi /t/vspin >/dev/null && selftest+="accepts the wrong stack $c; "
done
if [ -z "$selftest" ]; then
	pass ${T}_vdso_selftest
else
	fail ${T}_vdso_selftest "vdso_stack_check $selftest"
fi

if [ $have_gdb = 1 ]; then
	cat >"$tmp/vspin.c" <<'EOF'
#include <time.h>
#include <unistd.h>
int main(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	write(1, "ready\n", 6);
	for (;;)
		clock_gettime(CLOCK_MONOTONIC, &ts);
}
EOF
	$CC -O2 -o "$tmp/vspin" "$tmp/vspin.c"
	"$tmp/vspin" >"$tmp/vspin.ready" &
	vp=$!
	pids+=("$vp")
	for _ in $(seq 3000); do grep -q ready "$tmp/vspin.ready" && break; sleep 0.01; done
	# nearly all of its time is in the vDSO: a few tries at most (a core
	# that caught it in libc or main is just taken again). Whether it is
	# there is the core's word, not ustack's: its pc (gdb) inside its vDSO
	# (AT_SYSINFO_EHDR from the core's auxv, the size of the PT_LOAD there).
	vcore=$tmp/vspin.core.$vp
	for try in $(seq 20); do
		rm -f "$tmp"/vspin.core.*
		gcore -o "$tmp/vspin.core" "$vp" >/dev/null 2>&1 || break
		read -r vlo vpc < <(gdb -batch -nx -ex 'info auxv' -ex 'printf "pc 0x%lx\n", $pc' \
			"$tmp/vspin" "$vcore" 2>/dev/null |
			awk '$2 == "AT_SYSINFO_EHDR" { lo = $NF } $1 == "pc" { pc = $2 } END { print lo, pc }')
		vhi=
		hex='^0x[0-9a-f]+$'
		[[ $vpc =~ $hex ]] || vpc=
		[[ $vlo =~ $hex ]] || vlo=
		if [ -n "$vlo" ]; then
			while read -r typ _ va _ _ msz _; do
				[ "$typ" = LOAD ] && [ $((va)) = $((vlo)) ] && vhi=$(printf '0x%x' $((va + msz)))
			done < <(readelf -lW "$vcore" 2>/dev/null)
		fi
		[ -n "$vhi" ] && [ -n "$vpc" ] && [ $((vpc >= vlo && vpc < vhi)) = 1 ] && break
	done
	"$USTACK" snapshot --core "$vcore" --exe "$tmp/vspin" >"$tmp/vdso.out" 2>"$tmp/vdso.err"
	if ! [ -s "$vcore" ]; then
		fail ${T}_vdso "gcore failed"
	elif [ -z "$vhi" ] || [ -z "$vpc" ]; then
		fail ${T}_vdso "no vDSO or no pc found in the core (AT_SYSINFO_EHDR '$vlo', a PT_LOAD there '$vhi', pc '$vpc')"
	elif [ $((vpc >= vlo && vpc < vhi)) != 1 ]; then
		skip ${T}_vdso "no core of 20 caught the thread inside the vDSO ($vlo-$vhi): pc $vpc"
	else
		if [ -s "$tmp/vdso.err" ]; then
			fail ${T}_vdso "warnings: $(head -3 "$tmp/vdso.err" | tr '\n' '|')"
		elif ! why=$(vdso_stack_check "$tmp/vdso.out" "$vlo" "$vhi" "$tmp/vspin"); then
			fail ${T}_vdso "$why; vDSO $vlo-$vhi; $(head -6 "$tmp/vdso.out" | tr '\n' '|')"
		else
			echo "# vDSO frames: $(grep -c '(\[vdso\])$' "$tmp/vdso.out"), frame 0: $(grep -m1 '^#0' "$tmp/vdso.out")"
			pass ${T}_vdso
		fi
		normalize ustack "$tmp/vdso.out" >"$tmp/vdso.n"
		if [ $have_eu = 1 ]; then
			eu-stack --core "$vcore" -e "$tmp/vspin" >"$tmp/vdso.eu" 2>/dev/null
			normalize eustack "$tmp/vdso.eu" >"$tmp/vdso.eu.n"
			if d=$(compare eustack "$tmp/vdso.n" "$tmp/vdso.eu.n"); then
				pass ${T}_vdso_eustack
			else
				fail ${T}_vdso_eustack "$(echo "$d" | head -2); eu-stack: $(grep '^#' "$tmp/vdso.eu" | head -5 | tr '\n' '|')"
			fi
		fi
		gdb -batch -nx -ex "source $GDB_FRAMES" "$tmp/vspin" "$vcore" >"$tmp/vdso.gdb" 2>/dev/null
		normalize gdb "$tmp/vdso.gdb" >"$tmp/vdso.gdb.n"
		if d=$(compare gdb "$tmp/vdso.n" "$tmp/vdso.gdb.n"); then
			pass ${T}_vdso_gdb
		else
			fail ${T}_vdso_gdb "$(echo "$d" | head -2); gdb: $(grep '^#' "$tmp/vdso.gdb" | head -5 | tr '\n' '|')"
		fi
	fi
else
	skip ${T}_vdso "gdb (gcore) not installed"
fi

# --- a frame whose CFA is rbx-based (CFI: push rbx; mov rsp, rbx; and
# -64, rsp), as glibc's _dl_runtime_resolve, with no frame below it that
# saved rbx: the walk past it needs rbx from the core's registers. The
# leaf crashes without touching rbx; gdb is the oracle.
if [ $have_gdb = 1 ]; then
	cat >"$tmp/rbxcore.c" <<'EOF'
void rbx_realign(void (*fn)(void));
void rbx_crash_leaf(void);
__asm__(".text\n.globl rbx_realign\n.type rbx_realign, @function\nrbx_realign:\n"
	".cfi_startproc\npush %rbx\n.cfi_def_cfa_offset 16\n.cfi_offset rbx, -16\n"
	"mov %rsp, %rbx\n.cfi_def_cfa_register rbx\nand $-64, %rsp\nsub $0xc0, %rsp\n"
	"call *%rdi\nmov %rbx, %rsp\n.cfi_def_cfa_register rsp\npop %rbx\n"
	".cfi_def_cfa_offset 8\nret\n.cfi_endproc\n.size rbx_realign, .-rbx_realign\n"
	".globl rbx_crash_leaf\n.type rbx_crash_leaf, @function\nrbx_crash_leaf:\n"
	".cfi_startproc\nxor %eax, %eax\nmov (%rax), %eax\nret\n.cfi_endproc\n"
	".size rbx_crash_leaf, .-rbx_crash_leaf\n");
__attribute__((noinline)) void rbx_outer(void)
{
	rbx_realign(rbx_crash_leaf);
	__asm__ volatile("" ::: "memory");
}
int main(void)
{
	rbx_outer();
	return 0;
}
EOF
	$CC -O2 -fomit-frame-pointer -o "$tmp/rbxcore" "$tmp/rbxcore.c"
	gdb -batch -nx -ex run -ex "generate-core-file $tmp/rbx.core" "$tmp/rbxcore" >/dev/null 2>&1
	if [ -s "$tmp/rbx.core" ]; then
		"$USTACK" snapshot --core "$tmp/rbx.core" --exe "$tmp/rbxcore" >"$tmp/rbx.out" 2>"$tmp/rbx.err"
		chain=$(awk '/^#/ { f = $3; sub(/\+0x.*/, "", f); printf "%s,", f }' "$tmp/rbx.out")
		normalize ustack "$tmp/rbx.out" >"$tmp/rbx.n"
		gdb -batch -nx -ex "source $GDB_FRAMES" "$tmp/rbxcore" "$tmp/rbx.core" >"$tmp/rbx.gdb" 2>/dev/null
		normalize gdb "$tmp/rbx.gdb" >"$tmp/rbx.gdb.n"
		case "$chain" in
		rbx_crash_leaf,rbx_realign,rbx_outer,main,*)
			if d=$(compare gdb "$tmp/rbx.n" "$tmp/rbx.gdb.n"); then
				pass ${T}_rbx_cfa
			else
				fail ${T}_rbx_cfa "against gdb: $(echo "$d" | head -2)"
			fi ;;
		*) fail ${T}_rbx_cfa "frames $chain: $(tr '\n' '|' <"$tmp/rbx.out")" ;;
		esac
	else
		skip ${T}_rbx_cfa "gdb wrote no core of the crash"
	fi
else
	skip ${T}_rbx_cfa "gdb not installed"
fi
exit 0
