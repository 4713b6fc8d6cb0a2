#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The include graph of src/*/*.[ch], and the layering rules it must obey.

    scripts/include-graph.py [--root DIR]            module -> module (count)
    scripts/include-graph.py [--root DIR] --files    file -> file
    scripts/include-graph.py [--root DIR] --dot      the module graph for dot(1)
    scripts/include-graph.py [--root DIR] --check    exit 1 on any violation

A module is a directory of src/; an edge is one `#include "X/Y.h"` line
(quoted includes only: <ustack/*.h> is the public API, open to every
module). --check fails, one line per reason, when:
  - a module includes a module of its own layer or of a higher one (LAYERS);
  - a module is not in LAYERS (a new directory must be placed);
  - the modules, or the files (within a module too), include in a circle;
  - a quoted include names no file of src/ (and is not GENERATED);
  - src/cli/ includes anything but src/cli/ and the known exceptions
    (CLI_EXCEPTIONS), or an exception no longer holds (delete it).
--root is the directory holding src/ (default: this script's tree), so a
test can point it at a copy with a bad include (tests/integration/layering.sh).
"""
import argparse
import os
import re
import sys

# Lowest first. A module may include modules of lower layers only: two
# modules of one layer are peers and include neither each other. Derived
# from DESIGN.md's layout ("common <- everything"; the parsers depend on
# nothing beyond elf; the CLI on top) and from the graph as it is, where
# DESIGN.md names no place (bidcache, archive, perf, bpf, bpfload).
LAYERS = [
    # errors, logging, containers, clock, CPU features, the unwind row form
    ["common"],
    # ELF file access, which every table source and the symbolizer read through
    ["elf"],
    # the table parsers: independent of each other (DESIGN.md); probe names
    # resolved to file offsets (symbols, USDT notes, ld.so.cache) beside them
    ["sframe", "cfi", "probe"],
    # VMAs of a live process (PROCMAP_QUERY, text fallback), file ids
    ["procmaps"],
    # the unwinder over sframe/cfi rows and procmaps' mappings; CPython's
    # interpreted frames read from outside a process (its ELF symbols, its
    # mappings), beside it: the snapshot puts both together
    ["unwind", "python"],
    # per-event machinery that knows no unwinder nor each other
    ["deferred", "stackmap", "trace"],
    # the build-ID cache and SHA-256: written by record, read by symbolize
    ["bidcache"],
    # (file id, offset) -> names; reads traces (JIT records) and the cache
    ["symbolize"],
    # a trace's bundle: asks symbolize's debug-file lookup what to bundle
    ["archive"],
    # perf_event_open plumbing; the BPF program and the ABI it shares with
    # user space (kernel code: includes nothing of the library)
    ["perf", "bpf"],
    # the BPF program's loader: perf events to attach to, the unwinder's rows;
    # libustack-alloc.so, preloaded into programs: the kernel's byte
    # sampling (bpf/alloc_draw.h) run in the program
    ["bpfload", "preload"],
    # the two programs of the library: the recorder and the snapshot
    ["record", "snapshot"],
    # the ustack command
    ["cli"],
]

# Included by their base name through the build's -I, generated at build
# time: name -> the module that owns their source.
GENERATED = {
    # bpftool gen skeleton of src/bpf/record.bpf.c (mk/bpf.mk)
    "record.skel.h": "bpf",
}

# DESIGN.md: "cli uses only include/ustack/". These (file, header) pairs do
# not, each for its reason; a new one fails the check until it is either
# made public or written here with its own.
CLI_EXCEPTIONS = {
    ("src/cli/cmd_archive.c", "archive/archive.h"):
        "the archive API (bundle a trace's files, extract them) is internal: "
        "the CLI is its only user, and the public headers stay as they are",
    ("src/cli/report_archive.c", "archive/archive.h"):
        "report extracts the archive beside a trace through the same internal API",
    ("src/cli/report_archive.c", "common/cache_dir.h"):
        "the archive is extracted under the library's cache directory, "
        "found by the library's own rule rather than a second copy of it",
    ("src/cli/cmd_report.c", "common/clock.h"):
        "ustack_mono_ns(), a static inline for the progress line; no link dependency",
    ("src/cli/cmd_report.c", "symbolize/symbolize_internal.h"):
        "report announces its lookups in one batch (ustack_symbolizer__expect) "
        "and saves the line caches; neither is public API",
    ("src/cli/cmd_probe.c", "probe/probe.h"):
        "ustack probe prints what the recorder's probe resolver finds; the "
        "resolver is internal (record -e is its public face)",
    ("src/cli/report_python.c", "trace/trace.h"):
        "report's first pass reads only the PYFUNC records "
        "(ustack_trace_reader__skim), as ustack_jitsyms__load_trace() does for JITSYM",
    ("src/cli/report_lookup.c", "symbolize/symbolize_internal.h"):
        "--symfs and archive contents (load_trace_contents, set_file_content) "
        "and why a file was refused (file_refusal, file_image_source)",
}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def scan(root):
    """-> {file: [(line number, included name)]}, file paths relative to root."""
    src = os.path.join(root, "src")
    if not os.path.isdir(src):
        sys.exit(f"include-graph: {src}: no such directory")
    files = {}
    for mod in sorted(os.listdir(src)):
        d = os.path.join(src, mod)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith((".c", ".h")):
                continue
            rel = f"src/{mod}/{name}"
            incs = []
            with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE_RE.match(line)
                    if m:
                        incs.append((n, m.group(1)))
            files[rel] = incs
    return files


def module_of(path):
    return path.split("/")[1]


def resolve(files, frm, name):
    """-> (target file or None, target module or None)"""
    if "/" in name:
        target = "src/" + os.path.normpath(name)
    else:  # quoted include of a sibling: the including file's directory first
        target = f"src/{module_of(frm)}/{name}"
    if target in files:
        return target, module_of(target)
    if name in GENERATED:
        return None, GENERATED[name]
    return None, None


def build(files):
    """-> (file edges {f: set(f)}, module edge counts {(a, b): n}, problems)"""
    fedges = {f: set() for f in files}
    medges = {}
    problems = []
    for f, incs in files.items():
        for n, name in incs:
            target, mod = resolve(files, f, name)
            if mod is None:
                problems.append(f'{f}:{n}: #include "{name}" names no file of src/')
                continue
            if target:
                fedges[f].add(target)
            a = module_of(f)
            if a != mod:
                medges[(a, mod)] = medges.get((a, mod), 0) + 1
    return fedges, medges, problems


def circles(nodes, edges):
    """Strongly connected components of more than one node, or with a
    self-edge (Tarjan's, iterative: the depth is the tree's, not bounded)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in edges.get(v, ()):
                    out.append(sorted(comp))
    return out


def layer_of():
    return {m: i for i, layer in enumerate(LAYERS) for m in layer}


def check(files, fedges, medges, problems):
    layer = layer_of()
    mods = {module_of(f) for f in files}
    for m in sorted(mods - layer.keys()):
        problems.append(f"module {m} (src/{m}/) is in no layer of LAYERS: place it")
    for (a, b), n in sorted(medges.items()):
        if a in layer and b in layer and layer[b] >= layer[a]:
            where = "its own layer" if layer[b] == layer[a] else "a higher layer"
            via = [f"{f}:{ln}" for f, incs in sorted(files.items()) if module_of(f) == a
                   for ln, name in incs if resolve(files, f, name)[1] == b]
            problems.append(f"{a} -> {b}: {b} is in {where} ({n} include(s): {', '.join(via)})")
    medge_sets = {}
    for a, b in medges:
        medge_sets.setdefault(a, set()).add(b)
    for comp in circles(mods, medge_sets):
        problems.append("module circle: " + " <-> ".join(comp))
    for comp in circles(set(files), fedges):
        problems.append("file circle: " + " <-> ".join(comp))
    seen = set()
    for f, incs in sorted(files.items()):
        if module_of(f) != "cli":
            continue
        for n, name in incs:
            target, mod = resolve(files, f, name)
            if mod in (None, "cli"):
                continue
            if (f, name) in CLI_EXCEPTIONS:
                seen.add((f, name))
                continue
            problems.append(f'{f}:{n}: #include "{name}": cli uses only include/ustack/ '
                            "(DESIGN.md); make it public or add it to CLI_EXCEPTIONS with a reason")
    for f, name in sorted(CLI_EXCEPTIONS.keys() - seen):
        problems.append(f'CLI_EXCEPTIONS: {f} no longer includes "{name}": delete the exception')
    return problems


def print_modules(medges):
    layer = layer_of()
    key = lambda e: (-layer.get(e[0], len(LAYERS)), e[0], -layer.get(e[1], len(LAYERS)), e[1])
    for a, b in sorted(medges, key=key):
        print(f"{a} -> {b} ({medges[(a, b)]})")


def print_dot(medges):
    print("digraph ustack_modules {")
    print("\trankdir=BT;")
    for i, layer in enumerate(LAYERS):
        print(f"\t{{ rank=same; /* layer {i} */ " + " ".join(f'"{m}";' for m in layer) + " }")
    for (a, b), n in sorted(medges.items()):
        print(f'\t"{a}" -> "{b}" [label="{n}"];')
    print("}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="the directory holding src/")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true", help="fail on a layering violation")
    g.add_argument("--dot", action="store_true", help="the module graph in dot")
    g.add_argument("--files", action="store_true", help="the file graph")
    args = ap.parse_args()
    files = scan(args.root)
    fedges, medges, problems = build(files)
    if args.dot:
        print_dot(medges)
    elif args.files:
        for f in sorted(fedges):
            for t in sorted(fedges[f]):
                print(f"{f} -> {t}")
    else:
        print_modules(medges)
    if not args.check:
        return 0
    problems = check(files, fedges, medges, problems)
    for p in problems:
        print("layering: " + p, file=sys.stderr)
    if problems:
        return 1
    nfiles = len(files)
    print(f"layering: ok ({len(medges)} module edges, {nfiles} files, {len(LAYERS)} layers, "
          f"{len(CLI_EXCEPTIONS)} cli exceptions)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
