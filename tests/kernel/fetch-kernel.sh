#!/usr/bin/env bash
# fetch-kernel.sh DIR - puts Debian sid's linux-binary-7.* kernel (the major
# version pinned: KMAJOR, default 7) under DIR: DIR/vmlinuz, DIR/config,
# DIR/modules/ (the package's modules tree), DIR/version.
# Uses a private apt configuration (a sid source, its own lists and cache
# under DIR/apt), so the host's apt sources are neither read nor changed.
# A second run with DIR/vmlinuz present downloads nothing.
# Exit 0: fetched (or cached); 77: cannot (reason on stdout as "SKIP ...");
# anything else: a real failure.
set -u
mkdir -p "$1" && dir=$(cd "$1" && pwd) || exit 1
major=${KMAJOR:-7}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if [ -s "$dir/vmlinuz" ] && [ -s "$dir/version" ]; then
	exit 0
fi
command -v apt-get >/dev/null || { echo "SKIP kernel: no apt-get to fetch Debian's kernel"; exit 77; }
command -v dpkg-deb >/dev/null || { echo "SKIP kernel: no dpkg-deb"; exit 77; }
apt=$dir/apt
mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/etc"
echo "deb [trusted=yes] $mirror sid main" >"$apt/etc/sources.list"
opts=(-o Dir::Etc::SourceList="$apt/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o Dir::State::Lists="$apt/lists" -o Dir::Cache::Archives="$apt/archives"
      -o Dir::Cache="$apt/cache" -o Dir::State::status=/dev/null
      -o APT::Architecture=amd64 -o Acquire::Languages=none
      -o Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false
      -o Acquire::Retries=2 -o Acquire::http::Timeout=20 -o Debug::NoLocking=1)
mkdir -p "$apt/cache"
if ! timeout 300 apt-get "${opts[@]}" update -q >"$apt/update.log" 2>&1 ||
   grep -q '^\(Err\|W: Failed\)' "$apt/update.log"; then
	echo "SKIP kernel: cannot reach the Debian archive ($mirror): $(grep -m1 -E '^(Err|W:|E:)' "$apt/update.log")"
	exit 77
fi
# the newest linux-binary-<major>.*-amd64 (not -cloud/-rt, not a meta package)
pkg=$(apt-cache "${opts[@]}" pkgnames linux-binary-$major. 2>/dev/null |
	grep -E "^linux-binary-$major\.[0-9.]+[^-]*-amd64$" | sort -V | tail -1)
[ -n "$pkg" ] || { echo "SKIP kernel: no linux-binary-$major.*-amd64 package in sid"; exit 77; }
ver=${pkg#linux-binary-}
cd "$apt/archives" || exit 1
rm -f ./*.deb
if ! timeout 300 apt-get "${opts[@]}" download -q "$pkg" "linux-base-$ver" >"$apt/download.log" 2>&1; then
	# linux-base-<ver> (the config) is optional
	timeout 300 apt-get "${opts[@]}" download -q "$pkg" >>"$apt/download.log" 2>&1 || {
		echo "SKIP kernel: apt-get download $pkg failed: $(grep -m1 -E '^(Err|E:)' "$apt/download.log")"; exit 77; }
fi
x=$dir/extract
rm -rf "$x"; mkdir -p "$x"
for d in ./*.deb; do dpkg-deb -x "$d" "$x" || exit 1; done
vmlinuz=$(find "$x" -name 'vmlinuz*' -type f | head -1)
[ -n "$vmlinuz" ] || { echo "FAIL kernel: no vmlinuz in $pkg"; exit 1; }
cp "$vmlinuz" "$dir/vmlinuz.tmp"
config=$(find "$x" -name 'config*' -type f | head -1)
[ -n "$config" ] && cp "$config" "$dir/config"
moddir=$(find "$x" -type d -path '*/lib/modules/*' -prune | head -1)
rm -rf "$dir/modules"; [ -n "$moddir" ] && mv "$moddir" "$dir/modules"
echo "$ver" >"$dir/version"
mv "$dir/vmlinuz.tmp" "$dir/vmlinuz"
rm -rf "$x" "$apt/archives"/*.deb
echo "kernel: $pkg fetched into $dir"
