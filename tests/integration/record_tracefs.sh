#!/usr/bin/env bash
# ustack never mounts anything itself: without tracefs, a tracepoint event
# fails with one line saying how to mount it, and nothing was mounted.
# Run in a private mount namespace (unshare -m) with tracefs unmounted
# there, so the machine's own mount is untouched.
set -u
USTACK=${USTACK:-build/check/ustack}
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $1: $2"; }

[ -x "$USTACK" ] || { fail record_tracefs "no $USTACK"; exit 1; }
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
	skip record_tracefs_unmounted "needs root and unshare (util-linux) for a private mount namespace"
	exit 0
fi
out=$(unshare -m --propagation private sh -c '
	for d in /sys/kernel/debug/tracing /sys/kernel/tracing /sys/kernel/debug; do
		umount "$d" 2>/dev/null
	done
	if [ -e /sys/kernel/tracing/events ] || [ -e /sys/kernel/debug/tracing/events ]; then
		echo "STILL-MOUNTED"; exit 0
	fi
	"$0" record -q -o /dev/null -e syscalls:sys_enter_write -- true 2>&1
	echo "RC=$?"
	[ -e /sys/kernel/tracing/events ] && echo "MOUNTED-BY-USTACK"
	exit 0' "$USTACK" 2>&1)
case "$out" in
*STILL-MOUNTED*)
	skip record_tracefs_unmounted "could not unmount tracefs in a private mount namespace" ;;
*MOUNTED-BY-USTACK*)
	fail record_tracefs_unmounted "ustack mounted tracefs itself: $out" ;;
*"tracefs is not mounted at /sys/kernel/tracing (as root: mount -t tracefs nodev /sys/kernel/tracing)"*RC=1*)
	pass record_tracefs_unmounted ;;
*)
	fail record_tracefs_unmounted "want one line saying how to mount tracefs and exit 1, got: $out" ;;
esac
exit $((fails > 0))
