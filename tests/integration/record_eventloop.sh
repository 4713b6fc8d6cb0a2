#!/usr/bin/env bash
# The non-blocking recorder (ustack_recorder__new/__fd/__read/__stop) from
# inside an event loop: examples/record_loop.c polls the recorder's fd next
# to its own 100 ms timer while it records a command, once per backend.
#   record_eventloop_copy, _bpf  the program's own timer kept firing while it
#                            recorded (>= 5 ticks), the recording ended by
#                            itself when the command did, the stats say the
#                            backend asked for ran, and the trace holds
#                            exactly 300 sys_enter_getppid events of a
#                            command that makes 300 getppid() calls 3 ms
#                            apart, each with a user stack through main
#                            (without that tracepoint: cpu-clock samples of
#                            a command spinning ~1 s, >= 20 through main and
#                            spin)
#   record_eventloop_stall   no ustack_recorder__read() call took 100 ms or
#                            more (bpf backend) while python3 imports json,
#                            ssl, sqlite3 and asyncio: ~40 dlopens whose
#                            unwind tables go into the kernel (each write to
#                            a map of maps waits for an RCU grace period);
#                            docs/api.md says __read never blocks (linked
#                            with build/libustack.a: a time, not ASan's).
#                            The time is the call's minus the time its thread
#                            waited for a CPU meanwhile (record_loop reads
#                            its run-queue wait from schedstat): on a loaded
#                            machine a call is preempted for tens of ms
#                            (46 ms wall seen at load average 8 on 2 CPUs),
#                            which is not the recorder blocking; the wall
#                            time is printed too. One more try when the first
#                            is over the bound (a rare 199-344 ms read, cause
#                            not found, before the wait was left out), the
#                            first time printed
#   record_eventloop_free_without_stop_copy, _bpf  ustack_recorder__free()
#                            without __stop(), the command still running
#                            with its last entry open: all 300 getppid
#                            events have their user stacks, as with __stop
#   record_eventloop_badopts opts from a "newer header" (sz larger, a
#                            non-zero unknown byte) are refused with EINVAL
set -u
CC=${CC:-gcc}
TOP=${TOP:-$PWD}
CHECK_DIR=${CHECK_DIR:-build/check}
USTACK=${USTACK:-$TOP/build/ustack}
T=record_eventloop
. "$TOP/tests/integration/lib/libustack.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
STALL_MS=100

if ! $CC -O2 -g $san -I"$TOP/include" -o "$tmp/record_loop" "$TOP/examples/record_loop.c" "$LIB" \
	$libs 2>"$tmp/cc.err"; then
	echo "FAIL $T: examples/record_loop.c does not compile: $(head -3 "$tmp/cc.err")"
	exit 1
fi
if [ -r /sys/kernel/tracing/events/syscalls/sys_enter_getppid/id ] ||
   [ -r /sys/kernel/debug/tracing/events/syscalls/sys_enter_getppid/id ]; then
	event=syscalls:sys_enter_getppid fn=getppid want=300
	cat >"$tmp/prog.c" <<'P'
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
else
	echo "note: no syscalls:sys_enter_getppid tracepoint (tracefs not mounted?): cpu-clock instead"
	event=cpu-clock fn=spin want=20
	cat >"$tmp/prog.c" <<'P'
#include <time.h>
__attribute__((noinline)) static unsigned long spin(void)
{
	volatile unsigned long x = 0;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 100000; i++)
			x += i;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 1000000000L);
	return x;
}
int main(void)
{
	return spin() == 1;
}
P
fi
$CC -O2 -fno-omit-frame-pointer -o "$tmp/prog" "$tmp/prog.c"

# record_loop -b BACKEND TRACE EVENT -- CMD...: its output in $out, or a
# SKIP/FAIL line and status 1
run_loop() {
	local name=$1
	shift
	if out=$("$tmp/record_loop" "$@" 2>&1); then
		return 0
	fi
	if echo "$out" | grep -qiE 'permission|not permitted|perf_event_paranoid'; then
		echo "SKIP $name: cannot record here: $(echo "$out" | head -1)"
	elif [ "$2" = bpf ] && echo "$out" | grep -q 'BPF backend'; then
		echo "SKIP $name: the BPF backend does not load here: $(echo "$out" | grep -m1 'BPF backend')"
	else
		echo "FAIL $name: $(echo "$out" | head -3 | tr '\n' '|')"
	fi
	return 1
}

for b in copy bpf; do
	run_loop "${T}_$b" -b $b "$tmp/t_$b.data" $event -- "$tmp/prog" || continue
	ticks=$(echo "$out" | sed -n 's/^record_loop: \([0-9]*\) ticks.*/\1/p')
	status=$(echo "$out" | sed -n 's/.*command status \([0-9]*\).*/\1/p')
	ran=$(echo "$out" | sed -n 's/.*, backend \([a-z]*\)$/\1/p')
	n=$("$USTACK" report -i "$tmp/t_$b.data" --format folded --no-lines 2>/dev/null |
		awk -v fn="$fn" '/main/ && index($0, fn) { s += $NF } END { print s + 0 }')
	ok=1
	[ "${ticks:-0}" -ge 5 ] && [ "$status" = 0 ] && [ "$ran" = "$b" ] || ok=0
	if [ $event = cpu-clock ]; then [ "$n" -ge $want ] || ok=0; else [ "$n" = $want ] || ok=0; fi
	if [ $ok = 1 ]; then
		echo "PASS ${T}_$b: $ticks ticks of the program's own timer while recording, $n $fn events with their stacks, backend $ran"
	else
		echo "FAIL ${T}_$b: ticks ${ticks:-?} (want >= 5), command status ${status:-?}, backend ${ran:-?} (want $b), $fn stacks through main $n (want $want): $(echo "$out" | tr '\n' '|')"
	fi
done

# A time bound is about the release library: under ASan a file's CFI
# compiles several times slower (libpython's 23 ms become 300), which
# measures ASan rather than the recorder.
py='import json,ssl,sqlite3,asyncio;sum(range(10**7))'
if ! python3 -c 'import json,ssl,sqlite3,asyncio' 2>/dev/null; then
	echo "SKIP ${T}_stall: python3 with json, ssl, sqlite3 and asyncio not found"
elif [ ! -f "$TOP/build/libustack.a" ]; then
	echo "FAIL ${T}_stall: $TOP/build/libustack.a not built (make builds it)"
elif ! $CC -O2 -g -I"$TOP/include" -o "$tmp/record_loop" "$TOP/examples/record_loop.c" \
	"$TOP/build/libustack.a" $libs 2>"$tmp/cc.err"; then
	echo "FAIL ${T}_stall: examples/record_loop.c does not compile: $(head -3 "$tmp/cc.err")"
else
	# Usually 4-8 ms. Twice in many runs one read took 199 and 344 ms
	# (cause not found; see the closing notes): one more try before
	# failing, and the first time is printed either way, so that a read
	# that stalls every time fails and a rare one stays visible.
	first=
	for try in 1 2; do
		run_loop "${T}_stall" -b bpf "$tmp/py.data" cpu-clock -- python3 -c "$py" || break
		wall=$(echo "$out" | sed -n 's/^record_loop: longest ustack_recorder__read() \([0-9.]*\) ms/\1/p')
		# without the run-queue wait (no schedstat: the wall time)
		ms=$(echo "$out" | sed -n 's/^record_loop: longest ustack_recorder__read() not counting waits for a CPU \([0-9.]*\) ms/\1/p')
		ms=${ms:-$wall}
		ran=$(echo "$out" | sed -n 's/.*, backend \([a-z]*\)$/\1/p')
		if [ -n "$ms" ] && [ "$ran" = bpf ] && awk -v m="$ms" -v lim=$STALL_MS 'BEGIN { exit !(m < lim) }'; then
			echo "PASS ${T}_stall: longest ustack_recorder__read() $ms ms not counting waits for a CPU, $wall ms wall (bound $STALL_MS ms) recording python3's imports${first:+ (first try: $first ms)}"
			break
		elif [ $try = 2 ]; then
			echo "FAIL ${T}_stall: longest ustack_recorder__read() ${ms:-?} ms not counting waits for a CPU (want < $STALL_MS), wall ${wall:-?} ms, twice (first ${first:-?} ms), backend ${ran:-?}: $(echo "$out" | tr '\n' '|')"
		fi
		first=${ms:-?}
	done
fi

# __free without __stop: the same trace as with __stop (docs/api.md: "frees,
# stopping first if needed"). The command makes its 300 getppid() calls,
# says so through a file, then sleeps: the recorder is freed while the
# thread's last entry is still open (its user stack is written at the
# thread's next entry or exit, or by __stop).
cat >"$tmp/nostop.c" <<'N'
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <ustack/record.h>
int main(int argc, char **argv) /* BACKEND TRACE EVENT DONEFILE -- CMD... */
{
	const char *ev[1] = { argv[3] };
	struct ustack_record_opts o = { .sz = sizeof(o), .output = argv[2], .events = ev,
					.nr_events = 1, .argv = argv + 6 };
	struct ustack_recorder *r;

	o.backend = !strcmp(argv[1], "bpf") ? USTACK_RECORD_BPF : USTACK_RECORD_COPY;
	r = ustack_recorder__new(&o);
	if (!r) {
		perror("ustack_recorder__new");
		return 1;
	}
	while (!ustack_recorder__poll(r, 100))
		if (!access(argv[4], F_OK)) {
			ustack_recorder__poll(r, 100); /* what came before the file */
			break;
		}
	ustack_recorder__free(r); /* no __stop */
	return 0;
}
N
cat >"$tmp/hold.c" <<'H'
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
__attribute__((noinline)) static void ping(void)
{
	struct timespec ts = { 0, 3000000 };

	getppid();
	nanosleep(&ts, 0);
}
int main(int argc, char **argv)
{
	for (int i = 0; i < 300; i++)
		ping();
	close(open(argv[1], O_CREAT | O_WRONLY, 0600));
	sleep(3);
	return 0;
}
H
if [ $event != syscalls:sys_enter_getppid ]; then
	echo "SKIP ${T}_free_without_stop: needs the syscalls:sys_enter_getppid tracepoint"
elif ! $CC -O2 $san -I"$TOP/include" -o "$tmp/nostop" "$tmp/nostop.c" "$LIB" $libs 2>"$tmp/cc3.err" ||
     ! $CC -O2 -o "$tmp/hold" "$tmp/hold.c" 2>>"$tmp/cc3.err"; then
	echo "FAIL ${T}_free_without_stop: does not compile: $(head -2 "$tmp/cc3.err")"
else
	for b in copy bpf; do
		rm -f "$tmp/done"
		if ! "$tmp/nostop" $b "$tmp/ns_$b.data" $event "$tmp/done" -- "$tmp/hold" "$tmp/done" \
			>"$tmp/ns.out" 2>&1; then
			echo "SKIP ${T}_free_without_stop_$b: cannot record: $(head -1 "$tmp/ns.out")"
			continue
		fi
		n=$("$USTACK" report -i "$tmp/ns_$b.data" --format folded --no-lines 2>"$tmp/ns.err" |
			awk '/main/ && /getppid/ { s += $NF } END { print s + 0 }')
		if [ "$n" = 300 ]; then
			echo "PASS ${T}_free_without_stop_$b: 300 getppid events with their stacks"
		else
			echo "FAIL ${T}_free_without_stop_$b: getppid stacks through main $n (want 300); report: $(head -2 "$tmp/ns.err" | tr '\n' '|')"
		fi
	done
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
