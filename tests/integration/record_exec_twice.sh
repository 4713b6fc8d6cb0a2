#!/usr/bin/env bash
# `record -- CMD` where CMD execs again (issue 28's `record -- chroot ROOT
# gzip`): the recorder's mapping picture must follow the second exec, so the
# program's stacks unwind to its main and are named. The program is
# tests/integration/progs/ct_prog.c (+ ct_lib.c) built with tag x; names
# come from `nm` of that build.
#
# Lines (PASS/FAIL/SKIP record_exec_twice/FORM/BACKEND):
#   FORM sh:     record -- sh -c 'exec PROG 1'
#   FORM chroot: record -- chroot ROOT PROG 1 (ROOT made here: PROG, its
#                library and the host's libc and ld.so; needs root)
#   Each: at least 10 events through the build's ct_*_x functions, every
#   one reaching main; all frames in PROG or the library named with names
#   of `nm` of the build, ct_prog_spin_x seen; the
#   report has no "[build ID mismatch]" frame.
# BACKEND is copy and bpf (SKIP with the recorder's reason when bpf or perf
# events are not available).
set -u
T=record_exec_twice
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}" "${USTACK:=$TOP/$CHECK_DIR/ustack}"
PROGS=$TOP/tests/integration/progs
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; }
skip() { echo "SKIP $T/$1: $2"; }

command -v nm >/dev/null || { skip all "nm not installed"; exit 0; }
tmp=$(mktemp -d /tmp/ustack-exec2.XXXXXX)
cleanup() { [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"; }
trap cleanup EXIT
export USTACK_CACHE_DIR=$tmp/cache HOME=$tmp/home
mkdir -p "$HOME"
APP=$tmp/app P=$tmp/app/ct_prog
mkdir -p "$APP"
if ! $CC -O2 -fno-plt -DCT_TAG=x -shared -fPIC -o "$APP/libct.so" "$PROGS/ct_lib.c" ||
	! $CC -O2 -fno-plt -DCT_TAG=x -o "$P" "$PROGS/ct_prog.c" -L"$APP" -lct -Wl,-rpath,"$APP"; then
	fail build "cannot compile tests/integration/progs/ct_{prog,lib}.c"
	exit 0
fi
nm --defined-only "$P" "$APP/libct.so" | awk 'NF == 3 && $2 ~ /[TtWw]/ { print $3 }' | sort -u >"$tmp/names"

# every event through one of the build's ct_*_x functions: its stack
# reaches main; and every frame in P or L is named from the build
check() { # REPORT_TEXT
	awk -v p="$P" -v l="$APP/libct.so" -v okf="$tmp/names" '
		BEGIN { while ((getline n < okf) > 0) ok[n] = 1 }
		function event_end() {
			if (leaf) { ev++; if (!has_main) { nomain++; if (nomain <= 2) why = why " [no main under " first "]" } }
			leaf = 0; has_main = 0; nfr = 0
		}
		/^[^ ]/ { event_end(); next }
		/^ => / {
			path = $0; sub(/^[^(]*\(/, "", path); sub(/\).*$/, "", path); sub(/\+0x[0-9a-f]+$/, "", path)
			if (path ~ /kernel/) next
			nfr++
			if (path != p && path != l) next
			name = $2; sub(/\+0x[0-9a-f]+$/, "", name)
			# the stacks through the build own functions (not those of
			# exit(): destructors run after main returned)
			if (name ~ /^ct_.*_x$/ && !leaf) { leaf = 1; first = substr($0, 5) }
			if (name == "main") has_main = 1
			if (name == "ct_prog_spin_x") spin = 1
			if (!(name in ok)) { bad++; if (bad <= 2) why = why " [" substr($0, 5) "]" }
		}
		END {
			event_end()
			if (ev < 10) { print "only " ev + 0 " events through ct_*_x functions"; exit 1 }
			if (nomain || bad || !spin) { print ev " events: " nomain + 0 " not reaching main, " bad + 0 " frames not named from the build" (spin ? "" : ", ct_prog_spin_x never seen") ":" why; exit 1 }
			print ev " events in the program, all to main and named"
		}' "$1"
}

forms=(sh)
if [ "$(id -u)" -eq 0 ] && command -v chroot >/dev/null; then
	ROOT=$tmp/root
	mkdir -p "$ROOT$APP"
	cp "$P" "$APP/libct.so" "$ROOT$APP/"
	for f in $(ldd "$P" | grep -o '/[^ ]*' | grep -v "^$APP/"); do
		mkdir -p "$ROOT$(dirname "$f")"
		cp -L "$f" "$ROOT$f"
	done
	forms+=(chroot)
else
	skip chroot "needs root and chroot"
fi
for form in "${forms[@]}"; do
	for backend in copy bpf; do
		t=$form/$backend
		if [ $form = sh ]; then cmd=(sh -c "exec '$P' 1"); else cmd=(chroot "$ROOT" "$P" 1); fi
		out=$tmp/$form.$backend
		if ! "$USTACK" record -F 499 -q --backend $backend -o "$out.data" -- "${cmd[@]}" \
			>"$out.rec.out" 2>"$out.rec.err"; then
			if [ $backend = bpf ] && grep -qiE 'bpf|btf|not supported|permi' "$out.rec.err"; then
				skip "$t" "backend bpf unavailable: $(head -n1 "$out.rec.err")"
			elif grep -qiE 'permi|perf_event|not supported' "$out.rec.err"; then
				skip "$t" "perf events unavailable: $(head -n1 "$out.rec.err")"
			else
				fail "$t" "ustack record: $(head -n3 "$out.rec.err" | tr '\n' ' ')"
			fi
			continue
		fi
		if ! "$USTACK" report -i "$out.data" -o "$out.text" 2>"$out.rep.err"; then
			fail "$t" "ustack report: $(head -n3 "$out.rep.err" | tr '\n' ' ')"
			continue
		fi
		if grep -q 'build ID mismatch' "$out.text"; then
			fail "$t" "$(grep -c 'build ID mismatch' "$out.text") frames '[build ID mismatch]': $(grep -m1 'build ID mismatch' "$out.text")"
		elif why=$(check "$out.text"); then
			pass "$t ($why)"
		else
			fail "$t" "$why"
		fi
	done
done
exit 0
