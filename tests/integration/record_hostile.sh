#!/usr/bin/env bash
# `ustack record` of processes that fight back: code that moves while it
# is recorded, and a process that execs. CPU samples (-e cpu-clock at
# 2000 Hz), so samples fall anywhere, also in the middle of the moves;
# each case with --backend copy and --backend bpf (SKIP with the
# recorder's reason where bpf cannot load).
#
#   moving/dl/B   progs/hostile_moving.c, dl mode: dlopen(liba), call,
#                 dlclose(), dlopen(libb), call, dlclose(), over and over,
#                 with phases of 1/32 to 1 times SPIN iterations (some
#                 shorter than the recorder's delay in reading a mapping's
#                 record, some longer). liba and libb are
#                 progs/hostile_lib.c built twice: other code, other build
#                 IDs, the same size, so that the loader puts each where
#                 the other was (checked: moving/dl-same-address, at least
#                 once; the share is printed). First, a recorder that
#                 lags: liba is called, the recorder is stopped (SIGSTOP),
#                 liba is replaced by libb, libb called, libb replaced by
#                 liba again, and only then the recorder goes on (SIGCONT,
#                 see lag()): it reads libb's mapping record while liba is
#                 where libb was (what /proc/PID/map_files opens there is
#                 liba; this made libb's frames be unwound by liba's
#                 rules, for the whole recording, before e21ecb9)
#   moving/raw/B  the same without the loader: mmap(PROT_EXEC) of the
#                 whole file at one fixed address (MAP_FIXED_NOREPLACE),
#                 call, munmap(); liba and libb at the same address always
#   exec/B        progs/hostile_exec.c: exec_a spins, execs exec_b, which
#                 spins and execs exec_a, and so on (4 images, 3 execs),
#                 at 500 Hz; both non-PIE, loaded at one address, each
#                 one's functions where the other has a pad of code: a
#                 frame named from the image that replaced its own gets a
#                 wrong name (exa_pad, exb_pad) rather than none. (At
#                 500 Hz the last sample before an exec is rarely in the
#                 exec's own teardown of the old image, whose stack copy
#                 is worthless: the last stack with frames of the old image
#                 is then the one to name right or wrong.)
# The truth (lib/hostile_check.py): via_a and via_b, in the executable,
# never move, and via_a calls only liba's a_outer -> a_spin (via_b: libb's
# b_outer -> b_spin). So a stack holding via_a must show, after it, a_outer
# and a_spin named from liba, or frames the recorder shows as unknown
# ("[unknown]", no file), never a frame of libb or of another file, and a
# stack with a_outer that does not reach via_a must end there rather than
# show another caller. For exec, every frame named from an image is one of
# its own functions, no stack holds frames of both images, and each image
# has stacks reaching main through its whole chain (a PLT frame may be
# named _init). In both, at least 20
# right stacks per library or image, and more right than unattributed:
# with 2000 samples per CPU second and 1 s of CPU per run (CPU time, not
# wall time: a loaded machine gets as many samples), there are hundreds.
#
# Env (from make check): USTACK CC TOP; KEEP_TMP=1 keeps the files.
set -u
T=record_hostile
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
fails=0
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $T/$1: $2"; }
CHECK=$TOP/tests/integration/lib/hostile_check.py

[ -x "$USTACK" ] || { fail setup "no $USTACK"; exit 1; }
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
	skip all "needs root or kernel.perf_event_paranoid <= 1"
	exit 0
fi
if ! command -v python3 >/dev/null; then
	skip all "python3 not installed (tests/integration/lib/hostile_check.py)"
	exit 0
fi

tmp=$(mktemp -d)
chmod 755 "$tmp"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	[ -n "${KEEP_TMP:-}" ] && echo "# files kept in $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
P=$TOP/tests/integration/progs
. "$TOP/tests/integration/lib/poll.sh"

bpf_skip=
if ! "$USTACK" record -q --backend bpf -o "$tmp/probe.data" -- true >/dev/null 2>"$tmp/probe.err"; then
	bpf_skip=$(grep -m1 . "$tmp/probe.err")
	bpf_skip=${bpf_skip:-record --backend bpf failed without a reason}
fi

CF=(-O2 -fomit-frame-pointer -Wall -Wextra -I"$P")
build() { # what, command...
	local what=$1; shift
	if ! "$@" >"$tmp/build.log" 2>&1; then
		fail "build/$what" "$* failed: $(head -5 "$tmp/build.log" | tr '\n' '|')"
		exit 1
	fi
}
build moving "$CC" "${CF[@]}" -fPIC -shared -o "$tmp/liba.so" "$P/hostile_lib.c"
build moving "$CC" "${CF[@]}" -fPIC -shared -DHOSTILE_B -o "$tmp/libb.so" "$P/hostile_lib.c"
build moving "$CC" "${CF[@]}" -o "$tmp/moving" "$P/hostile_moving.c" -ldl
build exec "$CC" "${CF[@]}" -fno-pie -no-pie -o "$tmp/exec_a" "$P/hostile_exec.c"
build exec "$CC" "${CF[@]}" -fno-pie -no-pie -DHOSTILE_B -o "$tmp/exec_b" "$P/hostile_exec.c"
# what the cases rely on: two libraries of one size with other code; exec_b's
# functions past the end of exec_a's file
if [ "$(stat -c %s "$tmp/liba.so")" != "$(stat -c %s "$tmp/libb.so")" ] ||
	cmp -s "$tmp/liba.so" "$tmp/libb.so"; then
	fail build/libs "liba.so and libb.so should differ and have one size: $(stat -c '%n %s' "$tmp"/lib?.so | tr '\n' ' ')"
	exit 1
fi
# and both images at one address (non-PIE), each one's functions inside
# the other's pad: a frame named from the wrong image comes out as a pad
# (nm -S: "ADDR SIZE T NAME")
inside() { # IMAGE PAD OTHER PREFIX: every PREFIX function of OTHER in PAD of IMAGE
	nm -S "$1" | awk -v pad="$2" '$4 == pad { print $1, $2 }' >"$tmp/pad"
	nm "$3" | awk -v re="^$4_" '$3 ~ re && $3 !~ /_pad$/ { print $1 }' >"$tmp/fns"
	[ -s "$tmp/pad" ] && [ -s "$tmp/fns" ] && read -r ps pz <"$tmp/pad" &&
		while read -r a; do
			[ $((16#$a)) -ge $((16#$ps)) ] && [ $((16#$a)) -lt $((16#$ps + 16#$pz)) ] || exit 1
		done <"$tmp/fns"
}
load_a=$(readelf -lW "$tmp/exec_a" | awk '$1 == "LOAD" { print $3; exit }')
load_b=$(readelf -lW "$tmp/exec_b" | awk '$1 == "LOAD" { print $3; exit }')
if ! (inside "$tmp/exec_b" exb_pad "$tmp/exec_a" exa) || ! (inside "$tmp/exec_a" exa_pad "$tmp/exec_b" exb) ||
	[ -z "$load_a" ] || [ "$load_a" != "$load_b" ] || [ $((load_a)) = 0 ]; then
	fail build/exec "want each image's functions inside the other's pad, both images at one fixed address (first LOAD at ${load_a:-?}, ${load_b:-?}): $(nm -S "$tmp/exec_a" "$tmp/exec_b" | grep -E ' (ex[ab]_|main)' | tr '\n' ' ')"
	exit 1
fi

SPIN=200000 CPU_MS=1000 MIN=20
# rec TAG BACKEND CMD...: under $tmp/out: TAG.data, TAG.out (the
# command's), TAG.err, TAG.ps (report --format perf-script); 1 when the
# recording failed (its FAIL line printed). With LAG=1, the recorder lags
# behind the program (lag(), below).
O=$tmp/out
rec() {
	local tag=$1 b=$2 rc rpid; shift 2
	mkdir -p "$(dirname "$O/$tag")"
	: >"$O/$tag.lag"
	HOSTILE_GO=${LAG:+$O/$tag.go} "$USTACK" record --backend "$b" -F "${FREQ:-2000}" -o "$O/$tag.data" -- "$@" \
		>"$O/$tag.out" 2>"$O/$tag.err" &
	rpid=$!; pids+=("$rpid")
	[ -n "${LAG:-}" ] && lag "$tag" "$rpid"
	wait "$rpid"
	rc=$?
	if [ $rc -ne 0 ] || grep -q 'exited with status' "$O/$tag.err"; then
		fail "$tag" "record exit $rc: $(head -4 "$O/$tag.err" | tr '\n' '|') $(head -2 "$O/$tag.out" | tr '\n' '|')"
		return 1
	fi
	if [ -s "$O/$tag.lag" ]; then
		fail "$tag" "$(cat "$O/$tag.lag")"
		return 1
	fi
	if ! "$USTACK" report -i "$O/$tag.data" --format perf-script -o "$O/$tag.ps" 2>"$O/$tag.rerr"; then
		fail "$tag" "report failed: $(head -3 "$O/$tag.rerr" | tr '\n' '|')"
		return 1
	fi
	return 0
}

# until WHAT (a command) succeeds, at most 30 s; else a line in TAG.lag
wait_until() {
	local tag=$1 why=$2 end=$((SECONDS + 30)); shift 2
	while [ $SECONDS -lt $end ]; do
		"$@" && return 0
		sleep 0.05
	done
	echo "lag: waited 30 s for $why" >>"$O/$tag.lag"
	return 1
}
trace_has() { "$POLL_USTACK" report -i "$O/$1.data" --format perf-script 2>/dev/null | grep -q -- "$2"; }

# lag TAG RECORDER_PID: the recorder stopped (SIGSTOP) while the program
# replaces liba by libb and libb by liba again (progs/hostile_moving.c,
# lagging()): once the trace shows a stack through liba, the recorder is
# stopped and the program goes on; when liba is back, the recorder goes on
# (SIGCONT) and reads libb's mapping and samples then; once the trace
# shows a frame of libb, the program goes on. The go files are created in
# any case, so that the program always runs to its end.
lag() {
	local tag=$1 rpid=$2
	wait_until "$tag" "hold-a on the program's stdout" grep -qx hold-a "$O/$tag.out" &&
		wait_until "$tag" "a stack through via_a in the trace" trace_has "$tag" 'via_a+'
	kill -STOP "$rpid"
	: >"$O/$tag.go.hold-a"
	wait_until "$tag" "hold-b on the program's stdout" grep -qx hold-b "$O/$tag.out"
	kill -CONT "$rpid"
	wait_until "$tag" "a frame of libb.so in the trace" trace_has "$tag" 'libb\.so)'
	: >"$O/$tag.go.hold-b"
}

# ---- code that moves --------------------------------------------------------------
for mode in dl raw; do
	for b in copy bpf; do
		tag=moving/$mode/$b
		if [ "$b" = bpf ] && [ -n "$bpf_skip" ]; then
			skip "$tag" "$bpf_skip"
			continue
		fi
		t0=$SECONDS
		LAG=1 rec "$tag" "$b" "$tmp/moving" "$mode" $CPU_MS $SPIN "$tmp/liba.so" "$tmp/libb.so" || continue
		line=$(grep '^hostile_moving: [a-z]* [0-9]* cycles' "$O/$tag.out")
		if [ -z "$line" ]; then
			fail "$tag" "the program printed no result: $(head -3 "$O/$tag.out" | tr '\n' '|')"
			continue
		fi
		echo "# $tag: $line ($((SECONDS - t0)) s)"
		echo "# $tag: $(grep '^hostile_moving: lag' "$O/$tag.out")"
		if [ "$mode" = dl ] && [ "$b" = copy ]; then
			# loads = 2 per cycle, minus the first (nothing was there before)
			read -r n same < <(sed -n 's/.* \([0-9]*\) cycles, \([0-9]*\) same address.*/\1 \2/p' <<<"$line")
			echo "# dl: ${same:-?} of $((2 * ${n:-0} - 1)) loads where the other library had just been"
			if [ "${same:-0}" -ge 1 ]; then
				pass moving/dl-same-address
			else
				fail moving/dl-same-address "the loader never put one library where the other was: $line"
			fi
		fi
		if out=$(python3 "$CHECK" moving "$O/$tag.ps" --min $MIN \
			--via "via_a=$tmp/liba.so:a_outer,a_spin" --via "via_b=$tmp/libb.so:b_outer,b_spin" 2>&1); then
			pass "$tag"
		else
			fail "$tag" "$(tr '\n' '|' <<<"$out" | cut -c1-900)"
		fi
		sed -n 's/^MOVING/# MOVING/p' <<<"$out"
	done
done

# ---- exec ------------------------------------------------------------------------------
for b in copy bpf; do
	tag=exec/$b
	if [ "$b" = bpf ] && [ -n "$bpf_skip" ]; then
		skip "$tag" "$bpf_skip"
		continue
	fi
	ms=$((CPU_MS / 4))
	FREQ=500 rec "$tag" "$b" "$tmp/exec_a" $ms "$tmp/exec_b" $ms "$tmp/exec_a" $ms "$tmp/exec_b" $ms || continue
	if [ "$(grep -c ": $ms ms$" "$O/$tag.out")" != 4 ]; then
		fail "$tag" "want four images run to their end: $(head -4 "$O/$tag.out" | tr '\n' '|')"
		continue
	fi
	if out=$(python3 "$CHECK" exec "$O/$tag.ps" --min $MIN \
		--image "$tmp/exec_a:main,exa_outer,exa_spin" \
		--image "$tmp/exec_b:main,exb_outer,exb_mid,exb_spin" 2>&1); then
		pass "$tag"
	else
		fail "$tag" "$(tr '\n' '|' <<<"$out" | cut -c1-900)"
	fi
	sed -n 's/^EXEC/# EXEC/p' <<<"$out"
done

exit $((fails > 0))
