# Sourced by integration tests (not a test itself: run-tests.sh runs only
# tests/integration/*.sh).
#
# syscalls PID: "TID <contents of /proc/PID/task/TID/syscall>" per thread
syscalls() { awk '{ f = FILENAME; sub(/\/syscall$/, "", f); sub(/.*\//, "", f); print f, $0 }' /proc/$1/task/*/syscall 2>/dev/null; }
# wait_blocked PID NRS [N]: until every thread (and, given N, exactly N
# threads) is blocked in one of the system calls NRS (a regex: "202" futex,
# "0" read, ...) and two reads 0.1 s apart see the very same calls
# (arguments, sp, pc): a thread that moved, e.g. from a mutex wait to its
# condition-variable wait, shows as a change. A process with every thread
# blocked cannot move on its own, so two tools looking at it see the same
# state. Polled for at most 30 s: a slow or loaded machine is only slower.
wait_blocked() {
	local end=$((SECONDS + 30)) a b
	while [ $SECONDS -lt $end ]; do
		a=$(syscalls "$1")
		if [ -n "$a" ] && { [ -z "${3:-}" ] || [ "$(grep -c . <<<"$a")" -eq "$3" ]; } &&
		   ! awk '{ print $2 }' <<<"$a" | grep -qvE "^($2)\$"; then
			sleep 0.1
			b=$(syscalls "$1")
			[ "$a" = "$b" ] && return 0
		fi
		sleep 0.01
	done
	return 1
}
