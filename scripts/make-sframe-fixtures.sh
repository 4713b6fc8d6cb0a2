#!/usr/bin/env bash
# Build the SFrame fixtures under tests/data/sframe/ (committed; make check
# never runs this script).
#
#   v1/  host toolchain (binutils 2.40)                    -> SFrame v1
#   v2/  Debian trixie chroot (binutils 2.44, gcc 14)      -> SFrame v2
#   v3/  Debian forky chroot (binutils 2.47, gcc 16)       -> SFrame v3
#   damaged/  hand-damaged copies for the error paths (scripts/make-sframe-damaged.py)
#
# Each output X comes with X.objdump.txt, the `objdump --sframe X` text of
# the toolchain that built it: the oracle the integration test compares
# `ustack sframe dump` against. The chroots are created on first use
# (debootstrap, ~500 MB each, a few minutes) and reused afterwards.
#
# usage: scripts/make-sframe-fixtures.sh [v1] [v2] [v3] [damaged]   (default: all)
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
SRC=$TOP/tests/data/sframe/src
OUT=$TOP/tests/data/sframe
MIRROR=${MIRROR:-http://deb.debian.org/debian}
TRIXIE=${TRIXIE_CHROOT:-/var/tmp/chroot-trixie}
FORKY=${FORKY_CHROOT:-/var/tmp/chroot-forky}

ensure_chroot() { # suite dir [script]
	local suite=$1 dir=$2 script=${3:-}
	if [ -x "$dir/usr/bin/objdump" ] && [ -x "$dir/usr/bin/gcc" ]; then
		return 0
	fi
	command -v debootstrap >/dev/null || { echo "need debootstrap (apt-get install debootstrap)" >&2; exit 1; }
	[ "$(id -u)" -eq 0 ] || { echo "creating $dir needs root" >&2; exit 1; }
	echo "== debootstrap $suite into $dir (a few minutes)"
	# shellcheck disable=SC2086
	debootstrap --variant=minbase --include=binutils,gcc,libc6-dev "$suite" "$dir" "$MIRROR" $script
}

# The fixture build itself, run inside the toolchain's root (/ for the host).
# Small linked outputs only: .o files would need relocations to give their
# function starts.
build_here() { # workdir
	local w=$1 cc="gcc -O2 -g0 -Wa,--gsframe -fno-stack-protector -fcf-protection=none"
	cd "$w"
	$cc -shared -nostdlib -fPIC -o shapes.so shapes.c
	$cc -shared -nostdlib -fPIC -o big.so big.c
	$cc -shared -nostdlib -fPIC -o drap.so drap.c
	$cc -static -nostdlib -no-pie -o exe start.S entry.c
	for f in shapes.so big.so drap.so exe; do
		objdump --sframe "$f" >"$f.objdump.txt"
	done
	{ gcc --version | head -n 1; objdump --version | head -n 1; } >toolchain.txt
}

build_in() { # version root(/ for host)
	local ver=$1 root=$2 work dest=$OUT/$1
	mkdir -p "$dest"
	if [ "$root" = / ]; then
		work=$(mktemp -d)
		cp "$SRC"/* "$work"/
		(build_here "$work")
	else
		work=/tmp/ustack-sframe-fixtures
		rm -rf "${root:?}$work"
		mkdir -p "$root$work"
		cp "$SRC"/* "$root$work"/
		chroot "$root" /bin/bash -c "$(declare -f build_here); build_here $work"
		work=$root$work
	fi
	for f in shapes.so big.so drap.so exe; do
		cp "$work/$f" "$dest/$f"
		cp "$work/$f.objdump.txt" "$dest/$f.objdump.txt"
	done
	cp "$work/toolchain.txt" "$dest/toolchain.txt"
	rm -rf "$work"
	echo "== $dest: $(grep -m1 Version: "$dest/shapes.so.objdump.txt" | tr -s ' ')"
}

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(v1 v2 v3 damaged)
for t in "${targets[@]}"; do
	case $t in
	v1) build_in v1 / ;;
	v2) ensure_chroot trixie "$TRIXIE"; build_in v2 "$TRIXIE" ;;
	v3) ensure_chroot forky "$FORKY" /usr/share/debootstrap/scripts/sid; build_in v3 "$FORKY" ;;
	damaged) python3 "$TOP/scripts/make-sframe-damaged.py" "$OUT" ;;
	*) echo "unknown target $t" >&2; exit 2 ;;
	esac
done
