#!/usr/bin/env python3
"""Judges abidiff's leaf-changes report (abidiff -l --no-added-syms) of the
baseline abi/libustack.abi against the library just built, with the
project's ABI rule:

  accepted  new functions (listed in ustack.map, see abi_exports), and
            fields appended at the end of a public struct
            - whose first field is `size_t sz` (an opts struct, struct
              ustack_mapping, struct ustack_frame_info): callers built
              against the older header pass the smaller sz and the library
              reads only that much;
            - that a function takes as `struct X *p, size_t p_sz` (stats
              out-structs: the library writes only p_sz bytes);
            - that the library hands to a callback as `const struct X *`
              (struct ustack_snapshot_thread: the library's, read-only, a
              caller reads the fields it knows)
  refused   everything else abidiff reports: a removed or changed function,
            a field inserted before the end or changed or removed, a struct
            without sz that grows, a changed enum or typedef...

abidiff's own suppression (has_data_member_inserted_at = end) is not used:
it also hides a change of an existing field of the same struct.

usage: abi-check.py REPORT HEADER...   exit 0 when accepted, 1 otherwise
"""
import re
import sys


def sz_structs(headers):
    names = set()
    for path in headers:
        text = re.sub(r'/\*.*?\*/', ' ', open(path).read(), flags=re.S)
        for m in re.finditer(r'\bstruct\s+(\w+)\s*\{\s*size_t\s+sz\s*;', text):
            names.add(m.group(1))
        for m in re.finditer(r'\bstruct\s+(\w+)\s*\*\s*(\w+)\s*,\s*size_t\s+(\w+)_sz\b', text):
            if m.group(2) == m.group(3):
                names.add(m.group(1))
        for m in re.finditer(r'\btypedef\s+\w+\s*\(\s*\*\s*\w+\s*\)\s*\(\s*const\s+struct\s+(\w+)\s*\*', text):
            names.add(m.group(1))
    return names


def judge(report, growable):
    problems = []
    lines = report.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        m = re.match(r'Removed/Changed/Added (functions|variables) summary: (\d+) Removed, (\d+) Changed', line)
        if m:
            if int(m.group(2)) or int(m.group(3)):
                problems.append(line)
            i += 1
            continue
        if re.match(r'(Leaf changes summary|Changed leaf types summary):', line):
            i += 1
            continue
        # a block: its head at column 0, its body indented
        body = []
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or lines[j][0] == ' '):
            if lines[j].strip():
                body.append(lines[j].strip())
            j += 1
        m = re.match(r"'struct (\w+) at [^']*' changed:$", line)
        if m and m.group(1) in growable and struct_grew_at_end(body):
            i = j
            continue
        problems.append('\n'.join([line] + ['  ' + b for b in body]))
        i = j
    return problems


def struct_grew_at_end(body):
    """Only 'type size changed from A to B' and insertions at offsets >= A."""
    old_size = None
    for b in body:
        m = re.match(r'type size changed from (\d+) to (\d+) \(in bits\)$', b)
        if m:
            old_size = int(m.group(1))
            if int(m.group(2)) < old_size:
                return False
    if old_size is None:
        return False
    for b in body:
        if b.startswith('type size changed from') or re.match(r'\d+ data member insertions?:$', b):
            continue
        m = re.match(r"'.*', at offset (\d+) \(in bits\)", b)
        if m and int(m.group(1)) >= old_size:
            continue
        return False
    return True


def main():
    report = open(sys.argv[1]).read()
    problems = judge(report, sz_structs(sys.argv[2:]))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
