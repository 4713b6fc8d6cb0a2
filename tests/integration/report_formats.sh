#!/usr/bin/env bash
# ustack report over real recordings of a program of known call structure
# (main -> a -> b -> c, built -O2 -fomit-frame-pointer without SFrame, so the
# recorder unwinds with DWARF CFI):
#   raw      lines match the seed's regexes; every event's cookie has its
#            <user stack unwind> or an explanation; file_map before first use
#   text     c/b/a/main in order for >= 90% of the samples whose leaf is c;
#            function names agree with addr2line at the same offsets, in
#            every user stack with frames of the program (not just the first)
#   folded   lines parse, counts sum to the number of events
#   stackmap the binary export parses with ustack's reader and reproduces
#            the text export; its stacks are the --stats distinct stacks
#   --stats  agrees with the raw output
#   damage   a truncated file and a flipped byte: output up to the damage,
#            an error naming the file and offset, exit status non-zero
set -u
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
: "${SAN_FLAGS:=-fsanitize=address,undefined}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf}"
cd "$TOP" || exit 1
tmp=$(mktemp -d /tmp/ustack-report-XXXXXX)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }

cat >"$tmp/prog.c" <<'EOF'
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
volatile unsigned long sink;
static int fw, mode;
__attribute__((noinline)) void c(unsigned long n)
{
	if (mode) {	/* many sys_enter_futex events: a trace of several chunks */
		for (unsigned long i = 0; i < n; i++)
			syscall(SYS_futex, &fw, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
		return;
	}
	for (unsigned long i = 0; i < n; i++)
		sink += i * 3;
}
__attribute__((noinline)) void b(unsigned long n) { c(n); sink++; }
__attribute__((noinline)) void a(unsigned long n) { b(n); sink++; }
int main(int argc, char **argv)
{
	mode = argc > 1 && argv[1][0] == 'f';
	/* ~0.3 s of CPU (~75 ms per 300M rounds on a 2025 EPYC): cpu-clock
	 * samples CPU time, so the sample count depends on the CPU's speed,
	 * never on how loaded the machine is */
	a(mode ? 400000 : 1200000000UL);
	return (int)(sink & 0);
}
EOF
if ! $CC -O2 -fomit-frame-pointer -g -o "$tmp/prog" "$tmp/prog.c"; then
	fail report_build "cannot compile the test program"
	exit 0
fi
if readelf -SW "$tmp/prog" | grep -q '\.sframe'; then
	fail report_build "test program has .sframe: the CFI path would not be exercised"
	exit 0
fi

# ---- recording ---------------------------------------------------------------------
if ! "$USTACK" record -q -o "$tmp/t.data" -- "$tmp/prog" >"$tmp/rec.out" 2>&1; then
	if grep -qiE 'permi|access|not supported|perf_event' "$tmp/rec.out"; then
		skip report_formats "perf events unavailable: $(head -n1 "$tmp/rec.out")"
		exit 0
	fi
	fail report_record "ustack record failed: $(head -n3 "$tmp/rec.out")"
	exit 0
fi
"$USTACK" report -i "$tmp/t.data" --stats >"$tmp/stats" 2>"$tmp/stats.err" || fail report_stats "exit status $?"
stat_of() { sed -n "s/^$1: \([0-9]*\).*/\1/p" "$tmp/stats"; }
events=$(stat_of events)
if [ -z "$events" ] || [ "$events" -lt 20 ]; then
	fail report_record "only '${events}' events recorded (prog runs ~0.3 s at 999 Hz)"
	exit 0
fi

# ---- raw ----------------------------------------------------------------------------
if "$USTACK" report -i "$tmp/t.data" --format raw >"$tmp/raw" 2>"$tmp/raw.err"; then
	# mawk has no {n} intervals: the patterns are built in BEGIN
	bad=$(awk '
	  BEGIN { h = "[0-9a-f]"; h16 = h h h h h h h h h h h h h h h h; d3 = "\\[([0-9][0-9][0-9]|---)\\]"
	          pre = "^[^ ]+-[0-9]+ " d3 " "; tm = " [0-9]+\\.[0-9][0-9][0-9][0-9][0-9][0-9]: "
	          ufr = "^ => <" h16 "> : 0x[0-9a-f]+$"; kfr = "^ => <0x" h16 ">$"
	          us = pre "\\.\\.\\.\\.\\." tm "<user stack unwind> cookie=[0-9a-f]+$"
	          fm = pre "\\.\\.\\.1\\." tm "file_map: id=0x[0-9a-f]+ path=[^ ]+ build_id=([0-9a-f]+|-)$"
	          nus = pre "\\.\\.\\.\\.\\." tm "<no user stack> cookie=[0-9a-f]+ reason=(mismatch|lost|end)$"
	          lost = pre "\\.\\.\\.\\.\\." tm "lost: what=[a-z]+ count=[0-9]+$"
	          ev = pre "\\.\\.\\.\\.\\." tm "[^ <]+ cookie=[0-9a-f]+$"
	          fc = "^file_content: id=0x[0-9a-f]+ sha256:[0-9a-f]+ size=[0-9]+( [a-z-]+)*$" }
	  $0 ~ ufr { if (!inustack) { print "user frame outside a user stack: " $0; exit }
	             if ($4 != "0x0" && !(($4) in seen)) { print "file id used before its file_map: " $0; exit } next }
	  $0 ~ kfr { if (!inevent) { print "kernel frame outside an event: " $0; exit } next }
	  $0 ~ us { inustack = 1; inevent = 0; next }
	  $0 ~ fm { split($6, f, "="); seen[f[2]] = 1; inustack = 0; inevent = 0; next }
	  $0 ~ nus || $0 ~ lost || $0 ~ fc { inustack = 0; inevent = 0; next }
	  $0 ~ ev { inevent = 1; inustack = 0; next }
	  { print "unexpected line " NR ": " $0; exit }' "$tmp/raw")
	# each event cookie (per tid) has its user stack record or an explanation
	unexplained=$(awk '
	  / <user stack unwind> cookie=/ { split($1, t, "-"); tid = t[length(t)]; split($NF, c, "="); have[tid " " c[2]] = 1; next }
	  / <no user stack> cookie=/ { split($1, t, "-"); tid = t[length(t)]; split($8, c, "="); have[tid " " c[2]] = 1; next }
	  /: [^ <]+ cookie=/ && !/file_map:/ { split($1, t, "-"); tid = t[length(t)]; split($NF, c, "=");
	        if (c[2] != "0") ev[tid " " c[2]] = 1 }
	  END { n = 0; for (k in ev) if (!(k in have)) n++; print n }' "$tmp/raw")
	nev=$(grep -cE '^[^ ]+-[0-9]+ \[[0-9]{3}\] \.{5} [0-9.]+: [^ <]+ cookie=' "$tmp/raw")
	nus=$(grep -c '<user stack unwind>' "$tmp/raw")
	nfm=$(grep -c ': file_map: ' "$tmp/raw")
	if [ -n "$bad" ]; then
		fail report_raw_format "$bad"
	elif [ "$unexplained" != 0 ]; then
		fail report_raw_format "$unexplained event cookies without user stack or explanation"
	elif [ "$nev" != "$events" ]; then
		fail report_raw_format "$nev event lines, --stats says $events events"
	else
		pass report_raw_format
	fi
	if [ "$nus" = "$(stat_of 'user stacks')" ] && [ "$nfm" = "$(stat_of 'file ids')" ]; then
		pass report_stats_consistent
	else
		fail report_stats_consistent "raw: $nus user stacks, $nfm file_maps; stats: $(stat_of 'user stacks'), $(stat_of 'file ids')"
	fi
else
	fail report_raw_format "exit status $?: $(head -n2 "$tmp/raw.err")"
fi

# ---- text ---------------------------------------------------------------------------
if "$USTACK" report -i "$tmp/t.data" >"$tmp/text" 2>"$tmp/text.err"; then
	# user frames of each event (kernel frames name [kernel.kallsyms] or a module)
	read -r inc ok < <(awk -v prog="$tmp/prog" '
	  function flush() { if (n && u[1] == "c") { inc++; if (u[2] == "b" && u[3] == "a" && u[4] == "main") ok++ } n = 0 }
	  /^[^ ]+-[0-9]+ \[/ { flush(); next }
	  /^ => / && !/\(\[/ { split($2, s, "+"); u[++n] = s[1]; next }
	  END { flush(); print inc + 0, ok + 0 }' "$tmp/text")
	if [ "$inc" -lt 10 ]; then
		fail report_text_callchain "only $inc of $events samples have c as leaf"
	elif [ $((ok * 100)) -ge $((inc * 90)) ]; then
		pass report_text_callchain
	else
		fail report_text_callchain "c<-b<-a<-main in $ok of $inc samples with leaf c (< 90%)"
	fi
else
	fail report_text_callchain "exit status $?: $(head -n2 "$tmp/text.err")"
fi

# addr2line as the oracle for the names of the program's frames, in EVERY
# user stack that has frames in prog. Which sample comes first is up to the
# machine (on AMD the first samples often land in ld.so's CPU-feature code,
# before main, with no frame of prog), so stacks are chosen by content, and
# each is matched to its event in the text report by (tid, cookie).
if command -v addr2line >/dev/null; then
	# raw -> "tid cookie k vaddr": frame k (1 = innermost) of the user stack
	# of (tid, cookie) is in prog; its file offset is turned into an address
	# with prog's PT_LOADs (readelf), minus 1 for a return address (the call)
	readelf -lW "$tmp/prog" | awk '$1 == "LOAD" { print "L", $2, $3, $5 }' >"$tmp/loads"
	awk -v prog="$tmp/prog" '
	  function hex(s,   v, i) {
		v = 0; s = tolower(s); sub(/^0x/, "", s)
		for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	  }
	  FNR == NR { nl++; lo[nl] = hex($2); lv[nl] = hex($3); ls[nl] = hex($4); next }
	  / file_map: id=/ { for (i = 1; i <= NF; i++) { if ($i ~ /^id=/) id = substr($i, 4); if ($i ~ /^path=/) p = substr($i, 6) }
	                     path[id] = p; go = 0; next }
	  /<user stack unwind> cookie=/ { c = $NF; sub(/^cookie=/, "", c); t = $1; sub(/.*-/, "", t)
	                                  key = t " " c; go = !(key in done); done[key] = 1; k = 0; next }
	  /^ => / { if (!go) next; k++
	            if (path[$4] != prog) next
	            off = hex(substr($2, 2, 16)); va = -1
	            for (i = 1; i <= nl; i++) if (off >= lo[i] && off < lo[i] + ls[i]) va = off - lo[i] + lv[i]
	            if (va < 0) { print key, k, "none"; next }
	            printf "%s %d %x\n", key, k, (k > 1 ? va - 1 : va); next }
	  { go = 0 }' "$tmp/loads" "$tmp/raw" >"$tmp/prog_frames"
	# text -> "tid cookie name name ...": the user frames of each event
	# (kernel frames name [kernel.kallsyms] or a module; [vdso] is user)
	awk '
	  function flush() { if (key != "" && !(key in seen)) { seen[key] = 1; print key names } key = ""; names = "" }
	  /^[^ ]+-[0-9]+ \[/ { flush(); c = ""; for (i = 1; i <= NF; i++) if ($i ~ /^cookie=/) c = substr($i, 8)
	                       t = $1; sub(/.*-/, "", t); if (c != "") key = t " " c; next }
	  /^ => / && (!/\(\[/ || /\(\[vdso\]\)/) { split($2, s, "+"); names = names " " s[1]; next }
	  END { flush() }' "$tmp/text" >"$tmp/text_stacks"
	# addr2line once for all distinct addresses: "vaddr name"
	awk '$4 != "none" { print "0x" $4 }' "$tmp/prog_frames" | sort -u >"$tmp/vaddrs"
	if [ -s "$tmp/vaddrs" ]; then
		addr2line -f -e "$tmp/prog" $(cat "$tmp/vaddrs") | awk 'NR % 2 == 1' |
			paste -d ' ' "$tmp/vaddrs" - >"$tmp/a2l"
	else
		: >"$tmp/a2l"
	fi
	read -r stacks through_main checked nbad mism < <(awk '
	  FILENAME == ARGV[1] { a2l[$1] = $2; next }
	  FILENAME == ARGV[2] { k = $1 " " $2; for (i = 3; i <= NF; i++) nm[k, i - 2] = $i; n[k] = NF - 2; next }
	  { key = $1 " " $2
	    if (!(key in st)) { st[key] = 1; stacks++ }
	    if ($4 == "none") { bad++; if (!msg) msg = "tid " $1 " cookie " $2 " frame " $3 ": offset in no PT_LOAD"; next }
	    want = a2l["0x" $4]; got = (key in n) ? nm[key, $3] : "(event not in the text report)"
	    checked++
	    if (want == "main" && !(key in viamain)) { viamain[key] = 1; through_main++ }
	    if (want != got) { bad++; if (!msg) msg = "tid " $1 " cookie " $2 " frame " $3 ": addr2line " want ", report " got }
	  }
	  END { print stacks + 0, through_main + 0, checked + 0, bad + 0, (msg ? msg : "-") }' \
		"$tmp/a2l" "$tmp/text_stacks" "$tmp/prog_frames")
	if [ "$nbad" -ne 0 ]; then
		fail report_text_addr2line "$nbad of $checked prog frames differ, e.g. $mism"
	elif [ "$through_main" -lt 10 ]; then
		# prog spends ~0.3 s of CPU in main's callees and cpu-clock counts
		# CPU time (999 Hz), so ~300 samples pass through main, loaded
		# machine or not; 10 leaves room for a CPU many times faster
		fail report_text_addr2line "only $through_main user stacks pass through main ($stacks with frames of prog)"
	else
		pass report_text_addr2line
		echo "  addr2line: $checked prog frames of $stacks user stacks ($through_main through main) named alike"
	fi
else
	skip report_text_addr2line "addr2line not installed"
fi

# ---- folded -------------------------------------------------------------------------
if "$USTACK" report -i "$tmp/t.data" --format folded -o "$tmp/folded" 2>"$tmp/folded.err"; then
	badl=$(grep -vcE '^[^ ]+ [0-9]+$' "$tmp/folded")
	sum=$(awk '{ s += $NF } END { print s + 0 }' "$tmp/folded")
	top=$(sort -k2 -n -r "$tmp/folded" | head -n1 | cut -d' ' -f1)
	if [ "$badl" != 0 ]; then
		fail report_folded "$badl lines do not parse"
	elif [ "$sum" != "$events" ]; then
		fail report_folded "counts sum to $sum, $events events"
	elif ! [[ "$top" == prog\;*main\;a\;b\;c* ]]; then
		fail report_folded "heaviest stack is '$top'"
	else
		pass report_folded
	fi
else
	fail report_folded "exit status $?: $(head -n2 "$tmp/folded.err")"
fi

# ---- stack map exports ------------------------------------------------------------------
cat >"$tmp/smread.c" <<'EOF'
/* prints an FSMB file in the text form, read with ustack's own reader */
#include <inttypes.h>
#include <stdio.h>
#include <ustack/stackmap.h>
int main(int argc, char **argv)
{
	static unsigned char buf[64 << 20];
	char err[256] = "";
	struct ustack_stackmap_bin_opts o = { .sz = sizeof(o), .errbuf = err, .errbuf_sz = sizeof(err) };
	FILE *f = fopen(argv[1], "rb");
	size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
	struct ustack_stackmap_bin *b = ustack_stackmap_bin__open(buf, n, &o);
	struct ustack_stackmap_bin_entry e;

	if (!b) {
		fprintf(stderr, "smread: %s\n", err);
		return 1;
	}
	for (size_t i = 0; ustack_stackmap_bin__entry(b, i, &e) == 0; i++) {
		printf("stack_id %" PRIu32 " [ref %" PRIu32 ", depth %" PRIu32 "]\n", e.stack_id, e.ref_count, e.nr);
		for (uint32_t j = 0; j < e.nr; j++)
			printf("  [%" PRIu32 "] 0x%" PRIx64 "\n", j, e.ips[j]);
		printf("\n");
	}
	ustack_stackmap_bin__free(b);
	return 0;
}
EOF
if ! $CC $SAN_FLAGS -Iinclude -o "$tmp/smread" "$tmp/smread.c" "$CHECK_DIR/libustack.a" $LIB_LDLIBS \
	>"$tmp/smread.log" 2>&1; then
	fail report_stackmap "cannot build the FSMB reader helper: $(head -n3 "$tmp/smread.log")"
elif ! "$USTACK" report -i "$tmp/t.data" --format stackmap -o "$tmp/sm.txt" ||
     ! "$USTACK" report -i "$tmp/t.data" --format stackmap-bin -o "$tmp/sm.bin"; then
	fail report_stackmap "report --format stackmap/stackmap-bin failed"
elif ! "$tmp/smread" "$tmp/sm.bin" >"$tmp/sm.back" 2>"$tmp/sm.err"; then
	fail report_stackmap "ustack's reader refused the export: $(cat "$tmp/sm.err")"
elif ! cmp -s "$tmp/sm.txt" "$tmp/sm.back"; then
	fail report_stackmap "binary export read back differs from the text export: $(diff "$tmp/sm.txt" "$tmp/sm.back" | head -n4)"
else
	nsm=$(grep -c '^stack_id ' "$tmp/sm.txt")
	refs=$(sed -n 's/^stack_id [0-9]* \[ref \([0-9]*\),.*/\1/p' "$tmp/sm.txt" | awk '{ s += $1 } END { print s + 0 }')
	if [ "$nsm" != "$(stat_of 'distinct user stacks')" ]; then
		fail report_stackmap "$nsm stacks exported, --stats has $(stat_of 'distinct user stacks')"
	elif [ "$refs" != "$(stat_of 'user stacks')" ]; then
		fail report_stackmap "refs sum to $refs, $(stat_of 'user stacks') user stacks"
	else
		pass report_stackmap
	fi
fi

# ---- kernel stacks: addresses only, no callchain context markers ------------------------------
# dd copying /dev/zero to /dev/null spends its time in the kernel, so most
# cpu-clock samples carry a kernel stack. perf's callchains (copy backend)
# and bpf_get_stackid()'s stacks (bpf backend) both hold PERF_CONTEXT_*
# markers (the top 4095 values of the u64 space); none may become a frame
# (the bpf backend once wrote 0xffffffffffffff80 as every kernel leaf,
# shown as ftrace_trampoline+0x3fdfef80). And no kernel frame is named
# more than 1 MiB past its symbol (no kernel function is that large: such
# a name is an address past the last symbol of the kernel or a module).
for be in bpf copy; do
	if ! "$USTACK" record -q --backend $be -o "$tmp/k.$be.data" -e cpu-clock -- \
		dd if=/dev/zero of=/dev/null bs=64k count=150000 >"$tmp/k.$be.out" 2>&1; then
		skip report_kstack_$be "cannot record with --backend $be: $(grep -m1 -v records "$tmp/k.$be.out")"
		continue
	fi
	"$USTACK" report -i "$tmp/k.$be.data" -f raw >"$tmp/k.$be.raw" 2>/dev/null
	"$USTACK" report -i "$tmp/k.$be.data" >"$tmp/k.$be.text" 2>/dev/null
	nk=$(grep -cE '^ => <0x[0-9a-f]{16}>$' "$tmp/k.$be.raw")
	# (fixed-width hex: a string comparison is a numeric one)
	marker=$(awk '/^ => <0x[0-9a-f]+>$/ { h = substr($2, 4, 16); if (h >= "fffffffffffff001") { print; exit } }' "$tmp/k.$be.raw")
	far=$(grep -m1 -E '^ => [^ ]+\+0x[0-9a-f]{6,} \(\[' "$tmp/k.$be.text")
	named=$(grep -cE '^ => [a-zA-Z_][^ ]*\+0x[0-9a-f]+ \(\[kernel\.kallsyms\]\)$' "$tmp/k.$be.text")
	if [ "$nk" -lt 10 ]; then
		fail report_kstack_$be "only $nk kernel frames in $(grep -c ' cookie=' "$tmp/k.$be.raw") records"
	elif [ -n "$marker" ]; then
		fail report_kstack_$be "a callchain context marker as a kernel frame: '$marker'"
	elif [ -n "$far" ]; then
		fail report_kstack_$be "a kernel frame named 1 MiB or more past its symbol: '$far'"
	elif [ "$named" -lt 10 ] && [ "$(cat /proc/sys/kernel/kptr_restrict)" = 0 ]; then
		fail report_kstack_$be "only $named kernel frames named in the text report"
	else
		pass report_kstack_$be
	fi
done

# ---- errors ---------------------------------------------------------------------------------
"$USTACK" report -i "$tmp/missing.data" >/dev/null 2>"$tmp/e1"; rc1=$?
"$USTACK" report -i "$tmp/prog.c" >/dev/null 2>"$tmp/e2"; rc2=$?
if [ "$rc1" -ne 0 ] && grep -q "missing.data: No such file" "$tmp/e1" &&
   [ "$rc2" -ne 0 ] && grep -q "prog.c: not a ustack trace file" "$tmp/e2"; then
	pass report_errors
else
	fail report_errors "missing: rc $rc1 '$(cat "$tmp/e1")'; not a trace: rc $rc2 '$(cat "$tmp/e2")'"
fi

# ---- damaged files (a trace of several chunks) -------------------------------------------------
"$USTACK" record -q -o "$tmp/f.data" -e syscalls:sys_enter_futex -- "$tmp/prog" f >/dev/null 2>&1
chunks=$("$USTACK" report -i "$tmp/f.data" --stats 2>/dev/null | sed -n 's/^chunks: //p')
if [ -z "$chunks" ] || [ "$chunks" -lt 2 ]; then
	skip report_damaged "futex recording has '${chunks}' chunks, need >= 2"
else
	size=$(stat -c %s "$tmp/f.data")
	total=$("$USTACK" report -i "$tmp/f.data" -f raw 2>/dev/null | grep -c ' cookie=' )
	# damage after the first chunk (file header 32 bytes, chunk header 20
	# bytes with payload_len at +8, docs/trace-format.md 2.2)
	plen=$(od -An -tu4 -j 40 -N 4 "$tmp/f.data" | tr -d ' ')
	c0end=$((32 + 20 + plen))
	half=$((c0end + (size - c0end) / 2))
	head -c "$half" "$tmp/f.data" >"$tmp/trunc.data"
	cp "$tmp/f.data" "$tmp/flip.data"
	flip=$((c0end + (size - c0end) / 3))
	printf '\x5a' | dd of="$tmp/flip.data" bs=1 seek="$flip" conv=notrunc 2>/dev/null
	cmp -s "$tmp/f.data" "$tmp/flip.data" &&
		printf '\xa5' | dd of="$tmp/flip.data" bs=1 seek="$flip" conv=notrunc 2>/dev/null
	for kind in trunc flip; do
		limit=$half; [ $kind = flip ] && limit=$flip
		"$USTACK" report -i "$tmp/$kind.data" -f raw >"$tmp/$kind.out" 2>"$tmp/$kind.err"; rc=$?
		got=$(grep -c ' cookie=' "$tmp/$kind.out")
		off=$(sed -n "s|.*$kind.data: damaged at offset \([0-9]*\):.*|\1|p" "$tmp/$kind.err")
		if [ "$rc" -eq 0 ]; then
			fail report_damaged_$kind "exit status 0"
		elif [ -z "$off" ]; then
			fail report_damaged_$kind "no error naming the file and offset: $(cat "$tmp/$kind.err")"
		elif [ "$off" -gt "$limit" ] || [ $((limit - off)) -gt $((300 * 1024)) ]; then
			fail report_damaged_$kind "damage reported at $off, made at $limit"
		elif [ "$got" -eq 0 ] || [ "$got" -ge "$total" ]; then
			fail report_damaged_$kind "$got of $total records printed"
		else
			pass report_damaged_$kind
		fi
	done
fi
exit 0
