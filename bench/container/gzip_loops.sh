# shellcheck shell=bash
# Sourced by bench/container/run.sh and capture.sh: the workload both
# measure, gzip -6 in a loop on the host and another inside a second root.
#   start_gzip_loops   needs w (a work directory), ROOTFS and the array
#                      loops; sets ROOT2 and root_desc, appends the two
#                      loops' pids (process groups: kill -- -PID) to loops
start_gzip_loops() {
	if [ -f "$ROOTFS/.ustack-complete" ]; then
		ROOT2=$ROOTFS
		root_desc="Debian trixie minbase ($ROOTFS)"
	else
		ROOT2=$w/root
		for f in $(command -v gzip) $(ldd "$(command -v gzip)" | grep -o '/[^ ]*') /bin/sh $(ldd /bin/sh | grep -o '/[^ ]*'); do
			mkdir -p "$ROOT2$(dirname "$f")"; cp -L "$f" "$ROOT2$f"
		done
		root_desc="a copy of the host's gzip, sh and their libraries ($ROOT2)"
	fi
	mkdir -p "$ROOT2/tmp" "$ROOT2/dev"
	# the loop inside writes to /dev/null: without one (the copied root has
	# none) it only printed errors, and no gzip ran in the second root
	[ -e "$ROOT2/dev/null" ] || mknod -m 666 "$ROOT2/dev/null" c 1 3
	base64 -w 100 /dev/urandom | head -c 20000000 >"$w/big"
	cp "$w/big" "$ROOT2/tmp/ustack-bench-big"
	setsid sh -c "while :; do gzip -6 -c '$w/big' >/dev/null; done" &
	loops+=($!)
	setsid chroot "$ROOT2" /bin/sh -c 'while :; do gzip -6 -c /tmp/ustack-bench-big >/dev/null; done' &
	loops+=($!)
	sleep 1
}
