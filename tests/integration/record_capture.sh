#!/usr/bin/env bash
# `ustack record` captures the files its stacks ran through, by content,
# into the build-ID cache (USTACK_CACHE_DIR, a fresh directory per case),
# and writes a FILE_CONTENT record per file. A program built here spins in
# its own code (so its file and libc are in the stacks); for each backend
# (copy, bpf; bpf SKIPs with the recorder's reason where it cannot load):
#
#   hash/B      the FILE_CONTENT hash and size of the program's file id are
#               sha256sum's and stat's of the binary (oracle: coreutils);
#               libc's are those of the libc path the trace names
#   cache/B     <cache>/.build-id/xx/rest/elf-<sha256> and .../elf are
#               byte-identical to the binary (cmp), xx/rest its build ID
#               as readelf -n prints it; libc's entry likewise
#   deleted/B   the program unlinks itself first thing (run from a copy):
#               still captured, with the hash of the copy
#   off/B       -N: no FILE_CONTENT, no .build-id in the cache
#   too-big/B   --capture-max-size 1K: every file TOO_BIG with the right
#               hash, nothing stored
#   stats/B     record --stats counts what was stored
#
# Env (from make check): USTACK CC TOP; KEEP_TMP=1 keeps the files.
set -u
T=record_capture
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
fails=0
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $T/$1: $2"; }

[ -x "$USTACK" ] || { fail setup "no $USTACK"; exit 1; }
if [ "$(id -u)" -ne 0 ]; then
	# /proc/PID/map_files needs CAP_SYS_ADMIN: without it nothing is captured
	skip all "needs root (the capture reads /proc/PID/map_files)"
	exit 0
fi
tmp=$(mktemp -d)
cleanup() { [ "${KEEP_TMP:-0}" = 1 ] && echo "# kept $tmp" || rm -rf "$tmp"; }
trap cleanup EXIT

cat >"$tmp/spin.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
volatile unsigned long sink;
__attribute__((noinline)) static void spin(void)
{
	for (unsigned long i = 0; i < 150000000ul; i++)
		sink += i;
}
int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "unlink") && unlink(argv[0]))
		return 3;
	spin();
	return 0;
}
EOF
"$CC" -O1 -g -o "$tmp/spin" "$tmp/spin.c" || { fail setup "cannot build the program"; exit 1; }

bpf_skip=
if ! "$USTACK" record -q -N --backend bpf -o "$tmp/probe.data" -- true >/dev/null 2>"$tmp/probe.err"; then
	bpf_skip=$(grep -m1 . "$tmp/probe.err")
	bpf_skip=${bpf_skip:-record --backend bpf failed without a reason}
fi

build_id() { readelf -n "$1" | awk '/Build ID:/ { print $3; exit }'; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

# content_of FILE.stats PATH -> "sha256 size flags..." of the file whose trace path is PATH
content_of() {
	awk -v p="$2" 'index($0, "content: file ") == 1 {
		line = $0; sub(/^content: file [0-9]+ /, "", line)
		k = index(line, ": sha256:"); if (k == 0) next
		if (substr(line, 1, k - 1) != p) next
		rest = substr(line, k + 9); n = split(rest, w, " ")
		out = w[1] " " substr(w[2], 6); for (i = 3; i <= n; i++) out = out " " w[i]
		print out; exit }' "$1"
}

# record B NAME CACHE [ARGS...] -- CMD: trace in $tmp/NAME.data, report --stats in NAME.stats
record() {
	local b=$1 name=$2 cache=$3
	shift 3
	USTACK_CACHE_DIR=$cache "$USTACK" record -q --backend "$b" -o "$tmp/$name.data" "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" &&
		"$USTACK" report --stats -i "$tmp/$name.data" >"$tmp/$name.stats" 2>>"$tmp/$name.err"
}

libc_path=
check_hash() { # tag stats binary-path trace-path
	local got want
	got=$(content_of "$2" "$4")
	want="$(sha "$3") $(stat -c %s "$3")"
	case "$got" in
	"$want cached"*) return 0 ;;
	*) fail "$1" "$4: FILE_CONTENT '${got:-none}', want '$want cached'"; return 1 ;;
	esac
}

check_entry() { # tag cache file
	local bid h d
	bid=$(build_id "$3")
	h=$(sha "$3")
	d="$2/.build-id/${bid:0:2}/${bid:2}"
	if [ -z "$bid" ]; then
		fail "$1" "$3: readelf -n shows no build ID"
		return 1
	fi
	if ! cmp -s "$3" "$d/elf-$h"; then
		fail "$1" "$d/elf-$h: missing or not the file ($3)"
		return 1
	fi
	if ! cmp -s "$3" "$d/elf"; then
		fail "$1" "$d/elf: missing or not the file ($3)"
		return 1
	fi
}

for b in copy bpf; do
	if [ "$b" = bpf ] && [ -n "$bpf_skip" ]; then
		for c in hash cache deleted off too-big stats; do skip "$c/$b" "$bpf_skip"; done
		continue
	fi
	cache=$tmp/cache-$b
	if ! record "$b" "main-$b" "$cache" --stats -- "$tmp/spin"; then
		fail "hash/$b" "record failed: $(head -3 "$tmp/main-$b.err" | tr '\n' '|')"
		continue
	fi
	st=$tmp/main-$b.stats
	libc_path=$(grep -o '^content: file [0-9]* [^:]*libc\.so\.6:' "$st" | sed 's/^content: file [0-9]* //; s/:$//' | head -1)
	ok=1
	check_hash "hash/$b" "$st" "$tmp/spin" "$tmp/spin" || ok=0
	if [ -z "$libc_path" ] || [ ! -f "$libc_path" ]; then
		fail "hash/$b" "no FILE_CONTENT for libc ($(grep '^content' "$st" | tr '\n' '|'))"
		ok=0
	else
		check_hash "hash/$b" "$st" "$libc_path" "$libc_path" || ok=0
	fi
	[ $ok = 1 ] && pass "hash/$b"

	ok=1
	check_entry "cache/$b" "$cache" "$tmp/spin" || ok=0
	[ -n "$libc_path" ] && { check_entry "cache/$b" "$cache" "$libc_path" || ok=0; }
	[ $ok = 1 ] && pass "cache/$b"

	# --stats: what this recording stored, by the same counts as the cache
	new=$(awk '$1 == "stat" && $2 == "capture_new" { print $3 }' "$tmp/main-$b.err")
	nfiles=$(find "$cache/.build-id" -name 'elf-*' -type f | wc -l)
	ncontent=$(grep -c '^content: file ' "$st")
	if [ "${new:-x}" = "$nfiles" ] && [ "$ncontent" = "$nfiles" ]; then
		pass "stats/$b"
	else
		fail "stats/$b" "capture_new '${new:-none}', $nfiles elf-* entries, $ncontent FILE_CONTENT records"
	fi

	# a program gone from the file system while it runs: its own mapping is read
	cp "$tmp/spin" "$tmp/gone-$b"
	want=$(sha "$tmp/spin")
	if ! record "$b" "gone-$b" "$tmp/cache-gone-$b" -- "$tmp/gone-$b" unlink; then
		fail "deleted/$b" "record failed: $(head -3 "$tmp/gone-$b.err" | tr '\n' '|')"
	elif [ -e "$tmp/gone-$b" ]; then
		fail "deleted/$b" "the program did not unlink itself"
	else
		got=$(content_of "$tmp/gone-$b.stats" "$tmp/gone-$b")
		bid=$(build_id "$tmp/spin")
		if [ "${got%% *}" = "$want" ] &&
			cmp -s "$tmp/spin" "$tmp/cache-gone-$b/.build-id/${bid:0:2}/${bid:2}/elf-$want"; then
			pass "deleted/$b"
		else
			fail "deleted/$b" "FILE_CONTENT '${got:-none}', want $want and the cache entry"
		fi
	fi

	# -N: nothing captured, nothing stored
	if ! record "$b" "off-$b" "$tmp/cache-off-$b" -N -- "$tmp/spin"; then
		fail "off/$b" "record failed: $(head -3 "$tmp/off-$b.err" | tr '\n' '|')"
	elif grep -q '^file contents: 0$' "$tmp/off-$b.stats" && [ ! -e "$tmp/cache-off-$b/.build-id" ]; then
		pass "off/$b"
	else
		fail "off/$b" "$(grep '^file contents' "$tmp/off-$b.stats"), $(ls -d "$tmp/cache-off-$b/.build-id" 2>&1)"
	fi

	# a limit below every file: hashed only
	if ! record "$b" "big-$b" "$tmp/cache-big-$b" --capture-max-size 1K -- "$tmp/spin"; then
		fail "too-big/$b" "record failed: $(head -3 "$tmp/big-$b.err" | tr '\n' '|')"
	else
		got=$(content_of "$tmp/big-$b.stats" "$tmp/spin")
		n=$(grep -c '^content: file ' "$tmp/big-$b.stats")
		nbig=$(grep -c '^content: file .* too-big$' "$tmp/big-$b.stats")
		stored=$(find "$tmp/cache-big-$b" -path '*/.build-id/*' -type f 2>/dev/null | wc -l)
		if [ "$got" = "$(sha "$tmp/spin") $(stat -c %s "$tmp/spin") too-big" ] &&
			[ "$n" -ge 2 ] && [ "$n" = "$nbig" ] && [ "$stored" = 0 ]; then
			pass "too-big/$b"
		else
			fail "too-big/$b" "program '${got:-none}', $nbig of $n too-big, $stored files stored"
		fi
	fi
done

exit $((fails > 0))
