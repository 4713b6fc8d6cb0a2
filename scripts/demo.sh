#!/usr/bin/env bash
# make demo: build the bundled example without frame pointers and show its
# own stack as a frame-pointer walk, glibc and ustack see it.
set -euo pipefail
cd "$(dirname "$0")/.."
CC=${CC:-cc}
out=build/examples
mkdir -p "$out"
GSFRAME=$(echo nop | $CC -x assembler -Wa,--gsframe -c -o /dev/null - 2>/dev/null && echo -Wa,--gsframe || true)
if [ -z "$GSFRAME" ]; then
	echo "demo: this assembler cannot emit SFrame (-Wa,--gsframe needs binutils >= 2.40)" >&2
	exit 1
fi
$CC -O2 -fomit-frame-pointer $GSFRAME -rdynamic -Iinclude examples/selfstack.c \
	build/libustack.a -ldl -lpthread -o "$out/selfstack"
echo "== examples/selfstack.c, built -O2 -fomit-frame-pointer $GSFRAME"
echo
"$out/selfstack"
