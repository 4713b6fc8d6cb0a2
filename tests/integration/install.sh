#!/usr/bin/env bash
# make install into a staging directory, then use it the way another
# project would:
#   files      make install DESTDIR=$tmp PREFIX=/usr installs the libraries,
#              the soname link, headers, ustack.pc, the command and the man
#              pages, and writes nothing outside $tmp (nor in /usr/local)
#   shared     a program built with `pkg-config --cflags --libs ustack`
#              runs against the staged libustack.so.0.MINOR (readelf: NEEDED and
#              SONAME) and its ustack_backtrace() agrees with glibc's
#   static     the same with `pkg-config --static` and libustack.a: no
#              NEEDED libustack
#   unwinder_shared, unwinder_static  a program using <ustack/unwind.h>
#              (unwinds itself from /proc/self through process_vm_readv,
#              names main through __describe) and <ustack/record.h> (opts
#              refused with EINVAL): the objects that need libbpf, libdw,
#              libelf, so the static link holds only with Requires.private
#              and Libs.private right
#   man        man -l --warnings renders every page without a warning
#   preload_multiarch  installed with LIBDIR=/usr/lib/<multiarch> (as a
#              Debian package), `record --alloc --alloc-via=preload` finds
#              libustack-alloc.so there from the installed command (root)
#   uninstall  make uninstall leaves no file behind
set -u
TOP=${TOP:-$PWD}
T=install
cd "$TOP"
CC=${CC:-gcc}
for tool in pkg-config man readelf; do
	command -v $tool >/dev/null || { echo "SKIP $T: $tool missing (scripts/deps.sh)"; exit 0; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage
v=$(make -s --no-print-directory version)
so=$(make -s --no-print-directory soname)
marker=$tmp/marker
# the marker dated a second back instead of a 1 s wait after it: a file
# make install writes is newer even where file times count whole seconds
touch -d "@$(($(date +%s) - 1))" "$marker"
if ! make -s --no-print-directory install DESTDIR="$stage" PREFIX=/usr >"$tmp/install.log" 2>&1; then
	echo "FAIL $T/files: make install failed: $(tail -3 "$tmp/install.log" | tr '\n' ' ')"
	exit 1
fi
want="usr/bin/ustack usr/include/ustack/ustack.h usr/include/ustack/unwind.h
usr/lib/libustack.a usr/lib/libustack.so.$v usr/lib/$so usr/lib/libustack.so
usr/lib/pkgconfig/ustack.pc usr/share/man/man1/ustack.1 usr/lib/ustack/libustack-alloc.so"
for f in docs/cli/*.md; do want="$want usr/share/man/man1/ustack-$(basename "$f" .md).1"; done
missing=
for f in $want; do [ -e "$stage/$f" ] || missing="$missing $f"; done
# files changed during the install outside the staging dir and the build
# tree (build/man is generated there): there must be none
outside=$(find /usr /etc /opt -xdev -newer "$marker" -type f 2>/dev/null | grep -v '^/usr/lib/python' | head -5)
if [ -z "$missing" ] && [ "$(readlink "$stage/usr/lib/$so")" = "libustack.so.$v" ] &&
   [ -z "$outside" ]; then
	echo "PASS $T/files"
else
	echo "FAIL $T/files: missing [$missing], $so -> $(readlink "$stage/usr/lib/$so"), written outside: [$outside]"
fi

cat >"$tmp/prog.c" <<'C'
#include <execinfo.h>
#include <stdio.h>
#include <string.h>
#include <ustack/ustack.h>

static int check(void)
{
	void *u[64], *g[64];
	int nu = ustack_backtrace(u, 64);
	int ng = backtrace(g, 64);

	printf("%s %d\n", ustack_version(), nu);
	if (strcmp(ustack_version(), USTACK_VERSION_STRING))
		return 1;
	/* [0] differs (two call sites); [1] (into outer) and [2] (into main)
	 * are the same return addresses */
	return !(nu >= 3 && ng >= 3 && u[1] == g[1] && u[2] == g[2]);
}
__attribute__((noinline)) int outer(void) { int r = check(); __asm__ volatile(""); return r; }
int main(void) { int r = outer(); __asm__ volatile(""); return r; }
C
export PKG_CONFIG_PATH=$stage/usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$stage
# the program unwinds itself: SFrame when the assembler emits it
flags="-O1 -fno-inline ${GSFRAME:--fno-omit-frame-pointer}"
cflags=$(pkg-config --cflags ustack) libs=$(pkg-config --libs ustack) || {
	echo "FAIL $T/shared: pkg-config ustack fails"; libs=; }
if [ -n "$libs" ] && $CC $flags $cflags -o "$tmp/prog_shared" "$tmp/prog.c" $libs 2>"$tmp/cc.err"; then
	out=$(LD_LIBRARY_PATH=$stage/usr/lib "$tmp/prog_shared" 2>&1)
	rc=$?
	needed=$(readelf -d "$tmp/prog_shared" | sed -n 's/.*(NEEDED).*\[\(libustack[^]]*\)\].*/\1/p')
	soname=$(readelf -d "$stage/usr/lib/libustack.so.$v" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	resolved=$(LD_LIBRARY_PATH=$stage/usr/lib ldd "$tmp/prog_shared" | awk '/libustack/ { print $3 }')
	if [ $rc -eq 0 ] && [ "$needed" = "$so" ] && [ "$soname" = "$so" ] &&
	   [ "$resolved" = "$stage/usr/lib/$so" ]; then
		echo "PASS $T/shared ($out; cflags '$cflags', libs '$libs')"
	else
		echo "FAIL $T/shared: rc $rc '$out', NEEDED '$needed', SONAME '$soname', resolved '$resolved'"
	fi
else
	echo "FAIL $T/shared: does not build with '$cflags' '$libs': $(head -3 "$tmp/cc.err" 2>/dev/null)"
fi

# static: pkg-config --static lists what libustack.a needs; -l:libustack.a
# takes the archive where -lustack would take the .so
slibs=$(pkg-config --static --libs ustack) &&
	slibs=$(echo " $slibs " | sed 's/ -lustack / -l:libustack.a /')
if [ -n "${slibs:-}" ] && $CC $flags $cflags -o "$tmp/prog_static" "$tmp/prog.c" $slibs 2>"$tmp/cc.err"; then
	out=$("$tmp/prog_static" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && ! readelf -d "$tmp/prog_static" | grep -q 'NEEDED.*libustack'; then
		echo "PASS $T/static ($out; libs '$slibs')"
	else
		echo "FAIL $T/static: rc $rc '$out' or linked to libustack.so"
	fi
else
	echo "FAIL $T/static: does not build with '$slibs': $(head -3 "$tmp/cc.err" 2>/dev/null)"
fi

cat >"$tmp/prog2.c" <<'C'
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <ustack/record.h>
#include <ustack/unwind.h>

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

__attribute__((noinline)) static int walk(void)
{
	struct ustack_unwinder_opts uo = { .sz = sizeof(uo), .pid = getpid() };
	struct ustack_unwind_opts wo = { .sz = sizeof(wo), .read = rd };
	struct ustack_unwinder *u = ustack_unwinder__new(&uo);
	struct ustack_frame f[32];
	struct ustack_regs regs;
	unsigned int stop;
	int n, named_main = 0;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(regs.pc), "=r"(regs.sp), "=r"(regs.fp));
	if (!u)
		return -1;
	n = ustack_unwinder__unwind(u, &regs, &wo, f, 32, &stop);
	for (int i = 0; i < n; i++) {
		struct ustack_frame_info fi = { .sz = sizeof(fi) };

		if (!ustack_unwinder__describe(u, &f[i], &fi) && fi.symbol &&
		    !strcmp(fi.symbol, "main"))
			named_main = 1;
	}
	ustack_unwinder__free(u);
	return named_main ? n : -n;
}

int main(void)
{
	struct ustack_recorder *r = ustack_recorder__new(NULL); /* no target: EINVAL */
	int e = errno, n = walk();

	printf("%d frames through main, recorder: %s\n", n, r ? "?" : strerror(e));
	__asm__ volatile("");
	return !(n >= 2 && !r && e == EINVAL);
}
C
if [ -n "$libs" ] && $CC -O2 -g $cflags -o "$tmp/prog2_shared" "$tmp/prog2.c" $libs 2>"$tmp/cc.err" &&
   out=$(LD_LIBRARY_PATH=$stage/usr/lib "$tmp/prog2_shared" 2>&1); then
	echo "PASS $T/unwinder_shared ($out)"
else
	echo "FAIL $T/unwinder_shared: ${out:-$(head -3 "$tmp/cc.err" 2>/dev/null)}"
fi
out=
if [ -n "${slibs:-}" ] && $CC -O2 -g $cflags -o "$tmp/prog2_static" "$tmp/prog2.c" $slibs 2>"$tmp/cc.err" &&
   out=$("$tmp/prog2_static" 2>&1) && ! readelf -d "$tmp/prog2_static" | grep -q 'NEEDED.*libustack'; then
	echo "PASS $T/unwinder_static ($out; libs '$slibs')"
else
	echo "FAIL $T/unwinder_static: ${out:-$(head -3 "$tmp/cc.err" 2>/dev/null)}"
fi

bad=
for p in "$stage"/usr/share/man/man1/*.1; do
	w=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >"$tmp/page.txt")
	if [ -n "$w" ] || ! grep -q "^NAME" "$tmp/page.txt"; then
		bad="$bad $(basename "$p"): ${w:-no NAME section}"
	fi
done
# a page says what its doc says: the first option of maps' table
if [ -z "$bad" ] && MANWIDTH=200 man -l "$stage/usr/share/man/man1/ustack-maps.1" 2>/dev/null |
	grep -q -- '-p, --pid PID *process to inspect'; then
	echo "PASS $T/man ($(ls "$stage"/usr/share/man/man1 | wc -l) pages)"
else
	echo "FAIL $T/man:${bad:- ustack-maps.1 lacks the options table of docs/cli/maps.md}"
fi

# record --alloc finds its preload library where a Debian package puts it
# (LIBDIR=/usr/lib/x86_64-linux-gnu), from the installed command alone;
# --alloc-via=preload: an error, not the uprobes fallback, when it does not
stage2=$tmp/stage-multiarch
ma=$($CC -print-multiarch 2>/dev/null)
if [ -z "$ma" ]; then
	echo "SKIP $T/preload_multiarch: $CC -print-multiarch names no multiarch directory"
elif [ "$(id -u)" != 0 ]; then
	echo "SKIP $T/preload_multiarch: not root (record --alloc needs the BPF backend)"
elif ! make -s --no-print-directory install DESTDIR="$stage2" PREFIX=/usr LIBDIR="/usr/lib/$ma" >"$tmp/install2.log" 2>&1; then
	echo "FAIL $T/preload_multiarch: make install LIBDIR=/usr/lib/$ma failed: $(tail -2 "$tmp/install2.log" | tr '\n' ' ')"
elif [ ! -f "$stage2/usr/lib/$ma/ustack/libustack-alloc.so" ]; then
	echo "FAIL $T/preload_multiarch: no usr/lib/$ma/ustack/libustack-alloc.so in the stage"
elif "$stage2/usr/bin/ustack" record --alloc --alloc-via=preload -o "$tmp/alloc.ustack" -- /bin/true >"$tmp/alloc.out" 2>&1; then
	echo "PASS $T/preload_multiarch (usr/lib/$ma/ustack/libustack-alloc.so found by usr/bin/ustack)"
else
	echo "FAIL $T/preload_multiarch: $(grep -m1 -i 'alloc\|error' "$tmp/alloc.out")"
fi
rm -rf "$stage2"

make -s --no-print-directory uninstall DESTDIR="$stage" PREFIX=/usr >"$tmp/uninstall.log" 2>&1
left=$(find "$stage" ! -type d | head -5)
if [ -z "$left" ]; then
	echo "PASS $T/uninstall"
else
	echo "FAIL $T/uninstall: left behind: $left"
fi
