#!/usr/bin/python3
"""A page in headless Chromium, driven over the Chrome DevTools protocol
(the approach of speedscope_view.py, as a reusable class): open a file://
URL, evaluate JavaScript, click at page coordinates with real mouse events,
take a screenshot, and collect every console error, uncaught exception,
error log entry and dialog the page produced.

    with Page() as p:          # raises Missing when chromium or websocket is absent
        p.open("/abs/path.svg")
        p.js("document.title")
        p.click(x, y)
        p.screenshot("out.png")
        p.errors                # list of strings (p.warnings too)

Each Page starts a Chromium of its own (~3 s of CPU on a 2-CPU VM), unless
SVG_BROWSER_PORT names the DevTools port of one already running: then it is
a tab of that browser, opened for it and closed after, with the same
viewport. `svg_browser.py serve PORTFILE` runs such a browser: it writes the
port to PORTFILE and ends it (and its temporary profile) when its stdin
closes or it gets SIGTERM; a test that opens several pages starts one.
"""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request


class Missing(Exception):
    """Something the browser test needs is not installed."""


try:
    import websocket  # Debian python3-websocket
except ImportError:
    websocket = None


class Page:
    def __init__(self, width=1400, height=900):
        if websocket is None:
            raise Missing("python3-websocket missing (scripts/deps.sh)")
        self.chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not self.chromium:
            raise Missing("chromium missing (scripts/deps.sh)")
        self.size = (width, height)
        self.errors = []
        self.warnings = []  # reported, not failures: Chromium warns about its own things
        self.dialog_answer = None  # what prompt() returns, None: dismiss
        self.proc = self.ws = self.tmp = self.tab = None
        self.seq = 0

    def launch(self):
        """Starts the browser; its DevTools port."""
        self.tmp = tempfile.mkdtemp(prefix="ustack-svgb-")
        prof = os.path.join(self.tmp, "profile")
        # Chromium makes its singleton directory (org.chromium.Chromium.*)
        # in TMPDIR and leaves it when it is terminated: inside ours, it
        # goes with it (hundreds were left in /tmp by the test runs)
        env = dict(os.environ, TMPDIR=self.tmp)
        self.proc = subprocess.Popen(
            [self.chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=" + prof,
             "--remote-debugging-port=0", "--window-size=%d,%d" % self.size,
             "--hide-scrollbars", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        port = None
        for _ in range(300):  # Chromium writes its port here once it listens
            try:
                with open(os.path.join(prof, "DevToolsActivePort")) as f:
                    port = int(f.readline())
                break
            except (OSError, ValueError):
                time.sleep(0.1)
        if not port:
            self.__exit__(None, None, None)
            raise RuntimeError("chromium did not start its DevTools endpoint")
        return port

    def __enter__(self):
        shared = os.environ.get("SVG_BROWSER_PORT")
        if shared:
            port = int(shared)
            req = urllib.request.Request("http://127.0.0.1:%d/json/new?about:blank" % port,
                                         method="PUT")
            self.tab = json.load(urllib.request.urlopen(req))
            url = self.tab["webSocketDebuggerUrl"]
        else:
            port = self.launch()
            pages = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port))
            url = [p for p in pages if p.get("type") == "page"][0]["webSocketDebuggerUrl"]
        self.port = port
        self.ws = websocket.create_connection(url, timeout=30)
        self.send("Runtime.enable")
        self.send("Log.enable")
        self.send("Page.enable")
        if self.tab:
            # a tab of a browser started with the same --window-size: the
            # viewport made the same explicitly
            self.send("Emulation.setDeviceMetricsOverride", width=self.size[0],
                      height=self.size[1], deviceScaleFactor=1, mobile=False)
        return self

    def __exit__(self, *exc):
        if self.ws:
            try:
                self.ws.close()
            except Exception:
                pass
        if self.tab:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/json/close/%s" % (
                    self.port, self.tab["id"])).read()
            except Exception:
                pass
            return False
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return False

    def send(self, method, **params):
        self.seq += 1
        want = self.seq
        self.ws.send(json.dumps({"id": want, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            self._note(m)
            if m.get("id") == want:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})

    def _note(self, m):
        meth, p = m.get("method"), m.get("params", {})
        if meth == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.errors.append("exception: %s %s" % (
                d.get("text"), d.get("exception", {}).get("description", "")))
        elif meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
            to = self.warnings if p["type"] == "warning" else self.errors
            to.append("console.%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", []))))
        elif meth == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            e = p["entry"]
            to = self.warnings if e.get("level") == "warning" else self.errors
            to.append("log: %s %s" % (e.get("text"), e.get("url", "")))
        elif meth == "Page.javascriptDialogOpening":
            # a dialog blocks the page until answered: prompt() gets
            # dialog_answer, anything else is unexpected
            if p.get("type") != "prompt" or self.dialog_answer is None:
                self.errors.append("dialog: %s %s" % (p.get("type"), p.get("message")))
            self.seq += 1
            params = {"accept": self.dialog_answer is not None}
            if self.dialog_answer is not None:
                params["promptText"] = self.dialog_answer
            self.ws.send(json.dumps({"id": self.seq, "method": "Page.handleJavaScriptDialog",
                                     "params": params}))

    def open(self, path, ready="document.readyState === 'complete'", timeout=30):
        self.send("Page.navigate", url="file://" + os.path.abspath(path))
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.js(ready):
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("page not ready: " + ready)
        time.sleep(0.3)  # late errors of the first render
        self.js("1")

    def js(self, expr):
        r = self.send("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError("evaluate %r: %s" % (expr[:80], r["exceptionDetails"].get(
                "exception", {}).get("description", r["exceptionDetails"].get("text"))))
        return r.get("result", {}).get("value")

    def click(self, x, y):
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y,
                      button="left" if kind != "mouseMoved" else "none", clickCount=1)
        self.js("1")

    def click_element(self, selector_js):
        """Click the middle of the element @selector_js evaluates to."""
        box = self.js("(function(){var e=%s; var r=e.getBoundingClientRect();"
                      "return [r.left + r.width / 2, r.top + r.height / 2];})()" % selector_js)
        self.click(box[0], box[1])

    def screenshot(self, path, element="document.documentElement"):
        """A PNG of @element's box (the whole SVG by default)."""
        box = self.js("(function(){var r=(%s).getBoundingClientRect();"
                      "return [r.left, r.top, r.width, r.height];})()" % element)
        png = self.send("Page.captureScreenshot", format="png", clip={
            "x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1})
        with open(path, "wb") as f:
            f.write(base64.b64decode(png.get("data", "")))


def serve(portfile):
    """One browser for the pages of a test (SVG_BROWSER_PORT), until stdin
    closes or SIGTERM."""
    import signal
    import sys
    page = Page()
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    try:
        port = page.launch()
        with open(portfile + ".part", "w") as f:
            f.write("%d\n" % port)
        os.rename(portfile + ".part", portfile)
        sys.stdin.read()
    finally:
        page.__exit__(None, None, None)


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 3 and sys.argv[1] == "serve":
        try:
            serve(sys.argv[2])
        except Missing as e:
            print("missing: %s" % e)
            sys.exit(77)
    else:
        sys.exit("usage: svg_browser.py serve PORTFILE")
