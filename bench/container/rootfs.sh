#!/usr/bin/env bash
# A second root file system for tests/integration/container_names.sh and
# bench/container/run.sh: Debian 13 (trixie, another release than the
# bookworm hosts), minbase, made once with debootstrap and cached at
# build/rootfs/trixie (ROOTFS=DIR overrides). Needs root, debootstrap and the
# network (~2 min, ~350 MB). It holds Debian 13's CPython (python3.13, from
# python3-minimal) for tests/integration/python_container.sh; a root cached
# before it did gets it added with the root's own apt-get. `make check` never calls this: it uses the
# root file system only when it is already there (it needs no network).
# Debian sid's CPython 3.14 and 3.15 for tests/integration/python_314.sh:
# SUITE=sid ROOTFS=build/rootfs/sid PACKAGES='python3-minimal python3.15-minimal
# libpython3.14-stdlib libpython3.15-stdlib' (the stdlib: _interpreters,
# for python_314's sub-interpreter case). A cached root gets the PACKAGES
# it lacks with its own apt-get.
# Prints the seconds debootstrap took; exit 0 when the root is usable.
set -u
: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
ROOTFS=${ROOTFS:-$TOP/build/rootfs/trixie}
SUITE=${SUITE:-trixie}
PACKAGES=${PACKAGES:-python3-minimal}
if [ -f "$ROOTFS/.ustack-complete" ]; then
	missing=
	for p in $PACKAGES; do
		chroot "$ROOTFS" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		chroot "$ROOTFS" apt-get install -y -q $missing >"$ROOTFS.log" 2>&1 ||
			{ echo "rootfs: apt-get install$missing in $ROOTFS failed: $(tail -n1 "$ROOTFS.log")" >&2; exit 1; }
	fi
	echo "rootfs: $ROOTFS (cached)"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "rootfs: needs root (debootstrap)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "rootfs: debootstrap not installed (apt-get install debootstrap)" >&2; exit 1; }
rm -rf "$ROOTFS.tmp"
mkdir -p "$(dirname "$ROOTFS")"
t0=$(date +%s.%N)
if ! debootstrap --variant=minbase ${PACKAGES:+--include=${PACKAGES// /,}} "$SUITE" "$ROOTFS.tmp" >"$ROOTFS.log" 2>&1; then
	echo "rootfs: debootstrap $SUITE failed (network?): $(tail -n1 "$ROOTFS.log")" >&2
	rm -rf "$ROOTFS.tmp"
	exit 1
fi
t1=$(date +%s.%N)
# a file only the root has: its libc must be another build than the host's
rm -rf "$ROOTFS"
mv "$ROOTFS.tmp" "$ROOTFS"
touch "$ROOTFS/.ustack-complete"
printf 'rootfs: %s made in %.0f s, %s\n' "$ROOTFS" "$(echo "$t1 - $t0" | bc)" "$(du -sh "$ROOTFS" | cut -f1)"
