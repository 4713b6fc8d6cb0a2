#!/usr/bin/python3
"""Open a speedscope JSON file in the speedscope app of the npm package, in
headless Chromium, the way the package's own `speedscope FILE` command does
(index.html#localProfilePath=JS, where JS calls
speedscope.loadFileFromBase64(name, data)), driven over the Chrome DevTools
protocol by svg_browser.Page. Prints one line per finding; exit status 0
when the page logged no error and every expected text appears in the page,
1 otherwise, 77 when something needed is missing.

usage: speedscope_view.py INDEX_HTML PROFILE_JSON SCREENSHOT_PNG TEXT...
"""
import base64
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svg_browser import Missing, Page  # noqa: E402


def main():
    index, profile, shot, texts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    tmp = tempfile.mkdtemp(prefix="ustack-ss-")
    js = os.path.join(tmp, "load.js")
    with open(profile, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    with open(js, "w") as f:
        f.write("speedscope.loadFileFromBase64(%s, %s)" %
                (json.dumps(os.path.basename(profile)), json.dumps(data)))
    ok, body = False, ""
    try:
        # speedscope reports a file it cannot import with alert(): Page
        # dismisses it and counts it as an error
        with Page() as page:
            page.send("Page.navigate",
                      url="file://%s#localProfilePath=%s" % (os.path.abspath(index), js))
            deadline = time.time() + 30
            while time.time() < deadline:
                body = page.js("document.body ? document.body.innerText : ''") or ""
                if all(t in body for t in texts):
                    ok = True
                    break
                time.sleep(0.3)
            time.sleep(0.5)  # let late errors of the first render arrive
            page.js("1")
            page.screenshot(shot)
            errors = page.errors
    except Missing as e:
        print("missing: %s" % e)
        sys.exit(77)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for t in texts:
        print("%s: %r" % ("found" if t in body else "MISSING", t))
    if not ok:
        print("page text: %r" % body[:300])
    for e in errors:
        print("error: " + e)
    sys.exit(0 if ok and not errors else 1)


if __name__ == "__main__":
    main()
