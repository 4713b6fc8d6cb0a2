#!/usr/bin/env bash
# record_scale.sh's part that records one process (10,000 mappings, 2,000
# threads: snapshot -p, record -p, their memory; record_scale.sh says what
# each line checks), apart from its part under record -a, which runs alone.
PARTS=scale exec bash "$(dirname "$0")/record_scale.sh"
