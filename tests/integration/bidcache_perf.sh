#!/usr/bin/env bash
# perf reads ustack's build-ID cache, and ustack reads perf's
# (src/bidcache/bidcache.c through tests/integration/progs/bidcache_tool.c):
#   bidcache_perf_reads_ours  `perf record --no-buildid-cache` of a small
#             program, the program stored into a fresh ustack cache, then
#             replaced on disk by another build: `perf --buildid-dir=CACHE
#             report` names the program's functions, and the same report
#             with an empty build-ID directory does not (the names came from
#             our cache, not from the disk)
#   bidcache_perf_ours_reads  `perf --buildid-dir=D buildid-cache -a BINARY`,
#             then find() with FOREIGN on D: a path whose bytes are BINARY's
#             (cmp), and perf's own layout under D is what find() walked
# Needs perf and root (or perf_event_paranoid <= 1); skips otherwise.
set -u
: "${CHECK_DIR:?}"
CC=${CC:-cc}
: "${SAN_FLAGS:=-fsanitize=address,undefined -fno-sanitize-recover=undefined}"
: "${BASE_CFLAGS:=-std=gnu11 -g -O2 -D_GNU_SOURCE -Iinclude -Isrc}"
: "${LIB_LDLIBS:=-lpthread -ldl}"
skip() { echo "SKIP bidcache_perf_reads_ours: $1"; echo "SKIP bidcache_perf_ours_reads: $1"; exit 0; }
command -v perf >/dev/null || skip "perf not installed"
perf version >/dev/null 2>&1 || skip "perf does not run (no linux-perf for this kernel?)"
command -v readelf >/dev/null || skip "readelf not installed"
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
	skip "needs root or kernel.perf_event_paranoid <= 1"
fi
tmp=$(mktemp -d)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
tool=$tmp/bidcache_tool
# shellcheck disable=SC2086
$CC $BASE_CFLAGS $SAN_FLAGS -o "$tool" tests/integration/progs/bidcache_tool.c \
	"$CHECK_DIR/libustack.a" $LIB_LDLIBS || { echo "FAIL bidcache_perf_reads_ours: cannot build the tool"; exit 1; }
build_id() { readelf -n "$1" | awk '/Build ID/{print $3; exit}'; }

# ---- perf reads a cache ustack wrote ------------------------------------------
# a tag unique to this run: its build ID is in no cache anywhere yet
tag="bidcache-$$-$RANDOM-$(date +%s%N)"
cat >"$tmp/prog.c" <<EOF2
const char *tag = "$tag";
volatile unsigned long sink;
__attribute__((noinline)) void bidcache_spin_inner(void) { for (int i = 0; i < 1000; i++) sink += i; }
__attribute__((noinline)) void bidcache_spin_outer(void) { for (int i = 0; i < 50; i++) bidcache_spin_inner(); }
int main(void)
{
	for (long n = 0; n < 20000; n++) bidcache_spin_outer();
	return tag[0] == 0;
}
EOF2
sed 's/bidcache_spin_/other_spin_/g; s/"bidcache-/"other-/' "$tmp/prog.c" >"$tmp/prog2.c"
$CC -O1 -fno-omit-frame-pointer -o "$tmp/prog" "$tmp/prog.c" &&
	$CC -O1 -fno-omit-frame-pointer -o "$tmp/prog2" "$tmp/prog2.c" ||
	{ echo "FAIL bidcache_perf_reads_ours: cannot build the program"; exit 1; }
bid=$(build_id "$tmp/prog")
[ -n "$bid" ] && [ "$bid" != "$(build_id "$tmp/prog2")" ] ||
	{ echo "FAIL bidcache_perf_reads_ours: no build ID, or both builds share one"; exit 1; }
if ! perf record --no-buildid-cache -q -e cpu-clock -F 999 -g -o "$tmp/perf.data" "$tmp/prog" \
	>"$tmp/record.log" 2>&1; then
	echo "SKIP bidcache_perf_reads_ours: perf record failed: $(tail -n 1 "$tmp/record.log")"
else
	out=$("$tool" store "$tmp/cache" "$tmp/prog" "$bid") || { echo "FAIL bidcache_perf_reads_ours: store failed"; exit 1; }
	want_sha=$(sha256sum <"$tmp/prog" | awk '{print $1}')
	cp "$tmp/prog2" "$tmp/prog.new" && mv "$tmp/prog.new" "$tmp/prog"
	mkdir -p "$tmp/empty"
	perf --buildid-dir "$tmp/cache" report -i "$tmp/perf.data" --stdio --no-children \
		--sort sym >"$tmp/ours.txt" 2>"$tmp/ours.err"
	perf --buildid-dir "$tmp/empty" report -i "$tmp/perf.data" --stdio --no-children \
		--sort sym >"$tmp/none.txt" 2>"$tmp/none.err"
	d=$tmp/cache/.build-id/${bid:0:2}/${bid:2}
	if [ "$out" != "1 $want_sha" ]; then
		echo "FAIL bidcache_perf_reads_ours: store printed '$out', want '1 $want_sha' (NEW, sha256sum's hash)"
	elif ! cmp -s "$d/elf" "$d/elf-$want_sha"; then
		echo "FAIL bidcache_perf_reads_ours: $d/elf and elf-<sha256> differ"
	elif ! grep -q 'bidcache_spin_inner' "$tmp/ours.txt"; then
		echo "FAIL bidcache_perf_reads_ours: perf report with our cache does not name bidcache_spin_inner"
		head -n 40 "$tmp/ours.txt" "$tmp/ours.err" | sed 's/^/# /'
	elif grep -q 'bidcache_spin_' "$tmp/none.txt"; then
		echo "FAIL bidcache_perf_reads_ours: perf names the functions without our cache too: the test proves nothing"
	else
		echo "PASS bidcache_perf_reads_ours"
	fi
fi

# ---- ustack reads a cache perf wrote --------------------------------------------
bid2=$(build_id "$tmp/prog2")
if ! perf --buildid-dir "$tmp/perfcache" buildid-cache -a "$tmp/prog2" >"$tmp/bc.log" 2>&1; then
	echo "FAIL bidcache_perf_ours_reads: perf buildid-cache -a failed: $(tail -n 1 "$tmp/bc.log")"
	exit 1
fi
link=$tmp/perfcache/.build-id/${bid2:0:2}/${bid2:2}
if ! path=$("$tool" find-foreign "$tmp/perfcache" "$bid2"); then
	echo "FAIL bidcache_perf_ours_reads: find-foreign found nothing"
	find "$tmp/perfcache" | sed 's/^/# /'
elif [ ! -L "$link" ]; then
	echo "FAIL bidcache_perf_ours_reads: perf's layout changed: $link is not a symlink (find() walked something else)"
elif ! cmp -s "$path" "$tmp/prog2"; then
	echo "FAIL bidcache_perf_ours_reads: $path differs from the binary"
elif [ "$path" != "$link/elf" ]; then
	echo "FAIL bidcache_perf_ours_reads: found $path, want $link/elf"
else
	echo "PASS bidcache_perf_ours_reads"
fi
