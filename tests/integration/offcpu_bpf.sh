#!/usr/bin/env bash
# offcpu.sh's cases for the bpf backend (what each checks is said there),
# run with the other tests: its intervals are measured in the kernel at
# sched_switch. The copy backend's, whose stack copies compete for the CPUs,
# are offcpu.sh's own and run alone.
OFFCPU_BACKENDS=bpf exec bash "$(dirname "$0")/offcpu.sh"
