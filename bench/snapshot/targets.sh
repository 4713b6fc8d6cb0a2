# shellcheck shell=bash
# Sourced by bench/snapshot/run.sh and bench/instructions.sh: the two
# snapshot targets, progs/snap_futex32.c with 33 threads and with 2, built
# into $OUT and running until the sourcing script exits.
#   start_targets   sets pid (33 threads) and pid2 (2), nt and nt2 (their
#                   thread counts), once both said "ready"
start_targets() {
	$CC -O2 -pthread -o "$OUT/snap_futex32" tests/integration/progs/snap_futex32.c
	"$OUT/snap_futex32" >"$OUT/target.out" &
	pid=$!
	"$OUT/snap_futex32" 1 >"$OUT/target2.out" &
	pid2=$!
	trap 'kill -KILL $pid $pid2 2>/dev/null; wait $pid $pid2 2>/dev/null || true' EXIT
	for _ in $(seq 500); do
		grep -q ready "$OUT/target.out" 2>/dev/null && grep -q ready "$OUT/target2.out" 2>/dev/null && break
		sleep 0.01
	done
	sleep 0.2
	nt=$(ls /proc/$pid/task | wc -l)
	nt2=$(ls /proc/$pid2/task | wc -l)
}
