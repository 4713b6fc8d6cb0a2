# tracepoint_why SUBSYS:NAME - prints nothing when the tracepoint can be
# recorded here, else one line saying why not (for a SKIP). `make check`
# mounts tracefs when it is missing (scripts/deps.sh); this is for machines
# where that could not be done, so that the tests skip with the reason
# instead of failing on ustack's (correct) "tracefs is not mounted" error.
tracepoint_why() {
	local sys=${1%%:*} name=${1#*:} d
	for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
		[ -e "$d/events/$sys/$name/id" ] && return 0
	done
	if [ -e /sys/kernel/tracing/events ] || [ -e /sys/kernel/debug/tracing/events ]; then
		echo "no tracepoint $1 on this kernel"
	else
		echo "tracefs is not mounted (as root: mount -t tracefs nodev /sys/kernel/tracing, or make deps)"
	fi
}
