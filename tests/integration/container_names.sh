#!/usr/bin/env bash
# Containers and traces read elsewhere (issue 28): every frame is named from
# the file the process really mapped, never from the file the reporting host
# has at the same path. Fixtures (tests/integration/progs/ct_*.c): a program
# P and a library L built twice, build A (names ending in _a, the "host"
# files at $tmp/app/{ct_prog,libct.so}) and build B (names ending in _b,
# other build IDs). Oracle for names: `nm` of the build that ran.
#   ct_fixtures        A and B have different build IDs (readelf -n)
#   ct_bind_effect     in `unshare -m` with B bind-mounted over A's paths the
#                      process runs B (readelf -n /proc/PID/exe, and of the
#                      library through /proc/PID/map_files)
#   ct_snapshot_*      `ustack snapshot` of that process: P's and L's frames
#                      named with B's names, none of A's
#   ct_VARIANT_BACKEND_{text,folded,pprof}
#                      record -F 499 of `unshare -m ... exec P` (VARIANT
#                      bind) and of `chroot ROOT P` (VARIANT chroot: a
#                      minimal root of B + the host's libc and ld.so, P at the
#                      same path as A's), --backend copy and bpf; report
#                      text: every frame in P or L named, each name one of
#                      B's (nm), the two spinning functions of B seen, no
#                      "[build ID mismatch]"; folded and pprof (go tool pprof
#                      -traces): B's spinning functions, no name of A's, no
#                      unnamed P/L frame
#   ct_VARIANT_BACKEND_removed
#                      build B deleted after the recording: text, folded and
#                      pprof output byte-identical to before
#   ct_forged_*        a container library L' (names _f) linked with
#                      --build-id=<the host libc's build ID>, recorded first
#                      alone (so the cache's first-come entry for that build
#                      ID holds L'), then `record -a -d 3` with a host
#                      process spinning in libc's getppid: that process's
#                      libc frames are named from the real libc (names in
#                      `nm -D` of libc or of its debug file, getppid among
#                      them, no _f name), and ustack warned of the conflict
#                      (a line naming the build ID or "conflict")
#   ct_archive_*       `ustack archive` of the bind/copy trace, then a clean
#                      environment (other USTACK_CACHE_DIR and HOME, fixtures
#                      A and B deleted, only the trace and TRACE.archive in a
#                      new directory): text, folded and pprof (decoded with
#                      go tool pprof -raw) byte-identical to the recording
#                      host's
#   ct_rootfs          a real distribution root (Debian trixie, made by
#                      bench/container/rootfs.sh, cached in build/rootfs;
#                      skipped when not there: make check needs no network):
#                      `chroot ROOT gzip -6`: frames in the root's libc named
#                      (names of `nm -D` of THAT libc, not the host's), none
#                      "[build ID mismatch]"
#
# PARTS: "targets" (the default: every case but ct_forged_*, run with the
# other tests), "system" (ct_forged_*: record -a, run alone,
# container_names_system.sh: the whole machine's processes would be named
# too, other tests' forged and hostile files among them), or both.
set -u
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
PARTS=${PARTS:-targets}
part() { [[ " $PARTS " == *" $1 "* ]]; }
cd "$TOP" || exit 1
PROGS=$TOP/tests/integration/progs
ROOTFS=${ROOTFS:-$TOP/build/rootfs/trixie}

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }

for t in unshare nm readelf mount chroot; do
	command -v $t >/dev/null || { skip container_names "$t not installed"; exit 0; }
done
[ "$(id -u)" -eq 0 ] || { skip container_names "needs root (unshare -m, mount --bind, chroot)"; exit 0; }

tmp=$(mktemp -d /tmp/ustack-ct.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	# NS_RUN mounts only in its own namespace; should one ever show here, it
	# is this test's to remove
	awk -v t="$tmp/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo | xargs -r -n1 umount -l
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
# hermetic: ustack's cache and perf's ~/.debug are this test's own
export USTACK_CACHE_DIR=$tmp/cache HOME=$tmp/home GOCACHE=$tmp/gocache GOFLAGS=
mkdir -p "$HOME"
APP=$tmp/app          # A: the host's files, and the path every variant runs P at
P=$APP/ct_prog L=$APP/libct.so
have_go=0
command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1 && have_go=1

build() { # TAG OUTDIR [extra ld flags]: P and L of build TAG into OUTDIR, P's rpath $APP
	local tag=$1 out=$2; shift 2
	mkdir -p "$out"
	$CC -O2 -fno-plt -DCT_TAG="$tag" -shared -fPIC -o "$out/libct.so" "$PROGS/ct_lib.c" "$@" &&
		$CC -O2 -fno-plt -DCT_TAG="$tag" -o "$out/ct_prog" "$PROGS/ct_prog.c" \
			-L"$out" -lct -Wl,-rpath,"$APP"
}
bid() { readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }'; }
# defined function names of a build (P and L), one a line
names_of() { nm --defined-only "$1/ct_prog" "$1/libct.so" | awk 'NF == 3 && $2 ~ /[TtWw]/ { print $3 }' | sort -u; }

if ! build a "$APP" || ! build b "$tmp/b" || ! $CC -O2 -o "$tmp/ct_libc_loop" "$PROGS/ct_libc_loop.c"; then
	fail ct_fixtures "cannot compile tests/integration/progs/ct_*.c"; exit 0
fi
names_of "$APP" >"$tmp/names.a"
names_of "$tmp/b" >"$tmp/names.b"
comm -23 "$tmp/names.a" "$tmp/names.b" >"$tmp/names.a_only"
if [ "$(bid "$APP/ct_prog")" != "$(bid "$tmp/b/ct_prog")" ] && [ -n "$(bid "$APP/ct_prog")" ] &&
	[ "$(bid "$APP/libct.so")" != "$(bid "$tmp/b/libct.so")" ] && [ -n "$(bid "$tmp/b/libct.so")" ] &&
	grep -qx ct_prog_spin_b "$tmp/names.b" && grep -qx ct_lib_inner_b "$tmp/names.b" &&
	grep -qx ct_lib_inner_a "$tmp/names.a_only"; then
	pass "ct_fixtures (P $(bid "$APP/ct_prog") vs $(bid "$tmp/b/ct_prog"))"
else
	fail ct_fixtures "builds A and B do not differ: P $(bid "$APP/ct_prog") / $(bid "$tmp/b/ct_prog"), L $(bid "$APP/libct.so") / $(bid "$tmp/b/libct.so")"
	exit 0
fi

# the chroot variant's root: B at A's paths, plus the host's libc and ld.so
ROOT=$tmp/root
mkdir -p "$ROOT$APP"
cp "$tmp/b/ct_prog" "$tmp/b/libct.so" "$ROOT$APP/"
for f in $(ldd "$tmp/b/ct_prog" | grep -o '/[^ ]*' | grep -v "^$APP/"); do
	mkdir -p "$ROOT$(dirname "$f")"
	cp -L "$f" "$ROOT$f"
done

# runs a build at A's paths in a new private mount namespace:
# unshare -m --propagation private $NS_RUN SRCDIR SECONDS. It mounts nothing
# unless it is in a mount namespace other than this shell's.
NS_RUN=$tmp/ns_run.sh
cat >"$NS_RUN" <<EOF
#!/bin/sh
[ "\$(readlink /proc/self/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] || { echo "not in a new mount namespace" >&2; exit 99; }
mount --bind "\$1/ct_prog" '$P' && mount --bind "\$1/libct.so" '$L' && exec '$P' "\$2"
EOF
chmod +x "$NS_RUN"

# ---- frame checks -----------------------------------------------------------------------------
# text: ` => NAME+0xOFF (PATH)` or ` => ?? (PATH+0xOFF)...`; frames in P or L
check_text() { # TEST FILE NAMES_OK
	awk -v p="$P" -v l="$L" -v okf="$3" '
		BEGIN { while ((getline n < okf) > 0) ok[n] = 1 }
		/^ => / {
			path = $0; sub(/^[^(]*\(/, "", path); sub(/\).*$/, "", path); sub(/\+0x[0-9a-f]+$/, "", path)
			if (path != p && path != l) next
			total++
			name = $2; sub(/\+0x[0-9a-f]+$/, "", name)
			if (name == "??" || !(name in ok)) { bad++; if (bad <= 3) why = why " [" substr($0, 5) "]" }
			seen[name] = 1
		}
		END {
			if (total < 20) { print "only " total " frames in P or L"; exit 1 }
			if (bad) { print bad " of " total " frames in P or L not named from build B:" why; exit 1 }
			if (!("ct_prog_spin_b" in seen) || !("ct_lib_inner_b" in seen)) { print "ct_prog_spin_b or ct_lib_inner_b never seen in " total " frames"; exit 1 }
			print total " frames in P and L, all named from build B"
		}' "$2"
}
# folded / pprof traces: B's spinning functions present, no name of A, and no
# unnamed P or L frame ("[ct_prog]", "[libct.so]", or a bare address in pprof)
check_names() { # FILE
	local a
	grep -qw ct_prog_spin_b "$1" && grep -qw ct_lib_inner_b "$1" ||
		{ echo "ct_prog_spin_b or ct_lib_inner_b missing"; return 1; }
	a=$(grep -owFf "$tmp/names.a_only" "$1" | sort -u | tr '\n' ' ')
	[ -z "$a" ] || { echo "names of build A: $a"; return 1; }
	! grep -qE '\[(ct_prog|libct\.so)\]|ct_prog\+0x|libct\.so\+0x' "$1" ||
		{ echo "unnamed frames of P or L: $(grep -oE '\[(ct_prog|libct\.so)\][^;]*' "$1" | head -n1)"; return 1; }
	echo "B's names, none of A's"
}
pprof_traces() { go tool pprof -traces "$1" 2>/dev/null; }

report_all() { # TRACE OUTPREFIX: text, folded, pprof (+ decoded traces)
	"$USTACK" report -i "$1" -o "$2.text" 2>"$2.text.err" &&
		"$USTACK" report -i "$1" -f folded -o "$2.folded" 2>"$2.folded.err" &&
		"$USTACK" report -i "$1" -f pprof -o "$2.pprof" 2>"$2.pprof.err" || return 1
	[ $have_go = 0 ] || go tool pprof -raw "$2.pprof" >"$2.pprof.raw" 2>/dev/null
	[ $have_go = 0 ] || pprof_traces "$2.pprof" >"$2.pprof.traces"
}
check_reports() { # TESTPREFIX OUTPREFIX
	local why
	if why=$(check_text "$1_text" "$2.text" "$tmp/names.b"); then pass "$1_text ($why)"; else fail "$1_text" "$why"; fi
	if grep -q 'build ID mismatch' "$2.text"; then
		fail "$1_text_mismatch" "$(grep -c 'build ID mismatch' "$2.text") frames '[build ID mismatch]', e.g. $(grep -m1 'build ID mismatch' "$2.text")"
	fi
	if why=$(check_names "$2.folded"); then pass "$1_folded ($why)"; else fail "$1_folded" "$why"; fi
	if [ $have_go = 0 ]; then
		skip "$1_pprof" "go tool pprof not installed"
	elif why=$(check_names "$2.pprof.traces"); then pass "$1_pprof ($why)"
	else fail "$1_pprof" "go tool pprof -traces: $why"; fi
}

# ---- PARTS targets: every case but ct_forged_* ----------------------------------------------------
if part targets; then
	# ---- the bind mount takes effect; snapshot ------------------------------------------------------
	unshare -m --propagation private "$NS_RUN" "$tmp/b" 30 >"$tmp/bind.out" 2>&1 &
	spid=$!
	pids+=("$spid")
	for _ in $(seq 500); do grep -q ready "$tmp/bind.out" && break; sleep 0.02; done
	rpid=$(sed -n 's/^ready \([0-9]*\)$/\1/p' "$tmp/bind.out")
	if [ -z "$rpid" ]; then
		skip container_names "could not run P in a private mount namespace: $(head -n2 "$tmp/bind.out" | tr '\n' ' ')"
		exit 0
	fi
	lmap=$(awk -v l="$L" '$6 == l && $2 ~ /x/ { print $1; exit }' "/proc/$rpid/maps")
	if [ "$(bid "/proc/$rpid/exe")" = "$(bid "$tmp/b/ct_prog")" ] && [ -n "$lmap" ] &&
		[ "$(bid "/proc/$rpid/map_files/$lmap")" = "$(bid "$tmp/b/libct.so")" ] &&
		[ "$(bid "$P")" = "$(bid "$APP/ct_prog")" ] && [ "$(bid "$P")" != "$(bid "$tmp/b/ct_prog")" ]; then
		pass ct_bind_effect
	else
		fail ct_bind_effect "pid $rpid runs P $(bid "/proc/$rpid/exe"), L ${lmap:-not mapped} $(bid "/proc/$rpid/map_files/$lmap"); B is $(bid "$tmp/b/ct_prog")"
	fi
	ok=0
	for i in 1 2 3; do
		"$USTACK" snapshot -p "$rpid" >"$tmp/snap.text" 2>"$tmp/snap.err" || continue
		"$USTACK" snapshot -p "$rpid" -f folded >"$tmp/snap.folded" 2>>"$tmp/snap.err" || continue
		# snapshot text: "#I 0xPC NAME+0xOFF (PATH)": as report's frames once reshaped
		sed -n 's/^#[0-9]* 0x[0-9a-f]* / => /p' "$tmp/snap.text" >"$tmp/snap.frames"
		ok=1
		break
	done
	if [ $ok = 0 ]; then
		fail ct_snapshot "ustack snapshot -p $rpid: $(head -n2 "$tmp/snap.err" | tr '\n' ' ')"
	else
		# one snapshot holds one stack: P's and L's frames named from B (main, _start,
		# ct_prog_outer_b, ...), none from A; the spinning leaf may be either
		why=$(awk -v p="$P" -v l="$L" -v okf="$tmp/names.b" '
			BEGIN { while ((getline n < okf) > 0) ok[n] = 1 }
			{ path = $0; sub(/^[^(]*\(/, "", path); sub(/\).*$/, "", path); sub(/\+0x[0-9a-f]+$/, "", path)
			  if (path != p && path != l) next; total++; name = $2; sub(/\+0x[0-9a-f]+$/, "", name)
			  if (!(name in ok)) bad = bad " " $2 }
			END { if (total < 3 || bad != "") { print total " frames in P/L, not from B:" bad; exit 1 } print total " frames" }' "$tmp/snap.frames")
		if [ $? = 0 ]; then pass "ct_snapshot_text ($why)"; else fail ct_snapshot_text "$why"; fi
		if grep -q ct_prog_outer_b "$tmp/snap.folded" && ! grep -qwFf "$tmp/names.a_only" "$tmp/snap.folded"; then
			pass ct_snapshot_folded
		else
			fail ct_snapshot_folded "$(head -c 300 "$tmp/snap.folded")"
		fi
	fi
	kill "$spid" "$rpid" 2>/dev/null
	wait "$spid" 2>/dev/null

	# ---- record + report, both variants, both backends -------------------------------------------------
	recorded=() # VARIANT_BACKEND of the traces made
	for variant in bind chroot; do
		for backend in copy bpf; do
			t=ct_${variant}_$backend
			if [ $variant = bind ]; then
				cmd=(unshare -m --propagation private "$NS_RUN" "$tmp/b" 2)
			else
				cmd=(chroot "$ROOT" "$P" 2)
			fi
			if ! "$USTACK" record -F 499 -q --backend $backend -o "$tmp/$t.data" -- "${cmd[@]}" \
				>"$tmp/$t.rec.out" 2>"$tmp/$t.rec.err"; then
				if [ $backend = bpf ] && grep -qiE 'bpf|btf|not supported|permi' "$tmp/$t.rec.err"; then
					skip "$t" "backend bpf unavailable: $(head -n1 "$tmp/$t.rec.err")"
				elif grep -qiE 'permi|perf_event|not supported' "$tmp/$t.rec.err"; then
					skip "$t" "perf events unavailable: $(head -n1 "$tmp/$t.rec.err")"
				else
					fail "$t" "ustack record: $(head -n3 "$tmp/$t.rec.err" | tr '\n' ' ')"
				fi
				continue
			fi
			if ! report_all "$tmp/$t.data" "$tmp/$t"; then
				fail "$t" "ustack report: $(cat "$tmp/$t".*.err | head -n3 | tr '\n' ' ')"
				continue
			fi
			check_reports "$t" "$tmp/$t"
			recorded+=("$t")
		done
	done

	# ---- the container's files removed: the same output --------------------------------------------
	rm -rf "$tmp/b" "$ROOT"
	for t in "${recorded[@]}"; do
		mkdir -p "$tmp/after"
		if ! report_all "$tmp/$t.data" "$tmp/after/$t"; then
			fail "${t}_removed" "ustack report: $(cat "$tmp/after/$t".*.err | head -n3 | tr '\n' ' ')"
			continue
		fi
		diffs=
		for f in text folded pprof; do
			cmp -s "$tmp/$t.$f" "$tmp/after/$t.$f" || diffs="$diffs $f"
		done
		if [ -z "$diffs" ]; then
			pass "${t}_removed (text, folded, pprof byte-identical)"
		else
			fail "${t}_removed" "output changed once build B was deleted:$diffs"
			diff "$tmp/$t.text" "$tmp/after/$t.text" | head -n 8 | sed 's/^/# /'
		fi
	done

fi

if part system; then
	# ---- a forged build ID ------------------------------------------------------------------------------
	# (both run until the test ends: on a loaded machine the build and the
	# first recording below took more than the 30 s they once had)
	"$tmp/ct_libc_loop" 600 >"$tmp/loop.out" &
	lpid=$!
	pids+=("$lpid")
	for _ in $(seq 500); do grep -q ready "$tmp/loop.out" && break; sleep 0.02; done
	libc=$(awk '$6 ~ /\/libc\.so\.6$/ { print $6; exit }' "/proc/$lpid/maps")
	libc_bid=$(bid "$libc")
	if [ -z "$libc" ] || [ -z "$libc_bid" ]; then
		skip ct_forged "the host libc (${libc:-not found in /proc/$lpid/maps}) has no build ID"
	elif ! build f "$tmp/f" -Wl,--build-id=0x"$libc_bid" || [ "$(bid "$tmp/f/libct.so")" != "$libc_bid" ]; then
		fail ct_forged "cannot build a library with build ID $libc_bid: got $(bid "$tmp/f/libct.so")"
	else
		unshare -m --propagation private "$NS_RUN" "$tmp/f" 600 >"$tmp/forge.out" 2>&1 &
		fspid=$!
		pids+=("$fspid")
		for _ in $(seq 500); do grep -q ready "$tmp/forge.out" && break; sleep 0.02; done
		fpid=$(sed -n 's/^ready \([0-9]*\)$/\1/p' "$tmp/forge.out")
		export USTACK_CACHE_DIR=$tmp/cache-forge
		# first the container process alone: the forged file is the first one
		# the cache sees with libc's build ID
		if [ -z "$fpid" ]; then
			fail ct_forged "the container process did not start: $(head -n2 "$tmp/forge.out")"
		elif ! kill -0 "$lpid" 2>/dev/null; then
			fail ct_forged "the host process ct_libc_loop ($lpid) is gone before the recording"
		elif ! "$USTACK" record -F 199 -q -d 1 -p "$fpid" -o "$tmp/forge1.data" >"$tmp/forge1.out" 2>"$tmp/forge1.err" ||
			! "$USTACK" record -F 199 -q -a -d 3 -o "$tmp/forge.data" >"$tmp/forge.rec.out" 2>"$tmp/forge.rec.err" ||
			! "$USTACK" report -i "$tmp/forge.data" -o "$tmp/forge.text" 2>"$tmp/forge.rep.err"; then
			fail ct_forged "record/report: $(cat "$tmp/forge1.err" "$tmp/forge.rec.err" "$tmp/forge.rep.err" 2>/dev/null | head -n3 | tr '\n' ' ')"
		else
			# the real libc's names: its .dynsym and the symbols of its debug file
			{
				nm -D --defined-only "$libc"
				dbg=/usr/lib/debug/.build-id/${libc_bid:0:2}/${libc_bid:2}.debug
				[ -f "$dbg" ] && nm --defined-only "$dbg"
			} 2>/dev/null | awk 'NF == 3 { n = $3; sub(/@.*/, "", n); print n }' | sort -u >"$tmp/names.libc"
			why=$(awk -v pid="$lpid" -v libc="$libc" -v okf="$tmp/names.libc" '
				BEGIN { while ((getline n < okf) > 0) ok[n] = 1 }
				/^[^ ]/ { mine = (index($0, "ct_libc_loop-" pid " ") == 1); next }
				mine && /^ => / {
					path = $0; sub(/^[^(]*\(/, "", path); sub(/\).*$/, "", path); sub(/\+0x[0-9a-f]+$/, "", path)
					if (path != libc) next
					total++; name = $2; sub(/\+0x[0-9a-f]+$/, "", name)
					if (name == "getppid") getppid++
					if (name != "??" && !(name in ok)) { bad++; why = why " " name }
					if (/mismatch/) mism++
				}
				END {
					if (!total) { print "no libc frame of the host process " pid; exit 1 }
					if (bad || mism || !getppid) { print total " libc frames: " getppid + 0 " getppid, " mism + 0 " mismatched, not libc names:" why; exit 1 }
					print total " libc frames, " getppid " in getppid"
				}' "$tmp/forge.text")
			if [ $? = 0 ]; then pass "ct_forged_names ($why)"; else fail ct_forged_names "$why"; fi
			if awk -v pid="$lpid" '/^[^ ]/ { mine = (index($0, "ct_libc_loop-" pid " ") == 1); next } mine && /ct_lib_[a-z]*_f/ { f = 1 } END { exit !f }' "$tmp/forge.text"; then
				fail ct_forged_names "the host process has frames named from the forged library"
			fi
			if cat "$tmp/forge1.err" "$tmp/forge.rec.err" "$tmp/forge.rep.err" | grep -iE "conflict|forged|already cached|$libc_bid" >"$tmp/forge.warn"; then
				pass "ct_forged_warning ($(head -n1 "$tmp/forge.warn" | cut -c1-160))"
			else
				fail ct_forged_warning "no warning naming build ID $libc_bid or a conflict on record's or report's stderr"
			fi
		fi
		export USTACK_CACHE_DIR=$tmp/cache
		kill "$fspid" "$fpid" 2>/dev/null
		wait "$fspid" 2>/dev/null
	fi
	kill "$lpid" 2>/dev/null
	wait "$lpid" 2>/dev/null

fi

if part targets; then
	# ---- archive, then a clean environment -------------------------------------------------------------
	t=ct_bind_copy
	if [ ! -f "$tmp/$t.data" ]; then
		skip ct_archive "no trace of $t"
	elif ! "$USTACK" archive "$tmp/$t.data" -o "$tmp/$t.data.archive" >"$tmp/arch.out" 2>"$tmp/arch.err"; then
		fail ct_archive "ustack archive: $(head -n3 "$tmp/arch.err" | tr '\n' ' ')"
	else
		pass "ct_archive ($(stat -c %s "$tmp/$t.data.archive") bytes, $(tar tf "$tmp/$t.data.archive" 2>/dev/null | wc -l) members)"
		clean=$tmp/clean
		mkdir -p "$clean/home" "$clean/cache"
		mv "$tmp/$t.data" "$tmp/$t.data.archive" "$clean/"
		rm -rf "$APP" "$tmp/f" "$tmp/cache" "$tmp/cache-forge" "$HOME/.debug"
		if ! HOME=$clean/home USTACK_CACHE_DIR=$clean/cache report_all "$clean/$t.data" "$clean/$t"; then
			fail ct_archive_clean "ustack report: $(cat "$clean/$t".*.err | head -n3 | tr '\n' ' ')"
		else
			for f in text folded pprof.raw; do
				[ $f = pprof.raw ] && [ $have_go = 0 ] && { skip ct_archive_clean_pprof "go tool pprof not installed"; continue; }
				# pprof's comment names the trace by the path given to report
				# ("ustack report of PATH"), which is another one here
				[ $f = pprof.raw ] && sed -i "s|^Comment: ustack report of $clean/|Comment: ustack report of $tmp/|" "$clean/$t.$f"
				if cmp -s "$tmp/$t.$f" "$clean/$t.$f"; then
					pass "ct_archive_clean_${f%.raw} (byte-identical)"
				else
					fail "ct_archive_clean_${f%.raw}" "differs from the recording host's"
					diff "$tmp/$t.$f" "$clean/$t.$f" | head -n 8 | sed 's/^/# /'
				fi
			done
		fi
	fi

	# ---- a real distribution root file system ----------------------------------------------------------
	if [ ! -f "$ROOTFS/.ustack-complete" ]; then
		skip ct_rootfs "no root file system at $ROOTFS (bench/container/rootfs.sh makes it: network, ~2 min, ~350 MB; make check does not)"
	else
		rlibc=$ROOTFS/usr/lib/x86_64-linux-gnu/libc.so.6
		if [ "$(bid "$rlibc")" = "$(bid /usr/lib/x86_64-linux-gnu/libc.so.6)" ]; then
			skip ct_rootfs "the root's libc is the host's (build ID $(bid "$rlibc"))"
		else
			big=$ROOTFS/tmp/ustack-ct-big.$$
			base64 -w 100 /dev/urandom 2>/dev/null | head -c 30000000 >"$big"
			if ! "$USTACK" record -F 499 -q -o "$tmp/rootfs.data" -- chroot "$ROOTFS" gzip -6 -c "/tmp/${big##*/}" \
				>/dev/null 2>"$tmp/rootfs.err" ||
				! "$USTACK" report -i "$tmp/rootfs.data" -o "$tmp/rootfs.text" 2>>"$tmp/rootfs.err"; then
				fail ct_rootfs "record/report: $(head -n3 "$tmp/rootfs.err" | tr '\n' ' ')"
			else
				nm -D --defined-only "$rlibc" | awk '{ n = $3; sub(/@.*/, "", n); print n }' | sort -u >"$tmp/names.rlibc"
				why=$(awk -v okf="$tmp/names.rlibc" '
					BEGIN { while ((getline n < okf) > 0) ok[n] = 1 }
					function event_end() {
						# a stack of the root'"'"'s gzip (not of the host'"'"'s chroot before
						# its exec, which maps the host libc at the same path)
						if (gz) for (i = 1; i <= nf; i++) {
							total++
							if (fr[i] ~ /mismatch/) mism++
							else if (nm[i] != "??") { if (nm[i] in ok) named++; else { bad++; why = why " " nm[i] } }
						}
						nf = 0; gz = 0
					}
					/^[^ ]/ { event_end(); next }
					/^ => / {
						path = $0; sub(/^[^(]*\(/, "", path); sub(/\).*$/, "", path); sub(/\+0x[0-9a-f]+$/, "", path)
						if (path ~ /\/bin\/gzip$/) gz = 1
						if (path !~ /\/libc\.so\.6$/) next
						name = $2; sub(/\+0x[0-9a-f]+$/, "", name)
						nf++; fr[nf] = $0; nm[nf] = name
					}
					END {
						event_end()
						if (!total) { print "no libc frame of gzip"; exit 1 }
						if (mism || bad || !named) { print total " libc frames of gzip: " named + 0 " named, " mism + 0 " [build ID mismatch], not the root libc'"'"'s:" why; exit 1 }
						print named " of " total " libc frames of gzip named"
					}' "$tmp/rootfs.text")
				if [ $? = 0 ]; then pass "ct_rootfs ($why)"; else fail ct_rootfs "$why"; fi
			fi
			rm -f "$big"
		fi
	fi
	exit 0
fi
