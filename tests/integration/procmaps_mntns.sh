#!/usr/bin/env bash
# Files the target sees but we do not: a process in its own mount namespace
# runs a copy of sleep from a tmpfs mounted only there. `ustack maps` must
# still name it (its path inside the namespace) and read its build ID through
# /proc/PID/map_files; readelf -n on the original is the oracle.
set -u
USTACK=${USTACK:-build/check/ustack}
name=procmaps_other_mount_ns
command -v readelf >/dev/null || { echo "SKIP $name: readelf not installed"; exit 0; }
command -v unshare >/dev/null || { echo "SKIP $name: unshare not installed"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP $name: needs root (unshare -m, mount)"; exit 0; }
sleep_bin=$(command -v sleep)
want=$(readelf -n "$sleep_bin" | awk '/Build ID:/ { print $3; exit }')
[ -n "$want" ] || { echo "SKIP $name: $sleep_bin has no build ID"; exit 0; }

dir=$(mktemp -d /tmp/ustack-mntns.XXXXXX)
unshare -m --propagation private sh -c "mount -t tmpfs none '$dir' && cp '$sleep_bin' '$dir/hidden-sleep' && exec '$dir/hidden-sleep' 60" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rmdir "$dir"' EXIT
# until the copy runs and is done mapping (blocked in clock_nanosleep or
# nanosleep, syscall 230 or 35), polled for up to 30 s
end=$((SECONDS + 30))
until { grep -q hidden-sleep /proc/$pid/maps && grep -qE '^(230|35) ' /proc/$pid/syscall; } 2>/dev/null ||
      [ $SECONDS -ge $end ]; do
	sleep 0.01
done
if ! grep -q hidden-sleep /proc/$pid/maps 2>/dev/null; then
	echo "SKIP $name: could not start a process in a private mount namespace"; exit 0
fi
if ! grep -qE '^(230|35) ' /proc/$pid/syscall 2>/dev/null; then
	echo "FAIL $name: the copy of sleep is not in its nanosleep after 30 s: $(cat /proc/$pid/syscall 2>&1)"; exit 1
fi
if [ -e "$dir/hidden-sleep" ]; then
	echo "SKIP $name: the tmpfs is visible here (mount propagation)"; exit 0
fi
fails=0
for mode in --text ""; do
	line=$("$USTACK" maps -p $pid $mode | grep ' r-xp ' | grep hidden-sleep)
	if [[ $line == *" $dir/hidden-sleep $want" ]]; then
		echo "PASS ${name}${mode}"
	else
		echo "FAIL ${name}${mode}: got '$line', want path $dir/hidden-sleep and build ID $want"
		fails=$((fails + 1))
	fi
done
exit $((fails > 0))
