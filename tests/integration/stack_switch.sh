#!/usr/bin/env bash
# Processes that switch stacks: tests/integration/progs/hostile_stacks.c
# (see its header for each case). A stack must be right up to the point
# where the thread switched stacks, and then either reach a legitimate
# outermost frame or end with a stated stop: never show a frame of another
# stack as a caller.
#
#   stack_switch/snapshot/VARIANT/MODE/THREAD
#       `hostile_stacks block` (every case blocked for good in read(2)),
#       `ustack snapshot -p PID --methods`, MODE `default` (threads read
#       through /proc where they can) and `stop-all` (every thread stopped
#       by ptrace), VARIANT `cfi` (gcc -O2, no frame pointers) and `sframe`
#       (the same with $GSFRAME). Per thread (by its comm):
#         - the program's own chain, innermost first, as consecutive
#           frames, preceded only by frames outside the program (libc's
#           read);
#         - every frame up to there (and past it, where the oracle is
#           right) equal to gdb's (pc, and name as snapshot_core.sh
#           normalizes them, "??" matching any); gdb is attached after
#           ustack, once per variant;
#         - what follows the chain:
#             hs-coro     at most one frame, in libc (__start_context, the
#                         return address makecontext() put there, which gdb
#                         shows too), then the end: a frame-pointer guess
#                         lands on the main stack (main_ctx_inner's frame,
#                         whose rbp the coroutine inherited) and gdb, which
#                         reads __start_context as an ordinary frame, shows
#                         its uc_link word (an address on the main stack) as
#                         a caller: both wrong;
#             hs-clone    nothing: hs_clone_entry has no CFI, and rbp points
#                         into the parent's stack (gdb guesses a frameless
#                         function and shows the word at sp as a frame);
#             hs-alt      __restore_rt, then the interrupted function (found
#                         through the signal frame: [signal]) on the thread's
#                         own stack, down to clone3, as gdb;
#             hs-longjmp  down to clone3 as gdb, no handler frame and no
#                         __restore_rt left over;
#             hs-clone2   nothing: hs_clone_entry_end's CFI ends the stack
#                         (its CFA, sp + 8, lies past the stack's mapping,
#                         in a page whose first word is 0x4848484848484848);
#             hs-clone3   nothing: hs_clone_entry_lie's CFI claims an
#                         ordinary frame, whose "return address" at sp is
#                         0x4848484848484848 (gdb shows it as a frame).
#         - the end: a `# stopped:` line (no-info, bad-step, read-fault) is
#           accepted only where the stack has no marked end (hs-coro,
#           hs-clone, hs-clone3); the others must reach their outermost
#           frame (but see sframe_lossy() for hs-clone2 built with an
#           assembler whose SFrame cannot mark it).
#   stack_switch/record/BACKEND
#       `ustack record --backend copy|bpf -- hostile_stacks spin 150`: a
#       coroutine spins 150 ms of CPU time (main's context suspended in
#       main_ctx_inner <- main_ctx_marker <- main), then a handler on a
#       sigaltstack does. `ustack report` (text): at least 20 samples of
#       each; every sample with a coro_* frame has coro_spin_b <-
#       coro_spin_a <- coro_entry (or the innermost part of it, ended by a
#       ` -- unwind stopped:` line), then at most one libc frame, and nothing
#       of main's stack (main_ctx_marker, main, _start); every sample in the
#       handler has alt_spin_b <- alt_handler <- __restore_rt <-
#       alt_spin_interrupted <- main <- libc <- _start, or the innermost part
#       of it ended by a stop line (the copy backend's copy holds the
#       sigaltstack only: read-fault after the interrupted frame). bpf is
#       skipped, with the recorder's reason, when it cannot load.
#
# Env (from make check): USTACK CC TOP GSFRAME; KEEP_TMP=1 keeps the files.
set -u
T=stack_switch
USTACK=${USTACK:-build/check/ustack}
CC=${CC:-gcc}
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
if [ -z "${GSFRAME+set}" ]; then
	GSFRAME=$(echo nop | $CC -x assembler -Wa,--gsframe -c -o /dev/null - 2>/dev/null && echo -Wa,--gsframe)
fi
fails=0
pass() { echo "PASS $T/$1"; }
fail() { echo "FAIL $T/$1: $2"; fails=$((fails + 1)); }
skip() { echo "SKIP $T/$1: $2"; }

[ -x "$USTACK" ] || { fail setup "no $USTACK"; exit 1; }
command -v python3 >/dev/null || { skip all "python3 missing (the judge of the stacks)"; exit 0; }
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	[ -n "${KEEP_TMP:-}" ] && echo "# files kept in $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
# the sanitizer runtime must not see the gdb children
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
. "$TOP/tests/integration/lib/wait_blocked.sh"
src=$TOP/tests/integration/progs/hostile_stacks.c

# ---- the programs --------------------------------------------------------------
CF=(-O2 -fomit-frame-pointer -Wall -Wextra -pthread)
variants=(cfi)
if ! $CC "${CF[@]}" -o "$tmp/hs_cfi" "$src" 2>"$tmp/build.err"; then
	fail build "$CC ${CF[*]} hostile_stacks.c: $(head -5 "$tmp/build.err" | tr '\n' '|')"
	exit 1
fi
if [ -n "$GSFRAME" ] && $CC "${CF[@]}" $GSFRAME -o "$tmp/hs_sframe" "$src" 2>/dev/null &&
   readelf -SW "$tmp/hs_sframe" | grep -q '\.sframe'; then
	variants+=(sframe)
else
	skip snapshot/sframe "the assembler cannot emit SFrame (GSFRAME='$GSFRAME')"
fi
if readelf -SW "$tmp/hs_cfi" | grep -q '\.sframe'; then
	fail build "hs_cfi has an .sframe section (the toolchain adds SFrame by itself?)"
	exit 1
fi
# The hostile shapes must be what they claim, or the test proves nothing:
# main_ctx_inner and raw_clone keep a frame pointer (the rbp a coroutine
# and the raw thread inherit), hs_clone_entry has no CFI, hs_clone_entry_end
# and hs_clone_entry_lie have some.
sets_fp() {
	objdump -d --no-show-raw-insn "$1" | awk -v f="<$2>:" '$2 == f { on = 1; next } on && /^$/ { exit }
		on && /push +%rbp/ { p = 1 } on && p && /mov +%rsp,%rbp/ { ok = 1; exit } END { exit !ok }'
}
has_fde() { # EXE FUNC: an FDE covers the function's first byte
	local a lo hi r
	a=$(nm "$1" | awk -v f="$2" '$3 == f { print $1 }')
	[ -n "$a" ] || return 1
	a=$((16#$a))
	while read -r r; do
		lo=$((16#${r%%..*})) hi=$((16#${r#*..}))
		[ "$a" -ge "$lo" ] && [ "$a" -lt "$hi" ] && return 0
	done < <(readelf --debug-dump=frames "$1" 2>/dev/null | sed -n 's/.* FDE .*pc=\([0-9a-f]*\.\.[0-9a-f]*\).*/\1/p')
	return 1
}
# An assembler that cannot say "outermost" in SFrame (binutils 2.40 turns
# .cfi_undefined rip into an ordinary row: CFA sp+8, RA at CFA-8, `u` in
# objdump's RA column) gives hs_clone_entry_end a wrong SFrame row, which
# the unwinder prefers to the CFI: a stop is then the right end for
# hs-clone2 in that variant (what lies at sp, past the stack's mapping, is
# not a caller).
sframe_lossy() {
	local a
	a=$(nm "$1" | awk '$3 == "hs_clone_entry_end" { print $1 }' | sed 's/^0*//')
	[ -n "$a" ] && objdump --sframe "$1" 2>/dev/null | awk -v a="$a" '
		$0 ~ "pc = 0x" a "," { on = 1; next } on && /^ *[0-9a-f]+ / { ok = $2 == "sp+8" && $4 == "u"; exit }
		END { exit !ok }'
}
LOSSY=
if [[ " ${variants[*]} " == *" sframe "* ]] && sframe_lossy "$tmp/hs_sframe"; then
	LOSSY=sframe
	echo "# the assembler's SFrame turns hs_clone_entry_end's .cfi_undefined rip into an ordinary row: hs-clone2 (sframe) may end with a stop"
fi
for v in "${variants[@]}"; do
	exe=$tmp/hs_$v
	for f in main_ctx_inner raw_clone; do
		sets_fp "$exe" "$f" || { fail build/$v "$f does not set up a frame pointer (push %rbp; mov %rsp,%rbp)"; exit 1; }
	done
	has_fde "$exe" hs_clone_entry && { fail build/$v "hs_clone_entry is covered by an FDE (it must have no CFI)"; exit 1; }
	has_fde "$exe" hs_clone_entry_end || { fail build/$v "hs_clone_entry_end has no FDE"; exit 1; }
	has_fde "$exe" hs_clone_entry_lie || { fail build/$v "hs_clone_entry_lie has no FDE"; exit 1; }
done

# ---- the judge ---------------------------------------------------------------------
cat >"$tmp/judge.py" <<'EOF'
import os, re, sys

def norm(n):
    # as snapshot_core.sh: version, clone suffixes, _impl, leading _, GI_, libc_
    n = re.sub(r'@.*', '', n)
    n = re.sub(r'\..*', '', n)
    n = re.sub(r'_impl$', '', n)
    n = re.sub(r'^_+', '', n)
    n = re.sub(r'^GI_+', '', n)
    n = re.sub(r'^libc_', '', n)
    return n

def same_name(a, b):
    return a == '??' or b == '??' or norm(a) == norm(b)

def short(frames, k=12):
    return ' < '.join('%s(%s)' % (f['name'], f['pc']) for f in frames[:k])

# ---- snapshot ----
SPEC = {
    # chain, innermost first; frames allowed after it (and where); gdb
    # right all the way; a stop line allowed; names that must not appear
    'hs-coro': dict(chain=['block_in_libc', 'coro_block', 'coro_mid', 'coro_entry'],
                    after=1, after_path='libc.so', full=False, stop_ok=True,
                    never=['main_ctx_inner', 'main_ctx_marker', 'main', '_start']),
    'hs-alt': dict(chain=['block_in_libc', 'alt_block', 'alt_mid', 'alt_handler', '__restore_rt',
                          'alt_interrupted', 'alt_thread'],
                   full=True, stop_ok=False, signal_after='__restore_rt', never=[]),
    'hs-longjmp': dict(chain=['block_in_libc', 'lj_after_b', 'lj_after_a', 'lj_setup', 'lj_thread'],
                       full=True, stop_ok=False,
                       never=['lj_handler', 'lj_deep', 'lj_victim', '__restore_rt']),
    'hs-clone': dict(chain=['clone_block', 'clone_b', 'clone_a', 'hs_clone_entry'],
                     after=0, full=False, stop_ok=True, never=['main', '_start', 'raw_clone']),
    'hs-clone2': dict(chain=['clone_block', 'clone_b', 'clone_a', 'hs_clone_entry_end'],
                      after=0, full=False, stop_ok=False, never=['main', '_start', 'raw_clone']),
    'hs-clone3': dict(chain=['clone_block', 'clone_b', 'clone_a', 'hs_clone_entry_lie'],
                      after=0, full=False, stop_ok=True, never=['main', '_start', 'raw_clone']),
}
STOPS_OK = {'no-info', 'bad-step', 'read-fault'}

def parse_ustack(path):
    threads, cur = {}, None
    for line in open(path):
        line = line.rstrip('\n')
        m = re.match(r'^TID (\d+) (\S+)', line)
        if m:
            cur = dict(tid=m.group(1), comm=m.group(2), frames=[], stop=None, text=[])
            threads[cur['comm']] = cur
            continue
        if cur is None or not line:
            continue
        cur['text'].append(line)
        m = re.match(r'^#(\d+) 0x([0-9a-f]+) (\S+) \((.*?)\)(?: \[(\w+)\])?$', line)
        if m:
            name = re.sub(r'\+0x[0-9a-f]+$', '', m.group(3))
            cur['frames'].append(dict(pc=m.group(2), name=name, path=m.group(4), method=m.group(5)))
            continue
        m = re.match(r'^# stopped: (\S+)', line)
        if m:
            cur['stop'] = m.group(1)
    return threads

def parse_gdb(path):
    threads, cur = {}, None
    for line in open(path):
        m = re.match(r'^TID (\d+)$', line.strip())
        if m:
            cur = threads.setdefault(m.group(1), [])
            continue
        m = re.match(r'^#\d+ 0x([0-9a-f]+) (\S+) (\w+)$', line.strip())
        if m and cur is not None and m.group(3) == 'normal':
            cur.append(dict(pc=m.group(1), name=m.group(2)))
    return threads

def judge_thread(comm, th, gdb, exe):
    s = SPEC[comm]
    fr, chain = th['frames'], s['chain']
    own = lambda f: f['path'] == exe
    if not fr:
        return 'no frames'
    # the chain, after frames outside the program only
    k = next((i for i, f in enumerate(fr) if own(f) or f['name'] in chain), None)
    if k is None or fr[k]['name'] != chain[0]:
        return 'no %s after the leaf frames outside the program' % chain[0]
    got = [f['name'] for f in fr[k:k + len(chain)]]
    if got != chain:
        return 'chain %s, want %s' % (' < '.join(got), ' < '.join(chain))
    end = k + len(chain)
    for f in fr:
        if f['name'] in s['never']:
            return '%s, a frame of another stack or a leftover, at %s' % (f['name'], f['pc'])
    if s.get('signal_after'):
        i = [f['name'] for f in fr].index(s['signal_after'])
        if fr[i + 1]['method'] != 'signal':
            return 'the frame after %s was found by [%s], not [signal]' % (s['signal_after'], fr[i + 1]['method'])
    if not s['full']:
        rest = fr[end:]
        if len(rest) > s['after']:
            return '%d frames after %s, at most %d allowed: %s' % (len(rest), chain[-1], s['after'], short(rest))
        for f in rest:
            if own(f) or s.get('after_path', '\0') not in f['path']:
                return 'frame %s %s (%s) after %s: only a frame in %s may follow' % (
                    f['pc'], f['name'], f['path'], chain[-1], s.get('after_path'))
    if th['stop'] is not None:
        if not s['stop_ok']:
            return 'stopped (%s) instead of reaching the outermost frame' % th['stop']
        if th['stop'] not in STOPS_OK:
            return 'stopped for the reason "%s"' % th['stop']
    # the oracle: gdb's frames, the same up to the switch point and, where
    # gdb is right, all the way
    if gdb is not None:
        g = gdb.get(th['tid'])
        if g is None:
            return 'gdb has no thread %s' % th['tid']
        if s['full'] and len(g) != len(fr):
            return '%d frames, gdb %d: ustack %s | gdb %s' % (len(fr), len(g), short(fr, 14), short(g, 14))
        if len(g) < len(fr):
            return 'gdb has only %d frames: ustack %s | gdb %s' % (len(g), short(fr, 14), short(g, 14))
        for i in range(len(fr)):
            if fr[i]['pc'] != g[i]['pc'] or not same_name(fr[i]['name'], g[i]['name']):
                return 'frame #%d 0x%s %s, gdb 0x%s %s' % (i, fr[i]['pc'], fr[i]['name'], g[i]['pc'], g[i]['name'])
    return None

def snapshot(args):
    ustack_file, gdb_file, exe, label = args
    if os.environ.get('LOSSY_SFRAME'):
        SPEC['hs-clone2']['stop_ok'] = True
    threads = parse_ustack(ustack_file)
    gdb = parse_gdb(gdb_file) if gdb_file != '-' else None
    bad = 0
    for comm in SPEC:
        th = threads.get(comm)
        if th is None:
            print('FAIL %s/%s: no thread named %s in the snapshot (threads: %s)' % (
                label, comm, comm, ' '.join(threads)))
            bad += 1
            continue
        why = judge_thread(comm, th, gdb, exe)
        if why:
            print('FAIL %s/%s: %s | ustack: %s' % (label, comm, why, '|'.join(th['text'][:14])))
            bad += 1
        else:
            print('PASS %s/%s: %d frames%s%s' % (label, comm, len(th['frames']),
                  ', stopped: ' + th['stop'] if th['stop'] else ', outermost',
                  ', as gdb' if gdb is not None else ''))
    return bad

# ---- record ----
CORO = ['coro_spin_b', 'coro_spin_a', 'coro_entry']
ALT = ['alt_spin_b', 'alt_handler', '__restore_rt', 'alt_spin_interrupted', 'main']

def events(path):
    ev = None
    for line in open(path):
        line = line.rstrip('\n')
        if re.search(r' cookie=[0-9a-f]+', line) and not line.startswith(' '):
            if ev:
                yield ev
            ev = dict(head=line, frames=[], stop=None, nostack=None, text=[line])
            continue
        if ev is None:
            continue
        if line.startswith(' => '):
            ev['text'].append(line)
            body = line[4:]
            m = re.match(r'^(\S+) \((.*)\)$', body)
            off = None
            if m:
                name, path = m.group(1), m.group(2)
                if path.startswith('[') and path != '[vdso]':
                    continue  # a kernel frame
                mo = re.search(r'\+0x([0-9a-f]+)$', name)
                off = int(mo.group(1), 16) if mo else 0
                name = re.sub(r'\+0x[0-9a-f]+$', '', name)
                path = re.sub(r'\+0x[0-9a-f]+$', '', path)
            else:
                name, path = body, ''  # [unknown] 0xADDR: anonymous memory
            ev['frames'].append(dict(name=name, path=path, off=off))
        elif line.startswith(' -- unwind stopped: '):
            ev['stop'] = line.split(': ', 1)[1]
            ev['text'].append(line)
        elif line.startswith(' -- no user stack'):
            ev['nostack'] = line
    if ev:
        yield ev

_plt = {}

def in_plt(exe, f):
    """the frame (named SYMBOL+OFF, as a PLT stub is: no symbol of its own)
    lies in one of exe's PLT sections (readelf, nm: the oracle)"""
    if exe not in _plt:
        import subprocess
        secs = []
        for line in subprocess.run(['readelf', '-SW', exe], capture_output=True,
                                   text=True).stdout.splitlines():
            m = re.search(r'\]\s+(\.plt\S*)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)', line)
            if m:
                a = int(m.group(2), 16)
                secs.append((a, a + int(m.group(3), 16)))
        syms = {}
        for line in subprocess.run(['nm', exe], capture_output=True, text=True).stdout.splitlines():
            w = line.split()
            if len(w) == 3:
                syms.setdefault(w[2], int(w[0], 16))
        _plt[exe] = (secs, syms)
    secs, syms = _plt[exe]
    if f['off'] is None or f['name'] not in syms:
        return False
    a = syms[f['name']] + f['off']
    return any(lo <= a < hi for lo, hi in secs)

def judge_event(ev, exe, chain, tail):
    """chain: own frames, innermost first; tail(frames after the chain)
    returns why they are wrong, or None. A leaf in exe's PLT (a sample in
    the stub of a call into libc) is right too: the chain starts above it."""
    fr = ev['frames']
    own = lambda f: f['path'] == exe
    k = next((i for i, f in enumerate(fr) if own(f)), None)
    if k == 0 and len(fr) > 1 and in_plt(exe, fr[0]):
        k = 1 if own(fr[1]) else None
    names = [f['name'] for f in fr]
    if k is None or names[k] not in chain:
        return 'first frame of the program is %s, not one of %s' % (names[k] if k is not None else 'none', chain)
    j = chain.index(names[k])
    i = k
    while i < len(fr) and j < len(chain):
        if names[i] != chain[j]:
            return 'frame %d is %s, want %s' % (i, names[i], chain[j])
        i += 1
        j += 1
    if j < len(chain):
        # ended inside the chain: only with a stated stop
        return None if ev['stop'] else 'ends at %s without a stop line' % names[-1]
    return tail(fr[i:], ev)

def coro_tail(rest, ev):
    for f in rest:
        if f['name'] in ('main_ctx_inner', 'main_ctx_marker', 'main', '_start'):
            return "%s below the coroutine's frames (main's stack)" % f['name']
    if len(rest) > 1:
        return '%d frames below coro_entry, at most one (libc) allowed' % len(rest)
    if rest and 'libc.so' not in rest[0]['path']:
        return 'the frame below coro_entry is %s (%s), not in libc' % (rest[0]['name'], rest[0]['path'])
    return None

def alt_tail(exe):
    def tail(rest, ev):
        # libc's start code, then _start, the outermost frame
        names = [f['name'] for f in rest]
        for f in rest:
            if f['name'].startswith('coro_') or f['name'].startswith('main_ctx'):
                return '%s below the handler (another stack)' % f['name']
        if not rest:
            return None if ev['stop'] else 'ends at main without a stop line'
        n_libc = 0
        for i, f in enumerate(rest):
            if 'libc.so' in f['path'] and n_libc < 3:
                n_libc += 1
                continue
            if f['name'] == '_start' and f['path'] == exe and i == len(rest) - 1:
                return None if not ev['stop'] else '_start, then a stop line (%s)' % ev['stop']
            return 'frame %s (%s) below main' % (f['name'], f['path'])
        return None if ev['stop'] else 'ends at %s without a stop line' % names[-1]
    return tail

def record(args):
    report, exe, label = args
    n_coro = n_alt = 0
    bad = []
    for ev in events(report):
        names = [f['name'] for f in ev['frames']]
        is_coro = any(n.startswith('coro_') for n in names)
        is_alt = any(n in ('alt_spin_b', 'alt_handler') for n in names)
        why = None
        if is_coro and is_alt:
            why = 'coroutine and handler frames in one stack'
        elif is_coro:
            n_coro += 1
            why = judge_event(ev, exe, CORO, coro_tail)
        elif is_alt:
            n_alt += 1
            why = judge_event(ev, exe, ALT, alt_tail(exe))
        if why:
            bad.append('%s: %s' % (why, '|'.join(ev['text'][:12])))
    if bad:
        print('FAIL %s: %d wrong stacks; first: %s' % (label, len(bad), bad[0]))
        return 1
    if n_coro < 20 or n_alt < 20:
        print('FAIL %s: %d samples in the coroutine, %d in the handler (want 20 or more of each)' % (label, n_coro, n_alt))
        return 1
    print('PASS %s: %d samples in the coroutine, %d in the sigaltstack handler, each stack ends at its own bottom or a stated stop' % (label, n_coro, n_alt))
    return 0

if __name__ == '__main__':
    what = sys.argv[1]
    bad = snapshot(sys.argv[2:]) if what == 'snapshot' else record(sys.argv[2:])
    sys.exit(1 if bad else 0)
EOF

# gdb's frames: tests/integration/lib/gdb_frames.py
GDB_FRAMES=$TOP/tests/integration/lib/gdb_frames.py
export GDB_FRAMES_MAX=64
have_gdb=1
command -v gdb >/dev/null || { have_gdb=0; skip snapshot/gdb "gdb not installed: frames checked against the program's chains only"; }

# ---- snapshot ------------------------------------------------------------------------
snap_variants=("${variants[@]}")
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" != 0 ]; then
	skip snapshot "not root and Yama's ptrace_scope is not 0: cannot trace a process that is not our descendant"
	snap_variants=()
fi
for v in "${snap_variants[@]}"; do
	exe=$tmp/hs_$v
	"$exe" block >"$tmp/$v.out" 2>"$tmp/$v.err" &
	pid=$!
	pids+=("$pid")
	# main, hs-alt, hs-longjmp, hs-clone, hs-clone2, hs-clone3: all in read (0)
	if ! wait_blocked "$pid" 0 6; then
		fail snapshot/$v "the program's 6 threads never all blocked in read: $(syscalls "$pid" | tr '\n' '|') $(head -3 "$tmp/$v.err" | tr '\n' '|')"
		continue
	fi
	ok=1
	for mode in default stop-all; do
		flag=; [ $mode = stop-all ] && flag=--stop-all
		if ! "$USTACK" snapshot -p "$pid" --methods $flag >"$tmp/$v.$mode" 2>"$tmp/$v.$mode.err"; then
			fail snapshot/$v/$mode "ustack snapshot exited $?: $(head -3 "$tmp/$v.$mode.err" | tr '\n' '|')"
			ok=0
		fi
	done
	[ $ok = 1 ] || continue
	g=-
	if [ $have_gdb = 1 ]; then
		g=$tmp/$v.gdb
		gdb -batch -nx -p "$pid" -ex "source $GDB_FRAMES" >"$g" 2>"$g.err"
		if ! grep -q '^TID ' "$g"; then
			skip snapshot/$v/gdb "gdb could not read the process: $(grep -v '^\[' "$g.err" | head -3 | tr '\n' '|')"
			g=-
		fi
	fi
	for mode in default stop-all; do
		LOSSY_SFRAME=$([ "$LOSSY" = "$v" ] && echo 1) python3 "$tmp/judge.py" snapshot "$tmp/$v.$mode" "$g" "$exe" \
			"$T/snapshot/$v/$mode" || fails=$((fails + 1))
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	pids=()
done

# ---- record -----------------------------------------------------------------------------
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
	skip record "needs root or kernel.perf_event_paranoid <= 1"
	exit $((fails > 0))
fi
exe=$tmp/hs_cfi
bpf_skip=
if ! "$USTACK" record -q --backend bpf -o "$tmp/probe.data" -- true >/dev/null 2>"$tmp/probe.err"; then
	bpf_skip=$(grep -m1 . "$tmp/probe.err")
	bpf_skip=${bpf_skip:-record --backend bpf failed without a reason}
fi
for b in copy bpf; do
	if [ $b = bpf ] && [ -n "$bpf_skip" ]; then
		skip record/bpf "$bpf_skip"
		continue
	fi
	"$USTACK" record -q --backend $b -o "$tmp/$b.data" -- "$exe" spin 150 >"$tmp/$b.out" 2>"$tmp/$b.err"
	rc=$?
	if [ $rc -ne 0 ] || ! grep -q '^spin: coro [1-9][0-9]* alt [1-9]' "$tmp/$b.out"; then
		fail record/$b "record exit $rc, program said '$(head -2 "$tmp/$b.out" | tr '\n' '|')': $(head -3 "$tmp/$b.err" | tr '\n' '|')"
		continue
	fi
	if ! "$USTACK" report -q --no-lines -i "$tmp/$b.data" >"$tmp/$b.txt" 2>"$tmp/$b.report.err"; then
		fail record/$b "report exited $?: $(head -3 "$tmp/$b.report.err" | tr '\n' '|')"
		continue
	fi
	python3 "$tmp/judge.py" record "$tmp/$b.txt" "$exe" "$T/record/$b" || fails=$((fails + 1))
done
exit $((fails > 0))
