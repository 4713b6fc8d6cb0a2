#!/usr/bin/env bash
# probes_more.sh's cases with the bpf backend, and its usdt-notes case
# (probes_more.sh says what each checks), run with the other tests; the
# copy backend's run alone (tests/run-tests.sh).
PROBES_BACKENDS=bpf PROBES_NOTES=1 exec bash "$(dirname "$0")/probes_more.sh"
