# Sourced by integration tests (not a test itself: run-tests.sh runs only
# tests/integration/*.sh).
#
# A libc function has several names at one address (write, __write,
# __libc_write, __GI___libc_write, ...: global, weak and, in libc6-dbg's
# debug file, local aliases). Which one a symbolizer prints is its choice,
# and every one of them is right; so a test that names a libc function
# accepts any of its aliases, as binutils' nm lists them, rather than the
# one ustack happens to pick.
#
# libc_path [PROGRAM]: the libc.so.6 PROGRAM (default /bin/true) is linked
#   to, as ldd resolves it (/lib/x86_64-linux-gnu/... or /usr/lib/...)
libc_path() { ldd "${1:-/bin/true}" 2>/dev/null | awk '$1 ~ /^libc\.so\./ { print $3; exit }'; }
# libc_aliases NAME [LIBC]: the names at NAME's address in LIBC (default
#   libc_path): .dynsym, and the .symtab of its build-ID debug file when
#   there is one, symbol versions cut; as an extended regular expression
#   "(a|b|c)". Status 1 and nothing printed when NAME is in neither.
libc_aliases() {
	local lib=${2:-$(libc_path)} bid dbg=
	bid=$(readelf -n "$lib" 2>/dev/null | awk '/Build ID:/ { print $3; exit }')
	[ -n "$bid" ] && [ -r "/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug" ] &&
		dbg=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
	{ nm -D --defined-only "$lib" 2>/dev/null; [ -n "$dbg" ] && nm --defined-only "$dbg" 2>/dev/null; } |
		awk -v want="$1" '
		NF == 3 && $2 ~ /^[tTwWiI]$/ { n = $3; sub(/@.*/, "", n); a[NR] = $1; s[NR] = n; if (n == want) at = $1 }
		END {
			if (at == "") exit 1
			for (i in a) if (a[i] == at && !(s[i] in seen)) { seen[s[i]] = 1; r = r (r == "" ? "" : "|") s[i] }
			gsub(/\./, "\\.", r)
			print "(" r ")"
		}'
}
