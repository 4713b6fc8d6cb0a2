#!/usr/bin/python3
"""Check an SVG of 'ustack flamegraph' in headless Chromium (svg_browser.py):
the DOM after load, after a real mouse click on a frame (zoom), on "Reset
zoom", and after a search typed into the SVG's prompt, against the folded
stacks the graph was drawn from. Prints PASS/FAIL lines named NAME_*;
exit status 77 (one line "missing: why") when chromium or python3-websocket
is absent.

usage:
  flamegraph_view.py full NAME SVG FOLDED ZOOM_PATH REGEX SHOT [LINE_FILE]
      ZOOM_PATH: the frame to click, as its stack ("main;run;alpha")
      LINE_FILE: a file name the tooltips must show as FILE:LINE
  flamegraph_view.py load NAME SVG [SHOT]
      loads without errors, labels fit, a click zooms and reset restores
"""
import re
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import svg_browser  # noqa: E402

WIDTH, SIDE, ROW = 1200.0, 10.0, 16.0
failed = False


def result(name, ok, what):
    global failed
    print("%s %s: %s" % ("PASS" if ok else "FAIL", name, what))
    failed |= not ok


FRAMES_JS = """frames.map(function (g) {
  var r = g.querySelector('rect'), t = g.querySelector('text'), cs = getComputedStyle(g);
  return { name: g.dataset.name, n: +g.dataset.n, x: +r.getAttribute('x'),
           w: +r.getAttribute('width'), y: +r.getAttribute('y'), cls: g.getAttribute('class'),
           display: cs.display, opacity: +cs.opacity, text: t.textContent,
           tw: t.getComputedTextLength(), title: g.querySelector('title').textContent,
           fill: getComputedStyle(r).fill };
})"""


def check_zoom(after, orig, zoom_path):
    zx, zw = orig[zoom_path]
    s = (WIDTH - 2 * SIDE) / zw
    bad = []
    for f in after:
        p = f["path"]
        x0, w0 = orig[p]
        if p == zoom_path[:len(p)]:  # the frame and its callers
            if abs(f["x"] - SIDE) > 0.01 or abs(f["w"] - (WIDTH - 2 * SIDE)) > 0.01:
                bad.append("%s not full width: %.2f+%.2f" % (p[-1:] or "all", f["x"], f["w"]))
            if p != zoom_path and f["opacity"] != 0.5:
                bad.append("caller %s not faded" % (p[-1:] or "all",))
        elif p[:len(zoom_path)] == zoom_path:  # callees scale with it
            if abs(f["x"] - (SIDE + (x0 - zx) * s)) > 0.01 or abs(f["w"] - w0 * s) > 0.01:
                bad.append("callee %s at %.2f+%.2f" % (p[-1], f["x"], f["w"]))
            if f["display"] == "none":
                bad.append("callee %s hidden" % p[-1])
        elif f["display"] != "none":
            bad.append("%s still shown at %.2f+%.2f" % (";".join(p[-2:]), f["x"], f["w"]))
    return bad + label_problems(after)


def frames(page, paths=None):
    """The frames' DOM state; their stacks from @paths (by index: the DOM
    order does not change) or from the geometry (of an unzoomed graph)."""
    fr = page.js(FRAMES_JS)
    if paths:
        for f, p in zip(fr, paths):
            f["path"] = p
            f["depth"] = len(p)
        return fr
    # each frame's stack, from the geometry: the parent is the frame one
    # row below whose x range holds it (frames come in preorder)
    base = max(f["y"] for f in fr)
    for i, f in enumerate(fr):
        f["depth"] = int(round((base - f["y"]) / ROW))
        f["path"] = ()
        for p in reversed(fr[:i]):
            if p["depth"] == f["depth"] - 1 and p["x"] <= f["x"] + 1e-3 and \
               p["x"] + p["w"] >= f["x"] + f["w"] - 1e-3:
                f["path"] = p["path"] + (f["name"],)
                break
    return fr


def oracle(folded):
    """The tree of the folded stacks, each node's samples, and the stacks."""
    root = {"n": 0, "kids": {}}
    stacks = []
    for line in open(folded, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, n = line.rsplit(" ", 1)
        n = int(n)
        stacks.append((stack.split(";"), n))
        root["n"] += n
        cur = root
        for f in stack.split(";"):
            cur = cur["kids"].setdefault(f, {"n": 0, "kids": {}})
            cur["n"] += n
    nodes = {}  # path (without "all") -> samples, drawn frames only

    def walk(node, path):
        if node["n"] * (WIDTH - 2 * SIDE) / root["n"] < 0.1:
            return  # narrower than 0.1 px: not drawn
        nodes[path] = node["n"]
        for k, v in node["kids"].items():
            walk(v, path + (k,))
    walk(root, ())
    return root["n"], nodes, stacks


def label_problems(fr):
    bad = []
    for f in fr:
        if f["display"] == "none" or not f["text"]:
            continue
        if f["tw"] > f["w"] - 6 + 0.01:
            bad.append("%r: text %.1fpx in a %.1fpx box" % (f["text"], f["tw"], f["w"]))
        if f["text"] != f["name"] and not (f["text"].endswith("..") and
                                           f["name"].startswith(f["text"][:-2])):
            bad.append("%r is not %r nor a cut of it" % (f["text"], f["name"]))
    return bad


def full(name, svg, folded, zoom_path, regex, shot, line_file=None):
    total, nodes, stacks = oracle(folded)
    zoom_path = tuple(zoom_path.split(";"))
    with svg_browser.Page() as page:
        page.open(svg, ready="typeof frames !== 'undefined' && frames.length > 0")
        page.screenshot(shot)
        fr = frames(page)
        parse_err = page.js("document.getElementsByTagName('parsererror').length")
        paths = sorted(f["path"] for f in fr)
        result(name + "_load", not page.errors and not parse_err and paths == sorted(nodes),
               "%d frames as in the folded input, no console error%s" % (
                   len(fr), "" if not page.errors else ": " + "; ".join(page.errors)[:300]))
        if paths != sorted(nodes):
            print("  DOM only: %s" % sorted(set(paths) - set(nodes))[:5])
            print("  folded only: %s" % sorted(set(nodes) - set(paths))[:5])

        # (e) tooltips: name, samples, share of the total (and file:line)
        bad = []
        for f in fr:
            want = "%s (%d samples, %.2f%%)" % (f["name"], nodes.get(f["path"], -1),
                                                 100.0 * nodes.get(f["path"], 0) / total)
            if f["title"].split("\n")[0] != want:
                bad.append("%r != %r" % (f["title"].split("\n")[0], want))
        if line_file:
            z = [f for f in fr if f["path"] == zoom_path]
            if not z or not re.search(r"\nat %s:\d+" % re.escape(line_file), z[0]["title"]):
                bad.append("no %s:LINE in the tooltip of %s: %r" % (
                    line_file, zoom_path[-1], z[0]["title"] if z else None))
        result(name + "_tooltips", not bad, "every <title> has the name, samples and share%s%s" % (
            " and %s:LINE" % line_file if line_file else "", ": " + "; ".join(bad[:3]) if bad else ""))

        bad = label_problems(fr)
        cut = [f for f in fr if f["text"].endswith("..")]
        result(name + "_labels", not bad and cut,
               "labels fit their boxes (getComputedTextLength), %d cut with '..'%s" % (
                   len(cut), ": " + "; ".join(bad[:3]) if bad else ""))

        # (b) a real click on the frame zooms into it; then a click on its
        # first callee, in the zoomed view: the callers' siblings (beta
        # when zoomed into alpha;leaf_work) must hide, not stretch
        orig = {f["path"]: (f["x"], f["w"]) for f in fr}
        paths = [f["path"] for f in fr]
        z = [f for f in fr if f["path"] == zoom_path]
        if not z:
            result(name + "_zoom", False, "no frame %s" % ";".join(zoom_path))
            return
        kids = [p for p in paths if p[:-1] == zoom_path]
        for zp in [zoom_path] + kids[:1]:
            page.click_element("frames[%d].querySelector('rect')" % paths.index(zp))
            bad = check_zoom(frames(page, paths), orig, zp) + page.errors
            result(name + "_zoom", not bad,
                   "a click on %s: it spans the width, its callers faded, callees scaled, "
                   "others hidden%s" % (";".join(zp[-2:]), ": " + "; ".join(bad[:4]) if bad else ""))

        # (d) Reset zoom restores the widths
        page.click_element("document.getElementById('reset')")
        after = frames(page, paths)
        bad = ["%s: %.3f+%.3f" % (";".join(f["path"][-2:]), f["x"], f["w"]) for f in after
               if abs(f["x"] - orig[f["path"]][0]) > 1e-3 or abs(f["w"] - orig[f["path"]][1]) > 1e-3
               or f["display"] == "none" or "parent" in f["cls"]]
        off = page.js("document.getElementById('reset').classList.contains('off')")
        result(name + "_reset", not bad and off and not label_problems(after),
               "Reset zoom restores every x and width%s" % (": " + "; ".join(bad[:3]) if bad else ""))

        # (c) search: the prompt answered with the regex, by a click on Search
        page.dialog_answer = regex
        page.click_element("document.getElementById('search')")
        page.dialog_answer = None
        after = frames(page, paths)
        rx = re.compile(regex)
        want = sorted(p for p in nodes if p and rx.search(p[-1]))
        got = sorted(f["path"] for f in after if "match" in f["cls"].split())
        fills = {f["fill"] for f in after if "match" in f["cls"].split()}
        others = [f for f in after if "match" not in f["cls"].split() and f["fill"] == "rgb(230, 0, 230)"]
        share = 100.0 * sum(n for st, n in stacks if any(rx.search(x) for x in st)) / total
        shown = page.js("document.getElementById('matched').textContent")
        m = re.match(r"Matched: ([0-9.]+)% \((\d+) frames\)$", shown or "")
        ok = (got == want and fills == {"rgb(230, 0, 230)"} and not others and m and
              abs(float(m.group(1)) - share) < 0.006 and int(m.group(2)) == len(want))
        result(name + "_search", bool(ok) and len(want) > 0,
               "/%s/ highlights the %d matching frames of the folded input, shows %r "
               "(folded: %.2f%%)" % (regex, len(want), shown, share))
        if not ok:
            print("  want %s\n  got %s\n  fills %s" % (want[:4], got[:4], fills))
        page.click_element("document.getElementById('search')")  # "Clear search"
        left = page.js("[document.querySelectorAll('g.f.match').length,"
                       " document.getElementById('matched').textContent]")
        result(name + "_search_clear", left == [0, ""] and not page.errors,
               "a second click clears the search%s" % (
                   "" if not page.errors else ": " + "; ".join(page.errors)[:300]))
        for w in page.warnings:
            print("  chromium warning: " + w)


def load(name, svg, shot=None):
    with svg_browser.Page() as page:
        page.open(svg, ready="typeof frames !== 'undefined' && frames.length > 0")
        if shot:
            page.screenshot(shot)
        fr = frames(page)
        parse_err = page.js("document.getElementsByTagName('parsererror').length")
        bad = label_problems(fr)
        # zoom into the widest frame above the root's callers, then reset
        cand = sorted((f for f in fr if f["depth"] >= 1 and f["w"] < 1100), key=lambda f: -f["w"])
        if cand:
            page.click_element("frames[%d].querySelector('rect')" % fr.index(cand[0]))
            z = frames(page, [f["path"] for f in fr])
            bad += label_problems(z)
            zf = z[fr.index(cand[0])]
            if abs(zf["w"] - (WIDTH - 2 * SIDE)) > 0.01:
                bad.append("zoomed frame %.2f wide" % zf["w"])
            page.click_element("document.getElementById('reset')")
        result(name, not page.errors and not parse_err and len(fr) > 1 and not bad,
               "%d frames, no console error, labels fit, zoom works%s" % (
                   len(fr), ": " + "; ".join((page.errors + bad)[:4]) if page.errors or bad else ""))
        return fr


def main():
    try:
        if sys.argv[1] == "full":
            full(*sys.argv[2:])
        else:
            load(*sys.argv[2:])
    except svg_browser.Missing as e:
        print("missing: %s" % e)
        sys.exit(77)
    except Exception as e:  # the page lacks what the checks drive
        result(sys.argv[2], False, "%s: %s" % (type(e).__name__, e))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
