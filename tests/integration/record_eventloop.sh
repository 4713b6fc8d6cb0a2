#!/usr/bin/env bash
# The non-blocking recorder (ustack_recorder__new/__fd/__read/__stop) from
# inside an event loop: examples/record_loop.c polls the recorder's fd next
# to its own 100 ms timer while it records a command that makes exactly
# 300 getppid() calls, 3 ms apart (about 1 s).
#   record_eventloop         the program's own timer kept firing while it
#                            recorded (>= 5 ticks), the recording ended by
#                            itself when the command did, and the trace holds
#                            exactly 300 sys_enter_getppid events, each with
#                            a user stack through main
#   record_eventloop_badopts opts from a "newer header" (sz larger, a
#                            non-zero unknown byte) are refused with EINVAL
set -u
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
CHECK_DIR=${CHECK_DIR:-build/check}
USTACK=${USTACK:-$TOP/build/ustack}
T=record_eventloop
LIB=$TOP/$CHECK_DIR/libustack.a
[ -f "$LIB" ] || LIB=$TOP/build/libustack.a
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
san=
case "$LIB" in *check*) san=${SAN_FLAGS:-} ;; esac
libs=${LIB_LDLIBS:--lpthread -ldl -lbpf -ldw -lelf}

if [ ! -r /sys/kernel/tracing/events/syscalls/sys_enter_getppid/id ] &&
   [ ! -r /sys/kernel/debug/tracing/events/syscalls/sys_enter_getppid/id ]; then
	echo "SKIP $T: no syscalls:sys_enter_getppid tracepoint (tracefs not mounted?)"
	exit 0
fi
if ! $CC -O2 -g $san -I"$TOP/include" -o "$tmp/record_loop" "$TOP/examples/record_loop.c" "$LIB" \
	$libs 2>"$tmp/cc.err"; then
	echo "FAIL $T: examples/record_loop.c does not compile: $(head -3 "$tmp/cc.err")"
	exit 1
fi
cat >"$tmp/pinger.c" <<'P'
#include <time.h>
#include <unistd.h>
__attribute__((noinline)) static void ping(void)
{
	struct timespec ts = { 0, 3000000 };

	getppid();
	nanosleep(&ts, 0);
}
int main(void)
{
	for (int i = 0; i < 300; i++)
		ping();
	return 0;
}
P
$CC -O2 -o "$tmp/pinger" "$tmp/pinger.c"
if ! out=$("$tmp/record_loop" "$tmp/t.data" syscalls:sys_enter_getppid -- "$tmp/pinger" 2>&1); then
	if echo "$out" | grep -qiE 'permission|not permitted|perf_event_paranoid'; then
		echo "SKIP $T: cannot record here: $(echo "$out" | head -1)"
		exit 0
	fi
	echo "FAIL $T: $(echo "$out" | head -3 | tr '\n' '|')"
	exit 1
fi
ticks=$(echo "$out" | sed -n 's/^record_loop: \([0-9]*\) ticks.*/\1/p')
status=$(echo "$out" | sed -n 's/.*command status \([0-9]*\).*/\1/p')
n=$("$USTACK" report -i "$tmp/t.data" --format folded --no-lines 2>/dev/null |
	awk '/main/ && /getppid/ { s += $NF } END { print s + 0 }')
if [ "${ticks:-0}" -ge 5 ] && [ "$status" = 0 ] && [ "$n" = 300 ]; then
	echo "PASS $T: $ticks ticks of the program's own timer while recording, 300 getppid events with their stacks"
else
	echo "FAIL $T: ticks ${ticks:-?} (want >= 5), command status ${status:-?}, getppid stacks through main $n (want 300): $(echo "$out" | tr '\n' '|')"
fi

cat >"$tmp/badopts.c" <<'B'
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <ustack/record.h>
int main(void)
{
	struct { struct ustack_record_opts o; char newer[8]; } big;
	struct ustack_recorder *r;

	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	big.newer[3] = 1;
	r = ustack_recorder__new(&big.o);
	printf("%s %d\n", r ? "accepted" : "refused", r ? 0 : errno);
	ustack_recorder__free(r);
	return 0;
}
B
if $CC -O2 $san -I"$TOP/include" -o "$tmp/badopts" "$tmp/badopts.c" "$LIB" $libs 2>"$tmp/cc2.err" &&
   [ "$("$tmp/badopts")" = "refused $(python3 -c 'import errno; print(errno.EINVAL)')" ]; then
	echo "PASS ${T}_badopts"
else
	echo "FAIL ${T}_badopts: $(cat "$tmp/cc2.err" | head -2) $("$tmp/badopts" 2>&1 | head -2)"
fi
