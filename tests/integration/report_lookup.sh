#!/usr/bin/env bash
# Where report finds a recorded file (docs/cli/report.md, "Where files are
# found"): a program is recorded, then replaced at its path by another build
# of itself whose functions have other names (another build ID). The names
# of the original are nm's of the original binary, saved aside.
#   report_lookup_path_refused  no copy anywhere: none of the original's
#                               names, none of the other build's, and
#                               --stats says "refused: ... (path): build ID
#                               differs" for the program
#   report_lookup_ustack_cache  the original planted in ustack's build-ID
#                               cache (USTACK_CACHE_DIR) as
#                               .build-id/xx/rest/elf-<sha256sum> (and elf,
#                               the same inode, as the recorder writes
#                               both): the original's names, --stats
#                               "image: ... ustack cache (that entry)"
#   report_lookup_no_cache      the same with --no-buildid-cache: no names
#   report_lookup_buildid_dir   the entry in a directory given with
#                               --buildid-dir (ustack's cache empty): names,
#                               "image: ... buildid-dir DIR (...)"
#   report_lookup_symfs         --symfs DIR, the original at DIR/<its path>:
#                               names, "image: ... symfs (DIR/<path>)"
#   report_lookup_flamegraph    flamegraph --symfs DIR: the SVG holds them
#   report_lookup_content       (traces with FILE_CONTENT records, which the
#                               recorder writes since format 1.2) the
#                               original with one byte of .comment changed
#                               at the path: same build ID, other bytes:
#                               no names, "refused: ... (path): content
#                               differs"; and the recorder's own cache
#                               (USTACK_CACHE_DIR as recorded) names them
# Each report runs with its own empty HOME (no perf cache) and a
# USTACK_CACHE_DIR of its own, so that what the recorder may have cached
# itself does not answer for the planted entries.
set -u
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
T=report_lookup
tmp=$(mktemp -d /tmp/ustack-lookup-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass() { echo "PASS ${T}_$1: $2"; }
fail() { echo "FAIL ${T}_$1: $2"; }
skip() { echo "SKIP ${T}_$1: $2"; }

cat >"$tmp/prog.c" <<'EOF'
#include <stdlib.h>
#include <time.h>
#define CAT(a, b) a##_##b
#define P2(a, b) CAT(a, b)
#define N(x) P2(PFX, x)
volatile unsigned long sink;
__attribute__((noinline)) void N(leaf)(void) { for (int i = 0; i < 20000; i++) sink += i; }
__attribute__((noinline)) void N(middle)(void) { for (int i = 0; i < 4; i++) N(leaf)(); sink++; }
__attribute__((noinline)) void N(outer)(void) { N(middle)(); sink++; }
int main(int argc, char **argv)
{
	struct timespec t0, t;
	double secs = argc > 1 ? atof(argv[1]) : 1.5;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		N(outer)();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
EOF
mkdir -p "$tmp/bin"
if ! $CC -O1 -g -fno-omit-frame-pointer -Wl,--build-id -DPFX=lkorig -o "$tmp/orig" "$tmp/prog.c" 2>"$tmp/cc.err" ||
   ! $CC -O1 -g -fno-omit-frame-pointer -Wl,--build-id -DPFX=lkother -o "$tmp/other" "$tmp/prog.c" 2>>"$tmp/cc.err"; then
	fail build "$(head -3 "$tmp/cc.err" | tr '\n' ' ')"
	exit 1
fi
cp "$tmp/orig" "$tmp/bin/prog"
# the oracle: the original's functions as nm lists them
names=$(nm "$tmp/orig" | awk '$2 ~ /^[Tt]$/ && $3 ~ /^lkorig_/ { print $3 }' | sort)
if [ "$(echo "$names" | wc -l)" != 3 ]; then
	fail build "nm lists '$names' for the original, want three lkorig_ functions"
	exit 1
fi

mkdir -p "$tmp/rcache" "$tmp/home"
if ! USTACK_CACHE_DIR=$tmp/rcache "$USTACK" record -F 499 -q -o "$tmp/t.data" -- "$tmp/bin/prog" 1.5 \
	>"$tmp/rec.out" 2>"$tmp/rec.err"; then
	if grep -qiE 'permi|access|not supported|perf_event' "$tmp/rec.err"; then
		skip all "perf events unavailable: $(head -n1 "$tmp/rec.err")"
		exit 0
	fi
	fail record "$(head -n3 "$tmp/rec.err" | tr '\n' ' ')"
	exit 1
fi
# the other build where the original was
cp "$tmp/other" "$tmp/bin/prog.new" && mv "$tmp/bin/prog.new" "$tmp/bin/prog"

bid=$(readelf -n "$tmp/orig" | awk '/Build ID:/ { print $3 }')
sha=$(sha256sum "$tmp/orig" | awk '{ print $1 }')
plant() { # ROOT: the original as ROOT/.build-id/xx/rest/{elf-SHA,elf}
	local d=$1/.build-id/${bid:0:2}/${bid:2}
	mkdir -p "$d" && chmod 700 "$1" && cp "$tmp/orig" "$d/elf-$sha" && ln -f "$d/elf-$sha" "$d/elf"
}
plant "$tmp/planted"
plant "$tmp/given"
mkdir -p "$tmp/empty" "$tmp/symfs$(dirname "$tmp/bin/prog")"
cp "$tmp/orig" "$tmp/symfs$tmp/bin/prog"

report() { # NAME CACHE_DIR ARGS...: folded output in $tmp/NAME.folded, stats in $tmp/NAME.stats
	local n=$1 c=$2
	shift 2
	HOME=$tmp/home USTACK_CACHE_DIR=$c PERF_BUILDID_DIR= "$USTACK" report -i "$tmp/t.data" \
		--format folded "$@" >"$tmp/$n.folded" 2>"$tmp/$n.err" &&
	HOME=$tmp/home USTACK_CACHE_DIR=$c PERF_BUILDID_DIR= "$USTACK" report -i "$tmp/t.data" \
		--stats "$@" >"$tmp/$n.stats" 2>>"$tmp/$n.err"
}
# the original's functions found in the folded stacks (sorted, one a line)
found() { tr ';' '\n' <"$tmp/$1.folded" | sed 's/ [0-9]*$//' | grep -x 'lkorig_[a-z]*' | sort -u; }
others() { grep -c 'lkother_' "$tmp/$1.folded"; }
# the --stats line of WORD for the program's file id
statline() { grep -E "^$2: file [0-9]+ $tmp/bin/prog: " "$tmp/$1.stats"; }

if ! report none "$tmp/empty"; then
	fail path_refused "report failed: $(head -2 "$tmp/none.err" | tr '\n' ' ')"
elif [ -n "$(found none)" ] || [ "$(others none)" != 0 ]; then
	fail path_refused "names without any copy of the original: '$(found none | tr '\n' ' ')', $(others none) of the other build"
elif ! statline none refused | grep -q ": $tmp/bin/prog (path): build ID differs$" ||
     ! statline none image | grep -q ': none$'; then
	fail path_refused "--stats says '$(statline none refused)' / '$(statline none image)'"
	sed 's/^/#   /' "$tmp/none.stats" | grep -E '^#   (image|refused|symbols)' | head -20
elif [ "$(grep -c '' "$tmp/none.folded")" = 0 ]; then
	fail path_refused "no stacks in the trace"
else
	pass path_refused "no names, --stats: $(statline none refused | sed 's/.*: //')"
fi

check_named() { # CASE NAME CACHE IMAGE-REGEX ARGS...
	local c=$1 n=$2 cache=$3 img=$4
	shift 4
	if ! report "$n" "$cache" "$@"; then
		fail "$c" "report $*: $(head -2 "$tmp/$n.err" | tr '\n' ' ')"
	elif [ "$(found "$n")" != "$names" ] || [ "$(others "$n")" != 0 ]; then
		fail "$c" "report $* names '$(found "$n" | tr '\n' ' ')', nm of the original '$(echo $names)', $(others "$n") of the other build"
	elif ! statline "$n" image | grep -qE ": $img\$"; then
		fail "$c" "--stats says '$(statline "$n" image)', want '$img'"
	else
		pass "$c" "the original's names (as nm), $(statline "$n" image | sed 's/^[^:]*: [^:]*: //')"
	fi
}
check_named ustack_cache planted "$tmp/planted" \
	"ustack cache \\($tmp/planted/\\.build-id/${bid:0:2}/${bid:2}/elf(-$sha)?\\)"
check_named buildid_dir given "$tmp/empty" \
	"buildid-dir $tmp/given \\($tmp/given/\\.build-id/${bid:0:2}/${bid:2}/elf(-$sha)?\\)" \
	--buildid-dir "$tmp/given"
check_named symfs symfs "$tmp/empty" "symfs \\($tmp/symfs$tmp/bin/prog\\)" --symfs "$tmp/symfs"

if ! report nocache "$tmp/planted" --no-buildid-cache; then
	fail no_cache "report failed: $(head -2 "$tmp/nocache.err" | tr '\n' ' ')"
elif [ -n "$(found nocache)" ]; then
	fail no_cache "--no-buildid-cache still named '$(found nocache | tr '\n' ' ')' from ustack's cache"
else
	pass no_cache "--no-buildid-cache: ustack's cache not used"
fi

if HOME=$tmp/home USTACK_CACHE_DIR=$tmp/empty "$USTACK" flamegraph -i "$tmp/t.data" --no-lines \
	--symfs "$tmp/symfs" -o "$tmp/fg.svg" 2>"$tmp/fg.err" &&
   [ "$(grep -o 'lkorig_[a-z]*' "$tmp/fg.svg" | sort -u)" = "$names" ]; then
	pass flamegraph "--symfs: the SVG names the original's functions"
else
	fail flamegraph "$(head -2 "$tmp/fg.err" | tr '\n' ' '); SVG has '$(grep -o 'lk[a-z]*_[a-z]*' "$tmp/fg.svg" 2>/dev/null | sort -u | tr '\n' ' ')'"
fi

# ---- content: same build ID, other bytes ------------------------------------
if ! grep -qE "^content: file [0-9]+ $tmp/bin/prog: sha256:$sha " "$tmp/none.stats"; then
	skip content "the trace has no FILE_CONTENT record of the program with nm's original's sha256 (recorder without capture)"
	exit 0
fi
off=$(readelf -SW "$tmp/orig" | sed -n 's/.* \.comment  *PROGBITS  *[0-9a-f]*  *\([0-9a-f]*\) .*/\1/p')
off=$((0x${off:-0} + 1))
cp "$tmp/orig" "$tmp/bin/prog.new"
printf '\x7e' | dd of="$tmp/bin/prog.new" bs=1 seek="$off" conv=notrunc 2>/dev/null
mv "$tmp/bin/prog.new" "$tmp/bin/prog"
if [ "$(readelf -n "$tmp/bin/prog" | awk '/Build ID:/ { print $3 }')" != "$bid" ] ||
   [ "$(sha256sum <"$tmp/bin/prog" | awk '{ print $1 }')" = "$sha" ]; then
	fail content "the patched copy should keep the build ID and change the hash"
elif ! report patched "$tmp/empty"; then
	fail content "report failed: $(head -2 "$tmp/patched.err" | tr '\n' ' ')"
elif [ -n "$(found patched)" ]; then
	fail content "the same build ID with other bytes named '$(found patched | tr '\n' ' ')'"
elif ! statline patched refused | grep -q ": $tmp/bin/prog (path): content differs$" ||
     ! grep -q "other content than recorded" "$tmp/patched.err"; then
	fail content "--stats says '$(statline patched refused)', stderr '$(head -2 "$tmp/patched.err" | tr '\n' ' ')'"
elif ! report recorded "$tmp/rcache" || [ "$(found recorded)" != "$names" ] ||
     ! statline recorded image | grep -q ": ustack cache ($tmp/rcache/.build-id/${bid:0:2}/${bid:2}/elf-$sha)$"; then
	fail content "the recorder's cache: names '$(found recorded | tr '\n' ' ')', '$(statline recorded image)'"
else
	pass content "one byte of .comment changed: refused (content differs), with a warning; the recorder's cache names them"
fi

