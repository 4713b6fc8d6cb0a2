#!/bin/sh
# Runs inside the QEMU guest of tests/kernel/run.sh (busybox sh, as root,
# on the downloaded 7.x kernel); prints PASS/FAIL/SKIP/INFO lines, which
# the host collects from the serial console.
# Programs: /progs/kfp_threads_fp and _nofp (tests/kernel/progs), one
# source built with and without frame pointers.
U=/ustack/ustack
cd /tmp || exit 1
n=0

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }
info() { echo "INFO $*"; }

# expect_markers FOLDED PASSES: the getppid stacks of kfp_threads, exactly:
# thread i: ...;kfp_start;kfp_work;kfp_leaf  4(i+1)*PASSES, main:
# ...;main;kfp_main_leaf  2*PASSES. Prints what differs, returns 1.
expect_markers() {
	awk -v passes="$2" -v skipped="${3:-0}" '
	{ cnt = $NF; st = $0; sub(/ [0-9]+$/, "", st)
	  split(st, f, ";"); name = f[1]
	  if (st ~ /;kfp_start;kfp_work;kfp_leaf$/) got[name] += cnt
	  else if (st ~ /;main;kfp_main_leaf$/) got["main"] += cnt
	  else { other++; print "  unexpected: " $0 } }
	END {
	  bad = other > 0; short = 0
	  for (i = 0; i < 4; i++) { n = "kfp-thr-" i; want[n] = 4 * (i + 1) * passes }
	  want["main"] = 2 * passes
	  for (n in want) {
	    if (got[n] > want[n] || (got[n] < want[n] && !skipped)) {
	      print "  " n ": " got[n] + 0 " stacks, want " want[n]; bad = 1 }
	    short += want[n] - got[n] }
	  # events the kernel did not run the program for (the recorder counts
	  # them) are the only ones that may be missing, and all that are
	  if (skipped && short != skipped) {
	    print "  " short " stacks missing, the kernel skipped " skipped " events"; bad = 1 }
	  exit bad }' "$1"
}

# record NAME ARGS...: ustack record -q ARGS, stderr kept in NAME.err
record() {
	local name=$1; shift
	$U record -o "$name.data" "$@" >"$name.out" 2>"$name.err"
}

folded() { $U report -i "$1.data" --format folded >"$1.folded" 2>"$1.rerr"; }

# st NAME COUNTER: a counter of record --stats (in NAME.err)
st() { awk -v k="$2" '$1 == "stat" && $2 == k {print $3; f=1} END{if (!f) print "?"}' "$1.err"; }

# want NAME COUNTER VALUE: "" when equal, else "COUNTER=got (want VALUE) "
want() {
	local v
	v=$(st "$1" "$2")
	[ "$v" = "$3" ] || printf '%s=%s (want %s) ' "$2" "$v" "$3"
}

kv=$(uname -r)
case $kv in
7.*) pass "kernel: running $kv" ;;
*) fail "kernel: running $kv, not 7.x" ;;
esac
[ -e /sys/kernel/tracing/events/syscalls/sys_enter_getppid/id ] || fail "tracefs: no syscalls:sys_enter_getppid"

# 1. ustack's own record on this kernel: copy and bpf backends, FP and no-FP
passes=3
for b in copy bpf; do
	for p in fp nofp; do
		t=own/$b/$p
		nm=own_${b}_$p
		if ! record $nm --backend $b -e syscalls:sys_enter_getppid -- /progs/kfp_threads_$p $passes; then
			if [ $b = bpf ] && grep -q 'BPF backend' $nm.err; then
				fail "$t: bpf backend did not load: $(head -1 $nm.err)"
				# the verifier's reason (libbpf's debug messages)
				USTACK_DEBUG=1 $U record -o dbg.data --backend bpf -e syscalls:sys_enter_getppid \
					-- /progs/kfp_threads_$p 1 >/dev/null 2>dbg.err
				grep -v '^ *$' dbg.err | grep -iv 'map\|reloc\|CO-RE\|sec \|found\|prog .*: \(insn\|sub\)' | head -40 | sed 's/^/  | /'
			else
				fail "$t: record failed: $(head -3 $nm.err)"
			fi
			continue
		fi
		folded $nm
		# bpf: a loaded host's stalled virtual CPU can leave a task inside
		# the program while another hits it (the kernel skips that one)
		# (the summary says "N events not recorded: the kernel skipped ...")
		sk=$(sed -n 's/.* \([0-9][0-9]*\) events* not recorded: the kernel skipped.*/\1/p' $nm.err | head -1)
		sk=${sk:-0}
		echo $sk >$nm.skipped
		if expect_markers $nm.folded $passes $sk >$nm.diff; then
			pass "$t: marker stacks exact ($(wc -l <$nm.folded) folded lines$([ $sk = 0 ] || echo ", $sk events the kernel skipped, counted"))"
		else
			fail "$t: marker stacks differ:"; cat $nm.diff; cat $nm.folded; cat $nm.err
			$U report -i $nm.data --format raw | grep -B3 -A6 'unknown\|<\.\.\.>' | head -40
		fi
	done
done
# 1b. on 7.x the kernel runs system-call tracepoint programs preemptibly and
# skips them for every other task of a CPU while one task is preempted
# inside (whole threads lost their events): the bpf backend takes system
# calls through a kprobe on the call's function there
if USTACK_DEBUG=1 $U record -o route.data --backend bpf -e syscalls:sys_enter_getppid \
	-- /progs/kfp_threads_nofp 1 >route.out 2>route.err; then
	if grep -q 'syscalls:sys_enter_getppid through a kprobe on __x64_sys_getppid' route.err; then
		pass "own/bpf-route: system calls through a kprobe"
	else
		fail "own/bpf-route: not through a kprobe: $(grep -i 'kprobe\|skipped' route.err | head -3)"
	fi
else
	fail "own/bpf-route: record failed: $(grep -v 'libbpf' route.err | head -3)"
fi
for p in fp nofp; do
	if [ -s own_copy_$p.folded ] && [ -s own_bpf_$p.folded ]; then
		if cmp -s own_copy_$p.folded own_bpf_$p.folded; then
			pass "own/bpf-agrees/$p: bpf stacks identical to copy"
		elif [ "$(cat own_bpf_$p.skipped own_copy_$p.skipped | tr '\n' ' ')" != "0 0 " ] &&
			[ -z "$(awk 'FNR == NR { sub(/ [0-9]+$/, ""); c[$0] = 1; next }
				{ sub(/ [0-9]+$/, ""); if (!($0 in c)) print }' own_copy_$p.folded own_bpf_$p.folded)" ]; then
			# both exact up to the events skipped (checked above): no
			# stack of bpf's that copy did not see
			pass "own/bpf-agrees/$p: bpf stacks those of copy, less the $(cat own_bpf_$p.skipped) events the kernel skipped"
		else
			fail "own/bpf-agrees/$p: bpf and copy differ"; diff own_copy_$p.folded own_bpf_$p.folded
		fi
	fi
done

# 2. cpu-clock: the spinning threads' samples end in kfp_start;kfp_work;kfp_spin
for b in copy bpf; do
	for p in fp nofp; do
		t=own-cpu/$b/$p
		nm=cpu_${b}_$p
		record $nm --backend $b -e cpu-clock -F 499 -- /progs/kfp_threads_$p 1 400 ||
			{ fail "$t: record failed: $(head -3 $nm.err)"; continue; }
		folded $nm
		# start_thread is [libc.so.6] here (no libc debug file in the guest);
		# the kernel part of a sample follows its user frames
		ok='^kfp-thr-[0-3];[^;]+;[^;]+;kfp_start;kfp_work;kfp_spin([; ]|$)'
		spin=$(awk -v ok="$ok" '$0 ~ ok {s += $NF} END{print s + 0}' $nm.folded)
		tot=$(awk '{s += $NF} END{print s + 0}' $nm.folded)
		bad=$(awk -v ok="$ok" '/kfp_spin/ && $0 !~ ok' $nm.folded | wc -l)
		if [ "$spin" -ge 20 ] && [ "$bad" -eq 0 ]; then
			pass "$t: $spin of $tot samples in clone3;start_thread;kfp_start;kfp_work;kfp_spin"
		else
			fail "$t: $spin of $tot samples in kfp_spin with the full chain, $bad wrong chains"
			cat $nm.folded | sort -k2 -n | tail -15; cat $nm.err
		fi
	done
done
# 3. the feature probe: the copy backend asks for the kernel's deferred
#    user callchains on this kernel (6.19+), and says so
record probe --backend copy --stats -e syscalls:sys_enter_getppid -- /progs/kfp_threads_fp 1
k=$(st probe kernel_callchains)
if [ "$k" = used ]; then
	pass "kfp/probe: perf_event_attr.defer_callchain accepted, kernel callchains used"
else
	fail "kfp/probe: kernel_callchains=$k (want used): $(grep -v '^stat' probe.err | head -3)"
fi
grep -q 'kernel deferred callchains:' probe.err ||
	fail "kfp/probe: the summary does not mention the kernel's callchains"

# 4. FP build: the kernel's frames are trusted from the leaf up to libc's
#    start_thread / __libc_start_call_main (no frame pointers there), equal
#    to ustack's own, written as kernel-fp: 4 frames per thread stack, 3 per
#    main stack; the rest of each stack is ustack's (cut counted)
P=3
E=$((42 * P))
record kfp_fp --backend copy --stats -e syscalls:sys_enter_getppid -- /progs/kfp_threads_fp $P
folded kfp_fp
d=$(expect_markers kfp_fp.folded $P)
w="$(want kfp_fp kfp_entries $E)$(want kfp_fp kfp_matched $E)$(want kfp_fp kfp_disagree 0)"
w="$w$(want kfp_fp kfp_missing 0)$(want kfp_fp kfp_stacks $E)$(want kfp_fp kfp_untrusted $E)"
w="$w$(want kfp_fp frames_kernel-fp $((166 * P)))$(want kfp_fp kfp_cookie_mismatch 0)"
if [ -z "$d$w" ]; then
	pass "kfp/fp: $E kernel callchains matched by tid+cookie, equal to ustack's unwind, $((166 * P)) kernel-fp frames, stacks exact"
else
	fail "kfp/fp: $w"; echo "$d"; cat kfp_fp.folded; grep -v '^stat' kfp_fp.err
fi

# 5. no-FP build: the kernel's walk is wrong past the leaf; only frame 0
#    (the exact pc) is taken from it, every stack still exact
USTACK_DEBUG=1 record kfp_nofp --backend copy --stats -e syscalls:sys_enter_getppid -- /progs/kfp_threads_nofp $P
folded kfp_nofp
d=$(expect_markers kfp_nofp.folded $P)
w="$(want kfp_nofp kfp_matched $E)$(want kfp_nofp kfp_disagree 0)$(want kfp_nofp kfp_untrusted $E)"
w="$w$(want kfp_nofp frames_kernel-fp $E)$(want kfp_nofp kfp_whole 0)"
if [ -z "$d$w" ]; then
	pass "kfp/nofp: $E kernel callchains cut at the leaf (no frame pointer), ustack's frames used beyond, stacks exact"
else
	fail "kfp/nofp: $w"; echo "$d"; cat kfp_nofp.folded
	grep 'kernel callchain\|^ustack: [a-z]' kfp_nofp.err | head
fi

# 6. two tracepoints inside one system call: one kernel cookie, one
#    kernel unwind, one ustack unwind for both events
record kfp_two --backend copy --stats -e syscalls:sys_enter_getppid -e syscalls:sys_exit_getppid \
	-- /progs/kfp_threads_fp $P
w="$(want kfp_two events $((2 * E)))$(want kfp_two kfp_requests $((2 * E)))$(want kfp_two kfp_entries $E)"
w="$w$(want kfp_two kfp_cookie_mismatch 0)$(want kfp_two kfp_matched $E)$(want kfp_two unwinds $E)"
w="$w$(want kfp_two user_stacks $E)$(want kfp_two kfp_disagree 0)"
if [ -z "$w" ]; then
	pass "kfp/shared-cookie: $((2 * E)) events of 2 tracepoints in $E syscalls share $E kernel cookies ($(st kfp_two kfp_records) deferred records), $E unwinds"
else
	fail "kfp/shared-cookie: $w"; grep -v '^stat' kfp_two.err
fi

# 7. cpu-clock (samples in user mode too): matched, never disagreeing
#    (a sample inside the command's execve() gets the new image's
#    callchain: counted apart, kfp_moved, ustack's stack kept)
USTACK_DEBUG=1 record kfp_cpu --backend copy --stats -e cpu-clock -F 499 -- /progs/kfp_threads_fp 1 400
folded kfp_cpu
ok='^kfp-thr-[0-3];[^;]+;[^;]+;kfp_start;kfp_work;kfp_spin([; ]|$)'
spin=$(awk -v ok="$ok" '$0 ~ ok {s += $NF} END{print s + 0}' kfp_cpu.folded)
bad=$(awk -v ok="$ok" '/kfp_spin/ && $0 !~ ok' kfp_cpu.folded | wc -l)
w="$(want kfp_cpu kfp_disagree 0)"
m=$(st kfp_cpu kfp_matched)
if [ -z "$w" ] && [ "$spin" -ge 20 ] && [ "$bad" -eq 0 ] && [ "$m" -gt 0 ]; then
	pass "kfp/cpu-clock: $spin samples in kfp_spin with the full chain; $m kernel callchains matched, $(st kfp_cpu kfp_stacks) stacks with kernel-fp frames, $(st kfp_cpu kfp_missing) late or missing, $(st kfp_cpu kfp_moved) of other registers"
else
	fail "kfp/cpu-clock: spin=$spin bad=$bad matched=$m $w"
	grep 'kernel callchain differs\|^ustack: [a-z]' kfp_cpu.err | head -20
fi
# 8. off-CPU intervals through the BPF backend (tp_btf/sched_switch loads
#    and runs on this kernel): offcpu_nap() blocks N times for 20 ms; with
#    --off-cpu-min 10ms exactly those N intervals are kept (nothing else in
#    the program blocks that long), each with offcpu_nap on its user stack,
#    and their total lies inside the program's own figure for the calls
#    (an interval is inside its call) and above 90% of it (the on-CPU
#    part of a call, even under TCG, is far below 2 ms of its 20)
N=20
record offcpu --backend bpf --stats --off-cpu --off-cpu-min 10ms -- /progs/offcpu_sleep $N
$U report -i offcpu.data >offcpu.txt 2>offcpu.rerr
own=$(awk '/^napped/ {print $2}' offcpu.out)
ns=$(st offcpu offcpu_ns)
evs=$(grep -c ': off-cpu ' offcpu.txt)
naps=$(awk '/: off-cpu / {inev = 1; next} /^$/ {inev = 0} inev && / offcpu_nap\+/ {n++} END {print n + 0}' offcpu.txt)
w="$(want offcpu offcpu_intervals $N)$(want offcpu offcpu_unpaired 0)"
if [ -z "$w" ] && [ "$evs" = $N ] && [ "$naps" = $N ] && [ -n "$own" ] && [ "$ns" -le "$own" ] &&
   [ $((ns * 10)) -ge $((own * 9)) ]; then
	pass "offcpu/bpf: $N intervals of offcpu_nap, $ns ns off CPU of the program's own $own ns, $(st offcpu offcpu_short) short ones counted"
else
	fail "offcpu/bpf: $w events=$evs with offcpu_nap=$naps ns=$ns own=$own"
	grep -v '^stat' offcpu.err | head -5; head -30 offcpu.txt
fi
exit 0
