#!/usr/bin/env bash
# Install the Debian packages ustack needs to build and test, when missing,
# and mount tracefs when it is not (tracepoint events need it).
# As root: apt-get install them. Otherwise: print the exact command and fail.
#   scripts/deps.sh          every package (make deps, demo, check, bench)
#   scripts/deps.sh --build  only what compiling needs (plain make): the
#                            compilers and the headers of the libraries
#                            ustack uses; nothing is mounted
set -u
mode=all
[ "${1:-}" = --build ] && mode=build
# package            what needs it
PKGS=(
  gcc                # compiler (build)
  make               # build
  binutils           # as --gsframe, objdump --sframe, readelf (build, test oracles)
  libc6-dev          # headers
  clang              # libFuzzer targets (make fuzz); BPF programs (-target bpf)
  libbpf-dev         # loading the BPF backend's program (record --backend bpf)
  bpftool            # BPF skeleton headers (build)
  libclang-rt-14-dev # libFuzzer / sanitizer runtimes for clang
  elfutils           # eu-stack, eu-readelf (test oracles)
  libelf-dev         # symbolizer
  libdw-dev          # symbolizer (DWARF lines, inlines)
  gdb                # test oracle
  libc6-dbg          # names of libc internals (start_thread, clone3) from its debug file
  libunwind-dev      # benchmark peer (unw_backtrace)
  linux-perf         # perf (record tests, benchmark peer)
  python3            # test helpers
  python3.11-dbg     # CPython's gdb extension (py-bt): oracle of snapshot_python_gdb, peer of bench/python
  zlib1g-dev         # zlib crc32 as an outside check of the trace CRC (test_trace)
  liblzma-dev        # symbolizer: MiniDebugInfo (.gnu_debugdata) headers; liblzma.so.5 is dlopen'ed
  libzstd-dev        # symbolizer: zstd-compressed debug sections (headers; libzstd.so.1 dlopen'ed)
  libdebuginfod-dev  # symbolizer: debuginfod client (headers; libdebuginfod.so.1 dlopen'ed)
  debuginfod         # test server for symbolize_debugsrc
  zstd               # zstd CLI: zstd-compressed fixtures (tests/integration/lib/zstd_sections.py)
  systemtap-sdt-dev  # <sys/sdt.h>: test programs with USDT probes (record -e usdt:...)
  xz-utils           # xz CLI: MiniDebugInfo fixtures (symbolize_debugsrc)
  nodejs             # JIT code with frame pointers and a perf map (jit_perfmap test); its npm installs speedscope (report_viewers)
  chromium           # report_viewers (speedscope app), flamegraph_browser (the SVG): headless, DevTools protocol
  chromium-driver    # WebDriver for chromium; report_viewers talks the DevTools protocol itself and does not need it
  python3-websocket  # report_viewers, flamegraph_browser: DevTools protocol client (tests/integration/lib/speedscope_view.py, svg_browser.py)
  python3-jsonschema # report_viewers: validates speedscope files against the package's schema
  perl               # report_viewers: runs the vendored stackcollapse-perf.pl
  golang-go          # go tool pprof: outside reader of report/snapshot --format pprof (report_pprof test)
  protobuf-compiler  # protoc --decode_raw: second decoder of the pprof output (report_pprof test)
  abigail-tools      # abidw/abidiff: ABI of libustack.so against abi/libustack.abi (abi_check test, make abi-baseline)
  pkgconf            # pkg-config: builds an outside program against the installed ustack.pc (install test)
  man-db             # man -l --warnings: renders the generated man pages (install test)
  qemu-system-x86    # make check-kernel: boots Debian sid's 7.x kernel (tests/kernel/run.sh, TCG)
  busybox-static     # make check-kernel: the guest's shell and tools (initramfs)
  cpio               # make check-kernel: packs the initramfs (newc)
)
# what plain `make` needs: a missing header otherwise shows as a compiler
# error deep in the build (bpf/bpf_helpers.h, elfutils/libdw.h)
BUILD_PKGS=(gcc make binutils libc6-dev clang libbpf-dev bpftool libelf-dev libdw-dev
  zlib1g-dev liblzma-dev libzstd-dev libdebuginfod-dev)
if [ $mode = build ]; then
  # not a Debian system: nothing to ask; the compiler speaks for itself
  command -v dpkg-query >/dev/null || exit 0
  PKGS=("${BUILD_PKGS[@]}")
fi
# make check runs `deps` and `deps-build` in parallel: as root, one
# installs at a time and the other then finds what it needs installed
# (two apt-gets at once: the second fails on apt's lock). A non-root run
# installs nothing and takes no lock.
if [ "$(id -u)" -eq 0 ]; then
  exec 9>>/tmp/ustack-deps.lock && flock 9
fi
# one dpkg-query for all (a package it does not know is left out of its
# answer and reported on stderr)
installed=" $(dpkg-query -W -f='${Package}=${Status}\n' "${PKGS[@]}" 2>/dev/null |
  sed -n 's/=install ok installed$//p' | tr '\n' ' ') "
missing=()
for p in "${PKGS[@]}"; do
  [[ $installed == *" $p "* ]] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  cmd="apt-get install -y --no-install-recommends ${missing[*]}"
  if [ $mode = build ] && { [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; }; then
    # one line: what is missing and the command that fixes it
    echo "ustack: cannot build: missing Debian packages ${missing[*]}; run: sudo make deps" >&2
    exit 1
  fi
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # another apt (unattended-upgrades at boot) is waited for, not failed on
    { apt-get update -qq -o DPkg::Lock::Timeout=600 && $cmd -qq -o DPkg::Lock::Timeout=600; } >/tmp/ustack-deps.log 2>&1 || {
      echo "deps: '$cmd' failed; see /tmp/ustack-deps.log" >&2; tail -5 /tmp/ustack-deps.log >&2; exit 1; }
  else
    echo "deps: missing packages: ${missing[*]}" >&2
    echo "deps: run as root: apt-get update && $cmd" >&2
    exit 1
  fi
fi

[ $mode = build ] && exit 0

# Tracepoint events (the demo's syscalls:sys_enter_futex, most record tests)
# need tracefs. systemd mounts it at boot; a machine without systemd (a
# container, a minimal VM) may not have it. ustack itself never mounts
# anything (a library must not change the machine behind its caller's back),
# so the set-up does it, once, and says so. Not fatal: without it the
# tracepoint tests skip with the reason and cpu-clock still works.
TRACEFS=/sys/kernel/tracing
if [ ! -e "$TRACEFS/events" ] && [ ! -e /sys/kernel/debug/tracing/events ]; then
  if [ "$(id -u)" -eq 0 ] && mount -t tracefs nodev "$TRACEFS" 2>/tmp/ustack-tracefs.err; then
    echo "deps: tracefs was not mounted; mounted it at $TRACEFS (tracepoint events need it)"
  else
    echo "deps: tracefs is not mounted and could not be mounted ($(head -1 /tmp/ustack-tracefs.err 2>/dev/null || echo 'not root'));" \
      "tracepoint events will not work: as root, mount -t tracefs nodev $TRACEFS" >&2
  fi
fi
exit 0
