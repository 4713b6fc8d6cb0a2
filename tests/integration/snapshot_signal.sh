#!/usr/bin/env bash
# A thread inside a signal handler: `ustack snapshot -p PID` names every
# frame as the oracle `eu-stack -p PID` (elfutils) does, frame by frame,
# the signal trampoline too (__restore_rt: its pc is the trampoline's first
# instruction, where the handler returns to, so it is named at the pc, not
# one byte before it, which lies outside the function). And the frame after
# it is the interrupted pc, found through the signal frame (--methods).
set -u
: "${USTACK:?}"
CC=${CC:-cc}
command -v eu-stack >/dev/null || { echo "SKIP snapshot_signal: eu-stack (elfutils) not installed"; exit 0; }
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && { kill -KILL "$pid"; wait "$pid"; } 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
cat > "$tmp/s.c" <<'C'
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static volatile sig_atomic_t in_handler;
static void __attribute__((noinline)) handler_leaf(void) { in_handler = 1; for (;;) pause(); }
static void on_usr1(int sig) { (void)sig; handler_leaf(); }
static void __attribute__((noinline)) interrupted(void) { while (!in_handler) ; }
int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	sigaction(SIGUSR1, &sa, NULL);
	printf("ready\n");
	fflush(stdout);
	interrupted();
	return 0;
}
C
$CC -O2 -g -o "$tmp/s" "$tmp/s.c" || { echo "FAIL snapshot_signal: cannot build the target"; exit 1; }
"$tmp/s" >"$tmp/s.out" & pid=$!
for _ in $(seq 3000); do grep -q ready "$tmp/s.out" && break; sleep 0.01; done
kill -USR1 "$pid"
# in the handler for good once it sleeps in pause (34)
for _ in $(seq 3000); do
	[ "$(cut -d' ' -f1 /proc/$pid/syscall 2>/dev/null)" = 34 ] && break
	sleep 0.01
done
"$USTACK" snapshot -p "$pid" --methods >"$tmp/u" 2>"$tmp/err" || {
	echo "FAIL snapshot_signal: ustack exit $?: $(head -3 "$tmp/err")"; exit 1; }
eu-stack -p "$pid" >"$tmp/e" 2>"$tmp/eerr" || {
	echo "FAIL snapshot_signal: eu-stack failed: $(head -3 "$tmp/eerr")"; exit 1; }
# "#N 0xPC name+0xOFF (path) [method]" and "#N  0xPC name[@@VERSION]"
awk '/^#/ { n = $3; sub(/\+0x[0-9a-f]+$/, "", n); print $1, $2, n, $NF }' "$tmp/u" >"$tmp/u.names"
awk '/^#/ { a = $2; sub(/^0x0*/, "0x", a); n = $3; sub(/@.*/, "", n); print $1, a, n }' "$tmp/e" >"$tmp/e.names"
if ! diff <(cut -d' ' -f1-3 "$tmp/u.names") "$tmp/e.names" >"$tmp/diff"; then
	echo "FAIL snapshot_signal: frames differ from eu-stack's (< ustack, > eu-stack): $(tr '\n' '|' <"$tmp/diff")"
	exit 1
fi
r=$(awk '$3 == "__restore_rt" { getline; print $3, $4 }' "$tmp/u.names")
if [ "$r" != "interrupted [signal]" ]; then
	echo "FAIL snapshot_signal: after __restore_rt want 'interrupted [signal]', got '$r': $(tr '\n' '|' <"$tmp/u")"
	exit 1
fi
echo "PASS snapshot_signal: $(wc -l <"$tmp/e.names") frames named as eu-stack names them, __restore_rt then the interrupted pc by its signal frame"
