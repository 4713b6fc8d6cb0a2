#!/bin/bash
# check-tail-calls.sh LIB: in libustack-alloc.so, every allocator function
# reaches ustack_alloc_hit by jumps (tail calls) only: to its slow path
# alloc_slow_*, which jumps to the hit; nothing calls either. At the end of
# a chain of tail calls the return address and the callee-saved registers
# are the allocator's caller's, and record --alloc unwinds from there; a
# call would leave a frame of the library on top, with registers the
# kernel's walk could not trust. An optimisation a compiler may skip, so
# checked at each build.
set -euo pipefail
lib=$1
dis=$(objdump -d --no-show-raw-insn "$lib")
calls=$(awk '/^[0-9a-f]+ <.*>:$/ { fn = $2 } /\tcall .*<(ustack_alloc_hit|alloc_slow_)/ { print fn }' <<<"$dis")
if [ -n "$calls" ]; then
	echo "$lib: ustack_alloc_hit or a slow path is called, not jumped to, from:" $calls >&2
	exit 1
fi
# jumps FN TARGET-REGEX: FN has a jmp to a name matching the regex
jumps() {
	awk -v want="<$1>:" -v re="$2" '/^[0-9a-f]+ <.*>:$/ { fn = $2 }
		fn == want && $0 ~ "\tjmp .*<(" re ")>" { ok = 1 } END { exit !ok }' <<<"$dis"
}
for fn in alloc_slow_ptr alloc_slow_int; do
	jumps $fn ustack_alloc_hit || { echo "$lib: $fn does not jump to ustack_alloc_hit" >&2; exit 1; }
done
for fn in malloc calloc realloc reallocarray posix_memalign aligned_alloc memalign valloc pvalloc; do
	if ! jumps $fn 'alloc_slow_ptr|alloc_slow_int|ustack_alloc_hit'; then
		echo "$lib: $fn does not reach ustack_alloc_hit by jumps" >&2
		exit 1
	fi
done
