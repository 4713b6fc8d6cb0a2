#!/usr/bin/env bash
# container_names.sh's ct_forged_* cases (what they check is said there):
# record -a -d 3, then the host process's libc frames named from what the
# whole-machine trace holds. Run alone: other tests' forged and hostile
# files would be read too. Its other cases run with the other tests.
PARTS=system exec bash "$(dirname "$0")/container_names.sh"
