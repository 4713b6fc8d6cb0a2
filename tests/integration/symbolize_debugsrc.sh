#!/usr/bin/env bash
# Where ustack finds the symbols of a stripped program: the same -O2 -g
# program with its debug part in each place distributions put it (build-ID
# tree, .gnu_debuglink in its three places, MiniDebugInfo, zlib and zstd
# compressed debug sections, a debuginfod server), and broken on purpose.
# Each case: `ustack symbolize -v` of offsets of four functions (two static:
# only .symtab knows them) against nm of the unstripped program, and the
# source named by -v. Where the debug part holds DWARF (debuglink, zlib,
# zstd, debuginfod, and MiniDebugInfo + debuginfod, whose names come from
# .gnu_debugdata and lines from the server): every offset's
# ` at FILE:LINE` and inline chain equal `eu-addr2line -f -i` on the
# unstripped program (column dropped), one offset being inside inlined
# code, and -v's `dwarf:` line names the source of the DWARF.
set -u
: "${USTACK:?}" "${TOP:?}"
CC=${CC:-cc}
tmp=$(mktemp -d)
srv_pid=
cleanup() { [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
export USTACK_CACHE_DIR=$tmp/cache
unset DEBUGINFOD_URLS
empty=$tmp/empty-debug-dir
mkdir -p "$empty"

$CC -O2 -g -rdynamic "$TOP/tests/integration/progs/dbgsrc_prog.c" -o "$tmp/full" ||
	{ echo "FAIL symbolize_debugsrc: cannot build"; exit 1; }
# file offset of a vaddr through the PT_LOADs (readelf as the oracle)
off_of() { readelf -lW "$1" | while read -r t o v p f rest; do
	[ "$t" = LOAD ] || continue; a=$((16#$2))
	if [ $a -ge $((v)) ] && [ $a -lt $((v + f)) ]; then printf '0x%x\n' $((a - v + o)); break; fi; done; }
FUNCS="dbgsrc_alpha dbgsrc_beta dbgsrc_gamma_local dbgsrc_delta_local"
declare -A OFF WANT
for fn in $FUNCS; do
	line=$(nm -S "$tmp/full" | awk -v f=$fn '$4==f {print $1, $2}')
	[ -n "$line" ] || { echo "FAIL symbolize_debugsrc: nm has no $fn"; exit 1; }
	addr=${line% *}; size=$((16#${line#* }))
	half=$((size / 2))
	OFF[$fn]=$(off_of "$tmp/full" "$(printf '%x' $((16#$addr + half)))")
	WANT[$fn]="$fn+0x$(printf '%x' $half)"
done
# an address inside inlined code (eu-addr2line -i: more than one function)
INL_OFF= INL_VADDR=
for a in $(objdump -d --no-show-raw-insn "$tmp/full" |
	awk '/<dbgsrc_gamma_local>:/{f=1;next} f&&/^$/{exit} f{sub(":","",$1); print $1}'); do
	if [ "$(eu-addr2line -f -i -e "$tmp/full" "0x$a" | wc -l)" -gt 2 ]; then
		INL_VADDR=0x$a INL_OFF=$(off_of "$tmp/full" "$a"); break
	fi
done
[ -n "$INL_OFF" ] || { echo "FAIL symbolize_debugsrc: no inlined code in dbgsrc_gamma_local (eu-addr2line -i)"; exit 1; }
declare -A VADDR
for fn in $FUNCS; do
	line=$(nm -S "$tmp/full" | awk -v f=$fn '$4==f {print $1, $2}')
	VADDR[$fn]=$(printf '0x%x' $((16#${line% *} + 16#${line#* } / 2)))
done
bid=$(readelf -n "$tmp/full" | sed -n 's/.*Build ID: //p')
[ -n "$bid" ] || { echo "FAIL symbolize_debugsrc: no build ID"; exit 1; }

# check NAME SOURCE EXPECT-STATIC ELF [ustack args...]: EXPECT-STATIC 1: all four
# named; 0: the exported two named and the static two not (.dynsym only)
check() {
	local name=$1 src=$2 stat=$3 elf=$4; shift 4
	local offs="" bad=0
	for fn in $FUNCS; do offs="$offs ${OFF[$fn]}"; done
	"$USTACK" symbolize -v "$@" -e "$elf" $offs >"$tmp/out" 2>"$tmp/err"
	for fn in $FUNCS; do
		local got; got=$(grep "^${OFF[$fn]} " "$tmp/out")
		case $fn in *_local) want=$stat ;; *) want=1 ;; esac
		if [ "$want" = 1 ]; then
			case "$got" in "${OFF[$fn]} ${WANT[$fn]} ("*) ;; *) bad=1; echo "# $name: $fn: got '$got', want '${WANT[$fn]}'";; esac
		else
			case "$got" in *" ?? "*) ;; *) bad=1; echo "# $name: $fn: got '$got', want ??";; esac
		fi
	done
	if ! grep -q "^symbols: $src " "$tmp/err"; then
		bad=1; echo "# $name: -v says '$(grep '^symbols:' "$tmp/err")', want '$src'"
	fi
	[ $bad = 0 ] && echo "PASS symbolize_debugsrc_$name: names as nm says, source '$src'" ||
		{ echo "FAIL symbolize_debugsrc_$name"; sed 's/^/#   /' "$tmp/err" | head -5; }
}
# lines NAME DWARF-SOURCE ELF [ustack args...]: `symbolize` of the four
# offsets and the inlined one: per offset, the "function FILE:LINE" chain
# equals eu-addr2line -f -i's on the unstripped program; -v says
# 'dwarf: DWARF-SOURCE'
lines() {
	local name=$1 src=$2 elf=$3; shift 3
	local bad=0 o v want got k
	"$USTACK" symbolize -v "$@" -e "$elf" ${OFF[dbgsrc_alpha]} ${OFF[dbgsrc_beta]} \
		${OFF[dbgsrc_gamma_local]} ${OFF[dbgsrc_delta_local]} "$INL_OFF" >"$tmp/lout" 2>"$tmp/lerr"
	for k in dbgsrc_alpha dbgsrc_beta dbgsrc_gamma_local dbgsrc_delta_local inl; do
		if [ $k = inl ]; then o=$INL_OFF v=$INL_VADDR; else o=${OFF[$k]} v=${VADDR[$k]}; fi
		want=$(eu-addr2line -f -i -e "$tmp/full" "$v" | paste - - | sed -E 's/:[0-9]+$//' | awk '{print $1, $NF}')
		got=$(grep "^$o " "$tmp/lout" | sed -E 's/^[^ ]+ ([^ +]+)(\+0x[0-9a-f]+)? \([^)]*\)( at ([^ ]+))?.*/\1 \4/')
		if [ -z "$want" ] || [ "$want" != "$got" ]; then
			bad=1; echo "# $name: $k ($o): ustack '$(echo "$got" | tr '\n' '|')', eu-addr2line '$(echo "$want" | tr '\n' '|')'"
		fi
	done
	if ! grep -q '\[inlined\]' "$tmp/lout"; then bad=1; echo "# $name: no [inlined] frame"; fi
	if ! grep -q "^dwarf: $src" "$tmp/lerr"; then
		bad=1; echo "# $name: -v says '$(grep '^dwarf:' "$tmp/lerr")', want 'dwarf: $src'"
	fi
	[ $bad = 0 ] && echo "PASS symbolize_debugsrc_${name}_lines: ' at FILE:LINE' and inline chains equal eu-addr2line -f -i, DWARF from '$src'" ||
		{ echo "FAIL symbolize_debugsrc_${name}_lines"; sed 's/^/#   /' "$tmp/lerr" | head -5; }
}
# warned NAME PATTERN: stderr of the last check has exactly one line matching
warned() {
	local n; n=$(grep -c -- "^ustack: .*$2" "$tmp/err")
	[ "$n" = 1 ] && echo "PASS symbolize_debugsrc_$1_warning: one warning line ($(grep -- "^ustack: .*$2" "$tmp/err" | head -1 | cut -c1-140))" ||
		{ echo "FAIL symbolize_debugsrc_$1_warning: $n lines match '$2'"; sed 's/^/#   /' "$tmp/err" | head -5; }
}
# a stripped copy in its own directory (debuglink names are per directory)
# snap_running OUT ERR PID ARGS...: ustack snapshot -p PID ARGS, again
# (30 s at most) until the program is in its work (dbgsrc_gamma_local on
# the stack): a snapshot taken while ld.so still runs has none of it
snap_running() {
	local out=$1 err=$2 pid=$3 end=$((SECONDS + 30)); shift 3
	while :; do
		"$USTACK" snapshot -p "$pid" "$@" >"$out" 2>"$err"
		grep -q dbgsrc_gamma_local "$out" || ! kill -0 "$pid" 2>/dev/null ||
			[ $SECONDS -ge $end ] && return
		sleep 0.05
	done
}
stripped() { mkdir -p "$(dirname "$2")"; strip --strip-all "$1" -o "$2"; }

objcopy --only-keep-debug "$tmp/full" "$tmp/p.debug"

# 1. the file itself
check self self 1 "$tmp/full" -d "$empty"
# 1b. stripped of everything: .dynsym only
stripped "$tmp/full" "$tmp/s0/p"
check dynsym dynsym 0 "$tmp/s0/p" -d "$empty"

# 2. build-ID tree of a private --debug-dir
dd=$tmp/dd; mkdir -p "$dd/.build-id/${bid:0:2}"
cp "$tmp/p.debug" "$dd/.build-id/${bid:0:2}/${bid:2}.debug"
stripped "$tmp/full" "$tmp/s1/p"
check build_id_dir "build-id dir" 1 "$tmp/s1/p" -d "$dd"
# --strip-debug keeps .symtab: the debug file still comes first (for DWARF)
mkdir -p "$tmp/s1b"; strip --strip-debug "$tmp/full" -o "$tmp/s1b/p"
check build_id_dir_strip_debug "build-id dir" 1 "$tmp/s1b/p" -d "$dd"
check strip_debug_self self 1 "$tmp/s1b/p" -d "$empty"

# 3. .gnu_debuglink: same directory, .debug/, <debug-dir>/<dir>/
for where in same dotdebug debugdir; do
	d=$tmp/l_$where; stripped "$tmp/full" "$d/p"
	(cd "$d" && cp "$tmp/p.debug" p.dbg && objcopy --add-gnu-debuglink=p.dbg p)
	case $where in
	same) args=(-d "$empty") ;;
	dotdebug) mkdir -p "$d/.debug"; mv "$d/p.dbg" "$d/.debug/"; args=(-d "$empty") ;;
	debugdir) mkdir -p "$tmp/ldd$d"; mv "$d/p.dbg" "$tmp/ldd$d/"; args=(-d "$tmp/ldd") ;;
	esac
	check "debuglink_$where" debuglink 1 "$d/p" "${args[@]}"
	lines "debuglink_$where" debuglink "$d/p" "${args[@]}"
done
# wrong CRC: the debug file changed after the link was made
d=$tmp/l_badcrc; stripped "$tmp/full" "$d/p"
(cd "$d" && cp "$tmp/p.debug" p.dbg && objcopy --add-gnu-debuglink=p.dbg p && printf 'x' >> p.dbg)
check debuglink_bad_crc dynsym 0 "$d/p" -d "$empty"
warned debuglink_bad_crc "CRC"
# the CRC is that of the GNU spec (zlib's crc32): python's zlib as the oracle
want_crc=$(python3 -c 'import zlib,sys; print("%08x" % zlib.crc32(open(sys.argv[1],"rb").read()))' "$tmp/l_same/p.dbg")
got_crc=$(objdump -s -j .gnu_debuglink "$tmp/l_same/p" | awk '/^ [0-9a-f]+ /{for(i=2;i<=5;i++) if ($i ~ /^[0-9a-f]{8}$/ || $i ~ /^[0-9a-f]+$/) h=h $i} END{print substr(h, length(h)-7)}')
got_crc=$(echo "$got_crc" | sed 's/\(..\)\(..\)\(..\)\(..\)/\4\3\2\1/')
[ "$got_crc" = "$want_crc" ] && echo "PASS symbolize_debugsrc_debuglink_crc_oracle: objcopy's CRC is zlib's crc32 ($want_crc), the one checked" ||
	echo "FAIL symbolize_debugsrc_debuglink_crc_oracle: section says $got_crc, zlib $want_crc"

# 4. MiniDebugInfo, as the GDB manual builds it
m=$tmp/mini; mkdir -p "$m"; cp "$tmp/full" "$m/p"
if command -v xz >/dev/null; then
	(cd "$m" &&
	nm -D p --format=posix --defined-only | awk '{ print $1 }' | sort > dynsyms &&
	nm p --format=posix --defined-only | awk '{ if ($2 == "T" || $2 == "t" || $2 == "D") print $1 }' | sort > funcsyms &&
	comm -13 dynsyms funcsyms > keep_symbols &&
	objcopy --only-keep-debug p debug &&
	objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep_symbols debug mini_debuginfo &&
	strip --strip-all -R .comment p &&
	xz mini_debuginfo &&
	objcopy --add-section .gnu_debugdata=mini_debuginfo.xz p) || echo "FAIL symbolize_debugsrc_minidebuginfo: cannot build"
	check minidebuginfo minidebuginfo 1 "$m/p" -d "$empty"
else
	echo "SKIP symbolize_debugsrc_minidebuginfo: xz not installed"
fi

# 5. compressed debug sections: zlib (objcopy), zstd (lib/zstd_sections.py)
zd=$tmp/zdd; mkdir -p "$zd/.build-id/${bid:0:2}"
objcopy --compress-debug-sections=zlib "$tmp/p.debug" "$zd/.build-id/${bid:0:2}/${bid:2}.debug"
if readelf -SW "$zd/.build-id/${bid:0:2}/${bid:2}.debug" 2>/dev/null | grep -q ' \.debug_info .* C '; then
	check zlib "build-id dir" 1 "$tmp/s1/p" -d "$zd"
	lines zlib "build-id dir" "$tmp/s1/p" -d "$zd"
else
	echo "FAIL symbolize_debugsrc_zlib: objcopy did not compress"
fi
if command -v zstd >/dev/null; then
	zs=$tmp/zsdd; mkdir -p "$zs/.build-id/${bid:0:2}"
	python3 "$TOP/tests/integration/lib/zstd_sections.py" "$tmp/p.debug" "$zs/.build-id/${bid:0:2}/${bid:2}.debug" 2>/dev/null
	check zstd "build-id dir" 1 "$tmp/s1/p" -d "$zs"
	lines zstd "build-id dir" "$tmp/s1/p" -d "$zs"
	# -v names the debug file found, not the decompressed copy read
	zfile=$zs/.build-id/${bid:0:2}/${bid:2}.debug
	if grep -qx "symbols: build-id dir $zfile" "$tmp/err" && grep -qx "dwarf: build-id dir $zfile" "$tmp/lerr"; then
		echo "PASS symbolize_debugsrc_zstd_name: -v names the original debug file, not the cache copy"
	else
		echo "FAIL symbolize_debugsrc_zstd_name: -v says '$(grep -h '^symbols:\|^dwarf:' "$tmp/err" "$tmp/lerr" | tr '\n' '|')', want $zfile"
	fi
	# the copy handed to DWARF readers: sections no longer compressed, and
	# elfutils (which cannot read zstd sections) finds the functions in it
	copy=$USTACK_CACHE_DIR/debug/$bid.zstd-dec
	if [ -f "$copy" ] && ! readelf -SW "$copy" 2>/dev/null | grep -q ' \.debug_info .* C ' &&
	   eu-readelf --debug-dump=info "$copy" 2>/dev/null | grep -q dbgsrc_gamma_local; then
		echo "PASS symbolize_debugsrc_zstd_copy: decompressed copy $(basename "$copy") readable by eu-readelf"
	else
		echo "FAIL symbolize_debugsrc_zstd_copy: '$copy'"
	fi
else
	echo "SKIP symbolize_debugsrc_zstd: zstd CLI not installed"
fi

# 6. corrupt inputs: warnings, .dynsym names kept, no crash
cd_=$tmp/cdd; mkdir -p "$cd_/.build-id/${bid:0:2}"
head -c 3000 "$tmp/p.debug" > "$cd_/.build-id/${bid:0:2}/${bid:2}.debug"
check truncated_debug dynsym 0 "$tmp/s1/p" -d "$cd_"
grep -q "${bid:2}.debug" "$tmp/err" && echo "PASS symbolize_debugsrc_truncated_debug_warning: names the file" ||
	{ echo "FAIL symbolize_debugsrc_truncated_debug_warning"; sed 's/^/#   /' "$tmp/err"; }
g=$tmp/garbage; stripped "$tmp/full" "$g/p"
head -c 4096 /dev/urandom > "$tmp/junk"; printf '\3757zXZ\0junk' | cat - "$tmp/junk" > "$tmp/junk.xz"
objcopy --add-section .gnu_debugdata="$tmp/junk.xz" "$g/p"
check garbage_debugdata dynsym 0 "$g/p" -d "$empty"
warned garbage_debugdata "gnu_debugdata"
b=$tmp/badlink; stripped "$tmp/full" "$b/p"
head -c 64 /dev/urandom | tr -d '\0' > "$tmp/nolink"
objcopy --add-section .gnu_debuglink="$tmp/nolink" "$b/p"
check bad_debuglink dynsym 0 "$b/p" -d "$empty"
warned bad_debuglink "gnu_debuglink"

# 6b. report --stats names the source per file id (a recorded trace of the
# debuglink-stripped program; needs what `ustack record` needs)
if timeout 60 "$USTACK" record -o "$tmp/t.data" -- "$tmp/l_same/p" 40000 >/dev/null 2>"$tmp/rec.err" &&
   "$USTACK" report --stats -i "$tmp/t.data" >"$tmp/stats" 2>/dev/null &&
   ! grep -q '^events: 0$' "$tmp/stats"; then
	if grep -q "^symbols: file [0-9]* $tmp/l_same/p: debuglink ($tmp/l_same/p.dbg)$" "$tmp/stats" &&
	   grep -q "^dwarf: file [0-9]* $tmp/l_same/p: debuglink ($tmp/l_same/p.dbg)$" "$tmp/stats" &&
	   "$USTACK" report -i "$tmp/t.data" 2>/dev/null | grep -q dbgsrc_gamma_local; then
		echo "PASS symbolize_debugsrc_report_stats: --stats says debuglink for the program's symbols and DWARF, the report names its static functions"
	else
		echo "FAIL symbolize_debugsrc_report_stats"; grep '^symbols\|^dwarf' "$tmp/stats" | sed 's/^/#   /'
	fi
else
	echo "SKIP symbolize_debugsrc_report_stats: ustack record gave no events ($(tail -1 "$tmp/rec.err" | cut -c1-100))"
fi

# 6c. snapshot --stats names the source per file too (symbols and DWARF)
"$tmp/l_same/p" 2000000 >/dev/null &
spid=$!
snap_running "$tmp/snap.out" "$tmp/snap.err" $spid --stats --lines
kill $spid 2>/dev/null; wait $spid 2>/dev/null
if grep -qx "symbols: $tmp/l_same/p: debuglink ($tmp/l_same/p.dbg)" "$tmp/snap.err" &&
   grep -qx "dwarf: $tmp/l_same/p: debuglink ($tmp/l_same/p.dbg)" "$tmp/snap.err" &&
   grep -q 'dbgsrc_gamma_local+0x.* at .*dbgsrc_prog.c:[0-9]*$' "$tmp/snap.out"; then
	echo "PASS symbolize_debugsrc_snapshot_stats: snapshot --stats says debuglink for the program's symbols and DWARF"
else
	echo "FAIL symbolize_debugsrc_snapshot_stats: $(grep -h '^symbols\|^dwarf\|ustack' "$tmp/snap.err" | head -6 | tr '\n' '|')"
fi

# 7. debuginfod (elfutils' own server) over a directory holding the debug file
if ! command -v debuginfod >/dev/null; then
	echo "SKIP symbolize_debugsrc_debuginfod: debuginfod (Debian package debuginfod) not installed"
	exit 0
fi
srvdir=$tmp/srv; mkdir -p "$srvdir"; cp "$tmp/p.debug" "$srvdir/"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
debuginfod -p "$port" -F -d "$tmp/srv.sqlite" -t 1 "$srvdir" >"$tmp/srv.log" 2>&1 &
srv_pid=$!
url=http://127.0.0.1:$port
ready=0
for _ in $(seq 1 100); do
	if python3 -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
		"$url/buildid/$bid/debuginfo" 2>/dev/null; then ready=1; break; fi
	sleep 0.2
done
if [ $ready = 0 ]; then
	echo "SKIP symbolize_debugsrc_debuginfod: server did not serve $bid within 20 s ($(tail -1 "$tmp/srv.log"))"
	exit 0
fi
stripped "$tmp/full" "$tmp/s2/p"
DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$tmp/dcache1 check debuginfod debuginfod 1 "$tmp/s2/p" -d "$empty"
# the download is announced on stderr while it runs
if grep -q "^ustack: debuginfod: downloading debug info of $bid ([0-9]* bytes)$" "$tmp/err"; then
	echo "PASS symbolize_debugsrc_debuginfod_progress: $(grep '^ustack: debuginfod' "$tmp/err" | head -1)"
else
	echo "FAIL symbolize_debugsrc_debuginfod_progress: no progress line: $(head -3 "$tmp/err" | tr '\n' '|')"
fi
DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$tmp/dcache1 lines debuginfod debuginfod "$tmp/s2/p" -d "$empty"
# MiniDebugInfo (Fedora's default) with the full debug file on the server:
# names from .gnu_debugdata, DWARF from debuginfod (an empty cache: the
# download happens here)
if [ -f "$m/p" ] && readelf -SW "$m/p" | grep -q gnu_debugdata; then
	DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$tmp/dcache4 check minidebuginfo_debuginfod minidebuginfo 1 "$m/p" -d "$empty"
	DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$tmp/dcache4 lines minidebuginfo_debuginfod debuginfod "$m/p" -d "$empty"
	# snapshot too: names from .gnu_debugdata, lines from the server, and
	# --stats says so
	"$m/p" 2000000 >/dev/null &
	spid=$!
	DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$tmp/dcache6 snap_running "$tmp/snap.out" "$tmp/snap.err" \
		$spid --stats --lines --debug-dir "$empty"
	kill $spid 2>/dev/null; wait $spid 2>/dev/null
	if grep -qx "symbols: $m/p: minidebuginfo ($m/p:.gnu_debugdata)" "$tmp/snap.err" &&
	   grep -q "^dwarf: $m/p: debuginfod ($tmp/dcache6/$bid/debuginfo)$" "$tmp/snap.err" &&
	   grep -q 'dbgsrc_gamma_local+0x.* at .*dbgsrc_prog.c:[0-9]*$' "$tmp/snap.out"; then
		echo "PASS symbolize_debugsrc_minidebuginfo_debuginfod_snapshot: snapshot --lines: names from MiniDebugInfo, lines from debuginfod, --stats says both"
	else
		echo "FAIL symbolize_debugsrc_minidebuginfo_debuginfod_snapshot: $(head -c 600 "$tmp/snap.err" | tr '\n' '|') $(grep gamma "$tmp/snap.out" | head -1)"
	fi
	# without the server's DWARF, the names alone, no lines
	"$USTACK" symbolize -v -d "$empty" -e "$m/p" "$INL_OFF" >"$tmp/lout" 2>"$tmp/lerr"
	if grep -q ' at ' "$tmp/lout" || ! grep -qx 'dwarf: none' "$tmp/lerr"; then
		echo "FAIL symbolize_debugsrc_minidebuginfo_nolines: $(cat "$tmp/lout" "$tmp/lerr" | tr '\n' '|')"
	else
		echo "PASS symbolize_debugsrc_minidebuginfo_nolines: no DEBUGINFOD_URLS: names only, 'dwarf: none'"
	fi
	# .symtab alone (strip --strip-debug), DWARF from the server
	mkdir -p "$tmp/s3"; strip --strip-debug "$tmp/full" -o "$tmp/s3/p"
	DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$tmp/dcache5 lines symtab_debuginfod debuginfod "$tmp/s3/p" -d "$empty"
else
	echo "SKIP symbolize_debugsrc_minidebuginfo_debuginfod: no MiniDebugInfo binary (xz missing?)"
fi
kill "$srv_pid"; wait "$srv_pid" 2>/dev/null; srv_pid=
# The bounds below are on the time a server costs: a run's time minus that
# of the same command without DEBUGINFOD_URLS, measured just before (on a
# loaded machine both take longer; the wait for a server does not). The
# bounds are those of the whole run before (8000 and 6000 ms) less 500 ms,
# about what the command takes on an idle machine.
base_ms() {
	local offs="" fn t0
	for fn in $FUNCS; do offs="$offs ${OFF[$fn]}"; done
	t0=$(date +%s%N)
	env -u DEBUGINFOD_URLS "$USTACK" symbolize -v -d "$empty" -e "$tmp/s2/p" $offs >/dev/null 2>&1
	echo $((($(date +%s%N) - t0) / 1000000))
}
base=$(base_ms)
t0=$(date +%s%N)
DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$tmp/dcache2 DEBUGINFOD_TIMEOUT=5 check debuginfod_down dynsym 0 "$tmp/s2/p" -d "$empty"
ms=$((($(date +%s%N) - t0) / 1000000))
warned debuginfod_down "debuginfod"
[ $((ms - base)) -lt 7500 ] && echo "PASS symbolize_debugsrc_debuginfod_down_bounded: ended in $ms ms, $((ms - base)) ms more than without a server (bound 7500)" ||
	echo "FAIL symbolize_debugsrc_debuginfod_down_bounded: $ms ms, $((ms - base)) ms more than without a server ($base ms; bound 7500)"
# a server that accepts connections and never answers: the wait is bounded
# by DEBUGINFOD_TIMEOUT, not by the library's 90 s default
python3 -c 'import socket,sys,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1",int(sys.argv[1]))); s.listen(8); print("ok", flush=True)
c=[]
while True: c.append(s.accept()); time.sleep(0.1)' "$port" >"$tmp/mute.log" 2>&1 &
srv_pid=$!
for _ in $(seq 1 300); do grep -q ok "$tmp/mute.log" && break; sleep 0.1; done
base=$(base_ms)
t0=$(date +%s%N)
DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$tmp/dcache3 DEBUGINFOD_TIMEOUT=2 check debuginfod_mute dynsym 0 "$tmp/s2/p" -d "$empty"
ms=$((($(date +%s%N) - t0) / 1000000))
warned debuginfod_mute "debuginfod: http"
[ $((ms - base)) -lt 5500 ] && echo "PASS symbolize_debugsrc_debuginfod_mute_bounded: a silent server cost $((ms - base)) ms ($ms ms, $base without a server; DEBUGINFOD_TIMEOUT=2, bound 5500)" ||
	echo "FAIL symbolize_debugsrc_debuginfod_mute_bounded: a silent server cost $((ms - base)) ms ($ms ms, $base without a server; DEBUGINFOD_TIMEOUT=2, bound 5500)"
