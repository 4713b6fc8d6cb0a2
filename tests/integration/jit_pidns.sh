#!/usr/bin/env bash
# A JIT map written inside a container is found where the process wrote it:
# /tmp/perf-<its pid in its PID namespace>.map in its own /tmp, opened in
# its own root (openat2 RESOLVE_IN_ROOT), never the host's file of that name.
# The process is progs/hostile_jit.c (no map of its own: the test writes
# it), which spins in JIT code and writes "NSPID SPIN_START SPIN_SIZE ..."
# to an INFO file.
#
# Lines (PASS/FAIL/SKIP jit_pidns/...):
#   ns/record/BACKEND  in `unshare -m -p -f --mount-proc` with a tmpfs on /tmp:
#                      /proc/HOSTPID/status NStgid says HOSTPID then the INFO
#                      pid (the oracle); the map inside names spin
#                      "jit_ns_real", a decoy /tmp/perf-HOSTPID.map on the
#                      host names it "decoy_host"; `record -p HOSTPID -d 2`,
#                      `report`: frames named jit_ns_real+0x..., no decoy
#   ns/snapshot        `snapshot -p HOSTPID`: the same
#   ns/symlink         the map inside replaced by a symbolic link to an
#                      absolute host path whose file names spin
#                      "decoy_link": snapshot names nothing from it
#   chroot/record/BACKEND, chroot/snapshot
#                      the process chrooted (a static hostile_jit) into ROOT
#                      whose tmp is a symbolic link to the absolute path
#                      HOSTDIR: in the process's root that is ROOT/HOSTDIR (the
#                      map naming spin "jit_chroot_real"), on the host HOSTDIR
#                      (a decoy naming it "decoy_chroot"). The string
#                      /proc/PID/root/tmp/... would give the decoy.
# Needs root and unshare (SKIP otherwise). Env (from make check): USTACK CC
# TOP; KEEP_TMP=1 keeps the files.
set -u
T=jit_pidns
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
fails=0
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $T/$1: $2"; }

[ -x "$USTACK" ] || { fail setup "no $USTACK"; exit 1; }
[ "$(id -u)" -eq 0 ] || { skip all "needs root (unshare -m -p, mount)"; exit 0; }
command -v unshare >/dev/null || { skip all "unshare not installed"; exit 0; }
case $USTACK in /*) ;; *) USTACK=$PWD/$USTACK ;; esac
# not under /tmp: the namespace mounts its own /tmp over it
work=$(mktemp -d /var/tmp/ustack-jitpidns.XXXXXX)
upids=()
decoys=()
cleanup() {
	for p in "${upids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${upids[@]}"; do wait "$p" 2>/dev/null; done
	rm -f "${decoys[@]}"
	[ -n "${KEEP_TMP:-}" ] && echo "# files kept in $work" || rm -rf "$work"
}
trap cleanup EXIT

$CC -O2 -pthread -o "$work/hostile_jit" "$TOP/tests/integration/progs/hostile_jit.c" ||
	{ fail setup "cannot build progs/hostile_jit.c"; exit 1; }
bpf_skip=
if ! "$USTACK" record -q --backend bpf -o "$work/probe.data" -- true >/dev/null 2>"$work/probe.err"; then
	bpf_skip=$(grep -m1 . "$work/probe.err")
	bpf_skip=${bpf_skip:-record --backend bpf failed without a reason}
fi

# host_pid EXE: the pid (as we see it) of the process running EXE
host_pid() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$1" ] && { echo "${p#/proc/}"; return 0; }
	done
	return 1
}

# start NAME EXE INFO CMD...: run CMD in new mount and PID namespaces, wait
# for INFO; sets hpid (host pid), nspid, spin, spin_size. 0 if all went well
start() {
	local name=$1 exe=$2 info=$3 i ns
	shift 3
	unshare --kill-child -m -p -f --mount-proc "$@" &
	upids+=($!)
	for i in $(seq 300); do
		[ -s "$info" ] && break
		sleep 0.1
	done
	if ! [ -s "$info" ]; then
		skip "$name" "no process started in new namespaces within 30 s (unshare -m -p refused here?)"
		return 1
	fi
	read -r nspid spin spin_size _ <"$info"
	hpid=$(host_pid "$exe") || { fail "$name" "no process runs $exe"; return 1; }
	# the oracle: the kernel's own view of both pids
	ns=$(sed -n 's/^NStgid:\t//p' "/proc/$hpid/status" | tr '\t' ' ')
	if [ "$ns" != "$hpid $nspid" ]; then
		fail "$name" "NStgid of $hpid is '$ns', want '$hpid $nspid'"
		return 1
	fi
	return 0
}

# check NAME OUT WANT BAD...: OUT names frames WANT+0x..., and none of BAD
check() {
	local name=$1 out=$2 want=$3 b n
	shift 3
	n=$(grep -c "$want+0x" "$out")
	for b in "$@"; do
		if grep -q "$b" "$out"; then
			fail "$name" "the decoy $b is named: $(grep -m1 "$b" "$out" | cut -c1-200)"
			return 1
		fi
	done
	if [ "$n" -eq 0 ]; then
		fail "$name" "no frame named $want+0x...: $(grep -m3 -E 'jit|\?\?|0x' "$out" | cut -c1-160 | tr '\n' '|')"
		return 1
	fi
	echo "# $name: $n frames named $want"
	pass "$name"
}

# record_check NAME WANT BAD...: record hpid with each backend, then report
record_check() {
	local name=$1 be f
	shift
	for be in copy bpf; do
		f=$work/${name//\//_}.$be
		if [ $be = bpf ] && [ -n "$bpf_skip" ]; then
			skip "$name/$be" "$bpf_skip"
			continue
		fi
		if ! timeout -k 10 120 "$USTACK" record -q --backend $be -p "$hpid" -d 2 \
			-o "$f.data" >/dev/null 2>"$f.err"; then
			fail "$name/$be" "record failed: $(head -c 300 "$f.err")"
			continue
		fi
		"$USTACK" report -i "$f.data" >"$f.txt" 2>>"$f.err"
		check "$name/$be" "$f.txt" "$@"
	done
}

snap_check() {
	local name=$1 f=$work/${1//\//_}
	shift
	if ! timeout -k 10 120 "$USTACK" snapshot -p "$hpid" >"$f.txt" 2>"$f.err"; then
		fail "$name" "snapshot failed: $(head -c 300 "$f.err")"
		return 1
	fi
	check "$name" "$f.txt" "$@"
}

# ---- a PID namespace with its own /tmp ---------------------------------------------
if start ns "$work/hostile_jit" "$work/ns.info" \
	sh -c "mount -t tmpfs tmpfs /tmp && '$work/hostile_jit' '$work/ns.info' & wait"; then
	printf '%x %x jit_ns_real\n' "0x$spin" "$spin_size" >"/proc/$hpid/root/tmp/perf-$nspid.map"
	printf '%x %x decoy_host\n' "0x$spin" "$spin_size" >"/tmp/perf-$hpid.map"
	decoys+=("/tmp/perf-$hpid.map")
	record_check ns/record jit_ns_real decoy_host
	snap_check ns/snapshot jit_ns_real decoy_host
	# an absolute symbolic link in the container's /tmp, to a host file
	printf '%x %x decoy_link\n' "0x$spin" "$spin_size" >"$work/abs_decoy.map"
	ln -sf "$work/abs_decoy.map" "/proc/$hpid/root/tmp/perf-$nspid.map"
	if "$USTACK" snapshot -p "$hpid" >"$work/ns_link.txt" 2>"$work/ns_link.err" &&
		grep -q '^#0 ' "$work/ns_link.txt"; then
		if grep -q "decoy_link\|jit_ns_real" "$work/ns_link.txt"; then
			fail ns/symlink "a name through the symbolic link: $(grep -m1 "decoy_link\|jit_ns_real" "$work/ns_link.txt" | cut -c1-200)"
		else
			pass ns/symlink
		fi
	else
		fail ns/symlink "snapshot failed: $(head -c 300 "$work/ns_link.err")"
	fi
fi

# ---- a chroot whose tmp is an absolute symbolic link -----------------------------
root=$work/root hostdir=$work/hostdir
if ! $CC -O2 -static -pthread -o "$work/hj_static" "$TOP/tests/integration/progs/hostile_jit.c" 2>"$work/static.err"; then
	skip chroot "cannot link hostile_jit statically: $(head -c 200 "$work/static.err")"
else
	mkdir -p "$root$hostdir" "$hostdir"
	cp "$work/hj_static" "$root/hj"
	ln -s "$hostdir" "$root/tmp"
	if start chroot "$root/hj" "$root/info" chroot "$root" /hj /info; then
		printf '%x %x jit_chroot_real\n' "0x$spin" "$spin_size" >"$root$hostdir/perf-$nspid.map"
		printf '%x %x decoy_chroot\n' "0x$spin" "$spin_size" >"$hostdir/perf-$nspid.map"
		record_check chroot/record jit_chroot_real decoy_chroot
		snap_check chroot/snapshot jit_chroot_real decoy_chroot
	fi
fi
exit $((fails > 0))
