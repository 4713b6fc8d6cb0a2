# Sourced by the tests that open several pages in Chromium through
# lib/svg_browser.py (flamegraph_browser, report_viewers):
#   browser_start PY DIR  one browser for all their pages, each page a tab
#                         of it (SVG_BROWSER_PORT, exported; svg_browser.py
#                         serve, its files in DIR): a Chromium start costs
#                         ~3 s of CPU on these VMs. When it did not start
#                         within 30 s, a '#' line says why and each page
#                         starts its own, as without it
#   browser_stop          ends it (it ends by itself too when this shell
#                         exits: its stdin closes); call it from the EXIT
#                         trap, before the removal of DIR
browser_pid=
browser_start() {
	local py=$1 dir=$2
	exec {browser_fd}> >(exec "$py" "$TOP/tests/integration/lib/svg_browser.py" serve \
		"$dir/browser.port" >"$dir/browser.log" 2>&1)
	browser_pid=$!
	for _ in $(seq 300); do
		[ -s "$dir/browser.port" ] && break
		kill -0 "$browser_pid" 2>/dev/null || break
		sleep 0.1
	done
	if [ -s "$dir/browser.port" ]; then
		export SVG_BROWSER_PORT=$(cat "$dir/browser.port")
	else
		echo "# no shared browser ($(head -c 200 "$dir/browser.log")): each page starts its own"
		browser_stop
	fi
}
browser_stop() {
	[ -n "$browser_pid" ] || return 0
	exec {browser_fd}>&-
	kill -TERM "$browser_pid" 2>/dev/null
	wait "$browser_pid" 2>/dev/null
	browser_pid=
	unset SVG_BROWSER_PORT
}
