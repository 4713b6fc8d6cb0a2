# Sourced by the benchmarks that read kernel.bpf_stats_enabled's counters
# (bench/record/kernel_ns.sh, bench/record/bpf_breakdown.sh,
# bench/python/record.sh): programs loaded after a point, by name.

# the highest BPF program id now (programs loaded later have higher ids)
bpf_max_id() { bpftool prog show -j 2>/dev/null | python3 -c '
import json, sys
print(max([p["id"] for p in json.load(sys.stdin)] or [0]))'; }

# bpf_reading ID NAME: "run_time_ns run_cnt" of the tracepoint program named
# NAME with an id above ID that ran most
bpf_reading() {
	bpftool prog show -j 2>/dev/null | python3 -c '
import json, sys
best = (0, 0)
for p in json.load(sys.stdin):
    if p["id"] > int(sys.argv[1]) and p.get("type") == "tracepoint" and p.get("name") == sys.argv[2]:
        best = max(best, (p.get("run_cnt", 0), p.get("run_time_ns", 0)))
print(best[1], best[0])' "$1" "$2"
}
