# The CPython interpreters the Python-frame tests run (sourced by
# python_frames.sh and snapshot_python.sh): NAME:PATH, each skipped by the
# caller, saying so, where it is not installed (Debian 12's python3.11;
# pyenv's builds where this machine has them); and an unsupported one,
# which must be refused with one line.
PY_VERSIONS="3.11_debian:/usr/bin/python3.11 3.11.7:/root/.pyenv/versions/3.11.7/bin/python3.11
3.12.1:/root/.pyenv/versions/3.12.1/bin/python3.12 3.13.0:/root/.pyenv/versions/3.13.0/bin/python3.13"
PY_UNSUPPORTED=/root/.pyenv/versions/3.10.13/bin/python3.10

# py_wait_ready FILE: until the program wrote "ready" into FILE (30 s at most)
py_wait_ready() {
	local i
	for i in $(seq 3000); do
		grep -q ready "$1" 2>/dev/null && return 0
		sleep 0.01
	done
	return 1
}
