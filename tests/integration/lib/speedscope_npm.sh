# speedscope_npm DIR VERSION LOG: the speedscope npm package into DIR
# (build/npm), unless it is there; one install at a time (report_viewers
# and names_hostile run at once, and two installs into one directory break
# it): the second waits for the first, then finds the package. Returns 0
# when DIR holds the package's schema.
speedscope_npm() {
	local dir=$1 version=$2 log=$3
	local schema=$dir/node_modules/speedscope/dist/release/file-format-schema.json
	[ -f "$schema" ] && return 0
	command -v npm >/dev/null || return 1
	mkdir -p "$dir"
	(
		flock 9
		[ -f "$schema" ] ||
			timeout 180 npm install --prefix "$dir" --no-audit --no-fund "speedscope@$version" >"$log" 2>&1
	) 9>>"$dir.lock"
	[ -f "$schema" ]
}
