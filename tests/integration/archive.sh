#!/usr/bin/env bash
# ustack archive + report on "another host": a program with two shared
# libraries built here is recorded (USTACK_CACHE_DIR in a temp dir), then
#   archive_tar        `tar tf` lists the members, all of the build-ID
#                      cache forms; each elf-<sha256> member's bytes (tar
#                      -xOf) hash to its name (sha256sum), the libraries'
#                      among them
#   archive_clean_*    in a clean environment (another HOME, another
#                      USTACK_CACHE_DIR, the program and libraries moved
#                      away, no perf cache) report with the archive beside
#                      the trace prints byte-identical text and folded
#                      output, and pprof that `go tool pprof -raw` (else
#                      the gunzipped bytes) reads identically
#   archive_needed     without the archive the same report names fewer
#                      frames of the libraries (the archive is what names them)
#   archive_stats      report --stats says the archive was used
#   archive_tampered   one byte flipped inside the first library's
#                      elf-<sha256> member: a warning naming the member's
#                      offset, and that library's frames stay unnamed
set -u
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
cd "$TOP" || exit 1
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }
tmp=$(mktemp -d /tmp/ustack-archive-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/app" "$tmp/h1" "$tmp/h2"
cat >"$tmp/a.c" <<'C'
#include <stdint.h>
volatile uint64_t sink_a;
__attribute__((noinline)) void liba_spin(long n) { for (long i = 0; i < n; i++) sink_a += i * 3; }
void liba_work(long n) { liba_spin(n); sink_a++; }
C
cat >"$tmp/b.c" <<'C'
#include <stdint.h>
volatile uint64_t sink_b;
__attribute__((noinline)) void libb_spin(long n) { for (long i = 0; i < n; i++) sink_b ^= i * 5; }
void libb_work(long n) { libb_spin(n); sink_b++; }
C
cat >"$tmp/main.c" <<'C'
#include <time.h>
void liba_work(long n);
void libb_work(long n);
int main(void)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		liba_work(200000);
		libb_work(200000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 800000000L);
	return 0;
}
C
for l in a b; do
	$CC -g -O1 -fPIC -shared -Wl,--build-id -o "$tmp/app/libarch_$l.so" "$tmp/$l.c" || { fail archive "cc lib$l"; exit 0; }
done
$CC -g -O1 -Wl,--build-id -o "$tmp/app/prog" "$tmp/main.c" -L"$tmp/app" -larch_a -larch_b \
	-Wl,-rpath,"$tmp/app" || { fail archive "cc prog"; exit 0; }

export HOME=$tmp/h1 USTACK_CACHE_DIR=$tmp/c1
if ! "$USTACK" record -q -F 499 -o "$tmp/t.data" -- "$tmp/app/prog" >"$tmp/rec.out" 2>"$tmp/rec.err"; then
	if grep -qiE 'permission|not permitted|paranoid' "$tmp/rec.err"; then
		skip archive "record needs root or perf_event_paranoid <= 1: $(head -n1 "$tmp/rec.err")"
	else
		fail archive "record: $(head -n3 "$tmp/rec.err")"
	fi
	exit 0
fi
# the reports of the recording host, before any archive exists
report() { # dir-of-trace outname args...
	local d=$1 o=$2; shift 2
	"$USTACK" report -q "$@" "$d/t.data" >"$tmp/$o" 2>"$tmp/$o.err"
}
# one path for the trace on both "hosts": pprof's comment names it
mkdir -p "$tmp/rec"
cp "$tmp/t.data" "$tmp/rec/t.data"
report "$tmp/rec" here.text -f text
report "$tmp/rec" here.folded -f folded
report "$tmp/rec" here.pb.gz -f pprof
if ! grep -q liba_spin "$tmp/here.folded" || ! grep -q libb_spin "$tmp/here.folded"; then
	fail archive "the recording host's own report does not name both libraries: $(head -n3 "$tmp/here.folded")"
	exit 0
fi

"$USTACK" archive "$tmp/rec/t.data" -o "$tmp/t.archive" >"$tmp/arch.out" 2>"$tmp/arch.err" ||
	{ fail archive "ustack archive: $(cat "$tmp/arch.err")"; exit 0; }
A=$tmp/t.archive

# ---- archive_tar: the format, read by tar ------------------------------------
why=
tar tf "$A" >"$tmp/members" 2>"$tmp/tar.err" || why="tar tf: $(head -n1 "$tmp/tar.err")"
re='^(\.build-id/[0-9a-f]{2}/[0-9a-f]+/(elf|debug)(-[0-9a-f]{64})?|\.content-id/[0-9a-f]{2}/[0-9a-f]{62}/elf)$'
[ -z "$why" ] && bad=$(grep -vE "$re" "$tmp/members" | head -n1) && [ -n "$bad" ] && why="member '$bad' not of the cache's forms"
n_elf=0
for lib in libarch_a.so libarch_b.so prog; do
	sha=$(sha256sum <"$tmp/app/$lib" | cut -d' ' -f1)
	bid=$(readelf -n "$tmp/app/$lib" | sed -n 's/.*Build ID: //p')
	m=".build-id/${bid:0:2}/${bid:2}/elf-$sha"
	grep -qxF "$m" "$tmp/members" || { why="${why:-no member $m for $lib}"; continue; }
	got=$(tar -xOf "$A" "$m" | sha256sum | cut -d' ' -f1)
	[ "$got" = "$sha" ] || why="${why:-$m holds bytes hashing to $got}"
	n_elf=$((n_elf + 1))
done
files=$(sed -n 's/.*: \([0-9]*\) files.*/\1/p' "$tmp/arch.out")
[ -z "$why" ] && [ "$files" != "$(wc -l <"$tmp/members")" ] && why="ustack archive says '$(cat "$tmp/arch.out")', tar lists $(wc -l <"$tmp/members")"
if [ -z "$why" ]; then pass archive_tar; else fail archive_tar "$why"; fi

# ---- the other host ------------------------------------------------------------
mv "$tmp/app" "$tmp/app.gone"
export HOME=$tmp/h2 USTACK_CACHE_DIR=$tmp/c2
unset PERF_BUILDID_DIR DEBUGINFOD_URLS
cp "$A" "$tmp/rec/t.data.archive"
report "$tmp/rec" there.text -f text
report "$tmp/rec" there.folded -f folded
report "$tmp/rec" there.pb.gz -f pprof
"$USTACK" report --stats "$tmp/rec/t.data" >"$tmp/stats" 2>&1
for f in text folded; do
	if cmp -s "$tmp/here.$f" "$tmp/there.$f"; then
		pass "archive_clean_$f"
	else
		fail "archive_clean_$f" "differs: $(diff "$tmp/here.$f" "$tmp/there.$f" | head -n6 | tr '\n' '|')"
	fi
done
if command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1; then
	go tool pprof -raw "$tmp/here.pb.gz" >"$tmp/here.raw" 2>/dev/null
	go tool pprof -raw "$tmp/there.pb.gz" >"$tmp/there.raw" 2>/dev/null
	how="go tool pprof -raw"
else
	zcat "$tmp/here.pb.gz" >"$tmp/here.raw"; zcat "$tmp/there.pb.gz" >"$tmp/there.raw"
	how="gunzipped bytes"
fi
if [ -s "$tmp/here.raw" ] && cmp -s "$tmp/here.raw" "$tmp/there.raw"; then
	pass archive_clean_pprof
else
	fail archive_clean_pprof "$how differ (or empty): $(diff "$tmp/here.raw" "$tmp/there.raw" | head -n4 | tr '\n' '|')"
fi

named() { grep -oE 'lib[ab]_(spin|work)' "$1" | wc -l; }
rm "$tmp/rec/t.data.archive"
report "$tmp/rec" bare.folded -f folded
n_here=$(named "$tmp/here.folded") n_bare=$(named "$tmp/bare.folded")
if [ "$n_bare" -lt "$n_here" ]; then
	pass archive_needed
else
	fail archive_needed "without the archive $n_bare library frames named, with it $n_here"
fi

if grep -qE "^archive: $tmp/rec/t.data.archive \([0-9]+ files" "$tmp/stats"; then
	pass archive_stats
else
	fail archive_stats "no archive line: $(grep -E '^(archive|symbols)' "$tmp/stats" | head -n3 | tr '\n' '|')"
fi

# ---- archive_tampered ------------------------------------------------------------
bid=$(readelf -n "$tmp/app.gone/libarch_a.so" | sed -n 's/.*Build ID: //p')
read -r hoff doff < <(python3 - "$A" "$bid" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    for m in t.getmembers():
        if m.name.startswith(".build-id/%s/%s/elf-" % (sys.argv[2][:2], sys.argv[2][2:])):
            print(m.offset, m.offset_data); break
PY
)
mkdir -p "$tmp/tamp"
cp "$tmp/rec/t.data" "$tmp/tamp/t.data"
cp "$A" "$tmp/tamp/bad.archive"
printf '\x5a' | dd of="$tmp/tamp/bad.archive" bs=1 seek=$((doff + 1000)) conv=notrunc status=none
export USTACK_CACHE_DIR=$tmp/c3
"$USTACK" report -q -f folded --archive "$tmp/tamp/bad.archive" "$tmp/tamp/t.data" >"$tmp/tamp.folded" 2>"$tmp/tamp.err"
why=
grep -q "bad.archive: offset $hoff: member '.build-id/${bid:0:2}/${bid:2}/elf-" "$tmp/tamp.err" ||
	why="no warning naming offset $hoff: $(head -n2 "$tmp/tamp.err" | tr '\n' '|')"
grep -q 'liba_' "$tmp/tamp.folded" && why="${why:-the tampered library's frames are named}"
grep -q 'libb_' "$tmp/tamp.folded" || why="${why:-the untouched library's frames are not named}"
if [ -z "$why" ]; then pass archive_tampered; else fail archive_tampered "$why"; fi
exit 0
