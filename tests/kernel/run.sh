#!/usr/bin/env bash
# make check-kernel: ustack on a real newer kernel (Debian sid's
# linux-binary-7.*, which has perf's deferred user callchains), booted in
# QEMU without KVM. Builds an initramfs (busybox-static, build/ustack and
# the shared libraries ldd names, the test programs of tests/kernel/progs),
# boots it with qemu-system-x86_64 -accel tcg,thread=single -smp 2 -m 1G
# (one host thread for both vCPUs: with multi-threaded TCG the guest
# panicked in about 1 run of 3 with "Oops: int3" in trace_syscall_enter
# while tracepoints were being switched on, text patching racing a vCPU), runs
# tests/kernel/guest.sh inside and brings its PASS/FAIL/SKIP lines back on
# the serial console. Exit status 1 on any FAIL, or when the guest did not
# finish; a SKIP (with the reason) where it cannot run: no qemu, busybox or
# cpio, no network to the Debian archive.
# The kernel is cached under build/kernel (a second run downloads nothing).
# Env: KMAJOR (default 7), KTEST_TIMEOUT (seconds for the boot + tests,
# default 480), USTACK (default build/ustack).
set -u
cd "$(dirname "$0")/../.."
top=$PWD
out=$top/build/kernel
ustack=${USTACK:-$top/build/ustack}
t0=$SECONDS
summary() { # pass fail skip
	echo "check-kernel: $1 passed, $2 failed, $3 skipped ($((SECONDS - t0)) s)"
}
skip_all() {
	echo "SKIP check-kernel: $*"
	summary 0 0 1
	exit 0
}
for tool in qemu-system-x86_64 cpio gzip; do
	command -v $tool >/dev/null || skip_all "no $tool (apt-get install qemu-system-x86 cpio; scripts/deps.sh lists them)"
done
busybox=$(command -v busybox || true)
[ -n "$busybox" ] && file -L "$busybox" 2>/dev/null | grep -q 'statically linked' ||
	skip_all "no static busybox (apt-get install busybox-static)"
[ -x "$ustack" ] || { echo "FAIL check-kernel: $ustack not built (make)"; summary 0 1 0; exit 1; }

mkdir -p "$out"
fetch=$(bash tests/kernel/fetch-kernel.sh "$out")
rc=$?
[ -n "$fetch" ] && echo "$fetch"
[ $rc -eq 77 ] && { summary 0 0 1; exit 0; }
[ $rc -ne 0 ] && { echo "FAIL check-kernel: fetching the kernel failed"; summary 0 1 0; exit 1; }
kver=$(cat "$out/version")
echo "check-kernel: kernel $kver ($(( SECONDS - t0 )) s)"

# ---- the initramfs ---------------------------------------------------------
root=$out/root
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,progs,tests,ustack}
cp "$busybox" "$root/bin/busybox"
for a in sh ash mount umount mkdir cat echo grep sed awk sort uniq wc head tail tr cut \
	 ls rm cp sleep poweroff reboot uname test '[' expr printf seq timeout date dmesg \
	 true false env id chmod ln mv basename dirname sync xargs find od kill ps taskset; do
	ln -sf busybox "$root/bin/$a"
done
cp "$ustack" "$root/ustack/ustack"
# test programs: the same source with and without frame pointers
CC=${CC:-gcc}
build_prog() { # out flags...
	local o=$1; shift
	$CC -O2 -g -pthread "$@" -o "$root/progs/$o" tests/kernel/progs/kfp_threads.c ||
		{ echo "FAIL check-kernel: building $o"; summary 0 1 0; exit 1; }
}
build_prog kfp_threads_fp -fno-omit-frame-pointer -fno-shrink-wrap
build_prog kfp_threads_nofp -fomit-frame-pointer
$CC -O2 -g -o "$root/progs/offcpu_sleep" tests/kernel/progs/offcpu_sleep.c ||
	{ echo "FAIL check-kernel: building offcpu_sleep"; summary 0 1 0; exit 1; }
# shared libraries of everything, at the paths the loader looks for them
copy_libs() {
	ldd "$1" 2>/dev/null | awk '/=> \//{print $3} /^\t\/[^ ]*ld-linux/{print $1}' |
	while read -r lib; do
		[ -e "$root$lib" ] && continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}
for f in "$root/ustack/ustack" "$root"/progs/*; do copy_libs "$f"; done
# libraries ustack dlopen()s, which ldd does not name: the BPF backend's
# libbpf, the symbolizer's libdw/libelf (src/common/dl_syms.h) and its
# decompressors; with what they link, when present
for l in /lib/x86_64-linux-gnu/libbpf.so.1 /lib/x86_64-linux-gnu/libdw.so.1 \
	/lib/x86_64-linux-gnu/libelf.so.1 /lib/x86_64-linux-gnu/liblzma.so.5 \
	/lib/x86_64-linux-gnu/libzstd.so.1; do
	[ -e "$l" ] || continue
	mkdir -p "$root$(dirname "$l")"
	cp -L "$l" "$root$l"
	copy_libs "$l"
done
[ -e /lib64/ld-linux-x86-64.so.2 ] && { mkdir -p "$root/lib64"; cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"; }
cp "${KTEST_GUEST:-tests/kernel/guest.sh}" "$root/tests/guest.sh"
cat >"$root/init" <<'INIT'
#!/bin/sh
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
mount -t debugfs nodev /sys/kernel/debug 2>/dev/null
mount -t tmpfs tmp /tmp
echo "KTEST-BEGIN $(uname -r)"
sh /tests/guest.sh 2>&1
echo "KTEST-END $?"
sync
poweroff -f
INIT
chmod +x "$root/init" "$root/tests/guest.sh"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out/initramfs.gz" ||
	{ echo "FAIL check-kernel: cpio"; summary 0 1 0; exit 1; }
echo "check-kernel: initramfs $(( $(stat -c %s "$out/initramfs.gz") / 1024 )) KiB ($(( SECONDS - t0 )) s)"

# ---- boot ------------------------------------------------------------------
log=$out/console.log
rm -f "$log"
timeout -k 10 "${KTEST_TIMEOUT:-480}" qemu-system-x86_64 -accel tcg,thread=single -smp 2 -m 1G \
	-nographic -no-reboot -monitor none -serial "file:$log" \
	-kernel "$out/vmlinuz" -initrd "$out/initramfs.gz" \
	-append "console=ttyS0 quiet panic=-1 loglevel=3" >"$out/qemu.out" 2>&1
qrc=$?
tr -d '\r' <"$log" >"$log.txt" 2>/dev/null
grep -E '^(PASS|FAIL|SKIP|INFO) ' "$log.txt"
pass=$(grep -c '^PASS ' "$log.txt"); fail=$(grep -c '^FAIL ' "$log.txt"); skip=$(grep -c '^SKIP ' "$log.txt")
if ! grep -q '^KTEST-END' "$log.txt"; then
	echo "FAIL check-kernel: the guest did not finish (qemu status $qrc; console in $log)"
	tail -20 "$log.txt" | sed 's/^/    | /'
	fail=$((fail + 1))
fi
if [ "$fail" -ne 0 ]; then
	# the next run overwrites console.log: a failed run's stays for reading
	kept=$out/console.failed.$(date +%Y%m%d-%H%M%S).txt
	cp "$log.txt" "$kept" && echo "check-kernel: the failed run's console (what the cases printed): $kept"
fi
summary "$pass" "$fail" "$skip"
[ "$fail" -eq 0 ]
