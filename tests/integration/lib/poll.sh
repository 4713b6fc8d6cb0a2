# Sourced by tests that poll a trace still being written (a handshake, "the
# trace shows X yet?"): $POLL_USTACK is the ustack those looks run, the
# release build (USTACK_RELEASE, default $TOP/build/ustack, which make check
# builds), else $USTACK. A look is not what a test checks; the ASan build
# costs ten times its CPU (a report of a small trace: ~0.1 s against
# ~0.01 s), and a handshake makes up to ten looks a second. What a test
# checks it still reads with $USTACK.
POLL_USTACK=${USTACK_RELEASE:-$TOP/build/ustack}
[ -x "$POLL_USTACK" ] || POLL_USTACK=$USTACK

# trace_moved FILE: FILE was written since the last trace_moved FILE (the
# first time: it exists), so that a poll starts its look (a report and a
# grep: ~25 ms of CPU here) only when there can be something new to see;
# the recorder writes the trace at least once a second while events come,
# and the polls look up to ten times a second. The time of that last call
# is FILE.polled's mtime (touch -r: one process per write seen). A write
# in the same clock tick as that call could go unseen until the next write;
# on 6.13+ kernels the mtime a stat() has read is fine-grained after it.
trace_moved() {
	[ -e "$1" ] || return 1
	[ -e "$1.polled" ] && ! [ "$1" -nt "$1.polled" ] && return 1
	touch -r "$1" "$1.polled"
}
