#!/usr/bin/env python3
"""Turns one of docs/cli/*.md into a man page (roff, man macros, tbl for
tables), so that the pages installed by make install say what the docs say.
It handles what those files use: headings, paragraphs, bullet and numbered
lists, fenced code blocks, pipe tables, inline `code`, **bold**, *italic*,
links and images (their text). Anything else passes as plain text.

usage: md2man.py --name ustack-maps --version 0.1.0 IN.md >OUT.1
       md2man.py --name ustack --version 0.1.0 --help-text FILE --see-also a,b >OUT.1
The first form uses the file's "# title" and its first paragraph for NAME,
a code block right after the title for SYNOPSIS. The second builds the main
page ustack(1) from the command's --help output.
"""
import argparse
import re
import sys


def esc(text):
    """Plain text to roff: backslashes, and characters groff reads otherwise."""
    text = text.replace('\\', '\\e')
    text = text.replace('-', '\\-')
    return text


def line_safe(line):
    # a text line that starts with . or ' would be a request
    if line.startswith(('.', "'")):
        return '\\&' + line
    return line


def inline(text):
    """Markdown inline markup to roff fonts; text outside it escaped."""
    text = re.sub(r'<!--.*?-->', '', text)
    text = re.sub(r'!\[([^\]]*)\]\([^)]*\)', r'\1', text)      # image: alt
    text = re.sub(r'\[([^\]]+)\]\(([^)]+)\)',                    # link
                  lambda m: m.group(1) if not m.group(2).startswith('http')
                  or m.group(1) == m.group(2) else '%s <%s>' % (m.group(1), m.group(2)), text)
    out = []
    pos = 0
    for m in re.finditer(r'`([^`]+)`|\*\*([^*]+)\*\*|(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])', text):
        out.append(esc(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append('\\fB' + esc(m.group(1)) + '\\fR')
        elif m.group(2) is not None:
            out.append('\\fB' + esc(m.group(2)) + '\\fR')
        else:
            out.append('\\fI' + esc(m.group(3)) + '\\fR')
        pos = m.end()
    out.append(esc(text[pos:]))
    return ''.join(out)


def table_cells(row):
    row = row.strip()
    if row.startswith('|'):
        row = row[1:]
    if row.endswith('|') and not row.endswith('\\|'):
        row = row[:-1]
    cells = re.split(r'(?<!\\)\|', row)
    return [c.strip().replace('\\|', '|') for c in cells]


def emit_table(rows, out):
    head = table_cells(rows[0])
    body = [table_cells(r) for r in rows[2:]]
    n = len(head)
    # left-adjusted: a long word in a narrow column cannot be justified
    out.append('.ad l')
    out.append('.TS')
    out.append('tab(\t);')
    out.append(' '.join(['lb'] * n))
    out.append(' '.join(['l'] * (n - 1) + ['lx']) + '.')
    for cells in [head] + body:
        cells = (cells + [''] * n)[:n]
        out.append('\t'.join('T{\n' + line_safe(inline(c)) + '\nT}' for c in cells))
        if cells is head:
            out.append('_')
    out.append('.TE')
    out.append('.ad')


def convert(lines, out):
    """Body blocks; the caller has taken the title and synopsis off."""
    i = 0
    para = []

    def flush():
        if para:
            out.append('.PP')
            out.append(line_safe(inline(' '.join(para))))
            para.clear()

    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if not s or re.match(r'^(-{3,}|\*{3,})$', s) or re.match(r'^<!--.*-->$', s):
            flush()
            i += 1
            continue
        m = re.match(r'^(#{1,6})\s+(.*)$', line)
        if m:
            flush()
            title = m.group(2).strip()
            # section titles in capitals (man-pages(7)), unless they quote code
            if '`' not in title:
                title = title.upper()
            title = inline(title)
            out.append(('.SH ' if len(m.group(1)) <= 2 else '.SS ') + '"' + title.replace('"', '\\(dq') + '"')
            i += 1
            continue
        if s.startswith('```'):
            flush()
            i += 1
            out.append('.PP')
            out.append('.RS 4')
            out.append('.nf')
            while i < len(lines) and not lines[i].strip().startswith('```'):
                out.append('\\&' + esc(lines[i].rstrip()))
                i += 1
            out.append('.fi')
            out.append('.RE')
            i += 1
            continue
        if s.startswith('|') and i + 1 < len(lines) and re.match(r'^\s*\|?\s*:?-{2,}', lines[i + 1]):
            flush()
            rows = []
            while i < len(lines) and lines[i].strip().startswith('|'):
                rows.append(lines[i])
                i += 1
            emit_table(rows, out)
            continue
        m = re.match(r'^(\s*)([*+-]|\d+[.)])\s+(.*)$', line)
        if m:
            flush()
            mark = '\\(bu' if m.group(2) in '*+-' else m.group(2)
            indent = len(m.group(1))
            item = [m.group(3)]
            i += 1
            # continuation lines: indented deeper than the marker, no new item
            while i < len(lines) and lines[i].strip() and \
                    not re.match(r'^\s*([*+-]|\d+[.)])\s+', lines[i]) and \
                    not lines[i].strip().startswith(('```', '|', '#')) and \
                    (lines[i].startswith(' ') or lines[i].startswith('\t')):
                item.append(lines[i].strip())
                i += 1
            if indent:
                out.append('.RS %d' % (2 + indent))
            out.append('.IP %s 4' % mark)
            out.append(line_safe(inline(' '.join(item))))
            if indent:
                out.append('.RE')
            continue
        if s.startswith('>'):
            flush()
            quote = []
            while i < len(lines) and lines[i].strip().startswith('>'):
                quote.append(lines[i].strip()[1:].strip())
                i += 1
            out.append('.RS 4')
            out.append(line_safe(inline(' '.join(quote))))
            out.append('.RE')
            continue
        para.append(s)
        i += 1
    flush()


def first_sentence(text):
    text = re.sub(r'`([^`]+)`', r'\1', text)
    text = re.sub(r'\[([^\]]+)\]\([^)]*\)', r'\1', text)
    # one line: up to the first clause's end
    m = re.match(r'(.+?)(\s\(|[.:;,]\s|[.:]$|$)', text)
    s = (m.group(1) if m else text).strip()
    return s[0].lower() + s[1:] if s else s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--name', required=True)
    ap.add_argument('--version', required=True)
    ap.add_argument('--help-text')
    ap.add_argument('--see-also', default='')
    ap.add_argument('input', nargs='?')
    a = ap.parse_args()
    out = ["'\\\" t", '.\\\" Generated by scripts/md2man.py from %s: edit that file.' %
           (a.input or 'the --help text of src/cli/main.c'),
           '.TH %s 1 "" "ustack %s" "ustack manual"' % (a.name.upper(), a.version)]
    if a.help_text:
        text = open(a.help_text).read().rstrip('\n').split('\n')
        out += ['.SH NAME', '%s \\- user-space stack traces without frame pointers' % esc(a.name),
                '.SH SYNOPSIS', '.B ustack', '.I command', '.RI [ options ]',
                '.SH DESCRIPTION', '.PP',
                'Records, symbolizes and reports user-space stacks of programs built without '
                'frame pointers (SFrame and DWARF CFI unwinding). Each command has its own page.',
                '.PP', '.nf']
        out += ['\\&' + esc(l) for l in text]
        out += ['.fi']
    else:
        lines = open(a.input).read().split('\n')
        i = 0
        while i < len(lines) and not lines[i].startswith('# '):
            i += 1
        i += 1
        synopsis = []
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i < len(lines) and lines[i].strip().startswith('```'):
            i += 1
            while i < len(lines) and not lines[i].strip().startswith('```'):
                synopsis.append(lines[i].rstrip())
                i += 1
            i += 1
        rest = lines[i:]
        first = []
        for l in rest:
            if first and not l.strip():
                break
            if l.strip() and not l.startswith(('#', '|', '```', '*', '-', '<!--')):
                first.append(l.strip())
            elif first:
                break
        out += ['.SH NAME', '%s \\- %s' % (esc(a.name), esc(first_sentence(' '.join(first)) or a.name))]
        if synopsis:
            out += ['.SH SYNOPSIS', '.nf'] + ['\\&' + esc(l) for l in synopsis] + ['.fi']
        out.append('.SH DESCRIPTION')
        convert(rest, out)
    if a.see_also:
        refs = [r for r in a.see_also.split(',') if r and r != a.name]
        out += ['.SH SEE ALSO', ',\n'.join('.BR %s (1)' % r for r in refs)]
    sys.stdout.write('\n'.join(out) + '\n')


if __name__ == '__main__':
    main()
