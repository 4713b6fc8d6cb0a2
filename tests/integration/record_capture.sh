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
#   deleted/B   the program copies itself to a new file, unlinks the copy
#               and runs it (fexecve): the copy is mapped only once it is
#               gone from the file system, so only the process's own
#               mapping can give its content (its path opens nothing);
#               captured, with the program's hash
#   off/B       -N: no FILE_CONTENT, no .build-id in the cache
#   too-big/B   --capture-max-size 1K: every file TOO_BIG with the right
#               hash, nothing stored
#   stats/B     record --stats counts what was stored
#   root-debug  a program running in a chroot (its root is not the
#               recorder's; recorded with -p: the recorder reads its
#               mappings, as with a container's processes)
#               with its debug file in the root's /usr/lib/debug/.build-id:
#               stored as debug-<sha256 of the program>, byte-identical,
#               FILE_CONTENT says debug
#   root-escape the same debug file on the host, and in the root only an
#               absolute symlink to its host path: resolved inside the
#               root (openat2 RESOLVE_IN_ROOT), so nothing is stored
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
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
extern char **environ;
volatile unsigned long sink;
__attribute__((noinline)) static void spin(void)
{
	for (unsigned long i = 0; i < 150000000ul; i++)
		sink += i;
}
/* "gone PATH STOP": run a copy of this program at PATH, unlinked before
 * its exec, which spins until the file STOP exists */
static int run_gone_copy(const char *path, const char *stop)
{
	static char buf[1 << 20];
	int in = open("/proc/self/exe", O_RDONLY), out, fd;
	ssize_t n;
	char *args[] = { (char *)path, "until", (char *)stop, NULL };

	out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (in < 0 || out < 0)
		return 3;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			return 3;
	close(in);
	close(out);
	fd = open(path, O_RDONLY);
	if (fd < 0 || unlink(path))
		return 3;
	fexecve(fd, args, environ);
	return 4;
}
int main(int argc, char **argv)
{
	if (argc > 3 && !strcmp(argv[1], "gone"))
		return run_gone_copy(argv[2], argv[3]);
	/* "until STOP": until the test has seen the recorder capture this
	 * process's file (only the live process's mapping gives it), at most
	 * ~10 minutes */
	if (argc > 2 && !strcmp(argv[1], "until")) {
		for (int i = 0; i < 6000 && access(argv[2], F_OK); i++)
			spin();
		return 0;
	}
	/* until killed: a process the recorder attaches to (-p) */
	if (argc > 1 && !strcmp(argv[1], "forever"))
		for (;;)
			spin();
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

	# a program gone from the file system before it was mapped: it runs
	# until the trace (written at least once a second) has its file's
	# FILE_CONTENT (the capture reads it through the live process's
	# mapping; a process the recorder reached only after its exit, on a
	# loaded machine, has none left: a .ci/run saw that), at most 30 s,
	# then is told to stop. Not until the cache has the entry: the first
	# image, spin itself, has the same build ID and content, and its
	# capture made the entry before the copy's, once beside stress-ng.
	want=$(sha "$tmp/spin")
	bid=$(build_id "$tmp/spin")
	gone=$tmp/gone-copy-$b
	# After the second exec the copy backend's picture sometimes lacks the
	# new image (its stacks then have no frame of it: a recorder issue of
	# exec, not of the capture); only a trace whose stacks used the copy
	# tests the capture, so up to 3 tries for one, each said.
	for try in 1 2 3; do
		rm -rf "$tmp/cache-gone-$b" "$tmp/stop-$b"
		record "$b" "gone-$b" "$tmp/cache-gone-$b" -- "$tmp/spin" gone "$gone" "$tmp/stop-$b" &
		rp=$!
		for _ in $(seq 150); do
			sleep 0.2
			[ -n "$(content_of <("$USTACK" report --stats -i "$tmp/gone-$b.data" 2>/dev/null) "$gone")" ] &&
				break
			kill -0 $rp 2>/dev/null || break
		done
		touch "$tmp/stop-$b"
		wait $rp || break
		"$USTACK" report --format raw -i "$tmp/gone-$b.data" 2>/dev/null |
			grep -q "file_map: id=0x[0-9a-f]* path=$gone " && break
		echo "# deleted/$b: try $try: no stack used $gone, recording again"
	done
	if [ ! -s "$tmp/gone-$b.stats" ]; then
		fail "deleted/$b" "record failed: $(head -3 "$tmp/gone-$b.err" | tr '\n' '|')"
	elif [ -e "$gone" ]; then
		fail "deleted/$b" "the copy was not unlinked"
	else
		got=$(content_of "$tmp/gone-$b.stats" "$gone")
		if [ "${got%% *}" = "$want" ] &&
			cmp -s "$tmp/spin" "$tmp/cache-gone-$b/.build-id/${bid:0:2}/${bid:2}/elf-$want"; then
			pass "deleted/$b"
		else
			fail "deleted/$b" "FILE_CONTENT of $gone '${got:-none}', want $want and the cache entry ($(grep '^content' "$tmp/gone-$b.stats" | tr '\n' '|'))"
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

# ---- separate debug files inside another root (copy backend: the capture
# is the same code for both)
mkroot() { # DIR: the program, stripped, with libc and ld.so
	mkdir -p "$1/lib/x86_64-linux-gnu" "$1/lib64" &&
		cp /lib/x86_64-linux-gnu/libc.so.6 "$1/lib/x86_64-linux-gnu/" &&
		cp /lib64/ld-linux-x86-64.so.2 "$1/lib64/" &&
		objcopy --strip-debug "$tmp/spin" "$1/spin"
}
# record_root ROOT NAME CACHE: the program running in ROOT, recorded for 1 s
# (it runs until killed: a run of ~0.5 s on an idle machine here ended
# before the recorder attached once, "pid N: no such process")
record_root() {
	local pid ret
	chroot "$1" /spin forever &
	pid=$!
	# recorded once chroot has become the program (10 s at most)
	local end=$((SECONDS + 10)) want
	want=$(realpath "$1")/spin
	until [ "$(readlink /proc/$pid/exe 2>/dev/null)" = "$want" ] || [ $SECONDS -ge $end ]; do
		sleep 0.01
	done
	record copy "$2" "$3" -d 1 -p "$pid"
	ret=$?
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return $ret
}
bid=$(build_id "$tmp/spin")
if ! command -v chroot >/dev/null || ! command -v objcopy >/dev/null ||
	[ ! -f /lib64/ld-linux-x86-64.so.2 ] || [ -z "$bid" ]; then
	skip root-debug "chroot, objcopy, /lib64/ld-linux-x86-64.so.2 or a build ID missing"
	skip root-escape "chroot, objcopy, /lib64/ld-linux-x86-64.so.2 or a build ID missing"
else
	r=$tmp/root
	ddir=usr/lib/debug/.build-id/${bid:0:2}
	mkroot "$r" && mkdir -p "$r/$ddir" && objcopy --only-keep-debug "$tmp/spin" "$r/$ddir/${bid:2}.debug"
	h=$(sha "$r/spin")
	e=$tmp/cache-root/.build-id/${bid:0:2}/${bid:2}
	if ! record_root "$r" root "$tmp/cache-root"; then
		fail root-debug "record failed: $(head -3 "$tmp/root.err" | tr '\n' '|')"
	elif [ "$(content_of "$tmp/root.stats" "$r/spin")" = "$h $(stat -c %s "$r/spin") cached debug" ] &&
		cmp -s "$r/$ddir/${bid:2}.debug" "$e/debug-$h"; then
		pass root-debug
	else
		fail root-debug "FILE_CONTENT '$(content_of "$tmp/root.stats" "$r/spin")', entries: $(ls "$e" 2>&1 | tr '\n' ' ')"
	fi

	r=$tmp/root2
	mkroot "$r" && mkdir -p "$r/$ddir" && objcopy --only-keep-debug "$tmp/spin" "$tmp/host.debug" &&
		ln -s "$tmp/host.debug" "$r/$ddir/${bid:2}.debug"
	e=$tmp/cache-root2/.build-id/${bid:0:2}/${bid:2}
	if ! record_root "$r" root2 "$tmp/cache-root2"; then
		fail root-escape "record failed: $(head -3 "$tmp/root2.err" | tr '\n' '|')"
	elif [ "$(content_of "$tmp/root2.stats" "$r/spin")" = "$h $(stat -c %s "$r/spin") cached" ] &&
		[ -f "$e/elf-$h" ] && ! ls "$e" | grep -q '^debug'; then
		pass root-escape
	else
		fail root-escape "FILE_CONTENT '$(content_of "$tmp/root2.stats" "$r/spin")', entries: $(ls "$e" 2>&1 | tr '\n' ' ')"
	fi
fi

exit $((fails > 0))
