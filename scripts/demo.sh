#!/usr/bin/env bash
# make demo: build the bundled example without frame pointers and show its
# own stack as a frame-pointer walk, glibc and ustack see it.
set -euo pipefail
cd "$(dirname "$0")/.."
CC=${CC:-cc}
out=build/examples
mkdir -p "$out"
GSFRAME=$(echo nop | $CC -x assembler -Wa,--gsframe -c -o /dev/null - 2>/dev/null && echo -Wa,--gsframe || true)
if [ -z "$GSFRAME" ]; then
	echo "demo: this assembler cannot emit SFrame (-Wa,--gsframe needs binutils >= 2.40)" >&2
	exit 1
fi
$CC -O2 -fomit-frame-pointer $GSFRAME -rdynamic -Iinclude examples/selfstack.c \
	build/libustack.a -ldl -lpthread -o "$out/selfstack"
echo "== examples/selfstack.c, built -O2 -fomit-frame-pointer $GSFRAME"
echo
"$out/selfstack"

# ---- recording: threads contending on a mutex ---------------------------------
# The workload is built like most distribution code: no frame pointers, no
# SFrame, linked to the system libc (which has neither): every user stack
# below is unwound from DWARF CFI, from the 16 KiB of stack the kernel copied.
$CC -O2 -fomit-frame-pointer -o "$out/futex_demo" examples/futex_demo.c -lpthread
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
	echo
	echo "demo: recording needs root or kernel.perf_event_paranoid <= 1; skipping the rest" >&2
	exit 0
fi
data=build/demo.data
echo
echo "== examples/futex_demo.c: 4 threads contending on a pthread mutex, built -O2 -fomit-frame-pointer"
echo "   (no frame pointers, no SFrame, system libc: every user stack is unwound from DWARF CFI)"
echo
echo "\$ build/ustack record -o $data -e syscalls:sys_enter_futex -e cpu-clock -- $out/futex_demo"
build/ustack record -o "$data" -e syscalls:sys_enter_futex -e cpu-clock -- "$out/futex_demo"
echo
echo "\$ build/ustack report -i $data --stats"
build/ustack report -i "$data" --stats 2>/dev/null |
	grep -E '^(bytes|events|distinct user stacks|lost records|events without user stack|bytes per event|duration):' || true
build/ustack report -i "$data" >build/demo.txt 2>/dev/null
echo
echo "\$ build/ustack report -i $data    (3 of $(grep -cE 'sys_enter_futex|cpu-clock' build/demo.txt) events: a lock wait, an unlock wake, a sample; all in build/demo.txt)"
# one event of each kind: a lock wait, an unlock wake, a sample in spin()
awk -v RS= '/sys_enter_futex/ && /pthread_mutex_lock/ && !l++ { print; print ""; next }
	/sys_enter_futex/ && /pthread_mutex_unlock/ && !u++ { print; print ""; next }
	/cpu-clock/ && /spin/ && !/clock_gettime/ && !c++ { print; print "" }' build/demo.txt
echo "\$ build/ustack report -i $data --format folded    (the 6 most frequent stacks, threads merged)"
build/ustack report -i "$data" --format folded 2>/dev/null >build/demo.folded
# merge the threads (first element: the thread name), drop kernel frames
awk '{ n = $NF; $NF = ""; sub(/ $/, ""); sub(/^[^;]*;/, ""); sub(/;entry_SYSCALL.*/, ""); c[$0] += n }
	END { for (k in c) print c[k], k }' build/demo.folded | sort -rn |
	awk 'NR <= 6 { n = $1; $1 = ""; printf "%6d %s\n", n, substr($0, 2) }'

echo
echo '$ build/ustack flamegraph -i build/demo.data -o build/demo.svg'
build/ustack flamegraph -i "$data" -o build/demo.svg
echo "(open build/demo.svg in a browser: click to zoom, Search to highlight)"
