#!/usr/bin/env bash
# The 'FSMB' v2 export checked by an independent reader: a Python parser
# written here from docs/stackmap.md (struct module, no ustack code) must
# read our binary export and reproduce our text export exactly; a
# big-endian file written by Python must read back through our reader; a
# truncated file must be refused with a byte offset.
set -u
: "${CC:=gcc}" "${CHECK_DIR:=build/check}" "${TOP:=$PWD}"
: "${SAN_FLAGS:=}" "${LIB_LDLIBS:=-lpthread -ldl -lbpf}"
cd "$TOP" || exit 1
if ! command -v python3 >/dev/null; then
	echo "SKIP stackmap_bin_oracle: python3 not installed"
	exit 0
fi
out="$CHECK_DIR/stackmap_oracle"
mkdir -p "$out"
cat >"$out/helper.c" <<'CEOF'
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ustack/stackmap.h>

static int gen(const char *bin, const char *txt)
{
	struct ustack_stackmap_opts o = { .sz = sizeof(o), .capacity = 512, .max_depth = 24 };
	struct ustack_stackmap *m = ustack_stackmap__new(&o);
	uint64_t w[40], x = 12345;
	uint32_t id;
	FILE *f;

	if (!m)
		return 1;
	for (int i = 0; i < 3000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t k = (x >> 33) % 300;       /* 300 distinct stacks, skewed refs */
		uint32_t nr = 1 + k % 30;            /* some deeper than max_depth */
		for (uint32_t j = 0; j < nr; j++)
			w[j] = (j & 1) ? 0x100000000ull * (k % 5) + j : 0xffffffff81000000ull + k * 0x40 + j;
		if (ustack_stackmap__insert(m, w, nr, &id) < 0)
			return 1;
	}
	f = fopen(bin, "wb");
	if (!f || ustack_stackmap__write_bin(m, f) != 300 || fclose(f))
		return 1;
	f = fopen(txt, "w");
	if (!f || ustack_stackmap__write_text(m, f) != 300 || fclose(f))
		return 1;
	ustack_stackmap__free(m);
	return 0;
}

static int rd(const char *bin)
{
	static uint8_t buf[1 << 20];
	char err[200] = "";
	struct ustack_stackmap_bin_opts o = { .sz = sizeof(o), .errbuf = err, .errbuf_sz = sizeof(err) };
	FILE *f = fopen(bin, "rb");
	size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
	struct ustack_stackmap_bin *b = ustack_stackmap_bin__open(buf, n, &o);

	if (!b) {
		fprintf(stderr, "error: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < ustack_stackmap_bin__nr_stacks(b); i++) {
		struct ustack_stackmap_bin_entry e;

		ustack_stackmap_bin__entry(b, i, &e);
		printf("stack_id %" PRIu32 " [ref %" PRIu32 ", depth %" PRIu32 "]\n", e.stack_id, e.ref_count, e.nr);
		for (uint32_t k = 0; k < e.nr; k++)
			printf("  [%" PRIu32 "] 0x%" PRIx64 "\n", k, e.ips[k]);
		printf("\n");
	}
	fprintf(stderr, "swapped=%d\n", ustack_stackmap_bin__swapped(b));
	ustack_stackmap_bin__free(b);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "gen"))
		return gen(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "read"))
		return rd(argv[2]);
	return 2;
}
CEOF
if ! $CC -std=gnu11 -D_GNU_SOURCE -g $SAN_FLAGS -Iinclude -o "$out/helper" "$out/helper.c" \
	"$CHECK_DIR/libustack.a" $LIB_LDLIBS 2>"$out/build.log"; then
	echo "FAIL stackmap_bin_oracle: helper build failed"; sed 's/^/    /' "$out/build.log" | head -20
	exit 1
fi
if ! "$out/helper" gen "$out/map.bin" "$out/map.txt"; then
	echo "FAIL stackmap_bin_oracle: export failed"; exit 1
fi

python3 - "$out" <<'PYEOF'
import struct, sys, subprocess
out = sys.argv[1]
data = open(f"{out}/map.bin", "rb").read()
want = open(f"{out}/map.txt").read()

def parse(data):
    # the layout of docs/stackmap.md: 16-byte header, then per stack a
    # 16-byte header and nr u64 words; byte order from the magic
    for e in "<>":
        if struct.unpack_from(e + "I", data, 0)[0] == 0x464D5342:
            break
    else:
        raise ValueError("bad magic")
    magic, version, nr_stacks, _ = struct.unpack_from(e + "IIII", data, 0)
    assert version == 2, version
    off, stacks = 16, []
    for _ in range(nr_stacks):
        sid, nr, ref, _ = struct.unpack_from(e + "IIII", data, off)
        off += 16
        ips = list(struct.unpack_from(e + "%dQ" % nr, data, off))
        off += 8 * nr
        stacks.append((sid, ref, ips))
    assert off == len(data), (off, len(data))
    return stacks

def text(stacks):
    s = ""
    for sid, ref, ips in stacks:
        s += "stack_id %d [ref %d, depth %d]\n" % (sid, ref, len(ips))
        s += "".join("  [%d] 0x%x\n" % (i, ip) for i, ip in enumerate(ips))
        s += "\n"
    return s

ok = True
def check(name, cond, why=""):
    global ok
    print(("PASS " if cond else "FAIL ") + name + ("" if cond else ": " + why))
    ok &= bool(cond)

stacks = parse(data)
check("stackmap_bin_oracle_python_reads_our_bin", text(stacks) == want,
      "python rendering of map.bin differs from map.txt")
check("stackmap_bin_oracle_counts",
      len(stacks) == 300 and sum(r for _, r, _ in stacks) == 3000
      and max(len(i) for _, _, i in stacks) == 24
      and sorted(s for s, _, _ in stacks) == list(range(300)),
      "expected 300 stacks, 3000 refs, depth <= 24, ids 0..299")

# a big-endian file written here must read back through our reader
be = struct.pack(">IIII", 0x464D5342, 2, len(stacks), 0)
for sid, ref, ips in stacks:
    be += struct.pack(">IIII", sid, len(ips), ref, 0) + struct.pack(">%dQ" % len(ips), *ips)
open(f"{out}/map_be.bin", "wb").write(be)
r = subprocess.run([f"{out}/helper", "read", f"{out}/map_be.bin"], capture_output=True, text=True)
check("stackmap_bin_oracle_reads_big_endian",
      r.returncode == 0 and r.stdout == want and "swapped=1" in r.stderr,
      "rc=%d stderr=%s" % (r.returncode, r.stderr.strip()))

# truncated by one byte: refused, naming the offset of the last entry's nr
open(f"{out}/map_cut.bin", "wb").write(data[:-1])
last = 16
for sid, ref, ips in stacks[:-1]:
    last += 16 + 8 * len(ips)
r = subprocess.run([f"{out}/helper", "read", f"{out}/map_cut.bin"], capture_output=True, text=True)
check("stackmap_bin_oracle_refuses_truncated",
      r.returncode == 1 and ("offset %d: entry 299: nr" % (last + 4)) in r.stderr,
      "rc=%d stderr=%s" % (r.returncode, r.stderr.strip()))
sys.exit(0 if ok else 1)
PYEOF
