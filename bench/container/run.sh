#!/usr/bin/env bash
# ustack record -a against perf record -a -g on a machine running processes
# in two root file systems (issue 28), side by side in one run:
#   workload   one gzip -6 loop in the host's root and one in a second root:
#              the Debian trixie root of bench/container/rootfs.sh when it is
#              there (ROOTFS=DIR), else a copy of the host's gzip and the
#              libraries it needs (same content as the host's: then the
#              "container" differs by its root only)
#   runs       RUNS (default 3) of each recorder (ustack --backend bpf,
#              ustack --backend copy, perf), alternating, DURATION
#              (default 10) s each, -F FREQ (default 499) for both; each run
#              with empty caches (its own USTACK_CACHE_DIR, HOME and perf
#              --buildid-dir) so that every run pays the whole capture
#   measured   events kept (ustack report --stats "events:", perf report
#              --stats "SAMPLE events:"); recorder CPU time (user + system
#              of the recording command and its children, /usr/bin/time);
#              wall time until the recording command returns (perf's
#              build-ID collection at its end included); bytes in the cache
#              directories right after the recording (du -sb; they start
#              empty; the report's own caches are not counted) and the
#              trace's size; archive: `ustack archive` against `perf archive`
#              (size of the file, wall time; for ustack the files it
#              names missing: found neither in the recording's cache nor
#              on the host); named share of user frames
#              (below)
#   named      user frames = frames of a gzip process (either root) outside
#              the kernel; named = has a symbol: ustack text
#              ` => NAME+0xOFF (PATH)` with NAME not "??"/"[unknown]"; perf
#              script's `ADDR SYM+OFF (DSO)` with SYM not "[unknown]"; each
#              report run on the recording host with its caches
# Prints one line per run and a summary (median [min-max]); needs root.
set -u
: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$TOP/bench/container/gzip_loops.sh"
: "${USTACK:=$TOP/build/ustack}" "${RUNS:=3}" "${DURATION:=10}" "${FREQ:=499}"
ROOTFS=${ROOTFS:-$TOP/build/rootfs/trixie}
[ "$(id -u)" -eq 0 ] || { echo "bench/container: needs root (perf -a, chroot)" >&2; exit 1; }
for t in perf gzip chroot python3 /usr/bin/time; do
	command -v $t >/dev/null || { echo "bench/container: $t not installed" >&2; exit 1; }
done
[ -x "$USTACK" ] || { echo "bench/container: no $USTACK (make)" >&2; exit 1; }

w=$(mktemp -d /tmp/ustack-bench-ct.XXXXXX)
loops=()
cleanup() {
	local p
	for p in "${loops[@]}"; do kill -- -"$p" 2>/dev/null; done
	rm -f "$ROOT2/tmp/ustack-bench-big" 2>/dev/null
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$w"
}
trap cleanup EXIT

start_gzip_loops

named_ustack() { # TRACE: "user named" of gzip processes
	"$USTACK" report -i "$1" --no-lines 2>/dev/null | awk '
		/^[^ ]/ { c = $1; sub(/-[0-9]+$/, "", c); g = (c == "gzip"); next }
		g && /^ => / {
			if ($0 ~ /\(\[kernel\.kallsyms\]\)$/ || $0 ~ /\(\[[^]\/]*\]\)$/ && $0 !~ /\[vdso\]/) next
			u++; if ($2 != "??" && $2 != "[unknown]") n++
		}
		END { print u + 0, n + 0 }'
}
named_perf() { # DATA BUILDID_DIR
	perf --buildid-dir "$2" script -i "$1" -F comm,ip,sym,dso 2>/dev/null | awk '
		/^[^ \t]/ { g = ($1 == "gzip"); next }
		g && /^[ \t]+[0-9a-f]+ / {
			if ($0 ~ /\(\[kernel\.kallsyms\]\)$/ || $0 ~ /\(\[[^]\/]*\]\)$/ && $0 !~ /\[vdso\]/) next
			u++; if ($2 != "[unknown]") n++
		}
		END { print u + 0, n + 0 }'
}

res=$w/results.tsv
printf 'tool\trun\tevents\tcpu_s\twall_s\tcache_bytes\ttrace_bytes\tarchive_bytes\tarchive_s\tarchive_missing\tuser_frames\tnamed\n' >"$res"
for i in $(seq "$RUNS"); do
	for tool in ustack-bpf ustack-copy perf; do
		d=$w/$tool.$i
		mkdir -p "$d/home" "$d/cache"
		if [ $tool != perf ]; then
			HOME=$d/home USTACK_CACHE_DIR=$d/cache /usr/bin/time -f '%e %U %S' -o "$d/time" \
				"$USTACK" record -a -q --backend "${tool#ustack-}" -d "$DURATION" -F "$FREQ" -o "$d/t.data" 2>"$d/rec.err"
			cb=$(du -sb "$d/cache" "$d/home" | awk '{ s += $1 } END { print s }')
			ev=$(HOME=$d/home USTACK_CACHE_DIR=$d/cache "$USTACK" report -i "$d/t.data" --stats 2>/dev/null |
				sed -n 's/^events: *\([0-9]*\).*/\1/p' | head -n1)
			trace=$d/t.data
			t0=$(date +%s.%N)
			if HOME=$d/home USTACK_CACHE_DIR=$d/cache "$USTACK" archive "$d/t.data" -o "$d/t.data.archive" >"$d/arch.out" 2>"$d/arch.err"; then
				ab=$(stat -c %s "$d/t.data.archive"); as=$(echo "$(date +%s.%N) - $t0" | bc)
				am=$(sed -n 's/.* \([0-9]*\) missing$/\1/p' "$d/arch.out")
			else
				ab=NA as=NA am=NA
			fi
			read -r uf nf < <(HOME=$d/home USTACK_CACHE_DIR=$d/cache named_ustack "$d/t.data")
		else
			HOME=$d/home /usr/bin/time -f '%e %U %S' -o "$d/time" \
				perf --buildid-dir "$d/cache" record -a -g -F "$FREQ" -o "$d/perf.data" -- sleep "$DURATION" \
				>/dev/null 2>"$d/rec.err"
			cb=$(du -sb "$d/cache" "$d/home" | awk '{ s += $1 } END { print s }')
			ev=$(HOME=$d/home perf --buildid-dir "$d/cache" report -i "$d/perf.data" --stats 2>/dev/null |
				awk '/SAMPLE events:/ { print $3; exit }')
			trace=$d/perf.data
			t0=$(date +%s.%N)
			am=NA
			if (cd "$d" && HOME=$d/home perf --buildid-dir "$d/cache" archive perf.data >/dev/null 2>"$d/arch.err"); then
				ab=$(stat -c %s "$d/perf.data.tar.bz2"); as=$(echo "$(date +%s.%N) - $t0" | bc)
			else
				ab=NA as=NA
			fi
			read -r uf nf < <(HOME=$d/home named_perf "$d/perf.data" "$d/cache")
		fi
		read -r wall us ss <"$d/time"
		cpu=$(echo "$us + $ss" | bc)
		printf '%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' $tool "$i" "${ev:-NA}" "$cpu" "$wall" "$cb" \
			"$(stat -c %s "$trace")" "$ab" "$as" "${am:-NA}" "$uf" "$nf" | tee -a "$res"
		[ -n "${KEEP_TMP:-}" ] || rm -rf "$trace" "$d/t.data.archive" "$d/perf.data.tar.bz2" "$d/cache" "$d/home"
	done
done

echo "# $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), perf $(perf --version | awk '{ print $3 }'), ustack $("$USTACK" --version 2>/dev/null | head -n1)"
echo "# second root: $root_desc; RUNS=$RUNS DURATION=$DURATION FREQ=$FREQ"
python3 - "$res" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
cols = ['events', 'cpu_s', 'wall_s', 'cache_bytes', 'trace_bytes', 'archive_bytes', 'archive_s', 'archive_missing']
def fmt(vals):
    v = [float(x) for x in vals if x not in ('NA', '')]
    if not v:
        return 'n/a'
    g = lambda x: ('%.3g' % x) if x < 1000 else '%d' % x
    return '%s [%s-%s]' % (g(statistics.median(v)), g(min(v)), g(max(v)))
print('| | ' + ' | '.join(cols) + ' | named user frames |')
print('|---' * (len(cols) + 2) + '|')
for tool in ('ustack-bpf', 'ustack-copy', 'perf'):
    r = [x for x in rows if x['tool'] == tool]
    u = sum(int(x['user_frames']) for x in r); n = sum(int(x['named']) for x in r)
    share = '%.1f%% (%d of %d)' % (100.0 * n / u, n, u) if u else 'n/a'
    print('| %s | ' % tool + ' | '.join(fmt([x[c] for x in r]) for c in cols) + ' | %s |' % share)
EOF
