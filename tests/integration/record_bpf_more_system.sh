#!/usr/bin/env bash
# record_bpf_more.sh's cases under record -a (all/bpf, all/duration: what
# each checks is said there), which count what the whole machine does and
# run alone; its other cases run with the other tests.
PARTS=system exec bash "$(dirname "$0")/record_bpf_more.sh"
